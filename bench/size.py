"""Where the store's bytes go, per table and index (SQLite's dbstat), on a store built
by the real daemon from copies of the corpus: the baseline code (a git ref, main by
default) and this tree's, same data, same run. Then the baseline's store migrated by
this tree's daemon (the schema migration's time, and the bytes after it), and that
store compacted (tools/compact_store.py: a VACUUM).

    .venv/bin/python bench/run.py size [--copies 5] [--baseline main]
    .venv/bin/python bench/size.py --db PATH     # dbstat of one store
    .venv/bin/python bench/size.py --migrate-store DATA_DIR --home HOME [--kill-at 0.3]

Sizes are deterministic (the same data gives the same rows): no repeats needed. The WAL
is sampled every 20 ms during each backfill (its bound is 64 MiB).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import orjson
from run import REPO, Daemon, make_home  # bench/ is this script's own directory: on the path

from agentsrc_daemon.store.connection import compact


def dbstat(db: Path) -> tuple[int, dict[str, int], int]:
    """(events, bytes per table and index, file size) of a store (read-only)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (events,) = conn.execute("SELECT value FROM counters WHERE name = 'events'").fetchone()
        sizes = {name: int(size) for name, size in conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")}
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    finally:
        conn.close()
    return int(events), sizes, int(pages) * int(page_size)


class CodeDaemon(Daemon):
    """The daemon of another tree (the baseline's code)."""

    def __init__(self, home: Path, code: Path) -> None:
        super().__init__(home)
        self.code = code

    def start(self) -> float:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentsrc_daemon.cli", "run", "--json-logs",
             "--log-level", "warning"],
            env={**self.env, "PYTHONPATH": str(self.code)},
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "log", "wb"),  # noqa: SIM115
            cwd=str(self.code),
        )
        return t0


