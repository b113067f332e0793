"""The store's side of the ClickHouse sink (agentsrc_daemon/sink/): its position, its
change feeds, and the rows it sends, shaped by SQLite itself.

The position (``sink_state``: the last event id the server acknowledged) and the feeds
(``sink_sessions``, ``sink_revised``, filled by triggers, see schema 7) are written on
the ingest thread, the store's only writer, each save in a short transaction of its own
(``save``); the sink thread only reads, on its own read-only connection (``SinkFeed``).

Rows leave as JSONEachRow lines built by ``json_object`` in the SELECT: SQLite builds
them in C while apsw has released the GIL, so the sink's thread barely competes with
ingest for it, and Python never holds a dict per row. Every value is a plain JSON
number or string (no nulls, except ``exit_code``): the oldest ClickHouse the sink
supports refuses a null for a column that is not Nullable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import apsw
import orjson

from .batch import utc_now
from .connection import connect

# ts (ISO 8601 text) -> epoch milliseconds, 0 when absent or unreadable.
# Clamped to what a DateTime holds (1970 to 2106): a value the server cannot parse
# would hold the whole batch back.
_TS_MS = (
    "MIN(4294967295000, MAX(0, COALESCE("
    "CAST(ROUND((julianday({ts}) - 2440587.5) * 86400000.0) AS INTEGER), 0)))"
)


def _ts_ms(column: str) -> str:
    return _TS_MS.format(ts=column)


def _j(path: str) -> str:
    # ``e.d`` is the data as TEXT (see _FROM): SQLite then parses it once per row for
    # all the fields (its JSON cache), where a BLOB would be parsed for each.
    return f"json_extract(e.d, '$.{path}')"


def _jt(path: str) -> str:
    """A text field of the event's data, '' when absent."""
    return f"COALESCE(CAST({_j(path)} AS TEXT), '')"


def _jn(path: str) -> str:
    """A count of the event's data, 0 when absent (or not a count)."""
    return f"MAX(0, COALESCE(CAST({_j(path)} AS INTEGER), 0))"


def _when(kinds: str, expr: str, default: str) -> str:
    """``expr`` for events of ``kinds`` (an SQL list), else ``default``: each field is
    read only where it can be."""
    return f"CASE WHEN e.kind IN ({kinds}) THEN {expr} ELSE {default} END"


_FILE_KINDS = "'read', 'edit', 'sensitive_read'"
_RUN_KINDS = "'command', 'tool_result'"
_TEXT_KINDS = "'prompt', 'message'"
_FAILED = (
    f"(COALESCE({_j('exit_code')}, 0) != 0 OR {_j('interrupted')} = 1 OR {_j('is_error')} = 1)"
)


# A row's version (ReplacingMergeTree keeps the highest of one identity): the sink's
# clock, milliseconds, only ever growing. The sink always sends an event's current
# state (a higher revision's data, its current owner), so the last row sent is the one
# to keep; a revision (Claude: a count, OpenCode: a time in ms) is no part of it.
_VERSION = ":clock"


def _usage(field: str) -> tuple[str, str]:
    return (field, _when("'usage'", _jn(field), "0"))


def _usd(nano: str) -> str:
    """Dollars from whole nano-dollars (never negative) as the socket shows them: to
    the micro-dollar, half to even (store/costs.usd; SQLite's ROUND goes half up)."""
    micro = f"({nano} / 1000 + ({nano} % 1000 > 500 OR ({nano} % 1000 = 500 AND {nano} / 1000 % 2 = 1)))"
    return f"({micro} / 1e6)"


