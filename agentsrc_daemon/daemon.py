"""The orchestrator: wires watch -> tail -> adapters -> derive -> scan -> store ->
server, and runs the ingest loop.

The loop is the only writer. It sleeps on the watcher's wake-up event (near-zero CPU
when nothing changes) and wakes for file events, the periodic reconcile scan, root
checks and service-manager watchdog pings. Each pass does the house-keeping (reload,
roots, reconcile, the watcher's news into the queue), then one round of reading and
committing (``RoundScheduler``), or, when nothing waits, the deferred work (the search
index's build and merging), or sleeps. The pieces it wires:

* ``ingest.queue.SourceQueue``: which files wait, found by the watcher and the reconcile;
* ``ingest.scheduler.RoundScheduler``: who reads what, appends first, backfill workers;
* ``ingest.committer.Committer``: commits, refused commits and their retry, what follows
  a commit (publish, sink, the WAL, search merging);
* ``ingest.status.StatusBoard``: what ``status`` says, with the progress and backlog.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import structlog

from . import __version__
from .config import Config, load_config
from .cursor_table import CursorTable
from .errors import AlreadyRunning
from .ingest import sources
from .ingest.committer import Committer, StoreErrors
from .ingest.dir_watch import DirWatch
from .ingest.priority import LivePriority
from .ingest.progress import Backlog, Progress
from .ingest.project_scan import ProjectScan
from .ingest.queue import SourceQueue
from .ingest.round import Ingestor
from .ingest.scheduler import FILE_BUDGET_BYTES, RoundScheduler
from .ingest.status import StatusBoard
from .ingest.steps import StartPhases, StartProfile, StepTimer
from .ingest.watch import DirtySet, Watcher
from .pricing.stage import PriceStage
from .rpc import methods as rpc
from .rpc.transport import Hub, Server
from .store import Reader, Store, project_roots
from .store import sink as sink_store
from .store.migrations.runner import chunked_pending
from .store.wal import Checkpointer, WalUpkeep
from .system.datadir import acquire_lock
from .system.memory import limit_arenas, release_after_backfill
from .system.notify import Notifier

log = structlog.get_logger("agentsrc.daemon")

# A root that appears is watched within this (its files then read from the start): every
# 2 s cost an idle daemon 0.03% of a core, a third of its idle target (issue 31), for
# a folder that appears once in months. Project files without inotify are stat'ed every
# POLL_INTERVAL_S instead (ingest/dir_watch.py), as they are appended to.
ROOT_CHECK_INTERVAL_S = 10.0
POLL_INTERVAL_S = 2.0
# A first catch-up at least this large builds the search index after it, in chunks, not
# in its commits (SearchIndex.defer); config.Tuning overrides it for tests.
SEARCH_DEFER_MIN_BACKLOG = 64 << 20
# The service manager's status line is updated at most this often while catching up.
STATUS_LINE_S = 2.0


@dataclass
class Components:
    """What start() brings up, in that order; shutdown() stops them in reverse. The
    ingestor is replaced on reload (new stages, the same cursors)."""

    lock_fd: int  # holds the data directory's lock for the daemon's life
    store: Store
    ingestor: Ingestor
    server: Server
    watcher: Watcher
    committer: Committer
    scheduler: RoundScheduler
    sink: Any = None  # sink.pusher.Pusher when [sink.clickhouse] is configured
    checkpointer: Checkpointer | None = None  # WAL checkpoints off this thread


@dataclass
class _Due:
    """When the loop's periodic work is next due (monotonic)."""

    reconcile: float
    root_check: float
    status_line: float = 0.0


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
        self.cli_overrides = cli_overrides or {}
        self.log_level, self.json_logs = log_level, json_logs  # the workers log alike
        self.stop_event = threading.Event()
        self._reload = threading.Event()
        self.exit_code = 0
        self.dirty = DirtySet()
        self.notifier = Notifier.from_env()
        self.hub = Hub()
        self.timer = StepTimer(cfg.tuning.slow_step_ms)
        self.queue = SourceQueue(cfg)
        # The files agents keep in projects (Aider, Crush): found by a paced scan of the
        # named folders and the sessions' project roots, watched folder by folder.
        self.projects = ProjectScan(lambda: self.cfg.project_folders,
                                    lambda: project_roots(self.components.store.conn))
        if cfg.tuning.project_scan_interval is not None:
            self.projects.base_interval = cfg.tuning.project_scan_interval
        self.queue.projects = self.projects
        self.dir_watch = DirWatch(self.dirty)
        self.progress = Progress()
        self.errors = StoreErrors()
        # When the loop yields to live appends, and how large its backfill pieces are.
        self.priority = LivePriority(FILE_BUDGET_BYTES, cfg.batch_max_events)
        self.backlog = Backlog(
            lambda: self.components.ingestor.pending_bytes(self.queue.with_bytes_to_read()),
            lambda: len(self.queue.pending),
        )
        self.backlog.progress = self.progress  # until live (Backlog.bytes)
        self.board = StatusBoard(cfg, self.progress, self.backlog, self.queue, self.errors,
                                 self.hub, lambda: self.components.scheduler.has_work(),
                                 lambda: self.components.committer.deferred_work())
        self.board.projects = lambda: {**self.projects.status(), "watch": self.dir_watch.mode,
                                       "watched": self.dir_watch.watched()}
        self._profile = StartProfile(cfg.tuning.profile_start)  # off unless asked
        self.prices: PriceStage | None = None  # the pricing stage (pricing/stage.py)

    # ---- start-up ----------------------------------------------------------------

    def _build_ingestor(self) -> Ingestor:
        from .ingest.stages import build_stages

        derive, scan, project_root_for, scan_state = build_stages(self.cfg)
        self.board.scan = scan_state
        return Ingestor(
            max_line_bytes=self.cfg.max_line_bytes,
            derive=derive,
            scan=scan,
            project_root_for=project_root_for,
            price=self.prices,
        )

    def _set_prices(self, store: Store, *, at_start: bool) -> bool:
        """The price table (exported by a child process when missing or of another
        library version) and the [prices] overrides, as the pricing stage; the store told
        their fingerprint. Whether the stored costs are to be priced again."""
        from .system.price_table import price_stage

        self.prices = price_stage(self.cfg)
        table = self.prices.pricer.table
        self.board.prices = {
            "table": dict(table.source) if table is not None else None,
            "fingerprint": self.prices.fingerprint,
        }
        return store.pricing(self.prices.fingerprint, self.prices.cost_of, at_start=at_start)

    def _server(self) -> Server:
        methods = {
            name: h if name == "status" else self.board.gated(h)
            for name, h in rpc.build_methods(self.status).items()
        }
        return Server(
            self.cfg.socket_path, self.cfg.db_path, methods, self.hub, rpc.subscribe_backlog
        )

    def _on_migration(self, name: str, done: int, total: int) -> None:
        self.board.migration = {"name": name, "done": done, "total": total}
        log.info("migrating", migration=name, done=done, total=total)

    def _open_store(self, phases: StartPhases) -> tuple[Store, Ingestor, Watcher]:
        """The store opened (migrated) and the cursors loaded while the watches are
        added on a thread of their own (watchdog walks every root's tree: 5,000
        directories in a large home, mostly system calls); they are in place before the
        reconcile's stats, so a change after a file's stat is seen."""
        watcher = Watcher(self.cfg.watch_points(), self.dirty)
        watching = threading.Thread(
            target=watcher.start, kwargs={"on_root_appeared": self._scan_root},
            name="agentsrc-watch-start", daemon=True,
        )
        watching.start()
        try:
            tuning = self.cfg.tuning
            store = Store(self.cfg.db_path, progress=self._on_migration,
                          search_index=tuning.search_index,
                          search_merge_pages=tuning.search_merge_pages,
                          migrate_chunk_ids=tuning.migrate_chunk_ids)
            phases.done("store")
            self._set_prices(store, at_start=True)
            phases.done("prices")
            ingestor = self._build_ingestor()
            phases.done("stages")
            # The adapter states stay in the store until their file is read, and the
            # cursors of gone files until their path is seen again.
            ingestor.cursors = CursorTable.packed(store.cursors.iter_load(
                states=False, sidecar_adapters=sources.SIDECAR_ADAPTERS, gone=False
            ))
            ingestor.cursor_store = store.cursors
            phases.done("cursors")
        finally:
            watching.join()
        phases.done("watch")
        return store, ingestor, watcher

    def _wire(self, lock_fd: int, server: Server | None, phases: StartPhases) -> None:
        store, ingestor, watcher = self._open_store(phases)
        sink = None
        if self.cfg.sink is None:
            sink_store.forget(store.conn)  # any old position dropped: its feeds stop
        else:
            from .sink.pusher import start_sink

            sink = start_sink(self.cfg.sink, store, on_ack=self.dirty.wakeup.set,
                              busy=lambda: not self.board.caught_up())
        checkpointer = Checkpointer(self.cfg.db_path) if self.cfg.tuning.checkpoint_thread else None
        committer = Committer(
            store, self.queue, lambda: self.components.ingestor, self.hub, self.timer,
            WalUpkeep(store, checkpointer), errors=self.errors,
            append_waits=lambda: bool(self.dirty) or bool(self.queue.urgent),
            on_progress=lambda: self.priority.progressed(time.monotonic()),
            sink=sink, search_chunk_ids=self.cfg.tuning.search_chunk_ids,
            reprice_chunk=self.cfg.tuning.reprice_chunk,
            state_quiet_s=self.cfg.tuning.state_quiet_s,
        )
        scheduler = RoundScheduler(
            self.cfg, self.queue, committer, self.priority, self.progress,
            lambda: self.components.ingestor, self.timer,
            appends_waiting=lambda: bool(self.dirty), stopping=self.stop_event,
            between_batches=self.notifier.watchdog_if_due, backlog_bytes=self.backlog.bytes,
            release_memory=self._release_memory,
            log_level=self.log_level, json_logs=self.json_logs,
        )
        self.components = Components(lock_fd, store, ingestor, server or self._server(),
                                     watcher, committer, scheduler, sink, checkpointer)
        self.board.watch_modes = lambda: watcher.modes
        self.board.sink = sink
        if checkpointer is not None:
            checkpointer.start()

    def start(self) -> None:
        limit_arenas()
        gc.callbacks.append(self.timer.on_gc)
        lock_fd = acquire_lock(self.cfg.data_dir, self.cfg.lock_path)
        server = None
        pending = chunked_pending(self.cfg.db_path)
        if pending is not None:
            # A migration that rewrites every event: the socket answers status (with
            # its progress) from the start; other queries wait for the store.
            self.board.migration = {"name": pending.name, "done": 0, "total": 0}
            server = self._server()
            server.start()
        # The migration stays (all done) until the store is ready: the reconcile below
        # comes first, and status must not look like a migration at 0%.
        phases = StartPhases()
        self._wire(lock_fd, server, phases)
        self._scan_projects(initial=True)  # its files are in the first reconcile
        phases.done("projects")
        # The first reconcile before the socket answers, so status never reports a
        # catch-up whose totals are not known yet (with six roots and their watch points
        # that window was long enough to be seen).
        self.queue.reconcile(self.components.ingestor, self.progress)
        phases.done("reconcile")
        self.backlog.refresh(force=True)
        phases.done("backlog")
        defer_from = self.cfg.tuning.search_defer_min_backlog
        if self.backlog.value[0] >= (SEARCH_DEFER_MIN_BACKLOG if defer_from is None else defer_from):
            self.components.store.search_index.defer()
        self.board.store_ready.set()
        self.board.migration = None
        if server is None:
            self.components.server.start()
        self.progress.started = time.monotonic()
        self._log_started(phases)

    def _log_started(self, phases: StartPhases) -> None:
        watcher, store = self.components.watcher, self.components.store
        roots = self.cfg.roots()
        log.info(
            "started",
            version=__version__,
            pid=os.getpid(),
            data_dir=str(self.cfg.data_dir),
            database=str(self.cfg.db_path),
            socket=str(self.cfg.socket_path),
            roots={k: str(v) for k, v in roots.items()},
            agents=[a for a, root in roots.items() if root.is_dir()],
            missing={a: str(root) for a, root in roots.items() if not root.is_dir()},
            watch_modes=watcher.modes,
            scan=self.board.scan.get("enabled"),
            cursors=len(self.components.ingestor.cursors),  # gone ones when seen again
            files_gone=store.cursors.gone_count(),  # their cursors stay in the store
            start_ms=phases.ms,  # where the start went (wall ms per phase)
        )
        if not self.board.scan.get("enabled"):
            log.warning("secret_scanning_off", detail="content is not scanned for secrets")

    def _scan_root(self, root: Path) -> None:
        self.queue.scan_dir(root, self.components.ingestor)

    def _scan_projects(self, initial: bool = False) -> None:
        """A project scan pass: the files found are watched, the new ones queued, the
        ones no longer found read once more (gone, most likely)."""
        added, removed = self.projects.run()
        self.dir_watch.set_files(self.projects.found)
        if not initial:
            self.queue.found(added, self.components.ingestor)
            self.queue.requeue(removed)

    # ---- the loop ------------------------------------------------------------------

    def run(self) -> int:
        self._profile.start()
        try:
            self.start()
        except AlreadyRunning as exc:
            log.error("already_running", detail=str(exc))
            raise
        self._install_signals()
        try:
            self.notifier.ready(status="catching up" if self.queue.pending else "live")
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
        now = time.monotonic()
        # The start's scan set the pace (a large home waits longer between scans).
        due = _Due(now + (self.queue.stats.interval_s or self.cfg.reconcile_interval),
                   now + ROOT_CHECK_INTERVAL_S)
        while not self.stop_event.is_set():
            self._housekeeping(due)
            if self._read_and_commit(due) or self._idle_work():
                continue
            self._sleep(due)

    def _housekeeping(self, due: _Due) -> None:
        """The start of every pass: the watchdog, the sink's acks, a reload, the roots,
        the reconcile when due, and what the watcher saw into the queue."""
        parts = self.components
        self.notifier.watchdog_if_due()
        parts.committer.save_sink_ack()
        now = time.monotonic()
        if self._reload.is_set():
            self._reload.clear()
            self.reload()
        if now >= due.root_check:
            with self.timer.step("check_roots"):
                parts.watcher.check_roots()
                self.dir_watch.poll()  # only without inotify
            polling = self.dir_watch.mode == "polling"
            due.root_check = now + (POLL_INTERVAL_S if polling else ROOT_CHECK_INTERVAL_S)
        if now >= self.projects.due:
            with self.timer.step("project_scan"):
                self._scan_projects()
        if self.dirty.take_reconcile_request():
            log.warning("inotify_overflow_reconcile")
            due.reconcile = now
        if now >= due.reconcile:
            with self.timer.step("reconcile"):
                self.queue.reconcile(parts.ingestor, None if self.board.live else self.progress)
                self.backlog.stale = True
            due.reconcile = time.monotonic() + self.queue.stats.interval_s
        paths, dirs = self.dirty.take()
        with self.timer.step("queue", dirs=len(dirs), paths=len(paths)):
            for d in dirs:
                self.queue.scan_dir(d, parts.ingestor)
            parts.scheduler.appended(paths)
        self.queue.requeue_retries()

    def _read_and_commit(self, due: _Due) -> bool:
        """A round over the queue, when files wait (and the store takes writes: after a
        refused commit nothing is read until the next try). Whether there was work."""
        scheduler = self.components.scheduler
        if not scheduler.has_work():
            return False
        if self.errors.waiting():
            # The last commit failed (the disk full): nothing is read until the next
            # try. Woken by file events too, which only add to the queue.
            self.dirty.wakeup.wait(min(self.errors.waiting(), 1.0))
            return True
        with self.timer.step("work", files=len(self.queue.pending)):
            scheduler.run_round()
        self.backlog.stale = True
        with self.timer.step("backlog"):
            self.backlog.refresh()
        if time.monotonic() - due.status_line > STATUS_LINE_S:
            due.status_line = time.monotonic()
            self.notifier.status(self.board.line())
        return True

    def _idle_work(self) -> bool:
        """Nothing queued: the workers closed, the first time live, then the search
        index's deferred work and the re-price, one step a pass (a file that changes
        goes first). Whether a step ran."""
        parts = self.components
        parts.scheduler.close_workers()
        if self.backlog.stale:
            # Not on every wake-up: it sums over the queue's cursors, and an idle daemon
            # wakes every 10 s for the root check.
            with self.timer.step("backlog"):
                self.backlog.refresh(force=True)
        if not self.board.live:
            self._become_live()
        owed = parts.committer.deferred_work()
        stepped = not self.errors.waiting() and (
            parts.committer.search_index_step(self._release_memory)
            or parts.committer.reprice_step()
            or parts.committer.pack_states_step())
        if owed is not None and parts.committer.deferred_work() is None:
            # The deferred work is done: status says live from now on.
            log.info("indexed")
            self.notifier.status(self.board.line())
        return stepped

    def _become_live(self) -> None:
        self.board.live = self.components.scheduler.live = self.timer.live = True
        self.backlog.progress = None
        self.components.store.search_index.end_deferral()
        self._release_memory()
        self._profile.stop()
        log.info("live", files=self.progress.files_done, bytes=self.progress.bytes_done,
                 indexing=self.components.committer.deferred_work() is not None)
        self.notifier.status(self.board.line())

    def _sleep(self, due: _Due) -> None:
        """Until the next periodic job, a retry, the WAL's idle truncation, or the
        watcher's wake-up, whichever comes first."""
        wake_at = min(due.reconcile, due.root_check, self.projects.due)
        retry = self.queue.next_retry()
        if retry is not None:
            wake_at = min(wake_at, retry)
        if self.errors.waiting():
            wake_at = min(wake_at, self.errors.retry_at)
        else:
            quiet_at = self.components.committer.states_quiet_at()
            if quiet_at is not None:  # a state an append stored as JSON, to be packed
                wake_at = min(wake_at, quiet_at)
        wake_at = min(wake_at, self.components.committer.wal.truncate_if_idle(self.timer.step))
        measure_at = self.components.store.search_index.measure_due_at()
        if measure_at is not None:  # what the last commits owe the search index's merging
            wake_at = min(wake_at, measure_at)
        timeout = wake_at - time.monotonic()
        if self.notifier.watchdog_every:
            timeout = min(timeout, self.notifier.watchdog_every)
        self.dirty.wakeup.wait(max(0.0, timeout))

    def _release_memory(self) -> None:
        # Once live only: before the deferred big lines (the scheduler calls this too)
        # the backfill's own objects are still in use.
        freeze = self.board.live and self.cfg.tuning.gc_freeze
        release_after_backfill(self.components.store, freeze=freeze)

    # ---- status --------------------------------------------------------------------

    def state(self) -> str:
        return self.board.state()

    def status(self, reader: Reader) -> dict[str, Any]:
        return self.board.report(reader)

    # ---- reload and shutdown -----------------------------------------------------------

    def reload(self) -> None:
        self.notifier.reloading(status="reloading configuration")
        try:
            new = load_config(**self.cli_overrides)
        except Exception as exc:
            log.error("reload_failed", error=str(exc))
            self.notifier.ready(status=self.board.line())
            return
        restart_needed = self.cfg.reload_from(new)
        if self._set_prices(self.components.store, at_start=False):
            self.components.committer.reprice()  # the stored costs priced again
        ingestor = self._build_ingestor()  # new stages, the same cursors and readers
        ingestor.take_over(self.components.ingestor)
        self.components.ingestor = ingestor
        log.info("reloaded", restart_needed_for=restart_needed)
        self.notifier.ready(status=self.board.line())

    def shutdown(self) -> None:
        self.notifier.stopping(status="stopping")
        parts = self.components
        # The batch carried and the rounds in the workers' hands: committed too.
        parts.scheduler.flush()
        parts.committer.pack_states_step(quiet_s=0.0)  # the states appends left as JSON
        parts.watcher.stop()
        self.dir_watch.stop()
        parts.server.stop()
        parts.ingestor.close()
        if parts.checkpointer is not None:
            parts.checkpointer.stop()
        if parts.sink is not None:
            parts.sink.stop()  # a push in flight may still be answered: its ack is saved
            parts.committer.save_sink_ack()
        parts.store.close()
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self.timer.on_gc)
        with contextlib.suppress(OSError):
            os.close(parts.lock_fd)
        log.info("stopped")