class WalSampler:
    """The largest size the -wal file reached, sampled every 20 ms."""

    def __init__(self, wal: Path) -> None:
        self.wal = wal
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            with contextlib.suppress(FileNotFoundError):
                self.peak = max(self.peak, self.wal.stat().st_size)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def keep_store(d: Daemon, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("agentsrc.db", "agentsrc.db-wal"):
        src = d.dir / "data" / name
        if src.exists():
            shutil.copy2(src, out / name)


def terminate(d: Daemon, timeout: float) -> None:
    """SIGTERM and wait: the daemon's own shutdown, its store closed cleanly."""
    assert d.proc is not None
    d.proc.terminate()
    d.proc.wait(timeout)
    d.proc = None


def stop_and_keep(d: Daemon, out: Path) -> None:
    """The daemon stopped, its store kept at ``out`` for the comparisons."""
    terminate(d, 60)
    keep_store(d, out)


def run_build(d: Daemon, out: Path) -> tuple[float, int]:
    """The backfill's time to live; the store is kept once its search index is built
    too (a cold backfill defers the index: measured at live, a store lacks most of it)."""
    wal = WalSampler(d.dir / "data" / "agentsrc.db-wal")
    try:
        t0 = d.start()
        d.wait_live(poll=0.05)
        elapsed = time.perf_counter() - t0
        while d.call("status").get("search_index", {}).get("state", "ready") != "ready":
            time.sleep(0.2)
        stop_and_keep(d, out)
    finally:
        peak = wal.stop()
        d.stop()
    return elapsed, peak


def status_or_none(d: Daemon) -> dict[str, Any] | None:
    """The daemon's status, or None while its socket does not answer (starting, killed)."""
    try:
        return dict(d.call("status"))
    except Exception:  # noqa: BLE001 - any failure to answer is "not yet"
        return None


def migrate_copy(baseline_store: Path, out: Path, home: Path) -> tuple[float, list[float], int]:
    """This tree's daemon on a copy of the baseline's store: until live (the migration,
    then a catch-up with nothing new). Returns the time, the fractions status showed,
    and the WAL's peak."""
    d = Daemon(home)
    data = d.dir / "data"
    data.mkdir(parents=True, mode=0o700)
    shutil.copy2(baseline_store / "agentsrc.db", data / "agentsrc.db")
    wal = WalSampler(data / "agentsrc.db-wal")
    fractions: list[float] = []
    try:
        t0 = d.start()
        while True:
            st = status_or_none(d)
            if st is None:  # not answering yet
                time.sleep(0.05)
                continue
            if st["state"] == "migrating":
                fractions.append(st["migration"]["fraction"])
            elif st["state"] == "live":
                break
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        stop_and_keep(d, out)
    finally:
        peak = wal.stop()
        d.stop()
    return elapsed, fractions, peak


def answers_of(d: Daemon, store: Path) -> dict[str, bytes]:
    """Every socket method's answer (tests/answers.py) of ``d`` serving a copy of
    ``store``."""
    sys.path.insert(0, str(REPO / "tests"))
    from answers import socket_answers

    data = d.dir / "data"
    data.mkdir(parents=True, mode=0o700)
    shutil.copyfile(store / "agentsrc.db", data / "agentsrc.db")
    try:
        d.start()
        d.wait_live(poll=0.05)
        return socket_answers(lambda m, p: d.call(m, p))
    finally:
        d.stop()


def report(label_sizes: list[tuple[str, int, dict[str, int], int]]) -> None:
    names = sorted({n for _, _, s, _ in label_sizes for n in s},
                   key=lambda n: -max(s.get(n, 0) for _, _, s, _ in label_sizes))
    head = "".join(f"{label:>14}" for label, *_ in label_sizes)
    print(f"{'bytes per event':<34}{head}")
    for name in names:
        cells = [s.get(name, 0) / max(1, ev) for _, ev, s, _ in label_sizes]
        if max(cells) < 1:
            continue
        print(f"  {name:<32}" + "".join(f"{c:14.1f}" for c in cells))
    totals = [sum(s.values()) / max(1, ev) for _, ev, s, _ in label_sizes]
    files = [f / max(1, ev) for _, ev, _, f in label_sizes]
    print(f"  {'all tables and indexes':<32}" + "".join(f"{c:14.1f}" for c in totals))
    print(f"  {'the file (with free pages)':<32}" + "".join(f"{c:14.1f}" for c in files))
    base = totals[0]
    print("ratio to " + label_sizes[0][0] + ": " + ", ".join(
        f"{label} {t / base:.3f}" for (label, *_), t in zip(label_sizes[1:], totals[1:], strict=True)))


def bench_size(args: argparse.Namespace) -> None:
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    home = make_home(args.copies, work)
    tmp = Path(tempfile.mkdtemp(prefix="size-", dir="/tmp"))
    try:
        code = tmp / "baseline"
        code.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.baseline],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.baseline],
                             check=True, capture_output=True, text=True).stdout.strip()
        print(f"size: {args.copies} copies of the corpus + one 50 MB line; baseline {args.baseline}"
              f" ({rev}), subject this tree")
        t_base, wal_base = run_build(CodeDaemon(home, code), tmp / "base")
        t_new, wal_new = run_build(Daemon(home), tmp / "new")
        t_mig, fractions, wal_mig = migrate_copy(tmp / "base", tmp / "migrated", home)
        # The same answers, byte for byte, from main's daemon and this tree's.
        before = answers_of(CodeDaemon(home, code), tmp / "base")
        after = answers_of(Daemon(home), tmp / "new")
        after_migrated = answers_of(Daemon(home), tmp / "migrated")
        differ = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
        differ_m = sorted(n for n in before.keys() | after_migrated.keys()
                          if before.get(n) != after_migrated.get(n))
        print(f"socket answers compared: {len(before)} ({sum(map(len, before.values()))} bytes);"
              f" differing from the baseline's: the baseline's store migrated and served by"
              f" this tree {len(differ_m)} {differ_m[:5]}; this tree's own build"
              f" {len(differ)} {differ[:5]}")
        shutil.copytree(tmp / "migrated", tmp / "compacted")
        t0 = time.perf_counter()
        compact(tmp / "compacted" / "agentsrc.db")
        t_compact = time.perf_counter() - t0
        stats = [("baseline", *dbstat(tmp / "base" / "agentsrc.db")),
                 ("subject", *dbstat(tmp / "new" / "agentsrc.db")),
                 ("migrated", *dbstat(tmp / "migrated" / "agentsrc.db")),
                 ("compacted", *dbstat(tmp / "compacted" / "agentsrc.db"))]
        print(f"events: {', '.join(f'{label} {ev}' for label, ev, _, _ in stats)}")
        report(stats)
        print(f"backfill to live: baseline {t_base:.1f}s, subject {t_new:.1f}s; "
              f"WAL peak: baseline {wal_base / 2**20:.1f} MiB, subject {wal_new / 2**20:.1f} MiB")
        shown = sorted(set(fractions))
        print(f"migration of the baseline's store (start to live): {t_mig:.1f}s, "
              f"{len(fractions)} status answers while migrating "
              f"(fractions {shown[:1]}..{shown[-1:]}), WAL peak {wal_mig / 2**20:.1f} MiB; "
              f"compacted (tools/compact_store.py, daemon stopped) in {t_compact:.1f}s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_migrate_store(
    store: Path, home: Path, kill_at: float, compact_too: bool, keep: Path | None = None
) -> None:
    """This tree's daemon migrating a COPY of ``store`` (a data dir of an older schema,
    e.g. bench/bigstore.py's): killed with SIGKILL once status shows ``kill_at`` done,
    then restarted and timed to live; dbstat before and after. With ``keep``, the copy
    is kept there as a build's directory (its data/ and a meta.json naming the build's
    home) for the other benchmarks (``bench/run.py scale --store KEEP``)."""
    d = Daemon(home)
    data = d.dir / "data"
    data.mkdir(parents=True, mode=0o700)
    t0 = time.perf_counter()
    for name in ("agentsrc.db", "agentsrc.db-wal"):
        if (store / name).exists():
            shutil.copyfile(store / name, data / name)
    os.chmod(data / "agentsrc.db", 0o600)
    print(f"copied {(data / 'agentsrc.db').stat().st_size / 2**30:.2f} GiB in "
          f"{time.perf_counter() - t0:.0f}s")
    try:
        ev, before, file_before = dbstat(data / "agentsrc.db")
        print(f"before: {ev} events, {sum(before.values()) / ev:.1f} B/event in tables and"
              f" indexes, the file {file_before / ev:.1f} B/event")
        wal = WalSampler(data / "agentsrc.db-wal")
        runs: list[tuple[float, float, float, int]] = []  # (seconds, first, last, answers)
        for attempt in ("killed", "resumed"):
            t0 = time.perf_counter()
            d.start()
            first = last = -1.0
            answers = 0
            while True:
                st = status_or_none(d)
                if st is None:  # not answering yet
                    time.sleep(0.2)
                    continue
                if st["state"] == "migrating":
                    answers += 1
                    last = st["migration"]["fraction"]
                    first = last if first < 0 else first
                    if attempt == "killed" and last >= kill_at:
                        assert d.proc is not None
                        d.proc.send_signal(signal.SIGKILL)
                        d.proc.wait()
                        d.proc = None
                        break
                elif st["state"] == "live":
                    break
                time.sleep(0.5)
            runs.append((time.perf_counter() - t0, first, last, answers))
            print(f"{attempt}: {runs[-1][0]:.0f}s, status said migrating {answers} times,"
                  f" fraction {first:.4f} -> {last:.4f}")
        terminate(d, 120)
        print(f"migration in all: {sum(r[0] for r in runs):.0f}s (killed at {kill_at:.0%},"
              f" resumed from {runs[1][1]:.4f}); WAL peak {wal.stop() / 2**20:.1f} MiB")
        ev, after, file_after = dbstat(data / "agentsrc.db")
        report([("before", ev, before, file_before), ("after", ev, after, file_after)])
        if compact_too:
            t0 = time.perf_counter()
            compact(data / "agentsrc.db")
            ev, compacted, file_c = dbstat(data / "agentsrc.db")
            print(f"compacted in {time.perf_counter() - t0:.0f}s")
            report([("before", ev, before, file_before), ("compacted", ev, compacted, file_c)])
        if keep is not None:
            keep_build(store, data, keep)
    finally:
        d.stop()


