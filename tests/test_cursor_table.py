"""The cursor table (cursor_table.py): a plain cursor packed and unpacked field for
field (a property over any values), the others kept as objects, a cursor taken kept
(what ingest changes is kept), a look that leaves it packed, and the memory it saves."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsrc_daemon.cursor import NO_SKIPS, Cursor
from agentsrc_daemon.cursor_table import CursorTable, peek, peek_items

FIELDS = ("path", "adapter", "mode", "source_id", "dev", "ino", "size", "mtime_ns", "offset",
          "head_len", "head_hash", "skipping", "state", "generation", "lines", "skipped",
          "gone_at", "state_json", "state_in_store", "sidecar_sig")
INT64 = st.integers(-(2**63), 2**63 - 1)
OPTIONAL_INT64 = st.none() | INT64


def _fields(c: Cursor) -> tuple[object, ...]:
    return tuple(getattr(c, f) for f in FIELDS)


def _plain(path: str = "/h/a.jsonl", **kw: object) -> Cursor:
    fields: dict[str, object] = dict(
        source_id=40001, dev=64768, ino=912345, size=148061, mtime_ns=1764979200123456789,
        offset=148061, head_len=4096, head_hash=b"\x07" * 16, generation=3, lines=812,
        skipped=NO_SKIPS, state_in_store=True,
    )
    fields.update(kw)
    return Cursor(path, "codex", "jsonl", **fields)  # type: ignore[arg-type]


@given(
    source_id=OPTIONAL_INT64, dev=OPTIONAL_INT64, ino=OPTIONAL_INT64, size=OPTIONAL_INT64,
    mtime_ns=OPTIONAL_INT64, offset=INT64, head_len=INT64, generation=INT64, lines=INT64,
    head_hash=st.none() | st.binary(max_size=40), skipping=st.booleans(),
    state_in_store=st.booleans(), adapter=st.sampled_from(["codex", "claude-code", "aider"]),
    mode=st.sampled_from(["jsonl", "document", "sqlite"]),
)
def test_a_plain_cursor_comes_back_field_for_field(
    source_id: int | None, dev: int | None, ino: int | None, size: int | None,
    mtime_ns: int | None, offset: int, head_len: int, generation: int, lines: int,
    head_hash: bytes | None, skipping: bool, state_in_store: bool, adapter: str, mode: str,
) -> None:
    c = Cursor("/h/x.jsonl", adapter, mode, source_id=source_id, dev=dev, ino=ino, size=size,
               mtime_ns=mtime_ns, offset=offset, head_len=head_len, head_hash=head_hash,
               skipping=skipping, generation=generation, lines=lines,
               state_in_store=state_in_store)
    want = _fields(c)
    table = CursorTable.packed([c])
    assert table.packed_count() == 1
    peeked = table.peek(c.path)
    assert peeked is not None and _fields(peeked) == want
    taken = table[c.path]
    assert _fields(taken) == want and table.packed_count() == 0
    assert table.cool(c.path) and _fields(table[c.path]) == want


@pytest.mark.parametrize("kw", [
    {"state": {"turn": 1}}, {"state_json": b'{"turn":1}', "state_in_store": False},
    {"skipped": {"malformed": 2}}, {"gone_at": "2026-12-01T00:00:00.000Z"},
    {"sidecar_sig": [1, 2, 3]}, {"mtime_ns": 2**63}, {"lines": -(2**63) - 1},
], ids=["state", "state_json", "skipped", "gone", "sidecar", "past_int64", "below_int64"])
def test_a_cursor_that_is_not_plain_stays_an_object(kw: dict[str, object]) -> None:
    c = _plain(**kw)
    table = CursorTable.packed([c, _plain("/h/b.jsonl")])
    assert table.packed_count() == 1  # b only
    assert table.peek(c.path) is c and table[c.path] is c and not table.cool(c.path)


def test_a_cursor_taken_is_kept_and_a_look_leaves_it_packed() -> None:
    a, b = _plain("/h/a.jsonl"), _plain("/h/b.jsonl", source_id=40002)
    table = CursorTable.packed([a, b])
    assert (len(table), sorted(table), "/h/a.jsonl" in table, "/h/z" in table) == (
        2, ["/h/a.jsonl", "/h/b.jsonl"], True, False)
    looked = peek(table, "/h/a.jsonl")
    assert looked is not None and looked is not a and looked.offset == 148061
    looked.offset = 1  # a look's copy: not kept
    assert [p for p, _ in peek_items(table)] == ["/h/a.jsonl", "/h/b.jsonl"]
    assert table.packed_count() == 2 and table.peek("/h/a.jsonl").offset == 148061  # type: ignore[union-attr]
    taken = table.get("/h/a.jsonl")
    assert taken is not None and table["/h/a.jsonl"] is taken and table.packed_count() == 1
    taken.offset = 200000  # as ingest moves it
    taken.count_skip("malformed")
    assert table["/h/a.jsonl"].offset == 200000 and not table.cool("/h/a.jsonl")  # skips: kept
    fresh = Cursor("/h/b.jsonl", "codex", "jsonl")  # a replaced file's new cursor
    table["/h/b.jsonl"] = fresh
    assert table.peek("/h/b.jsonl") is fresh and table.packed_count() == 0
    assert table.cool("/h/b.jsonl") and table.packed_count() == 1
    del table["/h/b.jsonl"]
    assert table.pop("/h/a.jsonl") is taken and len(table) == 0
    with pytest.raises(KeyError):
        table["/h/a.jsonl"]
    assert peek({"/h/a.jsonl": a}, "/h/a.jsonl") is a  # a plain dict (a worker's, a test's)


def test_packed_cursors_hold_a_fraction_of_their_objects() -> None:
    """The bound this module is for: a plain cursor packed is its bytes (about 120 at
    a 16-byte head hash) against the object and its values (about 500 beside the path,
    which both keep)."""
    c = _plain()
    table = CursorTable.packed([_plain()])
    packed = sys.getsizeof(table._cold[c.path])
    objects = sys.getsizeof(c) + sum(
        sys.getsizeof(getattr(c, f)) for f in ("source_id", "dev", "ino", "size", "mtime_ns",
                                               "offset", "head_len", "head_hash", "lines"))
    assert packed <= 130 and objects >= 3 * packed
