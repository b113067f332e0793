"""What `status` reads of the store, timed on a store with many sources (schema 18).

Each sources row holds its file's adapter state, which overflows its page: before
schema 18, status counted the present files and summed the skipped lines by scanning
the rows, states and all. This builds a store with ``--sources`` rows of ``--state``
bytes each (half of them gone, one in fifty with skipped lines: the shape of the 10
million event store's 44,204 sources), and a copy of it without schema 18's two indexes
(on which the same statements scan the rows: with the indexes there SQLite picks them
whatever the statement says), then times, alternating, the old statements on the copy and
the Reader's on the store, and checks they give the same answers.

    .venv/bin/python bench/status_reads.py [--sources 44000] [--state 1400] [--repeats 200]

With ``--bigstore DIR`` (a bench/bigstore.py build at schema 18 or later) and ``--baseline
TREE`` (an older checkout), it times `status` itself over the socket instead: each daemon
on a copy of the build's data dir, the baseline's with schema 18 undone (its two indexes
dropped, the version set back to 17), a connection per call as the CLI makes.

    .venv/bin/python bench/status_reads.py --bigstore DIR --baseline TREE [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import orjson
from run import Daemon, copy_store_data, store_home  # bench/ is on the path

from agentsrc_daemon.store import Reader, Store

OLD_COUNTS = ("SELECT COUNT(*) FROM sources WHERE gone_at IS NULL",
              "SELECT COUNT(*) FROM sources WHERE gone_at IS NOT NULL")
OLD_SKIPPED = "SELECT skipped FROM sources WHERE skipped != '{}'"


def build(db: Path, sources: int, state: int) -> None:
    store = Store(db)
    with store.conn:
        store.conn.executemany(
            "INSERT INTO sources(path, adapter, mode, state, skipped, gone_at) VALUES(?,?,?,?,?,?)",
            [(f"/home/dev/.codex/sessions/{i:06d}.jsonl", "codex", "jsonl", os.urandom(state),
              '{"bad_json": 1}' if i % 50 == 0 else "{}",
              "2026-01-01T00:00:00.000Z" if i % 2 else None) for i in range(sources)],
        )
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def without_schema_18(db: Path, into: Path) -> None:
    shutil.copyfile(db, into)
    conn = apsw.Connection(str(into))
    conn.execute("DROP INDEX sources_present; DROP INDEX sources_skipping")
    conn.close()


def old_reads(reader: Reader) -> tuple[list[int], dict[str, int]]:
    counts = [int(reader.conn.execute(q).fetchone()[0]) for q in OLD_COUNTS]
    totals: dict[str, int] = {}
    for (skipped,) in reader.conn.execute(OLD_SKIPPED):
        for k, v in orjson.loads(skipped).items():
            totals[k] = totals.get(k, 0) + int(v)
    return counts, totals


def new_reads(reader: Reader) -> tuple[list[int], dict[str, int]]:
    c = reader.counts()
    return [c["files"], c["files_gone"]], reader.skipped_totals()


def status_calls(build: Path, code: Path | None, undo_18: bool, calls: int, workdir: Path
                 ) -> tuple[float, float, float]:
    """Median and p99 wall of ``calls`` status calls, and the daemon's CPU a call (ms), of
    ``code``'s daemon (this tree's: None) on a copy of the build's data dir."""
    data = copy_store_data(build, workdir)
    if undo_18:
        conn = apsw.Connection(str(data / "agentsrc.db"))
        conn.execute("DROP INDEX sources_present; DROP INDEX sources_skipping;"
                     " PRAGMA user_version=17")
        conn.close()
    d = Daemon(store_home(build), {"AGENTSRC_DATA_DIR": str(data)}, code)
    try:
        d.start()
        d.wait_live()
        time.sleep(2)
        walls = []
        c0 = d.cpu_seconds()
        for _ in range(calls):
            t0 = time.perf_counter()
            d.call("status")
            walls.append((time.perf_counter() - t0) * 1000)
        cpu = (d.cpu_seconds() - c0) / calls * 1000
    finally:
        d.stop()
        shutil.rmtree(data, ignore_errors=True)
    walls.sort()
    return statistics.median(walls), walls[max(0, int(len(walls) * 0.99) - 1)], cpu


def main_bigstore(args: argparse.Namespace) -> None:
    build = Path(args.bigstore)
    with tempfile.TemporaryDirectory(prefix="status-", dir=args.workdir) as tmp:
        print(f"status over the socket: {args.calls} calls, a connection each, on a copy of {build.name}")
        for name, code in (("baseline", Path(args.baseline).resolve()), ("this tree", None)):
            p50, p99, cpu = status_calls(build, code, code is not None, args.calls, Path(tmp))
            print(f"  {name:10s} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  daemon CPU {cpu:6.2f} ms a call")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=44_000)
    ap.add_argument("--state", type=int, default=1400, help="bytes of adapter state a row")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--bigstore", default="", help="a bench/bigstore.py build (its dir)")
    ap.add_argument("--baseline", default="", help="with --bigstore: an older checkout")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--workdir", default=None, help="where the copies go (default: /tmp)")
    args = ap.parse_args()
    if args.bigstore:
        if not args.baseline:
            ap.error("--bigstore needs --baseline")
        main_bigstore(args)
        return
    with tempfile.TemporaryDirectory(prefix="status-") as tmp:
        db = Path(tmp) / "agentsrc.db"
        build(db, args.sources, args.state)
        old_db = Path(tmp) / "schema17.db"
        without_schema_18(db, old_db)
        old, new = Reader(old_db), Reader(db)
        assert old_reads(old) == new_reads(new), "the two reads disagree"
        times: dict[str, list[float]] = {"scan of the rows": [], "covering indexes": []}
        reads: list[tuple[str, Reader, Callable[[Reader], Any]]] = [
            ("scan of the rows", old, old_reads), ("covering indexes", new, new_reads)]
        for i in range(args.repeats):
            for name, reader, read in reads if i % 2 == 0 else reversed(reads):
                t0 = time.perf_counter()
                read(reader)
                times[name].append((time.perf_counter() - t0) * 1000)
        size = db.stat().st_size / 1e6
        print(f"status reads: {args.sources} sources of {args.state} B states ({size:.0f} MB),"
              f" {args.repeats} repeats alternating, the files' counts and the skipped totals")
        for name, ts in times.items():
            ts.sort()
            print(f"  {name:18s} median {statistics.median(ts):7.3f} ms"
                  f"  p99 {ts[int(len(ts) * 0.99) - 1]:7.3f} ms")


if __name__ == "__main__":
    main()
