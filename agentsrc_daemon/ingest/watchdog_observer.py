"""watchdog's observers, where the roots' own inotify watcher cannot serve: another
system (FSEvents, kqueue) or the polling fallback once inotify's limits are reached.
Imported only then: on Linux the daemon holds none of watchdog (ingest/tree_watch.py).

watchdog (7 and later) tells an inotify queue overflow only in a log record, which
``OverflowHook`` listens for; an older watchdog drops it silently and the paced
reconcile catches up."""

from __future__ import annotations

import contextlib
import logging

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

from .dirty import DirtySet, WriteNotices

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
# watchdog's inotify logger and the start of its record for an IN_Q_OVERFLOW.
INOTIFY_LOGGER = "watchdog.observers.inotify_c"
OVERFLOW_MESSAGE = "Inotify queue overflowed"


class OverflowHook(logging.Handler):
    """watchdog's log record of an inotify queue overflow -> a reconcile scan now."""

    def __init__(self, dirty: DirtySet) -> None:
        super().__init__(logging.WARNING)
        self.dirty = dirty

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith(OVERFLOW_MESSAGE):
            self.dirty.request_reconcile()


class _Handler(FileSystemEventHandler):
    """Marks the paths an event may mean news for (a write's notices by the rule of
    dirty.WriteNotices). One thread per observer calls it."""

    def __init__(self, dirty: DirtySet) -> None:
        self.dirty = dirty
        self._writes = WriteNotices()

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
        if not self._writes.marks(src, modified=kind == "modified", closed=kind == "closed"):
            return
        self.dirty.mark(src)
        dest = getattr(event, "dest_path", "")
        if dest:
            self.dirty.mark(dest if isinstance(dest, str) else dest.decode())


def start(dirty: DirtySet, root: str, recursive: bool, *, polling: bool,
          interval_s: float) -> BaseObserver:
    """An observer of ``root`` started: the system's own, or one that polls every
    ``interval_s`` (OSError: the system's refused the root)."""
    handler = _Handler(dirty)
    obs: BaseObserver = PollingObserver(timeout=interval_s) if polling else Observer()
    try:
        if polling:
            obs.schedule(handler, root, recursive=recursive)
        else:
            obs.schedule(handler, root, recursive=recursive, event_filter=EVENT_FILTER)
        obs.start()
    except OSError:
        with contextlib.suppress(Exception):  # best-effort cleanup
            obs.stop()
        raise
    return obs


def overflow_hook(dirty: DirtySet) -> OverflowHook:
    hook = OverflowHook(dirty)
    logging.getLogger(INOTIFY_LOGGER).addHandler(hook)
    return hook


def remove_overflow_hook(hook: logging.Handler) -> None:
    logging.getLogger(INOTIFY_LOGGER).removeHandler(hook)
