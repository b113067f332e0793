"""Maintained aggregates of the events the reports sum (store/reports.py answers
findings.report and usage.summary from them): kept exact in each commit's own
transaction by the writer, filled for the events already stored by the 10 -> 11
migration (``AGGREGATES``).

Each table holds, per key, what the report's query would have computed over the events
of that key; a key has the event's day (``substr(ts, 1, 10)``) so that a ``since`` or
``until`` takes whole days from here and only its boundary day from the events
(``REPORT_DAY_INDEX``). Values are computed by the same SQL expressions as the reports
used over the events (``json_extract`` of the stored JSON), so the sums and the keys
are the same values, of the same types.

Key columns are NOT NULL (a WITHOUT ROWID primary key): a NULL value is stored as
``NONE`` (an empty blob, which ``json_extract`` and ``substr`` of text never return) and
read back with ``NULLIF(column, NONE)``. Key columns have no declared type (no affinity:
a JSON number stays a number, as the reports grouped it).

What changes an event row changes its share here: an insert (``add_range`` over the
ids a commit inserted), and a claim or a higher revision rewriting a stored row
(``remove_event`` before the UPDATE, ``add_range`` of that id after). Rows whose count
falls to zero are deleted (``drop_empty``): a distinct count over the keys must not see
them."""

from __future__ import annotations

import apsw

from ..events import READ, SECRET, SENSITIVE_READ, USAGE
from .vocabulary import COST_COLUMNS, COST_FIELDS, USAGE_FIELDS

NONE = "X''"

# The kinds whose rows the aggregates hold.
AGGREGATED_KINDS = frozenset({USAGE, SECRET, SENSITIVE_READ, READ})

# The boundary day of a since/until, read from the events: one partial index over the
# kinds the reports filter by time (one scan of the table to build it, not three), by
# day, not by time: within a day its entries are in id order, so a commit's new rows
# land at the end of their day's run (a few pages), where an index by time put each on
# a page of its own (commit time 1.38x in a bigstore build). A query names the index's
# kinds literally (REPORT_KINDS) so SQLite may use it.
REPORT_KINDS = "e.kind IN ('usage', 'secret', 'sensitive_read')"
REPORT_DAY_INDEX = (
    "CREATE INDEX IF NOT EXISTS events_report_day ON events(kind, substr(ts, 1, 10))"
    " WHERE kind IN ('usage', 'secret', 'sensitive_read')"
)

_SUM_COLUMNS = ", ".join(f"{f} INTEGER NOT NULL" for f in USAGE_FIELDS)


def _usage_table(costs: bool) -> str:
    """agg_usage: as the 10 -> 11 migration made it (``costs`` False), or with the
    requests' costs (schema 20: the columns after the token sums, where ``ALTER TABLE
    ... ADD COLUMN`` puts them)."""
    cost_columns = f"\n    {COST_COLUMNS}," if costs else ""
    return f"""
CREATE TABLE IF NOT EXISTS agg_usage (
    session_id TEXT NOT NULL,
    model NOT NULL,        -- the event's own model (json), NONE: its session's
    day NOT NULL,          -- substr(ts, 1, 10)
    adapter TEXT NOT NULL,
    project NOT NULL,      -- the event's own project_root (json)
    responses INTEGER NOT NULL,
    {_SUM_COLUMNS},{cost_columns}
    PRIMARY KEY (session_id, model, day, adapter, project)
) WITHOUT ROWID;
"""


