"""The store's cursors (store/cursors.py, CursorStore) in-process on a real store in a
temporary directory: saved and loaded back field for field, states left in the store
and fetched, gone files left out and fetched by path, the committed cursors after a
transaction that failed, the sidecar signature read alone, and the Ingestor handed
the one object."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from agentsrc_daemon.cursor import NO_SKIPS, SIDECAR_KEY, Cursor
from agentsrc_daemon.ingest.round import Ingestor
from agentsrc_daemon.store import Store
from agentsrc_daemon.store.cursors import CursorStore
from agentsrc_daemon.store.packing import MIN_PACK_BYTES, PACKED_V1

A, B = "/h/a.jsonl", "/h/b.jsonl"
# Long enough to be stored packed (store/packing.py, MIN_PACK_BYTES).
STATE = {"turn": 3, "open": ["call_one", "call_two"], "cwd": "/home/user/project/subdir"}


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "db.sqlite")
    yield s
    s.close()


def _cursor(path: str = A, **kw: object) -> Cursor:
    fields: dict[str, object] = dict(
        dev=7, ino=42, size=900, mtime_ns=123, offset=640, head_len=64, head_hash=b"\x01\x02",
        skipping=True, state=STATE, generation=2, lines=11,
        skipped={"too_long": 1},
    )
    fields.update(kw)
    return Cursor(path, "codex", "jsonl", **fields)  # type: ignore[arg-type]


def _save(cursors: CursorStore, *cs: Cursor) -> None:
    with cursors.conn:
        for c in cs:
            cursors.save(c)


def test_a_saved_cursor_loads_back_field_for_field(store: Store) -> None:
    cursors = CursorStore(store.conn)
    c = _cursor()
    _save(cursors, c)
    assert c.source_id is not None and cursors.source_ids == {A: c.source_id}
    again = CursorStore(store.conn)  # a start: nothing remembered
    (loaded,) = again.load().values()
    assert again.source_ids == {A: c.source_id}
    assert (loaded.path, loaded.adapter, loaded.mode, loaded.source_id, loaded.dev, loaded.ino,
            loaded.size, loaded.mtime_ns, loaded.offset, loaded.head_len, loaded.head_hash,
            loaded.skipping, loaded.generation, loaded.lines, loaded.skipped, loaded.gone_at) == (
        A, "codex", "jsonl", c.source_id, 7, 42, 900, 123, 640, 64, b"\x01\x02", True, 2, 11,
        {"too_long": 1}, None)
    assert loaded.state is None and loaded.state_json == orjson.dumps(c.state)  # not decoded
    assert loaded.load_state() == STATE
    # Stored packed (store/packing.py), read back as JSON.
    (raw,) = store.conn.execute("SELECT state FROM sources").fetchone()
    assert raw[:1] == PACKED_V1 and len(orjson.dumps(STATE)) >= MIN_PACK_BYTES


def test_states_stay_in_the_store_until_fetched_and_are_kept_when_saved_without(
    store: Store,
) -> None:
    cursors = store.cursors
    _save(cursors, _cursor())
    (c,) = CursorStore(store.conn).load(states=False).values()
    assert c.state_in_store and c.state_json is None
    with pytest.raises(RuntimeError, match="still in the store"):
        c.load_state()
    assert c.source_id is not None
    assert cursors.state(c.source_id) == orjson.dumps(STATE)
    assert cursors.state(c.source_id + 99) is None
    c.offset = 700  # saved without its state: the stored one is left as it is
    _save(cursors, c)
    (back,) = CursorStore(store.conn).load().values()
    assert back.offset == 700 and back.load_state() == STATE


def test_gone_files_are_left_out_at_start_and_fetched_by_path(store: Store) -> None:
    cursors = store.cursors
    _save(cursors, _cursor(A, gone_at="2026-12-01T00:00:00.000Z"), _cursor(B, offset=5))
    assert sorted(cursors.load(gone=False)) == [B]
    assert sorted(cursors.load()) == [A, B]
    assert cursors.gone_count() == 1
    fetched = cursors.gone_cursor(A)
    assert fetched is not None and fetched.state_in_store and fetched.offset == 640
    assert fetched.gone_at == "2026-12-01T00:00:00.000Z"
    assert cursors.gone_cursor(B) is None  # live
    assert cursors.gone_cursor("/h/never.jsonl") is None


def test_the_committed_cursors_after_a_transaction_that_failed(store: Store) -> None:
    cursors = store.cursors
    _save(cursors, _cursor(A, offset=100))
    moved, new = _cursor(A, offset=900), _cursor(B, offset=50)
    with pytest.raises(ZeroDivisionError), cursors.conn:
        cursors.save(moved)
        cursors.save(new)  # a source row made in the failed transaction
        1 / 0  # noqa: B018 - the commit fails here
    assert B in cursors.source_ids  # remembered, but rolled back with the transaction
    committed = cursors.committed([A, B])
    assert sorted(committed) == [A] and committed[A].offset == 100
    assert B not in cursors.source_ids  # the ids re-read from the database


def test_the_start_reads_the_sidecar_signature_alone(store: Store) -> None:
    cursors = store.cursors
    state = {"turn": 1, SIDECAR_KEY: {"sig": [1, 2, 3], "title": "x"}}
    _save(cursors, _cursor(A, state=state), _cursor(B, state=state))
    store.conn.execute("UPDATE sources SET adapter = 'copilot' WHERE path = ?", (A,))
    start = cursors.load(states=False, sidecar_adapters=("copilot",))
    assert start[A].sidecar_sig == [1, 2, 3] and start[A].state_in_store
    assert start[B].sidecar_sig is None  # not a sidecar adapter's
    assert cursors.load()[A].sidecar_sig is None  # with the states: read from them


def test_the_ingestor_is_handed_the_one_object(store: Store) -> None:
    _save(store.cursors, _cursor(A, gone_at="2026-12-01T00:00:00.000Z"), _cursor(B))
    ing = Ingestor(max_line_bytes=1 << 20, cursor_store=store.cursors)
    ing.cursors = store.cursors.load(states=False, gone=False)
    assert sorted(ing.cursors) == [B]
    c = ing.known_cursor(A)  # a gone file's path seen again: fetched, then kept
    assert c is not None and c.offset == 640 and ing.cursors[A] is c
    ing.load_state(c)
    assert c.state == STATE and not c.state_in_store
    taken = Ingestor(max_line_bytes=1 << 20)
    taken.take_over(ing)
    assert taken.cursor_store is store.cursors
    alone = Ingestor(max_line_bytes=1 << 20)
    (b,) = CursorStore(store.conn).load(states=False, gone=False).values()
    with pytest.raises(RuntimeError, match="no way to read the state"):
        alone.load_state(b)
    assert alone.known_cursor(A) is None


def test_loaded_cursors_share_the_values_every_file_repeats(store: Store) -> None:
    """The adapter's name, the mode and the device are one object each across the
    cursors loaded (SQLite returns a new one per row: at 20,000 files held, 2.8 MB)."""
    cursors = CursorStore(store.conn)
    _save(cursors, _cursor(A, dev=64768), _cursor(B, dev=64768))
    a, b = CursorStore(store.conn).load(states=False).values()
    assert (a.adapter, a.mode, a.dev) == (b.adapter, b.mode, b.dev) == ("codex", "jsonl", 64768)
    assert a.adapter is b.adapter and a.mode is b.mode and a.dev is b.dev


def test_cursors_without_skips_share_one_read_only_mapping(store: Store) -> None:
    """A file with nothing skipped holds the one NO_SKIPS (20,000 empty dicts were
    1.3 MB); a count gives that cursor a dict of its own, saved and loaded back, and
    the shared one stays empty, also across a pickle (a backfill worker's round)."""
    cursors = CursorStore(store.conn)
    _save(cursors, _cursor(A, skipped={}), _cursor(B, skipped={}))
    a, b = CursorStore(store.conn).load(states=False).values()
    assert a.skipped is NO_SKIPS and b.skipped is NO_SKIPS
    with pytest.raises(TypeError):
        a.skipped["malformed"] = 1  # type: ignore[index]
    a.count_skip("malformed")
    a.count_skip("malformed", 2)
    assert (a.skipped, b.skipped, dict(NO_SKIPS)) == ({"malformed": 3}, {}, {})
    assert pickle.loads(pickle.dumps(b)).skipped is NO_SKIPS
    _save(cursors, a, b)
    again = CursorStore(store.conn).load(states=False)
    assert (again[A].skipped, again[B].skipped) == ({"malformed": 3}, NO_SKIPS)


def test_a_live_save_stores_the_state_as_json_until_its_file_is_quiet(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append's commit stores its file's state as JSON (deflating a real session's
    state cost more than the rest of the commit); once the file has been quiet for
    STATE_QUIET_S it is packed, in a transaction of its own. Read back the same either way."""
    from agentsrc_daemon.store import cursors as cursors_mod

    now = [1000.0]
    monkeypatch.setattr(cursors_mod.time, "monotonic", lambda: now[0])
    cursors = store.cursors

    def raw(path: str) -> bytes:
        (value,) = store.conn.execute(
            "SELECT state FROM sources WHERE path = ?", (path,)).fetchone()
        return bytes(value)

    with store.conn:
        cursors.save(_cursor(A), live=True)
        cursors.save(_cursor(B))  # a backfill's save: packed at once
    assert raw(A) == orjson.dumps(STATE) and raw(B)[:1] == PACKED_V1
    assert cursors.quiet_at() == 1000.0 + cursors_mod.STATE_QUIET_S
    assert CursorStore(store.conn).load()[A].load_state() == STATE  # JSON reads the same
    now[0] += cursors_mod.STATE_QUIET_S - 1
    with store.conn:  # appended again: its quiet time starts over
        cursors.save(_cursor(A, offset=700), live=True)
    now[0] += cursors_mod.STATE_QUIET_S - 1
    assert cursors.pack_quiet_states() == 0 and raw(A) == orjson.dumps(STATE)
    now[0] += 1
    assert cursors.pack_quiet_states() == 1
    assert raw(A)[:1] == PACKED_V1 and cursors.quiet_at() is None
    loaded = CursorStore(store.conn).load()[A]
    assert (loaded.offset, loaded.load_state()) == (700, STATE)
    assert cursors.pack_quiet_states() == 0  # nothing left
    # A stop packs what is left at once (quiet_s 0).
    with store.conn:
        cursors.save(_cursor(B), live=True)
    assert raw(B) == orjson.dumps(STATE)
    assert cursors.pack_quiet_states(0.0) == 1 and raw(B)[:1] == PACKED_V1
