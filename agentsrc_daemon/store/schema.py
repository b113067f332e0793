"""The database: its schema (versioned migrations), connections and file permissions."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import apsw

from ..errors import SchemaTooNew
from . import packing

BUSY_TIMEOUT_MS = 5000
WRITER_CACHE_KIB = 8 * 1024
PAGE_SIZE = 16384
# The WAL never grows past WAL_LIMIT_BYTES: a checkpoint runs once it holds a quarter
# of that, which leaves room for the largest commits (a backfill batch, a migration
# chunk) and for a checkpoint or two that readers made wait (measured: at half, a
# backfill with a reader always busy peaked at 59 MiB).
WAL_LIMIT_BYTES = 64 * 1024 * 1024
WAL_CHECKPOINT_PAGES = WAL_LIMIT_BYTES // 4 // PAGE_SIZE
# The ingest loop puts that checkpoint off while a live append waits for it (it runs
# at the next commit with none waiting), but not past this: 3/8 of the bound.
WAL_FORCE_PAGES = WAL_LIMIT_BYTES * 3 // 8 // PAGE_SIZE
# How long a checkpoint waits for readers still on an older snapshot (then the next
# commit tries again): readers are short transactions, and the writer must not stall.
WAL_RESTART_BUSY_MS = 200
# Past half the bound the writer's RESTART is tried again until it completes, for up to
# WAL_HARD_BUSY_MS: a stall of the writer rather than a WAL past its bound. A RESTART
# fails at once, without the busy handler, while another connection checkpoints (the
# Checkpointer thread's PASSIVE): with another process writing 6 GB to the disk each
# PASSIVE took hundreds of ms, every RESTART of the search index's build found one
# running, and the WAL reached 65-88 MiB. The other half is room for the largest
# commit (a backfill batch: 19 MiB at most measured).
WAL_HARD_PAGES = WAL_LIMIT_BYTES // 2 // PAGE_SIZE
WAL_HARD_BUSY_MS = 10_000


class WalBound:
    """Keeps the WAL under WAL_LIMIT_BYTES whatever the readers do. SQLite's own
    auto-checkpoint is PASSIVE: with readers one after another (the socket's threads,
    the sink) some reader always holds a frame of the WAL, the log never starts over,
    and it grew to 145 MiB in a backfill (tests/test_store_size.py). So the writer
    counts the WAL's pages (a WAL hook, which replaces the auto-checkpoint) and past
    a quarter of the bound runs a RESTART checkpoint, which waits (briefly) for the readers to
    reach the latest snapshot and makes the next commit write the log from its start;
    journal_size_limit then cuts the file back to the bound."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.pages = 0
        conn.set_wal_hook(self._committed)

    def _committed(self, conn: apsw.Connection, name: str, pages: int) -> int:
        self.pages = pages
        return apsw.SQLITE_OK

    @property
    def due(self) -> bool:
        return self.pages >= WAL_CHECKPOINT_PAGES

    def check(self, conn: apsw.Connection) -> None:
        """After a commit: checkpoint if the WAL holds a quarter of its bound."""
        if not self.due:
            return
        if (restart_checkpoint_within(conn, WAL_HARD_BUSY_MS) if self.pages >= WAL_HARD_PAGES
                else restart_checkpoint(conn)):
            self.pages = 0


def restart_checkpoint(conn: apsw.Connection, busy_ms: int = WAL_RESTART_BUSY_MS) -> bool:
    """A RESTART checkpoint: whether it completed (a reader on an older snapshot that
    outlasts ``busy_ms`` makes it give up, and so does another connection's checkpoint
    running, at once)."""
    conn.setbusytimeout(busy_ms)
    try:
        conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_RESTART)
    except apsw.BusyError:
        return False
    finally:
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
    return True


def restart_checkpoint_within(conn: apsw.Connection, total_ms: int) -> bool:
    """RESTART checkpoints tried until one completes, for up to ``total_ms`` in all:
    another connection's checkpoint is waited out too."""
    deadline = time.monotonic() + total_ms / 1000
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if restart_checkpoint(conn, max(left_ms, 1)):
            return True
        if left_ms <= 0:
            return False
        time.sleep(0.005)


