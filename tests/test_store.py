"""The store on a real SQLite file: idempotent inserts, message merging, session and
turn merging, token accounting, migrations, permissions."""

from __future__ import annotations

import dataclasses
import pickle
import stat
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.errors import SchemaTooNew
from agentsrc_daemon.store import Batch, Reader, Row, Store, connect, migrate, prepare
from agentsrc_daemon.store.migrations.chunked import ADD_PAGE_INDEXES, PAGE_INDEXES
from agentsrc_daemon.store.migrations.runner import run_migration
from agentsrc_daemon.store.migrations.versions import MIGRATIONS, SCHEMA_VERSION


def ev(key: str, kind: str, **kw) -> E.Event:  # type: ignore[no-untyped-def]
    base = dict(
        key=key,
        session_id="codex:s1",
        kind=kind,
        ts="2025-01-01T00:00:00.000Z",
        adapter="codex",
        source_path="/x/a.jsonl",
        offset=0,
    )
    base.update(kw)
    return E.Event(**base)  # type: ignore[arg-type]


def batch(*events: E.Event, facts: list[E.SessionFacts] | None = None) -> Batch:
    b = Batch(events=list(events), sessions=facts or [])
    b.cursors["/x/a.jsonl"] = Cursor("/x/a.jsonl", "codex", "jsonl", offset=100)
    return b


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "db.sqlite")
    yield s
    s.close()


def test_files_are_private(tmp_path: Path, store: Store) -> None:
    store.commit(batch(ev("k", E.PROMPT, data={"text": "hi"})))
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(tmp_path / "db.sqlite") + suffix)
        if p.exists():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, suffix


def test_reinsert_is_ignored_and_counters_not_doubled(store: Store, tmp_path: Path) -> None:
    facts = [E.SessionFacts("codex:s1", "codex", "s1", cwd="/w", model="m1")]
    b1 = batch(ev("p1", E.PROMPT, data={"text": "a"}), ev("c1", E.TOOL_CALL, tool="shell"), facts=facts)
    first = store.commit(b1).rows()
    assert [e["kind"] for e in first] == ["prompt", "tool_call"]
    assert store.commit(b1).rows() == []  # a re-read of the same lines
    # A batch mixing known and new keys takes the read-back path; ids stay exact.
    b2 = batch(ev("p1", E.PROMPT, data={"text": "a"}), ev("p2", E.PROMPT, data={"text": "b"}))
    second = store.commit(b2).rows()
    assert [(e["kind"], e["text"]) for e in second] == [("prompt", "b")]
    r = Reader(tmp_path / "db.sqlite")
    stored = r.events(limit=10)
    assert [(e["id"], e["kind"]) for e in stored] == [(e["id"], e["kind"]) for e in first + second]
    s = r.session("codex:s1")
    assert s is not None
    assert (s["prompts"], s["tool_calls"], s["cwd"], s["model"]) == (2, 1, "/w", "m1")
    assert len(r.events(limit=100)) == 3 == r.counts()["events"]  # the rows, the counter


def test_cursor_saved_with_events(store: Store, tmp_path: Path) -> None:
    b = batch(ev("p1", E.PROMPT, data={"text": "a"}))
    b.cursors["/x/a.jsonl"].state = {"turn": 3, "pending": {"c": ["shell", {"a": 1}]}}
    store.commit(b)
    store.close()
    s2 = Store(tmp_path / "db.sqlite")
    c = s2.cursors.load()["/x/a.jsonl"]
    # Loaded undecoded (a start does not decode every file's state), decoded when read.
    assert (c.offset, c.state, c.state_json) == (100, None, b'{"turn":3,"pending":{"c":["shell",{"a":1}]}}')
    # Saved again undecoded (a file marked gone, say): the state is kept as it was.
    b2 = Batch()
    b2.cursors[c.path] = c
    c.gone_at = "2026-01-01T00:00:00Z"
    s2.commit(b2)
    s2.close()
    s3 = Store(tmp_path / "db.sqlite")
    c3 = s3.cursors.load()["/x/a.jsonl"]
    assert c3.gone_at == "2026-01-01T00:00:00Z"
    assert c3.load_state() == {"turn": 3, "pending": {"c": ["shell", {"a": 1}]}}
    assert (c3.state_json, c3.load_state()) == (None, {"turn": 3, "pending": {"c": ["shell", {"a": 1}]}})
    s3.close()


