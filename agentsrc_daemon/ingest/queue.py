"""The source queue: which files wait to be read, in what order, and how they are found.

Files come in four ways: the watcher says a path was written (``appended``: to the
front, ahead of any backfill), the periodic reconcile scan stats every source under
every root, and every project file found (``projects``), and queues those with news (a
trustworthy watcher needs it: inotify drops events), a directory that appears is
scanned (``scan_dir``), and the project scan finds a project file (``found``). A database found
locked by its writer waits in ``retry`` until its time comes. One entry per file,
whatever the number of reasons it was queued for.

The queue holds only paths and their specs; the cursors that say what is new are the
Ingestor's (it is asked, not kept).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config
from ..cursor_table import peek_items
from . import sources
from .progress import Progress
from .project_scan import ProjectScan
from .round import Ingestor

# The reconcile scan's share of a core (0.02%): a scan that costs more than that share of
# the configured interval waits proportionally longer for the next one (20,000 files
# cost about 0.3 s of CPU: 25 minutes), so a large home stays idle while inotify reports
# the changes (and an inotify overflow asks for a scan at once: ingest/watch.py). Scans
# cheaper than RECONCILE_PACE_FLOOR_S keep the configured interval.
RECONCILE_CPU_INVERSE = 5000  # the scan takes at most 1/5000 of a core
RECONCILE_PACE_FLOOR_S = 0.010


@dataclass
class ReconcileStats:
    """The last reconcile scan, for status: what it stat'ed, its CPU, the wait after it."""

    files: int = 0
    cpu_ms: float = 0.0
    interval_s: float = 0.0
    scans: int = 0

    def next_interval(self, configured: float) -> float:
        cpu = self.cpu_ms / 1000
        if cpu < RECONCILE_PACE_FLOOR_S:
            return configured
        return max(configured, cpu * RECONCILE_CPU_INVERSE)

    def as_dict(self) -> dict[str, Any]:
        return {"files": self.files, "cpu_ms": round(self.cpu_ms, 1),
                "interval_s": round(self.interval_s, 1), "scans": self.scans}


