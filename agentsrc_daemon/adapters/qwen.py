"""Qwen Code chat recordings -> normalized records.

Qwen Code (a fork of Gemini CLI) records each session as one append-only JSONL file,
``~/.qwen/projects/<sanitized cwd>/chats/<session id>.jsonl`` (``$QWEN_RUNTIME_DIR``
replaces ``~/.qwen``). Each line is a ``ChatRecord`` (``packages/core/src/services/
chatRecordingService.ts``): ``{uuid, parentUuid, sessionId, timestamp, type, subtype?,
cwd, version, gitBranch, message?: {role, parts}, model?, usageMetadata?,
toolCallResult?, systemPayload?}`` with ``type`` one of

* ``user``: what was sent in the user's role (``parts`` of text; ``systemPayload.
  displayText`` is what the person typed when the sent text was expanded); subtypes
  for what was not typed then (``cron``, ``notification``, ``goal_runtime``) and for a
  message typed while a turn ran (``mid_turn_user_message``);
* ``assistant``: the model's answer, its ``text``, ``thought`` and ``functionCall``
  parts, the ``model``;
* ``tool_result``: ``functionResponse`` parts (``{id, name, response: {output |
  error}}``) and the UI's ``toolCallResult`` (``status``: success, error, cancelled);
* ``system``: ``ui_telemetry`` (each API response with its tokens, API errors, tool
  calls), ``chat_compression``, ``custom_title``, ``turn_result`` and records that only
  serve the UI on resume (slash commands, snapshots...).

Usage comes from the ``api_response`` telemetry: one record per request the CLI made,
side requests and retries included, written before the answer it belongs to. An
assistant record's own ``usageMetadata`` repeats the last of them; it is used only when
no telemetry came before it (versions that wrote none), so a request counts once.

The first versions wrote Gemini CLI's whole-document chats under ``~/.qwen/tmp/<project
hash>/chats/session-*.json``: ``parse_document`` reads them (adapters/qwen_documents.py).

Every key is built from the record's own ``uuid`` (``qwen:<uuid>[:<part>]``): ``/branch``
copies records, uuid and all, into the new session's file with ``forkedFrom``; such a
copy is held as a copy (``events.CLAIM_COPY``), so a record counts once, for the session
that wrote it when its file is read."""

from __future__ import annotations

import os
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
    first_line,
    json_text,
    normalize_ts,
    open_turn_in_state,
    remember_bounded,
    storable_input,
    summarize_input,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text
from .qwen_documents import (
    NAME,
    SHELL_TOOL,
    parse_conversation,
    shell_exit_code,
    thoughts_counted_in_output,
    usage_data,
)

STATE_SCHEMA = 1

HANDLED_RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
# System records turned into events or facts.
HANDLED_SYSTEM = frozenset({"ui_telemetry", "chat_compression", "custom_title", "turn_result",
                            "parent_session"})
