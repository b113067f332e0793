"""`bench/run.py reprice`: the re-price of a whole history after the prices change, on
a copy of a bench/bigstore.py build: every usage event priced again from its stored
data (an override that changes every Claude and GPT request's cost), in the chunks
the daemon's idle loop runs (store/costs.py), each chunk timed. Prints the usage
events, the wall and CPU time per million of them, and a chunk's p50/p99/max (what an
append that arrives meanwhile may wait for).

    .venv/bin/python bench/run.py reprice --store DIR [--chunk 500]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentsrc_daemon.pricing import overrides, table
from agentsrc_daemon.pricing.stage import PriceStage
from agentsrc_daemon.store import Store

# Every Claude and GPT request's cost changes (an enterprise rate, a free local proxy).
OVERRIDES = {"models": {"claude-*": {"input": 1.5, "output": 7.5, "cache_read": 0.15,
                                     "cache_write": 1.875}, "gpt-*": {"input": 0, "output": 0}}}


def bench_reprice(args: argparse.Namespace) -> None:
    from run import copy_store_data

    store_dir = Path(args.store)
    work = Path(tempfile.mkdtemp(prefix="asb-reprice-", dir=args.workdir))
    try:
        data = copy_store_data(store_dir, work)
        prices = table.load(data / "prices.json")
        stage = PriceStage(prices, overrides.parse(OVERRIDES))
        store = Store(data / "agentsrc.db")
        try:
            (usage,) = store.conn.execute(
                "SELECT COUNT(*) FROM events WHERE kind = 'usage'").fetchone() or (0,)
            (events,) = store.conn.execute("SELECT value FROM counters WHERE name = 'events'"
                                           ).fetchone() or (0,)
            assert store.pricing(stage.fingerprint, stage.cost_of, at_start=True)
            steps: list[float] = []
            c0, t0 = time.process_time(), time.perf_counter()
            while True:
                s0 = time.perf_counter()
                step = store.reprice_step(args.chunk)
                steps.append(time.perf_counter() - s0)
                if not step.more:
                    break
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_m = 1_000_000 / max(1, usage)
    steps.sort()
    print(f"reprice: {usage:,} usage events of {events:,} events ({store_dir.name}),"
          f" chunks of {args.chunk:,}: {len(steps)} steps")
    print(f"  wall {wall:.1f} s ({wall * per_m:.1f} s per million usage events),"
          f" CPU {cpu:.1f} s ({cpu * per_m:.1f} s per million)")
    p99 = steps[min(len(steps) - 1, int(len(steps) * 0.99))]
    print(f"  a step: p50 {statistics.median(steps) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms,"
          f" max {steps[-1] * 1000:.0f} ms")


def add_parser(sub: Any) -> None:
    rp = sub.add_parser("reprice", help="the re-price of a bigstore build's history, timed")
    rp.add_argument("--store", required=True, help="a bench/bigstore.py build (its dir)")
    rp.add_argument("--chunk", type=int, default=500)
    rp.add_argument("--workdir", default="/tmp")
