"""Pi coding agent sessions -> normalized records.

Pi (badlogic/pi-mono, ``packages/coding-agent``) appends each session to
``~/.pi/agent/sessions/--<cwd, / as ->--/<timestamp>_<uuid>.jsonl``
(``$PI_CODING_AGENT_DIR`` replaces ``~/.pi/agent``); its ``docs/session.md`` and
``src/core/session-manager.ts`` are the spec:

* a ``session`` header ``{version, id, timestamp, cwd, parentSession?}`` (version 1 has
  none and no entry ids; 2 links entries into a tree by ``id``/``parentId``; 3 renamed
  the ``hookMessage`` role ``custom``);
* ``message`` entries holding an ``AgentMessage``: ``user`` (``content``: a string or
  text and image blocks), ``assistant`` (``text``, ``thinking``, ``toolCall`` blocks;
  ``provider``, ``model``, ``usage {input, output, cacheRead, cacheWrite, totalTokens,
  cost {total...}}``, ``stopReason``, ``errorMessage``), ``toolResult`` (``toolCallId``,
  ``toolName``, ``content``, ``isError``), ``bashExecution`` (a command the person ran
  with ``!``: ``command``, ``output``, ``exitCode``, ``cancelled``), ``custom`` (what an
  extension put in the model's context);
* ``model_change``, ``thinking_level_change``, ``compaction``, ``branch_summary``,
  ``custom``, ``custom_message``, ``label``, ``session_info`` (a name the person gave).

Pi rewrites a file whole only to migrate an old one (or to start it over when it is
empty or broken): the ids it then gives version-1 entries are new. So keys are built
from what does not change: ``pi:<entry time>:<digest of the entry's message or body>``.
A fork (``/fork``, ``forkFrom``) copies the parent's entries, times and all, into a new
file whose header names the parent: its entries older than its header are held as
copies (``events.CLAIM_COPY``), so each counts once, for the session that wrote it.

Pi records no version of itself: the session format's (``session-v3``) names drift.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..events import (
    CLAIM_COPY,
    COMPACTION,
    DIRECTIVE,
    ERROR,
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    USAGE,
    Record,
    TurnFacts,
    session_key,
)
from .common import (
    LineContext,
    LineRules,
    as_count,
    as_int,
    begin,
    cwd_in_state,
    first_line,
    normalize_ts,
    open_turn_in_state,
    remember_bounded,
    stable_digest,
    storable_input,
    summarize_input,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text

NAME = "pi"
STATE_SCHEMA = 1

HANDLED_RECORD_TYPES = frozenset(
    {"session", "message", "model_change", "compaction", "session_info", "custom_message"}
)
# Entries that change nothing a record holds: settings, an extension's own state,
# bookmarks, the summary of a branch left (its messages were read where they happened).
IGNORED_RECORD_TYPES = frozenset(
    {"thinking_level_change", "custom", "label", "branch_summary", "ephemeral", "context_transform"}
)
ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage"})
# Summaries Pi builds for the model from entries: never written as messages, ignored if seen.
IGNORED_ROLES = frozenset({"branchSummary", "compactionSummary"})
ASSISTANT_BLOCKS = frozenset({"text", "thinking", "toolCall"})
SHELL_TOOL = "bash"
USER_SHELL_TOOL = "user_bash"  # a command the person ran with ``!``: not a model's tool call
# The bash tool ends a failed command's result with this line (before 2025-12: began it).
_EXITED = re.compile(r"^Command exited with code (-?[0-9]+)\s*$")
_ABORTED = "Command aborted"

TITLE_PROMPT, TITLE_NAMED = 1, 2
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500
MAX_PENDING_CALLS = 2000
MAX_PENDING_INPUT_BYTES = 64 * 1024


def _key(line: LineContext, *suffix: str) -> str:
    base = line.record_id or line.position_key(0)
    return ":".join((base, *suffix)) if suffix else base


def _version_rule(state: dict[str, Any], obj: Any) -> str:
    return f"session-v{as_int(state.get('format')) or 1}"


def _native_of(state: dict[str, Any]) -> str:
    return str(state["session"])


def _native_from_path(source_path: str) -> str:
    """``<timestamp>_<uuid>.jsonl`` -> the uuid (the header names it too)."""
    stem = os.path.basename(source_path).rsplit(".", 1)[0]
    return stem.rsplit("_", 1)[-1] or "unknown"


def _fresh_state(source_path: str) -> dict[str, Any]:
    return {
        "schema": STATE_SCHEMA,
        "session": _native_from_path(source_path),
        "format": None,  # the header's version (1 when it has none)
        "started": None,  # the header's time: a fork's entries before it are copies
        "forked": False,
        "turn_copied": False,  # the open turn is a copy of the parent's (a fork)
        "cwd": None,
        "turn": None,
        "turn_open": False,
        "turn_model": None,
        "last_ts": None,
        "model": None,  # the model in use (model_change, the last answer)
        "reported_model": None,
        "title_rank": 0,
        "title": None,
        "pending": {},  # toolCallId -> {"tool", "input"}
    }


# The line context's rules (common.LineRules): the session (the header names it), the
# open turn and the cwd are read from the state; keys are each entry's content key.
RULES = LineRules(
    agent=NAME,
    key=_key,
    native_id=_native_of,
    turn=open_turn_in_state,
    cwd=cwd_in_state,
    version=_version_rule,
    fresh_state=_fresh_state,
    state_schema=STATE_SCHEMA,
    state_tables=("pending",),
    record_types=HANDLED_RECORD_TYPES,
    ignored_types=IGNORED_RECORD_TYPES,
)


def content_key(obj: dict[str, Any]) -> str:
    """``pi:<entry time>:<digest>`` of what a migration leaves as it is: the message (its
    ``hookMessage`` role read as ``custom``) or the entry without its tree links."""
    message = obj.get("message")
    if isinstance(message, dict):
        if message.get("role") == "hookMessage":
            message = dict(message, role="custom")
        body: Any = message
    else:
        body = {k: v for k, v in obj.items() if k not in ("id", "parentId")}
    ts = _str(obj.get("timestamp")) or "-"
    return f"{NAME}:{ts}:{stable_digest([obj.get('type'), body], 12)}"


# --------------------------------------------------------------------------- small readers


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def exit_code(text: str, is_error: bool) -> int | None:
    """A bash result's exit code: the ``Command exited with code N`` line Pi writes for a
    failure (last line now, first line before December 2025); a success is 0; an abort,
    a timeout or another error has none."""
    lines = text.rstrip("\n").split("\n")
    for candidate in (*lines[-3:], lines[0]):
        match = _EXITED.match(candidate)
        if match:
            return int(match.group(1))
    return None if is_error else 0


# --------------------------------------------------------------------------- entries


def _header(line: LineContext) -> None:
    obj, state = line.obj, line.state
    native = _str(obj.get("id"))
    if native:
        state["session"] = native
    state["format"] = as_int(obj.get("version")) or 1
    state["started"] = normalize_ts(obj.get("timestamp"))
    cwd = _str(obj.get("cwd"))
    if cwd:
        state["cwd"] = cwd
    parent = _str(obj.get("parentSession")) or _str(obj.get("branchedFrom"))
    state["forked"] = parent is not None
    line.facts(
        cwd=cwd,
        started_at=state["started"],
        version=_version_rule(state, obj),
        parent_session_id=session_key(NAME, _native_from_path(parent)) if parent else None,
    )


def _message(line: LineContext) -> None:
    message = _dict(line.obj.get("message"))
    role = _str(message.get("role"))
    if role == "user":
        _user(line, message)
    elif role == "assistant":
        _assistant(line, message)
    elif role == "toolResult":
        _tool_result(line, message)
    elif role == "bashExecution":
        _bash_execution(line, message)
    elif role in ("custom", "hookMessage"):
        text = "\n".join(_texts(message.get("content"))).strip()
        if text:
            line.event(DIRECTIVE, line.key(), data={"text": text, "source": _str(message.get("customType"))})
    elif role not in IGNORED_ROLES:
        line.drift(f"message/{role or '<no role>'}")


def _user(line: LineContext, message: dict[str, Any]) -> None:
    sent = "\n".join(_texts(message.get("content")))
    text = person_text(sent)
    if not text:
        return
    key = line.key()
    state = line.state
    if state.get("turn_copied") and line.claim is None:
        # A fork's first prompt of its own ends the parent's turn it copied: that end
        # is the copy's too (the parent's file ends the turn where it really ended).
        line.claim = (CLAIM_COPY, _str(state.get("started")), None)
        line.close_turn("complete", None)
        line.claim = None
    state["turn_copied"] = line.claim is not None
    line.open_turn(key, ts=line.ts, cwd=line.cwd, model=_str(state.get("model")))
    state["turn_model"] = _str(state.get("model"))
    contents = [("context", sent)] if sent.strip() != text else []
    line.event(PROMPT, key, data={"text": text}, contents=contents)
    _title(line, text, TITLE_PROMPT)


def _assistant(line: LineContext, message: dict[str, Any]) -> None:
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    model = _str(message.get("model"))
    provider = _str(message.get("provider"))
    for block in blocks:
        kind = _str(block.get("type"))
        if kind not in ASSISTANT_BLOCKS:
            line.drift(f"assistant/{kind or '<no type>'}")
    text = "\n".join(b["text"] for b in blocks
                     if b.get("type") == "text" and isinstance(b.get("text"), str)).strip()
    if text:
        line.event(MESSAGE, line.key(), data={"text": text, "model": model})
    for index, block in enumerate(blocks):
        if block.get("type") == "thinking":
            thinking = block.get("thinking")
            line.event(REASONING, line.key("thought", str(index)),
                       data={"chars": len(thinking) if isinstance(thinking, str) else 0})
        elif block.get("type") == "toolCall":
            _tool_call(line, block)
    usage = message.get("usage")
    if isinstance(usage, dict):
        _usage(line, usage, model, provider)
    stop = _str(message.get("stopReason"))
    if stop == "error":
        error = _str(message.get("errorMessage")) or "error"
        line.event(ERROR, line.key("error"), data={"message": error[:MAX_ERROR_CHARS],
                                                   "error_type": "error"})
    _set_model(line, model)
    if stop == "aborted":
        line.close_turn("aborted", "interrupted", at_marker=True)


def _usage(line: LineContext, usage: dict[str, Any], model: str | None, provider: str | None) -> None:
    counts = [as_count(usage.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")]
    if not any(counts):
        return
    uncached, output, read, written = counts
    total = as_int(usage.get("totalTokens"))
    data: dict[str, Any] = {
        "input_tokens": uncached,
        "output_tokens": output,
        "cache_read_tokens": read,
        "cache_creation_tokens": written,
        "reasoning_tokens": 0,
        "total_tokens": total if total is not None and total >= 0 else sum(counts),
        "model": model,
    }
    if provider:
        data["provider"] = provider
    cost = _dict(usage.get("cost")).get("total")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        data["cost"] = cost
    line.event(USAGE, line.key("usage"), data=data)


def _tool_call(line: LineContext, block: dict[str, Any]) -> None:
    call_id = _str(block.get("id"))
    name = _str(block.get("name"))
    raw = block.get("arguments")
    args: dict[str, Any] = raw if isinstance(raw, dict) else ({} if raw is None else {"raw": raw})
    if call_id:
        kept = storable_input(args, MAX_PENDING_INPUT_BYTES)
        remember_bounded(_table(line.state, "pending"), call_id, {"tool": name, "input": kept},
                         MAX_PENDING_CALLS)
    line.event(TOOL_CALL, line.key("call", call_id or "?"), tool=name, call_id=call_id,
               data={"input": summarize_input(args)}, input=args)


def _tool_result(line: LineContext, message: dict[str, Any]) -> None:
    call_id = _str(message.get("toolCallId"))
    pending = _dict(_table(line.state, "pending").pop(call_id, None)) if call_id else {}
    tool = _str(message.get("toolName")) or _str(pending.get("tool"))
    texts = _texts(message.get("content"))
    text = "\n".join(texts)
    is_error = message.get("isError") is True
    line.event(
        TOOL_RESULT,
        line.key(),
        tool=tool,
        call_id=call_id,
        data={
            "is_error": is_error if isinstance(message.get("isError"), bool) else None,
            "exit_code": exit_code(text, is_error) if tool == SHELL_TOOL else None,
            "duration_ms": None,
            "output_chars": len(text),
            "interrupted": is_error and text.rstrip().endswith(_ABORTED),
        },
        input=_dict(pending.get("input")) if "input" in pending else None,
        contents=[("output", t) for t in texts if t],
    )


def _bash_execution(line: LineContext, message: dict[str, Any]) -> None:
    """A command the person ran (``!cmd``; ``!!cmd`` keeps its output from the model): a
    command with its exit code, not a tool call of the model."""
    command = _str(message.get("command"))
    if command is None:
        return
    raw_output = message.get("output")
    output = raw_output if isinstance(raw_output, str) else ""
    code = as_int(message.get("exitCode"))
    cancelled = message.get("cancelled") is True
    seen = message.get("excludeFromContext") is not True
    line.event(
        TOOL_RESULT,
        line.key(),
        tool=USER_SHELL_TOOL,
        call_id=None,
        data={
            "is_error": cancelled or (code is not None and code != 0),
            "exit_code": code,
            "duration_ms": None,
            "output_chars": len(output),
            "interrupted": cancelled,
            "in_context": seen,
        },
        input={"command": command},
        contents=[("output", output)] if output and seen else [],
    )


def _set_model(line: LineContext, model: str | None, answered: bool = True) -> None:
    """The model in use: the session's; and the open turn's when it answered in it (a
    ``model_change`` between turns is the next turn's)."""
    if not model:
        return
    state = line.state
    state["model"] = model
    if state.get("reported_model") != model:
        state["reported_model"] = model
        line.facts(model=model)
    turn = line.turn_id
    if answered and turn is not None and state.get("turn_model") != model:
        state["turn_model"] = model
        line.emit(TurnFacts(line.session_id, turn, model=model))


def _title(line: LineContext, text: str, rank: int) -> None:
    """The first typed prompt, until the person names the session (``/name``)."""
    state = line.state
    current = as_int(state.get("title_rank")) or 0
    if rank < current or (rank == TITLE_PROMPT and current):
        return
    title = first_line(text, MAX_TITLE_CHARS)
    if title and title != state.get("title"):
        state["title_rank"], state["title"] = rank, title
        line.facts(title=title)


def _entry(line: LineContext) -> None:
    obj = line.obj
    kind = obj["type"]
    if kind == "message":
        _message(line)
    elif kind == "model_change":
        _set_model(line, _str(obj.get("modelId")), answered=False)
    elif kind == "compaction":
        line.event(COMPACTION, line.key(), data={
            "trigger": "extension" if obj.get("fromHook") is True else None,
            "pre_tokens": as_int(obj.get("tokensBefore")),
        })
    elif kind == "session_info":
        name = _str(obj.get("name"))
        if name:
            _title(line, name, TITLE_NAMED)
    elif kind == "custom_message":
        text = "\n".join(_texts(obj.get("content"))).strip()
        if text:
            line.event(DIRECTIVE, line.key(), data={"text": text, "source": _str(obj.get("customType"))})


class PiAdapter:
    name = NAME

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a line just read, for the
        fidelity tally: the entry type, ``message/<role>``; the version is the session
        format's (Pi writes none of its own)."""
        version = _version_rule(state, obj)
        if not isinstance(obj, dict):
            return version, "<not an object>", False
        kind = obj.get("type")
        if not isinstance(kind, str):
            return version, "<no type>", False
        if kind == "message":
            role = _dict(obj.get("message")).get("role")
            name = role if isinstance(role, str) else "<no role>"
            return version, f"message/{name}", name in IGNORED_ROLES
        return version, kind, kind in IGNORED_RECORD_TYPES

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """One line of a session file."""
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        out: list[Record] = []
        ts = normalize_ts(obj.get("timestamp"))
        claim = None
        started = _str(state.get("started"))
        if state.get("forked") and ts is not None and started is not None and ts < started:
            claim = (CLAIM_COPY, started, None)  # the parent's entry, copied by a fork
        key = None if obj["type"] == "session" else content_key(obj)
        line = LineContext(RULES, source_path, offset, state, ts, out, None, obj, key,
                           None, None, None, claim)
        if obj["type"] == "session":
            _header(line)
            return out
        _entry(line)
        if ts is not None:
            state["last_ts"] = ts
            line.facts(last_event_at=ts, started_at=ts)
        return out

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        return []  # sessions are JSONL (ingest/sources.py), never whole documents


ADAPTER = PiAdapter()
