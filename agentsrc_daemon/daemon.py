"""The orchestrator: wires watch -> tail -> adapters -> derive -> scan -> store ->
server, and runs the ingest loop.

The loop is the only writer. It sleeps on the watcher's wake-up event (near-zero CPU
when nothing changes), wakes for file events, the periodic reconcile scan, root checks
and service-manager watchdog pings, and commits batches of at most
``batch_max_events`` events or ``batch_max_delay`` seconds of work.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import apsw
import structlog

from . import __version__
from .config import Config, load_config
from .errors import AlreadyRunning, NotPrivate, RpcError
from .ingest import sources
from .ingest.priority import LivePriority
from .ingest.round import FileRound, Ingestor
from .ingest.watch import DirtySet, Watcher
from .ingest.workers import BackfillScheduler, WorkerRound
from .rpc import methods as rpc
from .rpc.transport import Handler, Hub, Server
from .store import Batch, Reader, Store, schema
from .store import sink as sink_store
from .store.checkpoint import CHECKPOINT_HURRY_PAGES, CHECKPOINT_MIN_PAGES, Checkpointer
from .store.writer import SEARCH_CHUNK_IDS
from .system.memory import freeze_heap, limit_arenas, release_freed_memory, rss_bytes
from .system.notify import Notifier

log = structlog.get_logger("agentsrc.daemon")

ROOT_CHECK_INTERVAL_S = 2.0
# Steps of merging owed by the search index's writes (store/search_merge.py) with no
# quiet moment to run them: past this many a step follows each commit, so the debt stays
# bounded under a stream that never pauses (FTS5's own automerge would have done four
# steps' worth in one commit).
SEARCH_MERGE_FORCE_STEPS = 4
FILE_BUDGET_BYTES = 4 << 20  # per file per round: large files do not starve small ones
STALL_HOOK_ENV = "AGENTSRC_TEST_STALL_FILE"  # test-only: the loop stalls while it exists
# Test-only, for a machine where a test cannot mount a small filesystem: while this file
# exists every commit fails as on a full disk.
FULL_HOOK_ENV = "AGENTSRC_TEST_DISK_FULL_FILE"
# The reconcile scan's share of a core (0.02%): a scan that costs more than that share of
# the configured interval waits proportionally longer for the next one (20,000 files
# cost about 0.3 s of CPU: 25 minutes), so a large home stays idle while inotify reports
# the changes (and an inotify overflow asks for a scan at once: ingest/watch.py). Scans
# cheaper than RECONCILE_PACE_FLOOR_S keep the configured interval.
RECONCILE_CPU_INVERSE = 5000  # the scan takes at most 1/5000 of a core
RECONCILE_PACE_FLOOR_S = 0.010
RETRY_FIRST_S = 0.5  # after a failed commit; doubled on each failure in a row
RETRY_MAX_S = 30.0
# What a commit can fail with and succeed on a later try: the disk (or the user's quota)
# full, or an I/O error (SQLite reports a -shm it cannot grow as one).
STORE_WRITE_ERRORS = (apsw.FullError, apsw.IOError)
# While a schema migration runs, a query waits this long for it, then is told to retry.
MIGRATION_WAIT_S = 10.0
MIGRATING = -32001  # the error code of a query that came during a migration
# When idle, a WAL truncate that a reader blocked is tried again this soon.
WAL_RETRY_S = 1.0
# The WAL is truncated once no commit came for this long: not between the appends of a
# live session (each truncate is a checkpoint on this thread, and the file grows again
# at the next commit).
WAL_IDLE_S = 2.0
# Idle: the checkpointer copies what is left first, then (this much later) the ingest
# thread truncates a WAL with nothing left to copy, so it does not sync the database.
WAL_IDLE_CHECKPOINT_S = 0.5
# $AGENTSRC_CHECKPOINT_THREAD=0: checkpoints on the ingest thread only, as before the
# Checkpointer (store/checkpoint.py), to measure what it changes.
CHECKPOINT_THREAD_ENV = "AGENTSRC_CHECKPOINT_THREAD"
# $AGENTSRC_PROFILE_START=FILE: cProfile from run() until live, its stats written to FILE
# (where a start's time goes, on a large store).
PROFILE_START_ENV = "AGENTSRC_PROFILE_START"
# $AGENTSRC_GC_FREEZE=0: the heap is not frozen once live (system/memory.freeze_heap).
GC_FREEZE_ENV = "AGENTSRC_GC_FREEZE"
# A first catch-up at least this large builds the search index after it, in chunks, not
# in its commits (Store.defer_search_index); $AGENTSRC_SEARCH_DEFER_MIN_BACKLOG (bytes)
# overrides it for tests.
SEARCH_DEFER_MIN_BACKLOG = 64 << 20


# A step of the loop (a commit, a checkpoint, a scan, a garbage collection) that takes
# longer than this is logged with its name and time (``slow_step``): a live append waits
# for whatever the loop is doing, so this is how its tail latency is traced.
# $AGENTSRC_SLOW_STEP_MS overrides it (the latency benchmark sets it low).
SLOW_STEP_MS = 250.0


def slow_step_ms() -> float:
    env = os.environ.get("AGENTSRC_SLOW_STEP_MS", "").strip()
    try:
        return float(env) if env else SLOW_STEP_MS
    except ValueError:
        return SLOW_STEP_MS


def thread_sched_ns() -> tuple[int, int]:
    """The calling thread's time on a core and time waiting in the run queue for one,
    in ns (Linux's /proc/thread-self/schedstat; (thread CPU time, 0) elsewhere). A slow
    step's time less both is time blocked: on the disk, a lock or the GIL."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as fh:
            on_cpu, waiting, _ = fh.read().split()
        return int(on_cpu), int(waiting)
    except (OSError, ValueError):
        return time.thread_time_ns(), 0


class StepTimer:
    """Logs the loop's steps (and Python's garbage collections) over a threshold: a
    warning once live, where a live append waits for them; at info while catching up,
    where a round of the backfill is long by design. Each says how much of its time
    the thread ran (``cpu_ms``) and waited for a core (``runq_ms``): on a loaded
    machine a slow commit is mostly one or the other, or the disk."""

    def __init__(self, threshold_ms: float) -> None:
        self.threshold_s = threshold_ms / 1000
        self.live = False
        self._gc_at = 0.0

    def _log(self, **fields: Any) -> None:
        (log.warning if self.live else log.info)("slow_step", **fields)

    @contextlib.contextmanager
    def step(self, name: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """Times the block; it may add fields to the dict it is given (known after)."""
        t0 = time.perf_counter()
        cpu0, runq0 = thread_sched_ns()
        try:
            yield fields
        finally:
            took = time.perf_counter() - t0
            if took >= self.threshold_s:
                cpu1, runq1 = thread_sched_ns()
                self._log(step=name, ms=round(took * 1000, 1),
                          cpu_ms=round((cpu1 - cpu0) / 1e6, 1),
                          runq_ms=round((runq1 - runq0) / 1e6, 1), **fields)

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        # gc.callbacks: a collection of the oldest generation walks every object the
        # daemon holds (tens of thousands of cursors in a large home).
        if phase == "start":
            self._gc_at = time.perf_counter()
            return
        took = time.perf_counter() - self._gc_at
        if took >= self.threshold_s:
            self._log(step="gc", ms=round(took * 1000, 1), generation=info.get("generation"),
                      collected=info.get("collected"))


def search_defer_min_backlog() -> int:
    env = os.environ.get("AGENTSRC_SEARCH_DEFER_MIN_BACKLOG", "").strip()
    return int(env) if env.isdigit() else SEARCH_DEFER_MIN_BACKLOG


@dataclass
class Progress:
    """Backfill progress since start, for status."""

    started: float = 0.0
    files_total: int = 0
    files_done: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    live_since: float | None = None

    def as_dict(self, pending_bytes: int) -> dict[str, Any]:
        elapsed = max(1e-6, time.monotonic() - self.started)
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


@dataclass
class StoreErrors:
    """Commits the store refused (disk full): counted for status, and when to try again.
    A failed commit leaves everything as it was: the database rolled back, the files'
    cursors reset to what it holds, so the next try reads the same lines again."""

    count: int = 0
    last_error: str | None = None
    last_at: str | None = None
    delay: float = 0.0  # the last wait; 0 once a commit succeeds
    retry_at: float = 0.0  # monotonic

    def failed(self, exc: BaseException) -> float:
        self.count += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        self.last_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.delay = min(RETRY_MAX_S, self.delay * 2 if self.delay else RETRY_FIRST_S)
        self.retry_at = time.monotonic() + self.delay
        return self.delay

    def succeeded(self) -> None:
        self.delay = 0.0
        self.retry_at = 0.0

    def waiting(self) -> float:
        """Seconds until the next try (0: write now)."""
        return max(0.0, self.retry_at - time.monotonic())

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "last_error": self.last_error,
            "last_at": self.last_at,
            "retry_in_s": round(self.waiting(), 1),
        }


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


@dataclass
class Components:
    """What start() brings up, in that order; shutdown() stops them in reverse. The
    ingestor is replaced on reload (new stages, the same cursors)."""

    lock_fd: int  # holds the data directory's lock for the daemon's life
    store: Store
    ingestor: Ingestor
    server: Server
    watcher: Watcher
    sink: Any = None  # sink.pusher.Pusher when [sink.clickhouse] is configured
    checkpointer: Checkpointer | None = None  # WAL checkpoints off this thread


def ensure_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_uid != os.getuid():
        raise NotPrivate(f"{path} belongs to another user")
    os.chmod(path, 0o700)


class StartPhases:
    """The wall time of each phase of a start, for the ``started`` log line."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._at = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round((now - self._at) * 1000, 1)
        self._at = now


class Daemon:
    components: Components  # set by start()

    def __init__(
        self,
        cfg: Config,
        *,
        cli_overrides: dict[str, Any] | None = None,
        log_level: str = "info",
        json_logs: bool | None = None,
    ) -> None:
        self.cfg = cfg
        self.backfill = BackfillScheduler(
            cfg,
            self._commit_worker_rounds,
            budget_bytes=FILE_BUDGET_BYTES,
            log_level=log_level,
            json_logs=json_logs,
            # Before the big lines the workers left: the page cache and the freed heap.
            release_memory=self._release_backfill_memory,
        )
        self._backlog: tuple[int, int] = (0, 0)  # (bytes, files), see _refresh_backlog
        self._backlog_at = 0.0
        self.cli_overrides = cli_overrides or {}
        self.stop_event = threading.Event()
        self.dirty = DirtySet()
        self.pending: OrderedDict[str, sources.SourceSpec] = OrderedDict()
        # Database sources found locked: retried at the given monotonic time.
        self.retry: dict[str, tuple[float, sources.SourceSpec]] = {}
        self._counted_done: set[str] = set()  # files counted in progress.files_done
        self.progress = Progress()
        self.notifier = Notifier.from_env()
        self.hub = Hub()
        self.started_at = time.time()
        self._reload = threading.Event()
        self.exit_code = 0
        self._initial_done = False
        self._urgent: set[str] = set()  # appended files queued first (_queue_appended)
        # When the loop yields to live appends, and how large its backfill pieces are
        # (ingest/priority.py).
        self.priority = LivePriority(FILE_BUDGET_BYTES, cfg.batch_max_events)
        # A backfill batch read here but left uncommitted for an append that came in:
        # committed right after the appends (see _work).
        self._carry: Batch | None = None
        self.scan_state: dict[str, Any] = {"enabled": False}
        self.store_errors = StoreErrors()
        self.reconcile_stats = ReconcileStats()
        self._backlog_stale = True  # the queue or the cursors moved since _refresh_backlog
        # A chunked schema migration in progress: {name, done, total} (status shows it).
        self.migration: dict[str, Any] | None = None
        self._store_ready = threading.Event()  # queries other than status wait for it
        self._wal_dirty = False  # committed since the WAL was last truncated
        self._committed_at = 0.0  # monotonic, the last commit (see WAL_IDLE_S)
        self._idle_checkpoint = False  # the checkpointer was asked since the last commit
        self._profile: tuple[Any, str] | None = None  # see PROFILE_START_ENV
        self.timer = StepTimer(slow_step_ms())

    # ---- start-up ----------------------------------------------------------------

    def acquire_lock(self) -> int:
        ensure_private_dir(self.cfg.data_dir)
        fd = os.open(self.cfg.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise AlreadyRunning(
                f"another agentsrc daemon (pid {other or '?'}) is running on {self.cfg.data_dir}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def _build_ingestor(self) -> Ingestor:
        from .ingest.stages import build_stages

        derive, scan, project_root_for, scan_state = build_stages(self.cfg)
        self.scan_state = scan_state
        return Ingestor(
            max_line_bytes=self.cfg.max_line_bytes,
            derive=derive,
            scan=scan,
            project_root_for=project_root_for,
        )

    def _gated(self, handler: Handler) -> Handler:
        """A query that comes while the schema migrates waits for it (a while), then is
        told to retry: the store it would read is not the one its SQL is written for."""

        def gated(reader: Reader, params: dict[str, Any]) -> Any:
            if not self._store_ready.wait(MIGRATION_WAIT_S):
                m = self.migration or {}
                raise RpcError(
                    MIGRATING,
                    f"the store is being migrated ({m.get('name')}: "
                    f"{m.get('done', 0)}/{m.get('total', 0)} events); try again",
                )
            return handler(reader, params)

        return gated

    def _server(self) -> Server:
        methods = {
            name: h if name == "status" else self._gated(h)
            for name, h in rpc.build_methods(self.status).items()
        }
        return Server(
            self.cfg.socket_path, self.cfg.db_path, methods, self.hub, rpc.subscribe_backlog
        )

    def _on_migration(self, name: str, done: int, total: int) -> None:
        self.migration = {"name": name, "done": done, "total": total}
        log.info("migrating", migration=name, done=done, total=total)

    def start(self) -> None:
        limit_arenas()
        gc.callbacks.append(self.timer.on_gc)
        lock_fd = self.acquire_lock()
        server = None
        pending = schema.chunked_pending(self.cfg.db_path)
        if pending is not None:
            # A migration that rewrites every event: the socket answers status (with
            # its progress) from the start; other queries wait for the store.
            self.migration = {"name": pending.name, "done": 0, "total": 0}
            server = self._server()
            server.start()
        # self.migration stays (all done) until the store is ready: the reconcile below
        # comes first, and status must not look like a migration at 0%.
        phases = StartPhases()
        # The watches are added (watchdog walks every root's tree: 5,000 directories in
        # a large home, mostly system calls) on a thread of their own while the store
        # opens and the cursors load; they are in place before the reconcile's stats,
        # so a change after a file's stat is seen. Set before the server starts: its
        # threads call status(), which reads the watcher's modes.
        watcher = Watcher(self.cfg.watch_points(), self.dirty)
        watching = threading.Thread(
            target=watcher.start, kwargs={"on_root_appeared": self._scan_root},
            name="agentsrc-watch-start", daemon=True,
        )
        watching.start()
        try:
            store = Store(self.cfg.db_path, progress=self._on_migration)
            phases.done("store")
            ingestor = self._build_ingestor()
            phases.done("stages")
            # The adapter states stay in the store until their file is read, and the
            # cursors of gone files until their path is seen again.
            ingestor.cursors = store.load_cursors(
                states=False, sidecar_adapters=sources.SIDECAR_ADAPTERS, gone=False
            )
            ingestor.state_loader = store.cursor_state
            ingestor.gone_loader = store.gone_cursor
            phases.done("cursors")
        finally:
            watching.join()
        phases.done("watch")
        self.components = Components(
            lock_fd=lock_fd,
            store=store,
            ingestor=ingestor,
            server=server or self._server(),
            watcher=watcher,
        )
        self.components.sink = self._start_sink(store)
        if os.environ.get(CHECKPOINT_THREAD_ENV, "1") != "0":
            self.components.checkpointer = Checkpointer(self.cfg.db_path)
            self.components.checkpointer.start()
        # The first reconcile before the socket answers, so status never reports a
        # catch-up whose totals are not known yet (with six roots and their watch points
        # that window was long enough to be seen).
        self.reconcile()
        phases.done("reconcile")
        self._refresh_backlog(force=True)
        phases.done("backlog")
        if self._backlog[0] >= search_defer_min_backlog():
            store.defer_search_index()
        self._store_ready.set()
        self.migration = None
        if server is None:
            self.components.server.start()
        self.progress.started = time.monotonic()
        log.info(
            "started",
            version=__version__,
            pid=os.getpid(),
            data_dir=str(self.cfg.data_dir),
            socket=str(self.cfg.socket_path),
            roots={k: str(v) for k, v in self.cfg.roots().items()},
            watch_modes=self.components.watcher.modes,
            scan=self.scan_state.get("enabled"),
            cursors=len(ingestor.cursors),  # the live files' (gone ones when seen again)
            files_gone=store.gone_count(),  # their cursors stay in the store
            start_ms=phases.ms,  # where the start went (wall ms per phase)
        )
        if not self.scan_state.get("enabled"):
            log.warning("secret_scanning_off", detail="content is not scanned for secrets")

    def _start_sink(self, store: Store) -> Any:
        """The ClickHouse sink's thread, from its saved position; with no sink
        configured, any old position is dropped (the triggers stop filling its feeds)."""
        if self.cfg.sink is None:
            sink_store.forget(store.conn)
            return None
        from .sink.pusher import Pusher

        position = sink_store.open_target(store.conn, self.cfg.sink.target())
        pusher = Pusher(
            self.cfg.sink,
            self.cfg.db_path,
            position,
            on_ack=self.dirty.wakeup.set,
            busy=lambda: self.state() != "live",
        )
        pusher.start()
        return pusher

    def _save_sink_ack(self) -> None:
        """An acknowledged push: its position saved by this thread, the store's one
        writer, in a short transaction of its own."""
        sink = self.components.sink
        if sink is None:
            return
        ack = sink.take_ack()
        if ack is not None:
            try:
                sink_store.save(self.components.store.conn, ack)
            except STORE_WRITE_ERRORS as exc:
                # The position stays where it was: the server is sent those rows again,
                # which its versioned tables absorb.
                self.store_errors.failed(exc)
                log.warning("sink_position_not_saved", error=type(exc).__name__)

    # ---- reconcile ---------------------------------------------------------------

    def classify(self, path: str) -> list[sources.SourceSpec]:
        """The sources a changed path concerns: itself when it is a source, else the
        ones it wakes (a database's -wal/-shm, a sidecar's transcripts)."""
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        spec = sources.classify(path, roots, extra)
        return [spec] if spec is not None else sources.dependents(path, roots, extra)

    def _all_sources(self) -> Iterator[tuple[sources.SourceSpec, os.stat_result]]:
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        for root in roots.values():
            if root.is_dir():
                yield from sources.walk_sources(root, roots, extra)
        for spec, st in sources.walk_extra(extra):
            if sources.classify(spec.path, roots) is None:  # not already under a root
                yield spec, st

    def reconcile(self) -> int:
        """Stat every source under every root; queue those with news. Also queue known
        files that are no longer found, so they are marked gone."""
        cpu0 = time.thread_time()
        queued = self._reconcile()
        stats = self.reconcile_stats
        stats.cpu_ms = (time.thread_time() - cpu0) * 1000
        stats.scans += 1
        stats.interval_s = stats.next_interval(self.cfg.reconcile_interval)
        self._backlog_stale = True
        return queued

    def _reconcile(self) -> int:
        ingestor = self.components.ingestor
        seen: set[str] = set()
        queued = 0
        for spec, st in self._all_sources():
            seen.add(spec.path)
            if ingestor.needs_read(spec, st) and spec.path not in self.pending:
                self.pending[spec.path] = spec
                queued += 1
                if not self._initial_done:
                    self.progress.files_total += 1
                    c = ingestor.known_cursor(spec.path)
                    same = c is not None and c.ino == st.st_ino
                    done = c.offset if c and same and spec.mode == sources.JSONL else 0
                    if spec.mode != sources.SQLITE:  # a database's progress is its rows
                        self.progress.bytes_total += max(0, st.st_size - done)
        if os.environ.get("AGENTSRC_TEST_INGEST_ORDER") == "reverse":
            # Test-only: read the backlog in reverse order (the ownership of records
            # copied across sessions must not depend on it; tests/test_ownership_e2e.py).
            self.pending = OrderedDict(reversed(self.pending.items()))
        for path, cursor in ingestor.cursors.items():
            if path not in seen and cursor.gone_at is None and path not in self.pending:
                gone_spec = sources.classify(path, self.cfg.roots(), self.cfg.extra_sources())
                if gone_spec is not None:
                    self.pending[path] = gone_spec
                    queued += 1
        self.reconcile_stats.files = len(seen)
        return queued

    def _scan_root(self, root: Path) -> None:
        self._scan_dir(str(root))

    def _scan_dir(self, directory: str) -> None:
        ingestor = self.components.ingestor
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        for spec, st in sources.walk_sources(Path(directory), roots, extra):
            if ingestor.needs_read(spec, st):
                self.pending.setdefault(spec.path, spec)

    # ---- the loop ------------------------------------------------------------------

    def run(self) -> int:
        profile_to = os.environ.get(PROFILE_START_ENV)
        if profile_to:
            import cProfile

            self._profile = (cProfile.Profile(), profile_to)
            self._profile[0].enable()
        try:
            self.start()
        except AlreadyRunning as exc:
            log.error("already_running", detail=str(exc))
            raise
        self._install_signals()
        try:
            self.notifier.ready(status="catching up" if self.pending else "live")
            self._loop()
        finally:
            self.shutdown()
        return self.exit_code

    def _install_signals(self) -> None:
        def on_term(signum: int, frame: FrameType | None) -> None:
            self.stop_event.set()
            self.dirty.wakeup.set()

        def on_hup(signum: int, frame: FrameType | None) -> None:
            self._reload.set()
            self.dirty.wakeup.set()

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)
        signal.signal(signal.SIGHUP, on_hup)

    def _loop(self) -> None:
        # The start's scan set the pace (a large home waits longer between scans).
        next_reconcile = time.monotonic() + (
            self.reconcile_stats.interval_s or self.cfg.reconcile_interval
        )
        next_root_check = time.monotonic() + ROOT_CHECK_INTERVAL_S
        last_status = 0.0
        while not self.stop_event.is_set():
            self._stall_hook()
            self.notifier.watchdog_if_due()
            self._save_sink_ack()
            now = time.monotonic()
            if self._reload.is_set():
                self._reload.clear()
                self.reload()
            if now >= next_root_check:
                with self.timer.step("check_roots"):
                    self.components.watcher.check_roots()
                next_root_check = now + ROOT_CHECK_INTERVAL_S
            if self.dirty.take_reconcile_request():
                log.warning("inotify_overflow_reconcile")
                next_reconcile = now
            if now >= next_reconcile:
                with self.timer.step("reconcile"):
                    self.reconcile()
                next_reconcile = time.monotonic() + self.reconcile_stats.interval_s
            paths, dirs = self.dirty.take()
            with self.timer.step("queue", dirs=len(dirs), paths=len(paths)):
                for d in dirs:
                    self._scan_dir(d)
                self._queue_appended(paths)
            self._requeue_retries()
            if (self.pending or self._carry is not None) and self.store_errors.waiting():
                # The last commit failed (the disk full): nothing is read until the next
                # try. Woken by file events too, which only add to the queue.
                self.dirty.wakeup.wait(min(self.store_errors.waiting(), 1.0))
                continue
            if self.pending or self._carry is not None:
                with self.timer.step("work", files=len(self.pending)):
                    self._work()
                self._backlog_stale = True
                with self.timer.step("backlog"):
                    self._refresh_backlog()
                if time.monotonic() - last_status > 2.0:
                    last_status = time.monotonic()
                    self.notifier.status(self._status_line())
                continue
            with self.timer.step("close_workers"):
                self.backfill.close(self.components.ingestor)
            if self._backlog_stale:
                # Not on every wake-up: it sums over every cursor (20,000 of them in a
                # large home), and an idle daemon wakes every 2 s for the root check.
                with self.timer.step("backlog"):
                    self._refresh_backlog(force=True)
            if not self._initial_done:
                self._initial_done = True
                self.timer.live = True
                self.components.store.end_search_deferral()
                self._release_backfill_memory()
                self.progress.live_since = time.time()
                if self._profile is not None:
                    self._profile[0].disable()
                    self._profile[0].dump_stats(self._profile[1])
                    self._profile = None
                log.info("live", files=self.progress.files_done, bytes=self.progress.bytes_done)
                self.notifier.status(self._status_line())
            if self.components.store.search_merge_due and not self.store_errors.waiting():
                # Before the build's next chunk: each chunk owes merging (several leaves
                # per level), and left to pile up the build's segments would meet FTS5's
                # crisis merge, 16 segments of a level merged at once inside one chunk.
                self._merge_search()  # one step a pass: a file that changes goes first
                continue
            if self.components.store.search_backlog() and not self.store_errors.waiting():
                # The search index of the events stored before it existed: one chunk
                # (its own transaction) at a time, when no file is waiting.
                try:
                    with self.timer.step("search_index_step"):
                        more = self.components.store.build_search_step(
                            int(os.environ.get("AGENTSRC_SEARCH_CHUNK") or SEARCH_CHUNK_IDS)
                        )
                except STORE_WRITE_ERRORS as exc:
                    delay = self.store_errors.failed(exc)
                    log.warning("search_index_step_failed", error=type(exc).__name__,
                                retry_in_s=delay, failures=self.store_errors.count)
                else:
                    self._wal_committed()
                    if not more:
                        self._release_backfill_memory()  # what the build held, too
                continue
            wake_at = min([next_reconcile, next_root_check, *(t for t, _ in self.retry.values())])
            if self.store_errors.waiting():
                wake_at = min(wake_at, self.store_errors.retry_at)
            if self._wal_dirty:
                wake_at = min(wake_at, self._truncate_wal_if_idle())
            timeout = wake_at - time.monotonic()
            if self.notifier.watchdog_every:
                timeout = min(timeout, self.notifier.watchdog_every)
            self.dirty.wakeup.wait(max(0.0, timeout))

    def _wal_committed(self) -> None:
        self._wal_dirty = True
        self._committed_at = time.monotonic()
        self._idle_checkpoint = False
        checkpointer = self.components.checkpointer
        pages = self.components.store.wal_pages
        if checkpointer is not None and pages >= CHECKPOINT_MIN_PAGES:
            # Hurried only below the writer's own RESTART: past it, checkpoints back to
            # back would hold the checkpoint lock the RESTART needs (readers that keep
            # a PASSIVE from finishing then let the WAL grow past its bound).
            checkpointer.notify(
                hurry=CHECKPOINT_HURRY_PAGES <= pages < schema.WAL_CHECKPOINT_PAGES
            )

    def _truncate_wal_if_idle(self) -> float:
        """Idle: the WAL goes back to nothing once no commit came for WAL_IDLE_S (a
        reader mid-transaction holds it: then again shortly). Returns when to look
        again (infinity: done)."""
        now = time.monotonic()
        checkpointer = self.components.checkpointer
        idle_at = self._committed_at + (WAL_IDLE_S if checkpointer else 0.0)
        if now < idle_at:
            return idle_at
        if checkpointer is not None and not self._idle_checkpoint:
            self._idle_checkpoint = True
            checkpointer.notify()
            return now + WAL_IDLE_CHECKPOINT_S
        with contextlib.suppress(*STORE_WRITE_ERRORS), self.timer.step("truncate_wal"):
            self._wal_dirty = not self.components.store.truncate_wal()
        return now + WAL_RETRY_S if self._wal_dirty else float("inf")

    def _release_backfill_memory(self) -> None:
        """Live: what the backfill freed goes back to the OS (system/memory.py), so the
        live daemon's RSS is its working set, not the backfill's peak."""
        self.components.store.shrink_cache()
        release_freed_memory()
        # Once live only: before the deferred big lines (the scheduler calls this too)
        # the backfill's own objects are still in use.
        if self._initial_done and os.environ.get(GC_FREEZE_ENV, "1") != "0":
            freeze_heap()
        log.info("memory_released", rss=rss_bytes())

    def _queue_appended(self, paths: set[str]) -> None:
        """Files the watcher saw written go to the front of the queue, ahead of any
        backfill, and are committed on their own (see _work)."""
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
            self._urgent = set(urgent)
            self.priority.appended(time.monotonic())

    def _appends_wait(self) -> bool:
        """Before a piece of backfill work: an append came in and the backlog moved
        recently, so the piece waits (LivePriority.yields)."""
        return self.priority.yields(time.monotonic(), bool(self.dirty))

    def _progressed(self) -> None:
        self.priority.progressed(time.monotonic())

    def _requeue_retries(self) -> None:
        now = time.monotonic()
        for path, (due, spec) in list(self.retry.items()):
            if due <= now:
                del self.retry[path]
                self.pending.setdefault(path, spec)

    def _stall_hook(self) -> None:
        stall = os.environ.get(STALL_HOOK_ENV)
        while stall and os.path.exists(stall) and not self.stop_event.is_set():
            time.sleep(0.05)

    def _work(self) -> None:
        """One round over the pending files, committing as batches fill up. During a
        large backfill, file rounds are also handed to worker processes. Files just
        appended to come first (``_queue_appended``) and are committed together before
        anything else is read or committed: a live line never waits for a backfill's
        batch. Between any two pieces of backfill work (a round read here, a batch or a
        worker's piece committed) the loop looks for new appends, and goes back to
        take them first (``LivePriority``): a batch read here is then carried,
        uncommitted, to be committed right after them."""
        ingestor = self.components.ingestor
        with self.timer.step("begin_round"):
            self.backfill.begin_round(self.pending, self.backlog_bytes, ingestor)
        batch = Batch()
        deadline = time.monotonic() + self.cfg.batch_max_delay
        urgent, self._urgent = self._urgent, set()
        carry, self._carry = self._carry, None
        if carry is not None and not urgent.isdisjoint(carry.cursors):
            # An appended file whose backfill events are not committed yet: its cursor
            # here is past them, so they are committed before it is read again.
            committed = self._commit(carry, "backfill")
            carry = None
            if not committed:
                return
        budget, max_events = self.priority.budget(time.monotonic())
        self.backfill.budget_bytes = budget  # the workers' rounds too
        self.backfill.unit_events = max_events  # a worker's pieces per commit
        for path in list(self.pending):
            if self.stop_event.is_set():
                break
            if path not in self.pending:
                continue
            if urgent and path not in urgent:
                urgent = set()
                committed = self._commit(batch, "appends")  # the appends, on their own
                batch = Batch()
                deadline = time.monotonic() + self.cfg.batch_max_delay
                if not committed:
                    break  # the disk is full: wait (the loop) before reading more
            if not urgent:
                if carry is not None:
                    # The backfill batch the appends went ahead of: before anything of
                    # the backlog is read or placed again.
                    committed = self._commit(carry, "backfill")
                    carry = None
                    if not committed:
                        break
                if self._appends_wait():
                    break  # fresh appends: the next round takes them first
            spec = self.pending.get(path)
            mine = path in urgent and self.backfill.take_back(path)
            if spec is None:
                continue
            placed = mine
            if not mine:
                # Before the commit of what the workers finished: a worker given this
                # file now parses it meanwhile.
                with self.timer.step("place"):
                    placed = self.backfill.place(spec, ingestor)
            if not urgent:
                with self.timer.step("collect"):  # may finish (un-queue) files of this list
                    self.backfill.collect(stop=self._appends_wait)
                if self._appends_wait():
                    break
            if not placed:
                continue
            if mine:  # the appended file itself: a round, committed with the appends
                # (while catching up, a file with a backlog of its own reads a batch of
                # it, then backfills: the other files' appends do not wait for all of it)
                rnd = ingestor.ingest(spec, batch, FILE_BUDGET_BYTES, max_events=(
                    None if self._initial_done else max_events))
            else:
                with self.timer.step("backfill_round", path=path) as step:
                    # At most a batch: a round of tiny lines is not one huge commit.
                    rnd = ingestor.ingest(spec, batch, budget, self._backfill_round_ends,
                                          max(1, max_events - len(batch.events)))
                    step["bytes"] = rnd.bytes
                self._progressed()
            if rnd.retry_after is not None:
                # Locked by its writer: try again soon, without holding up the loop.
                self.pending.pop(path, None)
                self.retry[path] = (time.monotonic() + rnd.retry_after, spec)
                continue
            self._account(path, rnd)
            if urgent:
                continue
            if len(batch.events) >= max_events or time.monotonic() >= deadline:
                if self._appends_wait() and not self.stop_event.is_set():
                    break  # committed after the appends (the end of this round)
                committed = self._commit(batch, "backfill")
                batch = Batch()
                deadline = time.monotonic() + self.cfg.batch_max_delay
                self.notifier.watchdog_if_due()
                if not committed:
                    break  # the disk is full: wait (the loop) before reading more
        if urgent:  # only appends were read (a failed commit put them back in the queue)
            self._commit(batch, "appends")
            batch = Batch()
        if carry is not None:  # only appends were read: the carried batch goes now
            self._commit(carry, "backfill")
        if not batch.empty():
            if self._appends_wait() and not self.stop_event.is_set():
                self._carry = batch  # after the appends, at the start of the next round
            else:
                self._commit(batch, "backfill")
        with self.timer.step("end_round"):
            self.backfill.end_round(self.pending, stopping=self.stop_event.is_set(),
                                    stop=self._appends_wait)

    def _backfill_round_ends(self) -> bool:
        """Asked after each line of a backfill round read here: an append waits, or a
        worker finished a round (committed, and the worker handed another, before this
        thread parses on: BackfillScheduler.place)."""
        return bool(self.dirty) or self.backfill.collect_due()

    def _account(self, path: str, rnd: FileRound) -> None:
        self.progress.bytes_done += rnd.bytes
        if rnd.deferred:
            # A line over 4 MiB comes next. Read it once the workers are gone, so its
            # working set never adds to theirs (the memory bound holds for all
            # processes together); until then, the file waits.
            self.backfill.defer(path)
            return
        if not rnd.more:
            self.pending.pop(path, None)
            if not self._initial_done and path not in self._counted_done:
                # Once per file: a database woken again by its -wal while catching up
                # is not a second file.
                self._counted_done.add(path)
                self.progress.files_done += 1
        if rnd.gone:
            log.info("source_gone", path=path)

    def _commit_worker_rounds(self, done: list[WorkerRound]) -> bool:
        """Rounds the workers finished (or pieces of them), of one or more files: their
        batches are committed in one transaction with the cursors they advanced, which
        replace this thread's copies."""
        cursors = self.components.ingestor.cursors
        batch = Batch()
        for d in done:
            batch.merge(d.batch)
            cursors[d.path] = d.cursor
        if not self._commit(batch, "worker"):
            return False
        for d in done:
            self._account(d.path, d.round)
        return True

    def _commit(self, batch: Batch, what: str = "backfill") -> bool:
        """Commit on the ingest thread. (A committer thread was measured: with the GIL
        handed back and forth on every row it was slower and held more batches in
        memory; see docs/performance.md.) False when the store refused it (disk full):
        then nothing of it happened, and its files are queued to be read again."""
        if batch.empty():
            return True
        try:
            hook = os.environ.get(FULL_HOOK_ENV)
            if hook and os.path.exists(hook):
                raise apsw.FullError("database or disk is full (test hook)")
            with self.timer.step("commit", events=len(batch.events) + len(batch.rows),
                                 files=len(batch.cursors), what=what):
                # The WAL's checkpoint after the publish below (_check_wal).
                inserted = self.components.store.commit(batch, check_wal=False)
        except STORE_WRITE_ERRORS as exc:
            self._commit_failed(batch, exc)
            return False
        self.store_errors.succeeded()
        if what != "appends":
            self._progressed()  # the backlog moved: appends that wait now go first
        sink = self.components.sink
        if sink is not None:
            sink.notify()
            self._save_sink_ack()
        # Checked after the commit: a subscriber registering later finds these events
        # in its backlog query, so skipping the rows when nobody listens leaves no gap.
        if inserted and self.hub.count():
            with self.timer.step("publish"):
                self.hub.publish(inserted.rows())
        self._check_wal()
        self._wal_committed()  # the checkpointer after the writer's own checkpoint
        store = self.components.store
        if store.search_merge_owed >= SEARCH_MERGE_FORCE_STEPS * store.search_merge_pages:
            self._merge_search()  # no quiet moment came: a step after each commit
        return True

    def _merge_search(self) -> None:
        """One step of merging the search index's segments (Store.merge_search_step),
        when no file waits, or after a commit once SEARCH_MERGE_FORCE_STEPS are owed."""
        try:
            with self.timer.step("search_merge"):
                self.components.store.merge_search_step()
        except STORE_WRITE_ERRORS as exc:  # nothing is lost: the segments stay as they are
            delay = self.store_errors.failed(exc)
            log.warning("search_merge_failed", error=type(exc).__name__,
                        retry_in_s=delay, failures=self.store_errors.count)
            return
        self._check_wal()
        self._wal_committed()

    def _check_wal(self) -> None:
        """The WAL's bound (a RESTART checkpoint once it holds a quarter of it, on this
        thread: schema.WalBound), after the commit's events are published, and put off
        while a live append waits (up to schema.WAL_FORCE_PAGES): it runs after a later
        commit with none waiting. On a loaded disk it took 30-320 ms."""
        store = self.components.store
        if not store.wal_due:
            return
        checkpointer = self.components.checkpointer
        if store.wal_pages < schema.WAL_FORCE_PAGES and (
            self.dirty or self._urgent or (checkpointer is not None and checkpointer.running)
        ):
            return
        try:
            with self.timer.step("wal_checkpoint", pages=store.wal_pages):
                store.check_wal()
        except STORE_WRITE_ERRORS as exc:  # the frames stay in the WAL: next time
            log.warning("wal_checkpoint_failed", error=type(exc).__name__)

    def _commit_failed(self, batch: Batch, exc: BaseException) -> None:
        """The transaction rolled back: the batch's files go back to their committed
        cursors and into the queue, read again once the next try is due."""
        delay = self.store_errors.failed(exc)
        paths = list(batch.cursors)
        committed = self.components.store.committed_cursors(paths)
        ingestor = self.components.ingestor
        roots, extra = self.cfg.roots(), self.cfg.extra_sources()
        for path in paths:
            ingestor.restore(path, committed.get(path))
            spec = sources.classify(path, roots, extra)
            if spec is not None:
                self.pending.setdefault(path, spec)
        # Counts and the error's type and message (SQLite's, never the data).
        log.warning(
            "commit_failed",
            error=type(exc).__name__,
            detail=str(exc),
            files=len(paths),
            events=len(batch.rows) + len(batch.events),  # rows: the prepared events
            failures=self.store_errors.count,
            retry_in_s=delay,
        )

    # ---- status --------------------------------------------------------------------

    def _refresh_backlog(self, force: bool = False) -> None:
        """Status figures computed on the ingest thread (the only one that touches
        cursors and the queue) and published as plain values for the server threads."""
        now = time.monotonic()
        if force or now - self._backlog_at >= 0.25:
            self._backlog_at = now
            self._backlog = (self.backlog_bytes(), len(self.pending))
            self._backlog_stale = False

    def backlog_bytes(self) -> int:
        """Bytes still to read: known cursors' lag, or during the first catch-up the
        reconcile's total less what is done (new files have no cursor yet)."""
        # A file with bytes to read is queued (the watcher or the reconcile put it there;
        # a file in a worker's hands stays queued until its round is committed) or
        # waiting to be retried: only those are summed, not every cursor (44,000 in a
        # large home: 0.1 s a call, and a start asked five times).
        lag = self.components.ingestor.pending_bytes([*self.pending, *self.retry])
        if self._initial_done:
            return lag
        return max(lag, self.progress.bytes_total - self.progress.bytes_done)

    def state(self) -> str:
        return ("live" if self._initial_done and not self.pending and self._carry is None
                else "catching_up")

    def status(self, reader: Reader) -> dict[str, Any]:
        migration = self.migration
        if not self._store_ready.is_set():  # only while a chunked migration runs
            m = migration or {"name": None, "done": 0, "total": 0}
            return {
                "state": "migrating",
                "version": __version__,
                "pid": os.getpid(),
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started_at)),
                "migration": {
                    **m,
                    "fraction": round(m["done"] / m["total"], 4) if m["total"] else 0.0,
                },
                "data_dir": str(self.cfg.data_dir),
                "socket": str(self.cfg.socket_path),
            }
        watch_modes = self.components.watcher.modes
        # The state before the counts: "live" means every commit is done, so the counts
        # read after it include them (read the other way round, a status taken during
        # the last commit said live with the counts of before it: 19,851 of 20,000 files).
        state = self.state()
        counts = reader.counts()
        pending_bytes, pending_files = self._backlog
        return {
            "state": state,
            "version": __version__,
            "pid": os.getpid(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started_at)),
            "files": counts["files"],
            "files_gone": counts["files_gone"],
            "sessions": counts["sessions"],
            "events": counts["events"],
            "pending_bytes": pending_bytes,
            "pending_files": pending_files,
            "progress": self.progress.as_dict(pending_bytes),
            "skipped": reader.skipped_totals(),
            "drift": reader.drift(),
            "subscribers": self.hub.count(),
            "roots": {
                # None until the watcher has looked at the root (during start-up).
                agent: {"path": str(path), "watch": watch_modes.get(str(path))}
                for agent, path in self.cfg.roots().items()
            },
            "data_dir": str(self.cfg.data_dir),
            "socket": str(self.cfg.socket_path),
            "scan": self.scan_state,
            "search_index": reader.search_progress(),
            "store_errors": self.store_errors.as_dict(),
            "reconcile": self.reconcile_stats.as_dict(),
            "sink": self._sink_status(reader),
        }

    def _sink_status(self, reader: Reader) -> dict[str, Any]:
        sink = self.components.sink
        if sink is None:
            return {"enabled": False}
        return dict(sink.status(sink_store.lag(reader.conn, sink.events_upto)))

    def _status_line(self) -> str:
        p = self.progress
        if self.state() == "live":
            return f"live: {p.files_done} files ingested"
        return (
            f"catching up: {p.files_done}/{p.files_total} files, "
            f"{p.bytes_done // (1 << 20)}/{p.bytes_total // (1 << 20)} MiB"
        )

    # ---- reload and shutdown -----------------------------------------------------------

    def reload(self) -> None:
        self.notifier.reloading(status="reloading configuration")
        try:
            new = load_config(**self.cli_overrides)
        except Exception as exc:
            log.error("reload_failed", error=str(exc))
            self.notifier.ready(status=self._status_line())
            return
        restart_needed = [
            name
            for name in (
                "data_dir",
                "socket_path",
                "codex_root",
                "claude_root",
                "muse_root",
                "gemini_root",
                "copilot_root",
                "opencode_root",
                "opencode_db",
                "sink",
            )
            if getattr(new, name) != getattr(self.cfg, name)
        ]
        self.cfg.reconcile_interval = new.reconcile_interval
        self.cfg.max_line_bytes = new.max_line_bytes
        self.cfg.scan = new.scan
        old = self.components.ingestor
        new_ingestor = self._build_ingestor()
        new_ingestor.take_over(old)
        self.components.ingestor = new_ingestor
        log.info("reloaded", restart_needed_for=restart_needed)
        self.notifier.ready(status=self._status_line())

    def shutdown(self) -> None:
        self.notifier.stopping(status="stopping")
        parts = self.components
        if self._carry is not None:  # a backfill batch read but not committed yet
            carry, self._carry = self._carry, None
            self._commit(carry)
        # The rounds in the workers' hands (at most 12 MiB of files): commit them too.
        self.backfill.close(parts.ingestor)
        parts.watcher.stop()
        parts.server.stop()
        parts.ingestor.close()
        if parts.checkpointer is not None:
            parts.checkpointer.stop()
        if parts.sink is not None:
            parts.sink.stop()  # a push in flight may still be answered: its ack is saved
            self._save_sink_ack()
        parts.store.close()
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self.timer.on_gc)
        with contextlib.suppress(OSError):
            os.close(parts.lock_fd)
        log.info("stopped")
