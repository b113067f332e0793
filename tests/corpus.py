"""Where the shared corpus of real transcripts is. Tests read it in place (or copy it
into a temporary home at run time); nothing of it is committed, nor printed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def corpus_home() -> Path:
    """The corpus home dir: $AGENTSRC_CORPUS, else ../shared/corpus/home beside the repo.
    Skips the test when it is missing, except under CI=true, where that fails."""
    env = os.environ.get("AGENTSRC_CORPUS")
    path = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "home"
    if not path.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"corpus not found at {path} (set AGENTSRC_CORPUS)")
        pytest.skip(f"corpus not found at {path}")
    return path


def corpus_files(pattern: str = "**/*") -> list[Path]:
    return sorted(p for p in corpus_home().glob(pattern) if p.is_file())
