"""The migrations too long for one transaction (they read or rewrite every event, or
build indexes over them): each a ``ChunkedMigration`` of a begin, steps over id ranges
(or other units) and a finish, run by store/migrations/runner.py. Registered in their
place in the list by store/migrations/versions.py."""

from __future__ import annotations

import re

import apsw

from .. import aggregates, usage_groups
from ..vocabulary import (
    COMMAND_FAILED,
    KEY_TABLES,
    PATH_TAIL,
    PROJECT_KINDS,
    PROJECT_ROOT,
    SESSION_TAIL,
)
from .registry import ChunkedMigration

# 7 -> 8: the events' data packed (store/packing.py). The column `data` becomes
# `packed` (a rename: no row is touched) and `data` a VIRTUAL column that unpacks it,
# so every query reads the same JSON as before; then the rows are packed in place, in id
# chunks. The format is self-describing, so a row reads the same before and after its
# chunk: the store is consistent at every commit (queries still wait for the migration:
# later migrations have not run yet). The rows are rewritten in place rather than
# copied into a new table: a copy rebuilds the key-hash index, whose inserts land on
# random pages (about one 16 KiB page per event at 10 million events: far past the
# WAL's bound per chunk). The space the packing frees stays inside the table's pages
# until a VACUUM (docs/performance.md, "Store size and migration"); new events are
# stored packed.


def _has_table(conn: apsw.Connection, table: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (table,)
    ).fetchone() is not None


