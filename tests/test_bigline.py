"""Big lines parsed with their giant strings held once (ingest/bigline.py): the same
objects, checksums and skip counts as parsing the line whole, for any line; and, in the
real daemon, the same stored events and findings."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import string
import tempfile
import zlib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.ingest import bigline, tail

from harness import DaemonFactory, all_events, claude_line, claude_session, wait_for


def whole(raw: bytes) -> tuple[Any, int, dict[str, int]]:
    """What the reader made of a big line before bigline.py: decode_big_line."""
    c = Cursor("x", "claude", "jsonl")
    obj = tail.decode_big_line(bytearray(raw), c)
    return obj, zlib.crc32(raw) if obj is not None else -1, c.skipped


def read_big(raw: bytes, *, chunk: int, giant: int) -> tuple[Any, int, dict[str, int]]:
    # A chunk no longer than the line: its start is in the window without its newline,
    # which is what sends a line over BIG_LINE_BYTES (1 here) to the big-line path.
    chunk = min(chunk, len(raw))
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.write(fd, raw + b"\n")
    os.close(fd)
    saved = tail.CHUNK_BYTES, tail.BIG_LINE_BYTES, tail.GIANT_STRING_BYTES
    tail.CHUNK_BYTES, tail.BIG_LINE_BYTES, tail.GIANT_STRING_BYTES = chunk, 1, giant
    try:
        c = Cursor(path, "claude", "jsonl")
        got: list[tail.Line] = []
        tail.read_new_lines(path, c, got.append, budget_bytes=1 << 30, max_line_bytes=1 << 30)
    finally:
        tail.CHUNK_BYTES, tail.BIG_LINE_BYTES, tail.GIANT_STRING_BYTES = saved
        os.unlink(path)
    assert c.offset == len(raw) + 1 and c.lines == 1
    if not got:
        return None, -1, c.skipped
    assert len(got) == 1 and got[0].offset == 0
    return got[0].obj, got[0].crc, c.skipped


plain_text = st.text(alphabet=string.ascii_letters + " /+=", min_size=0, max_size=120)
escaped_text = st.text(alphabet='ab"\\\n\t/\x01\x7f', min_size=0, max_size=80)  # ASCII once decoded
giant_text = st.one_of(
    plain_text,
    plain_text,
    escaped_text,
    st.text(min_size=0, max_size=60),  # non-ASCII, other control characters
)
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), giant_text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    obj=values,
    chunk=st.integers(1, 50),
    giant=st.integers(1, 16),
    mangle=st.sampled_from(["none", "crlf", "truncate", "bad_utf8", "mark", "dup_key"]),
    cut=st.integers(0, 1000),
    ascii_escapes=st.booleans(),
)
def test_a_big_line_comes_out_as_parsing_it_whole(
    obj: Any, chunk: int, giant: int, mangle: str, cut: int, ascii_escapes: bool
) -> None:
    raw = json.dumps(obj, ensure_ascii=ascii_escapes).encode("utf-8", "surrogatepass")
    if mangle == "crlf":
        raw += b"\r"
    elif mangle == "truncate" and raw:
        raw = raw[: cut % len(raw)]
    elif mangle == "bad_utf8":
        raw = raw[: cut % (len(raw) + 1)] + b"\xff" + raw[cut % (len(raw) + 1) :]
    elif mangle == "mark":
        raw = b'{"m":"\\u0000agentsrc-giant-string-0","big":"' + b"z" * 50 + b'","o":' + raw + b"}"
    elif mangle == "dup_key":
        raw = b'{"k":"' + b"z" * 50 + b'","k":1,"o":' + raw + b"}"
    if len(raw) < 2:
        return  # never a big line: framed whole in the window
    assert read_big(raw, chunk=chunk, giant=giant) == whole(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    obj=st.dictionaries(
        st.text(alphabet="abc", max_size=3), st.one_of(plain_text, escaped_text, st.integers()), min_size=1
    ),
    chunk=st.integers(1, 50),
    giant=st.integers(4, 40),
)
def test_giant_ascii_strings_take_the_held_once_path(obj: dict[str, Any], chunk: int, giant: int) -> None:
    """Whatever the chunks cut (escapes, backslash runs, quotes), a line whose giant
    strings are ASCII once decoded is parsed with them held once, not whole."""
    raw = json.dumps(obj).encode()
    giants = [v for v in obj.values() if isinstance(v, str) and len(json.dumps(v)) - 2 >= giant]
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.write(fd, raw)
    try:
        parsed = bigline.parse(fd, 0, len(raw), chunk=chunk, giant=giant)
    finally:
        os.close(fd)
        os.unlink(path)
    if not giants:
        assert parsed is None
        return
    assert parsed is not None and parsed.error is None and not parsed.crlf
    assert parsed.obj == obj and parsed.crc == zlib.crc32(raw)


def test_giant_strings_are_found_across_chunks_and_escapes(tmp_path: Path) -> None:
    """Escapes cut between chunks (an escaped quote is not the string's end)."""
    p = tmp_path / "l.jsonl"
    raw = b'{"a":"' + b"x" * 30 + b'","b":"q\\"' + b"y" * 40 + b'","c":["' + b"z" * 25 + b'"]}'
    p.write_bytes(raw)
    fd = os.open(p, os.O_RDONLY)
    try:
        spans = bigline.find_giant_strings(fd, 0, len(raw), chunk=7, giant=25)
    finally:
        os.close(fd)
    assert spans is not None
    assert [raw[s.start : s.end] for s in spans] == [b"x" * 30, b'q\\"' + b"y" * 40, b"z" * 25]


def test_the_string_layout_checks_out(tmp_path: Path) -> None:
    """This interpreter's strings have the layout the held-once path writes into (else
    parse would return None: every big line parsed whole)."""
    raw = b'{"a":"' + b"x" * 64 + b'"}'
    (tmp_path / "l.jsonl").write_bytes(raw)
    fd = os.open(tmp_path / "l.jsonl", os.O_RDONLY)
    try:
        parsed = bigline.parse(fd, 0, len(raw), chunk=16, giant=32)
    finally:
        os.close(fd)
    assert parsed is not None and parsed.obj == {"a": "x" * 64}


def test_the_daemon_stores_a_giant_prompt_as_before_and_finds_its_secret(
    daemon_factory: DaemonFactory,
) -> None:
    """A 6 MiB prompt (over the big-line mark), plain ASCII, with a secret 5 MiB in:
    stored cut at 256 KiB with its length, the secret found (the scanner saw the text
    whole), the line's neighbours intact; a 5 MiB prompt with newlines (escapes,
    decoded piece by piece) and a 6 MiB one beyond ASCII (parsed whole) the same."""
    rnd = random.Random(20261201)
    key = "AKIA" + "".join(rnd.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    giant = "y" * (5 << 20) + f" deploy with key {key} please " + "w" * (1 << 20)
    escaped = ("line\t\"q\"\\\n" * (1 << 19))[:-1]  # 5.5 MiB with escapes
    accented = "é" * (3 << 20)  # 6 MiB of UTF-8: parsed whole
    d = daemon_factory()
    f = claude_session(d.home)
    lines = [
        claude_line("u1", text="small first"),
        claude_line("u2", text=giant),
        claude_line("u3", text=escaped),
        claude_line("u4", text=accented),
        claude_line("u5", text="small last"),
    ]
    f.write_bytes(b"".join(lines))
    d.start()
    d.wait_live()
    prompts = [e for e in all_events(d, kinds=["prompt"]) if e["source_path"] == str(f)]
    offsets = [sum(len(line) for line in lines[:i]) for i in range(5)]
    assert [(p["offset"], p.get("text_chars"), p.get("text_truncated")) for p in prompts] == [
        (offsets[0], None, None),
        (offsets[1], len(giant), True),
        (offsets[2], len(escaped), True),
        (offsets[3], len(accented), True),
        (offsets[4], None, None),
    ]
    assert prompts[1]["text"] == giant[: 256 * 1024]
    assert prompts[2]["text"] == escaped[: 256 * 1024]
    assert prompts[3]["text"] == accented[: 256 * 1024]
    assert prompts[4]["text"] == "small last"
    wait_for(lambda: d.call("findings.list")["findings"] != [])
    findings = d.call("findings.list")["findings"]
    hkey = (d.data_dir / "hash.key").read_bytes()
    assert [(x["type"], x["hash"]) for x in findings] == [
        ("AWS Access Key", hmac.new(hkey, key.encode(), hashlib.sha256).hexdigest())
    ]
    assert key not in d.log()


_HELD_FREED_HEAP = r"""
import json, os, sys
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.ingest import tail

path, size = sys.argv[1], int(sys.argv[2])
def kib(field):
    with open("/proc/self/status") as fh:
        return int(fh.read().split(field + ":")[1].split()[0])
# As after a backfill: a large block freed raises glibc's mmap threshold, so the blocks
# freed after it stay in the heap, resident (12 MiB of them here).
big = bytearray(24 << 20)
del big
junk = [bytearray(b"j" * (1 << 20)) for _ in range(12)]
del junk
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # VmHWM from here
base = kib("VmRSS")
got = []
tail.read_new_lines(path, Cursor(path, "claude", "jsonl"), got.append,
                    budget_bytes=1 << 30, max_line_bytes=1 << 30)
assert len(got) == 1 and len(got[0].obj["message"]["content"]) == size
print(json.dumps({"base": base, "peak": kib("VmHWM")}))
"""


def test_a_big_line_is_held_on_a_heap_handed_back_first(tmp_path: Path) -> None:
    """The freed blocks the heap keeps resident are handed back before a big line is
    held: its parse peaks below what the process held before plus the line's 40 MB
    string (12 MiB of freed blocks were resident; without the trim the peak was base
    plus the string and some)."""
    import subprocess
    import sys

    size = 40 << 20
    path = tmp_path / "big.jsonl"
    path.write_bytes(json.dumps({"type": "user", "message": {"role": "user", "content": "x" * size}})
                     .encode() + b"\n")
    out = subprocess.run([sys.executable, "-c", _HELD_FREED_HEAP, str(path), str(size)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    kib = json.loads(out)
    assert kib["peak"] - kib["base"] < (size >> 10) - 6 * 1024, kib
