"""The WAL's upkeep between commits: the writer's bound after each commit, the
checkpointer thread asked when the log has grown, and the log truncated once idle.

The store's own pieces do the work (``Store.check_wal``/``truncate_wal``, the
``Checkpointer``); this is the policy of when, on the ingest thread: a live append that
waits is never held up by a checkpoint it does not need (up to WAL_FORCE_PAGES), the
writer's RESTART never runs on top of the checkpointer's own (it would wait for it on
SQLite's lock), and an idle daemon's WAL goes back to nothing without syncing the
database on the ingest thread.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import apsw
import structlog

from .connection import WAL_CHECKPOINT_PAGES
from .wal import CHECKPOINT_HURRY_PAGES, CHECKPOINT_MIN_PAGES, WAL_FORCE_PAGES, Checkpointer
from .writer import Store

log = structlog.get_logger("agentsrc.daemon")

# What a write can fail with and succeed on a later try: the disk (or the user's quota)
# full, or an I/O error (SQLite reports a -shm it cannot grow as one).
STORE_WRITE_ERRORS = (apsw.FullError, apsw.IOError)
# When idle, a WAL truncate that a reader blocked is tried again this soon.
WAL_RETRY_S = 1.0
# The WAL is truncated once no commit came for this long: not between the appends of a
# live session (each truncate is a checkpoint on this thread, and the file grows again
# at the next commit).
WAL_IDLE_S = 2.0
# Idle: the checkpointer copies what is left first, then (this much later) the ingest
# thread truncates a WAL with nothing left to copy, so it does not sync the database.
WAL_IDLE_CHECKPOINT_S = 0.5


class WalUpkeep:
    """``committed()`` after every write of the ingest thread, ``check()`` after a
    commit's events are published, ``truncate_if_idle()`` when the loop has nothing to
    do (it says when to look again)."""

    def __init__(
        self,
        store: Store,
        checkpointer: Checkpointer | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.checkpointer = checkpointer
        self.clock = clock
        self.dirty = False  # committed since the WAL was last truncated
        self._committed_at = 0.0  # the last commit (see WAL_IDLE_S)
        self._idle_checkpoint = False  # the checkpointer was asked since the last commit

    def committed(self) -> None:
        self.dirty = True
        self._committed_at = self.clock()
        self._idle_checkpoint = False
        pages = self.store.wal_pages
        if self.checkpointer is not None and pages >= CHECKPOINT_MIN_PAGES:
            # Hurried only below the writer's own RESTART: past it, checkpoints back to
            # back would hold the checkpoint lock the RESTART needs (readers that keep
            # a PASSIVE from finishing then let the WAL grow past its bound).
            self.checkpointer.notify(hurry=CHECKPOINT_HURRY_PAGES <= pages < WAL_CHECKPOINT_PAGES)

    def check(self, append_waits: bool, step: Callable[..., contextlib.AbstractContextManager[object]]) -> None:
        """The WAL's bound (a RESTART checkpoint once it holds a quarter of it, on this
        thread: wal.WalBound), put off while a live append waits (``append_waits``,
        up to WAL_FORCE_PAGES): it runs after a later commit with none waiting. On a
        loaded disk it took 30-320 ms. ``step`` times it (StepTimer.step)."""
        store = self.store
        if not store.wal_due:
            return
        checkpointer = self.checkpointer
        if store.wal_pages < WAL_FORCE_PAGES and (
            append_waits or (checkpointer is not None and checkpointer.running)
        ):
            return
        try:
            with step("wal_checkpoint", pages=store.wal_pages):
                store.check_wal()
        except STORE_WRITE_ERRORS as exc:  # the frames stay in the WAL: next time
            log.warning("wal_checkpoint_failed", error=type(exc).__name__)

    def truncate_if_idle(self, step: Callable[..., contextlib.AbstractContextManager[object]]) -> float:
        """Idle: the WAL goes back to nothing once no commit came for WAL_IDLE_S (a
        reader mid-transaction holds it: then again shortly). Returns when to look
        again (infinity: done)."""
        if not self.dirty:
            return float("inf")
        now = self.clock()
        checkpointer = self.checkpointer
        idle_at = self._committed_at + (WAL_IDLE_S if checkpointer else 0.0)
        if now < idle_at:
            return idle_at
        if checkpointer is not None and not self._idle_checkpoint:
            self._idle_checkpoint = True
            checkpointer.notify()
            return now + WAL_IDLE_CHECKPOINT_S
        with contextlib.suppress(*STORE_WRITE_ERRORS), step("truncate_wal"):
            self.dirty = not self.store.truncate_wal()
        return now + WAL_RETRY_S if self.dirty else float("inf")
