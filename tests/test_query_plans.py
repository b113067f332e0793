"""The query plan of every statement every socket method runs, with every filter it
accepts, against a real store (bench/bigstore.py, one copy of the corpus): no full scan
of a big table. The statements are the ones the methods really execute (captured by
the connection's exec tracer), planned with their own bindings. Plans, not times: at
10 million events a scan is seconds, in a test store it is nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from agentsrc_daemon.rpc.methods import build_methods
from agentsrc_daemon.store import Reader, packing, ranked
from agentsrc_daemon.store.migrations.versions import MIGRATIONS
from agentsrc_daemon.store.vocabulary import COMMAND_FAILED

from bigstore import DB_NAME, BigStore, build
from corpus import corpus_home
from scale import draw_cases

# Tables that grow with the history: a SCAN of one without an index is a finding.
BIG_TABLES = frozenset({
    "events", "event_copies", "sessions", "turns", "session_sources", "session_subagents",
    "search_titles", "sink_revised", "sink_sessions", "event_rows", "session_keys", "turn_keys",
    "event_copy_rows", "turn_rows", "usage_costs",
})
# The aliases inside the views of schema 16 (migrations/chunked.EVENTS_VIEW, EVENT_COPIES_VIEW,
# TURNS_VIEW), as plans name them.
VIEW_ALIASES = {"er": "events", "esk": "session_keys", "etk": "turn_keys", "eak": "adapter_keys",
                "ecr": "event_copies", "ecs": "session_keys", "ect": "turn_keys",
                "tr": "turns", "tts": "session_keys", "ttt": "turn_keys"}
# Small by nature, scanned on purpose: one row per transcript file (a few tens of
# thousands at most, and only sources.list scans it), the store's named counters and the
# drift seen.
_AGGREGATE = ("a maintained aggregate (store/aggregates.py), read whole by a report on purpose:"
              " a row per session and day and key, not per event (docs/performance.md,"
              " \"Reports at 10 million events\", has their size)")
SMALL_TABLES = {"sources": "one row per file; sources.list lists them all",
                "counters": "a handful of named values",
                "drift": "a row per agent, version and record type not understood: status lists them",
                "agg_usage": _AGGREGATE, "agg_secret_values": _AGGREGATE, "agg_secret_sessions": _AGGREGATE,
                "agg_secret_files": _AGGREGATE, "agg_secret_paths": _AGGREGATE,
                "agg_sensitive": _AGGREGATE, "agg_external_reads": _AGGREGATE,
                "agg_usage_by": _AGGREGATE, "agg_usage_group": _AGGREGATE,
                "agg_usage_project": _AGGREGATE}

# Full scans still there, by (method case, table), with why. Each is a target not met:
# docs/performance.md, "Scale: 10 million events".
_RARE_FILTER = ("a filter few sessions match and no index orders: `until` (a session started"
                " before a time, in the order of its last event). Scanning the sessions (32,000"
                " at 10 million events) and sorting the matches beats walking a sort index"
                " (reader.sessions)")
KNOWN_SCANS: dict[tuple[str, str], str] = {
    ("sessions.list until", "sessions"): _RARE_FILTER,
    ("events.list kinds", "events"): "several kinds at once, across every session, walk the"
    " events by id (bound kinds cannot pick partial indexes; a common kind fills the page"
    " at once, a rare one walks far)",
}

# A page that walks a whole kind's index (the kind's id or time order, with no equality
# that narrows it) while its other conditions discard rows, or that sorts what it walked,
# reads every event of the kind when few match. Those still there, by case, with why
# (docs/performance.md, "Pages at 10 million events").
_SINCE = ("`since` over the kind's id order: a time is no index range there (an event of any"
          " time can have any id); a recent `since` on a newest-first list is the head of its"
          " time index instead")
_GLOB = ("a glob (`*.py`, `dir/*`): no index range of a path's beginning or end matches a GLOB"
         " whose wildcards may span separators, and an absolute one matches case-insensitively")
_PROJECT = ("a project: the event's own project_root (its JSON, an index range since schema 13)"
            " or its session's. Oldest first, the kind's events_<kind>s_by_session is walked"
            " matching the session id's tail from the index (a table read per match only): a"
            " rare project still walks the kind's index, without reading its rows (0.1-0.2 s at"
            " 10 million events); newest first, the kind's time index, testing each event")
KNOWN_WALKS: dict[str, str] = {
    **{f"{case} +since": _SINCE for case in (
        "files.reads", "files.reads glob *.py", "files.reads glob abs dir", "files.reads project",
        "files.reads deep", "files.edits", "files.edits glob", "commands.list",
        "commands.list project", "findings.list", "findings.list path",
        "findings.list deep")},
    **{f"{case}{page}": _GLOB for case in (
        "files.reads glob *.py", "files.reads glob abs dir", "files.edits glob")
       for page in ("", " +['since_id']", " +['before_id']", " +['before_id', 'order']")},
    **{f"{case}{page}": _PROJECT for case in ("files.reads project", "commands.list project")
       for page in ("", " +['since_id']", " +['before_id']", " +['before_id', 'order']")},
    "files.reads all filters": _GLOB,
    "commands.list failed +['before_id', 'order']": "failed commands newest first: the"
    " commands' time index, skipping those that did not fail (most do not, so a page walks"
    " several times its length; events_failed_commands is in id order)",
    **{f"findings.list path{page}": "a finding's path or one of its candidate `paths` (JSON):"
       " an OR over a list, no index range"
       for page in ("", " +['since_id']", " +['before_id']", " +['before_id', 'order']")},
}
# The indexes of a whole kind (schema 2, 9, 10 and 13), walked by id or by time.
_KIND_INDEXES = re.compile(r"events_(?:reads|edits|commands|secrets|sensitive|usage|prompts)"
                           r"(?:_by_time|_by_session)?$")
_WALK = re.compile(r"(?:SCAN|SEARCH) (\w+) USING (?:COVERING )?INDEX (\w+)(?: \((.*)\))?$")
# Conditions of a page on the events that no kind index applies (the kind, the id and
# the time cursors are what the index is walked by).
_DISCARDING = re.compile(r"json_extract\(e\.data|json_each|\bGLOB\b|\bLIKE\b|e\.session_id IN"
                         r"|substr\(e\.session_id"
                         r"|e\.adapter =|e\.path =|lower\(", re.IGNORECASE)
_SINCE_FILTER = re.compile(r"\be\.ts >= \?")
# The reports walk a kind on purpose (they read all of it); another part's work.
_REPORTS = frozenset({"findings.report", "usage.summary", "sessions.files"})


def kind_walks(sql: str, plan: list[str]) -> list[str]:
    """The kind indexes a page walks whole while discarding rows or sorting them."""
    conditions = sql.split("FROM events e", 1)[1] if "FROM events e" in sql else ""
    sorts = any(d.startswith("USE TEMP B-TREE FOR ORDER BY") for d in plan)
    out = []
    for detail in plan:
        m = _WALK.match(detail)
        if m is None or not _KIND_INDEXES.match(m.group(2)):
            continue
        constraint = m.group(3) or ""
        if "=?" in constraint.replace("<=?", "").replace(">=?", ""):
            continue  # an equality narrows the walk
        by_time = m.group(2).endswith("_by_time")
        discards = _DISCARDING.search(conditions) or (
            not by_time and _SINCE_FILTER.search(conditions))
        if sorts or discards:
            out.append(m.group(2))
    return out


_TABLE_REF = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)(?:\s+(?:AS\s+)?(?!ON\b|WHERE\b|JOIN\b|LEFT\b|GROUP\b"
                        r"|ORDER\b|LIMIT\b|USING\b)(\w+))?", re.IGNORECASE)


_CTE = re.compile(r"\b(\w+)(?:\([^)]*\))?\s+AS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?\(", re.IGNORECASE)


def _aliases(sql: str) -> dict[str, str]:
    """Names in a statement -> the tables they are (a CTE's name is its own result)."""
    out: dict[str, str] = {name: "(cte)" for name in _CTE.findall(sql)}
    for table, alias in _TABLE_REF.findall(sql):
        out.setdefault(table, table)
        if alias and alias not in out:
            out[alias] = out[table]  # a CTE's alias is that CTE
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> BigStore:
    return build(tmp_path_factory.mktemp("plans"), events=1, files=100_000, corpus=corpus_home(), say=False)


def _connect(db: Path, flags: int = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE) -> apsw.Connection:
    """A plain connection with the store's SQL functions (``events.data`` unpacks) and
    the readers' FTS5 functions (store/ranked.py)."""
    conn = apsw.Connection(str(db), flags=flags)
    packing.register(conn)
    ranked.register(conn)
    return conn


def _calls(db: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(case, method, params): the benchmark's cases (every filter, drawn from the
    data), their cursors' params, and filters combined."""
    out = [(c.name, c.method, c.params) for c in draw_cases(db)]
    (last,) = next(iter(_connect(db).execute("SELECT MAX(id) FROM events")))
    pages = {"since_id": 1}, {"order": "desc", "before_id": last}, {"before_id": last}
    for name, method, params in list(out):
        if method in ("files.reads", "files.edits", "commands.list", "findings.list"):
            out += [(f"{name} +{sorted(p)}", method, {**params, **p}) for p in pages]
            out.append((f"{name} +since", method, {**params, "since": "2025-01-01T00:00:00Z"}))
    out += [
        ("files.reads all filters", "files.reads",
         {"path": "*.py", "agent": "codex", "project": "/p", "since": "2025-01-01T00:00:00Z"}),
        ("events.list kinds", "events.list", {"kinds": ["prompt", "message"]}),
        ("events.list kind command", "events.list", {"kind": "command"}),
        ("sessions.list all filters", "sessions.list",
         {"agent": "codex", "project": "/p", "since": "2025-01-01T00:00:00Z", "until": "2027-01-01T00:00:00Z"}),
        ("search.query filters", "search.query",
         {"q": "error", "agent": "codex", "kinds": ["prompt"], "since": "2025-01-01T00:00:00Z"}),
        # A capped listing's statements (store/ranked.py): the caps made small, so the
        # corpus's hits exceed them.
        ("search.query (capped)", "search.query", {"q": "error"}),
        ("search.query two words (capped)", "search.query", {"q": "test file"}),
        ("search.query filters (capped)", "search.query",
         {"q": "error", "agent": "codex", "project": "/p", "session_id": None,
          "kinds": ["prompt", "title"], "since": "2025-01-01T00:00:00Z",
          "until": "2027-01-01T00:00:00Z"}),
        ("sessions.list search (capped)", "sessions.list", {"search": "error"}),
        ("sessions.list search filters (capped)", "sessions.list",
         {"search": "error", "agent": "codex", "since": "2025-01-01T00:00:00Z"}),
        ("sources.list", "sources.list", {}),
        ("documents.list", "documents.list", {}),
    ]
    return out


def _status_reads(reader: Reader) -> dict[str, Any]:
    """What the daemon's ``status`` reads of the store (the rest is the daemon's memory)."""
    return {"counts": reader.counts(), "skipped": reader.skipped_totals(),
            "drift": reader.drift(), "search_index": reader.search_progress()}


def _statements(db: Path, method: str, params: dict[str, Any], capped: bool = False
                ) -> Iterator[tuple[str, Any]]:
    reader = Reader(db)
    if capped:
        reader.search_candidates = reader.search_title_candidates = 3
    if "session_id" in params and params["session_id"] is None:
        (params["session_id"],) = next(iter(reader.conn.execute(
            "SELECT id FROM sessions ORDER BY tool_calls DESC LIMIT 1")))
    seen: list[tuple[str, Any]] = []

    def tracer(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        if not sql.lstrip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK", "EXPLAIN")):
            seen.append((sql, bindings))
        return True

    reader.conn.exec_trace = tracer
    try:
        build_methods(_status_reads)[method](reader, params)
    finally:
        reader.conn.exec_trace = None
        reader.close()
    yield from seen


_OTHER_EVENT_FILTERS = re.compile(r"\b(?:e\.)?(?:kind|path|session_id|adapter|ts|call_id)\s*(?:=|IN|GLOB|LIKE|>=|<)"
                                  r"|json_extract\(e\.data", re.IGNORECASE)


def _plan(db: Path, sql: str, bindings: Any) -> list[str]:
    conn = _connect(db, apsw.SQLITE_OPEN_READONLY)
    try:
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings)]
    finally:
        conn.close()


