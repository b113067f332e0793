"""Memory the daemon freed handed back to the OS once a backfill is over.

A backfill leaves the heap full of holes: batches of thousands of events, a 50 MB
line, the worker's results unpickled. Python and SQLite free it, but glibc's malloc
keeps the freed pages of its heap and of each thread's arena for reuse, so the live
daemon's RSS stays near the backfill's peak. ``malloc_trim(0)`` gives back every whole
free page, in the main heap and in every arena. It is glibc's own function, reached
through ctypes from the C library already loaded; elsewhere (macOS, musl) there is
nothing to call and this is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import structlog

log = structlog.get_logger("agentsrc.daemon")


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def release_freed_memory() -> bool:
    """Collect garbage, then hand the freed heap pages back to the OS. Returns whether
    the C library could be asked (glibc)."""
    gc.collect()
    return trim_heap()


def trim_heap() -> bool:
    """The heap's whole free pages handed back to the OS (``malloc_trim(0)``), without
    a collection first. Returns whether the C library could be asked (glibc)."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None) if libc is not None else None
    if trim is None:
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True


# How often a backfill hands its freed heap back (HeapTrimmer): a trim of the daemon's
# heap costs about a millisecond.
TRIM_EVERY_S = 0.5


class HeapTrimmer:
    """``trim_heap`` at most every ``every_s``, for a backfill's loop to call after each
    piece of work. A backfill frees as much as it allocates (batches committed, rounds
    unpickled, a worker's pieces sent), in sizes that leave whole free pages scattered
    through the heap, which glibc keeps: the daemon sat 10 MB above what it held while
    its worker ran beside it, and the two together made the backfill's peak."""

    def __init__(
        self,
        every_s: float = TRIM_EVERY_S,
        trim: Callable[[], object] = trim_heap,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s = every_s
        self.trim = trim
        self.clock = clock
        self._last = clock()

    def maybe(self) -> bool:
        """Trim if the last trim is ``every_s`` old; whether it did."""
        now = self.clock()
        if now - self._last < self.every_s:
            return False
        self._last = now
        self.trim()
        return True


def freeze_heap() -> None:  # after release_freed_memory, which collected
    """Once live, what the daemon holds (its modules, the cursors of every file, the
    stages' tables) moves to the collector's permanent generation: Python's collection
    of its oldest generation walks every tracked object, and with the start-up's heap in
    it a collection took over 100 ms on the ingest thread, a wait for the live appends
    behind it. Frozen objects are still freed when their last reference goes; only a
    cycle among them would stay."""
    gc.freeze()


# mallopt's parameter for the number of arenas (glibc's malloc.h).
_M_ARENA_MAX = -8
ARENAS = 2


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most ``arenas`` malloc arenas. glibc gives each new thread an arena of its own
    (up to eight per core): the server's thread per connection, each with its SQLite
    connection, leaves freed pages scattered over arenas the main thread never reuses.
    Called at start, before those threads exist. Returns whether glibc was asked."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))


def rss_bytes() -> int | None:
    """This process's resident set size (Linux), for the log line after a release."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


def release_after_backfill(store: Any, freeze: bool) -> None:
    """What the backfill freed goes back to the OS, so the live daemon's RSS is its
    working set, not the backfill's peak: the store's page cache shrunk (``store`` is
    the writer, a store.Store), the heap's free pages handed back and, once live
    (``freeze``), the heap frozen."""
    store.shrink_cache()
    release_freed_memory()
    if freeze:
        freeze_heap()
    log.info("memory_released", rss=rss_bytes())
