"""The schema at its current version, written once: a new database is created from it
in one transaction (``create``), not migrated through every version before it (the
migrations are for stores that exist). tests/test_migrations.py proves it the same as an
empty database migrated through every migration (tables, indexes, views, triggers,
columns, the rows the migrations leave, the version), so the two cannot drift: a new
migration changes this text too, and ``VERSION`` with it."""

from __future__ import annotations

import apsw

from .. import aggregates, costs, usage_groups
from ..vocabulary import COMMAND_FAILED, PATH_TAIL, PROJECT_KINDS, PROJECT_ROOT
from .chunked import EVENT_COPIES_VIEW, EVENTS_VIEW, SINK_EVENT_REVISED, TURNS_VIEW

# The version this schema is (store/migrations/versions.py's SCHEMA_VERSION).
VERSION = 24

_CORE = """
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
    state BLOB,                          -- adapter state (JSON, packed), same transaction as events
    generation INTEGER NOT NULL DEFAULT 0,  -- times the file was re-read from 0
    lines INTEGER NOT NULL DEFAULT 0,
    skipped TEXT NOT NULL DEFAULT '{{}}',  -- counters of skipped lines by reason (JSON)
    gone_at TEXT,                        -- set when the file disappeared
    first_seen TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
    updated_at TEXT
);
CREATE INDEX sources_gone ON sources(id, gone_at) WHERE gone_at IS NOT NULL;
CREATE INDEX sources_present ON sources(gone_at) WHERE gone_at IS NULL;
CREATE INDEX sources_skipping ON sources(skipped) WHERE skipped != '{{}}';

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
    total_tokens INTEGER NOT NULL DEFAULT 0,
    project_root TEXT, spawned_as TEXT, replayed_in TEXT, own_record INTEGER,
    failed_commands INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_parent ON sessions(parent_session_id)
    WHERE parent_session_id IS NOT NULL;
CREATE INDEX sessions_by_last ON sessions(COALESCE(last_event_at, started_at, '') DESC, id);
CREATE INDEX sessions_by_started ON sessions(COALESCE(started_at, '') DESC, id);
CREATE INDEX sessions_by_tokens ON sessions(total_tokens DESC, id);
CREATE INDEX sessions_by_tools ON sessions(tool_calls DESC, id);
CREATE INDEX sessions_project ON sessions(project_root) WHERE project_root IS NOT NULL;
CREATE INDEX sessions_cwd ON sessions(cwd) WHERE cwd IS NOT NULL;
CREATE INDEX sessions_by_model
    ON sessions(model, COALESCE(last_event_at, started_at, '') DESC, id)
    WHERE model IS NOT NULL;
CREATE INDEX sessions_by_agent ON sessions(agent, COALESCE(last_event_at, started_at, '') DESC, id);
CREATE INDEX sessions_failed ON sessions(COALESCE(last_event_at, started_at, '') DESC, id)
    WHERE failed_commands > 0;
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
CREATE TABLE spawn_points (
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    at TEXT NOT NULL,
    cwd TEXT,
    PRIMARY KEY (session_id, kind, at)
) WITHOUT ROWID;

CREATE TABLE session_keys (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE TABLE turn_keys (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE TABLE adapter_keys (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);

-- The events as stored; read through the view ``events``. session_id, turn_id and
-- adapter are the old text columns, empty (schema 16: the keys hold them).
CREATE TABLE event_rows (
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
    packed BLOB NOT NULL,  -- JSON, packed (store/packing.py)
    revision INTEGER NOT NULL DEFAULT 0,
    claim INTEGER NOT NULL DEFAULT 2,
    claim_since TEXT,
    holder TEXT,
    data BLOB GENERATED ALWAYS AS (unpack(packed)) VIRTUAL,
    session_key INTEGER,
    turn_key INTEGER,
    adapter_key INTEGER
);
CREATE INDEX events_path_times ON event_rows(path, kind, COALESCE(ts, '')) WHERE path IS NOT NULL;
CREATE INDEX events_session ON event_rows(session_key) WHERE session_key IS NOT NULL;
CREATE INDEX events_commands ON event_rows(id) WHERE kind = 'command';
CREATE INDEX events_secrets ON event_rows(id) WHERE kind = 'secret';
CREATE INDEX events_sensitive ON event_rows(id) WHERE kind = 'sensitive_read';
CREATE INDEX events_reads ON event_rows(id) WHERE kind = 'read';
CREATE INDEX events_edits ON event_rows(id) WHERE kind = 'edit';
CREATE INDEX events_usage ON event_rows(id) WHERE kind = 'usage';
CREATE INDEX events_prompts ON event_rows(id) WHERE kind = 'prompt';
CREATE INDEX events_reads_by_time ON event_rows(COALESCE(ts, '')) WHERE kind = 'read';
CREATE INDEX events_edits_by_time ON event_rows(COALESCE(ts, '')) WHERE kind = 'edit';
CREATE INDEX events_commands_by_time ON event_rows(COALESCE(ts, '')) WHERE kind = 'command';
CREATE INDEX events_secrets_by_time ON event_rows(COALESCE(ts, '')) WHERE kind = 'secret';
CREATE INDEX events_path_tails ON event_rows(lower({path_tail}), kind)
    WHERE kind = 'read' OR kind = 'edit';
CREATE INDEX events_exit_codes ON event_rows(json_extract(data, '$.exit_code'))
    WHERE kind = 'command';
CREATE INDEX events_failed_commands ON event_rows(id)
    WHERE kind = 'command' AND {command_failed};
CREATE INDEX events_secret_types ON event_rows(json_extract(data, '$.type'))
    WHERE kind = 'secret';
CREATE INDEX events_report_day ON event_rows(kind, substr(ts, 1, 10))
    WHERE kind IN ('usage', 'secret', 'sensitive_read');
CREATE INDEX events_reads_by_session ON event_rows(id, session_key) WHERE kind = 'read';
CREATE INDEX events_edits_by_session ON event_rows(id, session_key) WHERE kind = 'edit';
CREATE INDEX events_commands_by_session ON event_rows(id, session_key) WHERE kind = 'command';
CREATE INDEX events_project_roots ON event_rows({project_root}, kind, id)
    WHERE ({project_kinds}) AND {project_root} IS NOT NULL;
-- The sessions holding a copy of an event they do not own, and each session's turns.
CREATE TABLE event_copy_rows (
    event_id INTEGER NOT NULL, session_key INTEGER NOT NULL, turn_key INTEGER,
    subagent_id TEXT, PRIMARY KEY (event_id, session_key)
) WITHOUT ROWID;
CREATE INDEX event_copies_session ON event_copy_rows(session_key, event_id);
CREATE TABLE turn_rows (
    session_key INTEGER NOT NULL, turn_key INTEGER NOT NULL,
    started_at TEXT, ended_at TEXT, status TEXT, cwd TEXT, model TEXT,
    PRIMARY KEY (session_key, turn_key)
) WITHOUT ROWID;

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
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;

CREATE VIRTUAL TABLE search_index USING fts5(
    body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
);
CREATE TABLE search_titles (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    title TEXT
);

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
""".format(
    path_tail=PATH_TAIL,
    command_failed=COMMAND_FAILED,
    project_root=PROJECT_ROOT,
    project_kinds=" OR ".join(f"kind = {k!r}" for k in PROJECT_KINDS),
)