def full_scans(db: Path, sql: str, bindings: Any) -> list[str]:
    """The big tables a statement reads whole: ``SCAN <table>`` without an index; and
    a walk of the events by id range (``rowid>?``) that other conditions filter (a rare
    match walks every event), which a plan says as a SEARCH."""
    plan = _plan(db, sql, bindings)
    aliases = {**VIEW_ALIASES, **_aliases(sql), "event_rows": "events"}
    out = []
    for detail in plan:
        m = re.match(r"SEARCH (\w+) USING INTEGER PRIMARY KEY \(rowid[<>]", detail)
        if m and aliases.get(m.group(1), m.group(1)) == "events" and _OTHER_EVENT_FILTERS.search(sql):
            out.append("events")
            continue
        m = re.match(r"SCAN (\w+)( USING (?:COVERING )?INDEX| VIRTUAL TABLE)?", detail)
        if m is None or m.group(2) or detail == "SCAN CONSTANT ROW":  # (a SELECT of values)
            continue
        table = aliases.get(m.group(1), m.group(1))
        if table in SMALL_TABLES or table == "(cte)":
            continue
        assert table in BIG_TABLES, f"unknown table {table} in {detail!r}: classify it"
        out.append(table)
    return out


def test_no_method_scans_a_big_table(store: BigStore) -> None:
    db = store.db_path
    found: dict[tuple[str, str], str] = {}
    methods = set()
    for case, method, params in _calls(db):
        methods.add(method)
        for sql, bindings in _statements(db, method, params, "(capped)" in case):
            for table in full_scans(db, sql, bindings):
                found.setdefault((case, table), sql)
    # Every paging method and report is covered.
    assert methods >= {"status", "sessions.list", "sessions.get", "events.list", "files.reads", "files.edits",
                       "commands.list", "findings.list", "search.query", "sessions.turns",
                       "findings.report", "sessions.files", "usage.summary"}
    unexpected = {k: v for k, v in found.items() if k not in KNOWN_SCANS}
    assert not unexpected, "full scans:\n" + "\n".join(f"{k}: {v[:300]}" for k, v in unexpected.items())
    fixed = set(KNOWN_SCANS) - set(found)
    assert not fixed, f"no longer scanning (remove from KNOWN_SCANS): {fixed}"


