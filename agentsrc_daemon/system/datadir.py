"""The data directory: private to its owner, and held by one daemon at a time (an
exclusive lock on a file in it, with the holder's pid for the message another start
prints)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import AlreadyRunning, NotPrivate


def ensure_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_uid != os.getuid():
        raise NotPrivate(f"{path} belongs to another user")
    os.chmod(path, 0o700)


def acquire_lock(data_dir: Path, lock_path: Path) -> int:
    """The data directory's lock, held for the daemon's life by the returned fd."""
    ensure_private_dir(data_dir)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        raise AlreadyRunning(
            f"another agentsrc daemon (pid {other or '?'}) is running on {data_dir}"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd
