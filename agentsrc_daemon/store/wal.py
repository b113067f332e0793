"""WAL checkpoints off the ingest thread.

A checkpoint copies the WAL's pages into the database file and syncs it: on a
multi-gigabyte store with other processes writing to the same disk, that sync can take
hundreds of milliseconds, and on the ingest thread every live append queued behind it
waited as long. The ``Checkpointer`` is a thread with a connection of its own that runs
PASSIVE checkpoints after commits (at most every ``interval_s``, and back to back while
the WAL nears the writer's RESTART: ``CHECKPOINT_HURRY_PAGES``): PASSIVE never blocks
the writer or the readers, and once it has copied every frame the writer's next commit
starts the WAL over from its beginning (SQLite does that itself), so the log stays
small. The writer keeps its own bound (``schema.WalBound``: a RESTART checkpoint past a
quarter of the limit, for readers that keep a PASSIVE checkpoint from finishing) and
truncates the log when idle; both find the frames already copied and do not sync.
apsw releases the GIL inside SQLite, so the copy and the sync do not hold up the
daemon's Python threads either.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import apsw
import structlog

from .schema import WAL_CHECKPOINT_PAGES, connect

log = structlog.get_logger("agentsrc.store.checkpoint")

CHECKPOINT_INTERVAL_S = 0.2
# The daemon asks for a checkpoint once the WAL holds this many pages (4 MiB of 16 KiB
# pages), a quarter of the writer's own bound, or when it goes idle. Not after every
# commit: a page written again and again (an index's hot leaves) would be copied and
# synced at every checkpoint (measured: checkpoints every 200 ms made the search index's
# build steps three times slower).
CHECKPOINT_MIN_PAGES = 256
# Past this many pages (half of the writer's RESTART threshold, schema.WalBound) the
# checkpoints run back to back: the RESTART then finds all but the last commits copied
# (a short copy and sync on the ingest thread instead of up to 1,000 random pages), or
# none at all when one of them finished between two commits and the writer's next
# commit started the WAL over. Measured at 10 million events with 20 writers: the
# RESTART took 44-68 ms with the pause, while appends queued behind it.
CHECKPOINT_HURRY_PAGES = WAL_CHECKPOINT_PAGES // 2


class Checkpointer:
    """``notify()`` after a commit; the thread checkpoints soon after (coalesced)."""

    def __init__(self, db_path: Path, interval_s: float = CHECKPOINT_INTERVAL_S) -> None:
        self.db_path = db_path
        self.interval_s = interval_s
        self.checkpoints = 0  # completed (every frame copied), for tests and status
        self.busy = 0  # found another checkpoint running, or readers in the way
        self.last_ms = 0.0
        # A checkpoint is running now: a RESTART by the writer would wait for it (on
        # SQLite's checkpoint lock) instead of finding its frames copied after it.
        self.running = False
        self._wake = threading.Event()
        self._hurry = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentsrc-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def notify(self, *, hurry: bool = False) -> None:
        """A commit happened. ``hurry``: the WAL nears the writer's RESTART, so the
        next checkpoint runs without the pause (see CHECKPOINT_HURRY_PAGES)."""
        if hurry:
            self._hurry.set()
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        conn = connect(self.db_path)
        try:
            while True:
                self._wake.wait()
                if self._stop.is_set():
                    return
                self._wake.clear()
                self.running = True
                try:
                    self._checkpoint(conn)
                finally:
                    self.running = False
                # Commits during the checkpoint set the event again: the next one runs
                # after the pause, so a stream of appends costs a checkpoint per pause.
                # Unless the WAL nears the writer's RESTART: then each runs as soon as
                # the last is done, copying one or two commits' frames.
                if self._hurry.is_set():
                    self._hurry.clear()
                    continue
                if self._stop.wait(self.interval_s):
                    return
        finally:
            conn.close()

    def _checkpoint(self, conn: apsw.Connection) -> None:
        t0 = time.perf_counter()
        try:
            log_frames, copied = conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        except apsw.BusyError:  # the writer's own checkpoint is running
            self.busy += 1
            return
        except (apsw.FullError, apsw.IOError) as exc:
            # The frames stay in the WAL (nothing is lost); the writer sees the disk
            # full on its own commits and retries them.
            log.warning("checkpoint_failed", error=type(exc).__name__)
            return
        self.last_ms = (time.perf_counter() - t0) * 1000
        if copied >= log_frames:
            self.checkpoints += 1
        else:
            self.busy += 1  # a reader on an older snapshot: the rest next time
