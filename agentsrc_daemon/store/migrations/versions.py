"""Every migration of the store's schema, in order, registered by name (store/
migrations/registry.py); run by store/migrations/runner.py. A new database is not
migrated through them: it is created at SCHEMA_VERSION from store/migrations/
current.py, which tests/test_migrations.py proves the same as these migrations make."""

from __future__ import annotations

from .. import aggregates, costs, usage_groups
from ..vocabulary import COMMAND_FAILED
from .chunked import (
    ADD_PAGE_INDEXES,
    ADD_PATH_TIMES,
    ADD_PROJECT_INDEXES,
    FILL_AGGREGATES,
    FILL_USAGE_GROUPS,
    KEY_SESSIONS,
    PACK_EVENTS,
    PACK_STATES,
)
from .registry import Migrations

# Each migration brings the schema from its version - 1 to its version. Never edit a
# released one: register a new one.
MIGRATIONS = Migrations()

# 0 -> 1: the core tables
MIGRATIONS.sql(
    "core_tables",
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
)

# 1 -> 2: project scoping for path queries; the kinds queried across all sessions
# get partial indexes (an index on every event's kind costs a quarter of ingest).
MIGRATIONS.sql(
    "project_scoping",
    """
    ALTER TABLE sessions ADD COLUMN project_root TEXT;
    CREATE INDEX events_commands ON events(id) WHERE kind = 'command';
    CREATE INDEX events_secrets ON events(id) WHERE kind = 'secret';
    CREATE INDEX events_sensitive ON events(id) WHERE kind = 'sensitive_read';
    """,
)

# 2 -> 3: the number of events, kept as the rows go in. Ids have gaps (an ignored
# duplicate can use up an id), and COUNT(*) reads a whole index.
MIGRATIONS.sql(
    "event_counter",
    """
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO counters(name, value) SELECT 'events', COUNT(*) FROM events;
    """,
)

# 3 -> 4: the revision of the event a row holds (see Event.revision), so that only a
# later version replaces it. Rows from before hold revision 0. Message rows lose the
# `parts` digests the store kept when it merged a message written over several lines
# itself (the adapter now emits such a message again, whole, with a higher revision).
# One pass over the table: about 1.3 s per million events.
MIGRATIONS.sql(
    "event_revisions",
    """
    ALTER TABLE events ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
    UPDATE events SET data = CAST(json_remove(data, '$.parts') AS BLOB)
        WHERE kind = 'message' AND json_type(data, '$.parts') IS NOT NULL;
    """,
)

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
MIGRATIONS.sql(
    "record_ownership",
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
)

# 5 -> 6: full-text search (store/search.py). A contentless FTS5 index whose rowid
# is the event's id (a session title's: minus its search_titles id), kept by the
# writer in the commit's transaction. The events already stored are indexed after
# the migration, in id-ranged chunks of their own transactions: counters
# 'search_target' (the last id stored before) and 'search_done' (the high-water mark).
MIGRATIONS.sql(
    "search_index",
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
)

# 6 -> 7: the ClickHouse sink (store/sink.py, docs/team.md). Its position: the last
# event id the server acknowledged, per target, and the clock its rows' versions
# come from. Two change feeds, filled by triggers only while a sink is configured (a
# sink_state row exists): sessions whose row changed (counters, titles...), and
# events changed in place (a higher revision's data, or another session's claim
# taking the event over: its session, turn, sub-agent, time).
# A feed entry is deleted and inserted again on each change, so its seq only grows:
# the sink deletes the entries up to the seq it pushed, never a later change.
MIGRATIONS.sql(
    "sink_feeds",
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
)

# 7 -> 8: see chunked.PACK_EVENTS.
MIGRATIONS.chunked(PACK_EVENTS)

