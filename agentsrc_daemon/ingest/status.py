"""What ``status`` says: the daemon's state and its figures, assembled for the server's
threads from plain values the ingest thread keeps (the backlog, the progress, the queue's
reconcile stats, the store's refused writes) and from the store's own counts.

``state`` is "migrating" while a chunked schema migration runs (only status answers
then), "catching_up" until the first catch-up is over and whenever files wait,
"indexing" while the work a backfill deferred still runs (the search index's build over
what it stored, a large merge debt, a re-price: answers may be slower then, and status
says so rather than "live"), then "live".
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import __version__
from ..config import Config
from ..errors import RpcError
from ..rpc.transport import Handler, Hub
from ..states import CATCHING_UP, INDEXING, LIVE, indexing_text
from ..store import Reader
from ..store import sink as sink_store
from .committer import StoreErrors
from .progress import Backlog, Progress
from .queue import SourceQueue

# While a schema migration runs, a query waits this long for it, then is told to retry.
MIGRATION_WAIT_S = 10.0
MIGRATING = -32001  # the error code of a query that came during a migration


def root_watch(modes: dict[str, str], root: str) -> str | None:
    """How a root is watched: its own watch point's mode, else (a root whose
    subdirectories alone are watched: Cursor's, Cline's, an editor extension's,
    Continue's) its subdirectories' (inotify or polling when one of them is, else
    missing). None until the watcher has looked at it (during start-up)."""
    if root in modes:
        return modes[root]
    below = [mode for path, mode in modes.items() if path.startswith(root + "/")]
    for mode in ("inotify", "polling", "missing"):
        if mode in below:
            return mode
    return None


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class StatusBoard:
    """The status answer. The ingest thread sets ``live`` and ``migration``; the
    daemon's start sets ``watch_modes``, ``scan`` and ``sink`` once they exist."""

    def __init__(
        self,
        cfg: Config,
        progress: Progress,
        backlog: Backlog,
        queue: SourceQueue,
        errors: StoreErrors,
        hub: Hub,
        working: Callable[[], bool],
        deferred: Callable[[], dict[str, Any] | None] = lambda: None,
    ) -> None:
        self.cfg = cfg
        self.progress = progress
        self.backlog = backlog
        self.queue = queue
        self.errors = errors
        self.hub = hub
        self.working = working  # files queued or a batch carried
        self.deferred = deferred  # the deferred work still owed (Committer.deferred_work)
        self.started_at = time.time()
        self.live = False  # the first catch-up is over
        # A chunked schema migration in progress: {name, done, total}.
        self.migration: dict[str, Any] | None = None
        self.store_ready = threading.Event()  # queries other than status wait for it
        self.watch_modes: Callable[[], dict[str, str]] = dict
        self.scan: dict[str, Any] = {"enabled": False}
        self.sink: Any = None  # sink.pusher.Pusher
        # The prices in use: the table's source and the fingerprint (daemon.py).
        self.prices: dict[str, Any] | None = None
        # The project files found and the folders searched (ingest/project_scan.py).
        self.projects: Callable[[], dict[str, Any]] = dict

    def gated(self, handler: Handler) -> Handler:
        """A query that comes while the schema migrates waits for it (a while), then is
        told to retry: the store it would read is not the one its SQL is written for."""

        def gated(reader: Reader, params: dict[str, Any]) -> Any:
            if not self.store_ready.wait(MIGRATION_WAIT_S):
                m = self.migration or {}
                raise RpcError(
                    MIGRATING,
                    f"the store is being migrated ({m.get('name')}: "
                    f"{m.get('done', 0)}/{m.get('total', 0)} events); try again",
                )
            return handler(reader, params)

        return gated

    def caught_up(self) -> bool:
        """The first catch-up is over and no file waits (live or indexing)."""
        return self.live and not self.working()

    def state(self) -> str:
        if not self.caught_up():
            return CATCHING_UP
        return LIVE if self.deferred() is None else INDEXING

    def line(self) -> str:
        """The one line the service manager shows (sd_notify STATUS=)."""
        p = self.progress
        state = self.state()
        if state == LIVE:
            return f"live: {p.files_done} files ingested"
        if state == INDEXING:
            return f"indexing: {indexing_text(self.deferred() or {})}"
        return (
            f"catching up: {p.files_done}/{p.files_total} files, "
            f"{p.bytes_done // (1 << 20)}/{p.bytes_total // (1 << 20)} MiB"
        )

    def report(self, reader: Reader) -> dict[str, Any]:
        if not self.store_ready.is_set():  # only while a chunked migration runs
            return self._migrating()
        watch_modes = self.watch_modes()
        # The refused writes before the state: a refused commit's files are queued
        # again before it is counted, so a count seen here comes with them waiting.
        errors = self.errors.as_dict()
        # The state before the counts: "live" means every commit is done, so the counts
        # read after it include them (read the other way round, a status taken during
        # the last commit said live with the counts of before it: 19,851 of 20,000 files).
        state = self.state()
        deferred = self.deferred() if state == INDEXING else None
        counts = reader.counts()
        pending_bytes, pending_files = self.backlog.value
        return {
            "state": state,
            # While indexing: what is owed (search_build_left event ids, merge pages,
            # whether a re-price runs; its progress is "reprice"), else None.
            "indexing": deferred,
            "version": __version__,
            "pid": os.getpid(),
            "started_at": _iso(self.started_at),
            "files": counts["files"],
            "files_gone": counts["files_gone"],
            "sessions": counts["sessions"],
            "events": counts["events"],
            "pending_bytes": pending_bytes,
            "pending_files": pending_files,
            "progress": self.progress.as_dict(pending_bytes),
            "skipped": reader.skipped_totals(),
            "drift": reader.drift(),
            # Per adapter and agent version: what became of the records read, the share
            # not understood (the ``fidelity`` method has them per record type).
            "fidelity": reader.fidelity_summary(),
            "subscribers": self.hub.count(),
            "roots": {
                agent: {"path": str(path), "watch": root_watch(watch_modes, str(path))}
                for agent, path in self.cfg.roots().items()
            },
            "projects": self.projects(),
            "data_dir": str(self.cfg.data_dir),
            "socket": str(self.cfg.socket_path),
            "scan": self.scan,
            "search_index": reader.search_progress(),
            "prices": self.prices,
            # The stored costs priced again after the prices changed: {done, total,
            # fraction} while it runs, else null.
            "reprice": reader.reprice_progress(),
            "store_errors": errors,
            "reconcile": self.queue.stats.as_dict(),
            "sink": self._sink(reader),
        }

    def _migrating(self) -> dict[str, Any]:
        m = self.migration or {"name": None, "done": 0, "total": 0}
        return {
            "state": "migrating",
            "version": __version__,
            "pid": os.getpid(),
            "started_at": _iso(self.started_at),
            "migration": {
                **m,
                "fraction": round(m["done"] / m["total"], 4) if m["total"] else 0.0,
            },
            "data_dir": str(self.cfg.data_dir),
            "socket": str(self.cfg.socket_path),
        }

    def _sink(self, reader: Reader) -> dict[str, Any]:
        sink = self.sink
        if sink is None:
            return {"enabled": False}
        return dict(sink.status(sink_store.lag(reader.conn, sink.events_upto)))
