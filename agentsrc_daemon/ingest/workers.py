"""Backfill workers: while a large history is caught up, file rounds are also parsed in
a worker process, so parsing (adapters, derivation, scanning) uses a second core while
the daemon's own thread parses other files and commits.

A worker runs exactly the stages the daemon runs (the same ``Ingestor``, built from
the same configuration) on one file round at a time: it is given the file's cursor and
returns the round's batch (already prepared for the store) with the advanced cursor.
The daemon commits that batch itself, in one transaction with that cursor, so a crash
anywhere still loses and duplicates nothing: an uncommitted round is simply read again.

Live appends are never sent to a worker (the pool only exists during a backfill and
is shut down when the daemon is live), so live latency has no inter-process hop.

``BackfillPool`` is the processes; ``BackfillScheduler`` is the policy the daemon's
loop asks, file by file, who reads what.
"""

from __future__ import annotations

from .. import lean_imports

# In a worker process this module is the first of agentsrc's to import structlog (the
# worker unpickles its initializer from here): without rich and asyncio, as the
# daemon's own (lean_imports.py). In the daemon, structlog is already imported and
# this is a no-op.
lean_imports.import_structlog()

import dataclasses  # noqa: E402
import os  # noqa: E402
from collections.abc import Callable, Collection, Iterator  # noqa: E402
from concurrent.futures import FIRST_COMPLETED, Future, wait  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import orjson  # noqa: E402
import structlog  # noqa: E402

from ..config import Config, Tuning  # noqa: E402
from ..cursor import Cursor  # noqa: E402
from ..store import Batch, prepare  # noqa: E402
from ..system.memory import HeapTrimmer, release_freed_memory  # noqa: E402
from . import sources  # noqa: E402
from .priority import LIVE_BATCH_EVENTS, LIVE_ROUND_BUDGET_BYTES  # noqa: E402
from .round import FileRound, Ingestor  # noqa: E402
from .worker_process import WorkerProcesses  # noqa: E402

log = structlog.get_logger("agentsrc.workers")

# Start a pool only for a backlog at least this large: spawning costs a second or so.
MIN_BACKLOG_BYTES = 64 << 20
# A worker's hands: rounds given to it and finished rounds not committed yet, at most
# this many. Most files are small (a median round parses in 4 ms and its hand-over
# costs 1 ms), so a count of 3 left the worker idle whenever this thread was in a
# commit or a round of its own (docs/performance.md, "Backfill: a worker that is not
# left waiting").
IN_FLIGHT_PER_WORKER = 16
# ... of which the finished ones not committed yet read at most this many bytes of the
# files: what they hold waits in this process's memory.
READY_BYTES_PER_WORKER = 12 << 20
# The thread's own round ends (to commit the finished rounds and hand out more) once
# this many of a worker's rounds are finished, or fewer than LOW_WATER are left in its
# hands: finished rounds are committed several files together, up to a batch, since
# each commit writes its hot pages (index interiors, sessions, aggregates) to the WAL
# again: one commit per worker round wrote 2.7-2.9 GB to the disk for a 96 MB database.
COLLECT_ROUNDS = 4
LOW_WATER_ROUNDS = 3
# How long the daemon's thread waits for a worker's round at a time: short, so an append
# (which the thread notices between waits) is not held up behind it.
WAIT_S = 0.02
# ... in slices this long, between which it looks for an append (end_round's ``stop``).
WAIT_SLICE_S = 0.004
# Which source modes a worker reads (not databases: see place()).
WORKER_MODES = frozenset({sources.JSONL, sources.DOCUMENT, sources.MEMORY})
# A worker's round comes back in pieces of this many bytes (or lines giving this many
# events, for rounds of tiny lines), each committable on its own.
PIECE_BYTES = LIVE_ROUND_BUDGET_BYTES
PIECE_EVENTS = LIVE_BATCH_EVENTS


def min_backlog_bytes(tuning: Tuning) -> int:
    """MIN_BACKLOG_BYTES, or $AGENTSRC_WORKER_MIN_BACKLOG (bytes; tests use a small one)."""
    n = tuning.worker_min_backlog
    return MIN_BACKLOG_BYTES if n is None else n


_worker_ingestor: Ingestor | None = None


