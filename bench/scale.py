"""`bench/run.py scale`: every socket method that returns a page, and the reports, timed
over the socket against a copy of the 10-million-event store (bench/bigstore.py), with
arguments drawn from the data: common and rare paths, big and small sessions, deep
pages reached through the cursors. Prints p50 and p99 per case, bytes per event, and
whether each case meets its target (pages p99 < 20 ms, reports < 200 ms).

    .venv/bin/python bench/run.py scale [--events 10000000] [--files 20000] [--repeats 50]
        [--store DIR: a build of another schema version, migrated on the copy]
        [--baseline REF: that git ref's daemon on a second copy, case by case beside this
         tree's, in alternating order] [--only NAME,...: the cases whose names contain one]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsrc_daemon.rpc.client import Client

import bigstore

PAGE_TARGET_MS = 20.0
REPORT_TARGET_MS = 200.0
CASE_BUDGET_S = 5.0  # at most this long repeating one case (at least 3 samples)
CALL_TIMEOUT_S = 60.0  # a call this slow ends its case
DEEP_PAGES = 30  # pages followed through the cursor before a deep page is timed


@dataclass
class Case:
    name: str
    method: str
    params: dict[str, Any]
    report: bool = False
    # Follow this many pages first (the cursor field of the answer and the param it goes
    # back in): the page timed is the one after them.
    deep: tuple[int, str, str] | None = None
    times: list[float] = field(default_factory=list)
    rows: int = 0
    timed_out: bool = False


def _one(db: Path, sql: str, args: tuple[Any, ...] = ()) -> Any:
    rows = bigstore._query(db, sql, args)
    return rows[0][0] if rows and len(rows[0]) == 1 else (rows[0] if rows else None)


def draw_cases(db: Path) -> list[Case]:
    """Arguments from the store itself (read-only queries on the copy)."""
    big = _one(db, "SELECT id FROM sessions ORDER BY tool_calls + messages DESC LIMIT 1")
    small = _one(db, "SELECT id FROM sessions WHERE prompts = 1 AND tool_calls BETWEEN 1 AND 5"
                     " ORDER BY id LIMIT 1")
    cwd = _one(db, "SELECT cwd FROM sessions WHERE cwd IS NOT NULL GROUP BY cwd ORDER BY COUNT(*) DESC LIMIT 1")
    project = _one(db, "SELECT project_root FROM sessions WHERE project_root IS NOT NULL"
                       " GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1")
    model = _one(db, "SELECT model FROM sessions WHERE model IS NOT NULL GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1")
    rare_model = _one(db, "SELECT model FROM sessions WHERE model IS NOT NULL GROUP BY 1 ORDER BY COUNT(*) LIMIT 1")
    last = _one(db, "SELECT MAX(last_event_at) FROM sessions")
    # Paths: the most read, and one read once (by the partial path index).
    paths = bigstore._query(db, "SELECT path, COUNT(*) FROM events WHERE path IS NOT NULL"
                                " GROUP BY path ORDER BY 2 DESC")
    common = str(paths[0][0])
    rare = str(next(p for p, n in reversed(paths) if n == 1 and str(p).startswith("/")))
    rel = _one(db, "SELECT json_extract(data, '$.rel_path') FROM events WHERE path = ?"
                   " AND json_extract(data, '$.rel_path') IS NOT NULL LIMIT 1", (common,)) or os.path.basename(common)
    edited = _one(db, "SELECT path FROM events WHERE path IS NOT NULL AND kind = 'edit' LIMIT 1")
    glob_dir = os.path.dirname(common) + "/*"
    types = Counter(t for (t,) in bigstore._query(
        db, "SELECT json_extract(data, '$.type') FROM events WHERE kind = 'secret' LIMIT 2000"))
    common_type = types.most_common(1)[0][0] if types else "Secret Keyword"
    secret_path = _one(db, "SELECT path FROM events WHERE kind = 'secret' AND path IS NOT NULL LIMIT 1")
    call_id = _one(db, "SELECT call_id FROM events WHERE session_id = ? AND call_id IS NOT NULL LIMIT 1", (big,))
    since = "30d" if last is None else last[:10] + "T00:00:00Z"
    cases = [
        # Not a page, but what `agentsrc status` and every progress poll ask: held to a page's
        # target (schema 18: no sources row read).
        Case("status", "status", {}),
        Case("sessions.list", "sessions.list", {}),
        Case("sessions.list agent", "sessions.list", {"agent": "codex"}),
        Case("sessions.list cwd", "sessions.list", {"cwd": cwd}),
        Case("sessions.list project", "sessions.list", {"project": project}),
        Case("sessions.list model (common)", "sessions.list", {"model": model}),
        Case("sessions.list model (rare)", "sessions.list", {"model": rare_model}),
        Case("sessions.list since", "sessions.list", {"since": since}),
        Case("sessions.list until", "sessions.list", {"until": "2025-10-01T00:00:00Z"}),
        Case("sessions.list sort started", "sessions.list", {"sort": "started"}),
        Case("sessions.list sort tokens", "sessions.list", {"sort": "tokens"}),
        Case("sessions.list sort tools", "sessions.list", {"sort": "tools"}),
        Case("sessions.list search", "sessions.list", {"search": "error"}),
        Case("sessions.list failed commands", "sessions.list", {"failed_commands": True}),
        Case("sessions.list has findings", "sessions.list", {"has_findings": True}),
        Case("sessions.list deep page", "sessions.list", {"limit": 50},
             deep=(DEEP_PAGES, "next_cursor", "cursor")),
        Case("sessions.get big", "sessions.get", {"id": big}),
        Case("sessions.get small", "sessions.get", {"id": small}),
        Case("events.list", "events.list", {"limit": 100}),
        Case("events.list session big", "events.list", {"session_id": big, "limit": 100}),
        Case("events.list session deep", "events.list", {"session_id": big, "limit": 100},
             deep=(DEEP_PAGES, "next_since_id", "since_id")),
        Case("events.list kind prompt deep", "events.list", {"kind": "prompt", "limit": 100},
             deep=(DEEP_PAGES, "next_since_id", "since_id")),
        Case("events.list call_id", "events.list", {"session_id": big, "call_id": call_id}),
        Case("files.reads", "files.reads", {}),
        Case("files.reads path (common)", "files.reads", {"path": common}),
        Case("files.reads path (rare)", "files.reads", {"path": rare}),
        Case("files.reads rel path", "files.reads", {"path": rel}),
        Case("files.reads glob *.py", "files.reads", {"path": "*.py"}),
        Case("files.reads glob abs dir", "files.reads", {"path": glob_dir}),
        Case("files.reads project", "files.reads", {"project": project}),
        Case("files.reads session", "files.reads", {"session_id": big}),
        Case("files.reads desc", "files.reads", {"order": "desc"}),
        Case("files.reads desc deep", "files.reads", {"order": "desc"},
             deep=(DEEP_PAGES, "next_before_id", "before_id")),
        Case("files.reads deep", "files.reads", {}, deep=(DEEP_PAGES, "next_since_id", "since_id")),
        Case("files.edits", "files.edits", {}),
        Case("files.edits path", "files.edits", {"path": edited}),
        # As the web page's file history asks: a path's newest 200 first.
        Case("files.reads path desc (web)", "files.reads",
             {"path": common, "order": "desc", "limit": 200}),
        Case("files.edits path desc (web)", "files.edits",
             {"path": edited, "order": "desc", "limit": 200}),
        Case("files.edits rel path", "files.edits", {"path": os.path.basename(edited or "x")}),
        Case("files.edits glob", "files.edits", {"path": "*.ts"}),
        Case("commands.list", "commands.list", {}),
        Case("commands.list failed", "commands.list", {"failed": True}),
        Case("commands.list exit_code", "commands.list", {"exit_code": 1}),
        Case("commands.list session", "commands.list", {"session_id": big}),
        Case("commands.list project", "commands.list", {"project": project}),
        Case("commands.list desc deep", "commands.list", {"order": "desc"},
             deep=(DEEP_PAGES, "next_before_id", "before_id")),
        Case("findings.list", "findings.list", {}),
        Case("findings.list type", "findings.list", {"type": common_type}),
        Case("findings.list path", "findings.list", {"path": secret_path}),
        Case("findings.list session", "findings.list", {"session_id": big}),
        Case("findings.list desc", "findings.list", {"order": "desc"}),
        Case("findings.list deep", "findings.list", {}, deep=(DEEP_PAGES, "next_since_id", "since_id")),
        Case("search.query", "search.query", {"q": "error"}),
        Case("search.query recent", "search.query", {"q": "test", "order": "recent"}),
        # Ranked search beyond the cap (store/ranked.py): the commonest word, and a page
        # deep in a capped listing (its cursor carries the candidates' cut).
        Case("search.query common word", "search.query", {"q": "the"}),
        Case("search.query deep page", "search.query", {"q": "error"},
             deep=(10, "next_cursor", "cursor")),
        Case("sessions.turns big", "sessions.turns", {"id": big}),
        Case("sessions.turns deep", "sessions.turns", {"id": big, "limit": 5},
             deep=(5, "next_after_id", "after_id")),
        Case("findings.report", "findings.report", {}, report=True),
        Case("findings.report since", "findings.report", {"since": since}, report=True),
        Case("sessions.files big", "sessions.files", {"id": big}, report=True),
        Case("sessions.files small", "sessions.files", {"id": small}, report=True),
        Case("usage.summary", "usage.summary", {}, report=True),
        Case("usage.summary since", "usage.summary", {"since": since}, report=True),
        Case("usage.summary agent", "usage.summary", {"agent": "claude-code"}, report=True),
        Case("usage.summary project", "usage.summary", {"project": project}, report=True),
        Case("usage.summary until", "usage.summary", {"until": "2025-10-01T00:00:00Z"}, report=True),
        Case("usage.summary since until", "usage.summary",
             {"since": "2025-09-15T08:00:00Z", "until": "2025-10-01T12:00:00Z"}, report=True),
        Case("usage.summary agent since", "usage.summary", {"agent": "claude-code", "since": since},
             report=True),
        Case("usage.summary project until", "usage.summary",
             {"project": project, "until": "2025-10-01T00:00:00Z"}, report=True),
        # Cost (issue 27): usage.report's groupings, the blocks, the status line.
        *(Case(f"usage.report by {by}", "usage.report", {"by": by}, report=True)
          for by in ("day", "week", "month", "session", "project", "model", "agent")),
        Case("usage.report by session since", "usage.report", {"by": "session", "since": since},
             report=True),
        Case("usage.report by week agent", "usage.report", {"by": "week", "agent": "codex"},
             report=True),
        Case("usage.blocks", "usage.blocks", {"since": since}, report=True),
        Case("usage.statusline", "usage.statusline", {"session_id": big, "day_start": since}),
    ]
    return [c for c in cases if all(v is not None for v in c.params.values())]


def _rows_of(answer: dict[str, Any]) -> int:
    for key in ("sessions", "events", "findings", "hits", "turns", "files"):
        if isinstance(answer.get(key), list):
            return len(answer[key])
    return 1


def _call(client: Client, case: Case, params: dict[str, Any]) -> Any:
    """The case's call; None after one over CALL_TIMEOUT_S, which ends the case (recorded
    as that long)."""
    try:
        return client.call(case.method, params)
    except TimeoutError:
        case.times.append(CALL_TIMEOUT_S * 1000)
        case.timed_out = True
        return None


def run_case(client: Client, case: Case, repeats: int) -> None:
    """Time one case; a call over CALL_TIMEOUT_S is recorded as that long and ends the
    case (the client is then reconnected by the caller)."""
    params = dict(case.params)
    if case.deep is not None:
        pages, field_name, param = case.deep
        for _ in range(pages):
            answer = _call(client, case, params)
            if answer is None:
                return
            nxt = answer.get(field_name)
            if not nxt:
                break
            params[param] = nxt
    spent = time.perf_counter()
    for i in range(repeats + 1):  # the first call warms the caches, untimed
        if i >= 4 and time.perf_counter() - spent > CASE_BUDGET_S:
            break  # a slow case: its few samples say enough
        t0 = time.perf_counter()
        answer = _call(client, case, params)
        if answer is None:
            return
        if i:
            case.times.append((time.perf_counter() - t0) * 1000)
    case.rows = _rows_of(answer)


def p99(times: list[float]) -> float:
    s = sorted(times)
    return s[min(len(s) - 1, int(len(s) * 0.99))]


def _meets(c: Case) -> bool:
    target = REPORT_TARGET_MS if c.report else PAGE_TARGET_MS
    return not c.timed_out and (statistics.median(c.times) if c.report else p99(c.times)) < target


def _print_case(c: Case) -> None:
    target = REPORT_TARGET_MS if c.report else PAGE_TARGET_MS
    slow = f" (a call over {CALL_TIMEOUT_S:.0f} s)" if c.timed_out else ""
    print(f"{c.name:40} {c.rows:>5} {len(c.times):>3} {statistics.median(c.times):>9.1f} {p99(c.times):>9.1f}"
          f"  {'p50' if c.report else 'p99'} < {target:.0f}: {'ok' if _meets(c) else 'MISSED'}{slow}", flush=True)


def _baseline_code(ref: str, dest: Path) -> Path:
    """The tree of a git ref (`git archive`), to run its daemon."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(bigstore.REPO), "archive", ref],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def _selected(cases: list[Case], only: str | None) -> list[Case]:
    names = [n.strip() for n in (only or "").split(",") if n.strip()]
    return [c for c in cases if not names or any(n in c.name for n in names)]