def keep_build(store: Path, data: Path, keep: Path) -> None:
    """The migrated copy moved to ``keep``/data, with the build's meta.json (beside
    ``store``) brought to this schema."""
    from agentsrc_daemon.store.migrations.versions import SCHEMA_VERSION

    (keep / "data").mkdir(parents=True, mode=0o700, exist_ok=True)
    for name in ("agentsrc.db", "hash.key"):
        src = data / name if (data / name).exists() else store / name
        if src.exists():
            shutil.copyfile(src, keep / "data" / name)
            os.chmod(keep / "data" / name, 0o600)
    meta = orjson.loads((store.parent / "meta.json").read_bytes())
    meta.update(dir=str(keep), data_dir=str(keep / "data"), schema_version=SCHEMA_VERSION,
                commit=f"{meta['commit']}; migrated by bench/size.py --migrate-store")
    (keep / "meta.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    print(f"kept in {keep}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, help="print the dbstat of one store and exit")
    ap.add_argument("--migrate-store", type=Path,
                    help="a data dir of an older schema: migrate a copy of it (bench_migrate_store)")
    ap.add_argument("--home", type=Path, help="the home of --migrate-store's store")
    ap.add_argument("--kill-at", type=float, default=0.3)
    ap.add_argument("--compact", action="store_true", help="then compact the copy, timed")
    ap.add_argument("--keep", type=Path, help="keep the migrated copy there (a build's dir)")
    ap.add_argument("--copies", type=int, default=5)
    ap.add_argument("--baseline", default="main")
    ap.add_argument("--workdir", default="/tmp/agentsrc-bench-size")
    args = ap.parse_args()
    if args.db:
        report([(args.db.name, *dbstat(args.db))])
        return
    if args.migrate_store:
        bench_migrate_store(args.migrate_store, args.home, args.kill_at, args.compact, args.keep)
        return
    bench_size(args)


if __name__ == "__main__":
    main()
