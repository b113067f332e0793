"""The sqlite source mode on a real OpenCode database, without the daemon: bounded
rounds, the reader cursor persisted in the source's cursor row, a locked database retried
later, a replaced database reset, and an updated part superseding the stored one."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import orjson
from test_new_agents_e2e import T0, add_opencode_turn, opencode_db

from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.round import Ingestor
from agentsrc_daemon.store import Batch, Reader, Store


def _spec(db: Path) -> sources.SourceSpec:
    return sources.SourceSpec(str(db), "opencode", sources.SQLITE, str(db.parent))


def _drain(ingestor: Ingestor, store: Store, spec: sources.SourceSpec) -> int:
    rounds = 0
    while True:
        batch = Batch()
        rnd = ingestor.ingest(spec, batch, 4 << 20)
        store.commit(batch)
        rounds += 1
        assert rnd.retry_after is None
        if not rnd.more:
            return rounds


def _count(db_path: Path, kind: str) -> int:
    reader = Reader(db_path)
    try:
        return len(reader.events(kinds=[kind], limit=100_000))
    finally:
        reader.close()


def test_bounded_rounds_and_the_cursor_survive_a_restart(tmp_path: Path) -> None:
    db = opencode_db(tmp_path / "home", 10, 60)  # 2400 message and part rows
    store_path = tmp_path / "s.db"
    store = Store(store_path)
    spec = _spec(db)
    ing = Ingestor(max_line_bytes=1 << 20)
    assert _drain(ing, store, spec) > 2  # pages of at most 500 rows
    assert _count(store_path, "prompt") == 600
    state = store.cursors.load()[str(db)].load_state()
    assert state is not None and set(state) == {"adapter", "reader"}
    # A restart: the persisted cursor reads only what is new.
    ing.close()
    again = Ingestor(max_line_bytes=1 << 20)
    again.cursors = store.cursors.load()
    conn = apsw.Connection(str(db))
    with conn:
        add_opencode_turn(conn, "ses_e2e0000", 99, T0 + 99_000)
    conn.close()
    batch = Batch()
    again.ingest(spec, batch, 4 << 20)
    assert sorted(e.kind for e in batch.events if e.kind == "prompt") == ["prompt"]
    store.commit(batch)
    again.close()
    store.close()
    assert _count(store_path, "prompt") == 601


def test_a_locked_database_is_retried_later(tmp_path: Path) -> None:
    db = opencode_db(tmp_path / "home", 1, 2)
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("BEGIN EXCLUSIVE")
    try:
        ing = Ingestor(max_line_bytes=1 << 20)
        batch = Batch()
        rnd = ing.ingest(_spec(db), batch, 4 << 20)
        assert rnd.retry_after is not None and rnd.retry_after > 0
        assert batch.events == []
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    batch = Batch()
    rnd = ing.ingest(_spec(db), batch, 4 << 20)
    assert rnd.retry_after is None
    assert [e.kind for e in batch.events].count("prompt") == 2
    ing.close()


def test_a_replaced_database_resets_and_duplicates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = opencode_db(home, 2, 3)
    store_path = tmp_path / "s.db"
    store = Store(store_path)
    ing = Ingestor(max_line_bytes=1 << 20)
    _drain(ing, store, _spec(db))
    before = Reader(store_path).counts()["events"]
    # Replaced by another file with the same rows plus one turn (a new inode).
    other = opencode_db(tmp_path / "other", 2, 4)
    os.replace(other, db)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(other) + suffix):
            os.replace(str(other) + suffix, str(db) + suffix)
    batch = Batch()
    rnd = ing.ingest(_spec(db), batch, 4 << 20)
    assert rnd.reset == "replaced"
    store.commit(batch)
    ing.close()
    store.close()
    assert _count(store_path, "prompt") == 8
    assert Reader(store_path).counts()["events"] > before


def test_an_updated_part_supersedes_the_stored_event(tmp_path: Path) -> None:
    db = opencode_db(tmp_path / "home", 1, 1)
    store_path = tmp_path / "s.db"
    store = Store(store_path)
    ing = Ingestor(max_line_bytes=1 << 20)
    _drain(ing, store, _spec(db))
    n_events = Reader(store_path).counts()["events"]
    conn = apsw.Connection(str(db))
    part = "prt_ses_e2e0000a0"
    data = orjson.loads(conn.execute("SELECT data FROM part WHERE id=?", (part,)).fetchone()[0])
    data["state"]["output"] = "a much longer output than before"
    with conn:
        conn.execute(
            "UPDATE part SET data=?, time_updated=? WHERE id=?",
            (orjson.dumps(data).decode(), T0 + 60_000, part),
        )
    conn.close()
    _drain(ing, store, _spec(db))
    ing.close()
    store.close()
    reader = Reader(store_path)
    results = reader.events(kinds=["tool_result"], limit=10)
    assert [r.get("output_chars", r.get("data", {}).get("output_chars")) for r in results] == [
        len("a much longer output than before")
    ]
    assert reader.counts()["events"] == n_events  # replaced, not counted twice
    reader.close()
