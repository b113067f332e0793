"""The roots' directory trees watched on one inotify instance, read by one thread (Linux).

watchdog gives every watched root an instance and four threads of its own and keeps
about 770 bytes of bookkeeping per directory (4.5 MB for the 5,877 directories of a
large home, measured with tracemalloc); here a directory costs two dict entries and the
daemon one thread. What an event means is the watcher's policy (ingest/watch.py):

* a file written: its modify marks it; its close right after marks nothing (the modify
  did), a close alone does (bytes written through a mapping tell no modify);
* a file made, removed or moved in or out: marked;
* a directory made or moved in: watched (with its own subdirectories, in a recursive
  root) before it is marked for a scan, so a file made in it meanwhile is either seen by
  the scan or told by an event;
* a directory moved out or removed: its watches dropped;
* the kernel's queue overflowed: a reconcile scan asked for.

``add`` raises the kernel's OSError when a root cannot be watched (ENOSPC, EMFILE: the
limits, whose root the watcher then polls)."""

from __future__ import annotations

import os
import select
import threading

import structlog

from . import inotify
from .dirty import DirtySet, WriteNotices
from .inotify import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_IGNORED,
    IN_ISDIR,
    IN_MODIFY,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
)

log = structlog.get_logger("agentsrc.watch")

READ_BYTES = 64 * 1024


class InotifyTree:
    """Watched directories: a recursive root's whole tree, a plain root's own entries."""

    def __init__(self, dirty: DirtySet) -> None:
        lib = inotify.libc()
        if lib is None:
            raise OSError("inotify is Linux's")
        self.dirty = dirty
        self._lib = lib
        self._fd = inotify.init(lib)
        self._lock = threading.Lock()
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory
        self._wds: dict[str, int] = {}  # directory -> watch descriptor
        self._recursive: dict[str, bool] = {}  # root -> its subdirectories watched too
        self._writes = WriteNotices()
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._read_loop, name="agentsrc-watch",
                                        daemon=True)
        self._thread.start()

    # ---- what is watched -----------------------------------------------------------

    def add(self, root: str, recursive: bool) -> None:
        """Watch ``root`` (and, ``recursive``, every directory under it). On the kernel's
        refusal the root's watches added so far are dropped and its OSError raised."""
        with self._lock:
            self._recursive[root] = recursive
        try:
            self._watch(root, follow=True)  # the root may be a link to its directory
            if recursive:
                self._watch_below(root)
        except OSError:
            self.remove(root)
            raise

    def remove(self, root: str) -> None:
        """Stop watching ``root`` and what under it was watched for it."""
        with self._lock:
            recursive = self._recursive.pop(root, False)
        self._drop(root, below=recursive)

    def watched(self) -> int:
        with self._lock:
            return len(self._wds)

    def _watch(self, directory: str, *, follow: bool = False) -> None:
        wd = inotify.add_watch(self._lib, self._fd, directory, follow=follow)
        with self._lock:
            old = self._dirs.get(wd)
            if old is not None and old != directory:
                self._wds.pop(old, None)  # the same directory under its new name
            self._dirs[wd] = directory
            self._wds[directory] = wd

    def _watch_below(self, top: str) -> None:
        """Every directory under ``top`` (symbolic links not followed); one gone
        meanwhile is skipped, the kernel's limits raise."""
        for parent, subdirs, _files in os.walk(top):
            for name in subdirs:
                try:
                    self._watch(os.path.join(parent, name))
                except OSError as exc:
                    if exc.errno in inotify.LIMITS:
                        raise

    def _drop(self, top: str, *, below: bool) -> None:
        prefix = top + os.sep
        with self._lock:
            gone = [d for d in self._wds if d == top or (below and d.startswith(prefix))]
            wds = [self._wds.pop(d) for d in gone]
            for wd in wds:
                self._dirs.pop(wd, None)
        for wd in wds:
            self._lib.inotify_rm_watch(self._fd, wd)  # already gone: EINVAL, ignored

    def _in_recursive_root(self, directory: str) -> bool:
        with self._lock:
            return any(recursive and (directory == root or directory.startswith(root + os.sep))
                       for root, recursive in self._recursive.items())

    # ---- events --------------------------------------------------------------------

    def _read_loop(self) -> None:
        while True:
            ready, _, _ = select.select([self._fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            try:
                data = os.read(self._fd, READ_BYTES)
            except BlockingIOError:
                continue
            except OSError:
                return
            try:
                self._events(data)
            except Exception as exc:  # noqa: BLE001 - the reconcile makes up for it
                log.warning("watch_event_failed", error=type(exc).__name__)
                self.dirty.request_reconcile()

    def _events(self, data: bytes) -> None:
        for wd, mask, name in inotify.events(data):
            if mask & IN_Q_OVERFLOW:
                log.warning("inotify_overflow")
                self.dirty.request_reconcile()
                continue
            with self._lock:
                directory = self._dirs.get(wd)
            if directory is None:
                continue
            if mask & IN_IGNORED:  # the watch is gone (its directory removed)
                with self._lock:
                    if self._dirs.get(wd) == directory:
                        del self._dirs[wd]
                        self._wds.pop(directory, None)
                continue
            if mask & IN_MOVE_SELF:
                continue  # its old parent tells the move (IN_MOVED_FROM), and drops it
            if not name:
                continue  # about the directory itself (deleted: IN_IGNORED follows)
            path = os.path.join(directory, name)
            if mask & IN_ISDIR:
                self._directory_event(directory, path, mask)
            else:
                self._file_event(path, mask)

    def _directory_event(self, parent: str, path: str, mask: int) -> None:
        if mask & IN_MOVED_FROM:
            self._drop(path, below=True)  # its watches name it by its old path
            return
        if mask & (IN_CREATE | IN_MOVED_TO) and self._in_recursive_root(parent):
            try:
                self._watch(path)
                self._watch_below(path)
            except OSError as exc:
                if exc.errno in inotify.LIMITS:
                    log.warning("inotify_limit_reached", error=exc.strerror, fix=inotify.FIX)
                    self.dirty.request_reconcile()  # what it holds is found by the scans
        if mask & (IN_CREATE | IN_MOVED_TO):
            self.dirty.mark_dir(path)  # scanned once watched: nothing made meanwhile is missed

    def _file_event(self, path: str, mask: int) -> None:
        if self._writes.marks(path, modified=bool(mask & IN_MODIFY),
                              closed=bool(mask & IN_CLOSE_WRITE)):
            self.dirty.mark(path)

    def stop(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(timeout=2)
        os.close(self._fd)
        os.close(self._stop_r)
        os.close(self._stop_w)
