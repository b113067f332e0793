"""Round scheduling: which file is read next, by whom, and when its events are
committed. Appends come first, a backfill batch may be carried past them, and during
a large backfill the worker processes take file rounds (ingest/workers.py).

One round goes over the queue in order. Files just appended to come first
(``SourceQueue.appended``) and are committed together, on their own, before anything
else is read or committed: a live line never waits for a backfill's batch. Between any
two pieces of backfill work (a round read here, a batch or a worker's piece committed)
the round asks ``LivePriority`` whether new appends wait, and if they do it ends, so the
next round takes them first: a batch read here is then carried, uncommitted, to be
committed right after them (first, if an appended file has events in it: its cursor in
memory is past them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from ..config import Config
from ..store import Batch
from . import sources
from .committer import Committer
from .priority import LivePriority
from .progress import Progress
from .queue import SourceQueue
from .round import FileRound, Ingestor
from .steps import StepTimer
from .workers import BackfillScheduler, WorkerRound

log = structlog.get_logger("agentsrc.daemon")

FILE_BUDGET_BYTES = 4 << 20  # per file per round: large files do not starve small ones
# Appends are committed together (one commit's fixed cost, about 0.5 ms, shared), but
# after this long reading them the ones read are committed and published while the rest
# are read: twenty files written in the same millisecond do not all wait for the last.
LIVE_BATCH_S = 0.002


@dataclass
class _Round:
    """One round's batch in the making and what it knows."""

    batch: Batch
    deadline: float  # the batch is committed by then (cfg.batch_max_delay)
    urgent: set[str]  # the appended files this round reads first
    carry: Batch | None  # the backfill batch an earlier round left for after the appends
    budget: int = FILE_BUDGET_BYTES  # a backfill round's bytes
    max_events: int = 0  # a batch's events
    opened: float = 0.0  # when the batch's first file was read (on the scheduler's clock)


