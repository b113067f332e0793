"""The files' adapter states (``sources.state``) of a store, packed: their bytes as JSON and
as each candidate packer stores them, the CPU of packing.pack and unpack per state, and
a commit's save of a state (a live append's, JSON only, against a backfill's, packed),
the start's SQL (CursorStore.load(states=False, sidecar_adapters=...): the sidecar
signatures out of the states) on the states raw and packed, at the store's own number of
sources and with its sources copied up to ``--sources``. Prints sizes and times only.

    .venv/bin/python bench/state_size.py STORE.db [--sources 20000]

STORE.db is only read (copied into a temporary directory first).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time
import timeit
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from agentsrc_daemon.cursor import SIDECAR_KEY
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.store import packing
from agentsrc_daemon.store.connection import connect


def _deflate(level: int, zdict: bytes = b"") -> Callable[[bytes], bytes]:
    def pack(data: bytes) -> bytes:
        c = (zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY, zdict) if zdict
             else zlib.compressobj(level, zlib.DEFLATED, -15, 8))
        out = b"\x02" + c.compress(data) + c.flush()
        return out if len(out) < len(data) else data

    return pack


def _keys_dictionary(states: list[bytes]) -> bytes:
    """The keys recurring in the states (10 times or more; not ids), most frequent last."""
    counts: collections.Counter[str] = collections.Counter()

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                if len(k) < 24 and not any(ch.isdigit() for ch in k):
                    counts[k] += 1
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for s in states:
        walk(orjson.loads(s))
    keys = sorted((k for k, n in counts.items() if n >= 10), key=lambda k: counts[k])
    return b"".join(b'"' + k.encode() + b'":' for k in keys)


def _median_us(f: Callable[[bytes], Any], values: list[bytes]) -> tuple[float, float]:
    """Median over the values of each one's best time, and the largest value's."""
    per = [min(timeit.Timer(lambda v=v: f(v)).repeat(5, 10)) / 10 * 1e6 for v in values]
    return statistics.median(per), per[max(range(len(values)), key=lambda i: len(values[i]))]


def _copy(src: Path, out: Path, state_sql: str, copies_to: int) -> None:
    """``src`` copied to ``out`` with every state rewritten by ``state_sql`` and its
    sources copied (new paths) until there are at least ``copies_to``."""
    s = connect(src, readonly=True)
    conn = connect(out)
    with conn.backup("main", s, "main") as b:
        b.step()
    s.close()
    cols = [r[1] for r in conn.execute("PRAGMA table_info(sources)") if r[1] not in ("id", "path")]
    names = ", ".join(cols)
    with conn:
        conn.execute(f"UPDATE sources SET state = {state_sql}")
        (n,) = conn.execute("SELECT COUNT(*) FROM sources").fetchone()
        for copy in range(1, -(-copies_to // max(n, 1))):
            conn.execute(
                f"INSERT INTO sources(path, {names}) SELECT path || '#{copy}', {names}"
                " FROM sources WHERE path NOT LIKE '%#%'"
            )
    conn.close()


def _startup_query(db: Path, state_sql: str) -> tuple[int, int, float]:
    """(sources present, states the query reads, median seconds of 20) of the start's SQL."""
    conn = connect(db, readonly=True)
    adapters = tuple(sources.SIDECAR_ADAPTERS)
    marks = ",".join("?" * len(adapters))
    sql = (
        f"SELECT id, path, CASE WHEN gone_at IS NULL AND adapter IN ({marks}) THEN"
        f" json_extract(CAST({state_sql} AS TEXT), '$.\"{SIDECAR_KEY}\".sig') END"
        " FROM sources WHERE gone_at IS NULL"
    )
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        rows = list(conn.execute(sql, adapters))
        times.append(time.perf_counter() - t0)
    (read,) = conn.execute(
        f"SELECT COUNT(*) FROM sources WHERE gone_at IS NULL AND state IS NOT NULL AND adapter IN ({marks})",
        adapters,
    ).fetchone()
    conn.close()
    return len(rows), read, statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--sources", type=int, default=20_000, help="sources for the start's SQL at scale")
    args = ap.parse_args()
    conn = connect(args.store, readonly=True)
    states = [bytes(packing.unpack(s) or b"") for (s,) in conn.execute(
        "SELECT state FROM sources WHERE state IS NOT NULL")]
    (events,) = conn.execute("SELECT value FROM counters WHERE name = 'events'").fetchone()
    conn.close()
    raw = sum(map(len, states))
    print(f"{len(states)} states, {events} events: {raw} B of JSON, {raw / events:.2f} B/event")
    candidates = {
        "packing.pack (the events' dictionary, 8 KiB window)": packing.pack,
        "deflate level 6, full window, no dictionary": _deflate(6),
        "deflate level 6, full window, the states' keys": _deflate(6, _keys_dictionary(states)),
    }
    for name, pack in candidates.items():
        stored = sum(len(pack(s)) for s in states)
        print(f"  {name:55} {stored:>9} B  {stored / raw:.3f}  {stored / events:5.2f} B/event")
    packed = [packing.pack(s) for s in states]
    for name, f, values in (
        ("pack", packing.pack, states),
        ("unpack", packing.unpack, packed),
        ("pack+unpack", lambda s: packing.unpack(packing.pack(s)), states),
    ):
        median, largest = _median_us(f, values)
        print(f"  {name:12} median {median:6.1f} us a state, the largest ({max(map(len, states))} B) {largest:7.1f} us")
    # A commit's save of a state (store/cursors.py, CursorStore.save): dumped, then packed
    # too unless a live append saves it (STATE_QUIET_S).
    objects = [orjson.loads(s) for s in states]
    for name, save in (("save, live", orjson.dumps),
                       ("save, packed", lambda o: packing.pack(orjson.dumps(o)))):
        per = [min(timeit.Timer(lambda o=o, f=save: f(o)).repeat(5, 10)) / 10 * 1e6
               for o in objects]
        largest = per[max(range(len(states)), key=lambda i: len(states[i]))]
        print(f"  {name:12} median {statistics.median(per):6.1f} us a state, mean"
              f" {statistics.fmean(per):6.1f} us, the largest {largest:7.1f} us")
    with tempfile.TemporaryDirectory() as tmp:
        for label, stored_sql, read_sql in (
            ("raw JSON, json_extract(CAST(state AS TEXT))", "unpack(state)", "state"),
            ("packed, json_extract(CAST(unpack(state) AS TEXT))", "pack(state)", "unpack(state)"),
        ):
            for copies_to in (0, args.sources):
                db = Path(tmp) / f"s{copies_to}.db"
                _copy(args.store, db, stored_sql, copies_to)
                n, read, t = _startup_query(db, read_sql)
                print(f"  start's SQL, {label}: {n} sources, {read} states read:"
                      f" {t * 1e3:7.1f} ms ({t / max(read, 1) * 1e6:5.1f} us a state)")
                db.unlink()


if __name__ == "__main__":
    main()
