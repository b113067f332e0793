"""``sessions.timeline``: a session read back turn by turn with everything a person
looks at (the web page's session view): each turn's prompt, every assistant message,
tool calls with their result and the reads, edits, commands and findings derived from
them, compactions, errors, and the turn's token usage. ``sessions.turns`` (reader.py)
is the CLI's shorter form of the same walk: one answer per turn, steps only.

A page is bounded twice: at most ``limit`` turns and at most ``MAX_PAGE_EVENTS`` of the
session's own events, so a turn of thousands of tool calls is paged inside itself (the
next page continues it: ``continued``). Sub-agents' events go under the turn that was
running when they happened (by time, as sessions.turns puts them), grouped per
sub-agent.

``around_id`` opens the page at the turn that holds an event (a search hit, a file's
history, a finding link to it): the start of that turn by the same rule the walk splits
turns by (another turn id, or a second prompt)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import orjson

MAX_PAGE_EVENTS = 300  # the session's own events read for one page (sub-agents' apart)
MAX_SUBAGENT_EVENTS = 500  # sub-agents' events shown under one page's turns

# What the view shows; usage, reasoning and turn boundaries are summed into their turn.
KINDS = ("prompt", "directive", "message", "reasoning", "tool_call", "tool_result", "usage",
         "compaction", "turn_start", "turn_end", "error", "read", "edit", "command", "secret",
         "sensitive_read")
_IN_KINDS = ",".join(f"'{k}'" for k in KINDS)
_COLS = "id, kind, ts, turn_id, tool, call_id, subagent_id, path, data"
_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                 "reasoning_tokens", "total_tokens")
_DERIVED = ("read", "edit", "command", "secret", "sensitive_read")


def session_timeline(
    conn: apsw.Connection, session_id: str, *, after_id: int = 0, limit: int = 20,
    around_id: int | None = None,
) -> dict[str, Any]:
    """-> {session_id, turns, next_after_id, after_id, last_event_id}. ``after_id`` is
    the page's start (events after it); with ``around_id`` it is worked out here."""
    with conn:
        if around_id is not None:
            after_id = _turn_start(conn, session_id, around_id) - 1
        rows = list(conn.execute(
            f"SELECT {_COLS} FROM events WHERE session_id = ? AND id > ?"
            f" AND subagent_id IS NULL AND kind IN ({_IN_KINDS}) ORDER BY id LIMIT ?",
            (session_id, after_id, MAX_PAGE_EVENTS + 1)))
        turns, next_after = _split(rows, limit, after_id)
        if turns and turns[0]["continued"]:
            turns[0]["continued"] = _continues(conn, session_id, after_id, turns[0]["turn_id"])
        subagent_rows: list[tuple[Any, ...]] = []
        if turns:
            subagent_rows = _subagent_rows(conn, session_id, turns, next_after, after_id)
        last = conn.execute(
            "SELECT MAX(id) FROM events WHERE session_id = ?", (session_id,)).fetchone()
    starts = [t["started_at"] or "" for t in turns]
    by_turn: list[list[tuple[Any, ...]]] = [[] for _ in turns]
    for row in subagent_rows:
        ts = row[2] or ""
        k = 0
        for i, st in enumerate(starts):
            if st <= ts:
                k = i
        by_turn[k].append(row)
    out = [_turn(t, sub) for t, sub in zip(turns, by_turn, strict=True)]
    return {
        "session_id": session_id,
        "after_id": after_id,
        "turns": out,
        "next_after_id": next_after,
        "last_event_id": int(last[0]) if last and last[0] is not None else 0,
    }


