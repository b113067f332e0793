"""The reports (findings.report, usage.summary) answered from the maintained aggregates
equal the queries they replace (tests/report_oracle.py, which sum every event), for
every filter: on the real corpus, and after any sequence of commits with claims,
higher revisions and keys repeated within a batch (Hypothesis). The aggregates a
sequence of commits maintained equal the ones the 9 -> 10 migration fills from the
same events."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import apsw
import pytest
import report_oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.store import Batch, Reader, Store, aggregates, usage_groups
from agentsrc_daemon.store.connection import connect
from agentsrc_daemon.store.migrations.chunked import FILL_AGGREGATES, FILL_USAGE_GROUPS
from agentsrc_daemon.store.migrations.runner import run_migration
from agentsrc_daemon.store.migrations.versions import MIGRATIONS
from agentsrc_daemon.store.vocabulary import COST_FIELDS, USAGE_FIELDS

from bigstore import BigStore, build
from corpus import corpus_home
from harness import schema_copy

AGG_TABLES = ("agg_usage", "agg_secret_values", "agg_secret_sessions", "agg_secret_files", "agg_secret_paths",
              "agg_sensitive", "agg_external_reads")
# The usage aggregate per grouping (schema 12), kept by triggers on agg_usage.
GROUP_TABLES = ("agg_usage_by", "agg_usage_group", "agg_usage_project")
# Those of schema 12 (agg_usage_project came with 23).
GROUP_TABLES_12 = GROUP_TABLES[:2]


def _normal(value: Any) -> Any:
    """Lists compared as multisets: ties in a count came in no defined order before."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_normal(v) for v in value), key=repr)
    return value


def _counts_descend(report: dict[str, Any]) -> None:
    for section, count in (("by_session", "findings"), ("sensitive_reads", "reads"),
                           ("external_reads_with_secrets", "findings")):
        counts = [row[count] for row in report[section]]
        assert counts == sorted(counts, reverse=True), section


def assert_reports_match(reader: Reader, findings_since: list[str | None],
                         usage_filters: list[dict[str, Any]]) -> None:
    for since in findings_since:
        got = reader.findings_report(since_ts=since)
        want = report_oracle.findings_report(reader.conn, since_ts=since)
        assert _normal(got) == _normal(want), since
        # A page that shows how many sessions, not which, asks for none of them; a cut
        # list is the head of the whole one, and the rest stays whole.
        for limit in (0, 2):
            cut = reader.findings_report(since_ts=since, sessions_limit=limit)
            assert cut == {**got, "by_session": got["by_session"][:limit]}, (since, limit)
        assert list(got["by_type"]) == sorted(got["by_type"], key=lambda t: (-got["by_type"][t]["findings"],
                                                                            "" if t is None else str(t)))
        _counts_descend(got)
    for f in usage_filters:
        got = reader.usage_summary(**f)
        assert _normal(got) == _normal(report_oracle.usage_summary(reader.conn, **f)), f


