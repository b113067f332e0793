"""The coalescing dirty set the watchers fill and the ingest loop takes: paths with
news, directories to scan, a reconcile asked for, and the event that wakes the loop;
and the rule both watchers (ingest/tree_watch.py, ingest/watchdog_observer.py) apply to
a file's write notices (``WriteNotices``)."""

from __future__ import annotations

import threading

# Files whose modify was seen and whose close was not yet, at most (WriteNotices).
MODIFIED_REMEMBERED = 1024


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


class WriteNotices:
    """Which notices of a file's writes mark it. A write is told twice: its modify
    (each write() after its bytes are in) and its file's close. A close right after the
    file's modify says nothing the modify did not (and would wake the loop for a second
    round of every append); a close alone (bytes written through a mapping tell no
    modify) still marks the file, as does any other notice. Used by one watcher thread."""

    def __init__(self) -> None:
        # Paths whose last notice was a modify (emptied by their close, so it holds the
        # files being written now; a polling observer tells no closes: kept bounded).
        self._modified: set[str] = set()

    def marks(self, path: str, *, modified: bool, closed: bool) -> bool:
        """Whether this notice about ``path`` marks it dirty."""
        if modified:
            if len(self._modified) >= MODIFIED_REMEMBERED:
                self._modified.clear()
            self._modified.add(path)
            return True
        if path in self._modified:
            self._modified.discard(path)
            return not closed  # a close: marked by its modify
        return True