# System records that only let the CLI rebuild its UI, its model history or its own
# state on resume: nothing a session record needs (docs/formats.md, Qwen Code).
IGNORED_SYSTEM = frozenset(
    {
        "slash_command",  # a custom command's expansion arrives as the user record after it
        "at_command",  # the files an @-mention read: their text is in the user record
        "attribution_snapshot",
        "file_history_snapshot",
        "session_notes",
        "session_source",
        "session_model",
        "session_approval_mode",
        "session_execution_engine",
        "session_artifact_event",
        "session_artifact_snapshot",
        "session_sources_snapshot",
        "omni_recall",
        "rewind",  # the rewound records stay in the file and stay counted
        "agent_bootstrap",
        "agent_retry",
        "agent_session_ready",
        "user_text_elements",
        "branch_checkpoint",
        "goal_state",
        "goal_turn_end",
        "background_task_completed",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)
# User-role records a person did not type: the runtime's and other agents' messages.
DIRECTIVE_SUBTYPES = frozenset({"cron", "notification", "goal_runtime", "agent_launch_prompt"})
# User-role records a person typed (besides the plain ones).
TYPED_SUBTYPES = frozenset({"mid_turn_user_message", "realtime_message"})
# Telemetry events: responses (usage), errors; tool calls repeat the tool results.
IGNORED_TELEMETRY = frozenset({"qwen-code.tool_call"})
# Auth types whose output count already holds the thoughts (uiTelemetry.ts).
THOUGHTS_IN_OUTPUT = frozenset({"openai", "qwen-oauth"})

TITLE_PROMPT, TITLE_AUTO, TITLE_MANUAL = 1, 2, 3
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500
MAX_PENDING_CALLS = 2000
MAX_PENDING_INPUT_BYTES = 64 * 1024


# --------------------------------------------------------------------------- context


def _key(line: LineContext, *suffix: str) -> str:
    """``qwen:<uuid>[:<suffix>]``, else where the line sits."""
    if line.record_id is None:
        return line.position_key()
    return ":".join((line.record_id, *suffix)) if suffix else line.record_id


def _version_rule(state: dict[str, Any], obj: Any) -> str:
    own = _str(_dict(obj).get("version"))
    return own or _str(state.get("version")) or "unknown"


def _fresh_state(source_path: str) -> dict[str, Any]:
    stem = os.path.basename(source_path).rsplit(".", 1)[0]
    return {
        "schema": STATE_SCHEMA,
        "session": stem or "unknown",  # until a record names it
        "version": None,
        "cwd": None,
        "since": None,  # the file's first time (a copy's claim)
        "turn": None,  # the latest turn (its prompt's key)
        "turn_open": False,
        "turn_model": None,
        "last_ts": None,
        "model": None,  # last model reported in SessionFacts
        "title_rank": 0,
        "title": None,
        "telemetry": False,  # an api_response came since the last answer
        "pending": {},  # call id -> {"tool", "input"}
    }


# The line context's rules (common.LineRules): the session, cwd and version are each
# record's own (fixed per line); the open turn is read from the state.
RULES = LineRules(
    agent=NAME,
    key=_key,
    turn=open_turn_in_state,
    version=_version_rule,
    fresh_state=_fresh_state,
    state_schema=STATE_SCHEMA,
    state_tables=("pending",),
    record_types=HANDLED_RECORD_TYPES,
)


def _line(obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any],
          out: list[Record]) -> LineContext:
    native = _str(obj.get("sessionId")) or _str(state.get("session")) or "unknown"
    state["session"] = native
    ts = normalize_ts(obj.get("timestamp"))
    if ts is not None and state.get("since") is None:
        state["since"] = ts
    cwd = _str(obj.get("cwd")) or _str(state.get("cwd"))
    if cwd:
        state["cwd"] = cwd
    version = _str(obj.get("version"))
    if version and version != "unknown":
        state["version"] = version
    uuid = _str(obj.get("uuid"))
    subagent = _str(obj.get("agentId")) or ("sidechain" if obj.get("isSidechain") is True else None)
    claim = None
    if isinstance(obj.get("forkedFrom"), dict):
        claim = (CLAIM_COPY, _str(state.get("since")), None)
    return LineContext(
        RULES, source_path, offset, state, ts, out, native, obj,
        f"{NAME}:{uuid}" if uuid else None, None, cwd, subagent, claim,
    )


# --------------------------------------------------------------------------- small readers


def _parts(obj: dict[str, Any]) -> list[dict[str, Any]]:
    parts = _dict(obj.get("message")).get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(parts: list[dict[str, Any]]) -> str:
    """The text parts, thoughts left out."""
    return "".join(
        p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought") is not True
    )


# --------------------------------------------------------------------------- facts


def _facts(line: LineContext, model: str | None = None) -> None:
    state = line.state
    if line.ts is not None:
        state["last_ts"] = line.ts
    reported = None
    if model and line.subagent_id is None and model != state.get("model"):
        state["model"] = model
        reported = model
    line.facts(
        cwd=line.cwd,
        model=reported,
        version=_str(state.get("version")),
        started_at=line.ts,
        last_event_at=line.ts,
    )


def _title(line: LineContext, text: str, rank: int) -> None:
    """The first typed prompt titles the session until Qwen's generated title (auto),
    which a title the person set (/rename, manual) replaces; a later title of the same
    rank replaces an earlier one."""
    state = line.state
    if line.subagent_id is not None:
        return
    current = as_int(state.get("title_rank")) or 0
    if rank < current or (rank == TITLE_PROMPT and current == TITLE_PROMPT):
        return
    title = first_line(text, MAX_TITLE_CHARS)
    if not title or title == state.get("title"):
        return
    state["title_rank"], state["title"] = rank, title
    line.facts(title=title)


# --------------------------------------------------------------------------- records


