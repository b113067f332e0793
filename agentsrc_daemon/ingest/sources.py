"""The paths provider: which files under the three roots are sources, and of what kind.

A source is one of:
* ``jsonl``: an append-only transcript, tailed line by line from a persisted offset;
* ``document``: a whole-file JSON document re-read when it changes (Codex legacy
  ``.json`` rollouts, Claude subagent ``.meta.json``, Muse ``sessions.json``);
* ``memory``: an agent memory file, tracked by size and content hash only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

JSONL = "jsonl"
DOCUMENT = "document"
MEMORY = "memory"

# Largest document/memory file we read whole.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024

_UUIDISH = r"[0-9A-Za-z][0-9A-Za-z_-]*"
_CLAUDE_JSONL = re.compile(
    rf"^[^/]+/(?:{_UUIDISH}\.jsonl|agent-{_UUIDISH}\.jsonl|{_UUIDISH}/subagents/(?:[^/]+/)*agent-{_UUIDISH}\.jsonl)$"
)
_CLAUDE_META = re.compile(rf"^[^/]+/{_UUIDISH}/subagents/(?:[^/]+/)*agent-{_UUIDISH}\.meta\.json$")
_CLAUDE_MEMORY = re.compile(r"^[^/]+/memory/.+$")
_CODEX_JSONL = re.compile(r"^(?:sessions|archived_sessions)/(?:.+/)?rollout-[^/]+\.jsonl$")
_CODEX_DOC = re.compile(r"^(?:sessions|archived_sessions)/(?:.+/)?rollout-[^/]+\.json$")
_CODEX_MEMORY = re.compile(r"^(?:AGENTS\.md|AGENTS\.override\.md|memories/.+)$")
_MUSE_JSONL = re.compile(r"^[^/]+/sessions/[^/]+\.jsonl$")
_MUSE_DOC = re.compile(r"^[^/]+/sessions/sessions\.json$")

# Directories never worth descending into (the tailer ignores them anyway).
_SKIP_DIRS = {"tool-results", "node_modules", ".git", "log", "cache", "tmp"}


@dataclass(frozen=True, slots=True)
class SourceSpec:
    path: str
    adapter: str  # codex | claude-code | muse
    mode: str  # jsonl | document | memory
    root: str


def classify(path: str, roots: dict[str, Path]) -> SourceSpec | None:
    """What ``path`` is, given the adapter roots; None when it is not a source."""
    for adapter, root in roots.items():
        root_s = str(root)
        if not (path.startswith(root_s + os.sep)):
            continue
        rel = path[len(root_s) + 1 :]
        if os.sep != "/":  # pragma: no cover - POSIX only today
            rel = rel.replace(os.sep, "/")
        mode = _mode_for(adapter, rel)
        if mode is not None:
            return SourceSpec(path=path, adapter=adapter, mode=mode, root=root_s)
    return None


def _mode_for(adapter: str, rel: str) -> str | None:
    if adapter == "codex":
        if _CODEX_JSONL.match(rel):
            return JSONL
        if _CODEX_DOC.match(rel):
            return DOCUMENT
        if _CODEX_MEMORY.match(rel):
            return MEMORY
    elif adapter == "claude-code":
        if _CLAUDE_JSONL.match(rel):
            return JSONL
        if _CLAUDE_META.match(rel):
            return DOCUMENT
        if _CLAUDE_MEMORY.match(rel):
            return MEMORY
    elif adapter == "muse":
        if _MUSE_DOC.match(rel):
            return DOCUMENT
        if _MUSE_JSONL.match(rel):
            return JSONL
    return None


def walk_sources(root: Path, roots: dict[str, Path]) -> Iterator[tuple[SourceSpec, os.stat_result]]:
    """Every source under ``root`` with its stat, without following symlinks."""
    stack = [str(root)]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in _SKIP_DIRS:
                            stack.append(entry.path)
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    spec = classify(entry.path, roots)
                    if spec is None:
                        continue
                    yield spec, entry.stat(follow_symlinks=False)
                except OSError:
                    continue


def count_directories(root: Path) -> int:
    """How many directories an inotify watch of ``root`` needs (one per directory)."""
    n = 0
    stack = [str(root)]
    while stack:
        d = stack.pop()
        n += 1
        try:
            with os.scandir(d) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return n


def project_of_memory(spec: SourceSpec) -> str | None:
    """The project a memory file belongs to: Claude's encoded project dir name."""
    if spec.adapter == "claude-code":
        rel = spec.path[len(spec.root) + 1 :]
        return rel.split("/", 1)[0]
    return None