# The events row: (ClickHouse column, SQL expression). Parameters :host, :user,
# :pushed_at (the time of sending), :text (1 at level "text"). Text (prompts, answers, error messages) only at level text; tool
# inputs and outputs never (only a command's line, a file's path, an output's size).
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("host", ":host"),
    ("user", ":user"),
    ("key", "lower(hex(e.key_hash))"),
    ("id", "e.id"),
    ("session_id", "e.session_id"),
    ("agent", "e.adapter"),
    ("kind", "e.kind"),
    ("ts", f"{_ts_ms('e.ts')} / 1000"),
    ("ts_ms", _ts_ms("e.ts")),
    ("turn_id", "COALESCE(e.turn_id, '')"),
    ("tool", "COALESCE(e.tool, '')"),
    ("call_id", "COALESCE(e.call_id, '')"),
    ("subagent_id", "COALESCE(e.subagent_id, '')"),
    ("path", "COALESCE(e.path, '')"),
    ("rel_path", _when(_FILE_KINDS, _jt("rel_path"), "''")),
    ("project_root", _when(_FILE_KINDS, _jt("project_root"), "''")),
    ("external", _when(_FILE_KINDS, f"CASE WHEN {_j('external')} = 1 THEN 1 ELSE 0 END", "0")),
    ("op", _when(_FILE_KINDS, _jt("op"), "''")),
    ("command", _when("'command'", _jt("command"), "''")),
    ("cwd", _when("'command'", _jt("cwd"), "''")),
    ("exit_code", _when(_RUN_KINDS, f"CAST({_j('exit_code')} AS INTEGER)", "NULL")),
    ("failed", _when(_RUN_KINDS, f"CASE WHEN {_FAILED} THEN 1 ELSE 0 END", "0")),
    ("interrupted", _when(_RUN_KINDS, f"CASE WHEN {_j('interrupted')} = 1 THEN 1 ELSE 0 END", "0")),
    ("is_error", _when(_RUN_KINDS, f"CASE WHEN {_j('is_error')} = 1 THEN 1 ELSE 0 END", "0")),
    ("duration_ms", _when(_RUN_KINDS, _jn("duration_ms"), "0")),
    ("output_chars", _when("'tool_result'", _jn("output_chars"), "0")),
    # A usage event names its model when the agent wrote one; else the session's.
    ("model", _when("'usage'", f"COALESCE({_j('model')}, (SELECT s.model FROM sessions s"
                               " WHERE s.id = e.session_id), '')", "''")),
    _usage("input_tokens"),
    _usage("output_tokens"),
    _usage("cache_read_tokens"),
    _usage("cache_creation_tokens"),
    _usage("reasoning_tokens"),
    _usage("total_tokens"),
    # Its cost (schema 2); a request not priced yet (a re-price to come) is unpriced.
    ("cost_usd", _usd("e.c_nusd")),
    ("cost_kind", "COALESCE(e.c_kind, 'unpriced')"),
    ("estimated_usd", _usd("e.c_est")),
    ("unpriced_tokens", f"COALESCE(e.c_ut, {_jn('total_tokens')})"),
    ("status", _when("'turn_end'", _jt("status"), "''")),
    ("error_type", _when("'error'", _jt("error_type"), "''")),
    ("secret_type", _when("'secret'", _jt("type"), "''")),
    ("text", f"CASE WHEN :text AND e.kind IN ({_TEXT_KINDS}) THEN {_jt('text')}"
             f" WHEN :text AND e.kind = 'error' THEN {_jt('message')} ELSE '' END"),
    ("text_chars", _when(_TEXT_KINDS, f"COALESCE(CAST({_j('text_chars')} AS INTEGER),"
                                      f" length({_j('text')}), 0)", "0")),
    ("revision", "MAX(0, e.revision)"),
    ("version", _VERSION),
    ("pushed_at", ":pushed_at"),
)

# The findings row (secret events): type, keyed hash, where; never the value.
FINDING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("host", ":host"),
    ("user", ":user"),
    ("key", "lower(hex(e.key_hash))"),
    ("id", "e.id"),
    ("session_id", "e.session_id"),
    ("agent", "e.adapter"),
    ("ts", f"{_ts_ms('e.ts')} / 1000"),
    ("ts_ms", _ts_ms("e.ts")),
    ("turn_id", "COALESCE(e.turn_id, '')"),
    ("call_id", "COALESCE(e.call_id, '')"),
    ("tool", "COALESCE(e.tool, '')"),
    ("path", "COALESCE(e.path, '')"),
    ("secret_type", _jt("type")),
    ("hash", _jt("hash")),
    ("line", _jn("line")),
    ("label", _jt("label")),
    ("of_kind", _jt("of_kind")),
    ("of_key", f"lower({_jt('of')})"),
    ("revision", "MAX(0, e.revision)"),
    ("version", _VERSION),
    ("pushed_at", ":pushed_at"),
)

_SESSION_KIND = (
    "(CASE WHEN COALESCE(b.responses, 0) = 0 THEN 'unpriced'"
    " WHEN b.cost_estimated = b.responses THEN 'estimated'"
    " WHEN b.cost_reported = b.responses THEN 'reported'"
    " WHEN b.cost_estimated + b.cost_reported = 0 THEN 'unpriced' ELSE 'mixed' END)"
)

