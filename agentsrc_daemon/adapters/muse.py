"""Muse adapter: one line of ``<agents root>/<agentId>/sessions/<agentId>.jsonl`` in,
normalized records out; ``parse_document`` reads the runtime index ``sessions.json``
beside it for the model.

Record layout (no public sample exists; shapes follow the Muse provider notes):

* ``{"type": "session_header", "session_id", "agent_id", "created_at"}``, once per file.
* ``{"type": "item", "seq", "source", "item": {...}, "created_at"}``: transcript items
  ``message`` / ``message_parts`` (role user | assistant | developer), ``thinking``,
  ``commentary_text``, ``function_call``, ``function_call_output``.
* ``{"type": "compaction_checkpoint", "compaction_id", "trigger", "summary"}``: the
  summary is a whole conversation retold and is never read.

See docs/formats-muse.md for what is derived from which record and why.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from ..events import (
    COMPACTION,
    DIRECTIVE,
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    Event,
    Record,
    SessionFacts,
    session_key,
)
from .common import (
    LineContext,
    LineRules,
    begin,
    cwd_in_state,
    normalize_ts,
    open_turn_in_state,
    parse_arguments,
    summarize_input,
    text_of,
)
from .common import as_dict as _dict
from .common import as_int as _int
from .common import first_line as common_first_line
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text

NAME = "muse"

HANDLED_RECORD_TYPES = frozenset({"session_header", "item", "compaction_checkpoint"})
HANDLED_ITEM_TYPES = frozenset(
    {
        "message",
        "message_parts",
        "thinking",
        "commentary_text",
        "function_call",
        "function_call_output",
    }
)
# Roles whose messages are runtime/system instructions, not conversation: skipped.
SKIPPED_ROLES = frozenset({"developer", "system"})
# Muse's built-in tools, renamed to the names the rest of the daemon knows.
TOOL_NAMES = {"exec": "Bash", "read": "Read", "edit": "Edit", "write": "Write"}
FILE_TOOLS = frozenset({"read", "edit", "write"})
ARGUMENT_NAMES = {"path": "file_path", "old_text": "old_string", "new_text": "new_string"}

MAX_PENDING_CALLS = 2000
MAX_PENDING_INPUT_BYTES = 64 * 1024  # bigger inputs are kept summarized in the state
MAX_TITLE_CHARS = 120

_EPOCH = re.compile(r"[0-9]+(\.[0-9]+)?")


def is_directive_source(source: str | None) -> bool:
    """Dotted ``runtime.*`` sources and ``scheduler.cron`` label what the runtime injects
    (feed jobs, self-improvement runs, cron workers). A bare ``runtime`` is interactive."""
    return source is not None and (source == "scheduler.cron" or source.startswith("runtime."))


def muse_ts(value: Any) -> str | None:
    """Muse writes ISO strings, and in places epoch seconds: numbers, or digit strings
    that may carry a fraction (normalize_ts reads integers only)."""
    if isinstance(value, str) and _EPOCH.fullmatch(value.strip()):
        return normalize_ts(float(value))
    return normalize_ts(value)


def map_tool(name: str | None, arguments: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Built-ins get their canonical name and argument names; namespaced tools
    (``memory_search``, ``subagent.spawn``...) pass through unchanged."""
    if name is None:
        return None, arguments
    if name in FILE_TOOLS:
        arguments = {ARGUMENT_NAMES.get(k, k): v for k, v in arguments.items()}
    return TOOL_NAMES.get(name, name), arguments


def _seq_key(obj: dict[str, Any], native_id: str) -> str | None:
    """``muse:<session>:<seq>`` when the record has a sequence number."""
    seq = obj.get("seq")
    if isinstance(seq, int) and not isinstance(seq, bool):
        return f"{NAME}:{native_id}:{seq}"
    if isinstance(seq, str) and seq.isascii() and seq.isdigit() and len(seq) < 20:
        return f"{NAME}:{native_id}:{int(seq)}"
    return None


def _key(line: LineContext) -> str:
    """The record's sequence key, else where the line sits in its file."""
    return line.record_id or line.position_key(0)


def _source(line: LineContext) -> str | None:
    """Who wrote the record: the user, the runtime, a scheduler (see is_directive_source)."""
    return _str(line.obj.get("source"))


# The line context's rules (common.LineRules): the session is fixed per line (the header
# names it before any item); the open turn and the cwd are read from the state.
RULES = LineRules(
    agent=NAME,
    key=_key,
    turn=open_turn_in_state,
    cwd=cwd_in_state,
    record_types=HANDLED_RECORD_TYPES,
)


