"""Benchmarks of the real daemon, measured side by side in one run. Prints figures
and ratios; docs/performance.md records them with the command that made them.

    .venv/bin/python bench/run.py backfill [--copies 20] [--repeats 3] [--scan both] [--baseline main]
        (beside agentsview's sync: `make bench-deps` installs it)
    .venv/bin/python bench/run.py answers [--copies 3] [--baseline main]
    .venv/bin/python bench/run.py backfill-index [--copies 5] [--repeats 4]
    .venv/bin/python bench/run.py latency [--files 20] [--appends 50] [--backfill-copies 20] [--phases same|spread]
    .venv/bin/python bench/run.py idle [--files 500] [--seconds 60] [--projects 2000]
    .venv/bin/python bench/run.py settle [--copies 100] [--window 60] [--idle 600]
    .venv/bin/python bench/run.py resident --store DIR [--seconds 600]
    .venv/bin/python bench/run.py cli [--runs 30]
    .venv/bin/python bench/run.py statusline [--runs 300] [--requests 1500] [--store DIR]
    .venv/bin/python bench/run.py reprice --store DIR [--chunk 500]
    .venv/bin/python bench/run.py status [--copies 20] [--calls 1000] [--rounds 3] [--baseline TREE]
    .venv/bin/python bench/run.py startup --store DIR [--repeats 3]   (DIR: data/ and home/)
    .venv/bin/python bench/run.py sink [--copies 20] [--repeats 3] [--files 10] [--appends 30]
    .venv/bin/python bench/run.py size [--copies 5] [--baseline main]
    .venv/bin/python bench/run.py scale [--events 10000000] [--files 20000] [--repeats 50]
    .venv/bin/python bench/run.py all

Machines here are noisy: each figure is a median of repeats, and ratios compare
figures taken in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agentsrc_daemon.errors import DaemonNotRunning
from agentsrc_daemon.rpc.client import Client

import reprice
import scale
import statusline
from replicate import replicate  # bench/ is this script's own directory: on the path

REPO = Path(__file__).resolve().parents[1]

CORPUS = Path(
    os.environ.get("AGENTSRC_CORPUS", REPO.parent / "shared" / "corpus" / "home")
)
BIG_LINE_BYTES = 50 * 1000 * 1000


class Daemon:
    def __init__(self, home: Path, env: dict[str, str] | None = None,
                 code: Path | None = None) -> None:
        """``code``: another tree whose daemon runs (a baseline's), else this one's."""
        self.home = home
        self.code = code
        self.log_level = "warning"
        self.dir = Path(tempfile.mkdtemp(prefix="asb-", dir="/tmp"))
        self.sock = self.dir / "s" / "agentsrc.sock"
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "AGENTSRC_DATA_DIR": str(self.dir / "data"),
            "AGENTSRC_SOCKET": str(self.sock),
            "XDG_CONFIG_HOME": str(self.dir / "cfg"),
        }
        # The daemon's knobs set for the bench (AGENTSRC_WORKERS=0, AGENTSRC_GC_FREEZE=0,
        # AGENTSRC_CHECKPOINT_THREAD=0, ...) reach it; the paths are the bench's own.
        for name, value in os.environ.items():
            if name.startswith("AGENTSRC_") and name not in self.env and name != "AGENTSRC_CORPUS":
                self.env[name] = value
        self.env.update(env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        t0 = time.perf_counter()
        env = self.env if self.code is None else {**self.env, "PYTHONPATH": str(self.code)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentsrc_daemon.cli", "run", "--json-logs", "--log-level", self.log_level],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "log", "wb"),  # noqa: SIM115
            cwd=str(self.code or REPO),
        )
        return t0

    def slow_steps(self, since: float = 0.0) -> str:
        """The daemon's ``slow_step`` log lines (AGENTSRC_SLOW_STEP_MS) logged after
        ``since`` (a time.time()), summed per step: what the loop was doing when a live
        append waited."""
        from datetime import datetime

        steps: dict[str, list[float]] = {}
        shares: dict[str, list[float]] = {}  # per step: sums of ms, cpu_ms, runq_ms
        try:
            lines = (self.dir / "log").read_bytes().splitlines()
        except OSError:
            return ""
        for line in lines:
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(rec, dict) or "timestamp" not in rec:
                continue
            if datetime.fromisoformat(str(rec["timestamp"]).replace("Z", "+00:00")).timestamp() < since:
                continue
            if rec.get("event") == "slow_step":
                step = str(rec.get("step"))
                if step == "gc":
                    step = f"gc{rec.get('generation')}"
                steps.setdefault(step, []).append(float(rec.get("ms", 0)))
                share = shares.setdefault(step, [0.0, 0.0, 0.0])
                for i, name in enumerate(("ms", "cpu_ms", "runq_ms")):
                    share[i] += float(rec.get(name, 0))

        def split(step: str) -> str:
            # Of these steps' time: the thread on a core, waiting for one, and the rest
            # (blocked: the disk, a lock, the GIL), as the daemon logged them.
            ms, cpu, runq = shares[step]
            if not ms or not (cpu or runq) or step.startswith("gc"):  # not logged
                return ""
            return (f"; cpu {100 * cpu / ms:.0f}%, run queue {100 * runq / ms:.0f}%,"
                    f" blocked {100 * max(0.0, ms - cpu - runq) / ms:.0f}%")

        return ", ".join(f"{k} {len(v)}x (max {max(v):.0f} ms{split(k)})"
                         for k, v in sorted(steps.items()))

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

    def cpu_seconds(self, children: bool = False) -> float:
        """The daemon process's CPU, or (``children``) its exited children's: the backfill
        worker's, once the pool is shut down (it is, by live)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        at = 13 if children else 11
        return (int(fields[at]) + int(fields[at + 1])) / ticks

    def written_mb(self) -> float:
        """What the daemon process has written to the disk (its workers write nothing):
        the database, and the WAL each commit writes its pages to."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/io").read_text().splitlines():
            if line.startswith("write_bytes:"):
                return int(line.split()[1]) / 1e6
        return float("nan")

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


def agentsview_binary() -> Path | None:
    """agentsview's Go binary, from its wheel in this venv (`make bench-deps`)."""
    import importlib.util

    spec = importlib.util.find_spec("agentsview")
    if spec is not None and spec.submodule_search_locations:
        exe = Path(next(iter(spec.submodule_search_locations))) / "bin" / "agentsview"
        if exe.is_file():
            return exe
    found = shutil.which("agentsview")
    return Path(found) if found else None


def agentsview_sync(exe: Path, home: Path) -> tuple[float, float]:
    """One cold `agentsview sync` of the home into a fresh data dir, in the foreground
    (no background server); (wall seconds, CPU seconds of the process and its threads)."""
    data = Path(tempfile.mkdtemp(prefix="asv-", dir="/tmp"))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "AGENTSVIEW_DATA_DIR": str(data),
        "AGENTSVIEW_NO_DAEMON": "1",  # a one-shot offline sync, as its --help says
        "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1",
        "AGENTSVIEW_NO_BROWSER": "1",
        "XDG_CONFIG_HOME": str(data / "cfg"),
    }
    try:
        before = os.times()
        t0 = time.perf_counter()
        subprocess.run([str(exe), "sync"], env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        after = os.times()
        return wall, (after.children_user - before.children_user
                      + after.children_system - before.children_system)
    finally:
        shutil.rmtree(data, ignore_errors=True)


@dataclass
class BackfillRun:
    to_live: float  # from process start until status says live
    ready_to_live: float  # from the socket's first answer until live
    events: int
    peak_daemon_mb: float  # the daemon process's own VmHWM
    peak_worker_mb: float
    peak_together_mb: float  # sampled every 20 ms
    live_rss_mb: float  # the daemon's RSS once live and settled
    search_ready: float | None  # from process start until the search index is complete
    cpu: float  # the daemon process's CPU to live (workers not included)
    worker_cpu: float  # the backfill worker's CPU (exited by live)
    written_mb: float  # the daemon's writes to the disk, to live


def daemon_backfill(home: Path, scan: bool, settle: float, code: Path | None = None) -> BackfillRun:
    d = Daemon(home, {"AGENTSRC_SCAN": "1" if scan else "0"}, code)
    try:
        t0 = d.start()
        st = d.wait_live(poll=0.02)
        live = time.perf_counter()
        cpu = d.cpu_seconds()
        worker_cpu = d.cpu_seconds(children=True)
        written = d.written_mb()
        search_ready = None
        while time.perf_counter() - live < 120:
            d.sample_memory()
            if d.call("status")["search_index"]["state"] == "ready":
                search_ready = time.perf_counter() - t0
                break
            time.sleep(0.05)
        settle_until = time.perf_counter() + settle
        while time.perf_counter() < settle_until:
            d.sample_memory()
            time.sleep(0.05)
        assert d.proc is not None
        return BackfillRun(
            to_live=live - t0,
            ready_to_live=live - (d.ready_at or t0),
            events=st["events"],
            peak_daemon_mb=d.peak_rss_mb(),
            peak_worker_mb=getattr(d, "children_peak_kb", 0) / 1024,
            peak_together_mb=getattr(d, "total_peak_kb", 0) / 1024,
            live_rss_mb=d._status_kb(d.proc.pid, "VmRSS") / 1024,
            search_ready=search_ready,
            cpu=cpu,
            worker_cpu=worker_cpu,
            written_mb=written,
        )
    finally:
        d.stop()


def baseline_tree(ref: str, into: Path) -> str:
    """The code of git ``ref`` extracted into ``into``; its short commit."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", ref],
                          check=True, capture_output=True, text=True).stdout.strip()


def _backfill_summary(label: str, xs: list[BackfillRun], size: int, parse: float,
                      av: float | None, settle: float) -> float:
    t = statistics.median(x.to_live for x in xs)
    from_socket = statistics.median(x.ready_to_live for x in xs)
    ready = [x.search_ready for x in xs if x.search_ready is not None]
    print(
        f"{label}: median {t:.2f}s = "
        f"{size / 1e6 / t:.1f} MB/s, {xs[0].events} events, "
        f"{t / parse:.2f}x the parse (from the socket answering to live: {from_socket:.2f}s, "
        f"{from_socket / parse:.2f}x)"
        + (f"; agentsview / daemon {av / t:.2f}x" if av is not None else "")
        + (f"; search index complete at a median {statistics.median(ready):.2f}s" if ready else "")
        + f"; daemon CPU to live {statistics.median(x.cpu for x in xs):.1f}s, its worker's"
        f" {statistics.median(x.worker_cpu for x in xs):.1f}s; written to the disk"
        f" {statistics.median(x.written_mb for x in xs):.0f} MB"
    )
    print(
        f"  memory: peak RSS daemon {max(x.peak_daemon_mb for x in xs):.0f} MB, "
        f"worker {max(x.peak_worker_mb for x in xs):.0f} MB, all processes at once "
        f"(sampled every 20 ms) {max(x.peak_together_mb for x in xs):.0f} MB "
        f"(median {statistics.median(x.peak_together_mb for x in xs):.0f} MB); "
        f"RSS once live ({settle:.0f} s after the search index): median "
        f"{statistics.median(x.live_rss_mb for x in xs):.0f} MB, max "
        f"{max(x.live_rss_mb for x in xs):.0f} MB"
    )
    return t


def bench_backfill(args: argparse.Namespace) -> None:
    """The cold backfill beside agentsview's `sync` of the same home and the parse floor,
    in the same run, the order alternating from one repeat to the next. With
    ``--baseline REF`` the daemon of git REF's code (scanning on) runs in every repeat
    too."""
    base = Path(args.workdir)
    base.mkdir(parents=True, exist_ok=True)
    home = make_home(args.copies, base)
    size = sum(p.stat().st_size for p in jsonl_files(home))
    print(f"backfill: {args.copies} copies of the corpus + one 50 MB line: {size / 1e6:.0f} MB of JSONL")
    exe = None if args.no_agentsview else agentsview_binary()
    if exe is None and not args.no_agentsview:
        sys.exit("agentsview not installed: `make bench-deps` (or --no-agentsview)")
    code_dir = Path(tempfile.mkdtemp(prefix="asb-code-", dir="/tmp"))
    code = None
    if args.baseline:
        code = code_dir / "baseline"
        print(f"baseline: {args.baseline} ({baseline_tree(args.baseline, code)}), scanning on")
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.scan]
    parse_times: list[float] = []
    av_times: list[tuple[float, float]] = []
    runs: dict[bool, list[BackfillRun]] = {m: [] for m in modes}
    base_runs: list[BackfillRun] = []
    try:
        for r in range(args.repeats):
            subjects: list[Any] = ["parse", *(["agentsview"] if exe else []),
                                   *(["baseline"] if code else []), *modes]
            if r % 2:
                subjects.reverse()
            for subject in subjects:
                if subject == "parse":
                    parse_times.append(plain_parse(home)[0])
                elif subject == "agentsview":
                    assert exe is not None
                    av_times.append(agentsview_sync(exe, home))
                elif subject == "baseline":
                    base_runs.append(daemon_backfill(home, True, args.settle, code))
                else:
                    runs[subject].append(daemon_backfill(home, subject, args.settle))
            line = f"  repeat {r + 1}: parse {parse_times[-1]:.2f}s"
            if av_times:
                line += f"; agentsview sync {av_times[-1][0]:.2f}s (CPU {av_times[-1][1]:.1f}s)"
            named = [("baseline scan=on", base_runs[-1])] if code else []
            named += [(f"daemon scan={'on' if s else 'off'}", runs[s][-1]) for s in modes]
            for name, x in named:
                line += (f"; {name} {x.to_live:.2f}s to live"
                         f" ({x.ready_to_live:.2f}s from the socket, CPU {x.cpu:.1f}s + worker"
                         f" {x.worker_cpu:.1f}s, wrote {x.written_mb:.0f} MB), search index "
                         + (f"{x.search_ready:.2f}s" if x.search_ready is not None else "not ready")
                         + f", live RSS {x.live_rss_mb:.0f} MB, peak together {x.peak_together_mb:.0f} MB")
            print(line, flush=True)
    finally:
        shutil.rmtree(code_dir, ignore_errors=True)
    parse = statistics.median(parse_times)
    print(f"plain orjson parse: median {parse:.2f}s = {size / 1e6 / parse:.0f} MB/s")
    av = statistics.median(t for t, _ in av_times) if av_times else None
    if av is not None:
        print(f"agentsview {args.agentsview_version} sync: median {av:.2f}s "
              f"(CPU {statistics.median(c for _, c in av_times):.1f}s), "
              f"{av / parse:.2f}x the parse")
    results: dict[bool, float] = {}
    if base_runs:
        t_base = _backfill_summary(f"baseline {args.baseline} cold backfill, scanning on",
                                   base_runs, size, parse, av, args.settle)
    for scan in modes:
        results[scan] = _backfill_summary(
            f"daemon cold backfill, scanning {'on' if scan else 'off'}", runs[scan], size,
            parse, av, args.settle)
    if True in results and False in results:
        print(f"scanning on / off: {results[True] / results[False]:.2f}x")
    if base_runs and True in results:
        print(f"this tree / baseline (scanning on, to live): {results[True] / t_base:.2f}x")


# Fields that carry an event's id (its commit order), and documents' read time: two
# daemons that stored the same events may differ there (the watcher's wake-ups, say an
# OpenCode database's -shm, reorder the rounds by a few hundred ms of start-up).
_ORDER_FIELDS = frozenset({"id", "event_id", "first_event_id", "last_event_id",
                           "next_since_id", "since_id", "next_after_id", "after_id",
                           "updated_at", "rank"})


def _without_ids(node: Any) -> Any:
    """An answer without its id fields, lists sorted: the same events, whatever ids."""
    if isinstance(node, dict):
        return {k: _without_ids(v) for k, v in node.items() if k not in _ORDER_FIELDS}
    if isinstance(node, list):
        return sorted((_without_ids(v) for v in node),
                      key=lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
    return node


def bench_answers(args: argparse.Namespace) -> None:
    """Every socket answer (tests/answers.py) after a cold backfill of the same home by
    git REF's daemon and this tree's, compared byte for byte: what the daemon stores
    must not change. One reader (no worker) and one hash key for both (findings' hashes
    are keyed). Answers equal byte for byte are counted; the rest are compared without
    event ids, read times and ranks (``_ORDER_FIELDS``), lists as multisets."""
    from size import answers_of, stop_and_keep  # it imports this module

    home = make_home(args.copies, Path(args.workdir))
    tmp = Path(tempfile.mkdtemp(prefix="asb-answers-", dir="/tmp"))
    env = {"AGENTSRC_WORKERS": "0"}
    try:
        code = tmp / "baseline"
        print(f"answers: {args.copies} copies of the corpus + one 50 MB line; baseline "
              f"{args.baseline} ({baseline_tree(args.baseline, code)}), subject this tree")
        for label, tree in (("baseline", code), ("subject", None)):
            d = Daemon(home, env, tree)
            (d.dir / "data").mkdir(mode=0o700)
            key = d.dir / "data" / "hash.key"
            key.write_bytes(b"k" * 32)
            key.chmod(0o600)
            d.start()
            print(f"  {label}: {d.wait_live(poll=0.05)['events']} events")
            stop_and_keep(d, tmp / label)
        before = answers_of(Daemon(home, env, code), tmp / "baseline")
        after = answers_of(Daemon(home, env), tmp / "subject")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def norm(name: str, answer: bytes | None) -> bytes | None:
        if answer is None:
            return answer
        return orjson.dumps(_without_ids(orjson.loads(answer)), option=orjson.OPT_SORT_KEYS)

    exact = sum(1 for n in before.keys() | after.keys() if before.get(n) == after.get(n))
    differ = sorted(n for n in before.keys() | after.keys()
                    if norm(n, before.get(n)) != norm(n, after.get(n)))
    print(f"{len(before)} answers, {sum(len(v) for v in before.values())} bytes: {exact} the "
          f"same bytes, {len(differ)} differ beyond event ids and the order they give"
          + (f" (methods: {sorted({n.split()[0] for n in differ})})" if differ else ""))
    if differ:
        sys.exit(1)


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


def store_home(store: Path) -> Path:
    """The home of a built store (bench/bigstore.py): its meta.json's (the paths in the
    store are absolute: a copy migrated elsewhere keeps its build's home), else DIR/home."""
    meta = store / "meta.json"
    if meta.is_file():
        return Path(orjson.loads(meta.read_bytes())["home"])
    return store / "home"


def copy_store_data(store: Path, workdir: Path) -> Path:
    """A copy of a built store's data dir (bench/bigstore.py) in a new directory under
    ``workdir`` (a daemon writes what it opens), written back to the disk before it is
    returned: the copy's gigabytes are dirty in the page cache until then, and a daemon
    started at once has its WAL writes throttled behind that writeback (measured: a
    first run's commits 74-76% blocked, p99 4.5 s), which is the copy's cost, not the
    daemon's."""
    workdir.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="asl-data-", dir=workdir))
    for name in ("agentsrc.db", "agentsrc.db-wal", "hash.key", "prices.json"):
        src = store / "data" / name
        if src.exists():
            shutil.copyfile(src, data / name)
            os.chmod(data / name, 0o600)
    os.sync()
    return data


