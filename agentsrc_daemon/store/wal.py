"""The WAL's bound and its checkpoints: the whole policy in one place.

The WAL never grows past ``connection.WAL_LIMIT_BYTES`` (the connection's
journal_size_limit). Two parties keep it small:

* the ``Checkpointer``, a thread with a connection of its own that runs PASSIVE
  checkpoints after commits, so the database's sync never runs on the ingest thread;
* the writer's ``WalBound``: a RESTART checkpoint, for readers that keep a PASSIVE
  checkpoint from finishing; ``truncate`` empties the log when the daemon is idle.

Past a quarter of the bound the ingest thread first waits for the checkpointer to copy
every frame (``Checkpointer.catch_up``): SQLite then starts the log over at the next
commit by itself. The RESTART runs only when that did not happen by WAL_FORCE_PAGES.

A chunked migration keeps the WAL bounded between its chunks with ``restart_checkpoint``.
``WalUpkeep`` is when, on the ingest thread, between commits: the checkpointer asked (and
waited for, not while a live append waits), the writer's RESTART put off, the log
truncated once idle.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import apsw
import structlog

from .connection import (
    BUSY_TIMEOUT_MS,
    PAGE_SIZE,
    STORE_WRITE_ERRORS,
    WAL_CHECKPOINT_PAGES,
    WAL_LIMIT_BYTES,
    connect,
)

log = structlog.get_logger("agentsrc.store.checkpoint")

# The ingest loop leaves the log to the checkpointer's catch-up (WalUpkeep.check) up to
# this, 3/8 of the bound; past it the writer runs its RESTART (not while a live append
# waits, until WAL_HARD_PAGES).
WAL_FORCE_PAGES = WAL_LIMIT_BYTES * 3 // 8 // PAGE_SIZE
# How long a checkpoint waits for readers still on an older snapshot (then the next
# commit tries again): readers are short transactions, and the writer must not stall.
WAL_RESTART_BUSY_MS = 200
# Past half the bound the writer's RESTART is tried again until it completes, for up to
# WAL_HARD_BUSY_MS: a stall of the writer rather than a WAL past its bound. A RESTART
# fails at once, without the busy handler, while another connection checkpoints (the
# Checkpointer thread's PASSIVE): with another process writing 6 GB to the disk each
# PASSIVE took hundreds of ms, every RESTART of the search index's build found one
# running, and the WAL reached 65-88 MiB. The other half is room for the largest
# commit (a backfill batch: 19 MiB at most measured).
WAL_HARD_PAGES = WAL_LIMIT_BYTES // 2 // PAGE_SIZE
WAL_HARD_BUSY_MS = 10_000

CHECKPOINT_INTERVAL_S = 0.2
# The daemon asks for a checkpoint once the WAL holds this many pages (4 MiB of 16 KiB
# pages), a quarter of the writer's own bound, or when it goes idle. Not after every
# commit: a page written again and again (an index's hot leaves) would be copied and
# synced at every checkpoint (measured: checkpoints every 200 ms made the search index's
# build steps three times slower).
CHECKPOINT_MIN_PAGES = 256
# Past this many pages (half of the writer's RESTART threshold, WalBound) the
# checkpoints run back to back: the RESTART then finds all but the last commits copied
# (a short copy and sync on the ingest thread instead of up to 1,000 random pages), or
# none at all when one of them finished between two commits and the writer's next
# commit started the WAL over. Measured at 10 million events with 20 writers: the
# RESTART took 44-68 ms with the pause, while appends queued behind it.
CHECKPOINT_HURRY_PAGES = WAL_CHECKPOINT_PAGES // 2
# Past WAL_CHECKPOINT_PAGES, the ingest thread waits this long at most (in slices of
# CATCH_UP_SLICE_S, between which an append that came in ends the wait) for the
# checkpointer to copy every frame: then the writer's next commit starts the log over
# itself, and no RESTART (a copy and a sync of the database on the ingest thread) is
# needed (WalUpkeep.check).
WAL_CATCH_UP_S = 0.05
CATCH_UP_SLICE_S = 0.002


class WalBound:
    """Keeps the WAL under WAL_LIMIT_BYTES whatever the readers do. SQLite's own
    auto-checkpoint is PASSIVE: with readers one after another (the socket's threads,
    the sink) some reader always holds a frame of the WAL, the log never starts over,
    and it grew to 145 MiB in a backfill (tests/test_store_size.py). So the writer
    counts the WAL's pages (a WAL hook, which replaces the auto-checkpoint) and past
    a quarter of the bound runs a RESTART checkpoint, which waits (briefly) for the readers to
    reach the latest snapshot and makes the next commit write the log from its start;
    journal_size_limit then cuts the file back to the bound."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.pages = 0
        conn.set_wal_hook(self._committed)

    def _committed(self, conn: apsw.Connection, name: str, pages: int) -> int:
        self.pages = pages
        return apsw.SQLITE_OK

    @property
    def due(self) -> bool:
        return self.pages >= WAL_CHECKPOINT_PAGES

    def check(self, conn: apsw.Connection) -> None:
        """After a commit: checkpoint if the WAL holds a quarter of its bound."""
        if not self.due:
            return
        if (restart_checkpoint_within(conn, WAL_HARD_BUSY_MS) if self.pages >= WAL_HARD_PAGES
                else restart_checkpoint(conn)):
            self.pages = 0


