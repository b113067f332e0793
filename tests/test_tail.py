"""The tail-reader on real files: partial lines, bad lines, over-long lines, truncation,
replacement and rewrites, and a Hypothesis state machine over all of them with
restarts (cursor round-tripped as the store persists it)."""

from __future__ import annotations

import dataclasses
import os
import zlib
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.ingest import tail
from agentsrc_daemon.ingest.fingerprint import HeadCache
from agentsrc_daemon.ingest.open_files import OpenFiles


def read_all(
    path: Path, cursor: Cursor, budget: int = 1 << 20, max_line: int = 1 << 20,
    heads: HeadCache | None = None, files: OpenFiles | None = None,
):
    got: list[tail.Line] = []
    while True:
        res = tail.read_new_lines(
            str(path), cursor, got.append, budget_bytes=budget, max_line_bytes=max_line,
            heads=heads, files=files,
        )
        if not res.more:
            return got, res


def roundtrip(c: Cursor) -> Cursor:
    """What a restart sees: the cursor as persisted (JSON state, counters)."""
    return Cursor(
        path=c.path,
        adapter=c.adapter,
        mode=c.mode,
        source_id=c.source_id,
        dev=c.dev,
        ino=c.ino,
        size=c.size,
        mtime_ns=c.mtime_ns,
        offset=c.offset,
        head_len=c.head_len,
        head_hash=c.head_hash,
        skipping=c.skipping,
        state=orjson.loads(orjson.dumps(c.state)) if c.state is not None else None,
        generation=c.generation,
        lines=c.lines,
        skipped=dict(c.skipped),
        gone_at=c.gone_at,
    )


