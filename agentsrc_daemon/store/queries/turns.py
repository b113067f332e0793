"""A session turn by turn (sessions.turns): each turn's prompt, its steps (one per tool
call, or per read, edit or command derived from it), its answer, tokens and wall time,
in pages of turns."""

from __future__ import annotations

from typing import Any

import apsw
import orjson

from ..where import Where

_COLUMNS = "id, kind, ts, turn_id, tool, call_id, subagent_id, path, data"
_KINDS = ("prompt", "message", "tool_call", "read", "edit", "command", "usage",
          "turn_start", "turn_end")
_IN_KINDS = ",".join(f"'{k}'" for k in _KINDS)


def session_turns(
    conn: apsw.Connection, session_id: str, *, after_id: int = 0, limit: int = 20
) -> dict[str, Any]:
    """A session's turns in order, each its prompt, its steps (one per tool call, or
    per read, edit or command derived from it), its answer, tokens and wall time.
    Sub-agent events go under the turn they happened in, with ``depth`` 1. Pages of
    ``limit`` turns: ``next_after_id`` is the last event id of the page's last turn.
    In the caller's read transaction."""
    turns, events_of, next_after = _page(conn, session_id, after_id, limit)
    facts: dict[str, tuple[Any, Any, Any]] = {}
    if turns:
        _subagent_events(conn, session_id, after_id, next_after, turns, events_of)
        facts = {
            t: (s_, e_, st)
            for t, s_, e_, st in conn.execute(
                "SELECT turn_id, started_at, ended_at, status FROM turns"
                " WHERE session_id = ?", (session_id,),
            )
        }
    out = [_turn(t, evs, facts) for t, evs in zip(turns, events_of, strict=True)]
    return {"session_id": session_id, "turns": out, "next_after_id": next_after}


def _page(
    conn: apsw.Connection, session_id: str, after_id: int, limit: int
) -> tuple[list[dict[str, Any]], list[list[tuple[Any, ...]]], int | None]:
    """The page's turns of the session's own events (not its sub-agents'), each with
    its events; and the id the next page starts after (None: no next page)."""
    turns: list[dict[str, Any]] = []
    events_of: list[list[tuple[Any, ...]]] = []
    cursor = after_id
    next_after: int | None = None
    # One statement, stepped as far as the page goes: a row is read (and its data
    # unpacked) only when the page needs it, not in batches past the last turn.
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND id > ?"
        f" AND subagent_id IS NULL AND kind IN ({_IN_KINDS}) ORDER BY id",
        (session_id, cursor),
    )
    for row in rows:
        eid, kind, ts, turn_id = row[0], row[1], row[2], row[3]
        cur = turns[-1] if turns else None
        new = cur is None or (
            turn_id is not None and cur["turn_id"] is not None
            and turn_id != cur["turn_id"]
        ) or (kind == "prompt" and cur["prompt"] is not None)
        if new:
            if len(turns) == limit:
                next_after = cursor
                break
            turns.append({"turn_id": turn_id, "started_at": ts, "ended_at": ts,
                          "prompt": None, "first_id": eid})
            events_of.append([])
            cur = turns[-1]
        assert cur is not None
        if cur["turn_id"] is None and turn_id is not None:
            cur["turn_id"] = turn_id
        if kind == "prompt" and cur["prompt"] is None:
            cur["prompt"] = orjson.loads(row[8]).get("text")
        if ts:
            cur["started_at"] = min(cur["started_at"] or ts, ts)
            cur["ended_at"] = max(cur["ended_at"] or ts, ts)
        events_of[-1].append(row)
        cursor = eid
    rows.close()
    return turns, events_of, next_after


def _subagent_events(
    conn: apsw.Connection, session_id: str, after_id: int, next_after: int | None,
    turns: list[dict[str, Any]], events_of: list[list[tuple[Any, ...]]],
) -> None:
    """Sub-agent events: under the last turn started at or before each."""
    starts = [t["started_at"] or "" for t in turns]
    until = None
    if next_after is not None:
        nxt = conn.execute(
            "SELECT ts FROM events WHERE session_id = ? AND id > ?"
            " AND subagent_id IS NULL ORDER BY id LIMIT 1", (session_id, next_after),
        ).fetchone()
        until = nxt[0] if nxt else None
    where = Where()
    where.add("session_id = ?", session_id)
    where.add("subagent_id IS NOT NULL")
    where.add(f"kind IN ({_IN_KINDS})")
    if after_id and starts[0]:
        where.add("ts >= ?", starts[0])
    if until:
        where.add("ts < ?", until)
    for row in conn.execute(
        f"SELECT {_COLUMNS} FROM events{where.sql()} ORDER BY ts, id", where.args
    ):
        ts = row[2] or ""
        k = 0
        for i, st in enumerate(starts):
            if st <= ts:
                k = i
        events_of[k].append(row)


