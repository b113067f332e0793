"""A large home stays idle: the reconcile scan is paced by its cost, and an inotify
queue overflow (real: the daemon is stopped while more events than the kernel queues
happen) asks for a scan at once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import orjson
import pytest

from harness import DaemonFactory, wait_for

QUEUED_EVENTS = Path("/proc/sys/fs/inotify/max_queued_events")


def write_sessions(home: Path, n: int) -> Path:
    proj = home / ".claude" / "projects" / "-work-many"
    proj.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        rec = {"type": "user", "sessionId": f"{i:08d}-1111-4111-8111-111111111111",
               "uuid": f"u{i}", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w",
               "message": {"role": "user", "content": "hello"}}
        (proj / f"{i:08d}-1111-4111-8111-111111111111.jsonl").write_bytes(
            orjson.dumps(rec) + b"\n")
    return proj


@pytest.mark.slow
def test_status_reports_the_reconcile_and_an_overflow_asks_for_one(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(AGENTSRC_RECONCILE_INTERVAL="3600")
    proj = write_sessions(d.home, 50)
    d.start()
    st = d.wait_live()
    rec = st["reconcile"]
    assert (rec["files"], rec["scans"], rec["interval_s"]) == (50, 1, 3600.0)
    assert rec["cpu_ms"] > 0
    # More events than the kernel queues for one inotify instance, while the daemon is
    # stopped and cannot read them: the queue overflows.
    limit = int(QUEUED_EVENTS.read_text())
    a, b = proj / "a.tmp", proj / "b.tmp"
    assert d.proc is not None
    d.send_signal(signal.SIGSTOP)
    try:
        # Stopped for sure (the signal is delivered asynchronously) before the writes.
        wait_for(lambda: Path(f"/proc/{d.proc.pid}/stat").read_text().rsplit(")", 1)[1]
                 .split()[0] == "T", timeout=10, interval=0.01)
        with a.open("ab", buffering=0) as fa, b.open("ab", buffering=0) as fb:
            for _ in range(limit):  # twice the queue; alternating: the kernel merges repeats
                fa.write(b"x")
                fb.write(b"x")
    finally:
        d.send_signal(signal.SIGCONT)
    st = wait_for(lambda: (s := d.call("status"))["reconcile"]["scans"] == 2 and s,
                  timeout=60)
    assert st["reconcile"]["files"] == 50
    assert '"inotify_overflow_reconcile"' in d.log()
    time.sleep(1)
    assert d.call("status")["reconcile"]["scans"] == 2  # one scan, not a loop