# 8 -> 9: no full scan for any socket method at 10 million events (docs/performance.md,
# "Scale"). Reads, edits, usage and prompts are listed across sessions too: a partial
# index each (a few percent of the events; an index on every event's kind cost a quarter
# of commit time). Sessions are listed by four sort keys (keyset pages, newest
# first): an index per key, so a page is a walk of LIMIT rows, not a sort of every
# session; and by project or cwd, which event queries scope by.
MIGRATIONS.sql(
    "scale_indexes",
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
)

# 9 -> 10: see chunked.PAGE_INDEXES.
MIGRATIONS.chunked(ADD_PAGE_INDEXES)

# 10 -> 11: see chunked.FILL_AGGREGATES.
MIGRATIONS.chunked(FILL_AGGREGATES)

# 11 -> 12: see chunked.FILL_USAGE_GROUPS.
MIGRATIONS.chunked(FILL_USAGE_GROUPS)

# 12 -> 13: see chunked.PROJECT_INDEXES.
MIGRATIONS.chunked(ADD_PROJECT_INDEXES)

# 13 -> 14: sessions_last (schema 1, on the raw last_event_at) is used by no query:
# every one orders and filters by COALESCE(last_event_at, started_at, ''), which
# sessions_by_last and its per-model and per-agent twins serve (tests/
# test_query_plans.py). Each live commit moved its entry for every session it
# touched. A DROP of a 20,000-row index: milliseconds, no chunks.
MIGRATIONS.sql("drop_sessions_last", "DROP INDEX IF EXISTS sessions_last;")

# 14 -> 15: the search index's segments are merged by the ingest loop in small
# steps when no append waits (SearchIndex.merge_step), not by FTS5 inside the
# commits that write to it: its automerge did 64 pages per level of the index at
# once, 40-50 ms of CPU in one live commit in 50 at 10 million events. The setting
# lives in the index's own config table; its crisis merge (16 segments on a level)
# still runs in a commit if the loop never finds a quiet moment.
MIGRATIONS.sql(
    "search_automerge_off", "INSERT INTO search_index(search_index, rank) VALUES('automerge', 0);"
)

# 15 -> 16: see chunked.KEY_SESSIONS.
MIGRATIONS.chunked(KEY_SESSIONS)

# 16 -> 17: see chunked.PACK_STATES.
MIGRATIONS.chunked(PACK_STATES)

# 17 -> 18: `status` counts the files present and sums their skipped lines without
# reading the sources' rows (Reader.counts, skipped_totals): a row holds its file's
# adapter state (1.4 KB on average at 10 million events), so each scan read the whole
# table (21.5 ms a status for 44,000 sources, bench/status_reads.py; a client polling
# status every 20 ms made the daemon pay that 50 times a second). Two partial indexes that
# cover what status reads: the present files (gone_at, NULL in each), and the few with
# skipped lines with their counts. Built in one transaction (a read of the sources: a
# tenth of a second for 44,000).
MIGRATIONS.sql(
    "status_indexes",
    """
    CREATE INDEX IF NOT EXISTS sources_present ON sources(gone_at) WHERE gone_at IS NULL;
    CREATE INDEX IF NOT EXISTS sources_skipping ON sources(skipped) WHERE skipped != '{}';
    """,
)

# 18 -> 19: how faithfully each agent's records are read (issue 26): per adapter,
# agent version and record type, the records read and what became of them: events,
# ignored on purpose (a type the adapter lists with its reason), folded (read into
# the file's state or a twin already counted: nothing of its own to emit), not
# understood (the adapter reported drift, or failed on it). Counted from the records
# read after this version; a new table, nothing to backfill.
MIGRATIONS.sql(
    "fidelity",
    """
    CREATE TABLE fidelity (
        adapter TEXT NOT NULL,
        version TEXT NOT NULL,
        record_type TEXT NOT NULL,
        read INTEGER NOT NULL DEFAULT 0,
        events INTEGER NOT NULL DEFAULT 0,
        ignored INTEGER NOT NULL DEFAULT 0,
        folded INTEGER NOT NULL DEFAULT 0,
        not_understood INTEGER NOT NULL DEFAULT 0,
        last_seen TEXT,
        PRIMARY KEY (adapter, version, record_type)
    ) WITHOUT ROWID;
    """,
)

