"""Benchmarks of the real daemon, measured side by side in one run. Prints figures
and ratios; docs/performance.md records them with the command that made them.

    .venv/bin/python bench/run.py backfill [--copies 20] [--repeats 3] [--scan both]
    .venv/bin/python bench/run.py backfill-index [--copies 5] [--repeats 4]
    .venv/bin/python bench/run.py latency [--files 20] [--appends 50]
    .venv/bin/python bench/run.py idle [--files 500] [--seconds 60]
    .venv/bin/python bench/run.py sink [--copies 20] [--repeats 3] [--files 10] [--appends 30]
    .venv/bin/python bench/run.py scale [--events 10000000] [--files 20000] [--repeats 50]
    .venv/bin/python bench/run.py all

Machines here are noisy: each figure is a median of repeats, and ratios compare
figures taken in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from agentsrc_daemon.errors import DaemonNotRunning
from agentsrc_daemon.rpc.client import Client

import scale
from replicate import replicate  # bench/ is this script's own directory: on the path

REPO = Path(__file__).resolve().parents[1]

CORPUS = Path(
    os.environ.get("AGENTSRC_CORPUS", REPO.parent / "shared" / "corpus" / "home")
)
BIG_LINE_BYTES = 50 * 1000 * 1000


class Daemon:
    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.dir = Path(tempfile.mkdtemp(prefix="asb-", dir="/tmp"))
        self.sock = self.dir / "s" / "agentsrc.sock"
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "AGENTSRC_DATA_DIR": str(self.dir / "data"),
            "AGENTSRC_SOCKET": str(self.sock),
            "XDG_CONFIG_HOME": str(self.dir / "cfg"),
        }
        if os.environ.get("AGENTSRC_WORKERS"):
            self.env["AGENTSRC_WORKERS"] = os.environ["AGENTSRC_WORKERS"]
        self.env.update(env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentsrc_daemon.cli", "run", "--json-logs", "--log-level", "warning"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "log", "wb"),  # noqa: SIM115
            cwd=str(REPO),
        )
        return t0

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with Client(self.sock, timeout=60) as c:
            return c.call(method, params or {})

    def _children(self) -> list[int]:
        assert self.proc is not None
        try:
            text = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        except OSError:
            return []
        return [int(x) for x in text.split()]

    @staticmethod
    def _status_kb(pid: int, field: str) -> int:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def sample_memory(self) -> None:
        """Track worker processes' peaks and the peak of all processes together."""
        assert self.proc is not None
        total = self._status_kb(self.proc.pid, "VmRSS")
        for child in self._children():
            total += self._status_kb(child, "VmRSS")
            hwm = self._status_kb(child, "VmHWM")
            self.children_peak_kb = max(getattr(self, "children_peak_kb", 0), hwm)
        self.total_peak_kb = max(getattr(self, "total_peak_kb", 0), total)

    def wait_live(self, poll: float = 0.05) -> dict[str, Any]:
        self.ready_at: float | None = None
        while True:
            try:
                self.sample_memory()
                st = self.call("status")
                if self.ready_at is None:
                    self.ready_at = time.perf_counter()  # started: socket answers
                if st["state"] == "live":
                    return st
            except DaemonNotRunning:
                pass
            assert self.proc is not None and self.proc.poll() is None, (self.dir / "log").read_text()
            time.sleep(poll)

    def peak_rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


def jsonl_files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*.jsonl") if p.is_file())


