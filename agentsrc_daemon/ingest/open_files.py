"""The files read last, kept open between their reads.

A live append is one round of one file, and opening, checking and closing the file
were half of that round's system calls (open, fstat, close around the reads; each one
costs microseconds in a sandboxed kernel). A file read again is checked with one stat
of its path: the same (device, inode) as the file kept open means that file is still
the one at the path, and it is read through the descriptor already open. Another
inode at the path (a rename over it), or none, closes the kept one. Bounded: the
``size`` most recently read files (64 descriptors).

A kept descriptor holds its file: a file deleted while kept is closed when its path is
next read (the watcher's event, or the reconcile, queues it), and while it is open its
inode cannot be given to a new file, so the tail-reader's checks of identity see what
they would see with the file opened afresh.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections import OrderedDict

NOT_REGULAR = -1  # the descriptor ``open`` gives for a path that is no regular file


def open_file(path: str) -> tuple[int, os.stat_result]:
    """``path`` opened for reading, and the stat of what was opened (closed again if
    that fails). Raises what ``os.open`` raises (FileNotFoundError: gone)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


class OpenFiles:
    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._files: OrderedDict[str, tuple[int, int, int]] = OrderedDict()  # fd, dev, ino

    def open(self, path: str) -> tuple[int, os.stat_result]:
        """The file at ``path`` open for reading, and its stat; NOT_REGULAR (nothing is
        opened) when the path is no regular file. Raises what ``os.stat`` and
        ``os.open`` raise (FileNotFoundError: gone)."""
        try:
            st = os.stat(path)
        except OSError:
            self.forget(path)
            raise
        if not stat_mod.S_ISREG(st.st_mode):
            self.forget(path)
            return NOT_REGULAR, st
        kept = self._files.get(path)
        if kept is not None:
            fd, dev, ino = kept
            if dev == st.st_dev and ino == st.st_ino:
                self._files.move_to_end(path)
                return fd, st
            self.forget(path)
        fd, st = open_file(path)  # the file opened: the path may have changed since its stat
        if not stat_mod.S_ISREG(st.st_mode):
            os.close(fd)
            return NOT_REGULAR, st
        self._files[path] = (fd, st.st_dev, st.st_ino)
        while len(self._files) > self.size:
            _, (old_fd, _, _) = self._files.popitem(last=False)
            os.close(old_fd)
        return fd, st

    def forget(self, path: str) -> None:
        """Close the path's kept descriptor, if any."""
        kept = self._files.pop(path, None)
        if kept is not None:
            os.close(kept[0])

    def close(self) -> None:
        while self._files:
            _, (fd, _, _) = self._files.popitem()
            os.close(fd)

    def __del__(self) -> None:
        # An ingestor dropped without close() (a test's, a reload's old one handed
        # over before: take_over moves this object itself) leaks no descriptors.
        self.close()

    def __len__(self) -> int:
        return len(self._files)
