"""store/session_rows.py remembers the values of the sessions' rows it read or wrote, so
a live append costs no statement to learn them again. Whatever the sequence of facts,
counters, times, project roots and rolled-back commits, the rows it leaves are the rows
the same writes leave with nothing remembered (a fresh ``SessionRows`` for each commit,
which reads everything it needs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.events import SessionFacts
from agentsrc_daemon.store import Store
from agentsrc_daemon.store.session_rows import SessionRows, SessionTally

_IDS = st.sampled_from(["claude:a", "claude:b", "codex:c"])
_TIMES = st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z",
                          "2026-01-02T00:00:00Z", "2025-12-31T23:59:59Z"])
# Mostly text, as adapters write; now and then a number, which SQL compares its own way.
_TEXT = st.one_of(st.sampled_from(["/p", "/q", "gpt-5", "opus", "a title", "é"]),
                  st.integers(min_value=0, max_value=3))
_TIME_OR_NUMBER = st.one_of(_TIMES, _TIMES, _TIMES, st.integers(min_value=0, max_value=3))


@st.composite
def _facts(draw: st.DrawFn) -> SessionFacts:
    sid = draw(_IDS)
    agent, native = sid.split(":")
    return SessionFacts(
        sid, agent, native,
        cwd=draw(st.none() | _TEXT), model=draw(st.none() | _TEXT),
        started_at=draw(st.none() | _TIME_OR_NUMBER),
        last_event_at=draw(st.none() | _TIME_OR_NUMBER),
        title=draw(st.none() | _TEXT),
        source=draw(st.none() | st.just({"subagent": "review"}) | st.just("cli")),
        weak=draw(st.booleans()),
    )


@st.composite
def _tally(draw: st.DrawFn) -> tuple[str, SessionTally]:
    t = SessionTally(first_ts=draw(st.none() | _TIMES), last_ts=draw(st.none() | _TIMES))
    if draw(st.booleans()):
        t.counts["prompts"] = draw(st.integers(min_value=-1, max_value=2))
    return draw(_IDS), t


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("merge"), _facts()),
        st.tuples(st.just("tally"), _tally()),
        st.tuples(st.just("root"), st.tuples(_IDS, st.sampled_from(["/p", "/q"]))),
        st.tuples(st.just("ensure"), _IDS),
        st.tuples(st.just("parents"), st.none()),
    ),
    max_size=25,
)


def _apply(rows: SessionRows, op: str, arg: Any) -> None:
    if op == "merge":
        rows.merge(arg)
    elif op == "tally":
        rows.apply_tally({arg[0]: arg[1]})
    elif op == "root":
        rows.set_project_root(*arg)
    elif op == "ensure":
        agent, native = arg.split(":")
        rows.ensure(arg, agent, native)
    else:
        # The spawn linking's UPDATE, as the writer runs it: a parent set in SQL.
        rows.conn.execute("UPDATE sessions SET parent_session_id = 'claude:a'"
                          " WHERE id = 'codex:c'")
        rows.parents_linked()


def _rows(conn: apsw.Connection) -> list[tuple[Any, ...]]:
    return list(conn.execute("SELECT * FROM sessions ORDER BY id"))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Store]:
    base: Path = tmp_path_factory.mktemp("session-rows")
    return Store(base / "remembering.db", search_index=False), Store(
        base / "fresh.db", search_index=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.tuples(_OPS, st.booleans()), max_size=4))
def test_remembered_rows_are_the_rows_read_again(
    stores: tuple[Store, Store], commits: list[tuple[list[tuple[str, Any]], bool]]
) -> None:
    remembering, fresh = stores
    for store in stores:
        store.conn.execute("DELETE FROM sessions")
    kept = SessionRows(remembering.conn)
    for ops, rolled_back in commits:
        for store, rows in ((remembering, kept), (fresh, SessionRows(fresh.conn))):
            try:
                with store.conn:
                    for op, arg in ops:
                        _apply(rows, op, arg)
                    if rolled_back:
                        raise _RollBack
            except _RollBack:
                rows.forget()  # as the writer does when a commit fails
        assert _rows(remembering.conn) == _rows(fresh.conn)


class _RollBack(Exception):
    pass


def test_a_live_append_reads_nothing_it_wrote(tmp_path: Path) -> None:
    """The point of remembering: the second commit of a session's facts and times
    costs no SELECT and no INSERT OR IGNORE, only the UPDATE of what moved."""
    store = Store(tmp_path / "s.db", search_index=False)
    rows = SessionRows(store.conn)
    facts = SessionFacts("claude:a", "claude", "a", cwd="/p",
                         started_at="2026-01-01T00:00:00Z",
                         last_event_at="2026-01-01T00:00:00Z")
    with store.conn:
        rows.merge(facts)
        rows.set_project_root("claude:a", "/p")
    statements: list[str] = []
    store.conn.exec_trace = lambda _c, sql, _b: statements.append(sql) or True
    with store.conn:
        facts.last_event_at = "2026-01-01T00:00:09Z"
        rows.merge(facts)
        rows.set_project_root("claude:a", "/p")
        rows.apply_tally({"claude:a": SessionTally(counts={"prompts": 1},
                                                  first_ts="2026-01-01T00:00:09Z",
                                                  last_ts="2026-01-01T00:00:09Z")})
    store.conn.exec_trace = None
    assert [s for s in statements if not s.startswith(("BEGIN", "COMMIT"))] == [
        "UPDATE sessions SET last_event_at=? WHERE id=?",
        "UPDATE sessions SET prompts=prompts+? WHERE id=?",
    ]
    assert list(store.conn.execute(
        "SELECT cwd, started_at, last_event_at, project_root, prompts FROM sessions")) == [
        ("/p", "2026-01-01T00:00:00Z", "2026-01-01T00:00:09Z", "/p", 1)]
