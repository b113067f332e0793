"""Benchmark: the scanner's fast path against detect-secrets' naive line-by-line scan.

    .venv/bin/python bench/bench_scan.py [--corpus DIR] [--naive-kb 400] [--repeats 3]

The sample is what the daemon scans: the text values of the corpus transcripts (tool
outputs, file contents, commands, patches, prompts, assistant text; not the opaque
encrypted reasoning blobs or signatures), each scanned as one text. Without a corpus, a
synthetic transcript-like sample is generated instead. The naive scan
(SecretScanner.scan_naive: every plugin on every line, detect-secrets' own loop) is timed on
a slice of the sample, the fast path on the whole sample (cache off), in the same run; both
rates are MB/s of UTF-8 text, medians of the repeats. On the slice, both must report the
same findings. Prints figures only: no transcript content.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import string
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agentsrc_daemon.secrets.engine import SecretScanner

# Opaque blobs the daemon never scans (encrypted reasoning, thinking signatures).
SKIPPED_KEYS = frozenset({"encrypted_content", "signature"})
MIN_TEXT_CHARS = 64  # shorter strings are ids, types and names, not content


def default_corpus() -> Path:
    env = os.environ.get("AGENTSRC_CORPUS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "home"


def _strings(value: Any, key: str | None = None) -> Iterator[str]:
    if key in SKIPPED_KEYS:
        return
    if isinstance(value, str):
        if len(value) >= MIN_TEXT_CHARS:
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def corpus_texts(home: Path) -> list[str]:
    texts: list[str] = []
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        raw = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".txt":
            texts.append(raw)
            continue
        docs: list[Any] = []
        if path.suffix == ".json":
            try:
                docs = [json.loads(raw)]
            except ValueError:
                docs = []
        else:
            for line in raw.splitlines():
                try:
                    docs.append(json.loads(line))
                except ValueError:
                    continue
        for doc in docs:
            texts.extend(_strings(doc))
    return texts


def synthetic_texts(total_chars: int = 8_000_000, seed: int = 7) -> list[str]:
    """Transcript-like text: shell output, code, prose, JSON, paths, a few secrets."""
    rng = random.Random(seed)
    words = ["the", "file", "test", "build", "error", "return", "value", "config", "import"]

    def line() -> str:
        kind = rng.random()
        if kind < 0.3:
            return " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
        if kind < 0.5:
            return f"    {rng.choice(words)} = {rng.choice(words)}({rng.randint(0, 999)})"
        if kind < 0.65:
            return f"/home/user/project/src/{rng.choice(words)}_{rng.randint(1, 99)}.py:{rng.randint(1, 500)}"
        if kind < 0.8:
            return json.dumps({rng.choice(words): rng.choice(words), "n": rng.randint(0, 10**6)})
        if kind < 0.9995:
            return "".join(rng.choice(string.printable[:94]) for _ in range(rng.randint(10, 90)))
        # One line in 2000 holds a secret: denser than the real corpus, which has about
        # one finding per 600 KB.
        return f'api_key = "{"".join(rng.choice(string.ascii_letters) for _ in range(32))}"'

    texts, size = [], 0
    while size < total_chars:
        text = "\n".join(line() for _ in range(rng.randint(3, 200)))
        texts.append(text)
        size += len(text)
    return texts


def utf8_mb(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6


def timed(fn: Any, texts: Sequence[Any]) -> tuple[float, list[Any]]:
    began = time.perf_counter()
    results = [fn(t) for t in texts]
    return time.perf_counter() - began, results


def keys(findings: list[Any]) -> set[tuple[str, int, str]]:
    return {(f.type, f.line, f.value_hash) for f in findings}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--naive-kb", type=int, default=400, help="size of the naive slice")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=200, help="texts per scan_many call")
    args = parser.parse_args()

    if args.corpus.is_dir():
        texts, source = corpus_texts(args.corpus), f"corpus text values ({args.corpus})"
    else:
        texts, source = synthetic_texts(), "synthetic transcript-like text"
    # The naive slice: every k-th text, so that it samples the whole corpus.
    total = sum(len(t) for t in texts)
    step = max(1, round(total / (args.naive_kb * 1000)))
    naive_slice = texts[::step]

    fast = SecretScanner(None, {}, b"\x01" * 32, cache_size=0)
    batches = [texts[i : i + args.batch] for i in range(0, len(texts), args.batch)]
    naive_times, fast_times, slice_fast_times, batch_times = [], [], [], []
    fast_findings = 0
    for _ in range(args.repeats):
        dt, naive_results = timed(fast.scan_naive, naive_slice)
        naive_times.append(dt)
        dt, slice_results = timed(fast.scan, naive_slice)
        slice_fast_times.append(dt)
        dt, results = timed(fast.scan, texts)
        fast_times.append(dt)
        fast_findings = sum(len(r) for r in results)
        dt, batch_results = timed(fast.scan_many, batches)
        batch_times.append(dt)
        if [keys(r) for b in batch_results for r in b] != [keys(r) for r in results]:
            print("MISMATCH between scan_many and scan", file=sys.stderr)
            return 1
        if [keys(r) for r in naive_results] != [keys(r) for r in slice_results]:
            print("MISMATCH between the fast path and the naive scan on the slice", file=sys.stderr)
            return 1

    cached = SecretScanner(None, {}, b"\x01" * 32)
    timed(cached.scan, texts)  # fill the cache, as a backfill that re-reads content would
    cached_time, _ = timed(cached.scan, texts)

    naive_mb, all_mb = utf8_mb(naive_slice), utf8_mb(texts)
    naive_rate = naive_mb / statistics.median(naive_times)
    slice_rate = naive_mb / statistics.median(slice_fast_times)
    fast_rate = all_mb / statistics.median(fast_times)
    batch_rate = all_mb / statistics.median(batch_times)
    print(f"sample: {source}: {len(texts)} texts, {all_mb:.2f} MB")
    print(f"naive slice: {len(naive_slice)} texts, {naive_mb:.2f} MB")
    print(f"naive detect-secrets scan (slice):   {naive_rate:10.2f} MB/s")
    print(f"fast path (same slice):              {slice_rate:10.2f} MB/s")
    print(f"fast path (whole sample, no cache):  {fast_rate:10.2f} MB/s")
    print(f"fast path (whole sample, scan_many of {args.batch}): {batch_rate:7.2f} MB/s")
    print(f"fast path (whole sample, cached):    {all_mb / cached_time:10.2f} MB/s")
    print(
        f"ratio fast/naive, scan per text (whole sample vs slice): {fast_rate / naive_rate:7.1f}x"
    )
    print(
        f"ratio fast/naive, scan_many     (whole sample vs slice): {batch_rate / naive_rate:7.1f}x"
    )
    print(
        f"ratio fast/naive, scan per text (same slice):            {slice_rate / naive_rate:7.1f}x"
    )
    print(f"findings on the whole sample: {fast_findings}; identical on the slice: yes")
    print(f"repeats: {args.repeats}; python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