# The sessions row; its version (the clock) orders a session's successive rows.
SESSION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("host", ":host"),
    ("user", ":user"),
    ("session_id", "s.id"),
    ("agent", "s.agent"),
    ("native_id", "s.native_id"),
    ("cwd", "COALESCE(s.cwd, '')"),
    ("project_root", "COALESCE(s.project_root, '')"),
    ("model", "COALESCE(s.model, '')"),
    ("model_provider", "COALESCE(s.model_provider, '')"),
    ("agent_version", "COALESCE(s.version, '')"),
    ("originator", "COALESCE(s.originator, '')"),
    ("source", "COALESCE(s.source, '')"),
    ("parent_session_id", "COALESCE(s.parent_session_id, '')"),
    # Titles are often a prompt's first line: text, sent only at level text.
    ("title", "CASE WHEN :text THEN COALESCE(s.title, '') ELSE '' END"),
    ("started_at", f"{_ts_ms('s.started_at')} / 1000"),
    ("last_event_at", f"{_ts_ms('s.last_event_at')} / 1000"),
    ("prompts", "s.prompts"),
    ("messages", "s.messages"),
    ("tool_calls", "s.tool_calls"),
    ("compactions", "s.compactions"),
    ("errors", "s.errors"),
    ("input_tokens", "s.input_tokens"),
    ("output_tokens", "s.output_tokens"),
    ("cache_read_tokens", "s.cache_read_tokens"),
    ("cache_creation_tokens", "s.cache_creation_tokens"),
    ("reasoning_tokens", "s.reasoning_tokens"),
    ("total_tokens", "s.total_tokens"),
    ("subagents", "(SELECT COUNT(*) FROM session_subagents sa WHERE sa.session_id = s.id)"),
    # Its cost (schema 2), from the usage groupings' row of the session (``b``): the
    # kind of its requests' costs, as store/costs.cost_json says it; a session with no
    # usage recorded is unpriced.
    ("cost_usd", f"CASE WHEN {_SESSION_KIND} = 'unpriced' THEN NULL"
                 f" ELSE {_usd('b.cost_nusd')} END"),
    ("cost_kind", _SESSION_KIND),
    ("estimated_usd", f"CASE WHEN b.cost_reported > 0 THEN {_usd('b.est_nusd')} END"),
    ("unpriced_tokens", "COALESCE(b.unpriced_tokens, 0)"),
    ("version", ":clock"),
    ("pushed_at", ":pushed_at"),
)


def _json_object(columns: tuple[tuple[str, str], ...]) -> str:
    return "json_object(" + ", ".join(f"'{name}', {expr}" for name, expr in columns) + ")"


# The columns every event row has; the others only for the kinds they describe. A
# column a row omits takes its type's zero ('' or 0; NULL for exit_code) on the server:
# rows are half as long, cheaper to build, send and parse.
_COMMON = ("host", "user", "key", "id", "session_id", "agent", "kind", "ts", "ts_ms", "turn_id",
           "tool", "call_id", "subagent_id", "revision", "version", "pushed_at")
_RUN = ("exit_code", "failed", "interrupted", "is_error", "duration_ms")
_FILE = ("path", "rel_path", "project_root", "external", "op")
KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "usage": ("model", "input_tokens", "output_tokens", "cache_read_tokens",
              "cache_creation_tokens", "reasoning_tokens", "total_tokens", "cost_usd",
              "cost_kind", "estimated_usd", "unpriced_tokens"),
    "command": ("command", "cwd", *_RUN),
    "tool_result": (*_RUN, "output_chars"),
    "read": _FILE,
    "edit": _FILE,
    "sensitive_read": _FILE,
    "secret": ("path", "secret_type"),
    "prompt": ("text", "text_chars"),
    "message": ("text", "text_chars"),
    "error": ("error_type", "text"),
    "turn_end": ("status",),
}


def _event_object() -> str:
    by_name = dict(EVENT_COLUMNS)
    common = [(n, by_name[n]) for n in _COMMON]
    branches = " ".join(
        f"WHEN '{kind}' THEN {_json_object(tuple(common + [(n, by_name[n]) for n in extra]))}"
        for kind, extra in KIND_COLUMNS.items()
    )
    # Other kinds carry a path when they have one (a derived event of another kind).
    rest = _json_object(tuple(common + [("path", by_name["path"])]))
    return f"CASE e.kind {branches} ELSE {rest} END"