def test_partial_line_waits_for_its_newline(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":')
    c = Cursor(str(p), "codex", "jsonl")
    lines, _ = read_all(p, c)
    assert [ln.obj for ln in lines] == [{"a": 1}]
    assert c.offset == 8
    with p.open("ab") as fh:
        fh.write(b"2}\n")
    lines, _ = read_all(p, c)
    assert [(ln.offset, ln.obj) for ln in lines] == [(8, {"b": 2})]
    assert c.offset == 16


def test_bad_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(
        b'{"ok":1}\r\n'  # CRLF: accepted, counted
        b"\n"  # empty
        b"   \n"  # blank
        b"{not json\n"  # malformed
        b'{"s":"\xff\xfe"}\n'  # invalid UTF-8
        b"[1,2]\n"  # non-object
        b"null\n"  # non-object
        b'{"ok":2}\n'
    )
    c = Cursor(str(p), "codex", "jsonl")
    lines, _ = read_all(p, c)
    assert [ln.obj for ln in lines] == [{"ok": 1}, {"ok": 2}]
    assert c.skipped == {
        "crlf": 1,
        "empty": 2,
        "malformed_json": 1,
        "invalid_utf8": 1,
        "non_object": 2,
    }
    assert c.offset == p.stat().st_size
    assert c.lines == 8


def test_oversize_line_is_skipped_without_holding_it(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    big = b'{"x":"' + b"y" * 300_000 + b'"}\n'
    p.write_bytes(b'{"a":1}\n' + big + b'{"b":2}\n')
    c = Cursor(str(p), "codex", "jsonl")
    # Chunks are 1 MiB; a 64 KiB cap forces the skip path through buffered data.
    lines, _ = read_all(p, c, max_line=64 * 1024)
    assert [ln.obj for ln in lines] == [{"a": 1}, {"b": 2}]
    assert c.skipped == {"oversize": 1}
    assert c.offset == p.stat().st_size and not c.skipping


def test_oversize_line_still_being_written_is_skipped_across_restarts(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    cap = 1024
    p.write_bytes(b'{"a":1}\n{"x":"' + b"z" * (tail.CHUNK_BYTES + 10))
    c = Cursor(str(p), "codex", "jsonl")
    lines, _ = read_all(p, c, max_line=cap)
    assert [ln.obj for ln in lines] == [{"a": 1}]
    assert c.skipping and c.offset == p.stat().st_size  # not re-read, not held
    c = roundtrip(c)
    with p.open("ab") as fh:
        fh.write(b"z" * 5000 + b'"}\n{"b":2}\n')
    lines, _ = read_all(p, c, max_line=cap)
    assert [ln.obj for ln in lines] == [{"b": 2}]
    assert c.skipped == {"oversize": 1}
    assert not c.skipping


def test_truncation_rereads_from_zero(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n{"a":2}\n')
    c = Cursor(str(p), "codex", "jsonl")
    read_all(p, c)
    p.write_bytes(b'{"n":1}\n')  # truncate + rewrite in place (same inode)
    lines, res = read_all(p, c)
    assert res.reset == "truncated"
    assert [(ln.offset, ln.obj) for ln in lines] == [(0, {"n": 1})]
    assert c.generation == 1


def test_replacement_by_rename_rereads(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n')
    c = Cursor(str(p), "codex", "jsonl")
    read_all(p, c)
    tmp = tmp_path / "a.jsonl.tmp"
    tmp.write_bytes(b'{"a":1}\n{"a":2}\n')
    os.replace(tmp, p)
    lines, res = read_all(p, c)
    assert res.reset == "replaced"
    # Both lines come again; the first has the same (offset, crc), so its event key is
    # the same and the store ignores it.
    assert [(ln.offset, ln.obj) for ln in lines] == [(0, {"a": 1}), (8, {"a": 2})]
    assert lines[0].crc == zlib.crc32(b'{"a":1}')


def test_rewritten_prefix_same_size_or_longer_is_detected(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n')
    c = Cursor(str(p), "codex", "jsonl")
    read_all(p, c)
    with p.open("r+b") as fh:  # same inode, same length prefix, different bytes
        fh.write(b'{"b":1}\n{"b":2}\n')
    lines, res = read_all(p, c)
    assert res.reset == "rewritten"
    assert [ln.obj for ln in lines] == [{"b": 1}, {"b": 2}]


def test_truncated_then_appended_back_to_the_same_size_is_a_rewrite(tmp_path: Path) -> None:
    # Found by the state machine: the file shrinks, then grows back to exactly the old
    # offset before the next read. Only the head hash can tell.
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'\n{"n":0,"a":0,"b":"xxx\xc3\xa9"}\n\n')
    c = Cursor(str(p), "codex", "jsonl")
    read_all(p, c)
    assert c.offset == 28
    p.write_bytes(b"\n")
    with p.open("ab") as fh:
        fh.write(b'{"a":0,"b":-1,"type":"xx"}\n')
    assert p.stat().st_size == 28
    lines, res = read_all(p, c)
    assert res.reset == "rewritten"
    assert [(ln.offset, ln.obj) for ln in lines] == [(1, {"a": 0, "b": -1, "type": "xx"})]


def test_deleted_file_reports_gone(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n')
    c = Cursor(str(p), "codex", "jsonl")
    read_all(p, c)
    p.unlink()
    _, res = read_all(p, c)
    assert res.gone


def test_budget_splits_reads_at_line_boundaries(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b"".join(orjson.dumps({"i": i, "pad": "x" * 1000}) + b"\n" for i in range(3000)))
    c = Cursor(str(p), "codex", "jsonl")
    got: list[tail.Line] = []
    rounds = 0
    while True:
        rounds += 1
        res = tail.read_new_lines(str(p), c, got.append, budget_bytes=1 << 20, max_line_bytes=1 << 20)
        if not res.more:
            break
    assert rounds >= 3
    assert [ln.obj["i"] for ln in got] == list(range(3000))


# ---- the state machine ------------------------------------------------------------------

line_payloads = st.dictionaries(
    st.sampled_from(["a", "b", "type", "n"]),
    st.one_of(st.integers(-5, 5), st.text("xyz\u00e9", max_size=6)),
    max_size=3,
)


class TailMachine(RuleBasedStateMachine):
    """The model: the file's bytes. After every read, the lines delivered since the
    file's last reset are exactly the complete, valid lines of the file, each once, at
    their offsets; across resets, identical (offset, bytes) are recognisable by key.
    A twin cursor reads the same file with the heads kept (fingerprint.HeadCache) and
    the file kept open (open_files.OpenFiles): its lines, resets and cursor are the same
    as the one that opens the file and hashes its head at every read."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.dir = Path(tempfile.mkdtemp(prefix="tailsm-"))
        self.path = self.dir / "t.jsonl"
        self.path.write_bytes(b"")
        self.content = b""
        self.cursor = Cursor(str(self.path), "codex", "jsonl")
        self.twin = Cursor(str(self.path), "codex", "jsonl")
        self.heads = HeadCache(size=2)
        self.files = OpenFiles(size=1)
        self.delivered: dict[tuple[int, int], int] = {}  # (offset, crc) -> count since reset
        self.max_line = 200
        # The file changed after the last read: the cursor cannot know yet, even when the
        # new content happens to have the old size (truncated, then appended to it).
        self.changed_since_read = False

    def _expected(self) -> dict[tuple[int, int], dict]:  # type: ignore[type-arg]
        out = {}
        pos = 0
        skipping_done = True
        for raw in self.content.split(b"\n")[:-1]:
            if len(raw) <= self.max_line and skipping_done:
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    obj = None
                if isinstance(obj, dict):
                    out[(pos, zlib.crc32(raw))] = obj
            pos += len(raw) + 1
        return out

    @rule(obj=line_payloads, complete=st.booleans())
    def append(self, obj: dict, complete: bool) -> None:  # type: ignore[type-arg]
        data = orjson.dumps(obj)
        if complete:
            data += b"\n"
        else:
            data = data[: max(1, len(data) // 2)]
        # Never leave two partial fragments glued into a valid line by accident: the
        # model below computes lines from the same bytes, so any result is consistent.
        with self.path.open("ab") as fh:
            fh.write(data)
        self.content += data
        self.changed_since_read = True

    @rule()
    def append_garbage_and_huge(self) -> None:
        data = b"not json\n" + b'{"h":"' + b"q" * 300 + b'"}\n'
        with self.path.open("ab") as fh:
            fh.write(data)
        self.content += data
        self.changed_since_read = True

    @rule()
    def finish_partial(self) -> None:
        with self.path.open("ab") as fh:
            fh.write(b"\n")
        self.content += b"\n"
        self.changed_since_read = True

    @rule(keep=st.integers(0, 3))
    def truncate(self, keep: int) -> None:
        lines = self.content.split(b"\n")
        self.content = b"".join(line + b"\n" for line in lines[: min(keep, len(lines) - 1)])
        self.path.write_bytes(self.content)
        self.changed_since_read = True

    @rule()
    def replace_by_rename(self) -> None:
        tmp = self.dir / "t.tmp"
        tmp.write_bytes(self.content)
        os.replace(tmp, self.path)
        self.changed_since_read = True

    @rule(at=st.integers(0, 300), byte=st.sampled_from([b"{", b"x", b" ", b"\n"]))
    def rewrite_in_place(self, at: int, byte: bytes) -> None:
        """One byte of what was read overwritten, the size unchanged: only the head's
        bytes can tell (within its first 4 KiB)."""
        if at >= len(self.content):
            return
        with self.path.open("r+b") as fh:
            fh.seek(at)
            fh.write(byte)
        self.content = self.content[:at] + byte + self.content[at + 1 :]
        self.changed_since_read = True

    @rule()
    def restart(self) -> None:
        self.cursor = roundtrip(self.cursor)
        self.twin = roundtrip(self.twin)

    @precondition(lambda self: True)
    @rule()
    def read(self) -> None:
        gen = self.cursor.generation
        got, res = read_all(self.path, self.cursor, budget=64, max_line=self.max_line)
        twin_got, twin_res = read_all(self.path, self.twin, budget=64, max_line=self.max_line,
                                      heads=self.heads, files=self.files)
        assert [(ln.offset, ln.crc, ln.obj) for ln in twin_got] == [
            (ln.offset, ln.crc, ln.obj) for ln in got
        ]
        assert twin_res == res
        assert self.twin == self.cursor
        self.changed_since_read = False
        if self.cursor.generation != gen:
            self.delivered = {}
        for ln in got:
            key = (ln.offset, ln.crc)
            self.delivered[key] = self.delivered.get(key, 0) + 1

    @invariant()
    def consistent_after_read(self) -> None:
        # Check only at quiescent points: when the cursor has caught up with the file.
        size = len(self.content)
        last_nl = self.content.rfind(b"\n") + 1
        if self.changed_since_read:
            return
        if self.cursor.size != size or self.cursor.offset != last_nl or self.cursor.skipping:
            return
        expected = self._expected()
        assert set(self.delivered) == set(expected)
        assert all(n == 1 for n in self.delivered.values())

    def teardown(self) -> None:
        import shutil

        self.files.close()

        shutil.rmtree(self.dir, ignore_errors=True)


TailMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tail_state_machine = TailMachine.TestCase


def test_big_line_under_the_cap_is_parsed_and_offset_advances(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    big = orjson.dumps({"big": "b" * (tail.BIG_LINE_BYTES + 10)}) + b"\n"
    p.write_bytes(big + b'{"after":1}\n')
    c = Cursor(str(p), "codex", "jsonl")
    lines, _ = read_all(p, c, max_line=64 << 20)
    assert [(ln.offset, list(ln.obj)) for ln in lines] == [(0, ["big"]), (len(big), ["after"])]
    assert c.offset == p.stat().st_size and c.skipped == {}
    c2 = roundtrip(c)
    assert read_all(p, c2)[0] == []


def test_big_line_can_be_deferred_without_consuming_it(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    first = b'{"a":1}\n'
    big = orjson.dumps({"big": "b" * (tail.BIG_LINE_BYTES + 10)}) + b"\n"
    p.write_bytes(first + big + b'{"after":1}\n')
    c = Cursor(str(p), "codex", "jsonl")
    got: list[tail.Line] = []
    res = tail.read_new_lines(
        str(p), c, got.append, budget_bytes=1 << 30, max_line_bytes=64 << 20, defer_big_lines=True
    )
    assert res.deferred and [ln.obj for ln in got] == [{"a": 1}]
    assert c.offset == len(first)  # stopped before the big line, nothing of it consumed
    got.clear()
    lines, _ = read_all(p, c, max_line=64 << 20)
    assert [(ln.offset, list(ln.obj)) for ln in lines] == [(len(first), ["big"]), (len(first) + len(big), ["after"])]


def test_a_last_line_without_its_newline_is_taken_when_whole(tmp_path: Path) -> None:
    """Cursor writes each newline before the next line (``final_line``): its last line
    is taken at EOF once it decodes whole; a line cut short waits, uncounted; the blank
    line the next append starts with is no line and no skip."""
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}')
    c = Cursor(str(p), "cursor", "jsonl")

    def read() -> list[tuple[int, object]]:
        got: list[tail.Line] = []
        tail.read_new_lines(str(p), c, got.append, budget_bytes=1 << 20,
                            max_line_bytes=1 << 20, final_line=True)
        return [(ln.offset, ln.obj) for ln in got]

    assert read() == [(0, {"a": 1}), (8, {"b": 2})]
    assert c.offset == 15 and c.lines == 2
    with p.open("ab") as fh:
        fh.write(b'\n{"c":')  # the next line, cut short mid-write
    assert read() == [] and c.offset == 16 and c.skipped == {}
    with p.open("ab") as fh:
        fh.write(b"3}")
    assert read() == [(16, {"c": 3})]
    assert c.offset == 23 and c.lines == 3 and c.skipped == {}
    # Without the option the same bytes wait for a newline (every other agent).
    other = Cursor(str(p), "codex", "jsonl")
    lines, _ = read_all(p, other)
    assert [ln.obj for ln in lines] == [{"a": 1}, {"b": 2}] and other.offset == 16


# ---- an append read in one piece --------------------------------------------------------

append_lines = st.one_of(
    line_payloads.map(orjson.dumps),
    st.sampled_from([b"", b"  ", b"[1]", b"{bad", b'{"a":1}\r', b"\xff\xfe", b'"s"']),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=st.lists(append_lines, max_size=4),
    appended=st.lists(append_lines, max_size=6),
    trailing=st.sampled_from([b"", b'{"t":1}', b'{"t":', b"[2]", b"\n"]),
    budget=st.one_of(st.integers(1, 300), st.just(0)),  # 0: exactly the appended bytes
    max_line=st.integers(1, 400),
    final_line=st.booleans(),
    stop_after=st.integers(0, 8),
)
def test_an_append_read_in_one_piece_is_read_as_through_the_window(
    tmp_path_factory: Any, before: list[bytes], appended: list[bytes], trailing: bytes,
    budget: int, max_line: int, final_line: bool, stop_after: int,
) -> None:
    """_read_appended (one read of what is left, when it fits every bound) gives the
    lines, counts, cursor and results of the window's reader, whatever the lines (bad,
    empty, CRLF, over the cap), the budget, a stop, and a last line without newline."""
    d = tmp_path_factory.mktemp("one")
    path = d / "a.jsonl"
    head = b"".join(line + b"\n" for line in before)
    tail_bytes = b"".join(line + b"\n" for line in appended) + trailing
    budget = budget or max(1, len(tail_bytes))

    def run(one_read: bool) -> tuple[list[tuple[int, dict, int]], list[tail.ReadResult], Cursor]:  # type: ignore[type-arg]
        path.write_bytes(head)
        cursor = Cursor(str(path), "cursor", "jsonl")
        got: list[tail.Line] = []
        results = []
        saved = tail.APPENDS_IN_ONE_READ
        tail.APPENDS_IN_ONE_READ = one_read
        try:
            read_all(path, cursor, budget=budget, max_line=max_line)
            with path.open("ab") as fh:
                fh.write(tail_bytes)
            seen = 0

            def stop() -> bool:
                return len(got) >= seen + stop_after if stop_after else False

            for _ in range(50):
                seen = len(got)
                res = tail.read_new_lines(str(path), cursor, got.append, budget_bytes=budget,
                                          max_line_bytes=max_line, stop=stop,
                                          final_line=final_line)
                results.append(res)
                if not res.more:
                    break
        finally:
            tail.APPENDS_IN_ONE_READ = saved
        # The file is written anew for each run: its inode and time are its own.
        return [(ln.offset, ln.obj, ln.crc) for ln in got], results, dataclasses.replace(
            cursor, dev=None, ino=None, mtime_ns=None
        )

    assert run(True) == run(False)