def _init_worker(
    cfg: Config,
    log_level: str,
    json_logs: bool | None,
    daemon_pid: int,
    price: Callable[[Any], None] | None,
) -> None:
    global _worker_ingestor
    import signal

    from ..logs import configure

    # A service manager's stop (or Ctrl-C in a terminal) signals the whole process group.
    # The daemon decides when its workers end: it finishes and commits the rounds in their
    # hands, then shuts the pool down. (If the daemon dies, their pipe closes and they exit.)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(daemon_pid)
    from .stages import build_stages

    configure(log_level, json_logs)
    derive, scan, project_root_for, _ = build_stages(cfg)
    _worker_ingestor = Ingestor(
        max_line_bytes=cfg.max_line_bytes,
        derive=derive,
        scan=scan,
        project_root_for=project_root_for,
        price=price,  # the daemon's own pricing stage: both price alike
        defer_big_lines=True,  # the daemon reads those itself once the workers are gone
    )


def _exit_with_parent(daemon_pid: int) -> None:
    """A pool worker holds both ends of its task pipe, so a daemon killed with SIGKILL
    would leave it waiting forever. It watches its parent instead and exits with it. The
    daemon's pid is handed in, not read here: a daemon killed while the worker was still
    starting has already left it to init (getppid() is 1), which it would then have
    watched for ever (found: workers of killed daemons left asleep for hours)."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == daemon_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


Piece = tuple[Batch, FileRound, Cursor]


def round_pieces(
    spec: sources.SourceSpec, cursor: Cursor, budget: int, piece_bytes: int, piece_events: int
) -> Iterator[tuple[Piece, bool]]:
    """One round of ``budget`` bytes, read as pieces of ``piece_bytes`` (or of lines
    giving ``piece_events`` events), each with the cursor after it and whether it is
    the round's last: the daemon may commit them one by one (a live append then waits
    for one piece's commit, not the round's) or together. Each is sent on as it is
    read (worker_process.py), so the worker holds one piece, not the round."""
    assert _worker_ingestor is not None, "worker not initialised"
    _worker_ingestor.cursors = {spec.path: cursor}
    read = 0
    while True:
        batch = Batch()
        rnd = _worker_ingestor.ingest(spec, batch, max(1, min(piece_bytes, budget - read)),
                                      max_events=piece_events)
        prepare(batch)  # hashing and JSON encoding also happen off the daemon's thread
        read += rnd.bytes
        last = not rnd.more or rnd.deferred or rnd.gone or rnd.bytes == 0 or read >= budget
        yield (batch, rnd, cursor if last else snapshot(cursor)), last
        if last:
            return


def snapshot(cursor: Cursor) -> Cursor:
    """A copy of the cursor as it is now, for a piece committed before the next is read
    (the state as JSON: decoded only if the daemon reads the file itself next)."""
    state = cursor.load_state()
    return dataclasses.replace(
        cursor,
        state=None,
        state_json=orjson.dumps(state) if state is not None else None,
        skipped=dict(cursor.skipped),
    )


def worker_count(tuning: Tuning) -> int:
    """Workers to use: $AGENTSRC_WORKERS when set (0 turns them off), else one less than
    the cores (the daemon's own thread needs one), at least 1, at most 4. (On 2 cores a
    second worker was measured a little faster and 30-50 MB heavier: docs/performance.md.)"""
    if tuning.workers is not None:
        return tuning.workers
    return max(1, min(4, (os.cpu_count() or 2) - 1))


@dataclass(slots=True)
class WorkerRound:
    """A file round a worker finished, or a piece of one: its batch (prepared for the
    store) and the cursor it advanced, to be committed together."""

    path: str
    batch: Batch
    round: FileRound
    cursor: Cursor


def merged(pieces: list[WorkerRound]) -> WorkerRound:
    """Consecutive pieces of one file's round as one commit: the batches together, the
    last cursor, the bytes summed and the round's end (more, gone, deferred) the last's."""
    first, last = pieces[0], pieces[-1]
    if len(pieces) == 1:
        return first
    batch = Batch()
    for p in pieces:
        batch.merge(p.batch)
    rnd = dataclasses.replace(
        last.round,
        bytes=sum(p.round.bytes for p in pieces),
        reset=next((p.round.reset for p in pieces if p.round.reset), None),
    )
    return WorkerRound(first.path, batch, rnd, last.cursor)


class BackfillPool:
    """The worker processes, and the file rounds in their hands."""

    def __init__(
        self,
        cfg: Config,
        log_level: str = "info",
        json_logs: bool | None = None,
        price: Callable[[Any], None] | None = None,
    ):
        self.size = worker_count(cfg.tuning)
        # New processes, not forks: the daemon has threads (watcher, server) by now.
        self._processes = WorkerProcesses(
            self.size, _init_worker, (cfg, log_level, json_logs, os.getpid(), price), round_pieces
        )
        self.in_flight: dict[str, Future[list[Piece]]] = {}
        self.broken = False
        # Rounds finished, counted as they complete (in the pool's result thread, so the
        # ingest thread never writes the count), and how many of them ``done`` had seen
        # when it last looked: the difference is what ``collect_due`` weighs. A hint: a
        # miscounted round only moves when this thread's own round ends.
        self._finished_total = 0
        self._finished_seen = 0

    def has_room(self, held: int = 0, held_bytes: int = 0) -> bool:
        """Room for another round, with ``held`` finished rounds (``held_bytes`` read) not
        committed yet."""
        return (
            not self.broken
            and len(self.in_flight) + held < self.size * IN_FLIGHT_PER_WORKER
            and held_bytes < self.size * READY_BYTES_PER_WORKER
        )

    def submit(self, spec: sources.SourceSpec, cursor: Cursor, budget: int) -> bool:
        if self.broken:
            return False
        try:
            future = self._processes.submit(spec, cursor, budget, PIECE_BYTES, PIECE_EVENTS)
        except RuntimeError as exc:
            self._broke(exc)
            return False
        future.add_done_callback(self._on_finished)
        self.in_flight[spec.path] = future
        return True

    def _on_finished(self, future: Future[list[Piece]]) -> None:
        if not future.cancelled():
            self._finished_total += 1

    @property
    def finished(self) -> int:
        """Rounds finished since ``done`` last looked."""
        return self._finished_total - self._finished_seen

    def cancel(self, path: str) -> bool:
        """Take back a round not yet handed to a worker's pipe (which holds the one
        after the one it reads): whether it was taken back."""
        future = self.in_flight.get(path)
        if future is None or not future.cancel():
            return False
        del self.in_flight[path]
        return True

    def collect_due(self) -> bool:
        """Finished rounds wait to be committed, and enough of them for a commit of
        several files, or the worker's hands are running low (COLLECT_ROUNDS,
        LOW_WATER_ROUNDS)."""
        finished = self.finished
        return finished > 0 and (
            finished >= COLLECT_ROUNDS * self.size
            or len(self.in_flight) - finished < LOW_WATER_ROUNDS * self.size
        )

    def done(self, wait: bool = False) -> list[list[WorkerRound]]:
        """The rounds finished (all of them with ``wait``), each as its pieces. A round
        whose worker died is dropped: its file stays pending and is read again in the
        daemon's own thread."""
        out: list[list[WorkerRound]] = []
        # Before looking: a round finishing meanwhile is taken now and counted again at
        # the next look (one round early: a hint, nothing more).
        self._finished_seen = self._finished_total
        for path, fut in list(self.in_flight.items()):
            if not (wait or fut.done()):
                continue
            del self.in_flight[path]
            try:
                pieces = fut.result()
            except Exception as exc:  # a dead worker: the daemon reads it itself
                self._broke(exc)
                continue
            out.append([WorkerRound(path, *piece) for piece in pieces])
        return out

    def wait_any(self, timeout: float) -> bool:
        """Wait until a round is finished, at most ``timeout``: whether one is (or
        none is in flight)."""
        if not self.in_flight:
            return True
        done, _ = wait(list(self.in_flight.values()), timeout=timeout, return_when=FIRST_COMPLETED)
        return bool(done)

    def _broke(self, exc: BaseException) -> None:
        if not self.broken:
            log.error("backfill_worker_failed", error=type(exc).__name__, detail=str(exc))
        self.broken = True

    def shutdown(self) -> None:
        self._processes.shutdown()