def test_no_page_walks_a_whole_kind(store: BigStore) -> None:
    """A page reads what it returns, give or take: no walk of a kind's whole index that
    its other filters thin out, no sort of a whole kind (newest first)."""
    db = store.db_path
    found: dict[str, str] = {}
    for case, method, params in _calls(db):
        if method in _REPORTS:
            continue
        for sql, bindings in _statements(db, method, params, "(capped)" in case):
            if kind_walks(sql, _plan(db, sql, bindings)):
                found.setdefault(case, sql)
    unexpected = {k: v for k, v in found.items() if k not in KNOWN_WALKS}
    assert not unexpected, "walks of a whole kind:\n" + "\n".join(
        f"{k}: {v[:300]}" for k, v in sorted(unexpected.items()))
    fixed = set(KNOWN_WALKS) - set(found)
    assert not fixed, f"no longer walking (remove from KNOWN_WALKS): {sorted(fixed)}"


@pytest.mark.parametrize(
    ("index", "method", "params"),
    [
        ("events_session", "events.list", {"session_id": None}),
        # Either orders the reads by id (schema 13's index by session tail has the id first).
        ("events_reads,events_reads_by_session", "files.reads", {}),
        ("sessions_by_last", "sessions.list", {}),
        ("events_reads_by_time", "files.reads", {"order": "desc"}),
        ("events_secrets_by_time", "findings.list", {"order": "desc"}),
        ("events_path_tails", "files.edits", {"path": "src/x.py"}),
        ("events_exit_codes", "commands.list", {"exit_code": 1}),
        ("events_failed_commands", "commands.list", {"failed": True}),
        ("events_secret_types", "findings.list", {"type": "Secret Keyword"}),
    ],
)
def test_a_dropped_index_is_caught(
    store: BigStore, tmp_path: Path, index: str, method: str, params: dict[str, Any]
) -> None:
    """The check is not vacuous: without the index, the same call scans."""
    db = tmp_path / DB_NAME
    src = _connect(store.db_path, apsw.SQLITE_OPEN_READONLY)
    dst = _connect(db)
    with dst.backup("main", src, "main") as b:
        b.step()
    src.close()
    if "session_id" in params:
        params = {"session_id": next(iter(dst.execute("SELECT id FROM sessions ORDER BY tool_calls DESC")))[0]}
    statements = list(_statements(db, method, params))

    def scans() -> bool:
        return any(full_scans(db, s, b) or kind_walks(s, _plan(db, s, b)) for s, b in statements)

    assert statements and not scans()
    for name in index.split(","):
        dst.execute(f"DROP INDEX {name}")
    dst.close()
    assert scans()