def agg_rows(conn: apsw.Connection, tables: tuple[str, ...] = AGG_TABLES + GROUP_TABLES,
             costs: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """The aggregates' rows; without the costs' columns (schema 20) when ``costs`` is
    False: what the 10 -> 11 and 11 -> 12 fills made."""
    def columns(t: str) -> str:
        names = [r[1] for r in conn.execute(f"PRAGMA table_info('{t}')")]
        return ", ".join(n for n in names if costs or n not in COST_FIELDS)
    return {t: sorted(conn.execute(f"SELECT {columns(t)} FROM {t}"), key=repr) for t in tables}


def refilled(db: Path, tmp: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The aggregates computed afresh from the events (and their costs) of a copy of
    ``db`` by the writer's statements over every id (the groupings following by their
    triggers), then the groupings computed again from agg_usage alone, which must give
    the same rows. (The 10 -> 11 and 11 -> 12 fills are these statements as they were
    before schema 20's costs: tests/test_migrations.py runs them.)"""
    copy = tmp / "refill.db"
    src = connect(db, readonly=True)
    dst = connect(copy)
    with dst.backup("main", src, "main") as b:
        b.step()
    src.close()
    with dst:
        for t in AGG_TABLES + GROUP_TABLES:
            dst.execute(f"DELETE FROM {t}")
        assert agg_rows(dst, GROUP_TABLES) == {t: [] for t in GROUP_TABLES}
        aggregates.add_range(dst, 0, None)
    try:
        by_triggers = agg_rows(dst)
        with dst:
            usage_groups.refill(dst)
        assert agg_rows(dst) == by_triggers
        return by_triggers
    finally:
        dst.close()
        copy.unlink()


# ---- the real corpus -------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> BigStore:
    return build(tmp_path_factory.mktemp("reports"), events=1, files=100_000, corpus=corpus_home(), say=False)


def _bounds(conn: apsw.Connection, kinds: str) -> list[str | None]:
    """Times to cut at: none; every day's start; mid-day; real event times exactly (a
    boundary on an event) and just after them; a prefix shorter than a day; before and
    after everything."""
    days = [d for (d,) in conn.execute(
        f"SELECT DISTINCT substr(ts, 1, 10) FROM events WHERE kind IN ({kinds}) AND ts IS NOT NULL ORDER BY 1")]
    times = [t for (t,) in conn.execute(
        f"SELECT ts FROM events WHERE kind IN ({kinds}) AND ts IS NOT NULL ORDER BY id")]
    picks = [times[i] for i in range(0, len(times), max(1, len(times) // 5))]
    out: list[str | None] = [None, "0", "2025", days[0][:7], "9999-12-31T00:00:00Z"]
    out += [days[0], days[len(days) // 2] + "T12:00:00Z", days[-1] + "T00:00:00Z", days[-1]]
    out += picks + [t + "1" for t in picks[:2]]
    return out


def test_reports_equal_the_oracle_on_the_corpus(corpus_store: BigStore) -> None:
    reader = Reader(corpus_store.db_path)
    try:
        conn = reader.conn
        assert next(iter(conn.execute("SELECT COUNT(*) FROM agg_secret_sessions")))[0] > 0
        assert next(iter(conn.execute("SELECT COUNT(*) FROM agg_usage")))[0] > 0
        bounds = _bounds(conn, "'usage'")
        agents = [None] + [a for (a,) in conn.execute("SELECT DISTINCT adapter FROM agg_usage ORDER BY 1")]
        projects = [None, "/nowhere"] + [p for (p,) in conn.execute(
            "SELECT COALESCE(project_root, cwd) FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 2")]
        filters = [{"since_ts": s, "until_ts": u} for s, u in itertools.product(bounds, bounds[:9])]
        filters += [{"agent": a, "project": p, "since_ts": s}
                    for a, p, s in itertools.product(agents, projects, bounds[:8])]
        filters += [{"agent": a, "project": p, "since_ts": bounds[6], "until_ts": bounds[7]}
                    for a, p in itertools.product(agents, projects)]
        assert_reports_match(reader, _bounds(conn, "'secret', 'sensitive_read'"), filters)
        report = reader.findings_report()
        assert report["findings"] == next(iter(conn.execute(
            "SELECT COUNT(*) FROM events WHERE kind = 'secret'")))[0] > 0
        assert report["by_type"] and report["by_session"]
    finally:
        reader.close()


def test_maintained_aggregates_equal_a_fresh_fill(corpus_store: BigStore, tmp_path: Path) -> None:
    conn = connect(corpus_store.db_path, readonly=True)
    try:
        maintained = agg_rows(conn)
    finally:
        conn.close()
    assert maintained == refilled(corpus_store.db_path, tmp_path)


# ---- any sequence of commits -------------------------------------------------------

SESSIONS = ["codex:a", "codex:b", "claude-code:c"]
TIMES = [None, "2025-03-01T10:00:00.000Z", "2025-03-01T23:59:59.999Z", "2025-03-02T00:00:00.000Z",
         "2025-03-02T08:30:00.000Z", "2025-03-04", "2025"]
PATHS = [None, "/w/.env", "/w/a.py", "/etc/passwd"]


@st.composite
def event_data(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    if kind == E.USAGE:
        data: dict[str, Any] = {f: draw(st.integers(0, 50)) for f in USAGE_FIELDS
                                if draw(st.booleans())}
        model = draw(st.sampled_from([None, "gpt-5", "claude-opus"]))
        if model is not None:
            data["model"] = model
        if draw(st.booleans()):
            data["project_root"] = draw(st.sampled_from(["/w", "/v"]))
        return data
    if kind == E.SECRET:
        data = {"type": draw(st.sampled_from(["AWS Key", "Secret Keyword", "Token"])),
                "hash": draw(st.sampled_from(["h1", "h2", "h3"]))}
        if draw(st.booleans()):
            data["paths"] = draw(st.lists(st.sampled_from(["/w/.env", "/w/a.py", "/x"]), max_size=3))
        return data
    if kind == E.READ:
        return {"op": "read", "external": draw(st.booleans())}
    return {}


@st.composite
def event(draw: st.DrawFn) -> E.Event:
    kind = draw(st.sampled_from([E.USAGE, E.SECRET, E.SENSITIVE_READ, E.READ, E.PROMPT]))
    key = f"{kind}-{draw(st.integers(0, 5))}"  # a small pool: keys come again, as claims
    session = draw(st.sampled_from(SESSIONS))
    data = draw(event_data(kind))
    path = draw(st.sampled_from(PATHS))
    if kind != E.USAGE and path is not None:
        data["path"] = path  # the events' path column (store/batch.py prepare)
    return E.Event(
        key=key, session_id=session, kind=kind, ts=draw(st.sampled_from(TIMES)),
        adapter=session.split(":")[0], source_path=f"/x/{session}.jsonl", offset=draw(st.integers(0, 3)),
        data=data, revision=draw(st.integers(0, 2)),
        claim=draw(st.sampled_from([E.CLAIM_COPY, E.CLAIM_SUBAGENT, E.CLAIM_OWN])),
        claim_since=draw(st.sampled_from([None, "2025-01-01", "2025-02-01"])),
        holder=draw(st.sampled_from([None, *SESSIONS])),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(event(), min_size=1, max_size=8), min_size=1, max_size=6),
       facts=st.lists(st.tuples(st.sampled_from(SESSIONS), st.sampled_from([None, "m-s", "gpt-5"]),
                                st.sampled_from([None, "/w", "/v"])), max_size=3))
def test_reports_after_any_commits(tmp_path_factory: pytest.TempPathFactory,
                                   batches: list[list[E.Event]],
                                   facts: list[tuple[str, str | None, str | None]]) -> None:
    tmp = tmp_path_factory.mktemp("commits")
    db = tmp / "db.sqlite"
    store = Store(db)
    try:
        for i, events in enumerate(batches):
            b = Batch(events=[e for e in events if e.holder != e.session_id])
            if i < len(facts):
                sid, model, cwd = facts[i]
                b.sessions.append(E.SessionFacts(sid, sid.split(":")[0], sid.split(":")[1], model=model, cwd=cwd))
            for e in b.events:
                b.cursors[e.source_path] = Cursor(e.source_path, e.adapter, "jsonl", offset=10)
            store.commit(b)
    finally:
        store.close()
    reader = Reader(db)
    try:
        bounds: list[str | None] = [None, "2025-03-01T12:00:00.000Z", "2025-03-02", "2025-03-02T00:00:00.000Z",
                                    "2025-03-04", "2025", "2025-03-01T10:00:00.000Z"]
        filters = [{"since_ts": s, "until_ts": u} for s, u in itertools.product(bounds, bounds)]
        filters += [{"agent": "codex", "project": "/w"}, {"project": "/v", "since_ts": "2025-03-02"},
                    {"agent": "claude-code", "until_ts": "2025-03-02T08:30:00.000Z"}]
        assert_reports_match(reader, bounds, filters)
        maintained = agg_rows(reader.conn)
    finally:
        reader.close()
    assert maintained == refilled(db, tmp)


# ---- the migration ----------------------------------------------------------------


def test_the_migration_fills_the_aggregates_in_chunks(corpus_store: BigStore, tmp_path: Path) -> None:
    """A store at the version before FILL_AGGREGATES (the old migrations, the corpus
    store's rows copied in), migrated in small chunks with progress, and interrupted
    once (a chunk fails): resumed, it holds what the writer maintained."""
    db = tmp_path / "s10.db"
    src = connect(corpus_store.db_path, readonly=True)
    want = agg_rows(src, AGG_TABLES, costs=False)
    src.close()
    version = MIGRATIONS.named(FILL_AGGREGATES.name).version - 1
    schema_copy(corpus_store.db_path, db, version)
    conn = connect(db)
    assert not list(conn.execute("SELECT name FROM sqlite_schema WHERE name = 'agg_usage'"))
    (last,) = next(iter(conn.execute("SELECT MAX(id) FROM events")))
    seen: list[tuple[str, int, int]] = []

    def fail_once(name: str, done: int, target: int) -> None:
        seen.append((name, done, target))
        if len(seen) == 3:
            raise KeyboardInterrupt  # as a kill would, between two committed chunks

    with pytest.raises(KeyboardInterrupt):
        run_migration(conn, MIGRATIONS[version], fail_once, chunk=5000)
    assert seen == [("aggregates", 0, last), ("aggregates", 5000, last), ("aggregates", 10000, last)]
    seen.clear()
    run_migration(conn, MIGRATIONS[version], lambda *a: seen.append(a), chunk=5000)
    assert seen[0] == ("aggregates", 10000, last) and seen[-1][1:] == (last, last)
    assert agg_rows(conn, AGG_TABLES) == want
    assert not list(conn.execute("SELECT name FROM counters WHERE name LIKE 'aggregates%'"))
    assert next(iter(conn.execute("PRAGMA user_version")))[0] == version + 1
    conn.close()


def test_the_migration_fills_the_usage_groups(corpus_store: BigStore, tmp_path: Path) -> None:
    """A store at the version before FILL_USAGE_GROUPS (the old migrations, the corpus
    store's rows copied in): migrated with progress, it holds what the triggers kept,
    and keeps it through a commit after."""
    db = tmp_path / "s11.db"
    src = connect(corpus_store.db_path, readonly=True)
    want = agg_rows(src, AGG_TABLES + GROUP_TABLES_12, costs=False)
    version = MIGRATIONS.named(FILL_USAGE_GROUPS.name).version - 1
    schema_copy(corpus_store.db_path, db, version)
    conn = connect(db)
    assert not list(conn.execute("SELECT name FROM sqlite_schema WHERE name = 'agg_usage_by'"))
    assert want["agg_usage_by"] and want["agg_usage_group"]
    sessions = next(iter(src.execute("SELECT COUNT(DISTINCT session_id) FROM agg_usage")))[0]
    assert [tuple(r) for r in src.execute(
        "SELECT sessions, responses FROM agg_usage_group WHERE dim = 'session'")] == [
        (sessions, next(iter(src.execute("SELECT SUM(responses) FROM agg_usage")))[0])]
    src.close()
    seen: list[tuple[str, int, int]] = []
    run_migration(conn, MIGRATIONS[version], lambda *a: seen.append(a))
    assert seen == [("usage_groups", 0, 1), ("usage_groups", 1, 1)]
    assert agg_rows(conn, AGG_TABLES + GROUP_TABLES_12) == want
    assert not list(conn.execute("SELECT name FROM counters WHERE name LIKE 'usage_groups%'"))
    assert next(iter(conn.execute("PRAGMA user_version")))[0] == version + 1
    # A key changing (no writer does it: the upserts change sums) moves its share too,
    # as a fill from the keys as they then stand computes it.
    conn.execute("BEGIN")
    conn.execute("UPDATE agg_usage SET day = '2099-01-01', responses = responses + 1"
                 " WHERE (session_id, model, day) = (SELECT session_id, model, day FROM agg_usage LIMIT 1)")
    moved = agg_rows(conn, GROUP_TABLES_12)
    assert moved != {t: want[t] for t in GROUP_TABLES_12}
    usage_groups.fill_step(conn, 0, 1)
    assert agg_rows(conn, GROUP_TABLES_12) == moved
    conn.execute("ROLLBACK")
    conn.close()
    store = Store(db)
    try:
        b = Batch(events=[E.Event(key="u-new", session_id="codex:new", kind=E.USAGE, ts="2031-01-01T00:00:00Z",
                                  adapter="codex", source_path="/x/new.jsonl", offset=0,
                                  data={"model": "m-new", "input_tokens": 7, "total_tokens": 9})])
        b.cursors["/x/new.jsonl"] = Cursor("/x/new.jsonl", "codex", "jsonl", offset=10)
        store.commit(b)
    finally:
        store.close()
    reader = Reader(db)
    try:
        got = reader.usage_summary()
        assert _normal(got) == _normal(report_oracle.usage_summary(reader.conn))
        # Schema 19 came with the Store: nothing is priced yet (no prices were given to
        # the store), and every request counts as unpriced with its tokens.
        assert [r for r in got["by_model"] if r["model"] == "m-new"] == [
            {"model": "m-new", "sessions": 1, "responses": 1, "input_tokens": 7, "output_tokens": 0,
             "cache_read_tokens": 0, "cache_creation_tokens": 0, "reasoning_tokens": 0, "total_tokens": 9,
             "cost": {"usd": None, "kind": "unpriced", "unpriced_tokens": 9,
                      "reason": "model not in the price table"}}]
        assert got["totals"]["cost"]["unpriced_tokens"] == got["totals"]["total_tokens"]
        assert got["totals"]["sessions"] == sessions + 1
    finally:
        reader.close()


def test_a_session_counts_once_under_its_model(tmp_path: Path) -> None:
    """Keys of their own model and keys without one (counted under the session's model,
    the same): the session once by model, as the oracle counts it, and the model-less
    keys of another session under that session's model."""
    db = tmp_path / "db.sqlite"
    store = Store(db)
    try:
        def usage(key: str, session: str, model: str | None, tokens: int) -> E.Event:
            data: dict[str, Any] = {"total_tokens": tokens, **({"model": model} if model else {})}
            return E.Event(key=key, session_id=session, kind=E.USAGE, ts="2025-03-01T10:00:00Z",
                           adapter="codex", source_path=f"/x/{session}.jsonl", offset=len(key), data=data)

        b = Batch(events=[usage("u1", "codex:a", "gpt-5", 1), usage("u2", "codex:a", None, 2),
                          usage("u3", "codex:b", None, 4)])
        b.sessions += [E.SessionFacts("codex:a", "codex", "a", model="gpt-5"),
                       E.SessionFacts("codex:b", "codex", "b", model="gpt-5")]
        for e in b.events:
            b.cursors[e.source_path] = Cursor(e.source_path, "codex", "jsonl", offset=10)
        store.commit(b)
    finally:
        store.close()
    reader = Reader(db)
    try:
        got = reader.usage_summary()
        assert _normal(got) == _normal(report_oracle.usage_summary(reader.conn))
        assert [(r["model"], r["sessions"], r["responses"], r["total_tokens"]) for r in got["by_model"]] == [
            ("gpt-5", 2, 3, 7)]
        assert (got["totals"]["sessions"], got["totals"]["total_tokens"]) == (2, 7)
    finally:
        reader.close()


def test_a_sessions_sums_follow_its_project(corpus_store: BigStore, tmp_path: Path) -> None:
    """The summary's projects are kept (schema 23): a session whose project is set,
    changed or cleared after its usage moves its sums, as a fill from the rows as they
    then stand computes them, and the summary stays the oracle's."""
    db = tmp_path / "moved.db"
    src = connect(corpus_store.db_path, readonly=True)
    conn = connect(db)
    with conn.backup("main", src, "main") as b:
        b.step()
    src.close()
    (sid,), = conn.execute(
        "SELECT b.session_id FROM agg_usage_by b JOIN sessions s ON s.id = b.session_id"
        " WHERE b.dim = 'session' AND s.cwd IS NOT NULL ORDER BY b.total_tokens DESC LIMIT 1")
    reader = Reader(db)
    try:
        sessions = {r["project"]: r["sessions"] for r in reader.usage_summary()["by_project"]}
        for cwd, root in (("/moved/sub", None), ("/moved/sub", "/moved"), (None, None)):
            with conn:
                conn.execute("UPDATE sessions SET cwd = ?, project_root = ? WHERE id = ?",
                             (cwd, root, sid))
            kept = agg_rows(conn, ("agg_usage_project",))
            with conn:
                usage_groups.refill(conn)
            assert agg_rows(conn, ("agg_usage_project",)) == kept, (cwd, root)
            got = reader.usage_summary()
            assert _normal(got) == _normal(report_oracle.usage_summary(reader.conn)), (cwd, root)
            mine = [r["sessions"] for r in got["by_project"] if r["project"] == (root or cwd)]
            assert mine == [sessions.get(root or cwd, 0) + 1], (cwd, root)
    finally:
        reader.close()
        conn.close()
