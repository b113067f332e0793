"""The tail-reader with tiny chunks and tiny big-line and giant-string thresholds, so
every path of its read loop (lines split across chunks, big lines read exactly or with
their giant strings held once (bigline.py), over-cap lines skipped
across reads and restarts, deferred big lines) meets arbitrary boundaries."""

from __future__ import annotations

import copy
import os
import tempfile

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.ingest import tail


def restarted(cursor: Cursor) -> Cursor:
    """A restart between two reads: a copy of the cursor, as the store persists it
    (no adapter runs here, so there is no state to round-trip)."""
    assert cursor.state is None
    return copy.deepcopy(cursor)


chunk_test_lines = st.one_of(
    st.integers(0, 90).map(lambda n: b'{"p":"' + b"q" * n + b'"}'),
    st.sampled_from([b"[1]", b"{bad", b""]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    lines=st.lists(chunk_test_lines, max_size=12),
    trailing=chunk_test_lines,
    chunk=st.integers(1, 40),
    big=st.integers(1, 60),
    giant=st.integers(1, 60),
    max_line=st.integers(1, 120),
    budget=st.integers(1, 200),
    defer_first=st.booleans(),
)
def test_lines_come_out_whatever_the_boundaries(
    lines: list[bytes],
    trailing: bytes,
    chunk: int,
    big: int,
    giant: int,
    max_line: int,
    budget: int,
    defer_first: bool,
) -> None:
    content = b"".join(line + b"\n" for line in lines) + trailing
    expected = []
    pos = 0
    for line in lines:
        if len(line) <= max_line:
            obj = orjson.loads(line) if line.startswith(b'{"') else None
            if obj is not None:
                expected.append((pos, obj))
        pos += len(line) + 1
    oversize = sum(len(line) > max_line for line in [*lines, trailing])
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.write(fd, content)
    os.close(fd)
    saved_sizes = tail.CHUNK_BYTES, tail.BIG_LINE_BYTES, tail.GIANT_STRING_BYTES
    tail.CHUNK_BYTES, tail.BIG_LINE_BYTES, tail.GIANT_STRING_BYTES = chunk, big, giant
    try:
        cursor = Cursor(path, "codex", "jsonl")
        got: list[tail.Line] = []
        defer = defer_first
        while True:
            res = tail.read_new_lines(
                path,
                cursor,
                got.append,
                budget_bytes=budget,
                max_line_bytes=max_line,
                defer_big_lines=defer,
            )
            if res.deferred:
                assert defer
                defer = False  # the workers are gone: big lines are read now
            elif not res.more:
                break
            cursor = restarted(cursor)
    finally:
        tail.CHUNK_BYTES, tail.BIG_LINE_BYTES, tail.GIANT_STRING_BYTES = saved_sizes
        os.unlink(path)
    assert [(ln.offset, ln.obj) for ln in got] == expected
    assert cursor.skipped.get("oversize", 0) == oversize
    assert cursor.skipping == (len(trailing) > max_line)
    assert cursor.offset == (len(content) if cursor.skipping else pos)
