"""The ingest loop's steps timed: a live append waits for whatever the loop is doing,
so a step (a commit, a checkpoint, a scan, a garbage collection) over a threshold is
logged as ``slow_step`` with its name and time: that is how its tail latency is traced.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("agentsrc.daemon")

# Steps over this are logged; $AGENTSRC_SLOW_STEP_MS (config.Tuning) overrides it (the
# latency benchmark sets it low).
SLOW_STEP_MS = 250.0


class _Schedstat:
    """A thread's /proc/thread-self/schedstat, opened once and read with pread: a step
    is timed at its start, and the loop runs a dozen steps for each burst of appends
    (opening the file each time cost 10 us a step). Closed with the thread's local
    storage; a forked child opens its own (the pid is checked: its copy of the parent's
    descriptor reads the parent's thread)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        try:
            self.fd: int | None = os.open("/proc/thread-self/schedstat",
                                          os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            self.fd = None  # not Linux: the thread's CPU time alone

    def __del__(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)


_schedstat = threading.local()


def thread_sched_ns() -> tuple[int, int]:
    """The calling thread's time on a core and time waiting in the run queue for one,
    in ns (Linux's /proc/thread-self/schedstat; (thread CPU time, 0) elsewhere). A slow
    step's time less both is time blocked: on the disk, a lock or the GIL."""
    kept: _Schedstat | None = getattr(_schedstat, "file", None)
    if kept is None or kept.pid != os.getpid():
        kept = _schedstat.file = _Schedstat()
    if kept.fd is not None:
        try:
            on_cpu, waiting, _ = os.pread(kept.fd, 256, 0).split()
            return int(on_cpu), int(waiting)
        except (OSError, ValueError):
            pass
    return time.thread_time_ns(), 0


class StepTimer:
    """Logs the loop's steps (and Python's garbage collections) over a threshold: a
    warning once live, where a live append waits for them; at info while catching up,
    where a round of the backfill is long by design. Each says how much of its time
    the thread ran (``cpu_ms``) and waited for a core (``runq_ms``): on a loaded
    machine a slow commit is mostly one or the other, or the disk."""

    def __init__(self, threshold_ms: float | None = None) -> None:
        self.threshold_s = (SLOW_STEP_MS if threshold_ms is None else threshold_ms) / 1000
        self.live = False
        self._gc_at = 0.0

    def _log(self, **fields: Any) -> None:
        (log.warning if self.live else log.info)("slow_step", **fields)

    @contextlib.contextmanager
    def step(self, name: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """Times the block; it may add fields to the dict it is given (known after)."""
        t0 = time.perf_counter()
        cpu0, runq0 = thread_sched_ns()
        try:
            yield fields
        finally:
            took = time.perf_counter() - t0
            if took >= self.threshold_s:
                cpu1, runq1 = thread_sched_ns()
                self._log(step=name, ms=round(took * 1000, 1),
                          cpu_ms=round((cpu1 - cpu0) / 1e6, 1),
                          runq_ms=round((runq1 - runq0) / 1e6, 1), **fields)

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        # gc.callbacks: a collection of the oldest generation walks every object the
        # daemon holds (tens of thousands of cursors in a large home).
        if phase == "start":
            self._gc_at = time.perf_counter()
            return
        took = time.perf_counter() - self._gc_at
        if took >= self.threshold_s:
            self._log(step="gc", ms=round(took * 1000, 1), generation=info.get("generation"),
                      collected=info.get("collected"))


class StartPhases:
    """The wall time of each phase of a start, for the ``started`` log line."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._at = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round((now - self._at) * 1000, 1)
        self._at = now


class StartProfile:
    """cProfile from the start until live, its stats written to a file
    ($AGENTSRC_PROFILE_START, config.Tuning): where a start's time goes, on a large
    store. Does nothing without a file."""

    def __init__(self, to: Path | None) -> None:
        self.to = to
        self._profile: Any = None

    def start(self) -> None:
        if self.to is not None:
            import cProfile

            self._profile = cProfile.Profile()
            self._profile.enable()

    def stop(self) -> None:
        if self._profile is not None:
            self._profile.disable()
            self._profile.dump_stats(str(self.to))
            self._profile = None