def restart_checkpoint(conn: apsw.Connection, busy_ms: int = WAL_RESTART_BUSY_MS) -> bool:
    """A RESTART checkpoint: whether it completed (a reader on an older snapshot that
    outlasts ``busy_ms`` makes it give up, and so does another connection's checkpoint
    running, at once)."""
    conn.setbusytimeout(busy_ms)
    try:
        conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_RESTART)
    except apsw.BusyError:
        return False
    finally:
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
    return True


def restart_checkpoint_within(conn: apsw.Connection, total_ms: int) -> bool:
    """RESTART checkpoints tried until one completes, for up to ``total_ms`` in all:
    another connection's checkpoint is waited out too."""
    deadline = time.monotonic() + total_ms / 1000
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if restart_checkpoint(conn, max(left_ms, 1)):
            return True
        if left_ms <= 0:
            return False
        time.sleep(0.005)


def truncate(conn: apsw.Connection) -> bool:
    """Checkpoint the whole WAL and truncate it to nothing (when idle). A reader in
    the middle of a transaction holds it: then give up at once (the ingest loop must
    not wait on readers) and say so; the caller tries again later."""
    conn.setbusytimeout(0)
    try:
        log_frames, _ = conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    except apsw.BusyError:
        return False
    finally:
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
    return log_frames == 0


class Checkpointer:
    """WAL checkpoints off the ingest thread: ``notify()`` after a commit; the thread
    checkpoints soon after (coalesced). ``catch_up()`` waits for a checkpoint that copies
    every frame committed so far (see WalUpkeep.check).

    A checkpoint copies the WAL's pages into the database file and syncs it: on a
    multi-gigabyte store with other processes writing to the same disk, that sync can
    take hundreds of milliseconds, and on the ingest thread every live append queued
    behind it waited as long. The thread has a connection of its own and runs PASSIVE
    checkpoints after commits (at most every ``interval_s``, and back to back while the
    WAL nears the writer's RESTART: ``CHECKPOINT_HURRY_PAGES``): PASSIVE never blocks
    the writer or the readers, and once it has copied every frame the writer's next
    commit starts the WAL over from its beginning (SQLite does that itself), so the log
    stays small. The writer's own RESTART (``WalBound``) and idle truncation find the
    frames already copied and do not sync. apsw releases the GIL inside SQLite, so the
    copy and the sync do not hold up the daemon's Python threads either."""

    def __init__(self, db_path: Path, interval_s: float = CHECKPOINT_INTERVAL_S) -> None:
        self.db_path = db_path
        self.interval_s = interval_s
        self.checkpoints = 0  # completed (every frame copied), for tests and status
        self.busy = 0  # found another checkpoint running, or readers in the way
        self.last_ms = 0.0
        # A checkpoint is running now: a RESTART by the writer would wait for it (on
        # SQLite's checkpoint lock) instead of finding its frames copied after it.
        self.running = False
        self.started = 0  # checkpoints begun, numbered from 1
        self.caught_up = 0  # the number of the last one that copied every frame it found
        self._completed = threading.Event()  # set after each checkpoint
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

    def catch_up(self, timeout_s: float, stop: Callable[[], bool]) -> bool:
        """Wait (at most ``timeout_s``, and only while ``stop`` says False: it is asked
        every CATCH_UP_SLICE_S) for a checkpoint begun after this call to copy every
        frame: every frame the writer has committed by now. Whether one did."""
        target = self.started + 1
        self.notify(hurry=True)
        deadline = time.monotonic() + timeout_s
        while self.caught_up < target:
            left = deadline - time.monotonic()
            if left <= 0 or stop() or not self._thread.is_alive():
                return False
            self._completed.wait(min(left, CATCH_UP_SLICE_S))
            self._completed.clear()
        return True

    def stop(self) -> None:
        self._stop.set()
        self._hurry.set()
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
                self.started += 1
                try:
                    if self._checkpoint(conn):
                        self.caught_up = self.started
                finally:
                    self.running = False
                    self._completed.set()
                # Commits during the checkpoint set the event again: the next one runs
                # after the pause, so a stream of appends costs a checkpoint per pause.
                # Unless the WAL nears the writer's RESTART: then each runs as soon as
                # the last is done (a hurry during the pause cuts it short), copying one
                # or two commits' frames.
                if not self._hurry.is_set():
                    self._hurry.wait(self.interval_s)
                self._hurry.clear()
                if self._stop.is_set():
                    return
        finally:
            conn.close()

    def _checkpoint(self, conn: apsw.Connection) -> bool:
        """A PASSIVE checkpoint: whether it copied every frame of the WAL."""
        t0 = time.perf_counter()
        try:
            log_frames, copied = conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        except apsw.BusyError:  # the writer's own checkpoint is running
            self.busy += 1
            return False
        except (apsw.FullError, apsw.IOError) as exc:
            # The frames stay in the WAL (nothing is lost); the writer sees the disk
            # full on its own commits and retries them.
            log.warning("checkpoint_failed", error=type(exc).__name__)
            return False
        self.last_ms = (time.perf_counter() - t0) * 1000
        if copied >= log_frames:
            self.checkpoints += 1
            return True
        self.busy += 1  # a reader on an older snapshot: the rest next time
        return False