def test_cursor_states_left_in_the_store_until_read(store: Store, tmp_path: Path) -> None:
    """The daemon's start reads no adapter state (CursorStore.load(states=False)): a
    cursor saved untouched keeps the stored state, and the ingestor fetches it from the
    store when its file is read."""
    from agentsrc_daemon.ingest.round import Ingestor

    b = batch(ev("p1", E.PROMPT, data={"text": "a"}))
    b.cursors["/x/a.jsonl"].state = {"turn": 3}
    b.cursors["/x/b.jsonl"] = Cursor("/x/b.jsonl", "codex", "jsonl", offset=7)
    store.commit(b)
    cursors = store.cursors.load(states=False)
    a, other = cursors["/x/a.jsonl"], cursors["/x/b.jsonl"]
    assert (a.state, a.state_json, a.state_in_store) == (None, None, True)
    with pytest.raises(RuntimeError):
        a.load_state()  # not without the store
    # Saved untouched (marked gone): the stored state stays.
    a.gone_at = "2026-01-01T00:00:00Z"
    b2 = Batch()
    b2.cursors[a.path] = a
    store.commit(b2)
    ing = Ingestor(max_line_bytes=1 << 20)
    with pytest.raises(RuntimeError):
        ing.load_state(other)  # no loader
    ing.cursor_store = store.cursors
    again = store.cursors.load(states=False)["/x/a.jsonl"]
    assert again.gone_at == "2026-01-01T00:00:00Z"
    ing.load_state(again)
    assert (again.state, again.state_json, again.state_in_store) == ({"turn": 3}, None, False)
    ing.load_state(other)  # a file without a state: none, and the adapter starts one
    assert (other.state, other.state_in_store) == (None, False)
    # Read, changed and saved: the new state is stored.
    again.state = {"turn": 4}
    b3 = Batch()
    b3.cursors[again.path] = again
    store.commit(b3)
    assert store.cursors.state(again.source_id or 0) == b'{"turn":4}'
    assert store.cursors.load()["/x/a.jsonl"].load_state() == {"turn": 4}


def test_message_parts_merge_once(store: Store, tmp_path: Path) -> None:
    # A Claude message is written one content block per line. Through the adapter and the
    # store it is one message, counted once, however its lines arrive.
    from agentsrc_daemon.adapters.claude import ADAPTER

    def line(uuid: str, block: dict[str, object]) -> dict[str, object]:
        return {"type": "assistant", "uuid": uuid, "sessionId": "s1",
                "timestamp": "2025-01-01T00:00:00.000Z",
                "message": {"id": "msg_1", "role": "assistant", "content": [block]}}

    lines = [
        line("u1", {"type": "text", "text": "one"}),
        line("u2", {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}),
        line("u3", {"type": "text", "text": "two"}),
    ]

    def read(path: str, objs: list[dict[str, object]], *, batches: int) -> None:
        state = ADAPTER.initial_state(path)
        evs = [
            [r for r in ADAPTER.parse(obj, 100 * i, path, state) if isinstance(r, E.Event)]
            for i, obj in enumerate(objs)
        ]
        if batches == 1:
            evs = [[e for line_events in evs for e in line_events]]
        for line_events in evs:
            store.commit(Batch(events=line_events))

    read("/x/a.jsonl", lines, batches=len(lines))  # live: a line per commit
    read("/x/a.jsonl", lines, batches=1)  # re-read from offset 0 (truncation, restart)
    read("/x/b.jsonl", lines[:1], batches=1)  # a copy of the start in another file
    read("/x/c.jsonl", lines, batches=1)  # a whole copy
    r = Reader(tmp_path / "db.sqlite")
    msgs = r.events(kinds=["message"])
    assert len(msgs) == 1 and msgs[0]["text"] == "one\n\ntwo"
    assert (msgs[0]["source_path"], msgs[0]["offset"]) == ("/x/a.jsonl", 0)
    assert r.session("claude-code:s1")["messages"] == 1  # type: ignore[index]


