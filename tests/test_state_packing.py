"""Each file's adapter state (``sources.state``) stored packed (store/packing.py, the
events' format): packed as the writer saves it, read back unpacked by the Store (with
its cursor, or on its own) and by the start's SQL that takes the sidecar signatures,
and packed in place in the stores written before (migrations/chunked.PACK_STATES, chunked, resumed
after a kill)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.cursor import SIDECAR_KEY, Cursor
from agentsrc_daemon.store import Batch, Store, packing
from agentsrc_daemon.store.connection import connect
from agentsrc_daemon.store.migrations.chunked import PACK_STATES
from agentsrc_daemon.store.migrations.runner import migrate, run_migration
from agentsrc_daemon.store.migrations.versions import MIGRATIONS
from agentsrc_daemon.store.packing import MIN_PACK_BYTES, PACKED_V1, pack, repack, unpack

# JSON as the adapters' states hold it: objects of short keys (the states' own, and
# others), numbers, strings, booleans, lists; the top level an object.
_KEYS = st.sampled_from(
    ["turn", "pending", "cwd", "model", "last_ts", "usage", "sidechains", "input_tokens",
     SIDECAR_KEY, "sig", "msgs", "session"]
) | st.text(max_size=12)
_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=30,
)
STATES = st.dictionaries(_KEYS, _JSON, max_size=12).map(orjson.dumps)


@settings(max_examples=150, deadline=None)
@given(STATES)
def test_a_packed_state_unpacks_to_its_json_and_json_reads_as_itself(state: bytes) -> None:
    stored = pack(state)
    assert unpack(stored) == state
    assert (stored[:1] == PACKED_V1 and len(stored) < len(state)) or stored == state
    # A state stored before (or left as written): JSON, read back as itself.
    assert state[:1] == b"{" and unpack(state) == state
    # Packing what a column holds again changes nothing (a migration's chunk done twice).
    assert repack(stored) == stored and repack(state.decode()) == stored


@settings(max_examples=150, deadline=None)
@given(STATES | st.binary(max_size=3000))
def test_the_primed_compressor_packs_the_bytes_a_fresh_one_does(value: bytes) -> None:
    """pack copies one compressor with the dictionary set (packing._PRIMED): the stored
    format is the bytes a compressor made for each value gives, the form stores hold."""
    fresh = packing._compressor()
    want = PACKED_V1 + fresh.compress(value) + fresh.flush()
    if len(value) < MIN_PACK_BYTES or len(want) >= len(value):
        want = value
    assert pack(value) == want
    assert pack(value) == want  # the primed one is never used up


def test_repack_leaves_a_packed_value_as_it_is() -> None:
    # pack() would deflate this (it shrinks): repack sees the marker and keeps it.
    looks_packed = PACKED_V1 + b"a" * 200
    assert len(pack(looks_packed)) < len(looks_packed)
    assert repack(looks_packed) == looks_packed


def _state(turn: int) -> dict[str, Any]:
    """A state of the size and shape the adapters keep (well over MIN_PACK_BYTES)."""
    return {
        "turn": turn,
        "cwd": "/home/u/project",
        "model": "claude-opus-4-1-20250805",
        "usage": {f"msg_{i:04d}": {"input_tokens": i, "output_tokens": 2 * i} for i in range(20)},
        "pending": {"call_1": ["shell", {"command": "git status"}]},
    }


COPILOT = "/h/.copilot/session-state/s1/events.jsonl"
CODEX = "/h/.codex/sessions/a.jsonl"
SIG = [64769, 1234, 567, 1700000000000000000]


def _stored(conn: apsw.Connection) -> dict[str, Any]:
    return {p: s for p, s in conn.execute("SELECT path, state FROM sources")}


def test_states_are_stored_packed_and_load_as_saved(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    copilot = {**_state(3), SIDECAR_KEY: {"sig": SIG, "title": "renamed"}}
    b = Batch()
    b.cursors[CODEX] = Cursor(CODEX, "codex", "jsonl", offset=10, state=_state(7))
    b.cursors[COPILOT] = Cursor(COPILOT, "copilot", "jsonl", offset=20, state=copilot)
    b.cursors["/h/short.jsonl"] = Cursor("/h/short.jsonl", "codex", "jsonl", state={"turn": 1})
    store.commit(b)
    store.close()

    conn = connect(tmp_path / "db.sqlite", readonly=True)
    raw = _stored(conn)
    conn.close()
    for path in (CODEX, COPILOT):
        assert raw[path][:1] == PACKED_V1 and len(raw[path]) < len(orjson.dumps(_state(7))) // 2
    assert raw["/h/short.jsonl"] == b'{"turn":1}'  # under MIN_PACK_BYTES: as written
    assert len(b'{"turn":1}') < MIN_PACK_BYTES

    s2 = Store(tmp_path / "db.sqlite")
    # Every state at once (states=True): unpacked JSON, decoded when the file is read.
    loaded = s2.cursors.load()
    assert loaded[CODEX].state_json == orjson.dumps(_state(7))
    assert {p: c.load_state() for p, c in loaded.items()} == {
        CODEX: _state(7), COPILOT: copilot, "/h/short.jsonl": {"turn": 1}}
    # The start's way: no state, the sidecar signature alone (by SQL, unpacked), then a
    # state fetched when its file is read.
    start = s2.cursors.load(states=False, sidecar_adapters=("copilot", "gemini"), gone=False)
    assert {p: (c.state, c.state_json, c.state_in_store) for p, c in start.items()} == {
        p: (None, None, True) for p in (CODEX, COPILOT, "/h/short.jsonl")}
    assert (start[COPILOT].sidecar_sig, start[CODEX].sidecar_sig) == (SIG, None)
    assert s2.cursors.state(start[COPILOT].source_id or 0) == orjson.dumps(copilot)
    assert s2.cursors.state(start[CODEX].source_id or 0) == orjson.dumps(_state(7))

    # Saved again undecoded (loaded with states=True, the file marked gone): packed again,
    # the same bytes as before (not packed twice).
    c = s2.cursors.load()[CODEX]
    assert c.state is None and c.state_json is not None
    c.gone_at = "2026-01-01T00:00:00Z"
    b2 = Batch()
    b2.cursors[CODEX] = c
    s2.commit(b2)
    assert _stored(s2.conn)[CODEX] == raw[CODEX]
    assert s2.cursors.load()[CODEX].load_state() == _state(7)
    s2.close()


# ---- the migration of the states already stored ----------------------------------------


def _at_pack_states(db: Path) -> tuple[apsw.Connection, int]:
    """A store at the version before PACK_STATES (what the code before it wrote)."""
    at = MIGRATIONS.named(PACK_STATES.name).version - 1
    conn = connect(db)
    for v in range(at):
        run_migration(conn, MIGRATIONS[v])
    return conn, at


SOURCES = 1_234  # three chunks of PACK_STATES_CHUNK (500)


def _raw_states(conn: apsw.Connection) -> dict[str, dict[str, Any] | None]:
    """The sources the code before wrote: raw JSON states (one in 7 as TEXT, as a store
    written by hand might hold it), one in 50 none, some short; ids with gaps."""
    want: dict[str, dict[str, Any] | None] = {}
    with conn:
        for i in range(1, SOURCES + 1):
            state = None if i % 50 == 0 else {"turn": i} if i % 11 == 0 else _state(i)
            value: Any = orjson.dumps(state) if state is not None else None
            if value is not None and i % 7 == 0:
                value = value.decode()
            path = f"/h/f{i}.jsonl"
            conn.execute(
                "INSERT INTO sources(id, path, adapter, mode, state) VALUES(?, ?, 'codex', 'jsonl', ?)",
                (i * 2 if i > 600 else i, path, value),  # ids 1..600, then 1202..2468
            )
            want[path] = state
    return want


def test_the_states_migration_packs_them_in_chunks_and_resumes_after_a_kill(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    conn, at = _at_pack_states(db)
    want = _raw_states(conn)
    target = 2 * SOURCES
    real_step = PACK_STATES.step

    def dies_in_the_second_chunk(c: apsw.Connection, after: int, upto: int) -> None:
        real_step(c, after, upto)  # its UPDATE done, then killed before the commit
        if after == 500:
            raise KeyboardInterrupt

    broken = dataclasses.replace(PACK_STATES, step=dies_in_the_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        run_migration(conn, dataclasses.replace(MIGRATIONS[at], body=broken))
    # What the kill left: the version as it was, the first chunk packed, none after it.
    assert conn.execute("PRAGMA user_version").fetchone() == (at,)
    assert dict(conn.execute("SELECT name, value FROM counters WHERE name LIKE 'pack_states%'")) == {
        "pack_states_done": 500, "pack_states_target": target}

    def packed(where: str) -> list[tuple[int, int]]:
        return list(conn.execute(
            "SELECT substr(state, 1, 1) = x'01', COUNT(*) FROM sources"
            f" WHERE state IS NOT NULL AND {where} GROUP BY 1 ORDER BY 1"))

    # Ids 1..500: 490 states, 45 of them short (every 11th, none of them every 50th).
    assert packed("id <= 500") == [(0, 45), (1, 445)]
    assert packed("id > 500") == [(0, SOURCES - 500 - 14)]  # none packed: 14 without a state
    steps: list[tuple[str, int, int]] = []
    run_migration(conn, MIGRATIONS[at], progress=lambda n, d, t: steps.append((n, d, t)))
    assert steps == [("pack_states", d, target) for d in (500, 1000, 1500, 2000, 2468)]
    assert conn.execute("PRAGMA user_version").fetchone() == (at + 1,)
    assert list(conn.execute("SELECT name FROM counters WHERE name LIKE 'pack_states%'")) == []
    # Every state packed but the short ones (every 11th but 550 and 1100, which have
    # none: stored as written, TEXT made BLOB).
    assert packed("1") == [(0, 110), (1, SOURCES - 24 - 110)]
    assert list(conn.execute(
        "SELECT typeof(state), COUNT(*) FROM sources GROUP BY 1 ORDER BY 1")) == [
        ("blob", SOURCES - 24), ("null", 24)]
    conn.close()
    store = Store(db)  # at the current version: nothing more to migrate
    got = {p: c.load_state() for p, c in store.cursors.load().items()}
    assert got == want
    assert store.cursors.state(2 * 1234) == orjson.dumps(_state(1234))
    store.close()


def test_migrate_packs_the_states_of_a_store_and_the_daemon_reads_them(tmp_path: Path) -> None:
    """migrate (as the Store opens it) from the version before; the start's SQL
    finds the sidecar signature in a state packed by the migration."""
    db = tmp_path / "db.sqlite"
    conn, at = _at_pack_states(db)
    copilot = {**_state(5), SIDECAR_KEY: {"sig": SIG}}
    with conn:
        conn.execute(
            "INSERT INTO sources(path, adapter, mode, state) VALUES(?, 'copilot', 'jsonl', ?)",
            (COPILOT, orjson.dumps(copilot)),
        )
    assert migrate(conn) == at
    ((stored,),) = conn.execute("SELECT state FROM sources")
    assert stored[:1] == PACKED_V1 and unpack(stored) == orjson.dumps(copilot)
    conn.close()
    store = Store(db)
    (c,) = store.cursors.load(states=False, sidecar_adapters=("copilot",)).values()
    assert (c.sidecar_sig, c.state_in_store) == (SIG, True)
    assert orjson.loads(store.cursors.state(c.source_id or 0) or b"") == copilot
    store.close()