_OTHER_TABLES = """
CREATE INDEX IF NOT EXISTS agg_usage_empty ON agg_usage(responses) WHERE responses <= 0;
-- The findings, three ways (each narrow: at 10 million events 147, 4,510 and 902 rows,
-- where one table by all their keys held 135,300): by value, by session, by file.
CREATE TABLE IF NOT EXISTS agg_secret_values (
    type NOT NULL,
    hash NOT NULL,
    day NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (type, hash, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agg_secret_values_empty ON agg_secret_values(n) WHERE n <= 0;
CREATE TABLE IF NOT EXISTS agg_secret_sessions (
    session_id TEXT NOT NULL,
    type NOT NULL,
    day NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (session_id, type, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agg_secret_sessions_empty ON agg_secret_sessions(n) WHERE n <= 0;
CREATE TABLE IF NOT EXISTS agg_secret_files (  -- the findings with a path
    path TEXT NOT NULL,
    session_id TEXT NOT NULL,
    type NOT NULL,
    day NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (path, session_id, type, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agg_secret_files_empty ON agg_secret_files(n) WHERE n <= 0;
-- The findings naming a path (as their path or among their candidate paths), each
-- finding once per path: the sensitive-reads section counts them whatever the time.
CREATE TABLE IF NOT EXISTS agg_secret_paths (
    p NOT NULL PRIMARY KEY,
    n INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agg_secret_paths_empty ON agg_secret_paths(n) WHERE n <= 0;
CREATE TABLE IF NOT EXISTS agg_sensitive (
    path NOT NULL,
    session_id TEXT NOT NULL,
    day NOT NULL,
    n INTEGER NOT NULL,
    max_ts,
    PRIMARY KEY (path, session_id, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agg_sensitive_empty ON agg_sensitive(n) WHERE n <= 0;
-- Reads of a file outside the project, per (session, path): the findings in what such a
-- read returned are the external-reads-with-secrets section.
CREATE TABLE IF NOT EXISTS agg_external_reads (
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (session_id, path)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agg_external_reads_empty ON agg_external_reads(n) WHERE n <= 0;
-- The sessions' columns the reports join their keys with, in an index that covers them
-- (at 10 million events the join read 30,000 session rows: 200 ms; the index, 40).
CREATE INDEX IF NOT EXISTS sessions_report ON sessions(id, agent, model, project_root, cwd);
"""


def _tables(costs: bool) -> str:
    return _usage_table(costs) + _OTHER_TABLES


TABLES = _tables(costs=True)
# Schema 19: the costs' columns of agg_usage (zero until the re-price fills them).
ADD_COSTS = "".join(f"ALTER TABLE agg_usage ADD COLUMN {c}; " for c in COST_COLUMNS.split(", "))

# The JSON fields of a usage event, extracted in one call (one unpack of the stored data
# per row, not one per field): '$[i]' of the array is the value json_extract gives for
# the field alone.
USAGE_JSON = "json_extract(data, '$.model', '$.project_root', " + ", ".join(
    f"'$.{f}'" for f in USAGE_FIELDS
) + ")"
USAGE_MODEL = "json_extract(j, '$[0]')"
USAGE_PROJECT = "json_extract(j, '$[1]')"
USAGE_SUM_TERMS = [
    f"SUM(COALESCE(json_extract(j, '$[{i + 2}]'), 0))" for i in range(len(USAGE_FIELDS))
]
# A usage event's cost (usage_costs, schema 20), beside its JSON: the event aliased
# ``e``, its cost ``c`` (none while the event waits to be priced: a migrated store's
# history, until the re-price reaches it).
COST_JOIN = "LEFT JOIN usage_costs c ON c.event_id = e.id"
COST_SELECT = "c.event_id cid, c.nusd, c.kind ck, c.est_nusd, c.unpriced_tokens ut"
# The sums of COST_FIELDS over rows with COST_SELECT's columns and ``j``: a request not
# priced yet counts as unpriced, with its total tokens.
COST_SUM_TERMS = [
    "SUM(COALESCE(nusd, 0))",
    "SUM(COALESCE(est_nusd, 0))",
    "SUM(CASE WHEN cid IS NULL THEN COALESCE(json_extract(j, '$[{total}]'), 0) ELSE ut END)".format(
        total=2 + USAGE_FIELDS.index("total_tokens")),
    "SUM(ck IS 'estimated')",
    "SUM(ck IS 'reported')",
]
SECRET_JSON = "json_extract(data, '$.type', '$.hash')"
SECRET_TYPE = "json_extract(j, '$[0]')"
SECRET_HASH = "json_extract(j, '$[1]')"

_RANGE = "id > :lo AND id <= :hi"


