"""Search benchmark: the texts a store indexes (from a real store), copied N times into
an index built two ways (unicode61 with the identifier/CJK rewriting of
store/search.py, and FTS5's trigram tokenizer), their sizes and query latencies.

    .venv/bin/python bench/bench_search.py STORE.db --rows 1000000

Prints JSON; nothing of the texts."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import apsw
import orjson

from agentsrc_daemon.store.search import INDEXED_KINDS, body_of, compile_query, index_text

QUERIES = {
    "word": "test",
    "phrase": '"git status"',
    "prefix": "pyt*",
    "identifier": "rate_limiter",
    "cjk2": "数据",
    "cjk3": "数据库",
    "boolean": "(test OR lint) NOT git",
}


def texts(store: Path) -> list[str]:
    c = apsw.Connection(str(store), flags=apsw.SQLITE_OPEN_READONLY)
    kinds = ",".join(f"'{k}'" for k in INDEXED_KINDS)
    out = []
    for kind, tool, path, data in c.execute(
        f"SELECT kind, tool, path, data FROM events WHERE kind IN ({kinds})"
    ):
        body = body_of(kind, tool, path, data)
        if body:
            out.append(body)
    return out


def build(db: Path, tokenizer: str, docs: list[str], rows: int, rewrite: bool) -> float:
    c = apsw.Connection(str(db))
    c.execute("PRAGMA journal_mode=WAL")
    c.execute(f"CREATE VIRTUAL TABLE f USING fts5(body, content='', contentless_delete=1,"
              f" tokenize='{tokenizer}')")
    t0 = time.perf_counter()
    batch = []
    with c:
        for i in range(rows):
            d = docs[i % len(docs)]
            batch.append((i + 1, index_text(d) if rewrite else d))
            if len(batch) == 10000:
                c.executemany("INSERT INTO f(rowid, body) VALUES(?,?)", batch)
                batch = []
        if batch:
            c.executemany("INSERT INTO f(rowid, body) VALUES(?,?)", batch)
    elapsed = time.perf_counter() - t0
    c.close()
    return elapsed


def latency(db: Path, match: str, order: str, runs: int = 30) -> dict[str, float]:
    c = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    sql = {"rank": "SELECT rowid, bm25(f) FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT 20",
           "recent": "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rowid DESC LIMIT 20"}[order]
    times = []
    n = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        n = len(list(c.execute(sql, (match,))))
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2), "hits": n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store", type=Path)
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    docs = texts(args.store)
    out: dict[str, object] = {"rows": args.rows, "distinct_texts": len(docs),
                              "text_bytes": sum(len(d.encode()) for d in docs[: args.rows])}
    with tempfile.TemporaryDirectory() as tmp:
        for name, tok, rewrite in (("unicode61+rewrite", "unicode61 remove_diacritics 2", True),
                                   ("trigram", "trigram", False)):
            db = Path(tmp) / f"{name}.db"
            secs = build(db, tok, docs, args.rows, rewrite)
            size = sum(os.path.getsize(p) for p in Path(tmp).glob(f"{name}.db*"))
            res: dict[str, object] = {"build_s": round(secs, 1), "size_mib": round(size / 2**20, 1)}
            for qname, q in QUERIES.items():
                if rewrite:
                    match = compile_query(q)
                elif qname == "cjk2":
                    res[qname] = "trigram cannot match fewer than 3 characters"
                    continue
                else:
                    match = compile_query(q).replace('"rate limiter"', '"rate_limiter"')
                    match = q if qname in ("cjk3", "phrase", "word") else match
                for order in ("rank", "recent"):
                    res[f"{qname}/{order}"] = latency(db, match, order)
            out[name] = res
    print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
