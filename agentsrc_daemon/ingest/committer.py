"""Committing: a batch and its files' cursors in one transaction, and what follows a
commit on the ingest thread (the only writer).

After a commit its events are published to subscribers, the sink is woken (and an
acknowledged push's position saved), the WAL's bound is kept (store/wal.py's WalUpkeep) and
the search index's merging is paid when no quiet moment came for it. A commit the store
refuses (the disk full: SQLITE_FULL, or an I/O error) rolls back whole: its files go
back to their committed cursors and into the queue, and nothing is written again until
the next try (0.5 s, doubling to 30 s), so nothing is lost or doubled when space returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from ..rpc.transport import Hub
from ..store import Batch, Store
from ..store import sink as sink_store
from ..store.connection import STORE_WRITE_ERRORS
from ..store.cursors import STATE_QUIET_S
from ..store.search_index import SEARCH_CHUNK_IDS
from ..store.wal import WalUpkeep
from .queue import SourceQueue
from .round import Ingestor
from .steps import StepTimer

log = structlog.get_logger("agentsrc.daemon")

RETRY_FIRST_S = 0.5  # after a failed commit; doubled on each failure in a row
RETRY_MAX_S = 30.0
# Usage events priced again per step of a re-price (store/costs.py): one transaction,
# about 25 ms at 1 million events (bench/run.py reprice), between which an append goes first.
REPRICE_CHUNK = 500
# Steps of merging owed by the search index's writes (store/search_merge.py) with no
# quiet moment to run them: past this many a step follows each commit, so the debt stays
# bounded under a stream that never pauses (FTS5's own automerge would have done four
# steps' worth in one commit).
SEARCH_MERGE_FORCE_STEPS = 4


@dataclass
class StoreErrors:
    """Writes the store refused (disk full): counted for status, and when to try again.
    A failed commit leaves everything as it was: the database rolled back, the files'
    cursors reset to what it holds, so the next try reads the same lines again."""

    clock: Callable[[], float] = time.monotonic
    count: int = 0
    last_error: str | None = None
    last_at: str | None = None
    delay: float = 0.0  # the last wait; 0 once a commit succeeds
    retry_at: float = 0.0  # on the clock

    def failed(self, exc: BaseException) -> float:
        self.count += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        self.last_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.delay = min(RETRY_MAX_S, self.delay * 2 if self.delay else RETRY_FIRST_S)
        self.retry_at = self.clock() + self.delay
        return self.delay

    def succeeded(self) -> None:
        self.delay = 0.0
        self.retry_at = 0.0

    def waiting(self) -> float:
        """Seconds until the next try (0: write now)."""
        return max(0.0, self.retry_at - self.clock())

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "last_error": self.last_error,
            "last_at": self.last_at,
            "retry_in_s": round(self.waiting(), 1),
        }


class Committer:
    """The ingest thread's writes to the store, and their aftermath. ``append_waits``
    says whether a live append waits (the WAL's checkpoint is put off for it);
    ``on_progress`` is called after each commit of backfill work (the backlog moved:
    appends that wait now go first, ingest/priority.py)."""

    def __init__(
        self,
        store: Store,
        queue: SourceQueue,
        ingestor: Callable[[], Ingestor],
        hub: Hub,
        timer: StepTimer,
        wal: WalUpkeep,
        *,
        append_waits: Callable[[], bool],
        on_progress: Callable[[], None],
        errors: StoreErrors | None = None,
        sink: Any = None,
        search_chunk_ids: int | None = None,
        reprice_chunk: int | None = None,
        state_quiet_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.queue = queue
        self.ingestor = ingestor  # the current one (a reload replaces it)
        self.hub = hub
        self.timer = timer
        self.wal = wal
        self.append_waits = append_waits
        self.on_progress = on_progress
        self.sink = sink  # sink.pusher.Pusher when [sink.clickhouse] is configured
        self.search_chunk_ids = search_chunk_ids or SEARCH_CHUNK_IDS
        self.reprice_chunk = reprice_chunk or REPRICE_CHUNK
        self.state_quiet_s = STATE_QUIET_S if state_quiet_s is None else state_quiet_s
        # A re-price with events left: begun at start (the prices changed) or cut short
        # by a stop; until a step finds nothing left (reprice() sets it again).
        self.repricing = store.reprice_pending()
        self._repriced = 0  # usage events priced again since the re-price began
        self.errors = StoreErrors(clock) if errors is None else errors

    def commit(self, batch: Batch, what: str = "backfill") -> bool:
        """Commit on the ingest thread. (A committer thread was measured: with the GIL
        handed back and forth on every row it was slower and held more batches in
        memory; see docs/performance.md.) False when the store refused it (disk full):
        then nothing of it happened, and its files are queued to be read again."""
        if batch.empty():
            return True
        try:
            with self.timer.step("commit", events=len(batch.events) + len(batch.rows),
                                 files=len(batch.cursors), what=what):
                # The WAL's checkpoint after the publish below (WalUpkeep.check).
                inserted = self.store.commit(batch, check_wal=False, live=what == "appends")
        except STORE_WRITE_ERRORS as exc:
            self._refused(batch, exc)
            return False
        self.errors.succeeded()
        self.ingestor().committed(batch.cursors)
        if what != "appends":
            self.on_progress()
        if self.sink is not None:
            self.sink.notify()
            self.save_sink_ack()
        # Checked after the commit: a subscriber registering later finds these events
        # in its backlog query, so skipping the rows when nobody listens leaves no gap.
        if inserted and self.hub.count():
            with self.timer.step("publish"):
                self.hub.publish(inserted.rows(self.hub.wanted()))
        self._after_write()
        index = self.store.search_index
        if index.merge_owed >= SEARCH_MERGE_FORCE_STEPS * index.merge_pages:
            self.merge_search()  # no quiet moment came: a step after each commit
        return True

    def _after_write(self) -> None:
        self.wal.check(self.append_waits, self.timer.step)
        self.wal.committed()  # the checkpointer after the writer's own checkpoint

    def _refused(self, batch: Batch, exc: BaseException) -> None:
        """The transaction rolled back: the batch's files go back to their committed
        cursors and into the queue, read again once the next try is due."""
        paths = list(batch.cursors)
        committed = self.store.cursors.committed(paths)
        ingestor = self.ingestor()
        for path in paths:
            ingestor.restore(path, committed.get(path))
        self.queue.requeue(paths)
        # Counted once the files are queued again: a status that sees the count sees
        # them waiting too (StatusBoard.report reads the errors before the state).
        delay = self.errors.failed(exc)
        # Counts and the error's type and message (SQLite's, never the data).
        log.warning(
            "commit_failed",
            error=type(exc).__name__,
            detail=str(exc),
            files=len(paths),
            events=len(batch.rows) + len(batch.events),  # rows: the prepared events
            failures=self.errors.count,
            retry_in_s=delay,
        )

    def merge_search(self) -> None:
        """One step of merging the search index's segments (SearchIndex.merge_step),
        when no file waits, or after a commit once SEARCH_MERGE_FORCE_STEPS are owed."""
        try:
            with self.timer.step("search_merge"):
                self.store.search_index.merge_step()
        except STORE_WRITE_ERRORS as exc:  # nothing is lost: the segments stay as they are
            delay = self.errors.failed(exc)
            log.warning("search_merge_failed", error=type(exc).__name__,
                        retry_in_s=delay, failures=self.errors.count)
            return
        self._after_write()

    def build_search_step(self) -> bool | None:
        """One chunk of the search index of the events stored before it existed (its
        own transaction). Whether more is left; None when the store refused it."""
        try:
            with self.timer.step("search_index_step"):
                more = self.store.search_index.build_step(self.search_chunk_ids)
        except STORE_WRITE_ERRORS as exc:
            delay = self.errors.failed(exc)
            log.warning("search_index_step_failed", error=type(exc).__name__,
                        retry_in_s=delay, failures=self.errors.count)
            return None
        self.wal.committed()
        return more

    def search_index_step(self, built: Callable[[], object]) -> bool:
        """When nothing is queued: one step of the search index's deferred work, the
        merging owed first, then a chunk of the build (``built`` is called once the
        build is over: what it held goes back to the OS). Whether a step ran."""
        # The last commits' leaves, read at most every MEASURE_EVERY_S (SearchIndex.owe_merge):
        # an append each few ms would otherwise read the structure after each.
        self.store.search_index.measure_if_due()
        if self.store.search_index.merge_due:
            # Before the build's next chunk: each chunk owes merging (several leaves
            # per level), and left to pile up the build's segments would meet FTS5's
            # crisis merge, 16 segments of a level merged at once inside one chunk.
            self.merge_search()
            return True
        if self.store.search_index.backlog():
            # The search index of the events stored before it existed: one chunk (its
            # own transaction) at a time, when no file is waiting.
            if self.build_search_step() is False:
                built()
            return True
        return False

    def deferred_work(self) -> dict[str, Any] | None:
        """The deferred work still owed once nothing is queued (None when there is
        none): the search index's build over events a backfill left to it, a merge debt
        past the point where a step follows each commit, a re-price. What status calls
        "indexing" (ingest/status.py). Plain reads of values only this thread writes."""
        index = self.store.search_index
        owed = index.merge_owed
        heavy_merge = owed >= SEARCH_MERGE_FORCE_STEPS * index.merge_pages
        if not (index.backlog() or heavy_merge or self.repricing):
            return None
        return {
            "search_build_left": index.build_left,
            "search_merge_pages": owed,
            "reprice": self.repricing,
        }

    def reprice_step(self) -> bool:
        """When nothing is queued: one chunk of a re-price (the stored costs priced
        again after the prices changed; store/costs.py), in its own transaction.
        Whether a step ran."""
        if not self.repricing:
            return False
        try:
            with self.timer.step("reprice", events=self.reprice_chunk):
                step = self.store.reprice_step(self.reprice_chunk)
        except STORE_WRITE_ERRORS as exc:  # nothing is lost: the mark stays where it was
            delay = self.errors.failed(exc)
            log.warning("reprice_failed", error=type(exc).__name__,
                        retry_in_s=delay, failures=self.errors.count)
            return True
        self.wal.committed()
        self.repricing = step.more
        self._repriced += step.priced
        if not step.more and self._repriced:
            log.info("repriced", events=self._repriced)
        return True

    def pack_states_step(self, quiet_s: float | None = None) -> bool:
        """When nothing is queued: the adapter states that appends stored as JSON,
        packed once their files have been quiet for ``quiet_s`` (store/cursors.py;
        STATE_QUIET_S by default, 0 at a stop). Whether any was."""
        quiet_s = self.state_quiet_s if quiet_s is None else quiet_s
        quiet_at = self.store.cursors.quiet_at(quiet_s)
        if quiet_at is None or quiet_at > time.monotonic():
            return False  # (asked after every append: no step, no transaction)
        try:
            with self.timer.step("pack_states"):
                packed = self.store.cursors.pack_quiet_states(quiet_s)
        except STORE_WRITE_ERRORS as exc:  # they stay JSON, read the same: next time
            delay = self.errors.failed(exc)
            log.warning("pack_states_failed", error=type(exc).__name__,
                        retry_in_s=delay, failures=self.errors.count)
            return False
        if packed:
            self.wal.committed()
        return packed > 0

    def states_quiet_at(self) -> float | None:
        """When the next state stored as JSON is due to be packed (monotonic)."""
        return self.store.cursors.quiet_at(self.state_quiet_s)

    def reprice(self) -> None:
        """The prices changed (a reload): the re-price has work again."""
        self.repricing = True
        self._repriced = 0

    def save_sink_ack(self) -> None:
        """An acknowledged push: its position saved by this thread, the store's one
        writer, in a short transaction of its own."""
        sink = self.sink
        if sink is None:
            return
        ack = sink.take_ack()
        if ack is not None:
            try:
                sink_store.save(self.store.conn, ack)
            except STORE_WRITE_ERRORS as exc:
                # The position stays where it was: the server is sent those rows again,
                # which its versioned tables absorb.
                self.errors.failed(exc)
                log.warning("sink_position_not_saved", error=type(exc).__name__)
