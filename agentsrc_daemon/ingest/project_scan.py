"""Finding the files agents keep inside projects (Aider's chat history, Crush's
database: ``sources.PROJECT_FILES``) without watching whole source trees.

Where it looks, each pass:

* every project root agentsrc already knows from any agent's sessions (the store's
  ``sessions.project_root``): the root itself only;
* the folders the user names (``[roots] projects``, ``$AGENTSRC_PROJECTS``,
  ``--projects-root``): each folder and its subfolders down to ``MAX_DEPTH`` levels,
  without descending into hidden folders (``.git``, ``.venv``...), heavy ones
  (``SKIP_DIRS``: ``node_modules``, build outputs, vendored code) or virtual
  environments (a folder holding ``pyvenv.cfg``), and never following a symlink.

A pass lists each folder once (one ``scandir``) and stats the files it finds. Its CPU
time is measured and paces the next one, as the reconcile scan's does
(``queue.RECONCILE_CPU_INVERSE``: at most 1/5000 of a core), so a tree of thousands of
projects stays idle. What it found is watched directory by directory (the folder
holding an Aider history, the ``.crush`` folder holding a database; ``dir_watch.py``)
and stat'ed by every reconcile scan, like any source.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import sources

MAX_DEPTH = 3  # a named folder's subfolders this deep are looked in (the folder is 0)
# Folders never descended into, besides every hidden one and virtual environments.
SKIP_DIRS = frozenset({
    "node_modules", "bower_components", "__pycache__", "site-packages", "venv", "env",
    "target", "build", "dist", "out", "vendor", "Pods", "DerivedData", "coverage",
    "Library", "Applications",
})
VENV_MARKER = "pyvenv.cfg"
# The base interval between passes (a pass costing more waits proportionally longer).
SCAN_INTERVAL_S = 60.0
SCAN_CPU_INVERSE = 5000  # a pass takes at most 1/5000 of a core (queue.py's rule)
SCAN_PACE_FLOOR_S = 0.010


@dataclass
class ScanStats:
    """The last pass, for status: folders listed, files found, its CPU, the wait after it."""

    dirs: int = 0
    files: int = 0
    cpu_ms: float = 0.0
    interval_s: float = 0.0
    passes: int = 0

    def next_interval(self, base: float) -> float:
        cpu = self.cpu_ms / 1000
        return base if cpu < SCAN_PACE_FLOOR_S else max(base, cpu * SCAN_CPU_INVERSE)

    def as_dict(self) -> dict[str, Any]:
        return {"dirs": self.dirs, "files": self.files, "cpu_ms": round(self.cpu_ms, 1),
                "interval_s": round(self.interval_s, 1), "passes": self.passes}


def _is_file(path: str) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat_mod.S_ISREG(st.st_mode) else None


def files_in(folder: str) -> Iterable[tuple[sources.SourceSpec, os.stat_result]]:
    """The project files directly in ``folder`` (none of them a symlink)."""
    for rel in sources.PROJECT_FILES:
        path = os.path.join(folder, rel)
        st = _is_file(path)
        if st is None:
            continue
        if os.path.dirname(rel) and os.path.islink(os.path.dirname(path)):
            continue  # .crush as a symlink: never followed
        spec = sources.project_file(path)
        if spec is not None:
            yield spec, st


def walk(folder: Path, max_depth: int = MAX_DEPTH) -> tuple[dict[str, sources.SourceSpec], int]:
    """The project files under ``folder`` (to ``max_depth``), and how many folders were
    listed."""
    found: dict[str, sources.SourceSpec] = {}
    listed = 0
    stack = [(str(folder), 0)]
    while stack:
        d, depth = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        listed += 1
        subdirs: list[str] = []
        names: set[str] = set()
        with it:
            for entry in it:
                names.add(entry.name)
                if depth < max_depth and entry.name[0] != "." and entry.name not in SKIP_DIRS:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(entry.path)
                    except OSError:
                        continue
        if VENV_MARKER in names:
            continue  # a virtual environment: nothing of a project's here
        if sources.AIDER_CHAT in names or ".crush" in names:
            for spec, _st in files_in(d):
                found[spec.path] = spec
        stack.extend((s, depth + 1) for s in sorted(subdirs, reverse=True))
    return found, listed


@dataclass
class ProjectScan:
    """The project files found, by the pass that runs when ``due``."""

    folders: Callable[[], list[Path]]  # the named folders (the configuration's)
    known_roots: Callable[[], list[str]]  # project roots of the store's sessions
    base_interval: float = SCAN_INTERVAL_S
    clock: Callable[[], float] = time.monotonic
    found: dict[str, sources.SourceSpec] = field(default_factory=dict)
    stats: ScanStats = field(default_factory=ScanStats)
    due: float = 0.0
    roots_known: int = 0

    def run(self) -> tuple[set[str], set[str]]:
        """One pass: (paths found that were not before, paths no longer found)."""
        cpu0 = time.thread_time()
        found: dict[str, sources.SourceSpec] = {}
        listed = 0
        named = [f for f in self.folders() if f.is_dir()]
        for folder in named:
            got, n = walk(folder)
            found.update(got)
            listed += n
        roots = self.known_roots()
        self.roots_known = len(roots)
        for root in roots:  # two lstats each: those under a named folder too
            for spec, _st in files_in(root):
                found[spec.path] = spec
        before = set(self.found)
        self.found = found
        stats = self.stats
        stats.dirs, stats.files = listed, len(found)
        stats.cpu_ms = (time.thread_time() - cpu0) * 1000
        stats.passes += 1
        stats.interval_s = stats.next_interval(self.base_interval)
        self.due = self.clock() + stats.interval_s
        return set(found) - before, before - set(found)

    def watch_dirs(self) -> set[str]:
        """The directories holding a found file: the only ones watched."""
        return {os.path.dirname(p) for p in self.found}

    def status(self) -> dict[str, Any]:
        return {
            "folders": [{"path": str(f), "exists": f.is_dir()} for f in self.folders()],
            "known_roots": self.roots_known,
            "files": [{"path": p, "agent": s.adapter} for p, s in sorted(self.found.items())],
            "scan": self.stats.as_dict(),
        }