def bench_latency(args: argparse.Namespace) -> None:
    """Append -> subscriber. With --backfill-copies N the home also holds N copies of
    the corpus (hard links to make_home's), so the appends land while the daemon
    backfills them: the load of a big first catch-up. With --baseline TREE the runs
    alternate between that tree's daemon and this one's (--runs of each)."""
    base = Path(tempfile.mkdtemp(prefix="asl-"))
    home = base / "home"
    codes: list[Path | None] = [None]
    if args.baseline:
        codes = [Path(args.baseline).resolve(), None]
    datas: dict[Path | None, Path] = {}
    if args.bigstore:
        # A store built by bench/bigstore.py: its home used in place (the store's paths
        # are absolute), its database copied into --workdir (a daemon writes what it
        # opens), one copy per tree shared by that tree's runs: each tree migrates its
        # copy to its own schema, which the other may not open (a newer one is refused).
        # Each run appends to files of its own in a project directory of its own,
        # removed after: the store's files are untouched.
        home = store_home(Path(args.bigstore))
        for code in codes:
            t = time.perf_counter()
            datas[code] = copy_store_data(Path(args.bigstore), Path(args.workdir))
            print(f"latency: {args.bigstore}: database copied and synced in"
                  f" {time.perf_counter() - t:.0f} s")
    elif args.backfill_copies:
        shutil.copytree(make_home(args.backfill_copies, Path(args.workdir)), home,
                        copy_function=os.link)
    results: dict[str, list[float]] = {}
    try:
        for i in range(args.runs):
            for code in codes if i % 2 == 0 else codes[::-1]:
                name = "baseline" if code is not None else "this tree"
                p50, p99, cpu = _latency_run(args, home, datas.get(code), code,
                                             f"{i}{'b' if code else 't'}", name)
                results.setdefault(name, []).extend([p50, p99, cpu])
    finally:
        shutil.rmtree(base, ignore_errors=True)
        for data in datas.values():
            shutil.rmtree(data, ignore_errors=True)
    if args.runs > 1 or args.baseline:
        for name, figs in results.items():
            print(f"  {name}: median of {len(figs) // 3} runs: p50 "
                  f"{statistics.median(figs[0::3]):.1f} ms, p99 {statistics.median(figs[1::3]):.1f} ms,"
                  f" daemon CPU {statistics.median(figs[2::3]):.0f} µs per append")


