"""The schema's versions (store/migrations/): the registry's order and names; a new
database created at the current schema in one step (store/migrations/current.py) is the
same as an empty one migrated through every migration, and a new store logs no
migration; an existing one still migrates (tests/test_store.py and the migrations'
own tests)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from agentsrc_daemon.store import Store
from agentsrc_daemon.store.connection import connect
from agentsrc_daemon.store.migrations import current
from agentsrc_daemon.store.migrations.registry import ChunkedMigration, Migrations
from agentsrc_daemon.store.migrations.runner import (
    chunked_pending,
    migrate,
    pending_chunked,
    run_migration,
)
from agentsrc_daemon.store.migrations.versions import MIGRATIONS, SCHEMA_VERSION

from harness import DaemonFactory

NAMES = [
    "core_tables", "project_scoping", "event_counter", "event_revisions", "record_ownership",
    "search_index", "sink_feeds", "pack", "scale_indexes", "page_indexes", "aggregates",
    "usage_groups", "project_indexes", "drop_sessions_last", "search_automerge_off", "keys",
    "pack_states", "status_indexes", "fidelity", "usage_costs",
    "session_failed_commands", "path_times", "usage_projects",
    "drop_path_index",
]
CHUNKED = {"pack", "page_indexes", "aggregates", "usage_groups", "project_indexes", "keys",
           "pack_states", "path_times"}


def test_the_migrations_are_registered_in_order_by_name_and_version() -> None:
    assert [m.name for m in MIGRATIONS] == NAMES
    assert [m.version for m in MIGRATIONS] == list(range(1, len(NAMES) + 1))
    assert SCHEMA_VERSION == MIGRATIONS.version == len(MIGRATIONS) == 24
    assert {m.name for m in MIGRATIONS if isinstance(m.body, ChunkedMigration)} == CHUNKED
    for m in MIGRATIONS:
        assert MIGRATIONS[m.version - 1] is m
        assert MIGRATIONS.named(m.name) is m
        if isinstance(m.body, ChunkedMigration):
            assert m.body.name == m.name  # its counters are named after it
    with pytest.raises(KeyError):
        MIGRATIONS.named("no_such_migration")


def test_a_registry_numbers_what_it_is_given_and_refuses_a_name_twice() -> None:
    steps = Migrations()
    one = steps.sql("one", "CREATE TABLE a (x)")
    noop = ChunkedMigration("two", begin=lambda c: None, step=lambda c, a, b: None,
                            finish=lambda c: None)
    two = steps.chunked(noop)
    assert (one.version, one.name, one.body) == (1, "one", "CREATE TABLE a (x)")
    assert (two.version, two.name, two.body) == (2, "two", noop)
    assert [m.name for m in steps] == ["one", "two"] and steps.version == 2
    with pytest.raises(ValueError, match="already named 'one'"):
        steps.sql("one", "CREATE TABLE b (y)")
    assert steps.version == 2


# ---- a new database, created at the current schema -------------------------------------


def _normal_sql(sql: str | None) -> str | None:
    """A schema entry's SQL without what does not change what it makes: comments,
    whitespace, identifier quotes, ``IF NOT EXISTS`` (SQLite keeps the text as written,
    and a migrated store's tables were altered, indexes made before a rename)."""
    if sql is None:
        return None
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = sql.replace('"', "")
    sql = re.sub(r"\s+", " ", sql)
    sql = re.sub(r"\s*([(),;=])\s*", r"\1", sql)
    return sql.strip()


def _profile(db: Path) -> dict[str, Any]:
    """Everything about an empty store that its schema and its migrations decide."""
    conn = connect(db, readonly=True)  # with unpack(), which event_rows' data needs
    try:
        master = sorted(
            (t, name, tbl, _normal_sql(sql))
            for t, name, tbl, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        )
        tables = [name for t, name, _, _ in master if t == "table"]
        columns = {t: list(conn.execute(f"PRAGMA table_xinfo('{t}')")) for t in tables}
        indexes = {t: sorted(list(r)[1:] for r in conn.execute(f"PRAGMA index_list('{t}')"))
                   for t in tables}
        index_columns = {
            name: list(conn.execute(f"PRAGMA index_xinfo('{name}')"))
            for t, name, _, _ in master if t == "index"
        }
        # The rows of every table but the virtual one (its shadow tables are tables):
        # the counters, FTS5's config and structure records.
        rows = {t: sorted(map(tuple, conn.execute(f"SELECT * FROM '{t}'"))) for t in tables
                if t != "search_index"}
        pragmas = {p: conn.execute(f"PRAGMA {p}").fetchone()[0]
                   for p in ("user_version", "page_size", "journal_mode", "auto_vacuum",
                             "encoding", "application_id")}
        return {"master": master, "columns": columns, "indexes": indexes,
                "index_columns": index_columns, "rows": rows, "pragmas": pragmas}
    finally:
        conn.close()


def test_a_new_database_is_the_same_as_one_migrated_through_every_version(tmp_path: Path) -> None:
    migrated = connect(tmp_path / "migrated.db")
    for m in MIGRATIONS:
        run_migration(migrated, m)
    migrated.close()
    fresh = connect(tmp_path / "fresh.db")
    assert current.is_new(fresh)
    assert migrate(fresh) == 0
    assert not current.is_new(fresh)
    fresh.close()
    want, got = _profile(tmp_path / "migrated.db"), _profile(tmp_path / "fresh.db")
    assert current.VERSION == SCHEMA_VERSION
    assert got["pragmas"] == want["pragmas"] == {
        "user_version": SCHEMA_VERSION, "page_size": 16384, "journal_mode": "wal",
        "auto_vacuum": 0, "encoding": "UTF-8", "application_id": 0}
    assert got["rows"]["counters"] == [
        ("events", 0), ("search_done", 0), ("search_target", 0), ("search_titles_done", 0)]
    assert ("automerge", 0) in got["rows"]["search_index_config"]
    assert len(want["master"]) == 108  # tables, indexes, views, triggers: not nothing
    for key in want:
        assert got[key] == want[key], key


def test_a_new_database_is_made_in_one_transaction(tmp_path: Path) -> None:
    """Every statement of the schema in one transaction, with the version: a failure in
    its last statement leaves the file empty."""
    conn = connect(tmp_path / "db")
    broken = current.SCHEMA + "\nCREATE TABLE sources (x);"  # fails at the very end
    with pytest.raises(apsw.SQLError), conn:
        conn.execute(broken)
        conn.execute(f"PRAGMA user_version={current.VERSION}")
    assert current.is_new(conn)
    assert conn.execute("PRAGMA user_version").fetchone() == (0,)
    traced: list[str] = []
    conn.exec_trace = lambda cursor, sql, bindings: traced.append(sql) or True
    current.create(conn)
    conn.exec_trace = None
    control = [s for s in traced if s.startswith(("BEGIN", "SAVEPOINT", "COMMIT", "RELEASE", "END"))]
    assert control == ["BEGIN DEFERRED", "COMMIT"]
    assert traced[0] == "BEGIN DEFERRED" and traced[-1] == "COMMIT"
    assert traced[-2] == f"PRAGMA user_version={SCHEMA_VERSION}"
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_a_new_store_runs_no_migration_and_reports_none(tmp_path: Path) -> None:
    db = tmp_path / "agentsrc.db"
    assert chunked_pending(db) is None  # no file yet
    db.touch()  # a file made but empty: new all the same
    assert chunked_pending(db) is None
    told: list[tuple[str, int, int]] = []
    store = Store(db, progress=lambda *a: told.append(a))
    store.close()
    assert told == []
    conn = connect(db, readonly=True)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert pending_chunked(conn) is None
    conn.close()


def test_an_existing_store_still_migrates_with_its_progress(tmp_path: Path) -> None:
    """A store of the version before the last chunked migration is migrated, not
    created again: its rows stay, and its chunked migration reports its progress."""
    at = MIGRATIONS.named("pack_states").version - 1
    conn = connect(tmp_path / "old.db")
    for v in range(at):
        run_migration(conn, MIGRATIONS[v])
    conn.execute("INSERT INTO sources(path, adapter, mode, state) VALUES('/a', 'codex', 'jsonl', ?)",
                 (orjson.dumps({"turn": 1}),))
    conn.close()
    assert chunked_pending(tmp_path / "old.db") is MIGRATIONS[at].body
    told: list[tuple[str, int, int]] = []
    store = Store(tmp_path / "old.db", progress=lambda *a: told.append(a))
    assert store.cursors.state(1) == orjson.dumps({"turn": 1})
    store.close()
    assert told == [("pack_states", 0, 1), ("pack_states", 1, 1),
                    ("path_times", 0, 1), ("path_times", 1, 1)]


def test_a_migration_is_a_value_a_test_can_change() -> None:
    """run_migration takes the migration itself: a test runs a changed copy (a step
    that fails) without touching the list."""
    m = MIGRATIONS.named("page_indexes")
    assert isinstance(m.body, ChunkedMigration)
    changed = dataclasses.replace(m, body=dataclasses.replace(m.body, chunk=2))
    assert MIGRATIONS.named("page_indexes") is m and changed.version == m.version
    assert isinstance(changed.body, ChunkedMigration) and changed.body.chunk == 2


def test_make_run_on_an_empty_home_logs_no_migration(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    d.start()
    d.wait_live()
    assert d.call("status")["state"] == "live"
    d.stop()
    lines = [orjson.loads(line) for line in d.log().splitlines() if line.startswith("{")]
    events = [line.get("event") for line in lines]
    assert "started" in events and "live" in events
    assert "migrating" not in events
    db = next(d.data_dir.glob("*.db"))
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