class SourceQueue:
    """The files to read (``pending``, in order), the databases to retry later
    (``retry``), and the appended files of the latest wake-up (``urgent``)."""

    def __init__(self, cfg: Config, clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.clock = clock
        self.pending: OrderedDict[str, sources.SourceSpec] = OrderedDict()
        # Database sources found locked: retried at the given clock time.
        self.retry: dict[str, tuple[float, sources.SourceSpec]] = {}
        self.urgent: set[str] = set()  # appended files queued first (see ``appended``)
        self.stats = ReconcileStats()
        self.projects: ProjectScan | None = None  # the project files found (the daemon's)

    def __bool__(self) -> bool:
        return bool(self.pending)

    def classify(self, path: str) -> list[sources.SourceSpec]:
        """The sources a changed path concerns: itself when it is a source, else the
        ones it wakes (a database's -wal/-shm, a sidecar's transcripts)."""
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        spec = sources.classify(path, roots, extra)
        return [spec] if spec is not None else sources.dependents(path, roots, extra)

    # ---- finding files -------------------------------------------------------------

    def _all_sources(self) -> Iterator[tuple[sources.SourceSpec, os.stat_result]]:
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        for root in roots.values():
            if root.is_dir():
                yield from sources.walk_sources(root, roots, extra)
        for spec, st in sources.walk_extra(extra):
            if sources.classify(spec.path, roots) is None:  # not already under a root
                yield spec, st
        for path, spec in (self.projects.found.items() if self.projects is not None else ()):
            try:
                yield spec, os.stat(path)
            except OSError:
                continue  # gone since the project scan: _queue_gone marks it

    def reconcile(self, ingestor: Ingestor, counting: Progress | None) -> int:
        """Stat every source under every root; queue those with news (counted in
        ``counting``'s totals during the first catch-up). Also queue known files that
        are no longer found, so they are marked gone. Returns how many were queued."""
        cpu0 = time.thread_time()
        seen: set[str] = set()
        queued = self._queue_news(ingestor, counting, seen)
        queued += self._queue_gone(ingestor, seen)
        stats = self.stats
        stats.files = len(seen)
        stats.cpu_ms = (time.thread_time() - cpu0) * 1000
        stats.scans += 1
        stats.interval_s = stats.next_interval(self.cfg.reconcile_interval)
        return queued

    def _queue_news(self, ingestor: Ingestor, counting: Progress | None, seen: set[str]) -> int:
        queued = 0
        for spec, st in self._all_sources():
            seen.add(spec.path)
            if ingestor.needs_read(spec, st) and spec.path not in self.pending:
                self.pending[spec.path] = spec
                queued += 1
                if counting is not None:
                    c = ingestor.known_cursor(spec.path)
                    same = c is not None and c.ino == st.st_ino
                    tailed = spec.mode in (sources.JSONL, sources.TEXT)
                    done = c.offset if c and same and tailed else 0
                    counting.found(spec.mode, max(0, st.st_size - done))
        return queued

    def _queue_gone(self, ingestor: Ingestor, seen: set[str]) -> int:
        queued = 0
        for path, cursor in peek_items(ingestor.cursors):  # a look: packed ones stay so
            if path not in seen and cursor.gone_at is None and path not in self.pending:
                gone_spec = sources.classify(path, self.cfg.roots(), self.cfg.extra_sources())
                if gone_spec is not None:
                    self.pending[path] = gone_spec
                    queued += 1
        return queued

    def scan_dir(self, directory: str | Path, ingestor: Ingestor) -> None:
        """A directory that appeared (a root, or a directory the watcher reported):
        its sources with news are queued."""
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        for spec, st in sources.walk_sources(Path(directory), roots, extra):
            if ingestor.needs_read(spec, st):
                self.pending.setdefault(spec.path, spec)

    def found(self, paths: Iterable[str], ingestor: Ingestor) -> None:
        """Project files the project scan found: queued when they have news."""
        for path in paths:
            spec = sources.classify(path, self.cfg.roots(), self.cfg.extra_sources())
            if spec is None:
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if ingestor.needs_read(spec, st):
                self.pending.setdefault(path, spec)

    # ---- what the loop does with it -----------------------------------------------------

    def appended(self, paths: Iterable[str]) -> bool:
        """Files the watcher saw written go to the front of the queue, ahead of any
        backfill, and are committed on their own (RoundScheduler). True when any was."""
        urgent: list[str] = []
        for p in paths:
            for spec in self.classify(p):
                # A database woken by a -shm read mark (ours included) finds nothing new
                # in its round: data_version did not move.
                self.pending.setdefault(spec.path, spec)
                urgent.append(spec.path)
        for path in reversed(urgent):
            self.pending.move_to_end(path, last=False)
        if urgent:
            self.urgent = set(urgent)
        return bool(urgent)

    def take_urgent(self) -> set[str]:
        urgent, self.urgent = self.urgent, set()
        return urgent

    def retry_later(self, path: str, spec: sources.SourceSpec, delay: float) -> None:
        """Locked by its writer: out of the queue, back once ``delay`` has passed."""
        self.pending.pop(path, None)
        self.retry[path] = (self.clock() + delay, spec)

    def requeue_retries(self) -> None:
        now = self.clock()
        for path, (due, spec) in list(self.retry.items()):
            if due <= now:
                del self.retry[path]
                self.pending.setdefault(path, spec)

    def next_retry(self) -> float | None:
        return min((t for t, _ in self.retry.values()), default=None)

    def done(self, path: str) -> None:
        self.pending.pop(path, None)

    def requeue(self, paths: Iterable[str]) -> None:
        """Files whose commit the store refused: back in the queue, to be read again."""
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        for path in paths:
            spec = sources.classify(path, roots, extra)
            if spec is not None:
                self.pending.setdefault(path, spec)

    def with_bytes_to_read(self) -> list[str]:
        """The files that may have bytes to read: queued, or waiting to be retried (a
        file in a worker's hands stays queued until its round is committed)."""
        return [*self.pending, *self.retry]
