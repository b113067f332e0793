"""What is happening now, and how many sessions a listing's filters match: the queries
of ``sessions.live`` and ``sessions.count`` (the web page's "now" and sessions pages),
and the two session filters ``sessions.list`` shares with ``sessions.count``.

``sessions.live`` lists the sessions active since a moment (sessions.list's rows, by
their last event) with what each is doing: its latest turn, the latest prompt (cut to
``PROMPT_CHARS``) and the latest tool call. Each of those is a walk back along the
session's own events (``events_session``) to the first row of the kind, so the cost is
a few index steps per session, whatever the store's size."""

from __future__ import annotations

from typing import Any

import apsw
import orjson

PROMPT_CHARS = 300

# Sessions with a finding (the findings' aggregate by session, schema 11), and with a
# failed command (their counter, schema 21): conditions on ``sessions``' own columns, for
# sessions.list and sessions.count. A listing tests each session of its order's index
# until its page is full (a lookup each: at 10 million events, 5,153 of 36,070 sessions
# have a finding and a page took 2.7 ms); a count reads the few with one (as a list,
# 3.3 ms; tested one by one, 9 ms).
HAS_FINDINGS_ROW = (
    "EXISTS (SELECT 1 FROM agg_secret_sessions a WHERE a.session_id = sessions.id AND a.n > 0)"
)
HAS_FINDINGS_COUNT = "id IN (SELECT session_id FROM agg_secret_sessions WHERE n > 0)"
HAS_FAILED_COMMANDS = "failed_commands > 0"  # the WHERE of sessions_failed


def session_filters(
    has_findings: bool, failed_commands: bool, *, counting: bool = False
) -> list[str]:
    """The conditions of the has-findings and failed-commands filters, on ``sessions``'
    columns: for a listing, or (``counting``) for a count."""
    out: list[str] = []
    if has_findings:
        out.append(HAS_FINDINGS_COUNT if counting else HAS_FINDINGS_ROW)
    if failed_commands:
        out.append(HAS_FAILED_COMMANDS)
    return out


def live_sessions(
    conn: apsw.Connection, sessions: list[dict[str, Any]], since_ts: str
) -> dict[str, Any]:
    """The sessions whose last event is at or after ``since_ts`` (sessions.list's first
    page from then, latest first: ``sessions``), each with ``turn`` (the latest: id,
    start, end, status, its number), ``last_prompt`` and ``last_tool_call``."""
    with conn:
        for s in sessions:
            s.pop("_key", None)
            s.update(_now_of(conn, s["id"]))
    return {"since": since_ts, "sessions": sessions}


def _now_of(conn: apsw.Connection, session_id: str) -> dict[str, Any]:
    turn = conn.execute(
        "SELECT turn_id, started_at, ended_at, status FROM turns WHERE session_id = ?"
        " ORDER BY COALESCE(started_at, '') DESC, turn_id DESC LIMIT 1", (session_id,)
    ).fetchone()
    (turns,) = conn.execute(
        "SELECT COUNT(*) FROM turns WHERE session_id = ?", (session_id,)).fetchone() or (0,)
    prompt = conn.execute(
        "SELECT id, ts, data FROM events WHERE session_id = ? AND kind = 'prompt'"
        " AND subagent_id IS NULL ORDER BY id DESC LIMIT 1", (session_id,)).fetchone()
    call = conn.execute(
        "SELECT id, ts, tool, data FROM events WHERE session_id = ? AND kind = 'tool_call'"
        " ORDER BY id DESC LIMIT 1", (session_id,)).fetchone()
    out: dict[str, Any] = {"turn": None, "last_prompt": None, "last_tool_call": None}
    if turn is not None:
        out["turn"] = {"turn_id": turn[0], "started_at": turn[1], "ended_at": turn[2],
                       "status": turn[3], "number": int(turns)}
    if prompt is not None:
        text = _data(prompt[2]).get("text")
        out["last_prompt"] = {
            "event_id": prompt[0], "ts": prompt[1],
            "text": text[:PROMPT_CHARS] if isinstance(text, str) else None,
        }
    if call is not None:
        inp = _data(call[3]).get("input")
        out["last_tool_call"] = {"event_id": call[0], "ts": call[1], "tool": call[2],
                                 "summary": input_summary(inp)}
    return out


def _data(raw: Any) -> dict[str, Any]:
    d = orjson.loads(raw) if raw else {}
    return d if isinstance(d, dict) else {}


def input_summary(inp: Any, chars: int = 200) -> str | None:
    """A tool call's stored input in one line: its command, path, pattern or query when
    it has one, else its first string value."""
    if not isinstance(inp, dict):
        return None
    for key in ("command", "cmd", "file_path", "path", "pattern", "query", "url",
                "description", "prompt"):
        v = inp.get(key)
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            v = " ".join(v)
        if isinstance(v, str) and v:
            return v[:chars]
    for v in inp.values():
        if isinstance(v, str) and v:
            return v[:chars]
    return None


def count_sessions(
    conn: apsw.Connection, *, agent: str | None = None, cwd: str | None = None,
    project: str | None = None, since_ts: str | None = None, until_ts: str | None = None,
    model: str | None = None, has_findings: bool = False, failed_commands: bool = False,
) -> int:
    """How many sessions sessions.list's filters (without ``search``) match: the same
    conditions, counted."""
    conditions: list[str] = []
    args: list[Any] = []
    if agent:
        conditions.append("agent = ?")
        args.append(agent)
    if cwd:
        conditions.append("cwd = ?")
        args.append(cwd)
    if project:
        conditions.append("(project_root = ? OR cwd = ?)")
        args += [project, project]
    if since_ts:
        conditions.append("COALESCE(last_event_at, started_at, '') >= ?")
        args.append(since_ts)
    if until_ts:
        conditions.append("COALESCE(started_at, last_event_at) < ?")
        args.append(until_ts)
    if model:
        conditions.append("model = ?")
        args.append(model)
    conditions += session_filters(has_findings, failed_commands, counting=True)
    with conn:
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        (n,) = conn.execute(f"SELECT COUNT(*) FROM sessions{where}", args).fetchone() or (0,)
    return int(n)
