"""The event store: SQLite (apsw) in WAL mode. All SQL of the project lives here.

The store knows nothing of agent formats. It is given ``Batch`` objects (normalized
records plus the cursors of the files they came from) and commits each in ONE
transaction, so a file's offset never runs ahead of, or behind, its events: a crash at
any instant loses nothing and duplicates nothing. Event keys are hashed into a UNIQUE
column and inserted with ``INSERT OR IGNORE``, so re-reading a file is idempotent.

One writer (the ingest loop) and any number of readers (socket handlers), each with its
own connection. Reads are short so checkpoints are never starved.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import apsw
import orjson

from ..errors import SchemaTooNew
from ..events import (
    COMPACTION,
    ERROR,
    MESSAGE,
    PROMPT,
    TOOL_CALL,
    USAGE,
    Drift,
    Event,
    SessionFacts,
    TurnFacts,
    key_digest,
)
from ..ingest.cursor import Cursor

SCHEMA_VERSION = 3
BUSY_TIMEOUT_MS = 5000
WRITER_CACHE_KIB = 8 * 1024

# Each entry migrates the schema from version i to i+1. Never edit a released entry:
# append a new one.
MIGRATIONS: list[str] = [
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
]

PARTIAL_INDEXED_KINDS = frozenset({"command", "secret", "sensitive_read"})

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
)

USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
    "total_tokens",
)


_COUNTED_KINDS = {
    PROMPT: "prompts",
    MESSAGE: "messages",
    TOOL_CALL: "tool_calls",
    COMPACTION: "compactions",
    ERROR: "errors",
}


@dataclass(slots=True)
class _SessionTally:
    counts: dict[str, int] = field(default_factory=dict)
    subagents: set[str] = field(default_factory=set)
    first_ts: str | None = None
    last_ts: str | None = None


def _part_id(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


key_hash = key_digest


def utc_now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(slots=True)
class DocumentFacts:
    path: str
    agent: str
    project: str | None
    size: int
    sha256: str
    mtime_ns: int | None


@dataclass(slots=True)
class Batch:
    """Everything one transaction commits."""

    events: list[Event] = field(default_factory=list)
    sessions: list[SessionFacts] = field(default_factory=list)
    turns: list[TurnFacts] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    cursors: dict[str, Cursor] = field(default_factory=dict)  # by path
    documents: list[DocumentFacts] = field(default_factory=list)
    gone_documents: list[str] = field(default_factory=list)
    session_sources: set[tuple[str, str]] = field(default_factory=set)  # (session_id, path)
    project_roots: dict[str, str] = field(default_factory=dict)  # session_id -> root
    rows: list[Row] = field(default_factory=list)  # prepared events (see prepare())

    def empty(self) -> bool:
        return not (
            self.events
            or self.rows
            or self.sessions
            or self.turns
            or self.drift
            or self.cursors
            or self.documents
            or self.gone_documents
        )


# A prepared event row: plain values, cheap to pickle (workers send them) and to bind.
# (key_hash, session_id, kind, ts, turn_id, tool, call_id, subagent_id, adapter,
#  source_path, offset, path, data_json)
Row = tuple[
    bytes, str, str, str | None, str | None, str | None, str | None, str | None, str, str,
    int, str | None, bytes,
]
R_KEY: Final = 0
R_SESSION: Final = 1
R_KIND: Final = 2
R_TS: Final = 3
R_SUBAGENT: Final = 7
R_ADAPTER: Final = 8
R_SOURCE: Final = 9
R_DATA: Final = 12


def prepare(batch: Batch) -> None:
    """The pure-Python half of a commit (hashing keys, encoding JSON) into plain rows,
    done before the transaction opens (by a backfill worker, when one has the file).
    The events themselves, with their transient fields (full inputs, contents), are
    dropped: nothing of those is stored."""
    rows = batch.rows
    for ev in batch.events:
        data = ev.data
        if ev.kind == MESSAGE and "part" in data:
            data = {k: v for k, v in data.items() if k != "part"}
            data["parts"] = [_part_id(data.get("text") or "")]
        path = data.get("path")
        rows.append(
            (key_hash(ev.key), ev.session_id, ev.kind, ev.ts, ev.turn_id, ev.tool, ev.call_id,
             ev.subagent_id, ev.adapter, ev.source_path, ev.offset,
             path if isinstance(path, str) else None, orjson.dumps(data))
        )
    batch.events = []


@dataclass(slots=True)
class Inserted:
    """What a commit inserted, in id order: (id, row)."""

    events: list[tuple[int, Row]]

    def __len__(self) -> int:
        return len(self.events)

    def rows(self) -> list[dict[str, Any]]:
        """JSON-ready events, for subscribers (built only when someone listens)."""
        return [
            event_row_to_json((eid, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
                               r[10], r[12]))
            for eid, r in self.events
        ]


def coalesce_facts(facts: list[SessionFacts]) -> list[SessionFacts]:
    """The facts of a batch, one per session, merged with the same rules the database
    applies (first wins, earliest wins, latest wins): one UPDATE per session, not one
    per line that mentioned it."""
    merged: dict[str, SessionFacts] = {}
    for f in facts:
        m = merged.get(f.session_id)
        if m is None:
            merged[f.session_id] = SessionFacts(f.session_id, f.agent, f.native_id)
            m = merged[f.session_id]
        for name in SESSION_FACT_FIELDS:
            value = getattr(f, name)
            if value is None:
                continue
            current = getattr(m, name)
            if current is None:
                setattr(m, name, value)
            elif name in SessionFacts.FIRST_WINS:
                continue
            elif name in SessionFacts.EARLIEST_WINS:
                setattr(m, name, min(current, value))
            elif name == "last_event_at":
                setattr(m, name, max(current, value))
            else:
                setattr(m, name, value)
    return list(merged.values())


def _secure_file(path: Path) -> None:
    with suppress(FileNotFoundError):
        os.chmod(path, 0o600)


def connect(db_path: Path, *, readonly: bool = False) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else (
        apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    )
    conn = apsw.Connection(str(db_path), flags=flags)
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    if not readonly:
        conn.execute("PRAGMA page_size=16384")  # takes effect on a new database only
        conn.execute("PRAGMA journal_mode=WAL")
        # The writer's page cache holds the hot parts of the indexes (the key-hash index
        # is random-access by nature); bounded, so it counts toward the memory budget.
        conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        # Fewer, larger checkpoints during a backfill; the WAL is truncated after each.
        conn.execute("PRAGMA wal_autocheckpoint=4000")
        conn.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


def migrate(conn: apsw.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION. Returns the version found before."""
    (found,) = conn.execute("PRAGMA user_version").fetchone() or (0,)
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema version {found} is newer than this agentsrc ({SCHEMA_VERSION})"
        )
    for version in range(found, SCHEMA_VERSION):
        with conn:
            conn.execute(MIGRATIONS[version])
            conn.execute(f"PRAGMA user_version={version + 1}")
    return int(found)