# Events with their data as text, ``d`` (see _j), and a usage event's cost
# (store/costs.py): ``c_nusd``, ``c_kind``, ``c_est``, ``c_ut`` (none before it is priced).
_FROM = (
    "(SELECT events.*, CAST(data AS TEXT) AS d, c.nusd c_nusd, c.kind c_kind,"
    " c.est_nusd c_est, c.unpriced_tokens c_ut FROM events"
    " LEFT JOIN usage_costs c ON c.event_id = events.id {where}) e"
)
_EVENTS_AFTER = (
    f"SELECT e.id, e.kind, {_event_object()} FROM "
    + _FROM.format(where="WHERE id > :after ORDER BY id LIMIT :limit")
)
_EVENTS_REVISED = (
    f"SELECT r.seq, e.id, e.kind, {_event_object()} FROM sink_revised r JOIN "
    + _FROM.format(where="")
    + " ON e.id = r.event_id WHERE r.seq > :after ORDER BY r.seq LIMIT :limit"
)
_FINDINGS_OF = (
    f"SELECT {_json_object(FINDING_COLUMNS)} FROM "
    + _FROM.format(where="WHERE id IN (SELECT value FROM json_each(:ids))")
    + " ORDER BY e.id"
)
_SESSIONS_CHANGED = (
    f"SELECT d.seq, {_json_object(SESSION_COLUMNS)} FROM sink_sessions d"
    " JOIN sessions s ON s.id = d.session_id LEFT JOIN agg_usage_by b ON b.dim = 'session'"
    " AND b.value = X'' AND b.session_id = s.id WHERE d.seq > :after ORDER BY d.seq LIMIT :limit"
)


@dataclass(slots=True)
class Position:
    """Where the sink is: the acknowledged event id, and how far it consumed the feeds
    (the feeds' entries up to these are pushed; deleted when the ack is saved)."""

    target: str
    hwm: int = 0
    clock: int = 0
    sessions_seq: int = 0
    revised_seq: int = 0
    # Events up to hwm (counted once at start, then kept): the lag in events is the
    # store's count less this, with no scan of the rows behind (status is polled).
    events_upto: int = 0


@dataclass(slots=True)
class Work:
    """One push: JSONEachRow lines per table, and the position once they are acked."""

    events: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    upto: Position | None = None
    full: bool = False  # a limit was reached: more is waiting
    nbytes: int = 0

    def empty(self) -> bool:
        return not (self.events or self.findings or self.sessions)


# ---- the writer's side (the ingest thread) --------------------------------------------


def open_target(conn: apsw.Connection, target: str) -> Position:
    """The position for ``target``, on start. Another target (a new server, database,
    labels or level), or none yet: start from the beginning, every session marked."""
    with conn:
        row = conn.execute(
            "SELECT hwm, clock FROM sink_state WHERE target = ?", (target,)
        ).fetchone()
        if row is not None:
            position = Position(target, int(row[0]), int(row[1]))
            (n,) = conn.execute("SELECT COUNT(*) FROM events WHERE id <= ?",
                                (position.hwm,)).fetchone() or (0,)
            position.events_upto = int(n)
        else:
            # The clock keeps growing across targets.
            old = conn.execute("SELECT MAX(clock) FROM sink_state").fetchone()
            position = Position(target, 0, int(old[0] or 0) if old else 0)
            _clear(conn)
            conn.execute(
                "INSERT INTO sink_state(target, hwm, clock) VALUES(?, 0, ?)",
                (target, position.clock),
            )
            conn.execute("INSERT INTO sink_sessions(session_id) SELECT id FROM sessions ORDER BY id")
    return position


def forget(conn: apsw.Connection) -> None:
    """No sink configured: drop any position, so the triggers stop filling the feeds."""
    if conn.execute("SELECT 1 FROM sink_state LIMIT 1").fetchone() is None:
        return
    with conn:
        _clear(conn)


def _clear(conn: apsw.Connection) -> None:
    conn.execute("DELETE FROM sink_state")
    conn.execute("DELETE FROM sink_sessions")
    conn.execute("DELETE FROM sink_revised")