def test_a_higher_revision_supersedes_the_stored_data_once(store: Store, tmp_path: Path) -> None:
    # The rule knows no format: any kind, any data. Here, a message emitted again as it grows.
    def version(revision: int, text: str, offset: int = 0) -> E.Event:
        return ev("m1", E.MESSAGE, data={"text": text}, revision=revision, offset=offset)

    r = Reader(tmp_path / "db.sqlite")

    def stored() -> list[tuple[str, int]]:
        return [(e["text"], e["offset"]) for e in r.events(kinds=["message"])]

    first = store.commit(batch(version(0, "a"))).rows()
    assert [(e["text"], e["offset"]) for e in first] == [("a", 0)]
    # A new version: the data is replaced; not an insert, so subscribers get nothing new.
    assert len(store.commit(batch(version(1, "a b", offset=10)))) == 0
    assert stored() == [("a b", 0)]  # the event keeps the place it was first seen at
    # A re-read (the same revisions again) and a copy elsewhere (a lower one) change nothing.
    store.commit(batch(version(0, "a", offset=10), version(1, "a b", offset=20)))
    store.commit(batch(version(0, "copy", offset=30)))
    assert stored() == [("a b", 0)]
    # Several versions in one batch, in any order: the highest revision wins.
    store.commit(batch(version(3, "a b c d"), version(2, "a b c")))
    assert stored() == [("a b c d", 0)]
    # A key first seen in a batch with its later versions: inserted once, as first emitted
    # (that is what subscribers receive), stored as the latest.
    b = batch(
        ev("m2", E.MESSAGE, data={"text": "x"}),
        ev("m2", E.MESSAGE, data={"text": "x y"}, revision=1),
        ev("p1", E.PROMPT, data={"text": "q"}),
    )
    assert [(e["kind"], e["text"]) for e in store.commit(b).rows()] == [
        ("message", "x"),
        ("prompt", "q"),
    ]
    assert [e["text"] for e in r.events(kinds=["message"])] == ["a b c d", "x y"]
    s = r.session("codex:s1")
    assert s is not None and (s["messages"], s["prompts"]) == (2, 1)
    assert len(r.events(limit=100)) == 3 == r.counts()["events"]  # the rows, the counter


def test_usage_adds_once_per_key(store: Store, tmp_path: Path) -> None:
    u = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    store.commit(batch(ev("claude-code:usage:m1", E.USAGE, data=u)))
    store.commit(batch(ev("claude-code:usage:m1", E.USAGE, data=u)))
    store.commit(batch(ev("claude-code:usage:m2", E.USAGE, data=u)))
    s = Reader(tmp_path / "db.sqlite").session("codex:s1")
    assert s is not None and s["tokens"]["total_tokens"] == 30 and s["tokens"]["input_tokens"] == 20


def test_first_wins_and_latest_wins(store: Store, tmp_path: Path) -> None:
    store.commit(batch(facts=[E.SessionFacts("codex:s1", "codex", "s1", cwd="/a", model="m1")]))
    store.commit(batch(facts=[E.SessionFacts("codex:s1", "codex", "s1", cwd="/b", model="m2")]))
    s = Reader(tmp_path / "db.sqlite").session("codex:s1")
    assert s is not None and (s["cwd"], s["model"]) == ("/a", "m2")


