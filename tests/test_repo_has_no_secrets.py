"""The repository commits no secret-shaped string. A fake token in a test looks exactly like
a real one to GitHub push protection and other secret scanners, so tests build their fake
secrets from fragments at run time (see ``_j`` in tests/test_scan.py).

Every tracked text file is scanned with the project's own engine. Only the generic
detectors are tolerated: they fire on ordinary code (hashes, ids, keyword-named variables).
Any vendor-token finding (AWS, GitHub, Slack, Stripe, private keys, ...) fails the test. A
failure names the file and the detector type, never the value."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from agentsrc_daemon.secrets.engine import SecretScanner

ROOT = Path(__file__).resolve().parents[1]

# detect-secrets' generic detectors: they fire on ordinary code and prose, not on tokens.
GENERIC_TYPES = frozenset(
    {"Base64 High Entropy String", "Hex High Entropy String", "Secret Keyword"}
)

# Vendor-type findings that are known not to be secrets: (path, type) -> how many the file
# may have. Each entry is a prose mention of a private-key header, not a key. Remove an
# entry once its file no longer needs it (test_allow_list_is_not_stale says when).
ALLOWED: dict[tuple[str, str], int] = {}


def _tracked_files() -> list[str]:
    """`git ls-files` (read-only). Outside a git checkout (an sdist, an unpacked archive)
    there is nothing to check: skip, except under CI=true, where that fails."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        reason = f"cannot list tracked files with git: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _read_text(path: Path) -> str | None:
    """A tracked file's text, or None for what is not a regular text file (binary, a
    symlink, a submodule, deleted from the working tree). Undecodable bytes are replaced,
    not skipped: secrets are ASCII."""
    if path.is_symlink() or not path.is_file():
        return None
    data = path.read_bytes()
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def _scan_repository() -> tuple[list[str], Counter[tuple[str, str]]]:
    """The scanned files, and the number of vendor-type findings per (path, type). Values
    stay in here: what is returned holds no part of any finding's value."""
    scanner = SecretScanner(None, {}, b"k" * 32)
    scanned: list[str] = []
    hits: Counter[tuple[str, str]] = Counter()
    for rel in _tracked_files():
        text = _read_text(ROOT / rel)
        if text is None:
            continue
        scanned.append(rel)
        for finding in scanner.scan(text):
            if finding.type not in GENERIC_TYPES:
                hits[(rel, finding.type)] += 1
    return scanned, hits


@pytest.fixture(scope="module")
def repository_scan() -> tuple[list[str], Counter[tuple[str, str]]]:
    return _scan_repository()


def test_no_tracked_file_holds_a_vendor_token(
    repository_scan: tuple[list[str], Counter[tuple[str, str]]],
) -> None:
    scanned, hits = repository_scan
    assert "agentsrc_daemon/secrets/engine.py" in scanned  # the listing is not empty or elsewhere
    problems = sorted(
        f"{path}: {type_}"
        for (path, type_), count in hits.items()
        if count > ALLOWED.get((path, type_), 0)
    )
    assert not problems, (
        "secret-shaped strings in tracked files (build fake secrets from fragments at run "
        "time, see _j in tests/test_scan.py):\n  " + "\n  ".join(problems)
    )


def test_allow_list_is_not_stale(
    repository_scan: tuple[list[str], Counter[tuple[str, str]]],
) -> None:
    _, hits = repository_scan
    stale = sorted(
        f"{path}: {type_}"
        for (path, type_), allowed in ALLOWED.items()
        if hits[(path, type_)] < allowed
    )
    message = "ALLOWED entries no longer needed (remove or lower them):\n  " + "\n  ".join(stale)
    assert not stale, message
