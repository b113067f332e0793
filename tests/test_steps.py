"""The loop's step timer reads each thread's own schedstat through a descriptor kept
open (ingest/steps.py): the same figures as the file read afresh, per thread."""

from __future__ import annotations

import os
import threading
import time

import pytest

from agentsrc_daemon.ingest import steps

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/thread-self/schedstat"), reason="Linux's schedstat"
)


def read_afresh() -> tuple[int, int]:
    with open("/proc/thread-self/schedstat", "rb") as fh:
        on_cpu, waiting, _ = fh.read().split()
    return int(on_cpu), int(waiting)


def burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_kept_descriptor_reads_what_the_file_says_now() -> None:
    first = steps.thread_sched_ns()
    burn(0.05)
    kept, fresh = steps.thread_sched_ns(), read_afresh()
    assert kept[0] - first[0] >= 45_000_000  # 50 ms on a core, seen through the kept file
    assert 0 <= fresh[0] - kept[0] < 5_000_000  # read just after: the same clock
    assert fresh[1] >= kept[1] >= first[1]


def test_each_thread_reads_its_own() -> None:
    main_before = steps.thread_sched_ns()
    got: dict[str, tuple[int, int]] = {}

    def sleeper() -> None:
        a = steps.thread_sched_ns()
        time.sleep(0.1)
        b = steps.thread_sched_ns()
        got["sleeper"] = (b[0] - a[0], read_afresh()[0] - b[0])

    t = threading.Thread(target=sleeper)
    t.start()
    burn(0.1)
    t.join()
    main_used = steps.thread_sched_ns()[0] - main_before[0]
    slept_cpu, after = got["sleeper"]
    assert main_used >= 90_000_000
    assert slept_cpu < 20_000_000  # the sleeping thread's own time, not the busy one's
    assert 0 <= after < 5_000_000