class Store:
    """The writer side: one per daemon, used from the ingest thread only."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        old_umask = os.umask(0o077)
        try:
            self.conn = connect(db_path)
            migrate(self.conn)
        finally:
            os.umask(old_umask)
        for suffix in ("", "-wal", "-shm"):
            _secure_file(Path(str(db_path) + suffix))
        self._source_ids: dict[str, int] = {}

    def close(self) -> None:
        self.conn.close()

    # ---- cursors ---------------------------------------------------------------

    def load_cursors(self) -> dict[str, Cursor]:
        out: dict[str, Cursor] = {}
        for row in self.conn.execute(
            "SELECT id, path, adapter, mode, dev, ino, size, mtime_ns, offset, head_len,"
            " head_hash, skipping, state, generation, lines, skipped, gone_at FROM sources"
        ):
            (sid, path, adapter, mode, dev, ino, size, mtime_ns, offset, head_len, head_hash,
             skipping, state, generation, lines, skipped, gone_at) = row
            out[path] = Cursor(
                path=path,
                adapter=adapter,
                mode=mode,
                source_id=sid,
                dev=dev,
                ino=ino,
                size=size,
                mtime_ns=mtime_ns,
                offset=offset,
                head_len=head_len,
                head_hash=head_hash,
                skipping=bool(skipping),
                state=orjson.loads(state) if state else None,
                generation=generation,
                lines=lines,
                skipped=orjson.loads(skipped) if skipped else {},
                gone_at=gone_at,
            )
            self._source_ids[path] = sid
        return out

    def _source_id(self, cursor: Cursor) -> int:
        sid = cursor.source_id or self._source_ids.get(cursor.path)
        if sid is None:
            row = self.conn.execute(
                "INSERT INTO sources(path, adapter, mode) VALUES(?,?,?)"
                " ON CONFLICT(path) DO UPDATE SET adapter=excluded.adapter RETURNING id",
                (cursor.path, cursor.adapter, cursor.mode),
            ).fetchone()
            assert row is not None
            sid = int(row[0])
        self._source_ids[cursor.path] = sid
        cursor.source_id = sid
        return sid

    def _save_cursor(self, c: Cursor) -> None:
        sid = self._source_id(c)
        self.conn.execute(
            "UPDATE sources SET adapter=?, mode=?, dev=?, ino=?, size=?, mtime_ns=?, offset=?,"
            " head_len=?, head_hash=?, skipping=?, state=?, generation=?, lines=?, skipped=?,"
            " gone_at=?, updated_at=? WHERE id=?",
            (
                c.adapter,
                c.mode,
                c.dev,
                c.ino,
                c.size,
                c.mtime_ns,
                c.offset,
                c.head_len,
                c.head_hash,
                int(c.skipping),
                orjson.dumps(c.state) if c.state is not None else None,
                c.generation,
                c.lines,
                orjson.dumps(c.skipped).decode(),
                c.gone_at,
                utc_now(),
                sid,
            ),
        )

    # ---- the commit --------------------------------------------------------------

    def commit(self, batch: Batch) -> Inserted:
        """Commit a batch in one transaction. Returns what was newly inserted (not
        ignored as already known); ``Inserted.rows()`` shapes it for subscribers."""
        if batch.events:
            prepare(batch)
        with self.conn:
            for cursor in batch.cursors.values():
                self._source_id(cursor)
            for facts in coalesce_facts(batch.sessions):
                self._merge_session(facts)
            for sid, root in batch.project_roots.items():
                self.conn.execute(
                    "UPDATE sessions SET project_root=? WHERE id=? AND project_root IS NULL",
                    (root, sid),
                )
            for turn in batch.turns:
                self._merge_turn(turn)
            for sid, adapter in {(r[R_SESSION], r[R_ADAPTER]) for r in batch.rows}:
                # Events can arrive before any facts about their session (a subagent
                # file read before its parent): the row must exist for the counters.
                native = sid.split(":", 1)[1] if sid.startswith(adapter + ":") else sid
                self.conn.execute(
                    "INSERT OR IGNORE INTO sessions(id, agent, native_id) VALUES(?,?,?)",
                    (sid, adapter, native),
                )
            tally: dict[str, _SessionTally] = {}
            inserted = self._insert_events(batch, tally)
            self._apply_tally(tally)
            if inserted:
                self.conn.execute(
                    "UPDATE counters SET value = value + ? WHERE name = 'events'",
                    (len(inserted),),
                )
            for session_id, path in batch.session_sources:
                src = self._source_ids.get(path)
                if src is not None:
                    self.conn.execute(
                        "INSERT OR IGNORE INTO session_sources(session_id, source_id) VALUES(?,?)",
                        (session_id, src),
                    )
            for d in batch.drift:
                self.conn.execute(
                    "INSERT INTO drift(adapter, version, record_type, count, last_seen)"
                    " VALUES(?,?,?,1,?) ON CONFLICT(adapter, version, record_type)"
                    " DO UPDATE SET count=count+1, last_seen=excluded.last_seen",
                    (d.adapter, d.version, d.record_type, utc_now()),
                )
            for doc in batch.documents:
                self.conn.execute(
                    "INSERT INTO documents(path, agent, project, size, sha256, mtime_ns,"
                    " gone_at, updated_at) VALUES(?,?,?,?,?,?,NULL,?) ON CONFLICT(path) DO UPDATE"
                    " SET size=excluded.size, sha256=excluded.sha256, mtime_ns=excluded.mtime_ns,"
                    " gone_at=NULL, updated_at=excluded.updated_at",
                    (doc.path, doc.agent, doc.project, doc.size, doc.sha256, doc.mtime_ns, utc_now()),
                )
            for path in batch.gone_documents:
                self.conn.execute(
                    "UPDATE documents SET gone_at=? WHERE path=? AND gone_at IS NULL",
                    (utc_now(), path),
                )
            for cursor in batch.cursors.values():
                self._save_cursor(cursor)
        return inserted

    def _merge_session(self, f: SessionFacts) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO sessions(id, agent, native_id) VALUES(?,?,?)",
            (f.session_id, f.agent, f.native_id),
        )
        sets: list[str] = []
        args: list[Any] = []
        for name in SESSION_FACT_FIELDS:
            value = getattr(f, name)
            if value is None:
                continue
            if name in SessionFacts.FIRST_WINS:
                sets.append(f"{name}=COALESCE({name}, ?)")
            elif name in SessionFacts.EARLIEST_WINS:
                sets.append(f"{name}=MIN(COALESCE({name}, ?), ?)")
                args.append(value)
            elif name == "last_event_at":
                sets.append(f"{name}=MAX(COALESCE({name}, ''), ?)")
            else:
                sets.append(f"{name}=?")
            args.append(value)
        if sets:
            args.append(f.session_id)
            self.conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id=?", args)

    def _merge_turn(self, t: TurnFacts) -> None:
        self.conn.execute(
            "INSERT INTO turns(session_id, turn_id, started_at, ended_at, status, cwd, model)"
            " VALUES(?,?,?,?,?,?,?) ON CONFLICT(session_id, turn_id) DO UPDATE SET"
            " started_at=COALESCE(turns.started_at, excluded.started_at),"
            " ended_at=COALESCE(excluded.ended_at, turns.ended_at),"
            " status=COALESCE(excluded.status, turns.status),"
            " cwd=COALESCE(turns.cwd, excluded.cwd),"
            " model=COALESCE(excluded.model, turns.model)",
            (t.session_id, t.turn_id, t.started_at, t.ended_at, t.status, t.cwd, t.model),
        )

    def _insert_events(self, batch: Batch, tally: dict[str, _SessionTally]) -> Inserted:
        """Insert a batch with one executemany; the rows that were new (not ignored as
        already known) are read back by id."""
        prepared = batch.rows
        if not prepared:
            return Inserted([])
        # AUTOINCREMENT's counter: new ids start right after it.
        row = self.conn.execute(
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)"
        ).fetchone()
        before = int(row[0]) if row else 0
        source_ids = self._source_ids
        for r in prepared:
            if r[R_SOURCE] not in source_ids:
                self._source_id(Cursor(r[R_SOURCE], r[R_ADAPTER], "jsonl"))
        changes_before = self.conn.total_changes()
        self.conn.executemany(
            "INSERT OR IGNORE INTO events(key_hash, session_id, kind, ts, turn_id, tool, call_id,"
            " subagent_id, adapter, source_id, offset, path, data)"
            " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [r[:9] + (source_ids[r[R_SOURCE]],) + r[10:] for r in prepared],
        )
        if self.conn.total_changes() - changes_before == len(prepared):
            # Every row was new: one writer, AUTOINCREMENT, so their ids are consecutive
            # in insertion order and nothing needs to be read back (the common case).
            return self._all_new(prepared, before, tally)
        new_ids = {
            kh: eid
            for eid, kh in self.conn.execute(
                "SELECT id, key_hash FROM events WHERE id > ?", (before,)
            )
        }
        inserted: list[tuple[int, Row]] = []
        for r in prepared:
            eid = new_ids.pop(r[R_KEY], None)  # pop: a key twice in one batch is new once
            if eid is None:
                if r[R_KIND] == MESSAGE:
                    self._merge_message_part(r)
                continue
            self._count(r, tally)
            inserted.append((eid, r))
        return Inserted(inserted)

    def _all_new(
        self, prepared: list[Row], before: int, tally: dict[str, _SessionTally]
    ) -> Inserted:
        inserted = [(before + 1 + i, r) for i, r in enumerate(prepared)]
        for r in prepared:
            self._count(r, tally)
        return Inserted(inserted)

    def _merge_message_part(self, r: Row) -> None:
        """One assistant message written as several lines (one per block): append each
        block's text once. Idempotent: a part already merged is not appended again.
        Parts are identified by their text, so the same conversation replayed into
        another file under new record ids is not appended twice."""
        incoming = orjson.loads(r[R_DATA])
        if "parts" not in incoming:
            return
        row = self.conn.execute(
            "SELECT id, data FROM events WHERE key_hash=?", (r[R_KEY],)
        ).fetchone()
        if row is None:
            return
        data = orjson.loads(row[1])
        parts = data.get("parts") or []
        text = incoming.get("text") or ""
        part = _part_id(text)
        if part in parts:
            return
        parts.append(part)
        if text:
            data["text"] = (data.get("text") + "\n\n" + text) if data.get("text") else text
        data["parts"] = parts
        self.conn.execute("UPDATE events SET data=? WHERE id=?", (orjson.dumps(data), row[0]))

    def _count(self, r: Row, tally: dict[str, _SessionTally]) -> None:
        """Add an inserted event to its session's tally; applied once per batch."""
        t = tally.get(r[R_SESSION])
        if t is None:
            t = tally[r[R_SESSION]] = _SessionTally()
        if r[R_SUBAGENT]:
            t.subagents.add(r[R_SUBAGENT])
        kind = r[R_KIND]
        column = _COUNTED_KINDS.get(kind)
        if column:
            t.counts[column] = t.counts.get(column, 0) + 1
        elif kind == USAGE:
            data = orjson.loads(r[R_DATA])
            for f in USAGE_FIELDS:
                v = data.get(f)
                if isinstance(v, int) and not isinstance(v, bool):
                    t.counts[f] = t.counts.get(f, 0) + v
        ts = r[R_TS]
        if ts:
            if t.first_ts is None or ts < t.first_ts:
                t.first_ts = ts
            if t.last_ts is None or ts > t.last_ts:
                t.last_ts = ts

    def _apply_tally(self, tally: dict[str, _SessionTally]) -> None:
        for sid, t in tally.items():
            for sub in t.subagents:
                self.conn.execute(
                    "INSERT OR IGNORE INTO session_subagents(session_id, subagent_id) VALUES(?,?)",
                    (sid, sub),
                )
            sets = [f"{c}={c}+?" for c in t.counts]
            args: list[Any] = list(t.counts.values())
            if t.last_ts:
                sets.append("last_event_at=MAX(COALESCE(last_event_at,''), ?)")
                args.append(t.last_ts)
            if t.first_ts:
                sets.append("started_at=MIN(COALESCE(started_at, ?), ?)")
                args.extend([t.first_ts, t.first_ts])
            if sets:
                args.append(sid)
                self.conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id=?", args)