def _split(
    rows: list[tuple[Any, ...]], limit: int, after_id: int
) -> tuple[list[dict[str, Any]], int | None]:
    """The session's own rows into turns (sessions.turns' rule: a new turn at another
    turn id or at a second prompt), at most ``limit`` turns and MAX_PAGE_EVENTS rows.
    -> (turns, next_after_id: the last id of the page, None when the session ends)."""
    turns: list[dict[str, Any]] = []
    next_after: int | None = None
    last_id = after_id
    for n, row in enumerate(rows):
        eid, kind, ts, turn_id = row[0], row[1], row[2], row[3]
        if n == MAX_PAGE_EVENTS:
            next_after = last_id
            break
        cur = turns[-1] if turns else None
        new = cur is None or (
            turn_id is not None and cur["turn_id"] is not None and turn_id != cur["turn_id"]
        ) or (kind == "prompt" and cur["has_prompt"])
        if new:
            if len(turns) == limit:
                next_after = last_id
                break
            turns.append({"turn_id": turn_id, "first_event_id": eid, "started_at": ts,
                          "ended_at": ts, "has_prompt": False, "rows": [],
                          "continued": cur is None and after_id > 0 and kind != "prompt"})
            cur = turns[-1]
        assert cur is not None
        if cur["turn_id"] is None and turn_id is not None:
            cur["turn_id"] = turn_id
        if kind == "prompt":
            cur["has_prompt"] = True
        if ts:
            cur["started_at"] = min(cur["started_at"] or ts, ts)
            cur["ended_at"] = max(cur["ended_at"] or ts, ts)
        cur["rows"].append(row)
        last_id = eid
    return turns, next_after


def _continues(
    conn: apsw.Connection, session_id: str, after_id: int, turn_id: str | None
) -> bool:
    """Whether a page that starts without a prompt continues the turn of the page before
    (one cut at MAX_PAGE_EVENTS): the row before it has the same turn id."""
    if turn_id is None:
        return False
    row = conn.execute(
        f"SELECT turn_id FROM events WHERE session_id = ? AND subagent_id IS NULL"
        f" AND kind IN ({_IN_KINDS}) AND id <= ? ORDER BY id DESC LIMIT 1",
        (session_id, after_id)).fetchone()
    return row is not None and row[0] == turn_id


def _subagent_rows(
    conn: apsw.Connection, session_id: str, turns: list[dict[str, Any]],
    next_after: int | None, after_id: int,
) -> list[tuple[Any, ...]]:
    """The sub-agents' events in the page's time span: from its first turn's start (or
    the session's start on a first page) to the next page's first event."""
    lo = turns[0]["started_at"] if after_id else None
    hi = None
    if next_after is not None:
        nxt = conn.execute(
            "SELECT ts FROM events WHERE session_id = ? AND id > ? AND subagent_id IS NULL"
            " ORDER BY id LIMIT 1", (session_id, next_after)).fetchone()
        hi = nxt[0] if nxt else None
    sql = (f"SELECT {_COLS} FROM events WHERE session_id = ? AND subagent_id IS NOT NULL"
           f" AND kind IN ({_IN_KINDS})")
    args: list[Any] = [session_id]
    if lo:
        sql += " AND ts >= ?"
        args.append(lo)
    if hi:
        sql += " AND ts < ?"
        args.append(hi)
    sql += " ORDER BY ts, id LIMIT ?"
    args.append(MAX_SUBAGENT_EVENTS)
    return list(conn.execute(sql, args))


def _turn_start(conn: apsw.Connection, session_id: str, event_id: int) -> int:
    """The first event id of the turn that holds ``event_id`` (for a sub-agent's event,
    the turn running at its time), by the walk's rule, walking back over that turn's
    rows only: it starts after a row of another turn id, or at its latest prompt when an
    earlier prompt of the same turn precedes it."""
    row = conn.execute(
        "SELECT id, ts, turn_id, subagent_id FROM events WHERE id = ? AND session_id = ?",
        (event_id, session_id)).fetchone()
    if row is None:
        return 1
    eid, ts, turn_id, subagent_id = row
    if subagent_id is not None:
        main = conn.execute(
            "SELECT id, turn_id FROM events WHERE session_id = ? AND subagent_id IS NULL"
            f" AND kind IN ({_IN_KINDS}) AND COALESCE(ts, '') <= ? ORDER BY id DESC LIMIT 1",
            (session_id, ts or "")).fetchone()
        if main is None:
            return 1
        eid, turn_id = main
    start = eid
    prompts: list[int] = []
    for rid, kind, tid in conn.execute(
        "SELECT id, kind, turn_id FROM events WHERE session_id = ? AND subagent_id IS NULL"
        f" AND kind IN ({_IN_KINDS}) AND id <= ? ORDER BY id DESC",
        (session_id, eid),
    ):
        if turn_id is None and tid is not None:
            turn_id = tid
        if tid is not None and tid != turn_id:
            break
        if kind == "prompt":
            prompts.append(rid)
            if len(prompts) == 2:  # the later one is a second prompt: it starts a turn
                return prompts[0]
        start = rid
    return start