def _upsert_usage(costs: bool) -> str:
    """The usage events with ids in (lo, hi] added to agg_usage (``:sign`` -1: taken
    back); with their costs from schema 20 on (``costs``)."""
    fields = (*USAGE_FIELDS, *COST_FIELDS) if costs else USAGE_FIELDS
    terms = [*USAGE_SUM_TERMS, *COST_SUM_TERMS] if costs else USAGE_SUM_TERMS
    source = (
        f"SELECT e.session_id, e.ts, e.adapter, {USAGE_JSON.replace('data', 'e.data')} j,"
        f" {COST_SELECT} FROM events e {COST_JOIN} WHERE e.kind = 'usage'"
        " AND e.id > :lo AND e.id <= :hi"
        if costs else
        f"SELECT session_id, ts, adapter, {USAGE_JSON} j FROM events"
        f" WHERE kind = 'usage' AND {_RANGE}"
    )
    return (
        f"WITH u AS MATERIALIZED ({source})"
        f" INSERT INTO agg_usage(session_id, model, day, adapter, project, responses,"
        f" {', '.join(fields)})"
        f" SELECT session_id, IFNULL({USAGE_MODEL}, {NONE}), IFNULL(substr(ts, 1, 10), {NONE}),"
        f" adapter, IFNULL({USAGE_PROJECT}, {NONE}), :sign * COUNT(*), "
        + ", ".join(f":sign * {term}" for term in terms)
        + " FROM u WHERE true GROUP BY 1, 2, 3, 4, 5"
        " ON CONFLICT DO UPDATE SET responses = responses + excluded.responses, "
        + ", ".join(f"{f} = {f} + excluded.{f}" for f in fields)
    )


_UPSERT_USAGE = _upsert_usage(costs=True)
_SECRETS = (
    f"WITH f AS MATERIALIZED (SELECT session_id, ts, path, {SECRET_JSON} j FROM events"
    f" WHERE kind = 'secret' AND {_RANGE})"
)
_DAY = f"IFNULL(substr(ts, 1, 10), {NONE})"
_TYPE = f"IFNULL({SECRET_TYPE}, {NONE})"
_UPSERT_SECRET_VALUES = (
    f"{_SECRETS} INSERT INTO agg_secret_values(type, hash, day, n)"
    f" SELECT {_TYPE}, IFNULL({SECRET_HASH}, {NONE}), {_DAY}, :sign * COUNT(*)"
    " FROM f WHERE true GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET n = n + excluded.n"
)
_UPSERT_SECRET_SESSIONS = (
    f"{_SECRETS} INSERT INTO agg_secret_sessions(session_id, type, day, n)"
    f" SELECT session_id, {_TYPE}, {_DAY}, :sign * COUNT(*)"
    " FROM f WHERE true GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET n = n + excluded.n"
)
_UPSERT_SECRET_FILES = (
    f"{_SECRETS} INSERT INTO agg_secret_files(path, session_id, type, day, n)"
    f" SELECT path, session_id, {_TYPE}, {_DAY}, :sign * COUNT(*)"
    " FROM f WHERE path IS NOT NULL GROUP BY 1, 2, 3, 4 ON CONFLICT DO UPDATE SET n = n + excluded.n"
)
# The same pairs the report counted: a finding's path, and each of its candidate
# paths, the pair once (UNION) when the path is among the candidates too.
_UPSERT_SECRET_PATHS = (
    f"WITH f AS MATERIALIZED (SELECT id, path, data FROM events WHERE kind = 'secret' AND {_RANGE}),"
    " fp(id, p) AS (SELECT id, path FROM f WHERE path IS NOT NULL"
    " UNION SELECT f.id, j.value FROM f, json_each(f.data, '$.paths') j)"
    " INSERT INTO agg_secret_paths(p, n) SELECT p, :sign * COUNT(*) FROM fp"
    " WHERE p IS NOT NULL GROUP BY p ON CONFLICT DO UPDATE SET n = n + excluded.n"
)
_LATER_TS = (
    "CASE WHEN excluded.max_ts IS NULL THEN max_ts WHEN max_ts IS NULL THEN excluded.max_ts"
    " ELSE max(max_ts, excluded.max_ts) END"
)
_UPSERT_SENSITIVE = (
    "INSERT INTO agg_sensitive(path, session_id, day, n, max_ts)"
    f" SELECT IFNULL(path, {NONE}), session_id, IFNULL(substr(ts, 1, 10), {NONE}),"
    f" :sign * COUNT(*), MAX(ts) FROM events WHERE kind = 'sensitive_read' AND {_RANGE}"
    f" GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET n = n + excluded.n, max_ts = {_LATER_TS}"
)
_UPSERT_EXTERNAL_READS = (
    "INSERT INTO agg_external_reads(session_id, path, n)"
    " SELECT session_id, path, :sign * COUNT(*) FROM events WHERE kind = 'read' AND"
    f" {_RANGE} AND path IS NOT NULL AND json_extract(data, '$.external') = 1"
    " GROUP BY 1, 2 ON CONFLICT DO UPDATE SET n = n + excluded.n"
)
_UPSERTS = {
    USAGE: (_UPSERT_USAGE,),
    SECRET: (_UPSERT_SECRET_VALUES, _UPSERT_SECRET_SESSIONS, _UPSERT_SECRET_FILES,
             _UPSERT_SECRET_PATHS),
    SENSITIVE_READ: (_UPSERT_SENSITIVE,),
    READ: (_UPSERT_EXTERNAL_READS,),
}
# As the 10 -> 11 migration's fill wrote them (no usage_costs before schema 20).
_UPSERTS_11 = {**_UPSERTS, USAGE: (_upsert_usage(costs=False),)}
# A sensitive read leaving its group (a claim moving it, or its time): the group's
# latest time is found again among the others (a maximum cannot be taken back).
_SENSITIVE_LATEST_AGAIN = (
    "WITH x AS MATERIALIZED (SELECT path, IFNULL(path, X'') p, session_id s,"
    " IFNULL(substr(ts, 1, 10), X'') d FROM events WHERE id = :id AND kind = 'sensitive_read')"
    " UPDATE agg_sensitive SET max_ts = CASE WHEN x.path IS NULL THEN"
    " (SELECT MAX(e.ts) FROM events e WHERE e.session_id = x.s AND e.kind = 'sensitive_read'"
    "  AND e.path IS NULL AND IFNULL(substr(e.ts, 1, 10), X'') = x.d AND e.id != :id)"
    " ELSE (SELECT MAX(e.ts) FROM events e WHERE e.path = x.path AND e.kind = 'sensitive_read'"
    "  AND e.session_id = x.s AND IFNULL(substr(e.ts, 1, 10), X'') = x.d AND e.id != :id) END"
    " FROM x WHERE agg_sensitive.path = x.p AND agg_sensitive.session_id = x.s"
    " AND agg_sensitive.day = x.d"
)
_DROP_EMPTY = (
    "DELETE FROM agg_usage WHERE responses <= 0;"
    " DELETE FROM agg_secret_values WHERE n <= 0;"
    " DELETE FROM agg_secret_sessions WHERE n <= 0;"
    " DELETE FROM agg_secret_files WHERE n <= 0;"
    " DELETE FROM agg_secret_paths WHERE n <= 0;"
    " DELETE FROM agg_sensitive WHERE n <= 0;"
    " DELETE FROM agg_external_reads WHERE n <= 0;"
)