# ---- the read side -------------------------------------------------------------------

EVENT_COLUMNS = (
    "e.id, e.session_id, e.kind, e.ts, e.turn_id, e.tool, e.call_id, e.subagent_id,"
    " e.adapter, s.path, e.offset, e.data"
)


def event_row_to_json(row: Sequence[Any]) -> dict[str, Any]:
    (eid, session_id, kind, ts, turn_id, tool, call_id, subagent_id, adapter, source_path,
     offset, data) = row
    out: dict[str, Any] = {
        "id": eid,
        "session_id": session_id,
        "kind": kind,
        "ts": ts,
        "turn_id": turn_id,
        "tool": tool,
        "call_id": call_id,
        "subagent_id": subagent_id,
        "adapter": adapter,
        "source_path": source_path,
        "offset": offset,
    }
    payload = orjson.loads(data) if isinstance(data, bytes | str) else data
    if isinstance(payload, dict):
        for k, v in payload.items():
            if k not in out and k != "parts":
                out[k] = v
    return out


SESSION_COLUMNS = (
    "id, agent, native_id, cwd, model, started_at, last_event_at, title, version, originator,"
    " source, model_provider, parent_session_id, prompts, messages, tool_calls, compactions,"
    " errors, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,"
    " reasoning_tokens, total_tokens, project_root"
)
_SESSION_NAMES = [c.strip() for c in SESSION_COLUMNS.split(",")]


