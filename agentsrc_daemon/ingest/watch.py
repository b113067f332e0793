"""The file watcher: watchdog observers on the roots, feeding a coalescing dirty set.

File events only mark a path dirty; the ingest loop decides what to read. Because
inotify drops events under load, the daemon also runs a stat-based reconcile scan (see
daemon.py): the watcher is a latency optimisation, the reconcile is what makes it
correct. In a large home the scan is paced by its cost (minutes apart), so an inotify
queue overflow asks for one at once: watchdog (7 and later) says so only in a log
record, which ``OverflowHook`` listens for; an older watchdog drops it silently and the
paced scan catches up.

What is watched is a list of watch points (config.WatchPoint): a root recursively, or,
for the agents whose home holds large trees we never read, the root's own entries plus
the subdirectories that hold sources. A point that does not exist yet is checked for
on every ``check_roots`` call and watched as soon as it appears. When inotify runs out of watches (ENOSPC) or instances (EMFILE),
that root falls back to a polling observer and a warning names the sysctl to raise.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import structlog
from watchdog.events import (
    DirCreatedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from ..config import WatchPoint

log = structlog.get_logger("agentsrc.watch")

# Only events that can mean new bytes. Opened/closed-without-write events are excluded:
# the daemon's own reads would otherwise wake it up in a loop.
EVENT_FILTER = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirMovedEvent,
]
POLL_INTERVAL_S = 2.0
# Files whose modify was seen and whose close was not yet (see _Handler), at most.
MODIFIED_REMEMBERED = 1024
# watchdog's inotify logger and the start of its record for an IN_Q_OVERFLOW.
INOTIFY_LOGGER = "watchdog.observers.inotify_c"
OVERFLOW_MESSAGE = "Inotify queue overflowed"


class DirtySet:
    """Paths with news, coalesced, plus directories to rescan. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._dirs: set[str] = set()
        self._reconcile = False
        self.wakeup = threading.Event()

    def mark(self, path: str) -> None:
        with self._lock:
            self._paths.add(path)
        self.wakeup.set()

    def mark_dir(self, path: str) -> None:
        with self._lock:
            self._dirs.add(path)
        self.wakeup.set()

    def request_reconcile(self) -> None:
        """Events were lost (an inotify queue overflow): a reconcile scan now."""
        with self._lock:
            self._reconcile = True
        self.wakeup.set()

    def take_reconcile_request(self) -> bool:
        with self._lock:
            asked, self._reconcile = self._reconcile, False
        return asked

    def take(self) -> tuple[set[str], set[str]]:
        with self._lock:
            paths, dirs = self._paths, self._dirs
            self._paths, self._dirs = set(), set()
            self.wakeup.clear()
        return paths, dirs

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._paths or self._dirs)


class OverflowHook(logging.Handler):
    """watchdog's log record of an inotify queue overflow -> a reconcile scan now."""

    def __init__(self, dirty: DirtySet) -> None:
        super().__init__(logging.WARNING)
        self.dirty = dirty

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith(OVERFLOW_MESSAGE):
            self.dirty.request_reconcile()


class _Handler(FileSystemEventHandler):
    """Marks the paths an event may mean news for. A write is told twice: its modify
    (each write() after its bytes are in) and its file's close. A close right after the
    file's modify says nothing the modify did not (and woke the loop for a second round
    of every append); a close alone (bytes written through a mapping, which tells no
    modify) still marks the file. One thread per observer calls it."""

    def __init__(self, dirty: DirtySet) -> None:
        self.dirty = dirty
        # Paths whose last event was a modify (emptied by their close, so it holds the
        # files being written now).
        self._modified: set[str] = set()

    def on_any_event(self, event: FileSystemEvent) -> None:
        src = event.src_path if isinstance(event.src_path, str) else event.src_path.decode()
        if event.is_directory:
            if event.event_type in ("created", "moved"):
                dest = getattr(event, "dest_path", "") or src
                self.dirty.mark_dir(dest if isinstance(dest, str) else dest.decode())
            return
        kind = event.event_type
        if kind == "closed_no_write" or kind == "opened":
            return
        if kind == "modified":
            if len(self._modified) >= MODIFIED_REMEMBERED:
                self._modified.clear()  # a polling observer tells no closes: kept bounded
            self._modified.add(src)
        elif src in self._modified:
            self._modified.discard(src)
            if kind == "closed":
                return  # marked by its modify
        self.dirty.mark(src)
        dest = getattr(event, "dest_path", "")
        if dest:
            self.dirty.mark(dest if isinstance(dest, str) else dest.decode())


class Watcher:
    def __init__(self, roots: Mapping[str, Path] | Iterable[WatchPoint], dirty: DirtySet) -> None:
        """``roots``: agent -> root (each watched recursively), or the watch points."""
        if isinstance(roots, Mapping):
            self.points = [WatchPoint(agent, root) for agent, root in roots.items()]
        else:
            self.points = list(roots)
        self.dirty = dirty
        self.observers: dict[str, BaseObserver] = {}
        self.modes: dict[str, str] = {}  # watch point -> inotify | polling | missing
        self._on_root_appeared: Callable[[Path], None] | None = None

    def start(self, on_root_appeared: Callable[[Path], None] | None = None) -> None:
        self._on_root_appeared = on_root_appeared
        self._overflow = OverflowHook(self.dirty)
        logging.getLogger(INOTIFY_LOGGER).addHandler(self._overflow)
        self.check_roots(initial=True)

    def check_roots(self, *, initial: bool = False) -> list[Path]:
        """Watch points that exist and are not watched yet. Returns the newly watched."""
        appeared: list[Path] = []
        for point in self.points:
            name, root = point.agent, point.path
            key = str(root)
            obs = self.observers.get(key)
            if obs is not None:
                if root.is_dir():
                    continue
                # The root vanished: stop its observer and wait for it to come back.
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
        handler = _Handler(self.dirty)
        obs: BaseObserver = Observer()
        try:
            obs.schedule(handler, key, recursive=recursive, event_filter=EVENT_FILTER)
            obs.start()
            self.modes[key] = "inotify"
        except OSError as exc:
            with contextlib.suppress(Exception):  # best-effort cleanup
                obs.stop()
            if exc.errno in (errno.ENOSPC, errno.EMFILE):
                log.warning(
                    "inotify_limit_reached_polling",
                    agent=name,
                    root=key,
                    fix="sudo sysctl fs.inotify.max_user_watches=524288 "
                    "(and fs.inotify.max_user_instances=1024); persist it in /etc/sysctl.d/",
                )
            else:
                log.warning("watch_failed_polling", agent=name, root=key, error=str(exc))
            obs = PollingObserver(timeout=POLL_INTERVAL_S)
            obs.schedule(handler, key, recursive=recursive)
            obs.start()
            self.modes[key] = "polling"
        self.observers[key] = obs

    def _stop(self, key: str) -> None:
        obs = self.observers.pop(key, None)
        if obs is None:
            return
        try:
            obs.stop()
            obs.join(timeout=2)
        except Exception:  # pragma: no cover
            pass

    def stop(self) -> None:
        for key in list(self.observers):
            self._stop(key)
        hook = getattr(self, "_overflow", None)
        if hook is not None:
            logging.getLogger(INOTIFY_LOGGER).removeHandler(hook)
