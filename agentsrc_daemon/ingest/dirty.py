"""The coalescing dirty set the watchers fill and the ingest loop takes: paths with
news, directories to scan, a reconcile asked for, and the event that wakes the loop."""

from __future__ import annotations

import threading


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