# The rows the migrations leave in an empty store: the events' counter and the search
# index's build marks (nothing to build), and FTS5's automerge off (schema 15: the
# ingest loop merges the index in steps).
_ROWS = """
INSERT INTO counters(name, value) VALUES
    ('events', 0), ('search_target', 0), ('search_done', 0), ('search_titles_done', 0);
INSERT INTO search_index(search_index, rank) VALUES('automerge', 0);
"""

SCHEMA = "".join((
    _CORE,
    f"{EVENTS_VIEW};\n{EVENT_COPIES_VIEW};\n{TURNS_VIEW};\n{SINK_EVENT_REVISED}",
    # The reports' aggregates (store/aggregates.py, store/usage_groups.py), as those
    # modules write them.
    aggregates.TABLES,
    usage_groups.TABLES,
    usage_groups.TRIGGERS,
    usage_groups.PROJECT_TABLE,
    usage_groups.PROJECT_TRIGGERS,
    # The requests' costs (store/costs.py).
    costs.TABLES,
    _ROWS,
))


def is_new(conn: apsw.Connection) -> bool:
    """A database with nothing in it yet (a file just made, or none)."""
    return conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchone() is None


def create(conn: apsw.Connection) -> None:
    """A new database made at VERSION in one transaction."""
    with conn:
        conn.execute(SCHEMA)
        conn.execute(f"PRAGMA user_version={VERSION}")