def _user(line: LineContext) -> None:
    obj = line.obj
    subtype = _str(obj.get("subtype"))
    parts = _parts(obj)
    for part in parts:
        if isinstance(part.get("functionResponse"), dict):
            _tool_result(line, part, {})  # a result sent in a plain user record
    sent = _text(parts)
    display = _dict(obj.get("systemPayload")).get("displayText")
    shown = display if isinstance(display, str) else sent
    if subtype in DIRECTIVE_SUBTYPES:
        text = shown.strip()
        if text:
            line.event(DIRECTIVE, line.key(), data={"text": text, "source": subtype})
        return
    if subtype is not None and subtype not in TYPED_SUBTYPES:
        line.drift(f"user/{subtype}")
        return
    text = person_text(shown)
    if not text:
        return
    contents = []
    if sent.strip() and sent.strip() != shown.strip():
        contents.append(("context", sent))  # the expanded text the model saw
    if line.subagent_id is not None or subtype == "mid_turn_user_message":
        # A sub-agent's brief, or a message typed while a turn ran: in the open turn.
        line.event(PROMPT, line.key(), data={"text": text}, contents=contents)
        return
    key = line.key()
    line.open_turn(key, ts=line.ts, cwd=line.cwd, model=_str(line.state.get("model")))
    line.state["turn_model"] = _str(line.state.get("model"))
    line.event(PROMPT, key, data={"text": text}, contents=contents)
    _title(line, text, TITLE_PROMPT)


def _assistant(line: LineContext) -> str | None:
    obj = line.obj
    parts = _parts(obj)
    model = _str(obj.get("model"))
    text = _text(parts).strip()
    if text:
        line.event(MESSAGE, line.key(), data={"text": text, "model": model})
    for index, part in enumerate(parts):
        if part.get("thought") is True:
            thought = part.get("text")
            line.event(REASONING, line.key("thought", str(index)),
                       data={"chars": len(thought) if isinstance(thought, str) else 0})
        call = part.get("functionCall")
        if isinstance(call, dict):
            _tool_call(line, call, index)
    state = line.state
    usage = obj.get("usageMetadata")
    if isinstance(usage, dict) and not state.get("telemetry"):
        _usage_from_metadata(line, usage, model)
    state["telemetry"] = False
    turn = line.turn_id
    if model and turn is not None and line.subagent_id is None and state.get("turn_model") != model:
        state["turn_model"] = model
        line.emit(TurnFacts(line.session_id, turn, model=model))
    return model


def _tool_call(line: LineContext, call: dict[str, Any], index: int) -> None:
    call_id = _str(call.get("id")) or f"{line.record_id or line.offset}.{index}"
    name = _str(call.get("name"))
    raw = call.get("args")
    args: dict[str, Any] = raw if isinstance(raw, dict) else ({} if raw is None else {"raw": raw})
    kept = storable_input(args, MAX_PENDING_INPUT_BYTES)
    remember_bounded(_table(line.state, "pending"), call_id, {"tool": name, "input": kept},
                     MAX_PENDING_CALLS)
    line.event(TOOL_CALL, line.key("call", call_id), tool=name, call_id=call_id,
               data={"input": summarize_input(args)}, input=args)


def _tool_result(line: LineContext, part: dict[str, Any], info: dict[str, Any]) -> None:
    response = _dict(part.get("functionResponse"))
    call_id = _str(response.get("id")) or _str(info.get("callId"))
    pending = _dict(_table(line.state, "pending").pop(call_id, None)) if call_id else {}
    tool = _str(response.get("name")) or _str(pending.get("tool"))
    body = response.get("response")
    texts: list[str] = []
    if isinstance(body, dict):
        output, error = body.get("output"), body.get("error")
        if isinstance(output, str) or isinstance(error, str):
            texts = [v for v in (output, error) if isinstance(v, str)]
        elif body:
            texts = [json_text(body)]
    elif isinstance(body, str):
        texts = [body]
    status = _str(info.get("status"))
    is_error = status in ("error", "cancelled") if status else (
        isinstance(body, dict) and "error" in body and "output" not in body
    )
    line.event(
        TOOL_RESULT,
        line.key("result", call_id or "?"),
        tool=tool,
        call_id=call_id,
        data={
            "is_error": is_error,
            "exit_code": shell_exit_code("\n".join(texts)) if tool == SHELL_TOOL else None,
            "duration_ms": None,
            "output_chars": sum(len(t) for t in texts),
            "interrupted": status == "cancelled",
        },
        input=_dict(pending.get("input")) if "input" in pending else None,
        contents=[("output", t) for t in texts if t],
    )


def _results(line: LineContext) -> None:
    info = _dict(line.obj.get("toolCallResult"))
    parts = [p for p in _parts(line.obj) if isinstance(p.get("functionResponse"), dict)]
    for part in parts:
        _tool_result(line, part, info)