class _Writer(Protocol):
    """What the upkeep needs of the writer (store.writer.Store)."""

    @property
    def wal_pages(self) -> int: ...

    @property
    def wal_due(self) -> bool: ...

    def check_wal(self) -> None: ...

    def truncate_wal(self) -> bool: ...


# ---- the upkeep between commits, on the ingest thread ------------------------------------
# The store's own pieces do the work (the writer's WalBound, truncate, the Checkpointer);
# this is the policy of when: a live append that waits is never held up by a checkpoint
# it does not need (up to WAL_FORCE_PAGES), the writer's RESTART never runs on top of the
# checkpointer's own (it would wait for it on SQLite's lock), and an idle daemon's WAL
# goes back to nothing without syncing the database on the ingest thread.

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
        store: _Writer,
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
            # Hurried only below the writer's own RESTART (WAL_FORCE_PAGES): past it,
            # checkpoints back to back would hold the checkpoint lock the RESTART needs
            # (readers that keep a PASSIVE from finishing then let the WAL grow past
            # its bound).
            self.checkpointer.notify(hurry=CHECKPOINT_HURRY_PAGES <= pages < WAL_FORCE_PAGES)

    def check(
        self,
        append_waits: Callable[[], bool],
        step: Callable[..., contextlib.AbstractContextManager[object]],
    ) -> None:
        """After a commit: the WAL's bound, once it holds a quarter of it.

        With the checkpointer thread, up to WAL_FORCE_PAGES, this thread waits for it to
        copy every frame (``Checkpointer.catch_up``, at most WAL_CATCH_UP_S, and not
        while a live append waits: ``append_waits``). A log whose every frame is copied
        is started over by SQLite itself at the next commit, so nothing is copied or
        synced on this thread. (The checkpointer alone rarely caught up: with a commit
        every few ms of a backfill, each of its checkpoints ended with newer frames
        behind it, and the writer's RESTART took 15-35 ms every 16 MiB of WAL, an
        append's wait at the 99th percentile.)

        Without it, or past WAL_FORCE_PAGES (readers kept the log from starting over),
        a RESTART checkpoint on this thread (wal.WalBound), put off while an append
        waits (up to WAL_FORCE_PAGES). On a loaded disk it took 30-320 ms. ``step``
        times both (StepTimer.step)."""
        store = self.store
        if not store.wal_due:
            return
        checkpointer = self.checkpointer
        if store.wal_pages < WAL_FORCE_PAGES:
            if checkpointer is not None:
                with step("wal_catch_up", pages=store.wal_pages):
                    checkpointer.catch_up(WAL_CATCH_UP_S, append_waits)
                return
            if append_waits():
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
