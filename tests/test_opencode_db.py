"""The OpenCode database reader against real SQLite databases built with OpenCode's schema
(tests/fixtures/opencode/schema.sql), written by a separate connection in WAL mode while
the reader polls: exactly the new and changed rows come back, a restart from the
persisted cursor reads nothing twice, the reader never writes the database nor holds it,
and odd schemas, locks and rows are counted, not fatal. Corpus databases are read from
copies."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.ingest.agent_db import AgentDB, PollResult
from agentsrc_daemon.ingest.db_schemas import OPENCODE

from corpus import corpus_home
from opencode_fixture import T0, build_db

LAG = 1000  # the recent window of the readers under test (ms)


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Writer:
    """OpenCode's side: one connection in WAL mode, upserting rows as OpenCode does."""

    def __init__(self, path: Path) -> None:
        self.conn = apsw.Connection(str(path))
        self.conn.setbusytimeout(2000)
        self.conn.execute("PRAGMA journal_mode = WAL")

    def session(self, sid: str, t: int, title: str = "A title") -> None:
        self.conn.execute(
            "INSERT INTO session(id, project_id, slug, directory, title, version, time_created,"
            " time_updated) VALUES(?, 'p', 's', '/w', ?, '1.2.0', ?, ?) ON CONFLICT(id) DO UPDATE"
            " SET title=excluded.title, time_updated=excluded.time_updated",
            (sid, title, t, t),
        )

    def message(self, mid: str, t: int, data: dict[str, Any], sid: str = "ses_a") -> None:
        self.conn.execute(
            "INSERT INTO message(id, session_id, time_created, time_updated, data)"
            " VALUES(?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET data=excluded.data,"
            " time_updated=excluded.time_updated",
            (mid, sid, t, t, orjson.dumps(data).decode()),
        )

    def part(self, pid: str, t: int, data: dict[str, Any] | str, mid: str = "msg_a",
             sid: str = "ses_a") -> None:
        text = data if isinstance(data, str) else orjson.dumps(data).decode()
        self.conn.execute(
            "INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)"
            " VALUES(?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET data=excluded.data,"
            " time_updated=excluded.time_updated",
            (pid, mid, sid, t, t, text),
        )

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "opencode.db"
    build_db(path, rows=False)
    return path


def ids(result: PollResult, table: str | None = None) -> list[str]:
    return [row["id"] for p in result.pages if table is None or p.table == table for row in p.rows]


