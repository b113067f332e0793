"""Crush adapter: rows of Crush's SQLite database in, normalized records out. Pure: it is
handed decoded rows (by ``ingest/agent_db.py`` with ``db_schemas.CRUSH``) and knows
nothing of files, SQLite or sockets.

Crush (charmbracelet/crush) keeps each project's sessions in ``<project>/.crush/crush.db``
(internal/db/migrations, internal/message in its source):

* ``sessions``: ``id``, ``parent_session_id`` (a sub-agent's task session, or
  ``title-<parent>``), ``title`` (a placeholder until Crush generates one),
  ``message_count``, ``prompt_tokens`` and ``completion_tokens`` (the LAST request's:
  Crush assigns them on every response, it does not add them up), ``cost`` (the sum of
  every response's, in dollars, priced by Crush; a sub-agent's cost is added to its
  parent's as well), ``created_at``, ``updated_at``, ``summary_message_id``;
* ``messages``: ``role`` user | assistant | tool, ``parts`` (a JSON list of
  ``{"type", "data"}``: ``text``, ``reasoning``, ``tool_call`` {id, name, input (a JSON
  string), finished}, ``tool_result`` {tool_call_id, name, content, metadata, is_error},
  ``finish`` {reason, time, message, details}, ``image_url``, ``binary``,
  ``shell_command`` {command, output, exit_code}), ``model``, ``provider``,
  ``created_at``, ``finished_at``, ``is_summary_message``.

Times are seconds in the files Crush writes (``strftime('%s', 'now')``), though the
schema's comments say milliseconds; ``normalize_ts`` tells the two apart by size.

Rows are rewritten while a response streams. A user or tool message is written whole; an
assistant message's events are emitted once it is final (a ``finish`` part or
``finished_at``), and again, under the same keys, with the row's ``updated_at`` as their
revision when it changes later. Keys are Crush's ids, so a row read twice counts once.

Usage: Crush keeps no per-request usage, only each session's row. One ``usage`` event
per session (key ``crush:usage:<session>``) carries that row as it stands: the last
request's prompt and completion tokens, and the session's cost as ``cost`` (reported),
re-emitted with a higher revision whenever the row changes. A sub-agent session's cost
is already in its parent's (Crush adds it there): it is kept as ``cost_in_parent`` and
its ``cost`` is 0, so a sum over sessions, priced or not, counts it once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

import orjson

from ..events import (
    COMPACTION,
    ERROR,
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USAGE,
    Drift,
    Event,
    Record,
    SessionFacts,
    TurnFacts,
    session_key,
)
from .common import (
    LineContext,
    LineRules,
    as_count,
    as_int,
    first_line,
    normalize_ts,
    parse_arguments,
    summarize_input,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import remember_bounded as _remember
from .common import state_table as _table
from .injected import person_text

NAME = "crush"
SESSIONS = "sessions"
MESSAGES = "messages"

ROLES = frozenset({"user", "assistant", "tool"})
# Part types: handled, or deliberately ignored; anything else is Drift.
HANDLED_PARTS = frozenset({"text", "reasoning", "tool_call", "tool_result", "finish",
                           "shell_command"})
IGNORED_PARTS = frozenset({"image_url", "binary"})  # attachments: their bytes, never read
# Finish reasons after which the agent calls the model again: the turn goes on.
CONTINUE_FINISHES = frozenset({"tool_use"})
ABORTED_FINISHES = frozenset({"canceled", "error"})
# Crush's titles until it generates one (Create, CreateTaskSession, CreateTitleSession;
# DefaultSessionName in newer versions).
PLACEHOLDER_TITLES = frozenset({"New Session", "Untitled Session", "New Agent Session",
                                "Generate a title"})
TITLE_SESSION_PREFIX = "title-"  # a title session: its cost is not added to its parent
# The bash tool's result ends with these (internal/llm/tools/bash.go).
_EXIT_CODE = re.compile(r"(?:^|\n)Exit code (-?\d+)\s*$")
ABORTED_OUTPUT = "Command was aborted before completion"
SHELL_TOOLS = frozenset({"bash", "shell"})  # "shell": a bang-mode command (shell_command)

MAX_SESSIONS = 1000
MAX_CALLS = 500
MAX_HELD = 200
MAX_TURNS = 2000
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500

TITLE_PROMPT = 1
TITLE_SESSION = 2

# One context per row: its session and revision fixed; every key is Crush's own id.
RULES = LineRules(agent=NAME, version=None)


def _ts(value: Any) -> str | None:
    return normalize_ts(value) if as_int(value) is not None else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value)


def project_dir(source_path: str) -> str:
    """Where Crush ran: the folder holding its ``.crush`` data dir."""
    parent = os.path.dirname(source_path)
    return os.path.dirname(parent) if os.path.basename(parent) == ".crush" else parent


def _revision(value: Any) -> int:
    """A row's ``updated_at`` in milliseconds, as a revision (seconds are scaled, so a
    revision never goes down when Crush changes its unit)."""
    t = as_int(value) or 0
    return max(0, t * 1000 if 0 < t < 10**11 else t)


class CrushAdapter:
    name = NAME

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a row: ``row/sessions``,
        ``row/messages``. Crush records no version of its own. (Ingest tallies a
        database's rows by page, as ``row/<table>``: this names one row alike.)"""
        if isinstance(obj, dict) and "role" in obj:
            return "unknown", "row/messages", False
        if isinstance(obj, dict) and "title" in obj:
            return "unknown", "row/sessions", False
        return "unknown", "<no type>", False

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return {
            # native id -> {"title": rank, "turn": open turn, "model", "usage": [rev, fp]}
            "sessions": {},
            "calls": {},  # tool call id -> {"tool", "command"}: what its result needs
            "held": {},  # results read before their call: call id -> what to re-emit
            "turns": {},  # user message ids seen (a turn each)
        }

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        return []  # Crush writes no transcript files: everything is in its database

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        return []

    def parse_rows(
        self, table: str, rows: Iterable[dict[str, Any]], source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """Rows of ``sessions`` or ``messages``; a message page is read in insertion
        order (a tool call before the result that answers it)."""
        out: list[Record] = []
        ordered = sorted((r for r in rows if isinstance(r, dict)),
                         key=lambda r: as_int(r.get("rowid")) or 0)
        for row in ordered:
            try:
                if table == SESSIONS:
                    out += _session(row, source_path, state)
                elif table == MESSAGES:
                    out += _message(row, source_path, state)
            except Exception as exc:  # one odd row must not stop the source: count it
                out.append(Drift(NAME, "unknown", f"{table}/parse-error:{type(exc).__name__}"))
        return out


ADAPTER = CrushAdapter()


# -- sessions -------------------------------------------------------------------------------


def _session_entry(state: dict[str, Any], native: str) -> dict[str, Any]:
    return _dict(_table(state, "sessions").get(native))


def _keep(state: dict[str, Any], native: str, entry: dict[str, Any]) -> None:
    _remember(_table(state, "sessions"), native, entry, MAX_SESSIONS)


def _session(row: dict[str, Any], source_path: str, state: dict[str, Any]) -> list[Record]:
    native = _str(row.get("id"))
    if native is None:
        return [Drift(NAME, "unknown", "session/<no id>")]
    known = _session_entry(state, native)
    parent = _str(row.get("parent_session_id"))
    title = _str(row.get("title"))
    rank = as_int(known.get("title")) or 0
    own_title = None
    if title and title.strip() not in PLACEHOLDER_TITLES:
        own_title = title.strip()[:MAX_TITLE_CHARS] or None
        rank = TITLE_SESSION
    entry = dict(known, title=rank)
    if parent:
        entry["parent"] = parent
    out: list[Record] = [
        SessionFacts(
            session_id=session_key(NAME, native),
            agent=NAME,
            native_id=native,
            cwd=project_dir(source_path),
            started_at=_ts(row.get("created_at")),
            last_event_at=_ts(row.get("updated_at")),
            title=own_title,
            parent_session_id=session_key(NAME, parent) if parent else None,
        )
    ]
    out += _session_usage(row, native, entry, source_path, state)
    _keep(state, native, entry)
    return out


def _session_usage(
    row: dict[str, Any], native: str, entry: dict[str, Any], source_path: str,
    state: dict[str, Any],
) -> list[Record]:
    """The session row's tokens and cost as one usage event, when they changed."""
    prompt = as_count(row.get("prompt_tokens"))
    completion = as_count(row.get("completion_tokens"))
    cost = _number(row.get("cost"))
    if not prompt and not completion and not cost:
        return []
    fingerprint = [prompt, completion, cost]
    held = entry.get("usage")
    if isinstance(held, list) and len(held) == 3 and held[1] == fingerprint:
        return []
    prev = as_int(held[0]) if isinstance(held, list) and held else None
    revision = max((prev or 0) + 1, _revision(row.get("updated_at")))
    ts = _ts(row.get("updated_at"))
    entry["usage"] = [revision, fingerprint, ts]
    ctx = LineContext(RULES, source_path, as_int(row.get("rowid")) or 0, state,
                      native_id=native, revision=revision)
    return [_usage_event(ctx, native, entry, fingerprint, ts)]


def _usage_event(ctx: LineContext, native: str, entry: dict[str, Any], fingerprint: list[Any],
                 ts: str | None) -> Event:
    prompt, completion, cost = fingerprint
    data: dict[str, Any] = {
        "input_tokens": prompt,
        "output_tokens": completion,
        "cache_read_tokens": 0,
        "cache_creation_tokens": 0,
        "reasoning_tokens": 0,
        "total_tokens": prompt + completion,
        "model": _str(entry.get("model")),
        "provider": _str(entry.get("provider")),
        # The session row's figures: the last request's tokens, the whole session's cost.
        "aggregate": True,
        "tokens_of": "last_request",
    }
    parent = _str(entry.get("parent"))
    if parent and not native.startswith(TITLE_SESSION_PREFIX):
        # Crush added it to the parent's cost too: reported here as 0, so neither a sum
        # over sessions nor the pricing stage (which estimates a usage with no cost of
        # its own) counts it twice.
        data["cost_in_parent"] = cost
        data["cost"] = 0.0
    else:
        data["cost"] = cost
    return ctx.event(USAGE, f"{NAME}:usage:{native}", ts=ts, turn_id=None,
                     cwd=project_dir(ctx.source_path), data=data)


# -- messages -------------------------------------------------------------------------------


def _parts(row: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    parts = row.get("parts")
    out: list[tuple[str, dict[str, Any]]] = []
    for part in parts if isinstance(parts, list) else []:
        p = _dict(part)
        ptype = p.get("type")
        out.append((ptype if isinstance(ptype, str) else "<no type>", _dict(p.get("data"))))
    return out


class _Msg:
    """One message row being read: its session, turn, times and the events it makes."""

    def __init__(self, row: dict[str, Any], native: str, mid: str, source_path: str,
                 state: dict[str, Any]) -> None:
        self.row, self.native, self.mid, self.state = row, native, mid, state
        self.cwd = project_dir(source_path)
        self.ctx = LineContext(RULES, source_path, as_int(row.get("rowid")) or 0, state,
                               native_id=native, revision=_revision(row.get("updated_at")))
        self.created = _ts(row.get("created_at"))
        self.parts = _parts(row)

    @property
    def session(self) -> dict[str, Any]:
        return _session_entry(self.state, self.native)

    def turn(self) -> str | None:
        return _str(self.session.get("turn"))

    def event(self, kind: str, key: str, ts: str | None, **fields: Any) -> Event:
        fields.setdefault("turn_id", self.turn())
        return self.ctx.event(kind, key, ts=ts, cwd=self.cwd, **fields)

    def finish(self) -> dict[str, Any] | None:
        return next((d for t, d in self.parts if t == "finish"), None)


def _message(row: dict[str, Any], source_path: str, state: dict[str, Any]) -> list[Record]:
    mid = _str(row.get("id"))
    native = _str(row.get("session_id"))
    if mid is None or native is None:
        return [Drift(NAME, "unknown", "message/<no id>")]
    msg = _Msg(row, native, mid, source_path, state)
    role = row.get("role")
    if role not in ROLES:
        return [msg.ctx.drift(f"message/{role if isinstance(role, str) else '<no role>'}")]
    out: list[Record] = [msg.ctx.drift(f"part/{t}") for t, _ in msg.parts
                         if t not in HANDLED_PARTS and t not in IGNORED_PARTS]
    if role == "user":
        return out + _user(msg)
    if role == "tool":
        for ptype, data in msg.parts:
            if ptype == "tool_result":
                out += _result(msg, data)
        return out
    if msg.finish() is None and row.get("finished_at") is None:
        return out  # still streaming: read again when Crush finishes it
    return out + _assistant(msg)


def _user(msg: _Msg) -> list[Record]:
    """Every user message opens a turn (its id is the turn's); its text is a prompt
    when a person typed it (Crush's own initialize prompt is not one)."""
    out: list[Record] = []
    turns = _table(msg.state, "turns")
    first_read = msg.mid not in turns
    if first_read:  # a row read again (rewritten) neither ends nor reopens a turn
        _remember(turns, msg.mid, 1, MAX_TURNS)
        entry = msg.session
        previous = _str(entry.get("turn"))
        if previous and previous != msg.mid and entry.get("open"):
            out += _end_turn(msg, previous, "complete", None, msg.created)
        _keep(msg.state, msg.native, dict(msg.session, turn=msg.mid, open=True))
        out.append(TurnFacts(msg.ctx.session_id, msg.mid, started_at=msg.created,
                             status="open", cwd=msg.cwd))
    out.append(msg.event(TURN_START, f"{NAME}:turn:{msg.mid}:start", msg.created,
                         turn_id=msg.mid))
    text = "\n".join(d["text"] for t, d in msg.parts if t == "text" and isinstance(d.get("text"), str))
    typed = person_text(text)
    if typed:
        out.append(msg.event(PROMPT, f"{NAME}:prompt:{msg.mid}", msg.created, turn_id=msg.mid,
                             data={"text": text.strip()}))
        out += _prompt_title(msg, typed)
    for i, (ptype, data) in enumerate(msg.parts):
        if ptype == "shell_command":
            out += _shell_command(msg, i, data)
    return out


def _prompt_title(msg: _Msg, typed: str) -> list[Record]:
    entry = msg.session
    if (as_int(entry.get("title")) or 0) != 0:
        return []
    title = first_line(typed, MAX_TITLE_CHARS)
    if not title:
        return []
    _keep(msg.state, msg.native, dict(entry, title=TITLE_PROMPT))
    return [msg.ctx.facts(title=title)]


def _shell_command(msg: _Msg, index: int, data: dict[str, Any]) -> list[Record]:
    """A bang-mode command (``!ls``) the person ran, with its output and exit code."""
    command = _str(data.get("command"))
    if command is None:
        return []
    call_id = f"{msg.mid}:shell:{index}"
    inp = {"command": command}
    output = data.get("output")
    text = output if isinstance(output, str) else ""
    call = msg.event(TOOL_CALL, f"{NAME}:tool_call:{call_id}", msg.created, tool="shell",
                     call_id=call_id, data={"input": inp}, input=inp)
    result = msg.event(
        TOOL_RESULT, f"{NAME}:tool_result:{call_id}", msg.created, tool="shell",
        call_id=call_id, input=inp, contents=[("output", text)] if text else [],
        data={"is_error": False, "exit_code": as_int(data.get("exit_code")),
              "output_chars": len(text), "interrupted": False},
    )
    return [call, result]


def _assistant(msg: _Msg) -> list[Record]:
    out: list[Record] = []
    model, provider = _str(msg.row.get("model")), _str(msg.row.get("provider"))
    entry = msg.session
    if model and (entry.get("model"), entry.get("provider")) != (model, provider):
        entry = dict(entry, model=model, provider=provider)
        out.append(msg.ctx.facts(model=model, model_provider=provider))
        held = entry.get("usage")
        if isinstance(held, list) and len(held) == 3 and isinstance(held[1], list):
            # The session's usage was read before its model was known: again, with it.
            revision = (as_int(held[0]) or 0) + 1
            entry["usage"] = [revision, held[1], held[2]]
            ctx = LineContext(RULES, msg.ctx.source_path, msg.ctx.offset, msg.state,
                              native_id=msg.native, revision=revision)
            out.append(_usage_event(ctx, msg.native, entry, held[1], _str(held[2])))
        _keep(msg.state, msg.native, entry)
    finish = msg.finish() or {}
    done = _ts(finish.get("time")) or _ts(msg.row.get("finished_at")) or msg.created
    summary = msg.row.get("is_summary_message") in (1, True)
    for i, (ptype, data) in enumerate(msg.parts):
        key = f"{msg.mid}:{i}"
        if ptype == "text":
            text = data.get("text")
            if not isinstance(text, str) or not text.strip():
                continue
            if summary:  # a compaction summary: its text is never kept
                out.append(msg.event(COMPACTION, f"{NAME}:compaction:{msg.mid}", done,
                                     data={"trigger": None, "pre_tokens": None}))
            else:
                out.append(msg.event(MESSAGE, f"{NAME}:message:{key}", done, data={"text": text}))
        elif ptype == "reasoning":
            thinking = data.get("thinking")
            chars = {"chars": len(thinking)} if isinstance(thinking, str) else {}
            out.append(msg.event(REASONING, f"{NAME}:reasoning:{key}", msg.created, data=chars))
        elif ptype == "tool_call":
            out += _call(msg, data)
    reason = _str(finish.get("reason"))
    if reason == "error":
        message = _str(finish.get("message")) or _str(finish.get("details")) or "error"
        details = _str(finish.get("details"))
        if details and details != message:
            message = f"{message}: {details}"
        out.append(msg.event(ERROR, f"{NAME}:error:{msg.mid}", done,
                             data={"message": message[:MAX_ERROR_CHARS], "error_type": reason}))
    turn = msg.turn()
    if reason is not None and reason not in CONTINUE_FINISHES and turn:
        status = "aborted" if reason in ABORTED_FINISHES else "complete"
        why = "interrupted" if reason == "canceled" else reason
        out += _end_turn(msg, turn, status, why, done)
    return out


def _end_turn(msg: _Msg, turn: str, status: str, reason: str | None,
              at: str | None) -> list[Record]:
    entry = msg.session
    if entry.get("turn") == turn:
        if not entry.get("open"):
            return []  # ended already (a finished message read again)
        _keep(msg.state, msg.native, dict(entry, open=False))
    end = msg.event(TURN_END, f"{NAME}:turn:{turn}:end", at, turn_id=turn,
                    data={"status": status, "reason": reason})
    return [end, TurnFacts(msg.ctx.session_id, turn, ended_at=at, status=status)]


def _call(msg: _Msg, data: dict[str, Any]) -> list[Record]:
    call_id = _str(data.get("id"))
    tool = _str(data.get("name"))
    if call_id is None:
        return [msg.ctx.drift("tool_call/<no id>")]
    raw = data.get("input")
    inp = parse_arguments(raw) if isinstance(raw, str) and raw.strip() else parse_arguments(raw or {})
    held = _table(msg.state, "calls")
    need = {"tool": tool}
    if tool in SHELL_TOOLS and isinstance(inp.get("command"), str):
        need["command"] = inp["command"]
    _remember(held, call_id, need, MAX_CALLS)
    out: list[Record] = [
        msg.event(TOOL_CALL, f"{NAME}:tool_call:{call_id}", msg.created, tool=tool,
                  call_id=call_id, data={"input": summarize_input(inp)}, input=inp)
    ]
    early = _table(msg.state, "held").pop(call_id, None)
    if isinstance(early, dict):
        # Its result came first (rows of one second are read in id order): again,
        # now with the call's tool and input, so a command is derived from it.
        out.append(_result_event(msg, call_id, need, early, revision_bump=True))
    return out


def _result(msg: _Msg, data: dict[str, Any]) -> list[Record]:
    call_id = _str(data.get("tool_call_id"))
    if call_id is None:
        return [msg.ctx.drift("tool_result/<no call id>")]
    content = data.get("content")
    text = content if isinstance(content, str) else ""
    metadata = _metadata(data.get("metadata"))
    output = metadata.get("output")
    is_error = data.get("is_error") is True
    exit_code, interrupted = _exit_status(text, output, metadata, is_error)
    start, end = as_int(metadata.get("start_time")), as_int(metadata.get("end_time"))
    info = {
        "ts": msg.created,
        "rev": msg.ctx.revision,
        "offset": msg.ctx.offset,
        "is_error": is_error,
        "exit_code": exit_code,
        "duration_ms": end - start if start is not None and end is not None and end >= start else None,
        "output_chars": len(text),
        "interrupted": interrupted,
        "name": _str(data.get("name")),
    }
    contents = [("output", text)] if text else []
    if isinstance(output, str) and output and output not in text:
        contents.append(("stdout", output))
    call = _dict(_table(msg.state, "calls").get(call_id))
    if not call:
        _remember(_table(msg.state, "held"), call_id, info, MAX_HELD)
    return [_result_event(msg, call_id, call, info, contents=contents)]


def _result_event(msg: _Msg, call_id: str, call: dict[str, Any], info: dict[str, Any],
                  contents: list[tuple[str, str]] | None = None,
                  revision_bump: bool = False) -> Event:
    tool = _str(call.get("tool")) or _str(info.get("name"))
    command = call.get("command")
    inp = {"command": command} if isinstance(command, str) else None
    ev = msg.event(
        TOOL_RESULT, f"{NAME}:tool_result:{call_id}", _str(info.get("ts")), tool=tool,
        call_id=call_id, input=inp, contents=contents or [],
        data={k: info.get(k) for k in ("is_error", "exit_code", "duration_ms", "output_chars",
                                       "interrupted")},
    )
    if revision_bump:
        ev.revision = (as_int(info.get("rev")) or 0) + 1
        ev.offset = as_int(info.get("offset")) or ev.offset
    return ev


def _metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _exit_status(text: str, output: Any, metadata: dict[str, Any],
                 is_error: bool) -> tuple[int | None, bool]:
    """The bash tool's exit code and whether it was aborted: a run (its metadata has a
    start time) ends its output with ``Exit code N`` when N is not 0, or with the abort
    notice; a refused or invalid call (an error result) ran nothing."""
    if is_error or "start_time" not in metadata:
        return None, False
    body = output if isinstance(output, str) else text
    if body.rstrip().endswith(ABORTED_OUTPUT):
        return None, True
    found = _EXIT_CODE.search(body.rstrip())
    return (int(found.group(1)) if found else 0), False