def test_turns_merge(store: Store, tmp_path: Path) -> None:
    b = batch()
    b.turns = [E.TurnFacts("codex:s1", "t1", started_at="2025-01-01T00:00:00Z", cwd="/a")]
    store.commit(b)
    b = batch()
    b.turns = [E.TurnFacts("codex:s1", "t1", ended_at="2025-01-01T00:01:00Z", status="complete")]
    b.sessions = [E.SessionFacts("codex:s1", "codex", "s1")]
    store.commit(b)
    s = Reader(tmp_path / "db.sqlite").session("codex:s1")
    assert s is not None
    assert s["turns"] == [
        {
            "turn_id": "t1",
            "started_at": "2025-01-01T00:00:00Z",
            "ended_at": "2025-01-01T00:01:00Z",
            "status": "complete",
            "cwd": "/a",
            "model": None,
        }
    ]


def test_migrations_from_every_version(tmp_path: Path) -> None:
    for start in range(SCHEMA_VERSION):
        conn = connect(tmp_path / f"m{start}.db")
        for v in range(start):
            run_migration(conn, MIGRATIONS[v])  # a chunked one (7 -> 8) is not one SQL string
        assert migrate(conn) == start
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        conn.close()


def _session_indexes(conn: apsw.Connection) -> list[str]:
    return [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'sessions'"
        " AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name"
    )]


def test_the_unused_sessions_last_index_is_dropped(tmp_path: Path) -> None:
    # The migration that drops it, found by its name (other branches may add migrations).
    drop = MIGRATIONS.named("drop_sessions_last").version - 1
    conn = connect(tmp_path / "old.db")
    for v in range(drop):
        run_migration(conn, MIGRATIONS[v])
    assert "sessions_last" in _session_indexes(conn)
    conn.execute(
        "INSERT INTO sessions(id, agent, native_id, last_event_at) VALUES('a', 'codex', 'a', '2026')"
    )
    assert migrate(conn) == drop
    assert _session_indexes(conn) == [
        "sessions_by_agent", "sessions_by_last", "sessions_by_model", "sessions_by_started",
        "sessions_by_tokens", "sessions_by_tools", "sessions_cwd", "sessions_failed", "sessions_parent",
        "sessions_project", "sessions_report",
    ]
    assert list(conn.execute("SELECT id, last_event_at FROM sessions")) == [("a", "2026")]
    conn.close()


def test_schema_4_drops_the_part_digests_of_merged_messages(tmp_path: Path) -> None:
    conn = connect(tmp_path / "v3.db")
    for v in range(3):
        conn.execute(MIGRATIONS[v].body)
        conn.execute(f"PRAGMA user_version={v + 1}")
    old = {"text": "one\n\ntwo \u00e9", "parts": ["a1b2", "c3d4"]}
    for kind, data in (("message", old), ("prompt", {"text": "hi", "parts": 1})):
        conn.execute(
            "INSERT INTO events(key_hash, session_id, kind, adapter, source_id, offset, data)"
            " VALUES(?, 's', ?, 'claude-code', 1, 0, ?)",
            (kind.encode(), kind, orjson.dumps(data)),
        )
    assert migrate(conn) == 3
    rows = list(conn.execute("SELECT kind, data, revision FROM events ORDER BY id"))
    assert [(k, orjson.loads(d), type(d), rev) for k, d, rev in rows] == [
        ("message", {"text": "one\n\ntwo \u00e9"}, bytes, 0),
        ("prompt", {"text": "hi", "parts": 1}, bytes, 0),  # only messages had them
    ]
    conn.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    conn = connect(tmp_path / "new.db")
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(SchemaTooNew) as refused:
        migrate(conn)
    assert str(refused.value) == (
        f"database schema version {SCHEMA_VERSION + 1} is newer than this agentsrc "
        f"({SCHEMA_VERSION})"
    )


def test_wal_mode(store: Store) -> None:
    assert store.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert isinstance(store.conn, apsw.Connection)