def plain_parse(home: Path) -> tuple[float, int]:
    """The floor: read every JSONL file in 1 MiB chunks, split lines, orjson.loads."""
    t0 = time.perf_counter()
    total = 0
    for p in jsonl_files(home):
        with p.open("rb") as fh:
            rest = b""
            while True:
                chunk = fh.read(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if line:
                        # Plain try/except: the floor must be as fast as Python allows.
                        try:  # noqa: SIM105
                            orjson.loads(line)
                        except orjson.JSONDecodeError:
                            pass
    return time.perf_counter() - t0, total


def make_home(copies: int, base: Path) -> Path:
    home = base / f"home-{copies}"
    if not home.exists():
        replicate(CORPUS, home, copies)
        # One Claude session whose single line is 50 MB: peak memory must stay bounded.
        big_dir = home / ".claude" / "projects" / "-bench-bigline"
        big_dir.mkdir(parents=True, exist_ok=True)
        rec = {
            "type": "user",
            "sessionId": "99999999-0000-0000-0000-000000000000",
            "uuid": "big-1",
            "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/bench",
            "message": {"role": "user", "content": "x" * (BIG_LINE_BYTES - 200)},
        }
        (big_dir / "99999999-0000-0000-0000-000000000000.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    return home


def bench_backfill(args: argparse.Namespace) -> None:
    base = Path(args.workdir)
    base.mkdir(parents=True, exist_ok=True)
    home = make_home(args.copies, base)
    size = sum(p.stat().st_size for p in jsonl_files(home))
    print(f"backfill: {args.copies} copies of the corpus + one 50 MB line: {size / 1e6:.0f} MB of JSONL")
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.scan]
    parse_times: list[float] = []
    runs: dict[bool, list[tuple[float, float, int, float, float, float]]] = {m: [] for m in modes}
    for r in range(args.repeats):
        pt, _ = plain_parse(home)
        parse_times.append(pt)
        for scan in modes:
            d = Daemon(home, {"AGENTSRC_SCAN": "1" if scan else "0"})
            try:
                t0 = d.start()
                st = d.wait_live(poll=0.02)
                live = time.perf_counter()
                elapsed = live - t0
                runs[scan].append((elapsed, d.peak_rss_mb(), st["events"],
                                   getattr(d, "children_peak_kb", 0) / 1024,
                                   getattr(d, "total_peak_kb", 0) / 1024,
                                   live - (d.ready_at or t0)))
            finally:
                d.stop()
        print(f"  repeat {r + 1}: parse {pt:.2f}s; " + "; ".join(
            f"daemon scan={'on' if s else 'off'} {runs[s][-1][0]:.2f}s rss {runs[s][-1][1]:.0f} MB"
            for s in modes))
    parse = statistics.median(parse_times)
    print(f"plain orjson parse: median {parse:.2f}s = {size / 1e6 / parse:.0f} MB/s")
    results: dict[bool, float] = {}
    for scan in modes:
        t = statistics.median(x[0] for x in runs[scan])
        backfill_only = statistics.median(x[5] for x in runs[scan])
        results[scan] = t
        rss = max(x[1] for x in runs[scan])
        worker = max(x[3] for x in runs[scan])
        together = max(x[4] for x in runs[scan])
        print(
            f"daemon cold backfill, scanning {'on' if scan else 'off'}: median {t:.2f}s = "
            f"{size / 1e6 / t:.1f} MB/s, {runs[scan][0][2]} events, ratio to parse {t / parse:.2f}x "
            f"(from the socket answering to live, without interpreter start-up: "
            f"{backfill_only:.2f}s, {backfill_only / parse:.2f}x); "
            f"peak RSS: daemon {rss:.0f} MB, worker {worker:.0f} MB, "
            f"all processes at once (sampled every 20 ms) {together:.0f} MB"
        )
    if True in results and False in results:
        print(f"scanning on / off: {results[True] / results[False]:.2f}x")


def bench_backfill_index(args: argparse.Namespace) -> None:
    """Cold backfill with the search index and without, alternating, medians."""
    base = Path(args.workdir)
    base.mkdir(parents=True, exist_ok=True)
    home = make_home(args.copies, base)
    size = sum(p.stat().st_size for p in jsonl_files(home))
    print(f"backfill-index: {args.copies} copies of the corpus: {size / 1e6:.0f} MB of JSONL")
    runs: dict[bool, list[float]] = {False: [], True: []}
    for r in range(args.repeats):
        for index in (False, True) if r % 2 == 0 else (True, False):
            d = Daemon(home, {"AGENTSRC_SEARCH_INDEX": "1" if index else "0"})
            try:
                t0 = d.start()
                d.wait_live(poll=0.02)
                runs[index].append(time.perf_counter() - t0)
            finally:
                d.stop()
        print(f"  repeat {r + 1}: without {runs[False][-1]:.2f}s, with {runs[True][-1]:.2f}s")
    off, on = statistics.median(runs[False]), statistics.median(runs[True])
    print(f"cold backfill without the index: median {off:.2f}s; with: {on:.2f}s;"
          f" with / without {on / off:.2f}x")


def bench_latency(args: argparse.Namespace) -> None:
    base = Path(tempfile.mkdtemp(prefix="asl-"))
    home = base / "home"
    proj = home / ".claude" / "projects" / "-bench-latency"
    proj.mkdir(parents=True)
    files = [proj / f"{i:08d}-0000-0000-0000-000000000000.jsonl" for i in range(args.files)]
    for f in files:
        f.write_bytes(b"")
    d = Daemon(home)
    latencies: list[float] = []
    sent: dict[str, float] = {}
    lock = threading.Lock()
    try:
        d.start()
        d.wait_live()
        done = threading.Event()
        expected = args.files * args.appends
        ready = threading.Event()

        def listen() -> None:
            with Client(d.sock, timeout=60) as c:
                for msg in c.subscribe({"kinds": ["prompt"]}):
                    if msg["method"] == "subscribed":
                        ready.set()
                        continue
                    if msg["method"] != "event":
                        continue
                    now = time.perf_counter()
                    text = msg["params"].get("text", "")
                    with lock:
                        t = sent.pop(text, None)
                    if t is not None:
                        latencies.append(now - t)
                    if len(latencies) >= expected:
                        done.set()
                        return

        threading.Thread(target=listen, daemon=True).start()
        ready.wait(10)

        def writer(i: int, f: Path) -> None:
            for n in range(args.appends):
                token = f"f{i}-n{n}"
                rec = {
                    "type": "user",
                    "sessionId": f.stem,
                    "uuid": token,
                    "timestamp": "2026-01-01T00:00:00Z",
                    "cwd": "/bench",
                    "message": {"role": "user", "content": token},
                }
                line = orjson.dumps(rec) + b"\n"
                with lock:
                    sent[token] = time.perf_counter()
                with f.open("ab") as fh:
                    fh.write(line)
                time.sleep(0.1)

        threads = [threading.Thread(target=writer, args=(i, f)) for i, f in enumerate(files)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.wait(30)
    finally:
        d.stop()
        shutil.rmtree(base, ignore_errors=True)
    latencies.sort()
    n = len(latencies)
    p50 = latencies[n // 2] * 1000
    p99 = latencies[min(n - 1, int(n * 0.99))] * 1000
    print(
        f"latency append -> subscriber, {args.files} files appended concurrently, {n} events: "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
    )


def bench_idle(args: argparse.Namespace) -> None:
    base = Path(tempfile.mkdtemp(prefix="asi-"))
    home = base / "home"
    for i in range(args.files):
        proj = home / ".claude" / "projects" / f"-idle-{i % 25}"
        proj.mkdir(parents=True, exist_ok=True)
        rec = {
            "type": "user",
            "sessionId": f"{i:08d}-1111-1111-1111-111111111111",
            "uuid": f"u{i}",
            "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/idle",
            "message": {"role": "user", "content": "hello"},
        }
        (proj / f"{i:08d}-1111-1111-1111-111111111111.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    d = Daemon(home)
    try:
        d.start()
        st = d.wait_live()
        assert st["files"] == args.files, st["files"]
        time.sleep(2)
        c0, t0 = d.cpu_seconds(), time.perf_counter()
        time.sleep(args.seconds)
        c1, t1 = d.cpu_seconds(), time.perf_counter()
    finally:
        d.stop()
        shutil.rmtree(base, ignore_errors=True)
    pct = (c1 - c0) / (t1 - t0) * 100
    print(
        f"idle: {args.files} files tracked, {args.seconds:.0f} s: CPU {c1 - c0:.2f} s "
        f"= {pct:.2f}% of one core (reconcile every 30 s)"
    )


# ---- the ClickHouse sink ----------------------------------------------------------------


def _sink_config(d: Daemon, url: str, database: str, level: str = "metadata") -> None:
    cfg = d.dir / "cfg" / "agentsrc" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        f'[sink.clickhouse]\nurl = "{url}"\ndatabase = "{database}"\nlevel = "{level}"\n'
        'host_label = "bench"\n'
    )


def _ch_server() -> Any:
    sys.path.insert(0, str(REPO / "tests"))
    from clickhouse import ClickHouseServer  # the tests' server: temporary, local ports

    return ClickHouseServer().start()


def bench_sink(args: argparse.Namespace) -> None:
    """The backfill with the sink on and off, alternating, in one run (the server runs
    through both); the sink's push rate; then the live lag from an append to the row
    being queryable on the server. Everything is read from the socket or the server."""
    base = Path(args.workdir)
    base.mkdir(parents=True, exist_ok=True)
    home = make_home(args.copies, base)
    size = sum(p.stat().st_size for p in jsonl_files(home))
    ch = _ch_server()
    try:
        print(f"sink: ClickHouse {ch.scalar('SELECT version()')} on 127.0.0.1:{ch.http_port}; "
              f"{args.copies} copies of the corpus + one 50 MB line: {size / 1e6:.0f} MB")
        live: dict[bool, list[float]] = {False: [], True: []}
        cpu: dict[bool, list[tuple[float, float]]] = {False: [], True: []}  # daemon, server
        synced: list[float] = []
        rates: list[float] = []
        drains: list[float] = []
        at_live: list[int] = []
        events = 0
        for r in range(args.repeats):
            for on in (False, True):
                d = Daemon(home)
                db = f"bench_{r}"
                if on:
                    ch.drop(db)
                    _sink_config(d, ch.url, db)
                try:
                    s0 = _cpu(ch.proc.pid)
                    t0 = d.start()
                    st = d.wait_live(poll=0.02)
                    live[on].append(time.perf_counter() - t0)
                    cpu[on].append((d.cpu_seconds(), _cpu(ch.proc.pid) - s0))
                    events = st["events"]
                    if on:
                        t_live = time.perf_counter()
                        at_live.append(st["sink"]["sent"]["events"])
                        while True:
                            s = d.call("status")["sink"]
                            if s["connected"] and not (s["lag_events"] or s["lag_sessions"]):
                                break
                            time.sleep(0.02)
                        t_sync = time.perf_counter() - t0
                        synced.append(t_sync)
                        rates.append(s["sent"]["events"] / t_sync)
                        drains.append((s["sent"]["events"] - at_live[-1])
                                      / max(1e-3, time.perf_counter() - t_live))
                        events = d.call("status")["events"]
                        rows = int(ch.scalar(f"SELECT count() FROM {db}.events FINAL"))
                        assert rows == events, (rows, events)
                finally:
                    d.stop()
            print(f"  repeat {r + 1}: sink off {live[False][-1]:.2f}s, sink on {live[True][-1]:.2f}s "
                  f"to live (CPU to live, daemon/server: off {cpu[False][-1][0]:.1f}/"
                  f"{cpu[False][-1][1]:.1f}s, on {cpu[True][-1][0]:.1f}/{cpu[True][-1][1]:.1f}s); "
                  f"all {events} events on the server after {synced[-1]:.2f}s "
                  f"({rates[-1]:.0f} rows/s; {at_live[-1]} sent by live, the rest at "
                  f"{drains[-1]:.0f} rows/s)", flush=True)
        off, on = statistics.median(live[False]), statistics.median(live[True])
        print(f"backfill to live: sink off median {off:.2f}s, sink on median {on:.2f}s: "
              f"{on / off:.2f}x; all rows on the server: median {statistics.median(synced):.2f}s "
              f"from start = {statistics.median(rates):.0f} rows/s pushed (events table; "
              "findings and sessions besides); once live, the backlog goes at "
              f"{statistics.median(drains):.0f} rows/s")
        _sink_latency(ch, args)
    finally:
        ch.stop()


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sink_latency(ch: Any, args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="asl-"))
    home = work / "home"
    proj = home / ".claude" / "projects" / "-bench-sink"
    proj.mkdir(parents=True)
    files = [proj / f"{i:08d}-5157-0000-0000-000000000000.jsonl" for i in range(args.files)]
    for f in files:
        f.write_bytes(b"")
    d = Daemon(home)
    ch.drop("bench_live")
    _sink_config(d, ch.url, "bench_live", level="text")
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    lock = threading.Lock()
    try:
        d.start()
        d.wait_live()
        while not d.call("status")["sink"]["connected"]:
            time.sleep(0.05)

        def writer(i: int, f: Path) -> None:
            for n in range(args.appends):
                token = f"lat-{i}-{n}"
                rec = {"type": "user", "sessionId": f.stem, "uuid": token,
                       "timestamp": "2026-01-01T00:00:00Z", "cwd": "/bench",
                       "message": {"role": "user", "content": token}}
                with lock:
                    sent[token] = time.perf_counter()
                with f.open("ab") as fh:
                    fh.write(orjson.dumps(rec) + b"\n")
                time.sleep(0.2)

        threads = [threading.Thread(target=writer, args=(i, f)) for i, f in enumerate(files)]
        for t in threads:
            t.start()
        expected = args.files * args.appends
        deadline = time.monotonic() + args.appends * 0.2 + 30
        while len(seen) < expected and time.monotonic() < deadline:
            out = ch.query("SELECT text FROM bench_live.events WHERE kind = 'prompt'")
            now = time.perf_counter()
            for token in out.split():
                if token not in seen:
                    seen[token] = now
            time.sleep(0.02)
        for t in threads:
            t.join()
    finally:
        d.stop()
        shutil.rmtree(work, ignore_errors=True)
    lat = sorted(seen[t] - sent[t] for t in seen if t in sent)
    n = len(lat)
    print(f"sink live lag, append -> row queryable on the server, {args.files} files appended "
          f"concurrently, {n}/{args.files * args.appends} rows (server polled every 20 ms): "
          f"p50 {lat[n // 2] * 1000:.0f} ms, p99 {lat[min(n - 1, int(n * 0.99))] * 1000:.0f} ms, "
          f"max {lat[-1] * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("backfill")
    b.add_argument("--copies", type=int, default=20)
    b.add_argument("--repeats", type=int, default=3)
    b.add_argument("--scan", choices=["off", "on", "both"], default="both")
    b.add_argument("--workdir", default="/tmp/agentsrc-bench")
    bi = sub.add_parser("backfill-index")
    bi.add_argument("--copies", type=int, default=5)
    bi.add_argument("--repeats", type=int, default=4)
    bi.add_argument("--workdir", default="/tmp/agentsrc-bench-index")
    lat = sub.add_parser("latency")
    lat.add_argument("--files", type=int, default=20)
    lat.add_argument("--appends", type=int, default=50)
    idle = sub.add_parser("idle")
    idle.add_argument("--files", type=int, default=500)
    idle.add_argument("--seconds", type=float, default=60)
    sk = sub.add_parser("sink")
    sk.add_argument("--copies", type=int, default=20)
    sk.add_argument("--repeats", type=int, default=3)
    sk.add_argument("--files", type=int, default=10)
    sk.add_argument("--appends", type=int, default=30)
    sk.add_argument("--workdir", default="/tmp/agentsrc-bench")
    scale.add_parser(sub)
    sub.add_parser("all")
    args = ap.parse_args()
    if args.cmd == "all":
        bench_backfill(argparse.Namespace(copies=20, repeats=3, scan="both", workdir="/tmp/agentsrc-bench"))
        bench_latency(argparse.Namespace(files=20, appends=50))
        bench_idle(argparse.Namespace(files=500, seconds=60))
    else:
        {"backfill": bench_backfill, "backfill-index": bench_backfill_index,
         "latency": bench_latency, "idle": bench_idle, "sink": bench_sink,
         "scale": scale.bench_scale}[args.cmd](args)


if __name__ == "__main__":
    main()