class MuseAdapter:
    name = NAME

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a line or document just read,
        for the fidelity tally: the type, ``item/<item type>``."""
        version = _str(state.get("version")) or "unknown"
        if not isinstance(obj, dict):
            return version, "<not an object>", False
        record_type = obj.get("type")
        if record_type == "item":
            kind = _dict(obj.get("item")).get("type")
            return version, f"item/{kind if isinstance(kind, str) else '?'}", False
        if isinstance(record_type, str):
            return version, record_type, False
        return version, "document", False  # sessions.json

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return {
            "session": None,  # native session id from the header
            "version": None,
            "cwd": None,
            "turn": None,  # the latest turn (its prompt's key); events get it while open
            "turn_open": False,
            "last_ts": None,
            "titled": False,
            "pending": {},  # call_id -> {"tool": name, "input": input}
        }

    def parse_document(
        self, obj: Any, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """``sessions.json``, the runtime's index: the model of each session, from
        ``context_window_usage.model_id`` (a point-in-time snapshot; best effort).

        The shape is undocumented, so this looks in three places: the top level (the
        session named by its ``session_id``, else the agent of the directory), a
        ``sessions`` list of entries with ``session_id``, and a ``sessions`` object (or
        the top level itself) keyed by session id. Anything else yields nothing."""
        if not isinstance(obj, dict):
            return []
        agent_dir = os.path.basename(os.path.dirname(os.path.dirname(source_path)))
        found: dict[str, str] = {}

        def consider(entry: Any, fallback_id: str | None) -> None:
            entry = _dict(entry)
            model = _str(_dict(entry.get("context_window_usage")).get("model_id"))
            native = _str(entry.get("session_id")) or _str(entry.get("id")) or fallback_id
            if model and native:
                found.setdefault(native, model)

        consider(obj, agent_dir or None)
        sessions = obj.get("sessions")
        if isinstance(sessions, list):
            for entry in sessions:
                consider(entry, None)
        for container in (_dict(sessions), obj):
            for native, entry in container.items():
                if isinstance(entry, dict) and "context_window_usage" in entry:
                    consider(entry, native)
        return [
            SessionFacts(session_key(NAME, native), NAME, native, model=model)
            for native, model in found.items()
        ]

    # -- dispatch ---------------------------------------------------------------------

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        record_type = obj["type"]
        if record_type == "session_header":
            _read_header(obj, state)
        native_id = _native_session_id(source_path, state)
        ts = muse_ts(obj.get("created_at"))
        line = LineContext(
            RULES, source_path, offset, state, ts, None, native_id, obj, _seq_key(obj, native_id)
        )
        out: list[Record] = []
        if record_type == "item":
            out += _item(line)
        elif record_type == "compaction_checkpoint":
            out += _compaction(line)
        if ts:
            out.append(line.facts(cwd=_str(state.get("cwd")), started_at=ts, last_event_at=ts))
            state["last_ts"] = ts
        return out


ADAPTER = MuseAdapter()


def _read_header(obj: dict[str, Any], state: dict[str, Any]) -> None:
    native = _str(obj.get("session_id")) or _str(obj.get("agent_id"))
    if native:
        state["session"] = native
    for field, name in (("version", "version"), ("cwd", "cwd")):
        value = _str(obj.get(field))
        if value:
            state[name] = value


def _native_session_id(source_path: str, state: dict[str, Any]) -> str:
    """The header's session id; before (or without) a header, the transcript's name,
    which is the agent id."""
    native = _str(state.get("session"))
    if native:
        return native
    stem = os.path.basename(source_path)
    if stem.endswith(".jsonl"):
        stem = stem[: -len(".jsonl")]
    return stem or "unknown"


# -- items ------------------------------------------------------------------------------


def _item(line: LineContext) -> list[Record]:
    item = line.obj.get("item")
    if not isinstance(item, dict):
        return []
    item_type = item.get("type")
    if not isinstance(item_type, str):
        return [line.drift("item/<no type>")]
    if item_type not in HANDLED_ITEM_TYPES:
        return [line.drift(f"item/{item_type}")]
    source_data = {"source": _source(line)}
    if item_type in ("message", "message_parts"):
        return _message(line, item)
    if item_type == "commentary_text":
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            return []
        return [line.event(MESSAGE, line.key(), data={"text": text, **source_data})]
    if item_type == "thinking":
        thinking = item.get("thinking")
        data: dict[str, Any] = {"chars": len(thinking)} if isinstance(thinking, str) else {}
        return [line.event(REASONING, line.key(), data={**data, **source_data})]
    if item_type == "function_call":
        return [_tool_call(line, item)]
    return [_tool_result(line, item)]


def _message(line: LineContext, item: dict[str, Any]) -> list[Record]:
    role = item.get("role") if isinstance(item.get("role"), str) else None
    if role in SKIPPED_ROLES:
        return []
    text = item.get("text")
    if not isinstance(text, str):
        parts = item.get("parts")
        # Only text parts (or untyped ones) carry the message's words.
        text = text_of(
            [p for p in parts if not isinstance(p, dict) or p.get("type") in (None, "text")]
            if isinstance(parts, list)
            else parts
        )
    text = text.strip()
    if role == "assistant":
        if not text:
            return []
        return [line.event(MESSAGE, line.key(), data={"text": text, "source": _source(line)})]
    if role != "user":
        return [line.drift(f"item/{item.get('type')}/role:{role}")]
    if not text:
        return []
    if is_directive_source(_source(line)) or not person_text(text):
        # The runtime starts a job of its own (or a delegating agent briefs this one,
        # "[Subagent Context]": adapters/injected.py): the user's turn is over (Muse
        # writes no turn boundaries: a turn ends with the last event before the next
        # prompt or runtime directive), and the job's events belong to no turn until
        # the next real prompt.
        out = line.close_turn("complete", None)
        out.append(line.event(DIRECTIVE, line.key(), data={"text": text, "source": _source(line)}))
        return out
    # Each real prompt opens a turn, named by the prompt's key.
    out = line.open_turn(line.key(), ts=line.ts, cwd=line.cwd)
    out.append(line.event(PROMPT, line.key(), data={"text": text, "source": _source(line)}))
    # The session's title is its first real prompt.
    if not line.state.get("titled"):
        title = common_first_line(text, len(text))
        line.state["titled"] = True
        out.append(line.facts(title=title[:MAX_TITLE_CHARS]))
    return out


def _tool_call(line: LineContext, item: dict[str, Any]) -> Event:
    raw_name = _str(item.get("name"))
    name, arguments = map_tool(raw_name, parse_arguments(item.get("arguments")))
    call_id = _str(item.get("call_id"))
    if call_id:
        kept = arguments
        if len(orjson.dumps(arguments, default=str)) > MAX_PENDING_INPUT_BYTES:
            kept = summarize_input(arguments)
        pending = _table(line.state, "pending")
        pending.pop(call_id, None)
        pending[call_id] = {"tool": name, "input": kept}
        while len(pending) > MAX_PENDING_CALLS:
            del pending[next(iter(pending))]
    return line.event(
        TOOL_CALL,
        line.key(),
        tool=name,
        call_id=call_id,
        data={"input": summarize_input(arguments), "source": _source(line)},
        input=arguments,
    )


def _tool_result(line: LineContext, item: dict[str, Any]) -> Event:
    call_id = _str(item.get("call_id"))
    call = _dict(_table(line.state, "pending").pop(call_id, None)) if call_id else {}
    output = item.get("output")
    if isinstance(output, str):
        text = output
    elif output is None:
        text = ""
    else:
        text = orjson.dumps(output, default=str).decode()
    success = item.get("success")
    return line.event(
        TOOL_RESULT,
        line.key(),
        tool=_str(call.get("tool")),
        call_id=call_id,
        data={
            "is_error": (not success) if isinstance(success, bool) else None,
            "exit_code": None,
            "duration_ms": None,
            "output_chars": len(text),
            "interrupted": False,
            "source": _source(line),
        },
        input=_dict(call.get("input")) if "input" in call else None,
        contents=[("output", text)] if text else [],
    )


def _compaction(line: LineContext) -> list[Record]:
    """Metadata only: the checkpoint's summary is never read."""
    obj = line.obj
    key = line.record_id
    compaction_id = obj.get("compaction_id")
    if key is None and isinstance(compaction_id, int | str) and not isinstance(compaction_id, bool):
        key = f"{NAME}:{line.native_id}:compaction:{compaction_id}"
    return [
        line.event(
            COMPACTION,
            key or line.key(),
            data={
                "trigger": _str(obj.get("trigger")),
                "pre_tokens": _int(obj.get("pre_tokens")),
            },
        )
    ]
