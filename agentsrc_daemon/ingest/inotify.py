"""Linux's inotify through libc (``ctypes``): the flags, the instance, and the events
read from it. Shared by the roots' watcher (ingest/tree_watch.py) and the project
folders' (ingest/dir_watch.py); no threads or policy here."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from collections.abc import Iterator

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_CLOEXEC = 0o2000000
IN_NONBLOCK = 0o4000
# What a watched directory tells: its entries written, closed after a write, made,
# removed, moved in or out, and itself removed or moved.
MASK = (IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
# The kernel's limits: no watch (max_user_watches) or no instance (max_user_instances) left.
LIMITS = (errno.ENOSPC, errno.EMFILE)
FIX = ("sudo sysctl fs.inotify.max_user_watches=524288 (and fs.inotify.max_user_instances=1024);"
       " persist it in /etc/sysctl.d/")
_EVENT = struct.Struct("iIII")


def libc() -> ctypes.CDLL | None:
    """libc with inotify (None: not Linux)."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.inotify_init1  # noqa: B018 - present on Linux only
    except (OSError, AttributeError):
        return None
    return lib


def init(lib: ctypes.CDLL) -> int:
    """A new non-blocking instance's descriptor; OSError with the kernel's errno."""
    fd = int(lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def add_watch(lib: ctypes.CDLL, fd: int, directory: str, *, follow: bool = False) -> int:
    """The directory's watch descriptor; OSError with the kernel's errno (ENOENT: gone
    already, ENOTDIR: not a directory, ENOSPC: no watch left). ``follow``: a symbolic
    link to a directory is watched as that directory (a root kept among one's dotfiles);
    below a root links are never followed."""
    mask = MASK & ~IN_DONT_FOLLOW if follow else MASK
    wd = int(lib.inotify_add_watch(fd, os.fsencode(directory), mask))
    if wd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), directory)
    return wd


def events(data: bytes) -> Iterator[tuple[int, int, str]]:
    """The (watch descriptor, mask, name) of each event in what one read returned."""
    at = 0
    while at + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, at)
        name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
        at += _EVENT.size + length
        yield wd, mask, os.fsdecode(name)
