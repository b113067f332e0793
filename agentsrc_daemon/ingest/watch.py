"""The file watcher: the roots' trees watched, feeding a coalescing dirty set
(ingest/dirty.py).

File events only mark a path dirty; the ingest loop decides what to read. Because
inotify drops events under load, the daemon also runs a stat-based reconcile scan (see
daemon.py): the watcher is a latency optimisation, the reconcile is what makes it
correct. In a large home the scan is paced by its cost (minutes apart), so an inotify
queue overflow asks for one at once.

On Linux every root is watched on one inotify instance of the daemon's own
(ingest/tree_watch.py); elsewhere, and for a root inotify's limits refuse, by watchdog's
observers (ingest/watchdog_observer.py: the system's own, or polling), imported only
then. When inotify runs out of watches (ENOSPC) or instances (EMFILE), that root falls
back to a polling observer and a warning names the sysctl to raise.

What is watched is a list of watch points (config.WatchPoint): a root recursively, or,
for the agents whose home holds large trees we never read, the root's own entries plus
the subdirectories that hold sources. A point that does not exist yet is checked for
on every ``check_roots`` call and watched as soon as it appears.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import structlog

from ..config import WatchPoint
from . import inotify
from .dirty import DirtySet
from .tree_watch import InotifyTree

__all__ = ["POLL_INTERVAL_S", "DirtySet", "Watcher"]

log = structlog.get_logger("agentsrc.watch")

POLL_INTERVAL_S = 2.0


class Watcher:
    def __init__(self, roots: Mapping[str, Path] | Iterable[WatchPoint], dirty: DirtySet) -> None:
        """``roots``: agent -> root (each watched recursively), or the watch points."""
        if isinstance(roots, Mapping):
            self.points = [WatchPoint(agent, root) for agent, root in roots.items()]
        else:
            self.points = list(roots)
        self.dirty = dirty
        self.tree: InotifyTree | None = None  # the roots inotify watches (Linux)
        self.observers: dict[str, Any] = {}  # root -> watchdog's observer (the others)
        self.modes: dict[str, str] = {}  # watch point -> inotify | polling | missing
        self._on_root_appeared: Callable[[Path], None] | None = None
        self._overflow: logging.Handler | None = None

    def start(self, on_root_appeared: Callable[[Path], None] | None = None) -> None:
        self._on_root_appeared = on_root_appeared
        if inotify.libc() is not None:
            try:
                self.tree = InotifyTree(self.dirty)
            except OSError as exc:  # no instance left: watchdog's observers, polling
                log.warning("inotify_unavailable", error=exc.strerror, fix=inotify.FIX)
        self.check_roots(initial=True)

    def watching(self, key: str) -> bool:
        return self.modes.get(key) in ("inotify", "polling")

    def check_roots(self, *, initial: bool = False) -> list[Path]:
        """Watch points that exist and are not watched yet. Returns the newly watched."""
        appeared: list[Path] = []
        for point in self.points:
            name, root = point.agent, point.path
            key = str(root)
            if self.watching(key):
                if root.is_dir():
                    continue
                # The root vanished: stop watching it and wait for it to come back.
                self._stop(key)
            if not root.is_dir():
                if self.modes.get(key) != "missing":
                    # At start the daemon's "started" line names the missing roots.
                    (log.debug if initial else log.info)("root_missing", agent=name, root=key)
                self.modes[key] = "missing"
                continue
            self._watch(name, root, point.recursive)
            if not initial:
                log.info("root_appeared", agent=name, root=key)
                appeared.append(root)
                if self._on_root_appeared:
                    self._on_root_appeared(root)
        return appeared

    def _watch(self, name: str, root: Path, recursive: bool = True) -> None:
        key = str(root)
        if self.tree is not None:
            try:
                self.tree.add(key, recursive)
                self.modes[key] = "inotify"
                return
            except OSError as exc:
                self._refused(name, key, exc)
                self._observe(key, recursive, polling=True)
                return
        try:
            self._observe(key, recursive, polling=False)  # the system's own (not Linux)
        except OSError as exc:
            self._refused(name, key, exc)
            self._observe(key, recursive, polling=True)

    def _refused(self, name: str, key: str, exc: OSError) -> None:
        if exc.errno in inotify.LIMITS:
            log.warning("inotify_limit_reached_polling", agent=name, root=key, fix=inotify.FIX)
        else:
            log.warning("watch_failed_polling", agent=name, root=key, error=str(exc))

    def _observe(self, key: str, recursive: bool, *, polling: bool) -> None:
        from . import watchdog_observer  # watchdog, only where it serves

        if self._overflow is None:
            self._overflow = watchdog_observer.overflow_hook(self.dirty)
        self.observers[key] = watchdog_observer.start(
            self.dirty, key, recursive, polling=polling, interval_s=POLL_INTERVAL_S)
        self.modes[key] = "polling" if polling else "inotify"

    def _stop(self, key: str) -> None:
        self.modes.pop(key, None)
        obs = self.observers.pop(key, None)
        if obs is None:
            if self.tree is not None:
                self.tree.remove(key)
            return
        try:
            obs.stop()
            obs.join(timeout=2)
        except Exception:  # pragma: no cover
            pass

    def stop(self) -> None:
        for key in list(self.modes):
            self._stop(key)
        if self.tree is not None:
            self.tree.stop()
            self.tree = None
        if self._overflow is not None:
            from . import watchdog_observer

            watchdog_observer.remove_overflow_hook(self._overflow)
            self._overflow = None