def _latency_run(args: argparse.Namespace, home: Path, data: Path | None, code: Path | None,
                 tag: str, name: str) -> tuple[float, float, float]:
    """One run: the p50 and p99 in ms, and the daemon's CPU per append in µs (all its
    threads, over the appends: what a burst costs it, whatever else the machine runs)."""
    proj = home / ".claude" / "projects" / f"-bench-latency-{os.getpid()}-{tag}"
    proj.mkdir(parents=True)
    files = [proj / f"{i:08d}-0000-0000-0000-000000000000.jsonl" for i in range(args.files)]
    for f in files:
        f.write_bytes(b"")
    env = {"AGENTSRC_SLOW_STEP_MS": str(args.slow_step_ms)}
    if code is not None:
        env.update(kv.split("=", 1) for kv in getattr(args, "baseline_env", []))
    if data is not None:
        env["AGENTSRC_DATA_DIR"] = str(data)
    d = Daemon(home, env, code=code)
    d.log_level = "info"  # slow steps while catching up are logged at info
    latencies: list[float] = []
    sent: dict[str, float] = {}
    lock = threading.Lock()
    during_backfill = 0
    live_events = 0
    steps = ""
    cpu = 0.0
    try:
        d.start()
        if args.backfill_copies and not args.bigstore:
            wait_for_events(d, 1000)  # the backfill is under way
        else:
            live_events = d.wait_live(poll=0.5)["events"]
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
                        if args.backfill_copies and len(latencies) == expected:
                            nonlocal during_backfill
                            during_backfill = d.call("status")["state"] == "catching_up"
                    if len(latencies) >= expected:
                        done.set()
                        return

        threading.Thread(target=listen, daemon=True).start()
        ready.wait(10)

        def writer(i: int, f: Path) -> None:
            if args.phases == "spread":
                # Independent agents write in no step with each other: each writer's
                # appends are offset by its share of the period (the default, "same",
                # has all 20 append at once every 100 ms: the worst case).
                time.sleep(i * 0.1 / args.files)
            for n in range(args.appends):
                token = f"f{i}-n{n}-{tag}"
                now = time.time()
                rec = {
                    "type": "user",
                    "sessionId": f.stem,
                    "uuid": token,
                    # The time of the append, as an agent writes it: a live session's
                    # last_event_at moves with each event, and its sort keys with it.
                    "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
                    + f".{int(now * 1000) % 1000:03d}Z",
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
        appends_from = time.time()
        assert d.proc is not None
        cpu_from = _task_times(d.proc.pid)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.wait(30)
        cpu = _cpu_since(d.proc.pid, cpu_from) / expected * 1e6
        steps = d.slow_steps(since=appends_from)
    finally:
        d.stop()
        shutil.rmtree(proj, ignore_errors=True)
    latencies.sort()
    n = len(latencies)
    p50 = latencies[n // 2] * 1000
    p99 = latencies[min(n - 1, int(n * 0.99))] * 1000
    load = ""
    if args.bigstore:
        load = f", on a copy of {args.bigstore} ({live_events} events)"
    elif args.backfill_copies:
        load = (f", during the cold backfill of {args.backfill_copies} copies of the corpus"
                f" (still catching up at the last: {'yes' if during_backfill else 'no'})")
    print(
        f"latency append -> subscriber ({name}), {args.files} files appended concurrently, {n} events"
        f"{load}: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1] * 1000:.1f} ms,"
        f" daemon CPU {cpu:.0f} µs per append"
    )
    if steps:
        print(f"  loop steps over {args.slow_step_ms:g} ms while appending: {steps}")
    return p50, p99, cpu


def wait_for_events(d: Daemon, n: int) -> None:
    while True:
        try:
            if d.call("status")["events"] >= n:
                return
        except DaemonNotRunning:
            pass
        time.sleep(0.05)


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
    env: dict[str, str] = {}
    aider = _idle_projects(base / "code", args.projects) if args.projects else 0
    if args.projects:
        env["AGENTSRC_PROJECTS"] = str(base / "code")
    d = Daemon(home, env=env)
    try:
        d.start()
        st = d.wait_live()
        assert st["files"] == args.files + aider, st["files"]
        time.sleep(2)
        assert d.proc is not None
        # schedstat, not /proc/<pid>/stat: its 10 ms ticks are a third of what is measured.
        c0, t0 = _task_times(d.proc.pid), time.perf_counter()
        time.sleep(args.seconds)
        c1, t1 = _cpu_since(d.proc.pid, c0), time.perf_counter()
        status = d.call("status")
        rec = status.get("reconcile", {})
        projects = status.get("projects", {}).get("scan", {})
    finally:
        d.stop()
        shutil.rmtree(base, ignore_errors=True)
    pct = c1 / (t1 - t0) * 100
    print(
        f"idle: {args.files} files tracked, {args.seconds:.0f} s: CPU {c1:.3f} s "
        f"= {pct:.3f}% of one core"
    )
    if rec:
        # The scan's cost spread over its interval: what a window with no scan in it
        # (the interval can be longer than the window) does not show.
        share = rec["cpu_ms"] / 1000 / rec["interval_s"] * 100
        print(f"  reconcile: {rec['files']} files, {rec['cpu_ms']:.0f} ms CPU per scan, every "
              f"{rec['interval_s']:.0f} s = {share:.3f}% of a core; {rec['scans']} scans")
    if args.projects and projects:
        share = projects["cpu_ms"] / 1000 / projects["interval_s"] * 100
        print(f"  project scan: {args.projects} projects, {projects['dirs']} folders listed, "
              f"{projects['files']} files found, {projects['cpu_ms']:.0f} ms CPU per pass, every "
              f"{projects['interval_s']:.0f} s = {share:.4f}% of a core; {projects['passes']} passes")


def _idle_projects(code: Path, n: int) -> int:
    """``n`` project folders as people have them (sources, a .git, node_modules, a
    virtual environment in some), one in 20 with an Aider history; how many of those."""
    aider = 0
    for i in range(n):
        proj = code / f"group{i % 40}" / f"project-{i}"
        for sub in ("src/pkg", ".git/objects", "node_modules/dep", "docs"):
            (proj / sub).mkdir(parents=True, exist_ok=True)
        for name in ("src/pkg/main.py", "src/pkg/util.py", "docs/index.md", "README.md"):
            (proj / name).write_text("x\n")
        if i % 10 == 0:
            (proj / ".venv").mkdir(exist_ok=True)
            (proj / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
        if i % 20 == 0:
            (proj / ".aider.chat.history.md").write_text(
                "\n# aider chat started at 2026-01-15 10:00:00\n\n#### hello  \n")
            aider += 1
    return aider


SETTLE_TARGET_MS = 20.0  # issue 31: every page method's p99, from live on


def _settle_cases(d: Daemon) -> list[tuple[str, str, dict[str, Any]]]:
    """The page methods a person meets first, with arguments from the store's own data."""
    sessions = d.call("sessions.list", {"limit": 1})["sessions"]
    sid = sessions[0]["id"] if sessions else ""
    return [
        ("sessions.list", "sessions.list", {"limit": 50}),
        ("sessions.get", "sessions.get", {"id": sid}),
        ("sessions.timeline", "sessions.timeline", {"id": sid, "limit": 50}),
        ("files.reads glob", "files.reads", {"path": "*.py", "limit": 50}),
        ("files.edits glob", "files.edits", {"path": "*.py", "limit": 50}),
        ("commands.list failed", "commands.list", {"failed": True, "limit": 50}),
        ("search.query", "search.query", {"q": "error", "limit": 20}),
        ("usage.summary", "usage.summary", {}),
    ]


def bench_settle(args: argparse.Namespace) -> None:
    """A cold backfill of ``--copies`` copies of the corpus, then what a person meets
    once it is over: the page methods' latencies while status says indexing and in the
    first ``--window`` seconds of live, the daemon's RSS at each point, and its CPU over
    ``--idle`` seconds of idle after that (reconcile passes and checkpoints included)."""
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    home = make_home(args.copies, work)
    d = Daemon(home)
    phases: dict[str, dict[str, list[float]]] = {"indexing": {}, "live": {}}
    rss: dict[str, float] = {}
    try:
        t0 = d.start()
        while True:  # catching up: the page methods are not timed yet
            try:
                st = d.call("status")
            except DaemonNotRunning:
                st = {"state": "starting"}
            if st["state"] in ("indexing", "live"):
                break
            time.sleep(0.2)
        caught_up = time.perf_counter() - t0
        assert d.proc is not None
        rss["caught up"] = Daemon._status_kb(d.proc.pid, "VmRSS") / 1024
        cases = _settle_cases(d)
        live_at: float | None = None
        state = st["state"]
        while live_at is None or time.perf_counter() - live_at < args.window:
            for name, method, params in cases:
                t = time.perf_counter()
                d.call(method, params)
                phases[state].setdefault(name, []).append((time.perf_counter() - t) * 1000)
            if live_at is None:
                state = d.call("status")["state"]
                if state == "live":
                    live_at = time.perf_counter()
                    rss["live"] = Daemon._status_kb(d.proc.pid, "VmRSS") / 1024
        indexing_s = live_at - t0 - caught_up
        time.sleep(max(0.0, 30 - args.window))
        rss["30 s after live"] = Daemon._status_kb(d.proc.pid, "VmRSS") / 1024
        st = d.call("status")
        c0, w0 = _task_times(d.proc.pid), time.perf_counter()
        time.sleep(args.idle)
        c1, w1 = _cpu_since(d.proc.pid, c0), time.perf_counter()
        peak = d.peak_rss_mb()
    finally:
        d.stop()
    print(f"settle: {args.copies} copies, {st['events']:,} events, {st['files']:,} files")
    print(f"  caught up in {caught_up:.1f} s, then indexing {indexing_s:.1f} s until live")
    print("  RSS: " + ", ".join(f"{k} {v:.0f} MB" for k, v in rss.items())
          + f"; daemon's peak {peak:.0f} MB")
    for phase, by_case in phases.items():
        label = "while indexing" if phase == "indexing" else f"first {args.window:.0f} s of live"
        print(f"  page methods {label} (ms: n, p50, p99, max; target p99 < {SETTLE_TARGET_MS:.0f}"
              f"{' once live' if phase == 'indexing' else ''}):")
        for name, xs in by_case.items():
            xs = sorted(xs)
            p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
            print(f"    {name:<22} {len(xs):5d} {statistics.median(xs):7.1f} {p99:7.1f}"
                  f" {xs[-1]:7.1f}")
    pct = c1 / (w1 - w0) * 100
    print(f"  idle over {w1 - w0:.0f} s after that: CPU {c1:.3f} s = {pct:.3f}% of a core")


def bench_resident(args: argparse.Namespace) -> None:
    """The daemon started on a copy of a built store (bench/bigstore.py: its events and
    its files on disk): its RSS once live and 30 s after, then its CPU over ``--seconds``
    of idle (reconcile passes and WAL checkpoints included, as a person's machine has
    them), the reconcile's own cost beside it."""
    store = Path(args.store)
    data = copy_store_data(store, Path(args.workdir))
    d = Daemon(store_home(store), env={"AGENTSRC_DATA_DIR": str(data)})
    try:
        d.start()
        st = d.wait_live(poll=0.2)
        assert d.proc is not None
        at_live = Daemon._status_kb(d.proc.pid, "VmRSS") / 1024
        time.sleep(30)
        after = Daemon._status_kb(d.proc.pid, "VmRSS") / 1024
        c0, w0 = _task_times(d.proc.pid), time.perf_counter()
        time.sleep(args.seconds)
        c1, w1 = _cpu_since(d.proc.pid, c0), time.perf_counter()
        end = Daemon._status_kb(d.proc.pid, "VmRSS") / 1024
        rec = d.call("status").get("reconcile", {})
    finally:
        d.stop()
        shutil.rmtree(data, ignore_errors=True)
    print(f"resident: {st['events']:,} events, {st['files']:,} files ({st['files_gone']:,} gone)")
    print(f"  RSS at live {at_live:.1f} MB, 30 s after {after:.1f} MB,"
          f" after {w1 - w0:.0f} s idle {end:.1f} MB")
    pct = c1 / (w1 - w0) * 100
    print(f"  idle CPU over {w1 - w0:.0f} s: {c1:.3f} s = {pct:.3f}% of a core")
    if rec:
        print(f"  reconcile: {rec['files']} files, {rec['cpu_ms']:.0f} ms CPU per scan, every "
              f"{rec['interval_s']:.0f} s; {rec['scans']} scans")


def bench_cli(args: argparse.Namespace) -> None:
    """Wall time of `agentsrc status` and `agentsrc sessions` against a live daemon on the
    corpus, each run alternating with `python -c pass` (the interpreter's floor) and the
    same command on the typer path (AGENTSRC_CLI_FAST=0), so drift hits all alike."""
    d = Daemon(CORPUS)
    agentsrc = str(Path(sys.executable).parent / "agentsrc")
    env = {**d.env, "AGENTSRC_SOCKET": str(d.sock)}
    subjects = {
        "python -c pass": ([sys.executable, "-c", "pass"], env),
        "agentsrc status": ([agentsrc, "status"], env),
        "agentsrc sessions": ([agentsrc, "sessions"], env),
        "status (typer)": ([agentsrc, "status"], {**env, "AGENTSRC_CLI_FAST": "0"}),
        "sessions (typer)": ([agentsrc, "sessions"], {**env, "AGENTSRC_CLI_FAST": "0"}),
    }
    times: dict[str, list[float]] = {name: [] for name in subjects}
    try:
        d.start()
        st = d.wait_live()
        for _ in range(args.runs):
            for name, (argv, e) in subjects.items():
                t0 = time.perf_counter()
                subprocess.run(argv, env=e, stdout=subprocess.DEVNULL, check=True)
                times[name].append(time.perf_counter() - t0)
    finally:
        d.stop()
    print(f"cli: {args.runs} runs each against a live daemon ({st['sessions']} sessions, "
          f"{st['events']} events), alternating")
    floor = statistics.median(times["python -c pass"])
    for name, ts in times.items():
        ts.sort()
        med = statistics.median(ts)
        p90 = ts[min(len(ts) - 1, int(len(ts) * 0.9))]
        print(f"  {name:<18} median {med * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms"
              f"  (floor + {(med - floor) * 1000:5.1f} ms)")


def bench_status(args: argparse.Namespace) -> None:
    """What one `status` over the socket costs the live daemon (its CPU, all threads,
    before and after ``--calls`` calls, one connection each as the CLI and every progress
    poll make), on the replicated corpus; with --baseline TREE, that tree's daemon on the
    same home too, the two alternating in rounds."""
    home = make_home(args.copies, Path(args.workdir))
    codes: list[Path | None] = [None]
    if args.baseline:
        codes = [Path(args.baseline).resolve(), None]
    daemons = {code: Daemon(home, code=code) for code in codes}
    per_call: dict[Path | None, list[tuple[float, float]]] = {code: [] for code in codes}
    try:
        for d in daemons.values():
            d.start()
            d.wait_live()
            while d.call("status")["search_index"]["state"] != "ready":
                time.sleep(0.2)
        for _ in range(args.rounds):
            for code, d in daemons.items():
                assert d.proc is not None
                # The process's CPU (its stat: the connections' threads have exited by
                # the end, and schedstat lists only the live ones), in 10 ms ticks.
                c0, t0 = d.cpu_seconds(), time.perf_counter()
                for _ in range(args.calls):
                    d.call("status")
                per_call[code].append(((d.cpu_seconds() - c0) / args.calls * 1000,
                                       (time.perf_counter() - t0) / args.calls * 1000))
    finally:
        for d in daemons.values():
            d.stop()
    print(f"status: {args.calls} calls a round, {args.rounds} rounds, on {args.copies} copies"
          " of the corpus, a connection each")
    for code, xs in per_call.items():
        name = f"baseline {args.baseline}" if code is not None else "this tree"
        print(f"  {name}: daemon CPU {statistics.median(x[0] for x in xs):.2f} ms a call"
              f" (rounds {', '.join(f'{x[0]:.2f}' for x in xs)}), wall"
              f" {statistics.median(x[1] for x in xs):.2f} ms")


def _task_times(pid: int) -> dict[str, int]:
    """Each live thread's CPU so far, in nanoseconds (schedstat: /proc/<pid>/stat's 10 ms
    ticks are a third of what the idle benches measure)."""
    out: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[task.name] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return out


def _task_cpu(pid: int) -> float:
    """CPU seconds of a live process's threads."""
    return sum(_task_times(pid).values()) / 1e9


def _cpu_since(pid: int, before: dict[str, int]) -> float:
    """CPU seconds of the process's threads since ``before`` (``_task_times``): a thread
    born since counts whole; one that exited since is left out (its time after
    ``before`` is not known), where a difference of two sums went negative."""
    now = _task_times(pid)
    return sum(ns - before.get(tid, 0) for tid, ns in now.items()) / 1e9


def _started_phases(d: Daemon) -> str:
    """The ``start_ms`` of the daemon's ``started`` log line (a daemon that logs it)."""
    try:
        lines = (d.dir / "log").read_bytes().splitlines()
    except OSError:
        return ""
    for line in lines:
        with contextlib.suppress(orjson.JSONDecodeError):
            rec = orjson.loads(line)
            if isinstance(rec, dict) and rec.get("event") == "started" and rec.get("start_ms"):
                return ", ".join(f"{k} {v:.0f}" for k, v in rec["start_ms"].items())
    return ""


def bench_startup(args: argparse.Namespace) -> None:
    """Restarts of the daemon on a built store (bench/bigstore.py: DIR/data, DIR/home):
    the time until the socket answers and until it is live, asked over the socket. The
    data dir is copied first (the original is never opened); the home is only read.
    With --baseline TREE, that tree's daemon and this one's start in turn on the copy
    (neither migrates it: they must be at the same schema)."""
    store = Path(args.store)
    home = store_home(store)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ass-", dir=args.workdir))
    data = work / "data"
    codes: list[Path | None] = [None]
    if args.baseline:
        codes = [Path(args.baseline).resolve(), None]
    try:
        t = time.perf_counter()
        shutil.copytree(store / "data", data, copy_function=shutil.copyfile)
        os.sync()  # the copy written back before the starts are timed
        db = sum(f.stat().st_size for f in data.iterdir())
        print(f"startup: {store.name}: data dir copied ({db / 2**30:.2f} GiB) in "
              f"{time.perf_counter() - t:.0f} s")
        figs: dict[str, list[tuple[float, float, float]]] = {}
        for i in range(args.repeats + 1):  # the first start may migrate: reported apart
            for code in codes if i % 2 == 0 else codes[::-1]:
                name = "baseline" if code is not None else "this tree"
                env = {"AGENTSRC_DATA_DIR": str(data)}
                if args.profile:
                    env["AGENTSRC_PROFILE_START"] = str(Path(args.profile).resolve() / f"start-{i}-{name[0]}.prof")
                d = Daemon(home, env=env, code=code)
                d.log_level = "info"  # the started line with its phases
                try:
                    t0 = d.start()
                    st = d.wait_live(poll=0.02)
                    t1 = time.perf_counter()
                    assert d.proc is not None
                    used = _task_cpu(d.proc.pid)
                    assert d.ready_at is not None
                    f = (d.ready_at - t0, t1 - t0, used)
                    print(f"  start {i} ({name}): socket answers {f[0]:.2f} s, live {f[1]:.2f} s, "
                          f"CPU {used:.2f} s; {st['events']:,} events, {st['sessions']:,} sessions, "
                          f"{st['files']:,} files; reconcile {st['reconcile']['cpu_ms']:.0f} ms CPU, "
                          f"next in {st['reconcile']['interval_s']:.0f} s"
                          + ("  (first: may migrate)" if i == 0 else ""))
                    phases = _started_phases(d)
                    if phases:
                        print(f"    phases (wall ms): {phases}")
                    if i:
                        figs.setdefault(name, []).append(f)
                finally:
                    d.stop()
        for name, fs in figs.items():
            print(f"  {name}: median of {len(fs)}: socket {statistics.median(x[0] for x in fs):.2f} s, "
                  f"live {statistics.median(x[1] for x in fs):.2f} s, "
                  f"CPU {statistics.median(x[2] for x in fs):.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
    b.add_argument("--settle", type=float, default=5.0,
                   help="seconds after the search index is complete before the live RSS")
    b.add_argument("--no-agentsview", action="store_true")
    b.add_argument("--baseline", default="",
                   help="a git ref: its daemon (scanning on) runs in every repeat too")
    b.add_argument("--agentsview-version", default="0.46.1", help=argparse.SUPPRESS)
    bi = sub.add_parser("backfill-index")
    bi.add_argument("--copies", type=int, default=5)
    bi.add_argument("--repeats", type=int, default=4)
    bi.add_argument("--workdir", default="/tmp/agentsrc-bench-index")
    lat = sub.add_parser("latency")
    lat.add_argument("--files", type=int, default=20)
    lat.add_argument("--appends", type=int, default=50)
    lat.add_argument("--backfill-copies", type=int, default=0,
                     help="append while the daemon backfills this many copies of the corpus")
    lat.add_argument("--workdir", default="/tmp/agentsrc-bench")
    lat.add_argument("--bigstore", default="",
                     help="a bench/bigstore.py store (its dir: data/ and home/): append on top of a copy")
    lat.add_argument("--baseline", default="",
                     help="another tree (main's checkout): its daemon and this one's alternate")
    lat.add_argument("--baseline-env", action="append", default=[], metavar="NAME=VALUE",
                     help="environment of the baseline's daemon (--baseline . and a flag: "
                          "this tree with a feature off)")
    lat.add_argument("--runs", type=int, default=1, help="runs of each daemon")
    lat.add_argument("--phases", choices=("same", "spread"), default="same",
                     help="writers append in step (all at once every 100 ms) or spread over it")
    lat.add_argument("--slow-step-ms", type=float, default=30.0,
                     help="the daemon logs loop steps longer than this (AGENTSRC_SLOW_STEP_MS)")
    idle = sub.add_parser("idle")
    idle.add_argument("--files", type=int, default=500)
    idle.add_argument("--seconds", type=float, default=60)
    idle.add_argument("--projects", type=int, default=0,
                      help="project folders under a folder named with $AGENTSRC_PROJECTS")
    su = sub.add_parser("startup")
    su.add_argument("--store", required=True)
    su.add_argument("--repeats", type=int, default=3)
    su.add_argument("--workdir", default="/tmp")
    su.add_argument("--baseline", default="", help="another tree (main's checkout): alternate")
    su.add_argument("--profile", default="", help="a directory: each start's cProfile until live")
    cl = sub.add_parser("cli")
    cl.add_argument("--runs", type=int, default=30)
    stp = sub.add_parser("status")
    stp.add_argument("--copies", type=int, default=20)
    stp.add_argument("--calls", type=int, default=1000)
    stp.add_argument("--rounds", type=int, default=3)
    stp.add_argument("--workdir", default="/tmp/agentsrc-bench")
    stp.add_argument("--baseline", default="", help="another tree (main's checkout)")
    sk = sub.add_parser("sink")
    sk.add_argument("--copies", type=int, default=20)
    sk.add_argument("--repeats", type=int, default=3)
    sk.add_argument("--files", type=int, default=10)
    sk.add_argument("--appends", type=int, default=30)
    sk.add_argument("--workdir", default="/tmp/agentsrc-bench")
    an = sub.add_parser("answers", help="every socket answer, git REF's daemon vs this tree's")
    an.add_argument("--copies", type=int, default=3)
    an.add_argument("--baseline", default="main")
    an.add_argument("--workdir", default="/tmp/agentsrc-bench-answers")
    sz = sub.add_parser("size", help="bytes per event per table and index (bench/size.py)")
    sz.add_argument("--copies", type=int, default=5)
    sz.add_argument("--baseline", default="main")
    sz.add_argument("--workdir", default="/tmp/agentsrc-bench-size")
    scale.add_parser(sub)
    statusline.add_parser(sub)
    reprice.add_parser(sub)
    se = sub.add_parser("settle", help="a cold backfill, then the page methods while"
                        " indexing and in live's first minute, RSS, idle CPU")
    se.add_argument("--copies", type=int, default=100)
    se.add_argument("--window", type=float, default=60.0)
    se.add_argument("--idle", type=float, default=600.0)
    se.add_argument("--workdir", default="/tmp/agentsrc-bench")
    rs = sub.add_parser("resident", help="RSS once live and idle CPU on a built store")
    rs.add_argument("--store", required=True, help="a bench/bigstore.py build (its dir)")
    rs.add_argument("--seconds", type=float, default=600.0)
    rs.add_argument("--workdir", default="/tmp/agentsrc-bench")
    sub.add_parser("all")
    args = ap.parse_args()
    if args.cmd == "size":
        from size import bench_size  # it imports this module

        bench_size(args)
    elif args.cmd == "all":
        bench_backfill(argparse.Namespace(copies=20, repeats=3, scan="both", workdir="/tmp/agentsrc-bench",
                                          settle=5.0, no_agentsview=False, agentsview_version="0.46.1",
                                          baseline=""))
        bench_latency(argparse.Namespace(files=20, appends=50, backfill_copies=0, bigstore="",
                                         baseline="", runs=1, slow_step_ms=30.0,
                                         workdir="/tmp/agentsrc-bench"))
        bench_idle(argparse.Namespace(files=500, seconds=60, projects=0))
    else:
        {"backfill": bench_backfill, "backfill-index": bench_backfill_index,
         "latency": bench_latency, "idle": bench_idle, "sink": bench_sink, "cli": bench_cli,
         "status": bench_status,
         "startup": bench_startup, "scale": scale.bench_scale,
         "statusline": statusline.bench_statusline, "reprice": reprice.bench_reprice,
         "answers": bench_answers, "settle": bench_settle,
         "resident": bench_resident}[args.cmd](args)


if __name__ == "__main__":
    main()