class RoundScheduler:
    """Runs the ingest loop's rounds (``run_round``) over the source queue."""

    def __init__(
        self,
        cfg: Config,
        queue: SourceQueue,
        committer: Committer,
        priority: LivePriority,
        progress: Progress,
        ingestor: Callable[[], Ingestor],
        timer: StepTimer,
        *,
        appends_waiting: Callable[[], bool],
        stopping: threading.Event,
        between_batches: Callable[[], object],
        backlog_bytes: Callable[[], int],
        release_memory: Callable[[], None],
        log_level: str = "info",
        json_logs: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self.queue = queue
        self.committer = committer
        self.priority = priority
        self.progress = progress
        self.ingestor = ingestor  # the current one (a reload replaces it)
        self.timer = timer
        self.appends_waiting = appends_waiting  # the watcher marked a file since the last look
        self.stopping = stopping
        self.between_batches = between_batches  # the service manager's watchdog ping
        self.backlog_bytes = backlog_bytes
        self.clock = clock
        self.live = False  # the first catch-up is over
        # A backfill batch read here but left uncommitted for an append that came in:
        # committed right after the appends (see run_round).
        self.carry: Batch | None = None
        self.backfill = BackfillScheduler(
            cfg, self.commit_worker_rounds, budget_bytes=FILE_BUDGET_BYTES,
            log_level=log_level, json_logs=json_logs,
            # Before the big lines the workers left: the page cache and the freed heap.
            release_memory=release_memory,
        )

    def has_work(self) -> bool:
        return bool(self.queue.pending) or self.carry is not None

    def appended(self, paths: set[str]) -> None:
        """Files the watcher saw written: to the front of the queue, and the backfill
        yields to them (LivePriority)."""
        if self.queue.appended(paths):
            self.priority.appended(self.clock())

    def appends_wait(self) -> bool:
        """Before a piece of backfill work: an append came in and the backlog moved
        recently, so the piece waits (LivePriority.yields)."""
        return self.priority.yields(self.clock(), self.appends_waiting())

    def progressed(self) -> None:
        self.priority.progressed(self.clock())

    # ---- one round -------------------------------------------------------------------

    def run_round(self) -> None:
        """One round over the pending files, committing as batches fill up; during a
        large backfill, file rounds are also handed to worker processes."""
        ingestor = self.ingestor()
        with self.timer.step("begin_round"):
            self.backfill.begin_round(self.queue.pending, self.backlog_bytes, ingestor)
        r = _Round(Batch(), self._deadline(), self.queue.take_urgent(), self.carry,
                   opened=self.clock())
        self.carry = None
        if r.carry is not None and not r.urgent.isdisjoint(r.carry.cursors):
            # An appended file whose backfill events are not committed yet: its cursor
            # here is past them, so they are committed before it is read again.
            committed = self.committer.commit(r.carry, "backfill")
            r.carry = None
            if not committed:
                return
        r.budget, r.max_events = self.priority.budget(self.clock())
        self.backfill.budget_bytes = r.budget  # the workers' rounds too
        self.backfill.unit_events = r.max_events  # a worker's pieces per commit
        for path in list(self.queue.pending):
            if self.stopping.is_set():
                break
            if path in self.queue.pending and not self._visit(r, path, ingestor):
                break
        self._end(r)

    def _deadline(self) -> float:
        return self.clock() + self.cfg.batch_max_delay

    def _commit_batch(self, r: _Round, what: str) -> bool:
        committed = self.committer.commit(r.batch, what)
        r.batch = Batch()
        r.deadline = self._deadline()
        r.opened = self.clock()
        return committed

    def _visit(self, r: _Round, path: str, ingestor: Ingestor) -> bool:
        """One queued file: committed what must go before it, read it here (or a worker
        takes it), committed a full batch. False: the round ends here."""
        if r.urgent and path not in r.urgent:
            r.urgent = set()
            if not self._commit_batch(r, "appends"):  # the appends, on their own
                return False  # the disk is full: wait (the loop) before reading more
        if not r.urgent:
            if r.carry is not None:
                # The backfill batch the appends went ahead of: before anything of the
                # backlog is read or placed again.
                carry, r.carry = r.carry, None
                if not self.committer.commit(carry, "backfill"):
                    return False
            if self.appends_wait():
                return False  # fresh appends: the next round takes them first
        spec = self.queue.pending.get(path)
        mine = path in r.urgent and self.backfill.take_back(path)
        if spec is None:
            return True
        placed = mine
        if not mine:
            # Before the commit of what the workers finished: a worker given this file
            # now parses it meanwhile.
            with self.timer.step("place"):
                placed = self.backfill.place(spec, ingestor)
        if not r.urgent:
            with self.timer.step("collect"):  # may finish (un-queue) files of this list
                self.backfill.collect(stop=self.appends_wait)
            if self.appends_wait():
                return False
        if not placed:
            return True
        rnd = self._read(r, path, spec, mine, ingestor)
        if rnd.retry_after is not None:
            # Locked by its writer: try again soon, without holding up the loop.
            self.queue.retry_later(path, spec, rnd.retry_after)
            return True
        self.account(path, rnd)
        if r.urgent:
            if self.clock() - r.opened < LIVE_BATCH_S or self.stopping.is_set():
                return True
            return self._commit_batch(r, "appends")  # then the round reads on
        if len(r.batch.events) < r.max_events and self.clock() < r.deadline:
            return True
        if self.appends_wait() and not self.stopping.is_set():
            return False  # committed after the appends (the end of this round)
        committed = self._commit_batch(r, "backfill")
        self.between_batches()
        return committed  # False: the disk is full: wait (the loop) before reading more

    def _read(
        self, r: _Round, path: str, spec: sources.SourceSpec, mine: bool, ingestor: Ingestor
    ) -> FileRound:
        if mine:  # the appended file itself: a round, committed with the appends
            # (while catching up, a file with a backlog of its own reads a batch of it,
            # then backfills: the other files' appends do not wait for all of it)
            return ingestor.ingest(spec, r.batch, FILE_BUDGET_BYTES, max_events=(
                None if self.live else r.max_events))
        with self.timer.step("backfill_round", path=path) as step:
            # At most a batch: a round of tiny lines is not one huge commit.
            rnd = ingestor.ingest(spec, r.batch, r.budget, self._round_ends,
                                  max(1, r.max_events - len(r.batch.events)))
            step["bytes"] = rnd.bytes
        self.progressed()
        return rnd

    def _end(self, r: _Round) -> None:
        if r.urgent:  # only appends were read (a failed commit put them back in the queue)
            self._commit_batch(r, "appends")
        if r.carry is not None:  # only appends were read: the carried batch goes now
            self.committer.commit(r.carry, "backfill")
        if not r.batch.empty():
            if self.appends_wait() and not self.stopping.is_set():
                self.carry = r.batch  # after the appends, at the start of the next round
            else:
                self.committer.commit(r.batch, "backfill")
        with self.timer.step("end_round"):
            self.backfill.end_round(self.queue.pending, stopping=self.stopping.is_set(),
                                    stop=self.appends_wait)

    def _round_ends(self) -> bool:
        """Asked after each line of a backfill round read here: an append waits, or a
        worker finished a round (committed, and the worker handed another, before this
        thread parses on: BackfillScheduler.place)."""
        return self.appends_waiting() or self.backfill.collect_due()

    # ---- what a round did ------------------------------------------------------------

    def account(self, path: str, rnd: FileRound) -> None:
        self.progress.bytes_done += rnd.bytes
        if rnd.deferred:
            # A line over 4 MiB comes next. Read it once the workers are gone, so its
            # working set never adds to theirs (the memory bound holds for all
            # processes together); until then, the file waits.
            self.backfill.defer(path)
            return
        if not rnd.more:
            self.queue.done(path)
            if not self.live:
                self.progress.file_done(path)
        if rnd.gone:
            log.info("source_gone", path=path)

    def commit_worker_rounds(self, done: list[WorkerRound]) -> bool:
        """Rounds the workers finished (or pieces of them), of one or more files: their
        batches are committed in one transaction with the cursors they advanced, which
        replace this thread's copies."""
        cursors = self.ingestor().cursors
        batch = Batch()
        for d in done:
            batch.merge(d.batch)
            cursors[d.path] = d.cursor
        if not self.committer.commit(batch, "worker"):
            return False
        for d in done:
            self.account(d.path, d.round)
        return True

    def close_workers(self) -> None:
        with self.timer.step("close_workers"):
            self.backfill.close(self.ingestor())

    def flush(self) -> None:
        """Stopping: the carried batch and the rounds in the workers' hands (at most
        12 MiB of files) are committed."""
        if self.carry is not None:  # a backfill batch read but not committed yet
            carry, self.carry = self.carry, None
            self.committer.commit(carry)
        self.backfill.close(self.ingestor())
