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
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

import structlog

from ..config import Config
from ..store import Batch, prepare
from . import sources
from .cursor import Cursor
from .round import FileRound, Ingestor

log = structlog.get_logger("agentsrc.workers")

# Start a pool only for a backlog at least this large: spawning costs a second or so.
MIN_BACKLOG_BYTES = 64 << 20


def min_backlog_bytes() -> int:
    """MIN_BACKLOG_BYTES, or $AGENTSRC_WORKER_MIN_BACKLOG (bytes; tests use a small one)."""
    env = os.environ.get("AGENTSRC_WORKER_MIN_BACKLOG", "").strip()
    return int(env) if env.isdigit() else MIN_BACKLOG_BYTES
IN_FLIGHT_PER_WORKER = 3

_worker_ingestor: Ingestor | None = None


def _init_worker(cfg: Config, log_level: str, json_logs: bool | None) -> None:
    global _worker_ingestor
    import signal

    from ..logs import configure

    # A service manager's stop (or Ctrl-C in a terminal) signals the whole process group.
    # The daemon decides when its workers end: it finishes and commits the rounds in their
    # hands, then shuts the pool down. (If the daemon dies, their pipe closes and they exit.)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    from .stages import build_stages

    configure(log_level, json_logs)
    derive, scan, project_root_for, _ = build_stages(cfg)
    _worker_ingestor = Ingestor(
        max_line_bytes=cfg.max_line_bytes,
        derive=derive,
        scan=scan,
        project_root_for=project_root_for,
        defer_big_lines=True,  # the daemon reads those itself once the workers are gone
    )


def _exit_with_parent() -> None:
    """A pool worker holds both ends of its task pipe, so a daemon killed with SIGKILL
    would leave it waiting forever. It watches its parent instead and exits with it."""
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _ingest_round(
    spec: sources.SourceSpec, cursor: Cursor, budget: int
) -> tuple[Batch, FileRound, Cursor]:
    assert _worker_ingestor is not None, "worker not initialised"
    _worker_ingestor.cursors = {spec.path: cursor}
    batch = Batch()
    rnd = _worker_ingestor.ingest(spec, batch, budget)
    prepare(batch)  # hashing and JSON encoding also happen off the daemon's thread
    return batch, rnd, cursor


def worker_count() -> int:
    """Workers to use: $AGENTSRC_WORKERS when set (0 turns them off), else one less than
    the cores (the daemon's own thread needs one), at least 1, at most 4. (On 2 cores a
    second worker was measured a little faster and 30-50 MB heavier: docs/performance.md.)"""
    env = os.environ.get("AGENTSRC_WORKERS", "").strip()
    if env.isdigit():
        return int(env)
    return max(1, min(4, (os.cpu_count() or 2) - 1))


class BackfillPool:
    def __init__(self, cfg: Config, log_level: str = "info", json_logs: bool | None = None):
        self.size = worker_count()
        self._executor = ProcessPoolExecutor(
            max_workers=self.size,
            # spawn, not fork: the daemon has threads (watcher, server) by now.
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(cfg, log_level, json_logs),
        )
        self.in_flight: dict[str, Future[tuple[Batch, FileRound, Cursor]]] = {}
        self.broken = False

    @property
    def has_room(self) -> bool:
        return not self.broken and len(self.in_flight) < self.size * IN_FLIGHT_PER_WORKER

    def submit(self, spec: sources.SourceSpec, cursor: Cursor, budget: int) -> bool:
        if not self.has_room:
            return False
        try:
            self.in_flight[spec.path] = self._executor.submit(
                _ingest_round, spec, cursor, budget
            )
        except (BrokenProcessPool, RuntimeError) as exc:
            self._broke(exc)
            return False
        return True

    def done(self, wait: bool = False) -> list[tuple[str, Batch, FileRound, Cursor] | str]:
        """Finished rounds: (path, batch, round, cursor), or the bare path of a round
        that failed (to be read again in the daemon's own thread)."""
        out: list[tuple[str, Batch, FileRound, Cursor] | str] = []
        for path, fut in list(self.in_flight.items()):
            if not (wait or fut.done()):
                continue
            del self.in_flight[path]
            try:
                batch, rnd, cursor = fut.result()
            except Exception as exc:  # a dead worker: the daemon reads it itself
                self._broke(exc)
                out.append(path)
                continue
            out.append((path, batch, rnd, cursor))
        return out

    def wait_any(self, timeout: float) -> None:
        if self.in_flight:
            wait(list(self.in_flight.values()), timeout=timeout, return_when=FIRST_COMPLETED)

    def _broke(self, exc: BaseException) -> None:
        if not self.broken:
            log.error("backfill_worker_failed", error=type(exc).__name__, detail=str(exc))
        self.broken = True

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