def _columns(conn: apsw.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_xinfo({table})")}


def _begin_packing(conn: apsw.Connection) -> None:
    if "packed" in _columns(conn, "events"):
        return  # resumed: begun by an earlier run
    # Triggers on events (the sink's) would queue every packed row as changed: they are
    # put back with the version bump, saved here as they are.
    conn.execute(
        "CREATE TABLE pack_triggers (name TEXT NOT NULL, sql TEXT NOT NULL);"
        " INSERT INTO pack_triggers SELECT name, sql FROM sqlite_schema"
        " WHERE tbl_name = 'events' AND type = 'trigger' AND sql IS NOT NULL;"
        " INSERT INTO counters(name, value) SELECT 'pack_target',"
        "  COALESCE((SELECT MAX(id) FROM events), 0);"
        " INSERT INTO counters(name, value) VALUES ('pack_done', 0);"
    )
    for (name,) in list(conn.execute("SELECT name FROM pack_triggers")):
        conn.execute(f'DROP TRIGGER "{name}"')
    conn.execute(
        "ALTER TABLE events RENAME COLUMN data TO packed;"
        " ALTER TABLE events ADD COLUMN data BLOB GENERATED ALWAYS AS (unpack(packed)) VIRTUAL;"
    )


def _pack_step(conn: apsw.Connection, after: int, upto: int) -> None:
    # pack() leaves a packed value as it is (a chunk done twice is harmless).
    conn.execute(
        "UPDATE events SET packed = pack(packed) WHERE id > ? AND id <= ?", (after, upto)
    )


def _finish_packing(conn: apsw.Connection) -> None:
    for (sql,) in list(conn.execute("SELECT sql FROM pack_triggers")):
        # `data` is computed now: a change of the data is a change of `packed`.
        conn.execute(re.sub(r"\bUPDATE OF data\b", "UPDATE OF packed", sql, count=1))
    conn.execute(
        "DROP TABLE pack_triggers;"
        " DELETE FROM counters WHERE name IN ('pack_done', 'pack_target');"
    )


PACK_EVENTS = ChunkedMigration(
    name="pack", begin=_begin_packing, step=_pack_step, finish=_finish_packing
)

# 9 -> 10: pages at 10 million events (docs/performance.md, "Pages at 10 million
# events"). Newest-first lists of reads, edits, commands and findings walk an index in
# their order (the time, then the id: NEWEST_FIRST) instead of sorting every event of the
# kind: one per kind, without the kind as a column (an index that leads with it is what
# SQLite picks for `kind = 'read'`, over events_reads' id order, and then sorts). A path
# given relative to the project is looked up by its last name (PATH_TAIL, lower-cased as
# LIKE compares), then the kind; commands by exit code, and the failed ones; findings by
# type. Sessions of a model or an agent, in the default order; the sources gone. Each
# index reads the whole events table once (seconds at 10 million events): each is a step
# of its own, committed with the count of those built, so `status` shows the progress
# and a kill -9 resumes at the next one.
PAGE_INDEXES = (
    "CREATE INDEX IF NOT EXISTS sessions_by_model"
    " ON sessions(model, COALESCE(last_event_at, started_at, '') DESC, id)"
    " WHERE model IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS sessions_by_agent"
    " ON sessions(agent, COALESCE(last_event_at, started_at, '') DESC, id)",
    # A page of sessions says which have transcripts gone from disk: that looked up in
    # the sources' rows read their (overflowing) adapter state (queries/sessions.session_dicts).
    "CREATE INDEX IF NOT EXISTS sources_gone ON sources(id, gone_at) WHERE gone_at IS NOT NULL",
    *(f"CREATE INDEX IF NOT EXISTS events_{kind}s_by_time ON events(COALESCE(ts, ''))"
      f" WHERE kind = '{kind}'" for kind in ("read", "edit", "command", "secret")),
    f"CREATE INDEX IF NOT EXISTS events_path_tails ON events(lower({PATH_TAIL}), kind)"
    " WHERE kind = 'read' OR kind = 'edit'",
    "CREATE INDEX IF NOT EXISTS events_exit_codes ON events(json_extract(data, '$.exit_code'))"
    " WHERE kind = 'command'",
    "CREATE INDEX IF NOT EXISTS events_failed_commands ON events(id)"
    f" WHERE kind = 'command' AND {COMMAND_FAILED}",
    "CREATE INDEX IF NOT EXISTS events_secret_types ON events(json_extract(data, '$.type'))"
    " WHERE kind = 'secret'",
)


def index_migration(name: str, statements: tuple[str, ...]) -> ChunkedMigration:
    """A migration building ``statements`` (CREATE INDEX) one per transaction: an index
    over 10 million events is seconds to a minute, and a kill -9 keeps those built.
    Its progress is the number built, of ``len(statements)``."""

    def begin(conn: apsw.Connection) -> None:
        conn.execute(
            f"INSERT OR IGNORE INTO counters(name, value) VALUES ('{name}_target', ?),"
            f" ('{name}_done', 0)",
            (len(statements),),
        )

    def step(conn: apsw.Connection, after: int, upto: int) -> None:
        for sql in statements[after:upto]:
            conn.execute(sql)

    def finish(conn: apsw.Connection) -> None:
        conn.execute(f"DELETE FROM counters WHERE name IN ('{name}_done', '{name}_target')")

    return ChunkedMigration(name=name, begin=begin, step=step, finish=finish, chunk=1)


ADD_PAGE_INDEXES = index_migration("page_indexes", PAGE_INDEXES)

# 10 -> 11: the reports' maintained aggregates (store/aggregates.py), filled from the
# events already stored in id chunks (about a minute at 10 million events: see
# docs/performance.md, "Reports at 10 million events").
FILL_AGGREGATES = ChunkedMigration(
    name="aggregates", begin=aggregates.begin_fill, step=aggregates.fill_step,
    finish=aggregates.finish_fill,
)

# 11 -> 12: the usage aggregate summed per grouping (store/usage_groups.py), kept by
# triggers on agg_usage; filled from agg_usage (30,000 keys at 10 million events, not
# the events: one step of a second or so, with the begin and the finish its progress).
FILL_USAGE_GROUPS = ChunkedMigration(
    name="usage_groups", begin=usage_groups.begin_fill, step=usage_groups.fill_step,
    finish=usage_groups.finish_fill, chunk=1,
)

# 12 -> 13: the project filters of files.reads, files.edits and commands.list, oldest
# first (docs/performance.md, "Pages at 10 million events").
# An event is in a project by its session (whose project root or cwd is the project) or
# by its own data (derived reads and edits carry a ``project_root``), so a page was a
# walk of the kind that unpacked every event of another session. Now two arms, each in
# id order: the kind's events with the last characters of their session's id
# (SESSION_TAIL, read from the index: the full id is checked only for a match, so only
# the page's own rows are read), and the events by their own project root (an index of
# the few kinds that carry one; NULL left out). Small: the tail is 8 bytes, not the
# id's 40. Each index is a step of its own, committed with the count of those built.
PROJECT_INDEXES = (
    *(f"CREATE INDEX IF NOT EXISTS events_{kind}s_by_session ON events(id, {SESSION_TAIL})"
      f" WHERE kind = '{kind}'" for kind in PROJECT_KINDS),
    f"CREATE INDEX IF NOT EXISTS events_project_roots ON events({PROJECT_ROOT}, kind, id)"
    f" WHERE ({' OR '.join(f'kind = {k!r}' for k in PROJECT_KINDS)})"
    f" AND {PROJECT_ROOT} IS NOT NULL",
)


ADD_PROJECT_INDEXES = index_migration("project_indexes", PROJECT_INDEXES)

# 15 -> 16: sessions, turns and adapters referred to by integer keys (docs/performance.md,
# "Store size and migration"). An event row held its session's text id (44 bytes), its
# turn's (42) and its adapter's name (7), and events_session the session's id again:
# about 130 of the 535 bytes an event took. Now the rows are ``event_rows`` with
# ``session_key``, ``turn_key`` and ``adapter_key`` (session_keys, turn_keys,
# adapter_keys: each text once), and ``events`` is a view that joins them back in
# under their old names, so every query reads the columns it read before. The same for
# the copies of events (event_copy_rows, the view event_copies) and the turns
# (turn_rows, the view turns), which held the text ids too: about 8 bytes per event. LEFT JOINs on
# the keys' INTEGER PRIMARY KEY: SQLite leaves out a join whose columns a query does not
# read, and a query that filters by ``session_id`` makes it an inner join driven from
# session_keys. Writes go to event_rows (store/writer.py). The old text columns stay,
# empty ('' and NULL: a byte each in a row's header): dropping a column rewrites the whole
# table in one transaction, far past the WAL's bound at 10 million events.
#
# Rows are rewritten in place in id chunks, as the packing was (PACK_EVENTS): begin (one
# transaction) renames the table, adds the key columns and swaps the indexes that held
# the text id for their key twins, empty until the chunks fill them: events_session is
# partial on ``session_key IS NOT NULL`` (an equality on the key implies it, so queries
# use it) and each chunk's rows join it as the chunk keys them. It is on the key alone:
# an index ends with the rowid, so its entries are in (key, id) order all the same, and
# naming ``id`` stored it twice (4-5 bytes per event); the project filters'
# by-session indexes (a few percent of the events: 33 MB at 10 million, begin's whole
# write) are built at once. A chunk's step moves the copies of its events into
# event_copy_rows, and the turns its events are in (one turn per 34 events or so) into
# turn_rows; the finish sweeps up any turn no event is in. (Copied in begin, the turns
# were 70 MB of writes in one transaction at 10 million events: a WAL of 96 MiB.) The
# space the text ids took stays inside the table's pages until a VACUUM
# (tools/compact_store.py).
EVENTS_VIEW = (
    "CREATE VIEW events AS SELECT er.id AS id, er.key_hash AS key_hash, esk.id AS session_id,"
    " er.kind AS kind, er.ts AS ts, etk.id AS turn_id, er.tool AS tool, er.call_id AS call_id,"
    " er.subagent_id AS subagent_id, eak.id AS adapter, er.source_id AS source_id,"
    " er.offset AS offset, er.path AS path, er.packed AS packed, er.revision AS revision,"
    " er.claim AS claim, er.claim_since AS claim_since, er.holder AS holder, er.data AS data,"
    " er.session_key AS session_key, er.turn_key AS turn_key, er.adapter_key AS adapter_key"
    " FROM event_rows er LEFT JOIN session_keys esk ON esk.key = er.session_key"
    " LEFT JOIN turn_keys etk ON etk.key = er.turn_key"
    " LEFT JOIN adapter_keys eak ON eak.key = er.adapter_key"
)
EVENT_COPIES_VIEW = (
    "CREATE VIEW event_copies AS SELECT ecr.event_id AS event_id, ecs.id AS session_id,"
    " ect.id AS turn_id, ecr.subagent_id AS subagent_id, ecr.session_key AS session_key"
    " FROM event_copy_rows ecr LEFT JOIN session_keys ecs ON ecs.key = ecr.session_key"
    " LEFT JOIN turn_keys ect ON ect.key = ecr.turn_key"
)
TURNS_VIEW = (
    "CREATE VIEW turns AS SELECT tts.id AS session_id, ttt.id AS turn_id,"
    " tr.started_at AS started_at, tr.ended_at AS ended_at, tr.status AS status,"
    " tr.cwd AS cwd, tr.model AS model"
    " FROM turn_rows tr LEFT JOIN session_keys tts ON tts.key = tr.session_key"
    " LEFT JOIN turn_keys ttt ON ttt.key = tr.turn_key"
)
# The sink's change feed of events rewritten in place (schema 7), on the rows' columns.
SINK_EVENT_REVISED = """
    CREATE TRIGGER sink_event_revised
        AFTER UPDATE OF packed, session_key, turn_key, subagent_id, ts ON event_rows
        WHEN EXISTS (SELECT 1 FROM sink_state)
    BEGIN
        DELETE FROM sink_revised WHERE event_id = NEW.id;
        INSERT INTO sink_revised(event_id) VALUES (NEW.id);
    END;
"""
KEYED_PROJECT_INDEXES = tuple(
    f"CREATE INDEX events_{kind}s_by_session ON event_rows(id, session_key)"
    f" WHERE kind = '{kind}'" for kind in PROJECT_KINDS
)


def _begin_keys(conn: apsw.Connection) -> None:
    if _has_table(conn, "event_rows"):
        return  # resumed: begun by an earlier run
    # The sink's trigger would queue every keyed row as changed: it comes back, on the
    # key columns, with the version bump.
    conn.execute(
        "DROP TRIGGER IF EXISTS sink_event_revised;"
        + "".join(f" CREATE TABLE {table} (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);"
                  for table in KEY_TABLES)
        +
        " DROP INDEX IF EXISTS events_session;"
        + "".join(f" DROP INDEX IF EXISTS events_{kind}s_by_session;" for kind in PROJECT_KINDS)
        + " ALTER TABLE events RENAME TO event_rows;"
        " ALTER TABLE event_rows ADD COLUMN session_key INTEGER;"
        " ALTER TABLE event_rows ADD COLUMN turn_key INTEGER;"
        " ALTER TABLE event_rows ADD COLUMN adapter_key INTEGER;"
        " CREATE INDEX events_session ON event_rows(session_key)"
        "  WHERE session_key IS NOT NULL;"
        + "".join(f" {sql};" for sql in KEYED_PROJECT_INDEXES)
        + " ALTER TABLE event_copies RENAME TO event_copies_text;"
        " DROP INDEX IF EXISTS event_copies_session;"
        " CREATE TABLE event_copy_rows ("
        "  event_id INTEGER NOT NULL, session_key INTEGER NOT NULL, turn_key INTEGER,"
        "  subagent_id TEXT, PRIMARY KEY (event_id, session_key)) WITHOUT ROWID;"
        " CREATE INDEX event_copies_session ON event_copy_rows(session_key, event_id);"
        " CREATE TABLE turn_rows ("
        "  session_key INTEGER NOT NULL, turn_key INTEGER NOT NULL,"
        "  started_at TEXT, ended_at TEXT, status TEXT, cwd TEXT, model TEXT,"
        "  PRIMARY KEY (session_key, turn_key)) WITHOUT ROWID;"
        " ALTER TABLE turns RENAME TO turns_text;"
        " INSERT INTO counters(name, value) SELECT 'keys_target',"
        "  COALESCE((SELECT MAX(id) FROM event_rows), 0);"
        " INSERT INTO counters(name, value) VALUES ('keys_done', 0);"
    )


# A turn into turn_rows, keyed (its keys are in by then); a turn moved already stays.
_TURN_ROW = (
    "INSERT OR IGNORE INTO turn_rows SELECT"
    " (SELECT key FROM session_keys k WHERE k.id = t.session_id),"
    " (SELECT key FROM turn_keys k WHERE k.id = t.turn_id),"
    " t.started_at, t.ended_at, t.status, t.cwd, t.model"
)


def _keys_step(conn: apsw.Connection, after: int, upto: int) -> None:
    # Rows keyed already (a chunk run twice) are left as they are.
    chunk = "r.id > ? AND r.id <= ? AND r.session_key IS NULL"
    statements = [
        "INSERT OR IGNORE INTO session_keys(id)"
        f" SELECT r.session_id FROM event_rows r WHERE {chunk} ORDER BY r.id",
        "INSERT OR IGNORE INTO turn_keys(id)"
        f" SELECT r.turn_id FROM event_rows r WHERE {chunk} AND r.turn_id IS NOT NULL"
        " ORDER BY r.id",
        "INSERT OR IGNORE INTO adapter_keys(id)"
        f" SELECT r.adapter FROM event_rows r WHERE {chunk} ORDER BY r.id",
    ]
    # The turns the chunk's events are in, before their rows lose the text ids: a probe
    # of turns_text's key per turn. (No turns_text: begun by this begin's first form,
    # which moved every turn itself.)
    if _has_table(conn, "turns_text"):
        statements.append(
            f"{_TURN_ROW} FROM (SELECT DISTINCT r.session_id AS sid, r.turn_id AS tid"
            f"  FROM event_rows r WHERE {chunk} AND r.turn_id IS NOT NULL) c"
            " JOIN turns_text t ON t.session_id = c.sid AND t.turn_id = c.tid")
    statements.append(
        "UPDATE event_rows AS r SET"
        " session_key = (SELECT k.key FROM session_keys k WHERE k.id = r.session_id),"
        " turn_key = (SELECT k.key FROM turn_keys k WHERE k.id = r.turn_id),"
        " adapter_key = (SELECT k.key FROM adapter_keys k WHERE k.id = r.adapter),"
        f" session_id = '', turn_id = NULL, adapter = '' WHERE {chunk}")
    for sql in statements:
        conn.execute(sql, (after, upto))
    copies = "c.event_id > ? AND c.event_id <= ?"
    conn.execute(
        "INSERT OR IGNORE INTO session_keys(id)"
        f" SELECT c.session_id FROM event_copies_text c WHERE {copies};"
        "INSERT OR IGNORE INTO turn_keys(id)"
        f" SELECT c.turn_id FROM event_copies_text c WHERE {copies} AND c.turn_id IS NOT NULL;"
        "INSERT OR IGNORE INTO event_copy_rows SELECT c.event_id,"
        " (SELECT k.key FROM session_keys k WHERE k.id = c.session_id),"
        " (SELECT k.key FROM turn_keys k WHERE k.id = c.turn_id), c.subagent_id"
        f" FROM event_copies_text c WHERE {copies}",
        (after, upto, after, upto, after, upto),
    )


def _finish_keys(conn: apsw.Connection) -> None:
    # Copies of events after the target (none: ids only grow, and nothing is written
    # during a migration) would be lost with the table: it must be empty of them.
    left = conn.execute(
        "SELECT COUNT(*) FROM event_copies_text WHERE event_id >"
        " (SELECT value FROM counters WHERE name = 'keys_target')"
    ).fetchone()
    assert left == (0,), left
    if _has_table(conn, "turns_text"):
        # The sweep: the turns no event's chunk moved (a turn with no event of its own;
        # reads and index probes only for the others).
        conn.execute(
            "INSERT OR IGNORE INTO session_keys(id) SELECT DISTINCT session_id FROM turns_text;"
            "INSERT OR IGNORE INTO turn_keys(id) SELECT turn_id FROM turns_text;"
            f"{_TURN_ROW} FROM turns_text t; DROP TABLE turns_text;"
        )
    conn.execute(
        f"DROP TABLE event_copies_text; {EVENTS_VIEW}; {EVENT_COPIES_VIEW}; {TURNS_VIEW};"
        f" {SINK_EVENT_REVISED}"
        " DELETE FROM counters WHERE name IN ('keys_done', 'keys_target');"
    )


KEY_SESSIONS = ChunkedMigration(
    name="keys", begin=_begin_keys, step=_keys_step, finish=_finish_keys
)

# 16 -> 17: every file's adapter state (sources.state) stored packed, as the events'
# data is (store/packing.py, the same format; docs/performance.md, "Store size and
# migration": 10 bytes of the store per event, 0.43 of them left). The writer packs a
# state as it saves it; the states already stored are packed here in place, in chunks
# of PACK_STATES_CHUNK source ids per transaction (a state is a few KB: a chunk writes
# about 1.5 MB). The format is self-describing, so a state reads the same (unpacked by
# the Store and by the SQL that reads the sidecar signatures) before and after its
# chunk; a chunk done twice leaves the packed ones as they are. As with the events,
# the space freed stays inside the table's pages until a VACUUM.
PACK_STATES_CHUNK = 500


def _begin_packing_states(conn: apsw.Connection) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO counters(name, value)"
        " SELECT 'pack_states_target', COALESCE((SELECT MAX(id) FROM sources), 0);"
        " INSERT OR IGNORE INTO counters(name, value) VALUES ('pack_states_done', 0);"
    )