class Reader:
    """Read-only queries, one per socket handler thread. Every method is one short
    read transaction (a long-lived reader would stop WAL checkpoints)."""

    def __init__(self, db_path: Path) -> None:
        self.conn = connect(db_path, readonly=True)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def snapshot(self) -> Iterator[apsw.Connection]:
        with self.conn:
            yield self.conn

    # -- status
    def counts(self) -> dict[str, int]:
        c = self.conn
        files = c.execute("SELECT COUNT(*) FROM sources WHERE gone_at IS NULL").fetchone()
        sessions = c.execute("SELECT COUNT(*) FROM sessions").fetchone()
        events = c.execute("SELECT value FROM counters WHERE name = 'events'").fetchone()
        gone = c.execute("SELECT COUNT(*) FROM sources WHERE gone_at IS NOT NULL").fetchone()
        return {
            "files": int(files[0]) if files else 0,
            "files_gone": int(gone[0]) if gone else 0,
            "sessions": int(sessions[0]) if sessions else 0,
            "events": int(events[0]) if events else 0,
        }

    def event_count(self) -> int:
        row = self.conn.execute("SELECT COUNT(*) FROM events").fetchone()
        return int(row[0]) if row else 0

    def last_event_id(self) -> int:
        """The newest event id (ids increase but have gaps: not a count)."""
        row = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
        return int(row[0]) if row else 0

    def skipped_totals(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for (skipped,) in self.conn.execute("SELECT skipped FROM sources WHERE skipped != '{}'"):
            for k, v in orjson.loads(skipped).items():
                totals[k] = totals.get(k, 0) + int(v)
        return totals

    def drift(self) -> list[dict[str, Any]]:
        return [
            {"adapter": a, "version": v, "record_type": t, "count": n, "last_seen": ls}
            for a, v, t, n, ls in self.conn.execute(
                "SELECT adapter, version, record_type, count, last_seen FROM drift"
                " ORDER BY count DESC, adapter, record_type"
            )
        ]

    def sources(self, path_like: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT path, adapter, mode, size, offset, lines, skipped, generation, gone_at"
            " FROM sources"
        )
        args: tuple[Any, ...] = ()
        if path_like:
            sql += " WHERE path LIKE ?"
            args = (path_like,)
        return [
            {
                "path": p,
                "adapter": a,
                "mode": m,
                "size": s,
                "offset": o,
                "lines": n,
                "skipped": orjson.loads(sk) if sk else {},
                "generation": g,
                "gone_at": gone,
            }
            for p, a, m, s, o, n, sk, g, gone in self.conn.execute(sql + " ORDER BY path", args)
        ]

    # -- sessions
    def _session_dict(self, row: Sequence[Any]) -> dict[str, Any]:
        d = dict(zip(_SESSION_NAMES, row, strict=True))
        sid = d["id"]
        sub = self.conn.execute(
            "SELECT COUNT(*) FROM session_subagents WHERE session_id=?", (sid,)
        ).fetchone()
        d["subagents"] = int(sub[0]) if sub else 0
        states = [
            gone is None
            for (gone,) in self.conn.execute(
                "SELECT s.gone_at FROM session_sources ss JOIN sources s ON s.id=ss.source_id"
                " WHERE ss.session_id=?",
                (sid,),
            )
        ]
        if not states or all(states):
            d["source_state"] = "present"
        elif any(states):
            d["source_state"] = "partial"
        else:
            d["source_state"] = "gone"
        d["tokens"] = {
            f: d.pop(f) for f in USAGE_FIELDS
        }
        return d

    def sessions(
        self,
        *,
        agent: str | None = None,
        limit: int = 50,
        cwd: str | None = None,
        project: str | None = None,
    ) -> list[dict[str, Any]]:
        where: list[str] = []
        args: list[Any] = []
        if agent:
            where.append("agent=?")
            args.append(agent)
        if cwd:
            where.append("cwd=?")
            args.append(cwd)
        if project:
            where.append("(project_root=? OR cwd=?)")
            args.extend([project, project])
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY COALESCE(last_event_at, started_at, '') DESC, id LIMIT ?"
        args.append(limit)
        with self.snapshot():
            rows = list(self.conn.execute(sql, args))
            return [self._session_dict(r) for r in rows]

    def resolve_session(self, ident: str) -> str | None:
        """Accept our id, the agent's native id, or a unique prefix of either."""
        row = self.conn.execute("SELECT id FROM sessions WHERE id=?", (ident,)).fetchone()
        if row:
            return str(row[0])
        rows = list(
            self.conn.execute(
                "SELECT id FROM sessions WHERE native_id=? OR id LIKE ? OR native_id LIKE ?"
                " LIMIT 2",
                (ident, ident + "%", ident + "%"),
            )
        )
        if len(rows) == 1:
            return str(rows[0][0])
        return None

    def session(self, session_id: str) -> dict[str, Any] | None:
        with self.snapshot():
            row = self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            d = self._session_dict(row)
            d["turns"] = [
                {
                    "turn_id": t,
                    "started_at": s,
                    "ended_at": e,
                    "status": st,
                    "cwd": cwd,
                    "model": m,
                }
                for t, s, e, st, cwd, m in self.conn.execute(
                    "SELECT turn_id, started_at, ended_at, status, cwd, model FROM turns"
                    " WHERE session_id=? ORDER BY COALESCE(started_at, ''), turn_id",
                    (session_id,),
                )
            ]
            d["sources"] = [
                {"path": p, "gone": gone is not None, "gone_at": gone}
                for p, gone in self.conn.execute(
                    "SELECT s.path, s.gone_at FROM session_sources ss"
                    " JOIN sources s ON s.id=ss.source_id WHERE ss.session_id=? ORDER BY s.path",
                    (session_id,),
                )
            ]
            d["subagent_ids"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT subagent_id FROM session_subagents WHERE session_id=? ORDER BY 1",
                    (session_id,),
                )
            ]
            d["kinds"] = {
                k: n
                for k, n in self.conn.execute(
                    "SELECT kind, COUNT(*) FROM events WHERE session_id=? GROUP BY kind",
                    (session_id,),
                )
            }
            return d

    # -- events
    def events(
        self,
        *,
        session_id: str | None = None,
        kinds: Sequence[str] | None = None,
        since_id: int = 0,
        limit: int = 100,
        path: str | None = None,
        path_glob: str | None = None,
        call_id: str | None = None,
        extra_where: Sequence[str] = (),
        extra_args: Sequence[Any] = (),
    ) -> list[dict[str, Any]]:
        where = ["e.id > ?"]
        args: list[Any] = [since_id]
        if session_id:
            where.append("e.session_id = ?")
            args.append(session_id)
        if kinds and len(kinds) == 1 and kinds[0] in PARTIAL_INDEXED_KINDS:
            # A literal, so SQLite can use that kind's partial index.
            where.append(f"e.kind = '{kinds[0]}'")
        elif kinds:
            where.append(f"e.kind IN ({','.join('?' * len(kinds))})")
            args.extend(kinds)
        if path:
            where.append("e.path = ?")
            args.append(path)
        if path_glob:
            where.append("e.path GLOB ?")
            args.append(path_glob)
        if call_id:
            where.append("e.call_id = ?")
            args.append(call_id)
        where.extend(extra_where)
        args.extend(extra_args)
        sql = (
            f"SELECT {EVENT_COLUMNS} FROM events e JOIN sources s ON s.id = e.source_id"
            f" WHERE {' AND '.join(where)} ORDER BY e.id LIMIT ?"
        )
        args.append(limit)
        with self.snapshot():
            return [event_row_to_json(r) for r in self.conn.execute(sql, args)]

    def file_events(
        self,
        kind: str,
        path: str | None,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        where, args = _file_event_filters(
            session_id=None, agent=agent, project=project, since_ts=since_ts
        )
        if path:
            clause, pargs = path_filter(path)
            where.append(clause)
            args.extend(pargs)
        return self.events(
            session_id=session_id,
            kinds=[kind],
            since_id=since_id,
            limit=limit,
            extra_where=where,
            extra_args=args,
        )

    def commands(
        self,
        *,
        session_id: str | None = None,
        project: str | None = None,
        failed: bool | None = None,
        exit_code: int | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        where, args = _file_event_filters(
            session_id=None, agent=None, project=project, since_ts=since_ts
        )
        if failed is True:
            where.append(
                "(COALESCE(json_extract(e.data, '$.exit_code'), 0) != 0"
                " OR json_extract(e.data, '$.interrupted') = 1"
            " OR json_extract(e.data, '$.is_error') = 1)"
            )
        elif failed is False:
            where.append("json_extract(e.data, '$.exit_code') = 0")
        if exit_code is not None:
            where.append("json_extract(e.data, '$.exit_code') = ?")
            args.append(exit_code)
        return self.events(
            session_id=session_id,
            kinds=["command"],
            since_id=since_id,
            limit=limit,
            extra_where=where,
            extra_args=args,
        )

    def documents(self) -> list[dict[str, Any]]:
        """Memory files (Codex AGENTS.md and memories/, Claude project memory/): what
        and where, never their content."""
        names = ("path", "agent", "project", "size", "sha256", "gone_at", "updated_at")
        with self.snapshot():
            return [
                dict(zip(names, row, strict=True))
                for row in self.conn.execute(
                    "SELECT path, agent, project, size, sha256, gone_at, updated_at"
                    " FROM documents ORDER BY path"
                )
            ]

    def findings(
        self,
        *,
        session_id: str | None = None,
        path: str | None = None,
        secret_type: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Secret findings, newest last: the JSON contract of a finding."""
        where, args = _file_event_filters(
            session_id=session_id, agent=None, project=project, since_ts=since_ts
        )
        where.insert(0, "e.kind = 'secret' AND e.id > ?")
        args.insert(0, since_id)
        if path:
            clause, pargs = path_filter(path)
            where.append(clause)
            args.extend(pargs)
        if secret_type:
            where.append("json_extract(e.data, '$.type') = ?")
            args.append(secret_type)
        sql = (
            "SELECT e.id, e.session_id, e.ts, e.turn_id, e.call_id, e.tool, e.subagent_id, e.path,"
            " json_extract(e.data, '$.type'), json_extract(e.data, '$.line'),"
            " json_extract(e.data, '$.hash'), json_extract(e.data, '$.label'),"
            " json_extract(e.data, '$.of_kind'),"
            " (SELECT o.id FROM events o WHERE o.key_hash = unhex(json_extract(e.data, '$.of'))),"
            " e.adapter FROM events e"
            f" WHERE {' AND '.join(where)} ORDER BY e.id LIMIT ?"
        )
        args.append(limit)
        names = ("id", "session_id", "ts", "turn_id", "call_id", "tool", "subagent_id", "path",
                 "type", "line", "hash", "label", "of_kind", "event_id", "agent")
        with self.snapshot():
            return [dict(zip(names, row, strict=True)) for row in self.conn.execute(sql, args)]

    def findings_report(self, *, since_ts: str | None = None) -> dict[str, Any]:
        """Counts by type, session and project; sensitive reads; reads outside the
        project whose content carried a secret."""
        since = "AND e.ts >= ?" if since_ts else ""
        args: tuple[Any, ...] = (since_ts,) if since_ts else ()
        with self.snapshot():
            by_type = {
                t: {"findings": n, "distinct_values": d, "sessions": ns}
                for t, n, d, ns in self.conn.execute(
                    "SELECT json_extract(e.data, '$.type') t, COUNT(*),"
                    " COUNT(DISTINCT json_extract(e.data, '$.hash')), COUNT(DISTINCT e.session_id)"
                    f" FROM events e WHERE e.kind = 'secret' {since} GROUP BY t ORDER BY 2 DESC",
                    args,
                )
            }
            by_session = [
                {"session_id": sid, "agent": agent, "cwd": cwd, "project_root": root,
                 "findings": n, "types": sorted(set((types or "").split(",")))}
                for sid, agent, cwd, root, n, types in self.conn.execute(
                    "SELECT e.session_id, s.agent, s.cwd, s.project_root, COUNT(*),"
                    " group_concat(DISTINCT json_extract(e.data, '$.type'))"
                    " FROM events e LEFT JOIN sessions s ON s.id = e.session_id"
                    f" WHERE e.kind = 'secret' {since} GROUP BY e.session_id ORDER BY 5 DESC",
                    args,
                )
            ]
            by_project: dict[str, int] = {}
            for entry in by_session:
                key = entry["project_root"] or entry["cwd"] or "(unknown)"
                by_project[key] = by_project.get(key, 0) + entry["findings"]
            sensitive = [
                {"path": p, "reads": n, "sessions": ns, "last_ts": last}
                for p, n, ns, last in self.conn.execute(
                    "SELECT e.path, COUNT(*), COUNT(DISTINCT e.session_id), MAX(e.ts) FROM events e"
                    f" WHERE e.kind = 'sensitive_read' {since} GROUP BY e.path ORDER BY 2 DESC",
                    args,
                )
            ]
            external = [
                {"path": p, "session_id": sid, "findings": n,
                 "types": sorted(set((types or "").split(",")))}
                for p, sid, n, types in self.conn.execute(
                    "SELECT e.path, e.session_id, COUNT(*),"
                    " group_concat(DISTINCT json_extract(e.data, '$.type')) FROM events e"
                    " WHERE e.kind = 'secret' AND e.path IS NOT NULL"
                    f" {since} AND EXISTS (SELECT 1 FROM events r WHERE r.kind = 'read'"
                    " AND r.session_id = e.session_id AND r.path = e.path"
                    " AND json_extract(r.data, '$.external') = 1)"
                    " GROUP BY e.path, e.session_id ORDER BY 3 DESC",
                    args,
                )
            ]
            total = sum(v["findings"] for v in by_type.values())
        return {
            "findings": total,
            "by_type": by_type,
            "by_session": by_session,
            "by_project": dict(sorted(by_project.items(), key=lambda kv: -kv[1])),
            "sensitive_reads": sensitive,
            "external_reads_with_secrets": external,
        }

    def session_files(self, session_id: str) -> dict[str, Any]:
        """Everything one session read and changed, one row per path, with counts."""
        with self.snapshot():
            rows = list(
                self.conn.execute(
                    "SELECT e.kind, e.path, json_extract(e.data, '$.rel_path'),"
                    " json_extract(e.data, '$.external'), json_extract(e.data, '$.op'),"
                    " COUNT(*), MIN(e.ts), MAX(e.ts) FROM events e"
                    " WHERE e.session_id = ? AND e.kind IN ('read', 'edit') AND e.path IS NOT NULL"
                    " GROUP BY e.kind, e.path, json_extract(e.data, '$.op')"
                    " ORDER BY e.path",
                    (session_id,),
                )
            )
            commands = self.conn.execute(
                "SELECT COUNT(*), SUM(CASE WHEN COALESCE(json_extract(data, '$.exit_code'), 0) != 0"
                " THEN 1 ELSE 0 END) FROM events WHERE session_id = ? AND kind = 'command'",
                (session_id,),
            ).fetchone()
        files: dict[str, dict[str, Any]] = {}
        for kind, path, rel, external, op, n, first, last in rows:
            f = files.setdefault(
                path,
                {
                    "path": path,
                    "rel_path": rel,
                    "external": bool(external),
                    "reads": 0,
                    "edits": 0,
                    "ops": {},
                    "first_ts": first,
                    "last_ts": last,
                },
            )
            if kind == "read":
                f["reads"] += n
            else:
                f["edits"] += n
            f["ops"][op or kind] = f["ops"].get(op or kind, 0) + n
            f["first_ts"] = min(x for x in (f["first_ts"], first) if x) if (f["first_ts"] or first) else None
            f["last_ts"] = max(x for x in (f["last_ts"], last) if x) if (f["last_ts"] or last) else None
        out = sorted(files.values(), key=lambda f: f["path"])
        return {
            "session_id": session_id,
            "files": out,
            "read_files": sum(1 for f in out if f["reads"]),
            "edited_files": sum(1 for f in out if f["edits"]),
            "external_reads": sum(1 for f in out if f["reads"] and f["external"]),
            "commands": int(commands[0] or 0) if commands else 0,
            "failed_commands": int(commands[1] or 0) if commands else 0,
        }


# ---- file, command and finding queries (the read side of derive.py and scan.py) ----------

_GLOB_CHARS = frozenset("*?[")


def is_windows_style(path: str) -> bool:
    return (len(path) > 2 and path[1] == ":" and path[0].isalpha()) or path.lower().startswith(
        "/mnt/"
    )


def path_filter(path: str) -> tuple[str, list[Any]]:
    """SQL matching a path given as absolute, project-relative or glob. Windows-style
    paths (C:\\..., /mnt/c/...) match case-insensitively, as their filesystems do."""
    if any(c in _GLOB_CHARS for c in path):
        if path.startswith("/") or is_windows_style(path):
            return "(e.path GLOB ? OR lower(e.path) GLOB lower(?))", [path, path]
        return (
            "(json_extract(e.data, '$.rel_path') GLOB ? OR e.path GLOB ?)",
            [path, "*/" + path],
        )
    if path.startswith("/") or is_windows_style(path):
        if is_windows_style(path):
            return "lower(e.path) = lower(?)", [path]
        return "e.path = ?", [path]
    rel = path[2:] if path.startswith("./") else path
    return "(json_extract(e.data, '$.rel_path') = ? OR e.path LIKE ? ESCAPE '\\')", [
        rel,
        "%/" + rel.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),
    ]


def _file_event_filters(
    *,
    session_id: str | None,
    agent: str | None,
    project: str | None,
    since_ts: str | None,
) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if session_id:
        where.append("e.session_id = ?")
        args.append(session_id)
    if agent:
        where.append("e.adapter = ?")
        args.append(agent)
    if project:
        where.append(
            "(json_extract(e.data, '$.project_root') = ? OR e.session_id IN"
            " (SELECT id FROM sessions WHERE project_root = ? OR cwd = ?))"
        )
        args.extend([project, project, project])
    if since_ts:
        where.append("e.ts >= ?")
        args.append(since_ts)
    return where, args
