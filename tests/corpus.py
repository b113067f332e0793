"""Where the shared corpus of real transcripts is. Tests read it in place (or copy it
into a temporary home at run time); nothing of it is committed, nor printed.

The corpus grows as agents change their formats and as agentsrc learns new agents. A
test that walks it derives what it expects from the files it finds, per root, and
stays exact; a file the adapters cannot read yet is listed in ``NOT_YET_READ`` (this
one place), and such tests leave it out until the work that reads it empties its
entry."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

# Corpus paths (relative to the corpus home; a path ending in "/" is a whole folder)
# that today's adapters do not read in full, each with the work that reads them.
NOT_YET_READ: dict[str, str] = {
    # Agents agentsrc has no adapter for yet (no root watches these folders).
}


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


def not_yet_read(rel: str) -> str | None:
    """The work that will read this corpus path (relative to the corpus home), or None
    when today's adapters read it."""
    for prefix, why in NOT_YET_READ.items():
        if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
            return why
    return None


def is_read(path: Path) -> bool:
    """Whether today's adapters read this corpus file (a path inside the corpus home)."""
    return not_yet_read(path.relative_to(corpus_home()).as_posix()) is None


def corpus_files(pattern: str = "**/*", *, read_only: bool = False) -> list[Path]:
    """The corpus files matching ``pattern``; with ``read_only``, only those today's
    adapters read."""
    return sorted(
        p for p in corpus_home().glob(pattern) if p.is_file() and (not read_only or is_read(p))
    )


def copy_read_corpus(dest: Path) -> Path:
    """A copy of the corpus home without the files listed in NOT_YET_READ: a home whose
    every record today's adapters understand, for tests that count exactly. Returns
    ``dest``."""
    home = corpus_home()
    for src in corpus_files(read_only=True):
        target = dest / src.relative_to(home)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return dest


def project_files(home: Path) -> dict[str, list[str]]:
    """The files agents keep in the projects under ``home/code`` (the folder the corpus
    keeps them in: a daemon finds them when it is named, --projects-root), by agent."""
    code = home / "code"
    return {
        "aider": sorted(str(p) for p in code.rglob(".aider.chat.history.md")),
        "crush": sorted(str(p) for p in code.rglob(".crush/crush.db")),
    }


def source_files(home: Path) -> dict[str, list[str]]:
    """The files under each agent's root in ``home`` that the daemon reads as sources
    (docs/formats.md), by agent."""
    def files(root: Path, keep: Any) -> list[str]:
        return sorted(str(p) for p in root.rglob("*") if p.is_file() and keep(p))

    is_json = lambda p: p.suffix in (".jsonl", ".json")  # noqa: E731
    opencode = home / ".local" / "share" / "opencode"
    return {
        "codex": files(home / ".codex", is_json),
        "claude-code": files(home / ".claude" / "projects", is_json),
        # Chats (.json documents, .jsonl), plus logs.json and checkpoints (memory).
        "gemini": files(home / ".gemini" / "tmp", is_json),
        "copilot": files(home / ".copilot", is_json),
        # The databases and the 0.5 JSON tree (not storage/migration, not -wal/-shm).
        "opencode": files(
            opencode,
            lambda p: p.suffix == ".db" or ("storage/session/" in str(p) and p.suffix == ".json"),
        ),
        # Chats (projects/*/chats/*.jsonl) and first-version documents (tmp/*/chats/).
        "qwen": files(home / ".qwen", lambda p: "/chats/" in str(p) and is_json(p)),
        "amp": files(home / ".local" / "share" / "amp" / "threads", is_json),
        "pi": files(home / ".pi" / "agent" / "sessions", is_json),
        # Transcripts (.jsonl, .txt) under projects/, the CLI's chat databases.
        "cursor": files(home / ".cursor", lambda p: (
            "/agent-transcripts/" in str(p) and p.suffix in (".jsonl", ".txt")
        ) or p.name == "store.db"),
        # The task folders' three documents in the editors' storage; Cline's sessions.
        **{
            agent: files(home / ".config", lambda p, ext=ext: f"/globalStorage/{ext}/tasks/" in str(p)
                         and p.suffix == ".json")
            + (files(home / ".cline" / "data", is_json) if agent == "cline" else [])
            for agent, ext in (("cline", "saoudrizwan.claude-dev"),
                               ("roo-code", "rooveterinaryinc.roo-cline"),
                               ("kilo-code", "kilocode.kilo-code"))
        },
        "continue": files(home / ".continue" / "sessions", is_json),
    }
