"""The search index's build after a deferred cold backfill, under three merge policies,
side by side in one run (docs/performance.md, "Live appends at 10 million events"):

- ``automerge``: FTS5 merges inside the build's chunks (schema 14 and before);
- ``merge-first``: automerge off, the debt paid in steps before each next chunk (the
  ingest loop's order since schema 15);
- ``build-all``: automerge off, every chunk first, the merging after: the segments pile
  up until FTS5's crisis merge (16 on a level) runs inside a chunk.

    .venv/bin/python bench/search_merge.py [--events 150000] [--chunk 500] [--repeats 3]

Prints, per policy, the median over repeats of the build's wall time, and the slowest
and 99th-percentile chunk and merge step (what an append arriving during one waits).
The store is built by the real ``Store`` in a temporary directory; the texts are
random words of a 20,000-word vocabulary.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentsrc_daemon import events as E  # noqa: E402
from agentsrc_daemon.cursor import Cursor  # noqa: E402
from agentsrc_daemon.store import Batch, Store  # noqa: E402

POLICIES = ("automerge", "merge-first", "build-all")


@dataclass
class Run:
    wall_s: float
    chunk_max_ms: float
    chunk_p99_ms: float
    merge_steps: int
    merge_max_ms: float


def _store(db: Path, events: int, policy: str) -> Store:
    store = Store(db)
    store.search_index.defer()
    if policy == "automerge":
        store.conn.execute("INSERT INTO search_index(search_index, rank) VALUES('automerge', 4)")
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(20_000)]
    per_commit = 2_500
    for start in range(0, events, per_commit):
        batch = Batch()
        for n in range(start, min(events, start + per_commit)):
            batch.events.append(E.Event(
                key=f"k{n}", session_id=f"claude-code:s{n % 50}", kind=E.PROMPT,
                ts="2026-12-02T00:00:00.000Z", adapter="claude-code", source_path="/b.jsonl",
                offset=n, data={"text": " ".join(rng.choice(vocab) for _ in range(20))},
            ))
        batch.cursors["/b.jsonl"] = Cursor("/b.jsonl", "claude-code", "jsonl", offset=start)
        store.commit(batch)
    store.search_index.end_deferral()
    return store


def _build(store: Store, policy: str, chunk: int) -> Run:
    chunks: list[float] = []
    merges: list[float] = []

    def merge() -> None:
        t = time.perf_counter()
        store.search_index.merge_step()
        merges.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    while True:
        if policy == "merge-first" and store.search_index.merge_due:
            merge()
        elif store.search_index.backlog():
            t = time.perf_counter()
            store.search_index.build_step(chunk)
            chunks.append(time.perf_counter() - t)
        elif policy != "automerge" and store.search_index.merge_due:
            merge()
        else:
            break
    wall = time.perf_counter() - t0
    chunks.sort()
    return Run(wall, chunks[-1] * 1000, chunks[int(len(chunks) * 0.99)] * 1000, len(merges),
               max(merges, default=0.0) * 1000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=150_000)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    runs: dict[str, list[Run]] = {p: [] for p in POLICIES}
    for _ in range(args.repeats):
        for policy in POLICIES:  # alternating: the machine's drift is shared
            with tempfile.TemporaryDirectory(prefix="asm-") as tmp:
                store = _store(Path(tmp) / "a.db", args.events, policy)
                try:
                    runs[policy].append(_build(store, policy, args.chunk))
                finally:
                    store.close()
    print(f"search index build of {args.events} events in chunks of {args.chunk},"
          f" medians of {args.repeats}:")
    for policy, rs in runs.items():
        def med(field: str, rs: list[Run] = rs) -> float:
            return statistics.median(getattr(r, field) for r in rs)

        print(f"  {policy:12s} build {med('wall_s'):6.2f} s, chunk max"
              f" {med('chunk_max_ms'):5.0f} ms p99 {med('chunk_p99_ms'):5.0f} ms,"
              f" {med('merge_steps'):4.0f} merge steps of at most {med('merge_max_ms'):3.0f} ms")


if __name__ == "__main__":
    main()