def _iso_ms(ts: str | None) -> float | None:
    if not ts:
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return None


def _step_of_call(tool: str | None, data: dict[str, Any]) -> dict[str, Any]:
    inp = data.get("input") if isinstance(data.get("input"), dict) else {}
    assert isinstance(inp, dict)
    name = tool or ""
    if name.startswith("mcp__") or name.startswith("mcp_"):
        return {"kind": "mcp", "summary": name}
    if name in ("Grep", "grep", "search", "rg"):
        return {"kind": "grep", "summary": str(inp.get("pattern") or inp.get("query") or "")}
    if name in ("Task", "Agent", "task", "spawn_agent"):
        return {"kind": "subagent",
                "summary": str(inp.get("description") or inp.get("subagent_type") or "")}
    first = next((v for v in inp.values() if isinstance(v, str)), "")
    return {"kind": "tool", "summary": first}


def _turn(
    t: dict[str, Any], rows: list[tuple[Any, ...]], facts: dict[str, tuple[Any, Any, Any]]
) -> dict[str, Any]:
    """One turn as sessions.turns returns it, from its events (own and sub-agents')
    and its facts in ``turns``."""
    steps, answer, tokens, status = _steps(rows)
    fact = facts.get(t["turn_id"] or "")
    started, ended = t["started_at"], t["ended_at"]
    if fact:
        started = fact[0] or started
        ended = fact[1] or ended
        status = fact[2] or status
    a, b = _iso_ms(started), _iso_ms(ended)
    return {
        "turn_id": t["turn_id"],
        "first_event_id": t["first_id"],
        "started_at": started,
        "ended_at": ended,
        "status": status,
        "wall_ms": int(b - a) if a is not None and b is not None else None,
        "tokens": tokens,
        "prompt": t["prompt"],
        "steps": steps,
        "answer": answer,
    }


def _steps(
    rows: list[tuple[Any, ...]],
) -> tuple[list[dict[str, Any]], str | None, int, Any]:
    """A turn's events as its steps, its answer, its tokens and the status its end
    said."""
    derived: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        if row[1] in ("read", "edit", "command") and row[5]:
            derived.setdefault(row[5], []).append(row)
    steps: list[dict[str, Any]] = []
    answer: str | None = None
    tokens = 0
    status = None
    used: set[int] = set()
    for eid, kind, ts, _turn_id, tool, call_id, subagent_id, path, data in rows:
        depth = 1 if subagent_id else 0
        if kind == "message":
            if not subagent_id:
                answer = orjson.loads(data).get("text") or answer
            continue
        if kind == "usage":
            d = orjson.loads(data)
            tokens += int(d.get("total_tokens") or 0) or (
                int(d.get("input_tokens") or 0) + int(d.get("output_tokens") or 0))
            continue
        if kind == "turn_end":
            status = orjson.loads(data).get("status")
            continue
        if kind == "tool_call":
            mine = derived.get(call_id or "", [])
            if not mine:
                step = _step_of_call(tool, orjson.loads(data))
                steps.append({"event_id": eid, "ts": ts, "tool": tool, "call_id": call_id,
                              "subagent_id": subagent_id, "depth": depth, **step})
                continue
            for d_row in mine:
                used.add(d_row[0])
                steps.append(_derived_step(d_row, depth))
            continue
        if kind in ("read", "edit", "command") and eid not in used:
            used.add(eid)
            steps.append(_derived_step((eid, kind, ts, None, tool, call_id, subagent_id, path,
                                        data), depth))
    return steps, answer, tokens, status


def _derived_step(row: tuple[Any, ...], depth: int) -> dict[str, Any]:
    eid, kind, ts, _t, tool, call_id, subagent_id, path, data = row
    d = orjson.loads(data)
    step: dict[str, Any] = {"event_id": eid, "ts": ts, "tool": tool, "call_id": call_id,
                            "subagent_id": subagent_id, "depth": depth, "kind": kind}
    if kind == "command":
        step.update(summary=d.get("command") or "", exit_code=d.get("exit_code"),
                    duration_ms=d.get("duration_ms"))
    else:
        step.update(summary=d.get("rel_path") or path or "", path=path, op=d.get("op"))
    return step