def test_a_live_commit_sets_only_the_session_columns_it_changes(store: Store) -> None:
    # An UPDATE OF trigger fires for each column in the SET list, changed or not: which
    # columns each commit SET, by name (SQLite rewrites their indexes' entries).
    store.conn.execute("CREATE TEMP TABLE set_columns(name TEXT)")
    for column in ("cwd", "model", "started_at", "last_event_at", "prompts", "title"):
        store.conn.execute(
            f"CREATE TEMP TRIGGER set_{column} AFTER UPDATE OF {column} ON main.sessions"
            f" BEGIN INSERT INTO set_columns VALUES('{column}'); END"
        )

    def commit(key: str, ts: str, **facts: str) -> list[str]:
        store.conn.execute("DELETE FROM set_columns")
        f = E.SessionFacts("codex:s1", "codex", "s1", **facts)  # type: ignore[arg-type]
        store.commit(batch(ev(key, E.PROMPT, ts=ts, data={"text": key}), facts=[f]))
        return sorted(n for (n,) in store.conn.execute("SELECT name FROM set_columns"))

    first = {"cwd": "/w", "model": "m1", "started_at": "2025-01-01T00:00:00.000Z"}
    assert commit("p1", "2025-01-01T00:00:00.000Z", **first,
                  last_event_at="2025-01-01T00:00:00.000Z") == [
        "cwd", "last_event_at", "model", "prompts", "started_at"]
    # The same facts again with a later event: only its time and the counter move.
    assert commit("p2", "2025-01-01T00:00:05.000Z", **first,
                  last_event_at="2025-01-01T00:00:05.000Z") == ["last_event_at", "prompts"]
    # An older line read late moves nothing but the counter; a new model and an earlier
    # start (earliest wins) are SET.
    assert commit("p3", "2025-01-01T00:00:01.000Z", cwd="/other",
                  last_event_at="2025-01-01T00:00:01.000Z") == ["prompts"]
    assert commit("p4", "2024-12-31T23:59:59.000Z", model="m2",
                  started_at="2024-12-31T23:59:59.000Z") == ["model", "prompts", "started_at"]
    row = store.conn.execute(
        "SELECT cwd, model, started_at, last_event_at, prompts FROM sessions WHERE id='codex:s1'"
    ).fetchone()
    assert row == ("/w", "m2", "2024-12-31T23:59:59.000Z", "2025-01-01T00:00:05.000Z", 4)


def test_facts_of_a_batch_coalesce_with_the_database_rules() -> None:
    from agentsrc_daemon.store.batch import coalesce_facts

    facts = [
        E.SessionFacts("s", "codex", "s", cwd="/a", model="m1", started_at="2025-01-02"),
        E.SessionFacts("s", "codex", "s", cwd="/b", model="m2", started_at="2025-01-01",
                       last_event_at="2025-01-03", title="t1"),
        E.SessionFacts("s", "codex", "s", last_event_at="2025-01-02", title="t2"),
        E.SessionFacts("o", "codex", "o", model="x"),
    ]
    merged = {f.session_id: f for f in coalesce_facts(facts)}
    s = merged["s"]
    assert (s.cwd, s.model, s.started_at, s.last_event_at, s.title) == (
        "/a", "m2", "2025-01-01", "2025-01-03", "t2"
    )
    assert merged["o"].model == "x" and len(merged) == 2


def test_prepared_rows_cross_processes_as_rows(store: Store, tmp_path: Path) -> None:
    # A backfill worker pickles its prepared batch; the daemon commits what it unpickles.
    b = batch(ev("p1", E.PROMPT, data={"text": "a"}), ev("r1", E.READ, data={"path": "/w/f"}))
    prepare(b)
    sent = pickle.loads(pickle.dumps(b))
    assert sent.events == [] and sent.cursors.keys() == b.cursors.keys()
    assert sent.rows == b.rows and all(type(r) is Row for r in sent.rows)
    assert [(r.kind, r.path, r.source_path) for r in sent.rows] == [
        ("prompt", None, "/x/a.jsonl"),
        ("read", "/w/f", "/x/a.jsonl"),
    ]
    assert [e["kind"] for e in store.commit(sent).rows()] == ["prompt", "read"]
    stored = Reader(tmp_path / "db.sqlite").events()
    assert [(e["kind"], e["source_path"], e.get("path")) for e in stored] == [
        ("prompt", "/x/a.jsonl", None),
        ("read", "/x/a.jsonl", "/w/f"),
    ]