def drain(reader: AgentDB, cursor: dict[str, Any] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for _ in range(1000):
        result = reader.poll(cursor)
        assert not result.busy, result.errors
        rows += [row for p in result.pages for row in p.rows]
        cursor = orjson.loads(orjson.dumps(result.cursor))  # persisted as JSON
        if not result.more:
            return rows, cursor
    raise AssertionError("never caught up")


def text(v: int) -> dict[str, Any]:
    """A part version whose length grows with the version (a same-ms rewrite is visible)."""
    return {"type": "text", "text": "x" * v, "v": v}


def fingerprint(path: Path) -> tuple[str, int] | None:
    if not path.exists():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


# -- new and changed rows, restarts ----------------------------------------------------------


def test_new_and_changed_rows_while_the_writer_works(db: Path) -> None:
    w = Writer(db)
    clock = Clock()
    w.session("ses_a", T0)
    w.message("msg_a", T0 + 1, {"role": "assistant", "parentID": "msg_u", "path": {"cwd": "/w"},
                                "time": {"created": T0 + 1}})
    w.part("prt_1", T0 + 2, {"type": "text", "text": "Hel", "time": {"start": T0 + 2}})
    reader = AgentDB(str(db), OPENCODE, lag_ms=LAG, clock_ms=clock)
    first = reader.poll(None)
    assert [(p.table, [r["id"] for r in p.rows]) for p in first.pages] == [
        ("session", ["ses_a"]), ("part", ["prt_1"]), ("message", ["msg_a"])]
    assert not first.more and not first.errors
    part = first.pages[1].rows[0]
    assert part["data"] == {"type": "text", "text": "Hel", "time": {"start": T0 + 2}}
    assert part["session"] == {"directory": "/w", "version": "1.2.0"}
    assert part["message"]["role"] == "assistant" and part["message"]["parentID"] == "msg_u"
    assert part["message"]["path"] == {"cwd": "/w"}
    cursor = first.cursor

    assert reader.poll(cursor).pages == []  # nothing new
    # The part streams on, a new one arrives, the message completes.
    w.part("prt_1", T0 + 50, {"type": "text", "text": "Hello", "time": {"start": T0 + 2, "end": T0 + 50}})
    w.part("prt_2", T0 + 51, {"type": "step-finish", "tokens": {}, "cost": 0})
    w.message("msg_a", T0 + 52, {"role": "assistant", "time": {"created": T0 + 1, "completed": T0 + 52}})
    clock.now = T0 + 60
    second = reader.poll(cursor)
    assert ids(second) == ["prt_1", "prt_2", "msg_a"]
    assert second.pages[0].rows[0]["data"]["text"] == "Hello"

    # A restart with the persisted cursor reads nothing again; new rows still come.
    restarted = AgentDB(str(db), OPENCODE, lag_ms=LAG, clock_ms=clock)
    saved = orjson.loads(orjson.dumps(second.cursor))
    assert restarted.poll(saved).pages == []
    w.part("prt_3", T0 + 70, {"type": "text", "text": "again"})
    clock.now = T0 + 80
    assert ids(restarted.poll(saved)) == ["prt_3"]
    reader.close()
    restarted.close()
    w.close()


def test_pages_are_bounded_and_ties_are_kept_apart(db: Path) -> None:
    """A JSON-to-SQLite migration stamps every row with the same time: rows are paged
    by (time_updated, id), across restarts, each exactly once."""
    w = Writer(db)
    for i in range(120):
        w.part(f"prt_{i:03d}", T0, text(i % 5 + 1))
    seen: list[str] = []
    cursor: dict[str, Any] | None = None
    for _ in range(100):
        reader = AgentDB(str(db), OPENCODE, max_rows=7, lag_ms=LAG, clock_ms=Clock(T0 + 10**6))
        result = reader.poll(cursor)
        reader.close()
        assert result.rows <= 7
        seen += ids(result)
        cursor = orjson.loads(orjson.dumps(result.cursor))
        if not result.more:
            break
    assert seen == [f"prt_{i:03d}" for i in range(120)]
    w.close()


def test_the_byte_budget_still_makes_progress(db: Path) -> None:
    w = Writer(db)
    for i in range(5):
        w.part(f"prt_{i}", T0 + i, {"type": "text", "text": "y" * 1000})
    reader = AgentDB(str(db), OPENCODE, max_bytes=10, clock_ms=Clock(T0 + 10**6))
    counts = []
    cursor: dict[str, Any] | None = None
    while True:
        result = reader.poll(cursor)
        counts.append(result.rows)
        cursor = result.cursor
        if not result.more:
            break
    assert counts[:5] == [1, 1, 1, 1, 1] and sum(counts) == 5
    w.close()


def test_late_commits_same_millisecond_rewrites_and_a_clock_stepping_back(db: Path) -> None:
    w = Writer(db)
    clock = Clock(T0 + 1000)
    w.part("prt_a", T0 + 1000, text(1))
    reader = AgentDB(str(db), OPENCODE, lag_ms=LAG, clock_ms=clock)
    r1 = reader.poll(None)
    assert ids(r1) == ["prt_a"]
    # A second OpenCode process commits a row it stamped before our watermark...
    w.part("prt_b", T0 + 990, text(1))
    # ...and prt_a is rewritten within the same millisecond.
    w.part("prt_a", T0 + 1000, text(2))
    clock.now = T0 + 1100
    r2 = reader.poll(r1.cursor)
    assert sorted((row["id"], row["data"]["v"]) for p in r2.pages for row in p.rows) == [
        ("prt_a", 2), ("prt_b", 1)]
    assert reader.poll(r2.cursor).pages == []
    # A writer whose clock stepped back a long way inserts a row: the rowid tells.
    w.part("prt_c", T0 - 50_000, text(1))
    clock.now = T0 + 5000
    r3 = reader.poll(r2.cursor)
    assert ids(r3) == ["prt_c"]
    assert reader.poll(r3.cursor).pages == []
    w.close()


# -- never writing, never holding ----------------------------------------------------------------


def test_reading_never_writes_the_database_nor_blocks_checkpoints(db: Path) -> None:
    w = Writer(db)
    for i in range(30):
        w.part(f"prt_{i}", T0 + i, text(i + 1))
    w.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = Path(str(db) + "-wal")
    # Some rows only in the WAL, too.
    for i in range(30, 40):
        w.part(f"prt_{i}", T0 + i, text(i + 1))
    before = (fingerprint(db), fingerprint(wal))
    reader = AgentDB(str(db), OPENCODE, max_rows=4, clock_ms=Clock(T0 + 10**6))
    rows, cursor = drain(reader, None)
    assert len(rows) == 40
    for _ in range(3):
        assert reader.poll(cursor).pages == []
    assert (fingerprint(db), fingerprint(wal)) == before
    # No transaction is held between polls: OpenCode can checkpoint the whole WAL.
    busy, log, done = w.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert (busy, log, done) == (0, 0, 0)
    reader.close()
    w.close()


def test_changed_follows_commits(db: Path) -> None:
    w = Writer(db)
    w.part("prt_1", T0, text(1))
    reader = AgentDB(str(db), OPENCODE, clock_ms=Clock(T0 + 10**6))
    assert reader.changed()  # never polled
    result = reader.poll(None)
    assert not reader.changed()
    assert not reader.changed()
    w.part("prt_2", T0 + 1, text(1))
    assert reader.changed()
    result = reader.poll(result.cursor)
    assert ids(result) == ["prt_2"] and not reader.changed()
    reader.close()
    w.close()


def test_a_busy_database_is_retried_later(tmp_path: Path) -> None:
    """A rollback-journal database locked by a writer: the poll gives up quickly, keeps
    its cursor, and succeeds once the lock is gone."""
    path = tmp_path / "opencode.db"
    build_db(path, rows=False, wal=False)
    w = apsw.Connection(str(path))
    w.execute("INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)"
              " VALUES('prt_1', 'm', 's', 1, 1, '{}')")
    reader = AgentDB(str(path), OPENCODE, busy_timeout_ms=50, clock_ms=Clock(T0))
    cursor = reader.poll(None).cursor
    w.execute("BEGIN EXCLUSIVE")
    w.execute("INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)"
              " VALUES('prt_2', 'm', 's', 2, 2, '{}')")
    started = time.monotonic()
    result = reader.poll(cursor)
    assert time.monotonic() - started < 1.0
    assert result.busy and result.pages == [] and result.cursor == cursor
    w.execute("COMMIT")
    assert ids(reader.poll(cursor)) == ["prt_2"]
    reader.close()
    w.close()


# -- odd schemas and rows ------------------------------------------------------------------------


def test_a_missing_table_or_column_is_counted(db: Path) -> None:
    w = Writer(db)
    w.session("ses_a", T0)
    w.message("msg_a", T0, {"role": "user", "time": {"created": T0}})
    w.conn.execute("DROP TABLE part")
    w.conn.execute("ALTER TABLE message DROP COLUMN time_updated")
    reader = AgentDB(str(db), OPENCODE, clock_ms=Clock(T0))
    result = reader.poll(None)
    assert result.errors == {"missing_table:part": 1, "missing_column:message.time_updated": 1}
    assert ids(result) == ["ses_a"]
    assert reader.schema()["part"] is None and reader.schema()["message"] is None
    # Counted once per schema version, not per poll.
    assert reader.poll(result.cursor).errors == {}
    w.close()


def test_a_newer_schema_is_read(db: Path) -> None:
    w = Writer(db)
    w.conn.execute("ALTER TABLE session ADD COLUMN model text")
    w.conn.execute("ALTER TABLE part ADD COLUMN extra text")
    w.conn.execute("CREATE TABLE session_message (id text PRIMARY KEY, data text)")
    w.session("ses_a", T0)
    w.part("prt_1", T0, text(1))
    result = AgentDB(str(db), OPENCODE, clock_ms=Clock(T0)).poll(None)
    assert result.errors == {} and ids(result) == ["ses_a", "prt_1"]
    w.close()


def test_bad_and_oversize_rows_are_counted_and_passed(db: Path) -> None:
    w = Writer(db)
    w.part("prt_1", T0, "{not json")
    w.part("prt_2", T0 + 1, '["a list"]')
    w.part("prt_3", T0 + 2, {"type": "text", "text": "z" * 500})
    w.part("prt_4", T0 + 3, text(1))
    reader = AgentDB(str(db), OPENCODE, max_row_bytes=200, clock_ms=Clock(T0 + 10**6))
    result = reader.poll(None)
    assert ids(result) == ["prt_4"]
    assert result.errors == {"bad_json:part": 2, "oversize:part": 1}
    assert reader.poll(result.cursor).pages == []  # passed, not retried forever
    w.close()


def test_times_opencode_never_writes_are_skipped(db: Path) -> None:
    w = Writer(db)
    w.part("prt_1", T0, text(1))
    for pid, t in (("prt_2", "'soon'"), ("prt_3", "1768471200000.5"), ("prt_4", "1768471200001.0")):
        w.conn.execute(
            "INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)"
            f" VALUES(?, 'msg_a', 'ses_a', 1, {t}, ?)", (pid, orjson.dumps(text(1)).decode()))
    reader = AgentDB(str(db), OPENCODE, clock_ms=Clock(T0 + 10**6))
    result = reader.poll(None)
    assert ids(result) == ["prt_1", "prt_4"] and result.errors == {}
    assert reader.poll(result.cursor).pages == []
    w.close()


def test_a_missing_or_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    reader = AgentDB(str(path), OPENCODE, clock_ms=Clock(T0))
    assert reader.poll(None).gone
    build_db(path, rows=False)
    w = Writer(path)
    w.part("prt_1", T0, text(1))
    w.close()
    first = reader.poll(None)
    assert ids(first) == ["prt_1"]
    # A new database file takes the old one's place (a new inode).
    other = tmp_path / "new.db"
    build_db(other, rows=False)
    w = Writer(other)
    w.part("prt_9", T0 - 5, text(1))
    w.close()
    for suffix in ("-wal", "-shm"):
        if Path(str(path) + suffix).exists():
            os.remove(str(path) + suffix)
    os.replace(other, path)
    second = reader.poll(first.cursor)
    assert second.reset == "replaced" and ids(second) == ["prt_9"]
    reader.close()


# -- any interleaving ------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_interleaving_delivers_each_version_once(data: st.DataObject) -> None:
    """Inserts and updates (some stamped late, some within the same millisecond, some by
    a clock that stepped back) polled at random points, with restarts from the persisted
    cursor and small pages: no row version is delivered twice, and every row's final
    version is delivered."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "opencode.db"
        build_db(path, rows=False)
        w = Writer(path)
        clock = Clock(T0)
        versions: dict[str, int] = {}
        delivered: Counter[tuple[str, int]] = Counter()
        cursor: dict[str, Any] | None = None
        max_rows = data.draw(st.integers(1, 6))
        reader = AgentDB(str(path), OPENCODE, max_rows=max_rows, lag_ms=LAG, window_rows=500,
                            clock_ms=clock)
        unpolled_since: int | None = None

        def poll() -> None:
            nonlocal cursor, unpolled_since
            result = reader.poll(cursor)
            assert not result.busy and not result.errors
            for p in result.pages:
                for row in p.rows:
                    delivered[(row["id"], row["data"]["v"])] += 1
            cursor = orjson.loads(orjson.dumps(result.cursor))
            if not result.more:
                unpolled_since = None

        for _ in range(data.draw(st.integers(1, 40))):
            op = data.draw(st.sampled_from(["insert", "update", "poll", "restart", "tick"]))
            if op == "tick":
                step = data.draw(st.integers(0, LAG // 4))
                if unpolled_since is not None and clock.now + step > unpolled_since + LAG // 4:
                    poll()  # the daemon polls soon after a change
                clock.now += step
            elif op == "poll":
                poll()
            elif op == "restart":
                reader.close()
                reader = AgentDB(str(path), OPENCODE, max_rows=max_rows, lag_ms=LAG, window_rows=500,
                                    clock_ms=clock)
            else:
                if op == "update" and versions:
                    pid = data.draw(st.sampled_from(sorted(versions)))
                else:
                    pid = f"prt_{len(versions):03d}"
                versions[pid] = versions.get(pid, 0) + 1
                late = data.draw(st.integers(0, LAG // 2))
                if op == "insert" and data.draw(st.booleans()) and data.draw(st.booleans()):
                    late = 5 * LAG  # a clock stepped back, for a new row
                w.part(pid, clock.now - late, text(versions[pid]))
                if unpolled_since is None:
                    unpolled_since = clock.now
        for _ in range(200):
            result = reader.poll(cursor)
            for p in result.pages:
                for row in p.rows:
                    delivered[(row["id"], row["data"]["v"])] += 1
            cursor = result.cursor
            if not result.more:
                break
        reader.close()
        w.close()
        assert all(n == 1 for n in delivered.values()), delivered
        assert {(pid, v) for pid, v in versions.items()} <= set(delivered)
        assert orjson.loads(orjson.dumps(cursor)) == cursor


# -- the corpus ------------------------------------------------------------------------------------


def test_corpus_databases_from_copies(tmp_path: Path) -> None:
    root = corpus_home() / ".local" / "share" / "opencode"
    if not root.is_dir():
        pytest.skip("no OpenCode files in the corpus")
    expected = {"opencode.db": {"session": 3, "message": 91, "part": 379},
                "opencode-stable.db": {"session": 1, "message": 2, "part": 1}}
    for name, counts in expected.items():
        copy = tmp_path / name
        shutil.copyfile(root / name, copy)
        before = fingerprint(copy)
        reader = AgentDB(str(copy), OPENCODE, max_rows=40)
        got: Counter[str] = Counter()
        cursor: dict[str, Any] | None = None
        while True:
            result = reader.poll(cursor)
            assert not result.errors and not result.busy
            for p in result.pages:
                got[p.table] += len(p.rows)
            cursor = result.cursor
            if not result.more:
                break
        assert reader.poll(cursor).pages == []
        reader.close()
        assert dict(got) == counts
        assert fingerprint(copy) == before