def add_range(
    conn: apsw.Connection,
    lo: int,
    hi: int | None,
    kinds: frozenset[str] = AGGREGATED_KINDS,
    upserts: dict[str, tuple[str, ...]] = _UPSERTS,
) -> None:
    """Add the events with ids in (lo, hi] (hi None: every id after lo) of ``kinds``."""
    bounds = {"lo": lo, "hi": hi if hi is not None else (1 << 63) - 1, "sign": 1}
    for kind in sorted(kinds & AGGREGATED_KINDS):
        for sql in upserts[kind]:
            conn.execute(sql, bounds)


def remove_event(conn: apsw.Connection, event_id: int, kind: str) -> None:
    """Take back a stored event's share (before its row is rewritten); ``drop_empty``
    once the commit's changes are done."""
    if kind not in AGGREGATED_KINDS:
        return
    bounds = {"lo": event_id - 1, "hi": event_id, "sign": -1}
    for sql in _UPSERTS[kind]:
        conn.execute(sql, bounds)
    if kind == SENSITIVE_READ:
        conn.execute(_SENSITIVE_LATEST_AGAIN, {"id": event_id})


def drop_empty(conn: apsw.Connection) -> None:
    """Delete the keys no event counts in any more (by partial indexes: no scan)."""
    conn.execute(_DROP_EMPTY)


def begin_fill(conn: apsw.Connection) -> None:
    """The 10 -> 11 migration's first transaction (run again by a resumed one): the
    tables as they were at 11 (schema 20 adds the costs' columns)."""
    conn.execute(_tables(costs=False))
    conn.execute(REPORT_DAY_INDEX)
    conn.execute(
        "INSERT OR IGNORE INTO counters(name, value) SELECT 'aggregates_target',"
        "  COALESCE((SELECT MAX(id) FROM events), 0);"
        " INSERT OR IGNORE INTO counters(name, value) VALUES ('aggregates_done', 0);"
    )


def fill_step(conn: apsw.Connection, after: int, upto: int) -> None:
    add_range(conn, after, upto, upserts=_UPSERTS_11)


def finish_fill(conn: apsw.Connection) -> None:
    conn.execute("DELETE FROM counters WHERE name IN ('aggregates_done', 'aggregates_target')")