class BackfillScheduler:
    """Who reads each pending file during a large backfill: the daemon's own thread or
    a worker process, or nobody yet. The daemon's loop calls ``begin_round``, then
    ``collect`` and ``place`` for each pending file, then ``end_round``; ``close`` when
    nothing is pending. Finished worker rounds go to ``commit_round`` (the daemon's:
    it commits every batch itself, and says whether the store took it).

    A finished round comes back in pieces (PIECE_BYTES each, with the cursor after
    each), committed a few together: up to ``unit_events`` events (the daemon's batch
    size, small while live appends come in), and ``collect`` stops between two commits
    once the daemon says an append waits. A file whose pieces are not all committed is
    held (not placed again) until they are.

    The pool is started once per daemon life, for a backlog of at least
    ``min_backlog_bytes``, and closed when its work is done; without it every file is
    read by the daemon's thread. While it runs, lines over BIG_LINE_BYTES are deferred
    (``Ingestor.defer_big_lines``): their files wait in ``deferred`` and are read by the
    daemon once the workers are gone, so two big working sets never add up.
    """

    def __init__(
        self,
        cfg: Config,
        commit_round: Callable[[list[WorkerRound]], bool],
        *,
        budget_bytes: int,
        log_level: str = "info",
        json_logs: bool | None = None,
        release_memory: Callable[[], object] = release_freed_memory,
    ) -> None:
        self.cfg = cfg
        self.commit_round = commit_round
        # Called once the pool is gone when deferred big lines come next (see close).
        self.release_memory = release_memory
        self.budget_bytes = budget_bytes  # per file round, as in the daemon's own rounds
        self.log_level = log_level
        self.json_logs = json_logs
        # Worker processes for large backfills (AGENTSRC_WORKERS=0 turns them off).
        self.enabled = worker_count(cfg.tuning) > 0
        self.pool: BackfillPool | None = None
        self._pool_used = False
        self.deferred: set[str] = set()  # files waiting for the workers to finish
        # Finished rounds' pieces not committed yet, by file, in the order they finished.
        self.ready: dict[str, list[WorkerRound]] = {}
        # Files written to while the pool runs: live sessions, read by this thread from
        # then on (an append to them does not wait for a worker's round).
        self.live: set[str] = set()
        # A commit takes a round's consecutive pieces up to this many events (at least
        # one piece): the daemon's batch size, small while live appends come in.
        self.unit_events = cfg.batch_max_events
        self.rounds_here = 0
        self.rounds_in_workers = 0
        # While the pool runs the daemon's freed heap goes back every so often: it and
        # the worker together are the backfill's peak (system/memory.py).
        self.trimmer = HeapTrimmer()

    def begin_round(
        self, pending: Collection[str], backlog_bytes: Callable[[], int], ingestor: Ingestor
    ) -> None:
        """Before a round over ``pending``: start the pool for a large backlog, or close
        it once it has nothing in hand and nothing it may take."""
        if self.pool is not None:
            takeable = not self.pool.broken and any(p not in self.deferred for p in pending)
            if not (self.pool.in_flight or self.ready or takeable):
                self.close(ingestor)
            return
        large = backlog_bytes() >= min_backlog_bytes(self.cfg.tuning)
        if not self._pool_used and self.enabled and large:
            self._pool_used = True  # one pool per daemon life: a backfill happens once
            self.pool = BackfillPool(self.cfg, self.log_level, self.json_logs, ingestor.price)
            ingestor.defer_big_lines = True
            log.info("backfill_workers", workers=self.pool.size)

    def collect(self, wait: bool = False, stop: Callable[[], bool] | None = None) -> bool:
        """Commit what the workers finished (``commit_round``): with ``stop``, after the
        first commit only while it says False (a live append waits: the rest stay, for
        the next look). Whether anything was committed."""
        if self.pool is None:
            return False
        for pieces in self.pool.done(wait=wait):
            self.rounds_in_workers += 1
            self.ready[pieces[0].path] = pieces
        committed = False
        while self.ready:
            if committed and stop is not None and stop():
                break
            units = self._next_commit()
            committed = True
            if not self.commit_round(units):
                # Refused (the disk full): the files go back to their committed cursors,
                # so the rest of their rounds is read again; the loop waits to retry.
                for unit in units:
                    self.ready.pop(unit.path, None)
                break
        if committed:
            self.trimmer.maybe()
        return committed

    def _next_commit(self) -> list[WorkerRound]:
        """The finished pieces one commit takes, in the order the rounds finished: each
        file's consecutive pieces merged, files after files, up to ``unit_events``
        events (at least one piece). A file whose pieces are not all taken ends it (its
        later pieces are the next commit's, after its earlier ones)."""
        units: list[WorkerRound] = []
        events = 0
        for path, pieces in list(self.ready.items()):
            take = 0
            for piece in pieces:
                n = len(piece.batch.rows)
                if (units or take) and events + n > self.unit_events:
                    break  # (the commit's first piece is taken whatever its size)
                events += n
                take += 1
            if take:
                units.append(merged(pieces[:take]))
                del pieces[:take]
            if pieces:
                break
            del self.ready[path]
        return units

    def place(self, spec: sources.SourceSpec, ingestor: Ingestor) -> bool:
        """True when the daemon's thread reads this file now. False when a worker has
        it (or just took it) or it is deferred.

        The workers come first: a file goes to one whenever its hands have room, and
        the thread reads a file itself only when they are full, in a round that ends
        once the workers' finished rounds are due to be committed (``collect_due``), so
        that the thread commits them and hands out more. The thread, which also commits
        everything, thus parses only in the time it would otherwise wait, whatever the
        files' sizes (a fixed share of the rounds left the worker idle 40% of the time)."""
        pool = self.pool
        if pool is not None and spec.mode not in WORKER_MODES:
            # Database rounds stay here: the daemon keeps the open read-only connection
            # whose data_version tells it cheaply when the database changed, a round is
            # one bounded read transaction (little parsing to spread), and a worker
            # would reopen the database for every round.
            self.rounds_here += 1
            return True
        if pool is not None:
            if self.holds(spec.path):
                return False
            held_bytes = sum(p.round.bytes for pieces in self.ready.values() for p in pieces)
            if spec.path not in self.live and pool.has_room(len(self.ready), held_bytes):
                cursor = ingestor.cursor_for(spec)
                ingestor.load_state(cursor)  # the worker has no store to read it from
                if pool.submit(spec, cursor, self.budget_bytes):
                    return False
        self.rounds_here += 1
        return True

    def take_back(self, path: str) -> bool:
        """A file just appended to: True when this thread may read it now, because no
        worker has it, or its round had not started and is taken back (the thread's
        cursor is the committed one: the worker would have returned its own). A round
        started or finished, or a deferred file, is waited for: with rounds queued 16
        deep, an append would otherwise wait behind every round before it. From now on
        the file is this thread's (``live``)."""
        if self.pool is None:
            return True
        self.live.add(path)
        if not self.holds(path):
            return True
        if path in self.ready or path in self.deferred:
            return False
        return self.pool.cancel(path)

    def collect_due(self) -> bool:
        """The workers' finished rounds are due to be committed (BackfillPool.collect_due):
        the thread's own round stops after its line (see ``place``)."""
        return self.pool is not None and self.pool.collect_due()

    def holds(self, path: str) -> bool:
        """A worker has a round of this file (or its pieces wait to be committed), or it
        waits for the workers to finish."""
        return self.pool is not None and (
            path in self.pool.in_flight or path in self.ready or path in self.deferred
        )

    def end_round(
        self, pending: Collection[str], stopping: bool, stop: Callable[[], bool] | None = None
    ) -> None:
        """After a round: collect what the workers finished (all of it when stopping;
        with ``stop``, see ``collect``)."""
        if self.pool is None:
            return
        if stopping or all(self.holds(p) for p in pending):
            # Nothing left for the daemon's thread: wait for the workers (briefly, so
            # the loop still pings the watchdog and notices file events).
            self._wait_any(None if stopping else stop)
        if stopping:
            self.collect(wait=True)
        elif stop is None or not stop():
            self.collect(stop=stop)

    def _wait_any(self, stop: Callable[[], bool] | None) -> None:
        """Wait up to WAIT_S for a worker's round, in slices of WAIT_SLICE_S that end
        early once ``stop`` says so (a live append came in)."""
        assert self.pool is not None
        if self.ready:
            return  # pieces to commit already
        waited = 0.0
        while waited < WAIT_S and not (stop is not None and stop()):
            if self.pool.wait_any(timeout=WAIT_SLICE_S):
                return
            waited += WAIT_SLICE_S

    def defer(self, path: str) -> None:
        """A line over BIG_LINE_BYTES comes next in this file: it waits for the pool to
        close (see the class docstring)."""
        self.deferred.add(path)

    def close(self, ingestor: Ingestor) -> None:
        """Commit the rounds in the workers' hands (one file round each), then stop
        them; deferred files are read by the daemon's thread from now on."""
        if self.pool is None:
            return
        self.collect(wait=True)
        ingestor.defer_big_lines = False
        big_lines_next = bool(self.deferred)
        self.deferred.clear()
        self.live.clear()
        self.ready.clear()  # only what a refused commit left: read again from the store's cursor
        log.info(
            "backfill_workers_done",
            rounds_in_workers=self.rounds_in_workers,
            rounds_here=self.rounds_here,
        )
        self.pool.shutdown()
        self.pool = None
        if big_lines_next:
            # The deferred files' big lines come next, each held twice while it is
            # parsed (tail.decode_big_line): on a heap handed back to the OS first, not
            # on top of the free pages and the page cache the backfill left (docs/
            # performance.md "Memory and backfill speed").
            self.release_memory()
