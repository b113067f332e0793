"""A page of files.reads, files.edits or commands.list with a project, oldest first, read
by the two indexed arms of store/where.py ``Where.project_arms`` (schema 13), answers
exactly what the walk it replaces answered (``Where.scope(project=...)`` over the kind's
index): the same rows and the same next cursors, page after page, with every other
filter. On a store the real daemon built from the corpus, for every project its
sessions name; and on stores drawn by Hypothesis, whose sessions' ids share their last
characters (the arms match a session by its id's tail first) and whose events name a
project of their own or none."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.rpc.methods import build_methods
from agentsrc_daemon.store import Reader
from agentsrc_daemon.store.connection import connect
from agentsrc_daemon.store.migrations.chunked import ADD_PROJECT_INDEXES, PROJECT_INDEXES
from agentsrc_daemon.store.migrations.runner import migrate, run_migration
from agentsrc_daemon.store.migrations.versions import MIGRATIONS
from agentsrc_daemon.store.packing import pack
from agentsrc_daemon.store.queries import events as event_pages

from bigstore import BigStore, build
from corpus import corpus_home
from harness import insert_event_row

METHODS = build_methods(lambda r: {})
# (method, its next cursor, the cursor's parameter)
PAGED = (("files.reads", "next_since_id", "since_id"), ("files.edits", "next_since_id", "since_id"),
         ("commands.list", "next_since_id", "since_id"))


def _pages(rd: Reader, method: str, params: dict[str, Any], limit: int) -> Iterator[Any]:
    """Every page of a call, following its next cursor (at most 200 pages)."""
    params = {**params, "limit": limit}
    cursor_name = {m: n for m, n, _ in PAGED}[method]
    param = {m: p for m, _, p in PAGED}[method]
    for _ in range(200):
        answer = METHODS[method](rd, params)
        yield answer
        nxt = answer.get(cursor_name)
        if not nxt:
            return
        params = {**params, param: nxt}


def _answers(rd: Reader, method: str, params: dict[str, Any], limit: int, *, arms: bool,
             monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    with monkeypatch.context() as m:
        if not arms:  # the query as it was: the project's OR, over the kind's index
            m.setattr(event_pages, "_by_project_arms", lambda *a: False)
        return list(_pages(rd, method, params, limit))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> BigStore:
    return build(tmp_path_factory.mktemp("projects"), events=1, files=100_000, corpus=corpus_home(), say=False)


def test_the_arms_answer_as_the_walk_did_on_the_corpus(store: BigStore, monkeypatch: pytest.MonkeyPatch) -> None:
    rd = Reader(store.db_path)
    try:
        conn = rd.conn
        projects = sorted({p for (p,) in conn.execute(
            "SELECT project_root FROM sessions UNION SELECT cwd FROM sessions") if p})
        assert len(projects) >= 5  # the corpus has several
        # The arms are what runs: a page with a project reads events_<kind>s_by_session.
        seen: list[str] = []
        conn.exec_trace = lambda _c, sql, _b: seen.append(sql) or True
        METHODS["files.reads"](rd, {"project": projects[0]})
        conn.exec_trace = None
        assert any("INDEXED BY events_reads_by_session" in s for s in seen)
        checked = rows = 0
        for project, (method, _, _) in itertools.product(projects, PAGED):
            for extra in ({}, {"since": "2025-06-01T00:00:00Z"}, {"agent": "codex"},
                          {"failed": True} if method == "commands.list" else {"before_id": 10**9}):
                if method == "commands.list" and "agent" in extra:
                    continue  # files.reads and files.edits take an agent; commands.list not
                params = {"project": project, **extra}
                for limit in (1, 7, 100):
                    new = _answers(rd, method, params, limit, arms=True, monkeypatch=monkeypatch)
                    old = _answers(rd, method, params, limit, arms=False, monkeypatch=monkeypatch)
                    assert new == old, (method, params, limit)
                    checked += 1
                    rows += sum(len(a[next(k for k in a if isinstance(a[k], list))]) for a in new)
        assert checked > 100 and rows > 1000  # pages with rows, not only empty ones
    finally:
        rd.close()


# -- Hypothesis: small stores with colliding session tails and projects in the data

_PROJECTS = ("/p", "/q", "/p/sub")
# Ids whose last 8 characters collide: the arm must check the whole id.
_SESSIONS = ("codex:aaaa-12345678", "claude:bbbb-12345678", "codex:cccc-87654321",
             "gemini:dd", "copilot:eeee-12345678")


@st.composite
def _store(draw: st.DrawFn) -> tuple[list[tuple[str, str | None, str | None]], list[tuple[Any, ...]]]:
    sessions = [(sid, draw(st.sampled_from((None, *_PROJECTS))), draw(st.sampled_from((None, *_PROJECTS))))
                for sid in _SESSIONS]
    events = draw(st.lists(st.tuples(
        st.sampled_from(_SESSIONS), st.sampled_from(("read", "edit", "command", "prompt")),
        st.sampled_from((None, "2025-01-01T00:00:00Z", "2025-06-01T00:00:00Z")),
        st.sampled_from(("codex", "claude-code")),
        st.sampled_from((None, *_PROJECTS)), st.sampled_from((0, 1, None))), max_size=40))
    return sessions, events


_EMPTY: list[bytes] = []


def _build(db: Path, sessions: list[tuple[str, str | None, str | None]], events: list[tuple[Any, ...]]) -> None:
    """A store at the current schema (an empty one migrated once, copied) with these rows."""
    if not _EMPTY:
        first = db.with_name("empty.db")
        conn = connect(first)
        migrate(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        _EMPTY.append(first.read_bytes())
    db.write_bytes(_EMPTY[0])
    conn = connect(db)
    with conn:
        conn.execute("INSERT INTO sources(id, path, adapter, mode) VALUES (1, '/t.jsonl', 'codex', 'jsonl')")
        for sid, root, cwd in sessions:
            conn.execute("INSERT INTO sessions(id, agent, native_id, project_root, cwd) VALUES (?, 'codex', ?, ?, ?)",
                         (sid, sid, root, cwd))
        for i, (sid, kind, ts, adapter, root, exit_code) in enumerate(events):
            data: dict[str, Any] = {"path": f"/f{i}", "op": kind}
            if root is not None:
                data["project_root"] = root
            if exit_code is not None:
                data["exit_code"] = exit_code
            insert_event_row(
                conn, sid, key_hash=i.to_bytes(8, "big"), kind=kind, ts=ts, adapter=adapter, source_id=1,
                offset=i, path=f"/f{i}", packed=pack(orjson.dumps(data) + b" " * 60))
    conn.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=_store(), data=st.data())
def test_the_arms_answer_as_the_walk_did(
    drawn: tuple[list[Any], list[Any]], data: st.DataObject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / f"h{data.draw(st.integers(0, 10**9))}.db"
    _build(db, *drawn)
    rd = Reader(db)
    try:
        for _ in range(4):
            method = data.draw(st.sampled_from([m for m, _, _ in PAGED]))
            params: dict[str, Any] = {"project": data.draw(st.sampled_from(_PROJECTS))}
            if data.draw(st.booleans()):
                params["since_id"] = data.draw(st.integers(0, 40))
            if data.draw(st.booleans()):
                params["before_id"] = data.draw(st.integers(1, 45))
            if data.draw(st.booleans()):
                params["since"] = "2025-03-01T00:00:00Z"
            if method == "commands.list" and data.draw(st.booleans()):
                if data.draw(st.booleans()):
                    params["failed"] = data.draw(st.booleans())
                else:
                    params["exit_code"] = data.draw(st.sampled_from((0, 1)))
            if method != "commands.list" and data.draw(st.booleans()):
                params["agent"] = "claude-code"
            limit = data.draw(st.integers(1, 12))
            new = _answers(rd, method, params, limit, arms=True, monkeypatch=monkeypatch)
            old = _answers(rd, method, params, limit, arms=False, monkeypatch=monkeypatch)
            assert new == old, (method, params, limit)
    finally:
        rd.close()
        db.unlink()


def test_a_session_tail_alone_is_not_membership(tmp_path: Path) -> None:
    """Two sessions whose ids end alike: the project's has its reads, the other's not,
    and the other's read that names the project in its data is in (its own root)."""
    db = tmp_path / "t.db"
    _build(db, [("codex:aaaa-12345678", "/p", None), ("claude:bbbb-12345678", "/q", None)], [
        ("codex:aaaa-12345678", "read", None, "codex", None, None),
        ("claude:bbbb-12345678", "read", None, "codex", None, None),
        ("claude:bbbb-12345678", "read", None, "codex", "/p", None),
        ("codex:aaaa-12345678", "command", None, "codex", None, 1),
        ("claude:bbbb-12345678", "command", None, "codex", None, 1),
    ])
    rd = Reader(db)
    try:
        assert [e["id"] for e in rd.file_events("read", None, project="/p")] == [1, 3]
        assert [e["id"] for e in rd.file_events("read", None, project="/q")] == [2, 3]
        assert [e["id"] for e in rd.commands(project="/p")] == [4]
        assert [e["id"] for e in rd.commands(project="/q", limit=1)] == [5]
    finally:
        rd.close()