def _usage_from_metadata(line: LineContext, usage: dict[str, Any], model: str | None) -> None:
    counts = [as_count(usage.get(k)) for k in (
        "promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount",
        "thoughtsTokenCount", "toolUsePromptTokenCount", "totalTokenCount")]
    if any(counts):
        line.event(USAGE, line.key("usage"),
                   data=usage_data(model, counts, thoughts_counted_in_output(counts)))


def _telemetry(line: LineContext, event: dict[str, Any]) -> None:
    name = _str(event.get("event.name")) or "<no name>"
    ts = normalize_ts(event.get("event.timestamp")) or line.ts
    if name == "qwen-code.api_response":
        counts = [as_count(event.get(k)) for k in (
            "input_token_count", "output_token_count", "cached_content_token_count",
            "thoughts_token_count", "tool_token_count", "total_token_count")]
        inside = _str(event.get("auth_type")) in THOUGHTS_IN_OUTPUT
        line.state["telemetry"] = True
        line.event(USAGE, line.key("usage"), ts=ts,
                   data=usage_data(_str(event.get("model")), counts, inside))
    elif name == "qwen-code.api_error":
        message = _str(event.get("error")) or "api error"
        line.event(ERROR, line.key("error"), ts=ts, data={
            "message": message[:MAX_ERROR_CHARS],
            "error_type": _str(event.get("error_type")),
            "status_code": as_int(event.get("status_code")),
        })
    elif name not in IGNORED_TELEMETRY:
        line.drift(f"ui_telemetry/{name}")


def _system(line: LineContext) -> None:
    obj = line.obj
    subtype = _str(obj.get("subtype")) or "<no subtype>"
    payload = _dict(obj.get("systemPayload"))
    if subtype in IGNORED_SYSTEM:
        return
    if subtype not in HANDLED_SYSTEM:
        line.drift(f"system/{subtype}")
    elif subtype == "ui_telemetry":
        _telemetry(line, _dict(payload.get("uiEvent")))
    elif subtype == "chat_compression":
        info = _dict(payload.get("info"))
        line.event(COMPACTION, line.key(), data={
            "trigger": None, "pre_tokens": as_int(info.get("originalTokenCount"))})
    elif subtype == "custom_title":
        title = _str(payload.get("customTitle"))
        if title:
            auto = payload.get("titleSource") == "auto"
            _title(line, title, TITLE_AUTO if auto else TITLE_MANUAL)
    elif subtype == "turn_result":
        result = _str(payload.get("state"))
        if line.subagent_id is None and result is not None:
            status = "complete" if result == "completed" else "aborted"
            line.close_turn(status, None if result == "completed" else result, at_marker=True)
    elif subtype == "parent_session":
        parent = _str(payload.get("parentSessionId"))
        if parent:
            line.facts(parent_session_id=session_key(NAME, parent))


# --------------------------------------------------------------------------- adapter


class QwenAdapter:
    name = NAME

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a record or document just read,
        for the fidelity tally: the type, ``user/<subtype>``, ``system/<subtype>``,
        ``system/ui_telemetry/<event name>``, a first version's whole ``conversation``."""
        version = _version_rule(state, obj)
        if not isinstance(obj, dict):
            return version, "<not an object>", False
        kind = obj.get("type")
        if not isinstance(kind, str):
            return version, "conversation" if isinstance(obj.get("messages"), list) else "<no type>", False
        subtype = _str(obj.get("subtype"))
        if kind == "system" and subtype == "ui_telemetry":
            event = _dict(_dict(obj.get("systemPayload")).get("uiEvent"))
            name = _str(event.get("event.name")) or "?"
            return version, f"system/ui_telemetry/{name}", name in IGNORED_TELEMETRY
        if kind == "system":
            name = subtype or "<no subtype>"
            return version, f"system/{name}", name in IGNORED_SYSTEM
        return version, f"{kind}/{subtype}" if subtype else kind, False

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """One record of a ``chats/<session>.jsonl`` file."""
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        out: list[Record] = []
        line = _line(obj, offset, source_path, state, out)
        record_type = obj["type"]
        model = None
        if record_type == "user":
            _user(line)
        elif record_type == "assistant":
            model = _assistant(line)
        elif record_type == "tool_result":
            _results(line)
        else:
            _system(line)
        _facts(line, model)
        return out

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        """A ``tmp/<project hash>/chats/session-*.json`` of Qwen Code's first versions."""
        return parse_conversation(obj, source_path, state)


ADAPTER = QwenAdapter()