def _turn(t: dict[str, Any], subagent_rows: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
    tokens = dict.fromkeys(_TOKEN_FIELDS, 0)
    models: list[str] = []
    state = {"status": None, "reasoning": 0}
    items = _items(t["rows"], tokens, models, state)
    groups: dict[str, dict[str, Any]] = {}
    for row in subagent_rows:
        g = groups.setdefault(row[6], {"kind": "subagent", "subagent_id": row[6],
                                       "ts": row[2], "rows": []})
        g["rows"].append(row)
    for g in groups.values():
        g["items"] = _items(g.pop("rows"), tokens, models, {"status": None, "reasoning": 0})
        items.append(g)
    return {
        "turn_id": t["turn_id"],
        "first_event_id": t["first_event_id"],
        "started_at": t["started_at"],
        "ended_at": t["ended_at"],
        "status": state["status"],
        "continued": t["continued"],
        "reasoning": state["reasoning"],
        "tokens": tokens,
        "models": models,
        "items": items,
    }


def _items(
    rows: Sequence[tuple[Any, ...]], tokens: dict[str, int], models: list[str],
    state: dict[str, Any],
) -> list[dict[str, Any]]:
    """The rows as the view's items, in order: each tool call with its result and its
    derived events; usage summed into ``tokens``; the turn's end into ``state``."""
    items: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for eid, kind, ts, _turn_id, tool, call_id, _sub, path, data in rows:
        d = orjson.loads(data) if data else {}
        if not isinstance(d, dict):
            d = {}
        if kind == "usage":
            for f in _TOKEN_FIELDS:
                v = d.get(f)
                if isinstance(v, int) and not isinstance(v, bool):
                    tokens[f] += v
            m = d.get("model")
            if isinstance(m, str) and m and m not in models:
                models.append(m)
            continue
        if kind == "reasoning":
            state["reasoning"] += 1
            continue
        if kind == "turn_start":
            continue
        if kind == "turn_end":
            state["status"] = d.get("status") or state["status"]
            continue
        item = _item(eid, kind, ts, tool, call_id, path, d)
        call = calls.get(call_id or "") if call_id else None
        if kind == "tool_call":
            item["derived"] = []
            item["result"] = None
            if call_id:
                calls[call_id] = item
            items.append(item)
        elif kind == "tool_result":
            if call is not None:
                call["result"] = item
            elif item.get("is_error"):
                items.append(item)
        elif kind in _DERIVED and call is not None:
            call["derived"].append(item)
        else:
            items.append(item)
    return items


def _item(
    eid: int, kind: str, ts: str | None, tool: str | None, call_id: str | None,
    path: str | None, d: dict[str, Any],
) -> dict[str, Any]:
    item: dict[str, Any] = {"id": eid, "kind": kind, "ts": ts}
    if kind in ("prompt", "directive", "message"):
        item.update(text=d.get("text"), text_chars=d.get("text_chars"))
    elif kind == "tool_call":
        inp = d.get("input")
        item.update(tool=tool, call_id=call_id, input=inp if isinstance(inp, dict) else None)
    elif kind == "tool_result":
        item.update(tool=tool, call_id=call_id, is_error=d.get("is_error"),
                    exit_code=d.get("exit_code"), duration_ms=d.get("duration_ms"),
                    output_chars=d.get("output_chars"), interrupted=d.get("interrupted"))
    elif kind == "command":
        exit_code = d.get("exit_code")
        item.update(tool=tool, command=d.get("command"), cwd=d.get("cwd"), exit_code=exit_code,
                    duration_ms=d.get("duration_ms"), interrupted=d.get("interrupted"),
                    is_error=d.get("is_error"),
                    failed=bool((exit_code not in (None, 0)) or d.get("interrupted")
                                or d.get("is_error")))
    elif kind in ("read", "edit", "sensitive_read"):
        item.update(tool=tool, path=path or d.get("path"), rel_path=d.get("rel_path"),
                    op=d.get("op"), external=d.get("external"))
    elif kind == "secret":
        # A finding: its kind and place, never a value (none is stored).
        item.update(tool=tool, type=d.get("type"), line=d.get("line"), label=d.get("label"),
                    path=path or d.get("path"), of_kind=d.get("of_kind"))
    elif kind == "compaction":
        item.update(trigger=d.get("trigger"), pre_tokens=d.get("pre_tokens"))
    elif kind == "error":
        item.update(message=d.get("message"), error_type=d.get("error_type"))
    return item