def test_the_project_indexes_migration_resumes_after_a_kill(tmp_path: Path) -> None:
    """The project indexes (migrations/chunked.PROJECT_INDEXES) are built one per transaction: a
    migration stopped in the third (as a kill -9 leaves it: two committed, the third
    rolled back) keeps the schema version, and the next run builds the rest with its
    progress, bumps the version and drops its counters; the indexes are the arms'."""
    at = MIGRATIONS.named(ADD_PROJECT_INDEXES.name).version - 1
    conn = connect(tmp_path / "db")
    for v in range(at):
        run_migration(conn, MIGRATIONS[v])
    names = [sql.split()[5] for sql in PROJECT_INDEXES]  # CREATE INDEX IF NOT EXISTS <name>
    assert names == ["events_reads_by_session", "events_edits_by_session", "events_commands_by_session",
                     "events_project_roots"]
    real_step = ADD_PROJECT_INDEXES.step

    def dies_at_the_third(c: apsw.Connection, after: int, upto: int) -> None:
        if after == 2:
            raise KeyboardInterrupt  # what a kill leaves: this step's transaction undone
        real_step(c, after, upto)

    broken = dataclasses.replace(ADD_PROJECT_INDEXES, step=dies_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        run_migration(conn, dataclasses.replace(MIGRATIONS[at], body=broken))

    def indexes() -> set[str]:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")}

    assert [n for n in names if n in indexes()] == names[:2]
    assert conn.execute("PRAGMA user_version").fetchone() == (at,)
    assert dict(conn.execute("SELECT name, value FROM counters WHERE name LIKE 'project_indexes%'")) == {
        "project_indexes_done": 2, "project_indexes_target": 4}
    steps: list[tuple[str, int, int]] = []
    run_migration(conn, MIGRATIONS[at], progress=lambda n, d, t: steps.append((n, d, t)))
    assert set(names) <= indexes()
    assert conn.execute("PRAGMA user_version").fetchone() == (at + 1,)
    assert list(conn.execute("SELECT name FROM counters WHERE name LIKE 'project_indexes%'")) == []
    assert steps == [("project_indexes", d, 4) for d in (2, 3, 4)]
    conn.close()