# 19 -> 20: what each request cost (issue 27, store/costs.py): usage_costs, one row per
# usage event, and usage_pricing, the fingerprint of the prices they were computed with
# and how far a re-price got; the usage aggregates sum the costs beside the tokens
# (the groupings' triggers made again with them). No event is read: every stored
# request is not priced yet, which the sums count as unpriced with its total tokens;
# their costs come from the re-price the daemon starts (the store has no fingerprint
# yet), in chunks of their own transactions, with progress in status.
MIGRATIONS.sql(
    "usage_costs",
    costs.TABLES
    + usage_groups.DROP_TRIGGERS
    + aggregates.ADD_COSTS
    + usage_groups.ADD_COSTS
    + "".join(f"UPDATE {t} SET unpriced_tokens = total_tokens; "
              for t in ("agg_usage", "agg_usage_by", "agg_usage_group"))
    + usage_groups.TRIGGERS,
)

# 20 -> 21: the failed commands each session holds, counted on its row (issue 28): the
# web page's "has failed commands" filter was the keys of every session with a failed
# command passed to SQL and each looked up (15,459 of 36,070 sessions at 10 million
# events: 55 ms a page, 17 ms a count). Now a walk of sessions_failed, in the default
# order, or of the sort's index testing the column. Kept by the writer as the other
# counters are (store/writer.py, _count: a claim moves it with the command); filled
# here from events_failed_commands (92,747 rows there: a fraction of a second).
MIGRATIONS.sql(
    "session_failed_commands",
    f"""
    ALTER TABLE sessions ADD COLUMN failed_commands INTEGER NOT NULL DEFAULT 0;
    UPDATE sessions SET failed_commands = f.n FROM (
        SELECT k.id AS id, COUNT(*) AS n
        FROM event_rows e INDEXED BY events_failed_commands
        JOIN session_keys k ON k.key = e.session_key
        WHERE e.kind = 'command' AND {COMMAND_FAILED.replace("data", "e.data")}
        GROUP BY k.id
    ) AS f WHERE sessions.id = f.id;
    -- An UPDATE of sessions leaves the sink's AUTOINCREMENT counter at 0 even when its
    -- trigger does not fire: the same as no row, which a new store has.
    DELETE FROM sqlite_sequence WHERE name = 'sink_sessions' AND seq = 0;
    CREATE INDEX sessions_failed ON sessions(COALESCE(last_event_at, started_at, '') DESC, id)
        WHERE failed_commands > 0;
    """,
)

# 21 -> 22: a path's events by kind and time (store/migrations/chunked.py).
MIGRATIONS.chunked(ADD_PATH_TIMES)

# 22 -> 23: the usage summary's projects kept (issue 28, store/usage_groups.py): the
# unfiltered summary grouped every session's sums by its project at each ask (30 ms at
# 10 million events: the web page's usage page for all time, p99 66 ms). Filled from the
# sessions' rows of agg_usage_by (26,500 there: one statement).
MIGRATIONS.sql(
    "usage_projects",
    usage_groups.PROJECT_TABLE + usage_groups.FILL_PROJECTS + usage_groups.PROJECT_TRIGGERS,
)

# 23 -> 24: events_path dropped (83 MB at 10 million events): a path's pages oldest first
# read their ids from events_path_times (schema 22) and sort those (queries/events._events),
# 1-2 ms at 10 million events as the index in id order gave them, and the store is back
# under its bytes per event (docs/performance.md).
MIGRATIONS.sql("drop_path_index", "DROP INDEX IF EXISTS events_path;")

SCHEMA_VERSION = MIGRATIONS.version