def _timed(client: Client, sock: Path, case: Case, repeats: int) -> Client:
    """run_case, reconnecting after a call that timed out; returns the client to go on with."""
    try:
        run_case(client, case, max(3, repeats // 5) if case.report else repeats)
    finally:
        if case.timed_out:
            client.__exit__(None, None, None)
            client = Client(sock, timeout=CALL_TIMEOUT_S).__enter__()
    return client


def bench_scale_baseline(args: argparse.Namespace, store: bigstore.BigStore, work: Path) -> None:
    """This tree's daemon and the baseline's (a git ref), each on its own copy, both live
    at once: each case is timed on one then the other, the order alternating by case."""
    rev = subprocess.run(["git", "-C", str(bigstore.REPO), "rev-parse", "--short", args.baseline],
                         check=True, capture_output=True, text=True).stdout.strip()
    code = _baseline_code(args.baseline, work / "baseline-code")
    runs = {}
    for who in ("baseline", "subject"):
        t0 = time.perf_counter()
        data = bigstore.checkout(store, work / who)
        print(f"{who}: copied in {time.perf_counter() - t0:.0f} s", flush=True)
        runs[who] = (data, bigstore.DaemonRun(Path(store.home), data,
                                              code=code if who == "baseline" else None))
    try:
        for who, (_data, d) in runs.items():  # one at a time: a migration's time is its own
            t0 = time.perf_counter()
            d.start()
            st = d.wait_live()
            print(f"{who} ({args.baseline} {rev} or this tree) live in {time.perf_counter() - t0:.1f} s"
                  " (schema migrations included)", flush=True)
        db = runs["subject"][0] / bigstore.DB_NAME
        cases = _selected(draw_cases(db), args.only)
        print(f"\n{'case':40} {'rows':>5} {'base p50':>9} {'p99':>8} {'this p50':>9} {'p99':>8}"
              f" {'p50 ratio':>9}  target (this tree)", flush=True)
        clients = {who: Client(d.sock, timeout=CALL_TIMEOUT_S).__enter__() for who, (_, d) in runs.items()}
        pairs = []
        for i, case in enumerate(cases):
            mine = {who: dataclasses.replace(case, times=[]) for who in runs}
            for who in ("baseline", "subject") if i % 2 == 0 else ("subject", "baseline"):
                clients[who] = _timed(clients[who], runs[who][1].sock, mine[who], args.repeats)
            b, s = mine["baseline"], mine["subject"]
            pairs.append(s)
            target = REPORT_TARGET_MS if s.report else PAGE_TARGET_MS
            print(f"{case.name:40} {s.rows:>5} {statistics.median(b.times):>9.1f} {p99(b.times):>8.1f}"
                  f" {statistics.median(s.times):>9.1f} {p99(s.times):>8.1f}"
                  f" {statistics.median(s.times) / max(statistics.median(b.times), 1e-9):>9.3f}"
                  f"  {'p50' if s.report else 'p99'} < {target:.0f}: {'ok' if _meets(s) else 'MISSED'}",
                  flush=True)
        for c in clients.values():
            c.__exit__(None, None, None)
        sizes = {who: Path(data / bigstore.DB_NAME).stat().st_size for who, (data, _) in runs.items()}
    finally:
        for _, d in runs.values():
            d.stop()
    print(f"\n{sum(_meets(c) for c in pairs)}/{len(pairs)} cases meet their target (this tree)")
    events = st["events"]
    print(f"database: baseline {sizes['baseline'] / 1e9:.3f} GB, this tree {sizes['subject'] / 1e9:.3f} GB"
          f" for {events:,} events: {sizes['baseline'] / events:.1f} -> {sizes['subject'] / events:.1f}"
          " bytes per event (WAL aside)")


def bench_scale(args: argparse.Namespace) -> None:
    if args.store:
        # A build of another schema (the same store before and after a migration): the
        # daemon migrates the copy it is given.
        store = bigstore.load(Path(args.store))
    else:
        store = bigstore.build(Path(args.out), args.events, args.files)
    work = Path(tempfile.mkdtemp(prefix="scale-", dir=args.workdir))
    if args.baseline:
        try:
            bench_scale_baseline(args, store, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        t0 = time.perf_counter()
        data = bigstore.checkout(store, work)
        print(f"store: {store.events:,} events, {store.sessions:,} sessions, {store.files:,} files"
              f" ({store.files_gone:,} gone); copied in {time.perf_counter() - t0:.0f} s")
        with bigstore.DaemonRun(Path(store.home), data) as d:
            t0 = time.perf_counter()
            st = d.wait_live()
            print(f"daemon live in {time.perf_counter() - t0:.1f} s (schema migrations included)")
            db = data / bigstore.DB_NAME
            cases = _selected(draw_cases(db), args.only)
            print(f"\n{'case':40} {'rows':>5} {'n':>3} {'p50 ms':>9} {'p99 ms':>9}  target", flush=True)
            client = Client(d.sock, timeout=CALL_TIMEOUT_S).__enter__()
            for case in cases:
                try:
                    run_case(client, case, max(3, args.repeats // 5) if case.report else args.repeats)
                finally:
                    if case.timed_out:
                        client.__exit__(None, None, None)
                        client = Client(d.sock, timeout=CALL_TIMEOUT_S).__enter__()
                _print_case(case)
            client.__exit__(None, None, None)
            sizes = {s: Path(str(db) + s).stat().st_size if Path(str(db) + s).exists() else 0
                     for s in ("", "-wal")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    met = sum(_meets(c) for c in cases)
    print(f"\n{met}/{len(cases)} cases meet their target")
    events = st["events"]
    print(f"database {sizes[''] / 1e9:.2f} GB + WAL {sizes['-wal'] / 1e6:.0f} MB for {events:,} events:"
          f" {(sizes[''] + sizes['-wal']) / events:.0f} bytes per event")


def add_parser(sub: Any) -> None:
    sc = sub.add_parser("scale")
    sc.add_argument("--events", type=int, default=10_000_000)
    sc.add_argument("--files", type=int, default=20_000)
    sc.add_argument("--out", default=str(bigstore.DEFAULT_OUT))
    sc.add_argument("--repeats", type=int, default=50)
    sc.add_argument("--store", default=None, help="a build's directory (bigstore.py), whatever its schema")
    sc.add_argument("--workdir", default=None, help="where the copy of the store goes (default: beside it)")
    sc.add_argument("--baseline", default=None, help="a git ref: its daemon too, on a second copy, case by case")
    sc.add_argument("--only", default=None, help="comma-separated parts of case names: those cases only")