@dataclass(frozen=True)
class ChunkedMigration:
    """A migration too long for one transaction (it rewrites every event): ``begin`` (one
    transaction, idempotent: a resumed migration runs it again), then ``step`` over id
    ranges, each chunk its own transaction with the high-water mark in ``counters``
    (``<name>_done`` of ``<name>_target``), so a kill -9 resumes after the last committed
    chunk; ``finish`` runs in the transaction that bumps the version."""

    name: str
    begin: Callable[[apsw.Connection], None]
    step: Callable[[apsw.Connection, int, int], None]  # (conn, after_id, upto_id)
    finish: Callable[[apsw.Connection], None]
    # Units per transaction, when the units are not event ids (0: MIGRATE_CHUNK_IDS).
    chunk: int = 0


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

# The last name of an event's path (after its last / or \\, trailing separators and dots
# left out), in SQL: the expression of events_path_tails (schema 10), which a query must
# repeat exactly to use that index. rtrim(t, <every character of t but the separators>)
# leaves t up to its last separator.
_TRIMMED = "rtrim(path, '/\\.')"
PATH_TAIL = (
    f"substr({_TRIMMED}, length(rtrim({_TRIMMED},"
    f" replace(replace({_TRIMMED}, '/', ''), '\\', ''))) + 1)"
)
# A failed command (commands.list failed=true), the WHERE of events_failed_commands.
COMMAND_FAILED = (
    "(COALESCE(json_extract(data, '$.exit_code'), 0) != 0"
    " OR json_extract(data, '$.interrupted') = 1"
    " OR json_extract(data, '$.is_error') = 1)"
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
# docs/performance.md, "Reports at 10 million events"). aggregates imports this module
# (USAGE_FIELDS): imported when the migration runs.


def _begin_aggregates(conn: apsw.Connection) -> None:
    from . import aggregates

    aggregates.begin_fill(conn)


def _aggregates_step(conn: apsw.Connection, after: int, upto: int) -> None:
    from . import aggregates

    aggregates.fill_step(conn, after, upto)


def _finish_aggregates(conn: apsw.Connection) -> None:
    from . import aggregates

    aggregates.finish_fill(conn)


FILL_AGGREGATES = ChunkedMigration(
    name="aggregates", begin=_begin_aggregates, step=_aggregates_step, finish=_finish_aggregates
)

# 11 -> 12: the usage aggregate summed per grouping (store/usage_groups.py), kept by
# triggers on agg_usage; filled from agg_usage (30,000 keys at 10 million events, not
# the events: one step of a second or so, with the begin and the finish its progress).


def _begin_usage_groups(conn: apsw.Connection) -> None:
    from . import usage_groups

    usage_groups.begin_fill(conn)


def _usage_groups_step(conn: apsw.Connection, after: int, upto: int) -> None:
    from . import usage_groups

    usage_groups.fill_step(conn, after, upto)


def _finish_usage_groups(conn: apsw.Connection) -> None:
    from . import usage_groups

    usage_groups.finish_fill(conn)


FILL_USAGE_GROUPS = ChunkedMigration(
    name="usage_groups", begin=_begin_usage_groups, step=_usage_groups_step,
    finish=_finish_usage_groups, chunk=1,
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
SESSION_TAIL = "substr(session_id, -8)"
PROJECT_KINDS = ("read", "edit", "command")
PROJECT_ROOT = "json_extract(data, '$.project_root')"
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
# A session's or an adapter's key by its text, in SQL (NULL for one not stored).
SESSION_KEY_OF = "(SELECT key FROM session_keys WHERE id = ?)"
ADAPTER_KEY_OF = "(SELECT key FROM adapter_keys WHERE id = ?)"
# The tables of the keys, each (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE).
KEY_TABLES = ("session_keys", "turn_keys", "adapter_keys")
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

# Event ids per transaction of a chunked migration (AGENTSRC_MIGRATE_CHUNK overrides):
# a chunk rewrites about 5 MiB of table pages, well within the WAL's bound.
MIGRATE_CHUNK_IDS = 10_000

# Each entry migrates the schema from version i to i+1. Never edit a released entry:
# append a new one.
MIGRATIONS: list[str | ChunkedMigration] = [
    # 0 -> 1: the core tables
    """
    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        adapter TEXT NOT NULL,
        mode TEXT NOT NULL,              -- jsonl | document | memory
        dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER,
        offset INTEGER NOT NULL DEFAULT 0,   -- bytes consumed (always at a line boundary)
        head_len INTEGER NOT NULL DEFAULT 0, -- bytes covered by head_hash
        head_hash BLOB,                      -- hash of the first head_len bytes
        skipping INTEGER NOT NULL DEFAULT 0, -- inside an over-long line, skipping to its end
        state BLOB,                          -- adapter state (JSON), same transaction as events
        generation INTEGER NOT NULL DEFAULT 0,  -- times the file was re-read from 0
        lines INTEGER NOT NULL DEFAULT 0,
        skipped TEXT NOT NULL DEFAULT '{}',  -- counters of skipped lines by reason (JSON)
        gone_at TEXT,                        -- set when the file disappeared
        first_seen TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
        updated_at TEXT
    );
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        native_id TEXT NOT NULL,
        cwd TEXT, model TEXT, started_at TEXT, last_event_at TEXT, title TEXT,
        version TEXT, originator TEXT, source TEXT, model_provider TEXT,
        parent_session_id TEXT, home TEXT,
        prompts INTEGER NOT NULL DEFAULT 0,
        messages INTEGER NOT NULL DEFAULT 0,
        tool_calls INTEGER NOT NULL DEFAULT 0,
        compactions INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        total_tokens INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_last ON sessions(last_event_at);
    CREATE TABLE session_sources (
        session_id TEXT NOT NULL,
        source_id INTEGER NOT NULL,
        PRIMARY KEY (session_id, source_id)
    ) WITHOUT ROWID;
    CREATE TABLE session_subagents (
        session_id TEXT NOT NULL,
        subagent_id TEXT NOT NULL,
        PRIMARY KEY (session_id, subagent_id)
    ) WITHOUT ROWID;
    CREATE TABLE turns (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        started_at TEXT, ended_at TEXT, status TEXT, cwd TEXT, model TEXT,
        PRIMARY KEY (session_id, turn_id)
    ) WITHOUT ROWID;
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key_hash BLOB NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        ts TEXT,
        turn_id TEXT,
        tool TEXT,
        call_id TEXT,
        subagent_id TEXT,
        adapter TEXT NOT NULL,
        source_id INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        path TEXT,          -- read/edit/secret events: the absolute file path
        data BLOB NOT NULL  -- JSON
    );
    CREATE INDEX events_session ON events(session_id, id);
    CREATE INDEX events_path ON events(path) WHERE path IS NOT NULL;
    CREATE TABLE documents (
        path TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        project TEXT,
        size INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        mtime_ns INTEGER,
        gone_at TEXT,
        updated_at TEXT
    );
    CREATE TABLE drift (
        adapter TEXT NOT NULL,
        version TEXT NOT NULL,
        record_type TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 0,
        first_seen TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
        last_seen TEXT,
        PRIMARY KEY (adapter, version, record_type)
    ) WITHOUT ROWID;
    """,
    # 1 -> 2: project scoping for path queries; the kinds queried across all sessions
    # get partial indexes (an index on every event's kind costs a quarter of ingest).
    """
    ALTER TABLE sessions ADD COLUMN project_root TEXT;
    CREATE INDEX events_commands ON events(id) WHERE kind = 'command';
    CREATE INDEX events_secrets ON events(id) WHERE kind = 'secret';
    CREATE INDEX events_sensitive ON events(id) WHERE kind = 'sensitive_read';
    """,
    # 2 -> 3: the number of events, kept as the rows go in. Ids have gaps (an ignored
    # duplicate can use up an id), and COUNT(*) reads a whole index.
    """
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO counters(name, value) SELECT 'events', COUNT(*) FROM events;
    """,
    # 3 -> 4: the revision of the event a row holds (see Event.revision), so that only a
    # later version replaces it. Rows from before hold revision 0. Message rows lose the
    # `parts` digests the store kept when it merged a message written over several lines
    # itself (the adapter now emits such a message again, whole, with a higher revision).
    # One pass over the table: about 1.3 s per million events.
    """
    ALTER TABLE events ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
    UPDATE events SET data = CAST(json_remove(data, '$.parts') AS BLOB)
        WHERE kind = 'message' AND json_type(data, '$.parts') IS NOT NULL;
    """,
    # 4 -> 5: every record kept once, owned by one session whatever the order its
    # copies are read in (docs/architecture.md, "Exactly once"). Each event row holds
    # the claim it is owned by (rank, since, and the holder when the record sits in
    # another session's file); the other sessions holding a copy are in event_copies.
    # Sub-agents that do not name their parent are linked through spawn_points.
    # Codex rollouts change keys (a record's place in its session's history, the same in
    # a replay as in the original): the events of the rollouts still on disk are
    # dropped and those files read again from 0; the events of rollouts gone from disk
    # are kept as they are (they are never read again). Object sources are stored as
    # JSON, not as "key:value". About 2 s per million Codex events.
    """
    ALTER TABLE events ADD COLUMN claim INTEGER NOT NULL DEFAULT 2;
    ALTER TABLE events ADD COLUMN claim_since TEXT;
    ALTER TABLE events ADD COLUMN holder TEXT;
    CREATE TABLE event_copies (
        event_id INTEGER NOT NULL,
        session_id TEXT NOT NULL,   -- a session holding a copy of the event it does not own
        turn_id TEXT,               -- the copy's turn and sub-agent in that session
        subagent_id TEXT,
        PRIMARY KEY (event_id, session_id)
    ) WITHOUT ROWID;
    CREATE INDEX event_copies_session ON event_copies(session_id, event_id);
    ALTER TABLE sessions ADD COLUMN spawned_as TEXT;
    ALTER TABLE sessions ADD COLUMN replayed_in TEXT;
    ALTER TABLE sessions ADD COLUMN own_record INTEGER;
    CREATE TABLE spawn_points (
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        at TEXT NOT NULL,
        cwd TEXT,
        PRIMARY KEY (session_id, kind, at)
    ) WITHOUT ROWID;
    CREATE INDEX sessions_parent ON sessions(parent_session_id)
        WHERE parent_session_id IS NOT NULL;
    UPDATE sessions SET source = json_object(substr(source, 1, instr(source, ':') - 1),
                                             substr(source, instr(source, ':') + 1))
        WHERE agent = 'codex' AND instr(source, ':') > 1;
    DELETE FROM events WHERE source_id IN
        (SELECT id FROM sources WHERE adapter = 'codex' AND mode = 'jsonl' AND gone_at IS NULL);
    UPDATE sources SET offset = 0, head_len = 0, head_hash = NULL, skipping = 0, state = NULL,
                       lines = 0, skipped = '{}', generation = generation + 1
        WHERE adapter = 'codex' AND mode = 'jsonl' AND gone_at IS NULL;
    UPDATE sessions SET
        prompts = (SELECT COUNT(*) FROM events e WHERE e.session_id = sessions.id
                   AND e.kind = 'prompt'),
        messages = (SELECT COUNT(*) FROM events e WHERE e.session_id = sessions.id
                    AND e.kind = 'message'),
        tool_calls = (SELECT COUNT(*) FROM events e WHERE e.session_id = sessions.id
                      AND e.kind = 'tool_call'),
        compactions = (SELECT COUNT(*) FROM events e WHERE e.session_id = sessions.id
                       AND e.kind = 'compaction'),
        errors = (SELECT COUNT(*) FROM events e WHERE e.session_id = sessions.id
                  AND e.kind = 'error'),
        input_tokens = (SELECT COALESCE(SUM(json_extract(data, '$.input_tokens')), 0)
                        FROM events e WHERE e.session_id = sessions.id AND e.kind = 'usage'),
        output_tokens = (SELECT COALESCE(SUM(json_extract(data, '$.output_tokens')), 0)
                         FROM events e WHERE e.session_id = sessions.id AND e.kind = 'usage'),
        cache_read_tokens = (SELECT COALESCE(SUM(json_extract(data, '$.cache_read_tokens')), 0)
                             FROM events e WHERE e.session_id = sessions.id
                             AND e.kind = 'usage'),
        cache_creation_tokens = (SELECT COALESCE(SUM(json_extract(data,
                                 '$.cache_creation_tokens')), 0) FROM events e
                                 WHERE e.session_id = sessions.id AND e.kind = 'usage'),
        reasoning_tokens = (SELECT COALESCE(SUM(json_extract(data, '$.reasoning_tokens')), 0)
                            FROM events e WHERE e.session_id = sessions.id
                            AND e.kind = 'usage'),
        total_tokens = (SELECT COALESCE(SUM(json_extract(data, '$.total_tokens')), 0)
                        FROM events e WHERE e.session_id = sessions.id AND e.kind = 'usage')
        WHERE agent = 'codex';
    UPDATE counters SET value = (SELECT COUNT(*) FROM events) WHERE name = 'events';
    """,
    # 5 -> 6: full-text search (store/search.py). A contentless FTS5 index whose rowid
    # is the event's id (a session title's: minus its search_titles id), kept by the
    # writer in the commit's transaction. The events already stored are indexed after
    # the migration, in id-ranged chunks of their own transactions: counters
    # 'search_target' (the last id stored before) and 'search_done' (the high-water mark).
    """
    CREATE VIRTUAL TABLE search_index USING fts5(
        body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TABLE search_titles (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL UNIQUE,
        title TEXT
    );
    INSERT INTO counters(name, value)
        SELECT 'search_target', COALESCE((SELECT MAX(id) FROM events), 0);
    INSERT INTO counters(name, value) VALUES ('search_done', 0), ('search_titles_done', 0);
    """,
    # 6 -> 7: the ClickHouse sink (store/sink.py, docs/team.md). Its position: the last
    # event id the server acknowledged, per target, and the clock its rows' versions
    # come from. Two change feeds, filled by triggers only while a sink is configured (a
    # sink_state row exists): sessions whose row changed (counters, titles...), and
    # events changed in place (a higher revision's data, or another session's claim
    # taking the event over: its session, turn, sub-agent, time).
    # A feed entry is deleted and inserted again on each change, so its seq only grows:
    # the sink deletes the entries up to the seq it pushed, never a later change.
    """
    CREATE TABLE sink_state (
        target TEXT PRIMARY KEY,            -- url (no credentials), database, labels, level
        hwm INTEGER NOT NULL DEFAULT 0,     -- the last event id the server acknowledged
        clock INTEGER NOT NULL DEFAULT 0,   -- the last version sent (ms since the epoch)
        acked_at TEXT
    ) WITHOUT ROWID;
    CREATE TABLE sink_sessions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL UNIQUE
    );
    CREATE TABLE sink_revised (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id INTEGER NOT NULL UNIQUE
    );
    CREATE TRIGGER sink_session_inserted AFTER INSERT ON sessions
        WHEN EXISTS (SELECT 1 FROM sink_state)
    BEGIN
        DELETE FROM sink_sessions WHERE session_id = NEW.id;
        INSERT INTO sink_sessions(session_id) VALUES (NEW.id);
    END;
    CREATE TRIGGER sink_session_updated AFTER UPDATE ON sessions
        WHEN EXISTS (SELECT 1 FROM sink_state)
    BEGIN
        DELETE FROM sink_sessions WHERE session_id = NEW.id;
        INSERT INTO sink_sessions(session_id) VALUES (NEW.id);
    END;
    CREATE TRIGGER sink_event_revised
        AFTER UPDATE OF data, session_id, turn_id, subagent_id, ts ON events
        WHEN EXISTS (SELECT 1 FROM sink_state)
    BEGIN
        DELETE FROM sink_revised WHERE event_id = NEW.id;
        INSERT INTO sink_revised(event_id) VALUES (NEW.id);
    END;
    """,
    # 7 -> 8: see PACK_EVENTS.
    PACK_EVENTS,
    # 8 -> 9: no full scan for any socket method at 10 million events (docs/performance.md,
    # "Scale"). Reads, edits, usage and prompts are listed across sessions too: a partial
    # index each (a few percent of the events; an index on every event's kind cost a quarter
    # of commit time). Sessions are listed by four sort keys (keyset pages, newest
    # first): an index per key, so a page is a walk of LIMIT rows, not a sort of every
    # session; and by project or cwd, which event queries scope by.
    """
    CREATE INDEX events_reads ON events(id) WHERE kind = 'read';
    CREATE INDEX events_edits ON events(id) WHERE kind = 'edit';
    CREATE INDEX events_usage ON events(id) WHERE kind = 'usage';
    CREATE INDEX events_prompts ON events(id) WHERE kind = 'prompt';
    CREATE INDEX sessions_by_last ON sessions(COALESCE(last_event_at, started_at, '') DESC, id);
    CREATE INDEX sessions_by_started ON sessions(COALESCE(started_at, '') DESC, id);
    CREATE INDEX sessions_by_tokens ON sessions(total_tokens DESC, id);
    CREATE INDEX sessions_by_tools ON sessions(tool_calls DESC, id);
    CREATE INDEX sessions_project ON sessions(project_root) WHERE project_root IS NOT NULL;
    CREATE INDEX sessions_cwd ON sessions(cwd) WHERE cwd IS NOT NULL;
    """,
    # 9 -> 10: see PAGE_INDEXES.
    ADD_PAGE_INDEXES,
    # 10 -> 11: see FILL_AGGREGATES.
    FILL_AGGREGATES,
    # 11 -> 12: see FILL_USAGE_GROUPS.
    FILL_USAGE_GROUPS,
    # 12 -> 13: see PROJECT_INDEXES.
    ADD_PROJECT_INDEXES,
    # 13 -> 14: sessions_last (schema 1, on the raw last_event_at) is used by no query:
    # every one orders and filters by COALESCE(last_event_at, started_at, ''), which
    # sessions_by_last and its per-model and per-agent twins serve (tests/
    # test_query_plans.py). Each live commit moved its entry for every session it
    # touched. A DROP of a 20,000-row index: milliseconds, no chunks.
    "DROP INDEX IF EXISTS sessions_last;",
    # 14 -> 15: the search index's segments are merged by the ingest loop in small
    # steps when no append waits (SearchIndex.merge_step), not by FTS5 inside the
    # commits that write to it: its automerge did 64 pages per level of the index at
    # once, 40-50 ms of CPU in one live commit in 50 at 10 million events. The setting
    # lives in the index's own config table; its crisis merge (16 segments on a level)
    # still runs in a commit if the loop never finds a quiet moment.
    "INSERT INTO search_index(search_index, rank) VALUES('automerge', 0);",
    # 15 -> 16: see KEY_SESSIONS.
    KEY_SESSIONS,
    # 16 -> 17: see PACK_STATES.
    PACK_STATES,
    # 17 -> 18: `status` counts the files present and sums their skipped lines without
    # reading the sources' rows (Reader.counts, skipped_totals): a row holds its file's
    # adapter state (1.4 KB on average at 10 million events), so each scan read the whole
    # table (21.5 ms a status for 44,000 sources, bench/status_reads.py; a client polling
    # status every 20 ms made the daemon pay that 50 times a second). Two partial indexes that
    # cover what status reads: the present files (gone_at, NULL in each), and the few with
    # skipped lines with their counts. Built in one transaction (a read of the sources: a
    # tenth of a second for 44,000).
    """
    CREATE INDEX IF NOT EXISTS sources_present ON sources(gone_at) WHERE gone_at IS NULL;
    CREATE INDEX IF NOT EXISTS sources_skipping ON sources(skipped) WHERE skipped != '{}';
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)

# The kinds with a partial index of their own (schema 2, and 8 for reads, edits, usage
# and prompts): queried across all sessions.
PARTIAL_INDEXED_KINDS = frozenset(
    {"command", "secret", "sensitive_read", "read", "edit", "usage", "prompt"}
)

# The sessions columns that SessionFacts fill (same names).
SESSION_FACT_FIELDS = (
    "cwd",
    "model",
    "started_at",
    "last_event_at",
    "title",
    "version",
    "originator",
    "source",
    "model_provider",
    "parent_session_id",
    "home",
    "spawned_as",
    "replayed_in",
    "own_record",
)

# The sessions columns that sum the usage events' counts (same names in their data).
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
    "total_tokens",
)


def secure_file(path: Path) -> None:
    """Owner-only: the database holds what agents read and wrote."""
    with suppress(FileNotFoundError):
        os.chmod(path, 0o600)


def connect(db_path: Path, *, readonly: bool = False) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else (
        apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    )
    conn = apsw.Connection(str(db_path), flags=flags)
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    if not readonly:
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect on a new database only
        conn.execute("PRAGMA journal_mode=WAL")
        # The writer's page cache holds the hot parts of the indexes (the key-hash index
        # is random-access by nature); bounded, so it counts toward the memory budget.
        conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        # Checkpoints every WAL_CHECKPOINT_PAGES (until the Store's WalBound takes over);
        # journal_size_limit truncates the WAL back to the bound when it restarts, and
        # the daemon truncates it when idle (Store.truncate_wal).
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    packing.register(conn)
    return conn


Progress = Callable[[str, int, int], None]  # (migration name, ids done, ids in all)


def pending_chunked(conn: apsw.Connection) -> ChunkedMigration | None:
    """The first chunked migration this store still has to run, if any."""
    (found,) = conn.execute("PRAGMA user_version").fetchone() or (0,)
    for m in MIGRATIONS[found:]:
        if isinstance(m, ChunkedMigration):
            return m
    return None


def chunked_pending(db_path: Path) -> ChunkedMigration | None:
    """The chunked migration an existing store at ``db_path`` will run when opened."""
    if not db_path.is_file():
        return None
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
        return pending_chunked(conn)
    finally:
        conn.close()


def run_migration(
    conn: apsw.Connection, version: int, progress: Progress | None = None, chunk: int = 0
) -> None:
    """Migrate from ``version`` to ``version + 1``."""
    m = MIGRATIONS[version]
    if isinstance(m, str):
        with conn:
            conn.execute(m)
            conn.execute(f"PRAGMA user_version={version + 1}")
        return
    chunk = m.chunk or chunk or int(os.environ.get("AGENTSRC_MIGRATE_CHUNK") or MIGRATE_CHUNK_IDS)
    with conn:
        m.begin(conn)
    # A begin that builds indexes writes tens of MB at 10 million events: out of the
    # WAL before the first chunk adds its own.
    restart_checkpoint(conn)
    first = True
    while True:
        with conn:
            values = dict(
                conn.execute(
                    "SELECT name, value FROM counters WHERE name IN (?, ?)",
                    (f"{m.name}_done", f"{m.name}_target"),
                )
            )
            done, target = values[f"{m.name}_done"], values[f"{m.name}_target"]
            if first and progress is not None:
                progress(m.name, done, target)  # where a resumed migration starts
            first = False
            if done >= target:
                m.finish(conn)
                conn.execute(f"PRAGMA user_version={version + 1}")
                return
            upto = min(done + chunk, target)
            m.step(conn, done, upto)
            conn.execute("UPDATE counters SET value=? WHERE name=?", (upto, f"{m.name}_done"))
        if progress is not None:
            progress(m.name, upto, target)
        # Each chunk rewrites its rows: keep the WAL bounded while the migration runs.
        restart_checkpoint(conn)


def migrate(conn: apsw.Connection, progress: Progress | None = None) -> int:
    """Bring the schema to SCHEMA_VERSION. Returns the version found before."""
    (found,) = conn.execute("PRAGMA user_version").fetchone() or (0,)
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema version {found} is newer than this agentsrc ({SCHEMA_VERSION})"
        )
    for version in range(found, SCHEMA_VERSION):
        run_migration(conn, version, progress)
    return int(found)


def compact(db_path: Path) -> tuple[int, int]:
    """VACUUM the store (the daemon stopped: the caller holds its lock): what packing
    freed inside the pages of a migrated store goes back to the file system. Run with a
    rollback journal, not the WAL: a VACUUM rewrites the whole database, which in WAL
    mode would all go through the WAL. Needs this module's functions (``unpack``): the
    sqlite3 shell cannot VACUUM the store. Returns the file's size before and after."""
    before = db_path.stat().st_size
    conn = connect(db_path)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()
    return before, db_path.stat().st_size