def test_a_capped_search_ranks_its_candidates_in_the_index_order(store: BigStore) -> None:
    """The capped cases run the capped statements (agentsrc_rank over a rowid range),
    and a candidate scan is read in FTS5's rowid order: no sort of the hits before the
    cap (a sort would read every hit), except of one session's (a session filter: its
    events by events_session, each looked up in the index)."""
    db = store.db_path
    capped = [(c, m, p) for c, m, p in _calls(db) if "(capped)" in c]
    assert len(capped) == 5
    for case, method, params in capped:
        statements = list(_statements(db, method, params, capped=True))
        hits = [(s, b) for s, b in statements if "search_index f" in s]
        assert hits, case
        if method == "search.query":
            assert any("agentsrc_rank(search_index" in s for s, _ in hits), case
        else:
            assert any("f.rowid BETWEEN ? AND ?" in s for s, _ in hits), case
        for sql, bindings in hits:
            plan = _plan(db, sql, bindings)
            if "ORDER BY f.rowid" in sql and not any("(session_key=?" in d for d in plan):
                assert not [d for d in plan if d.startswith("USE TEMP B-TREE")], (case, sql, plan)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("files.reads", {"order": "desc", "limit": 200}),
        ("files.edits", {"order": "desc", "limit": 200}),
        ("sessions.list", {"failed_commands": True}),
        ("sessions.list", {"has_findings": True}),
        ("sessions.list", {"failed_commands": True, "has_findings": True, "agent": "codex"}),
    ],
)
def test_the_web_pages_lists_are_read_in_their_order(
    store: BigStore, method: str, params: dict[str, Any]
) -> None:
    """The web page's file history (a path's newest reads and edits) and its sessions
    with findings or failed commands walk an index in the page's order, reading what
    they return: no sort of every match (issue 28: at 10 million events, sorting a
    path's 12,512 edits took 55-82 ms, and the 15,459 sessions with a failed command
    55 ms)."""
    db = store.db_path
    if method.startswith("files."):
        kind = method.removeprefix("files.").rstrip("s")
        conn = _connect(db, apsw.SQLITE_OPEN_READONLY)
        ((path, n),) = conn.execute(
            "SELECT path, COUNT(*) AS n FROM event_rows WHERE kind = ? AND path IS NOT NULL"
            " GROUP BY path ORDER BY n DESC LIMIT 1", (kind,))
        conn.close()
        assert n > 1
        params = {**params, "path": path}
    statements = list(_statements(db, method, params))
    assert statements
    sorts = [(sql, detail) for sql, b in statements for detail in _plan(db, sql, b)
             if "TEMP B-TREE FOR ORDER BY" in detail]
    assert not sorts, sorts