def test_where_writes_a_single_indexed_kind_as_a_literal(store: Store) -> None:
    from agentsrc_daemon.store.where import Where

    where = Where()
    assert where.sql() == ""
    where.add("e.id > ?", 7)
    where.kind_in(["command"])
    assert (where.sql(), where.args) == (" WHERE e.id > ? AND e.kind = 'command'", [7])
    # The literal lets SQLite use the kind's partial index; a bound kind could not.
    plan = " ".join(
        str(row[-1])
        for row in store.conn.execute(f"EXPLAIN QUERY PLAN SELECT id FROM events e{where.sql()}", where.args)
    )
    assert "events_commands" in plan
    other = Where()
    other.kind_in(["message"])  # no index of its own: bound
    other.kind_in(["read", "edit"])
    other.kind_in([])
    other.kind_in(None)
    assert (other.conditions, other.args) == (
        ["e.kind IN (?)", "e.kind IN (?,?)"],
        ["message", "read", "edit"],
    )


def test_the_page_indexes_migration_resumes_after_a_kill(tmp_path: Path) -> None:
    """The page indexes (migrations/chunked.PAGE_INDEXES) are built one per transaction: a migration
    stopped in the middle (here an error in the fourth, as a kill -9 would leave it:
    the third committed, the fourth rolled back) keeps the schema version, and the next
    run builds the rest, then bumps the version and drops its counters."""
    at = MIGRATIONS.named(ADD_PAGE_INDEXES.name).version - 1
    conn = connect(tmp_path / "db")
    for v in range(at):
        run_migration(conn, MIGRATIONS[v])
    names = [sql.split()[5] for sql in PAGE_INDEXES]  # CREATE INDEX IF NOT EXISTS <name>
    built: list[int] = []
    real_step = ADD_PAGE_INDEXES.step

    def dies_at_the_fourth(c: apsw.Connection, after: int, upto: int) -> None:
        if after == 3:
            raise KeyboardInterrupt  # what a kill leaves: this step's transaction undone
        built.append(after)
        real_step(c, after, upto)

    broken = dataclasses.replace(ADD_PAGE_INDEXES, step=dies_at_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        run_migration(conn, dataclasses.replace(MIGRATIONS[at], body=broken))
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")}
    assert [n for n in names if n in indexes] == names[:3]
    assert conn.execute("PRAGMA user_version").fetchone() == (at,)
    assert dict(conn.execute("SELECT name, value FROM counters WHERE name LIKE 'page_indexes%'")) == {
        "page_indexes_done": 3, "page_indexes_target": len(names)}
    assert built == [0, 1, 2]
    steps: list[tuple[str, int, int]] = []
    run_migration(conn, MIGRATIONS[at], progress=lambda n, d, t: steps.append((n, d, t)))
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")}
    assert set(names) <= indexes
    assert conn.execute("PRAGMA user_version").fetchone() == (at + 1,)
    assert list(conn.execute("SELECT name FROM counters WHERE name LIKE 'page_indexes%'")) == []
    # Progress from where it resumed, one index at a time.
    assert steps == [("page_indexes", d, len(names)) for d in range(3, len(names) + 1)]


def test_gone_cursors_left_out_at_start_and_fetched_by_path(store: Store) -> None:
    """The daemon's start loads the live files' cursors only (CursorStore.load(gone=False));
    a gone file's cursor is fetched by its path (CursorStore.gone_cursor) with every field as
    the full load has it, and the ingestor keeps it once fetched."""
    from agentsrc_daemon.ingest import sources
    from agentsrc_daemon.ingest.round import Ingestor

    b = batch(ev("p1", E.PROMPT, data={"text": "a"}))
    b.cursors["/x/a.jsonl"].state = {"turn": 3}
    b.cursors["/x/a.jsonl"].skipped = {"malformed_json": 2}
    b.cursors["/x/b.jsonl"] = Cursor("/x/b.jsonl", "codex", "jsonl", offset=7, ino=5, dev=1)
    store.commit(b)
    gone = store.cursors.load(states=False)["/x/a.jsonl"]
    gone.gone_at, gone.generation, gone.lines = "2026-01-01T00:00:00Z", 3, 11
    b2 = Batch()
    b2.cursors[gone.path] = gone
    store.commit(b2)

    assert sorted(store.cursors.load(states=False, gone=False)) == ["/x/b.jsonl"]
    assert sorted(store.cursors.load(states=False)) == ["/x/a.jsonl", "/x/b.jsonl"]
    assert store.cursors.gone_count() == 1
    full = store.cursors.load(states=False)["/x/a.jsonl"]
    fetched = store.cursors.gone_cursor("/x/a.jsonl")
    assert fetched == full  # the same fields, the state still in the store
    assert (fetched.gone_at, fetched.generation, fetched.lines, fetched.skipped) == (
        "2026-01-01T00:00:00Z", 3, 11, {"malformed_json": 2}
    )
    assert store.cursors.gone_cursor("/x/b.jsonl") is None  # live: not a gone cursor
    assert store.cursors.gone_cursor("/x/never.jsonl") is None

    ing = Ingestor(max_line_bytes=1 << 20)
    ing.cursors = store.cursors.load(states=False, gone=False)
    ing.cursor_store = store.cursors
    spec = sources.SourceSpec("/x/a.jsonl", "codex", sources.JSONL, "/x")
    c = ing.cursor_for(spec)
    assert c.source_id == full.source_id and c.generation == 3
    assert ing.cursors["/x/a.jsonl"] is c  # kept: fetched once
    ing.load_state(c)
    assert c.state == {"turn": 3}
    new = ing.cursor_for(sources.SourceSpec("/x/new.jsonl", "codex", sources.JSONL, "/x"))
    assert (new.source_id, new.generation, new.offset) == (None, 0, 0)


_SOURCES = st.lists(
    st.tuples(
        st.booleans(),  # gone
        st.dictionaries(st.sampled_from(["bad_json", "non_object", "too_long"]),
                        st.integers(1, 1000), max_size=3),  # skipped lines by reason
        st.binary(min_size=0, max_size=40_000),  # the adapter state: overflows a page
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(rows=_SOURCES)
def test_status_counts_files_and_skips_from_indexes_only(tmp_path_factory: Any, rows: list[Any]) -> None:
    """Reader.counts and skipped_totals (status) give what counting every source row
    gives, and read no sources row for it (schema 18): each statement is a covering
    index's, the sources' states (which overflow their pages) never read."""
    db = tmp_path_factory.mktemp("status") / "s.db"
    store = Store(db)
    with store.conn:
        for i, (gone, skipped, state) in enumerate(rows):
            store.conn.execute(
                "INSERT INTO sources(path, adapter, mode, state, skipped, gone_at) VALUES(?,?,?,?,?,?)",
                (f"/r/{i}.jsonl", "codex", "jsonl", state, orjson.dumps(skipped).decode(),
                 "2026-01-01T00:00:00.000Z" if gone else None),
            )
    reader = Reader(db)
    traced: list[str] = []
    reader.conn.exec_trace = lambda cursor, sql, bindings: traced.append(sql) or True
    counts, skipped = reader.counts(), reader.skipped_totals()
    reader.conn.exec_trace = None
    assert (counts["files"], counts["files_gone"]) == (
        sum(not g for g, _, _ in rows), sum(g for g, _, _ in rows))
    totals: dict[str, int] = {}
    for _, s, _ in rows:
        for k, v in s.items():
            totals[k] = totals.get(k, 0) + v
    assert skipped == totals
    sources_reads = [sql for sql in traced if "sources" in sql]
    assert len(sources_reads) == 3
    for sql in sources_reads:
        plan = [d for *_, d in reader.conn.execute("EXPLAIN QUERY PLAN " + sql)]
        assert plan and all("USING COVERING INDEX sources_" in d for d in plan), (sql, plan)
