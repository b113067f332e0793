"""The backfill's progress since start and the backlog, for status.

Both are kept by the ingest thread (the only one that touches cursors and the queue)
and read by the server's threads as plain values: ``Backlog.value`` is a tuple swapped
whole, never summed while a server thread reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import sources

# The backlog is summed at most this often while the loop works.
BACKLOG_REFRESH_S = 0.25


@dataclass
class Progress:
    """Backfill progress since start, for status."""

    started: float = 0.0
    files_total: int = 0
    files_done: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    # Files counted in files_done (a database woken again by its -wal while catching
    # up is not a second file).
    counted: set[str] = field(default_factory=set)

    def found(self, mode: str, bytes_to_read: int) -> None:
        """The first catch-up's reconcile queued a file with this much to read (a
        database's progress is its rows, not its bytes)."""
        self.files_total += 1
        if mode != sources.SQLITE:
            self.bytes_total += bytes_to_read

    def file_done(self, path: str) -> None:
        if path not in self.counted:
            self.counted.add(path)
            self.files_done += 1

    def as_dict(self, pending_bytes: int, now: float | None = None) -> dict[str, Any]:
        elapsed = max(1e-6, (time.monotonic() if now is None else now) - self.started)
        rate = self.bytes_done / elapsed
        eta = pending_bytes / rate if rate > 0 and pending_bytes else 0.0
        return {
            "files_done": self.files_done,
            "files_total": self.files_total,
            "bytes_done": self.bytes_done,
            "bytes_total": self.bytes_total,
            "rate_bytes_per_s": round(rate, 1),
            "eta_s": round(eta, 1),
        }


class Backlog:
    """Bytes and files still to read, summed on the ingest thread and published as
    ``value`` for status. ``bytes_of`` sums the queued files' lag (not every cursor:
    44,000 in a large home cost 0.1 s a call)."""

    def __init__(
        self,
        lag: Callable[[], int],
        files: Callable[[], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lag = lag
        self._files = files
        self.clock = clock
        self.value: tuple[int, int] = (0, 0)  # (bytes, files)
        self.stale = True  # the queue or the cursors moved since the last refresh
        self._at = -float("inf")
        self.progress: Progress | None = None  # the first catch-up's, until live

    def bytes(self) -> int:
        """Bytes still to read: the queued files' lag, or during the first catch-up the
        reconcile's total less what is done (new files have no cursor yet)."""
        lag = self._lag()
        p = self.progress
        return lag if p is None else max(lag, p.bytes_total - p.bytes_done)

    def refresh(self, force: bool = False) -> None:
        now = self.clock()
        if force or now - self._at >= BACKLOG_REFRESH_S:
            self._at = now
            self.value = (self.bytes(), self._files())
            self.stale = False