def _failed_by_session(conn: apsw.Connection) -> dict[str, int]:
    return {sid: n for sid, n in conn.execute(
        "SELECT id, failed_commands FROM sessions WHERE failed_commands != 0")}


def test_each_sessions_failed_commands_are_those_it_holds(store: BigStore, tmp_path: Path) -> None:
    """The counter the failed-commands filter reads (schema 21) is, for every session of
    the corpus, its commands that COMMAND_FAILED matches, as the writer kept it through
    the corpus's claims; and the migration that fills it for an older store counts the
    same."""
    conn = _connect(store.db_path, apsw.SQLITE_OPEN_READONLY)
    counted = dict(conn.execute(
        f"SELECT session_id, COUNT(*) FROM events WHERE kind = 'command' AND {COMMAND_FAILED}"
        " GROUP BY session_id"))
    kept = _failed_by_session(conn)
    conn.close()
    assert kept == counted and len(kept) > 10
    db = tmp_path / DB_NAME
    src = _connect(store.db_path, apsw.SQLITE_OPEN_READONLY)
    old = _connect(db)
    with old.backup("main", src, "main") as b:
        b.step()
    src.close()
    old.execute("DROP INDEX sessions_failed; ALTER TABLE sessions DROP COLUMN failed_commands")
    body = MIGRATIONS.named("session_failed_commands").body
    assert isinstance(body, str)
    with old:
        old.execute(body)
    assert _failed_by_session(old) == counted
    old.close()
