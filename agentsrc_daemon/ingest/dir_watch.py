"""Watching the project folders that hold an agent's files (ingest/project_scan.py),
one directory each, never their trees.

watchdog gives every watched path an inotify instance and a thread of its own, and
Linux allows 128 instances per user by default: a few hundred projects would run out.
Here one inotify instance (through libc, ``ctypes``) holds a non-recursive watch per
directory, read by one thread, which marks dirty only the files that matter
(``WATCHED_NAMES``: a project's Aider histories, Crush's database and its ``-wal``):
edits to the project's own files in the same folder wake nothing. A watched folder that
goes away marks its files dirty, so their sessions are marked gone. An inotify queue
overflow asks for a reconcile scan, as the roots' watcher does.

Where inotify is not there (not Linux) or refuses (no instance or watch left), the
found files are stat'ed instead on every ``poll`` (the loop's root check: every 2 s while polling):
``mode`` says which.
"""

from __future__ import annotations

import errno
import os
import select
import threading
from collections.abc import Iterable

import structlog

from . import inotify, sources
from .dirty import DirtySet
from .inotify import GONE, IN_Q_OVERFLOW

log = structlog.get_logger("agentsrc.watch")

# The files whose changes matter, by name (a companion's change wakes its source).
WATCHED_NAMES = frozenset({
    os.path.basename(sources.AIDER_CHAT),
    *(name for names in sources.COMPANIONS.values() for name in names.values()),
    "crush.db", "crush.db-wal",
})


class DirWatch:
    """The directories of the found project files, watched one by one."""

    def __init__(self, dirty: DirtySet) -> None:
        self.dirty = dirty
        self.mode = "off"  # inotify | polling | off (nothing to watch yet)
        self._lock = threading.Lock()
        self._wd: dict[str, int] = {}  # directory -> watch descriptor
        self._dirs: dict[int, str] = {}
        self._files: set[str] = set()  # the found files (polled without inotify)
        self._stats: dict[str, tuple[int, int, int]] = {}
        self._fd: int | None = None
        self._libc = inotify.libc()
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None

    # -- what is watched

    def set_files(self, files: Iterable[str]) -> None:
        """Watch the directories of these files (and only them) from now on."""
        files = set(files)
        dirs = {os.path.dirname(f) for f in files}
        with self._lock:
            self._files = files
            for path in [d for d in self._wd if d not in dirs]:
                self._remove(path)
        if not dirs:
            return
        if self._fd is None and self.mode != "polling":
            self._start()
        if self._fd is None:
            self.mode = "polling"
            return
        for d in sorted(dirs - set(self._wd)):
            self._add(d)

    def _start(self) -> None:
        if self._libc is None:
            return
        try:
            fd = inotify.init(self._libc)
        except OSError as exc:
            log.warning("project_watch_polling", error=exc.strerror,
                        fix="sudo sysctl fs.inotify.max_user_instances=1024")
            return
        self._fd = fd
        self.mode = "inotify"
        self._thread = threading.Thread(target=self._read_loop, name="agentsrc-projects",
                                        daemon=True)
        self._thread.start()

    def _add(self, directory: str) -> None:
        assert self._fd is not None and self._libc is not None
        try:
            wd = inotify.add_watch(self._libc, self._fd, directory)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EMFILE):
                log.warning("project_watch_polling", directory=directory, error=exc.strerror,
                            fix="sudo sysctl fs.inotify.max_user_watches=524288")
                self.mode = "polling"
            return  # gone already (ENOENT): the next scan drops it
        with self._lock:
            self._wd[directory] = wd
            self._dirs[wd] = directory

    def _remove(self, directory: str) -> None:
        wd = self._wd.pop(directory, None)
        if wd is None:
            return
        self._dirs.pop(wd, None)
        if self._fd is not None and self._libc is not None:
            self._libc.inotify_rm_watch(self._fd, wd)

    # -- events

    def _read_loop(self) -> None:
        fd = self._fd
        assert fd is not None
        while True:
            ready, _, _ = select.select([fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            try:
                data = os.read(fd, 64 * 1024)
            except BlockingIOError:
                continue
            except OSError:
                return
            self._events(data)

    def _events(self, data: bytes) -> None:
        for wd, mask, base in inotify.events(data):
            if mask & IN_Q_OVERFLOW:
                self.dirty.request_reconcile()
                continue
            with self._lock:
                directory = self._dirs.get(wd)
                files = [f for f in self._files if os.path.dirname(f) == directory] if (
                    directory is not None and mask & GONE) else []
            if directory is None:
                continue
            if mask & GONE:
                for f in files:  # the folder went away: its files are gone
                    self.dirty.mark(f)
                continue
            if base in WATCHED_NAMES:
                self.dirty.mark(os.path.join(directory, base))

    # -- without inotify

    def poll(self) -> None:
        """Stat the found files (polling mode only): changed ones are marked dirty."""
        if self.mode != "polling":
            return
        with self._lock:
            files = list(self._files)
        for f in files:
            paths = [f, f + "-wal"] if f.endswith("crush.db") else [f]
            for path in paths:
                try:
                    st = os.stat(path)
                    sig = (st.st_ino, st.st_size, st.st_mtime_ns)
                except OSError:
                    sig = (0, -1, 0)
                if self._stats.get(path) != sig:
                    if path in self._stats:
                        self.dirty.mark(path)
                    self._stats[path] = sig

    def watched(self) -> int:
        with self._lock:
            return len(self._wd) if self.mode == "inotify" else len(self._files)

    def stop(self) -> None:
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        os.close(self._stop_r)
        os.close(self._stop_w)
