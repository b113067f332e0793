"""`bench/run.py statusline`: `agentsrc statusline` as Claude Code runs it, whole
processes: its JSON on stdin, one line out, against a live daemon, timed from spawn to
exit (the target: p99 under 50 ms of wall time). Beside it the interpreter's floor
(`python -c pass`, alternating) and the socket method alone (`usage.statusline`).

The daemon reads a copy of the corpus (or a bench/bigstore.py build's copy, --store) and
a live Claude session of --requests requests over the last four hours, so that the
session, today and the 5-hour block all have requests to sum.

    .venv/bin/python bench/run.py statusline [--runs 300] [--requests 1500] [--store DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from agentsrc_daemon.rpc.client import Client

SESSION = "bench0000-0000-4000-8000-statusline00"
REPO = Path(__file__).resolve().parents[1]


def live_session(home: Path, requests: int) -> Path:
    """A Claude session of ``requests`` responses spread over the last four hours."""
    proj = home / ".claude" / "projects" / "-bench-statusline"
    proj.mkdir(parents=True, exist_ok=True)
    path = proj / f"{SESSION}.jsonl"
    now = datetime.now(UTC)
    lines = []
    for i in range(requests):
        ts = now - timedelta(hours=4) + timedelta(seconds=i * 4 * 3600 / max(1, requests))
        lines.append(orjson.dumps({
            "type": "assistant", "uuid": f"u{i}", "sessionId": SESSION,
            "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "cwd": "/bench/statusline",
            "message": {"id": f"m{i}", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                        "content": [{"type": "text", "text": "ok"}],
                        "usage": {"input_tokens": 20, "cache_read_input_tokens": 40_000,
                                  "output_tokens": 300}},
        }))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _percentiles(ts: list[float]) -> str:
    ts = sorted(ts)
    p99 = ts[min(len(ts) - 1, int(len(ts) * 0.99))]
    return (f"p50 {statistics.median(ts) * 1000:6.1f} ms  p99 {p99 * 1000:6.1f} ms"
            f"  max {ts[-1] * 1000:6.1f} ms")


def bench_statusline(args: argparse.Namespace) -> None:
    from run import CORPUS, Daemon, copy_store_data, store_home

    work = Path(tempfile.mkdtemp(prefix="asb-statusline-"))
    env: dict[str, str] = {}
    if args.store:
        home = store_home(Path(args.store))
        env["AGENTSRC_DATA_DIR"] = str(copy_store_data(Path(args.store), work))
    else:
        home = work / "home"
        shutil.copytree(CORPUS, home)
    live = live_session(home, args.requests)
    d = Daemon(home, env)
    stdin = orjson.dumps({"session_id": SESSION, "model": {"id": "claude-sonnet-4-5",
                          "display_name": "Sonnet 4.5"}, "cwd": "/bench/statusline",
                          "cost": {"total_cost_usd": 1.0}})
    agentsrc = str(Path(sys.executable).parent / "agentsrc")
    # The same without site (`-S`, the package on PYTHONPATH): the editable install of a
    # checkout imports pathlib and more at every start (its finder, about 11 ms), which a
    # normal install does not.
    lean = f"import sys; sys.path.insert(0, {str(REPO)!r}); sys.argv = ['agentsrc', 'statusline'];" \
           " from agentsrc_daemon.cli import main; main()"
    subjects = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "agentsrc statusline": [agentsrc, "statusline"],
        "python -S -c pass": [sys.executable, "-S", "-c", "pass"],
        "statusline, -S": [sys.executable, "-S", "-c", lean],
    }
    times: dict[str, list[float]] = {name: [] for name in subjects}
    socket_times: list[float] = []
    line = ""
    try:
        d.start()
        st = d.wait_live(poll=0.5)
        with Client(d.sock) as c:
            while not (c.call("usage.statusline", {"session_id": SESSION}).get("session") or {}).get("tokens"):
                time.sleep(0.2)  # the live session committed
        penv = {**d.env, "AGENTSRC_SOCKET": str(d.sock)}
        for _ in range(args.runs):
            for name, argv in subjects.items():
                t0 = time.perf_counter()
                out = subprocess.run(argv, env=penv, input=stdin, capture_output=True, check=True)
                times[name].append(time.perf_counter() - t0)
                if "statusline" in name:
                    line = out.stdout.decode().strip()
            with Client(d.sock) as c:
                t0 = time.perf_counter()
                c.call("usage.statusline", {"session_id": SESSION, "day_start":
                                            datetime.now().astimezone().replace(
                                                hour=0, minute=0, second=0).isoformat()})
                socket_times.append(time.perf_counter() - t0)
    finally:
        d.stop()
        live.unlink()
        shutil.rmtree(work, ignore_errors=True)
    print(f"statusline: {args.runs} runs each, alternating, against a live daemon"
          f" ({st['events']:,} events; a live session of {args.requests} requests)")
    print(f"  the line: {line}")
    for name, ts in times.items():
        print(f"  {name:<22} {_percentiles(ts)}")
    print(f"  {'usage.statusline':<22} {_percentiles(socket_times)}  (the socket call alone)")
    ts = sorted(times["agentsrc statusline"])
    p99 = ts[min(len(ts) - 1, int(len(ts) * 0.99))]
    print(f"  target p99 < 50 ms: {'met' if p99 < 0.05 else 'NOT met'}")


def add_parser(sub: Any) -> None:
    sl = sub.add_parser("statusline", help="agentsrc statusline, whole processes, p50/p99")
    sl.add_argument("--runs", type=int, default=300)
    sl.add_argument("--requests", type=int, default=1500)
    sl.add_argument("--store", default="", help="a bench/bigstore.py build (its dir): a copy of it")