def _pack_states_step(conn: apsw.Connection, after: int, upto: int) -> None:
    conn.execute(
        "UPDATE sources SET state = pack(state) WHERE id > ? AND id <= ?"
        " AND state IS NOT NULL AND substr(state, 1, 1) IS NOT x'01'",
        (after, upto),
    )


def _finish_packing_states(conn: apsw.Connection) -> None:
    conn.execute("DELETE FROM counters WHERE name IN ('pack_states_done', 'pack_states_target')")


PACK_STATES = ChunkedMigration(
    name="pack_states", begin=_begin_packing_states, step=_pack_states_step,
    finish=_finish_packing_states, chunk=PACK_STATES_CHUNK,
)


# 21 -> 22: a file's history newest first (the web page's /files?path=, issue 28):
# events_path held a path's events in id order, so its newest 200 reads were all its
# reads sorted by time, their rows read to do it (12,512 edits of one path at 10 million
# events: 55-82 ms). With the kind and the time after the path it is a walk of 200
# entries (under 2 ms); oldest first, a page's ids are read from it and sorted (schema
# 24 drops events_path). 10.5 bytes an event at 10 million (105 MB; built in about 2 s).
ADD_PATH_TIMES = index_migration("path_times", (
    "CREATE INDEX IF NOT EXISTS events_path_times"
    " ON event_rows(path, kind, COALESCE(ts, '')) WHERE path IS NOT NULL",
))