def save(conn: apsw.Connection, pos: Position) -> None:
    """An acknowledged push: the position and the feeds' consumed entries, in one short
    transaction of its own."""
    with conn:
        conn.execute(
            "UPDATE sink_state SET hwm = MAX(hwm, ?), clock = MAX(clock, ?),"
            " acked_at = ? WHERE target = ?",
            (pos.hwm, pos.clock, utc_now(), pos.target),
        )
        if pos.sessions_seq:
            conn.execute("DELETE FROM sink_sessions WHERE seq <= ?", (pos.sessions_seq,))
        if pos.revised_seq:
            conn.execute("DELETE FROM sink_revised WHERE seq <= ?", (pos.revised_seq,))


# ---- the reader's side (the sink thread, and status) ----------------------------------


def lag(conn: apsw.Connection, events_upto: int) -> dict[str, int]:
    """What is committed and not yet acknowledged (one short read; the feeds are small:
    one entry per session or revised event at most)."""
    with conn:
        events = conn.execute("SELECT value FROM counters WHERE name = 'events'").fetchone()
        sessions = conn.execute("SELECT COUNT(*) FROM sink_sessions").fetchone()
        revised = conn.execute("SELECT COUNT(*) FROM sink_revised").fetchone()
    return {
        "events": max(0, (int(events[0]) if events else 0) - events_upto),
        "sessions": int(sessions[0]) if sessions else 0,
        "revised": int(revised[0]) if revised else 0,
    }


class SinkFeed:
    """The sink thread's read-only connection: what to push next, in one read
    transaction (so an event and its revisions are seen consistently)."""

    def __init__(self, db_path: Path) -> None:
        self.conn = connect(db_path, readonly=True)

    def close(self) -> None:
        self.conn.close()

    # Over 60 lines: the three feeds read in one read transaction, the position moved
    # past each as it is read; apart, the transaction would be held across calls.
    def next_work(
        self,
        pos: Position,
        *,
        host: str,
        user: str,
        text: bool,
        max_rows: int,
        max_bytes: int,
        clock: int,
    ) -> Work:
        """The rows after ``pos``, up to ``max_rows`` events (and their findings) or
        ``max_bytes`` of JSON; then revised events and changed sessions. ``clock`` (above
        ``pos.clock``) is what the rows' versions are made of. Long on purpose: the
        three reads share one snapshot and one running byte budget, in this order."""
        # pushed_at: sent, not defaulted by the server (18.16 fills an omitted column of
        # JSONEachRow with the type's zero, not its DEFAULT expression).
        params = {"host": host, "user": user, "text": 1 if text else 0,
                  "pushed_at": int(time.time()), "clock": clock}
        work = Work()
        upto = replace(pos)
        secret_ids: list[int] = []
        with self.conn:
            hwm = pos.hwm
            n = 0
            for eid, kind, row in self.conn.execute(
                _EVENTS_AFTER, {**params, "after": pos.hwm, "limit": max_rows}
            ):
                work.events.append(row)
                work.nbytes += len(row) + 1
                hwm = eid
                n += 1
                if kind == "secret":
                    secret_ids.append(eid)
                if work.nbytes >= max_bytes:
                    break
            work.full = n >= max_rows or work.nbytes >= max_bytes
            upto.hwm = hwm
            upto.events_upto += n
            # Revised events: those pushed before (id <= pos.hwm) go again with their
            # latest data; a later one goes (or went, just above) with the latest data
            # read in this same transaction.
            revised = 0
            for seq, eid, kind, row in self.conn.execute(
                _EVENTS_REVISED, {**params, "after": pos.revised_seq, "limit": max_rows}
            ):
                revised += 1
                upto.revised_seq = seq
                if eid <= pos.hwm:
                    work.events.append(row)
                    work.nbytes += len(row) + 1
                    if kind == "secret":
                        secret_ids.append(eid)
            work.full = work.full or revised >= max_rows
            if secret_ids:
                work.findings = [
                    r for (r,) in self.conn.execute(
                        _FINDINGS_OF, {**params, "ids": orjson.dumps(secret_ids).decode()}
                    )
                ]
            sessions_limit = max(1, max_rows // 10)
            for seq, row in self.conn.execute(
                _SESSIONS_CHANGED,
                {**params, "after": pos.sessions_seq, "limit": sessions_limit},
            ):
                upto.sessions_seq = seq
                work.sessions.append(row)
                work.nbytes += len(row) + 1
            work.full = work.full or len(work.sessions) >= sessions_limit
        if not work.empty():
            upto.clock = clock
        work.upto = upto
        return work
