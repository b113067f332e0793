"""GitHub Copilot CLI session logs -> normalized records.

Copilot CLI keeps its state in ``~/.copilot`` (``$COPILOT_HOME`` when set). Three
layouts (docs/formats.md, Copilot section):

* ``session-state/<sessionId>/events.jsonl`` (current), beside a ``workspace.yaml``;
* ``session-state/<sessionId>.jsonl`` (the first versions of that format);
* ``history-session-state/session_<sessionId>_<ms>.json`` (before 0.0.342): one JSON
  document ``{sessionId, startTime, chatMessages[...], timeline[...]}``, read by
  ``parse_document``.

The JSONL lines are ``{type, data, id, parentId, timestamp}`` events, append-only; an
event of a sub-agent carries ``agentId``. A user prompt opens a turn, which the next
prompt, an ``abort`` or the session's ``shutdown`` closes (``assistant.turn_start`` /
``turn_end`` mark each model call of the agent loop, not turns in our sense).

Token usage: ``assistant.message`` carries only ``outputTokens`` (the per-call
``assistant.usage`` events are never persisted); ``session.shutdown`` carries each
model's totals (input with cache reads and writes, output, reasoning). Output is counted
as messages arrive, and a shutdown adds, per model, what its totals hold beyond what was
already counted, so nothing is counted twice (see ``_on_shutdown``).

The module is pure. The ingest layer hands it the text of the ``workspace.yaml`` beside
a session (``CopilotAdapter.read_sidecar``): ``parse_workspace_yaml`` and
``workspace_records`` read it (no YAML library: only its top-level ``key: value``
lines); ``seed_cwd`` hands its cwd to the per-file state.

Long on purpose: one agent's event stream, each record type and its reason in one place.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import orjson

from ..events import (
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
    SessionFacts,
    TurnFacts,
    session_key,
)
from .common import (
    MAX_COUNT,
    LineContext,
    LineRules,
    as_count,
    begin,
    cwd_in_state,
    first_line,
    normalize_ts,
    open_turn_in_state,
    stable_digest,
    summarize_input,
    upgrade_state,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import parse_arguments as _parse_arguments
from .common import remember_bounded as _remember
from .common import state_table as _table

NAME = "copilot"
STATE_SCHEMA = 1

# Persisted event types that carry nothing we record (UI state, hooks, permissions,
# per-call loop markers, metadata we take from elsewhere).
IGNORED_TYPES = frozenset(
    {
        "system.message",  # the system prompt
        "system.notification",
        "assistant.turn_start",  # one model call of the agent loop
        "assistant.turn_end",
        "session.info",
        "session.warning",
        "session.compaction_start",  # its _complete carries the outcome
        "session.context_cleared",
        "session.usage_checkpoint",  # cost accounting, no tokens
        "session.remote_steerable_changed",
        "session.mode_changed",
        "session.plan_changed",
        "session.permissions_changed",
        "session.session_limits_changed",
        "session.workspace_file_changed",
        "session.schedule_created",
        "session.schedule_cancelled",
        "session.schedule_rearmed",
        "session.autopilot_objective_changed",
        "session.task_complete",
        "session.handoff",
        "session.binary_asset",
        "session.auto_mode_resolved",
        "session.canvas.recorded",
        "session.canvas.removed",
        "hook.start",  # hook.start repeats the tool result it is given
        "hook.end",
        "permission.requested",  # repeats the call's diff and new contents
        "permission.completed",
        "skill.invoked",
        "subagent.started",
        "subagent.completed",
        "subagent.failed",
        "subagent.selected",
        "subagent.deselected",
        "tool_search.activated",
        "external_tool.requested",
        "external_tool.completed",
    }
)
SHELL_TOOLS = frozenset({"bash", "powershell"})
# Written content in Copilot tool inputs, handed to the secret scanner (the stored
# input keeps only its size, see common.CONTENT_FIELDS).
WRITTEN_FIELDS = (("file_text", "write"), ("new_str", "new_string"))
INTERRUPTED_CODES = frozenset({"cancelled", "canceled", "aborted", "interrupted"})
_EXITED = re.compile(r"<[^<>\n]*\bexit code (-?[0-9]+)>\s*$")

MAX_PENDING_CALLS = 2000
MAX_PENDING_INPUT_BYTES = 64 * 1024  # bigger inputs are kept summarized in the state
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500
MAX_DOC_ENTRIES = 4096
USAGE_FIELDS = (
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "reasoningTokens",
)

_SESSION_FILE = re.compile(r"^session_(.+)_[0-9]+\.json$")


# --------------------------------------------------------------------------- helpers for ingest


def parse_workspace_yaml(text: str) -> dict[str, str | None]:
    """The top-level ``key: value`` lines of a ``workspace.yaml``: plain scalars, single-
    or double-quoted strings; ``null``/``~``/nothing is None. Nested blocks, lists and
    block scalars (``|``, ``>``) are not read: their key maps to None."""
    out: dict[str, str | None] = {}
    for raw in text.splitlines():
        if not raw or raw[0] in " \t#-" or raw.startswith("---") or ":" not in raw:
            continue
        key, _, rest = raw.partition(":")
        key = key.strip()
        if not key or (rest and rest[0] not in " \t"):
            continue  # "a:b" is a plain scalar, not a mapping key
        out[key] = _yaml_scalar(rest.strip())
    return out


def _yaml_scalar(value: str) -> str | None:
    if value in ("", "~", "null", "Null", "NULL") or value[0] in "|>&*!{[":
        return None
    if value[0] == "'":
        end = value.rfind("'")
        return value[1:end].replace("''", "'") if end > 0 else None
    if value[0] == '"':
        end = value.rfind('"')
        if end <= 0:
            return None
        try:
            decoded = json.loads(value[: end + 1])
        except ValueError:
            return value[1:end]
        return decoded if isinstance(decoded, str) else None
    comment = value.find(" #")
    return (value[:comment] if comment >= 0 else value).rstrip() or None


def workspace_records(text: str, source_path: str) -> list[Record]:
    """SessionFacts from a session's ``workspace.yaml``: its cwd, creation and update
    times, and a title when the user named the session (``user_named: true``) or Copilot
    summarized it. The session is the file's ``id``, else its directory's name."""
    fields = parse_workspace_yaml(text)
    native = fields.get("id") or os.path.basename(os.path.dirname(source_path)) or None
    if not native:
        return []
    title = fields.get("name") if fields.get("user_named") == "true" else fields.get("summary")
    facts = SessionFacts(
        session_id=session_key(NAME, native),
        agent=NAME,
        native_id=native,
        cwd=fields.get("cwd"),
        started_at=normalize_ts(fields.get("created_at")),
        last_event_at=normalize_ts(fields.get("updated_at")),
        title=(first_line(title, MAX_TITLE_CHARS) or None) if title else None,
    )
    return [facts]


def seed_cwd(state: dict[str, Any], cwd: str | None) -> None:
    """Give a file's state a cwd the ingest layer found (``workspace.yaml``): events carry
    it until the log names its own (``session.start`` context)."""
    if cwd and not _str(state.get("cwd")):
        state["cwd"] = cwd


# --------------------------------------------------------------------------- small readers


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _native_from_path(source_path: str) -> str:
    base = os.path.basename(source_path)
    if base == "events.jsonl":
        return os.path.basename(os.path.dirname(source_path)) or "unknown"
    match = _SESSION_FILE.match(base)
    if match:
        return match.group(1)
    return base.rsplit(".", 1)[0] if "." in base else base or "unknown"


def _fresh_state(source_path: str) -> dict[str, Any]:
    return {
        "schema": STATE_SCHEMA,
        "session": _native_from_path(source_path),
        "version": None,
        "cwd": None,
        "model": None,  # the model in use
        "reported_model": None,  # last model sent in SessionFacts
        "turn": None,  # the latest turn (its prompt's key)
        "turn_open": False,
        "turn_model": None,
        "last_ts": None,
        "titled": False,
        "reasoning_events": False,  # assistant.reasoning seen: messages' reasoning is not
        "pending": {},  # toolCallId -> {"tool", "input"}: calls emitted, awaiting results
        "usage_counted": {},  # model -> [in, out, cache read, cache write, reasoning]
        "usage_shutdown": {},  # model -> the totals of the last shutdown
        "doc": {},  # parse_document: timeline entry id -> digest of the version seen
    }


# --------------------------------------------------------------------------- line context


def _key(line: LineContext, suffix: str | None = None) -> str:
    """``copilot:<session>:<event id>[:suffix]``, or where the line sits."""
    if line.record_id is None:
        return line.position_key()
    base = f"{NAME}:{line.native_id}:{line.record_id}"
    return f"{base}:{suffix}" if suffix else base


def _native_of(state: dict[str, Any]) -> str:
    return str(state["session"])


# The line context's rules (common.LineRules): the session (session.start names it),
# the open turn and the cwd (session.start, context changes) are read from the state;
# an event's id keys what it yields; a sub-agent's events are fixed per line.
RULES = LineRules(
    agent=NAME,
    key=_key,
    native_id=_native_of,
    turn=open_turn_in_state,
    cwd=cwd_in_state,
    fresh_state=_fresh_state,
    state_schema=STATE_SCHEMA,
    not_object_drift=True,
)


# --------------------------------------------------------------------------- turns


def _start_turn(line: LineContext, turn: str) -> None:
    """A prompt opens a turn (closing the open one); its TurnFacts carry the model in use."""
    model = _str(line.state.get("model"))
    line.open_turn(turn, ts=line.ts, cwd=line.cwd, model=model)
    line.state["turn_model"] = model


def _set_model(line: LineContext, model: str | None) -> None:
    if not model:
        return
    state = line.state
    state["model"] = model
    if state.get("reported_model") != model:
        state["reported_model"] = model
        line.facts(model=model)
    turn = line.turn_id
    if turn is not None and state.get("turn_model") != model:
        state["turn_model"] = model
        line.emit(TurnFacts(line.session_id, turn, model=model))


def _title(line: LineContext, text: str) -> None:
    if line.state.get("titled") or line.subagent_id is not None:
        return
    title = first_line(text, MAX_TITLE_CHARS)
    if title:
        line.state["titled"] = True
        line.facts(title=title)


# --------------------------------------------------------------------------- events


def _on_start(line: LineContext, data: dict[str, Any], resumed: bool) -> None:
    state = line.state
    if not resumed:
        native = _str(data.get("sessionId"))
        if native:
            state["session"] = native
        version = _str(data.get("copilotVersion"))
        if version and version != "unknown":
            state["version"] = version
    context = _dict(data.get("context"))
    cwd = _str(context.get("cwd"))
    if cwd:
        state["cwd"] = cwd
    parent = _str(data.get("detachedFromSpawningParentSessionId"))
    line.facts(
        cwd=_str(state.get("cwd")),
        started_at=None if resumed else normalize_ts(data.get("startTime")) or line.ts,
        last_event_at=line.ts,
        version=_str(state.get("version")),
        originator=None if resumed else _str(data.get("producer")),
        parent_session_id=session_key(NAME, parent) if parent else None,
    )
    _set_model(line, _str(data.get("selectedModel")))


def _on_user(line: LineContext, data: dict[str, Any]) -> None:
    text = _text(data.get("content")).strip()
    if not text:
        return
    transformed = _text(data.get("transformedContent"))
    contents = (
        [("context", transformed)] if transformed.strip() and transformed.strip() != text else []
    )
    source = _str(data.get("source"))
    if line.subagent_id is not None:
        # A sub-agent's task: a prompt of the sub-agent, inside the parent's turn.
        line.event(PROMPT, line.key(), data={"text": text}, contents=contents)
        return
    if (source and source != "user") or data.get("isAutopilotContinuation") is True:
        # Injected by the runtime (a skill's text, another agent, autopilot): not a
        # prompt, and it neither opens nor closes a turn.
        line.event(DIRECTIVE, line.key(), data={"text": text, "source": source or "autopilot"})
        return
    turn = line.key()
    _start_turn(line, turn)
    line.event(PROMPT, turn, data={"text": text}, contents=contents)
    _title(line, text)


def _on_assistant(line: LineContext, data: dict[str, Any]) -> None:
    model = _str(data.get("model"))
    if line.subagent_id is None:
        _set_model(line, model)
    model = model or _str(line.state.get("model"))
    message_id = _str(data.get("messageId"))
    text = _text(data.get("content")).strip()
    if text:
        key = f"{NAME}:{line.native_id}:message:{message_id}" if message_id else line.key("message")
        line.event(MESSAGE, key, data={"text": text})
    reasoning = data.get("reasoningText")
    if not line.state.get("reasoning_events") and (
        isinstance(reasoning, str)
        and reasoning
        or data.get("reasoningOpaque")
        or data.get("encryptedContent")
    ):
        chars: dict[str, Any] = {"chars": len(reasoning)} if isinstance(reasoning, str) else {}
        line.event(REASONING, line.key("reasoning"), data=chars)
    requests = data.get("toolRequests")
    for request in requests if isinstance(requests, list) else []:
        request = _dict(request)
        _emit_call(
            line,
            _str(request.get("toolCallId")),
            _str(request.get("name")),
            request.get("arguments"),
        )
    output = as_count(data.get("outputTokens"))
    if output:
        _count(line, model, [0, output, 0, 0, 0])
        line.event(USAGE, line.key("usage"), data=_usage_data([0, output, 0, 0, 0], model))


def _emit_call(line: LineContext, call_id: str | None, tool: str | None, raw: Any) -> None:
    pending = _table(line.state, "pending")
    if call_id and call_id in pending:
        return  # already emitted from the assistant message (or the execution start)
    arguments = _parse_arguments(raw)
    contents = [
        (label, arguments[name])
        for name, label in WRITTEN_FIELDS
        if isinstance(arguments.get(name), str) and arguments[name]
    ]
    if call_id:
        kept = arguments
        if len(_json_bytes(arguments)) > MAX_PENDING_INPUT_BYTES:
            kept = summarize_input(arguments)
        _remember(pending, call_id, {"tool": tool, "input": kept}, MAX_PENDING_CALLS)
    line.event(
        TOOL_CALL,
        f"{NAME}:{line.native_id}:call:{call_id}" if call_id else line.key("call"),
        tool=tool,
        call_id=call_id,
        data={"input": summarize_input(arguments)},
        input=arguments,
        contents=contents,
    )


def _json_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=str)
    except TypeError:  # an integer past 64 bits
        return json.dumps(value, default=str).encode()


def _on_complete(line: LineContext, data: dict[str, Any]) -> None:
    call_id = _str(data.get("toolCallId"))
    call = _dict(_table(line.state, "pending").pop(call_id, None)) if call_id else {}
    tool = _str(call.get("tool"))
    result = _dict(data.get("result"))
    error = _dict(data.get("error"))
    content = _text(result.get("content"))
    detailed = _text(result.get("detailedContent"))
    message = _text(error.get("message"))
    contents = [
        ("output", text)
        for text in (content, detailed if detailed != content else "", message)
        if text
    ]
    success = data.get("success")
    exit_code = None
    if tool in SHELL_TOOLS:
        match = _EXITED.search(content)
        exit_code = int(match.group(1)) if match else None
    line.event(
        TOOL_RESULT,
        f"{NAME}:{line.native_id}:result:{call_id}" if call_id else line.key("result"),
        tool=tool,
        call_id=call_id,
        data={
            "is_error": (not success) if isinstance(success, bool) else None,
            "exit_code": exit_code,
            "duration_ms": None,
            "output_chars": len(content) or len(message),
            "interrupted": _str(error.get("code")) in INTERRUPTED_CODES,
        },
        input=_dict(call.get("input")) if "input" in call else None,
        contents=contents,
    )


def _count(line: LineContext, model: str | None, counts: list[int]) -> None:
    counted = _table(line.state, "usage_counted")
    before = counted.get(model or "")
    before = (
        before if isinstance(before, list) and len(before) == len(counts) else [0] * len(counts)
    )
    # A running sum kept in the file's state: held at MAX_COUNT (the state is JSON).
    counted[model or ""] = [min(as_count(a) + b, MAX_COUNT)
                            for a, b in zip(before, counts, strict=True)]


def _usage_data(counts: list[int], model: str | None) -> dict[str, Any]:
    prompt, output, cache_read, cache_write, reasoning = counts
    return {
        "input_tokens": prompt,  # Copilot's input count includes cache reads and writes
        "output_tokens": output,
        "cache_read_tokens": cache_read,
        "cache_creation_tokens": cache_write,
        "reasoning_tokens": reasoning,
        "total_tokens": prompt + output,
        "model": model,
    }


def _on_shutdown(line: LineContext, data: dict[str, Any]) -> None:
    """Per model, the shutdown's totals beyond what was counted since the previous
    shutdown. Totals that grew since that shutdown are cumulative (the increase is this
    lifetime's); totals that went down restarted with a resume (they are this lifetime's
    whole). Output already counted from messages is subtracted, so it counts once."""
    state = line.state
    metrics = _dict(data.get("modelMetrics"))
    counted = _table(state, "usage_counted")
    previous = _table(state, "usage_shutdown")
    unknown = counted.pop("", None)
    if isinstance(unknown, list) and len(metrics) == 1:
        only = next(iter(metrics))
        _count(line, only, [as_count(v) for v in unknown])
    for model, metric in metrics.items():
        usage = _dict(_dict(metric).get("usage"))
        totals = [as_count(usage.get(name)) for name in USAGE_FIELDS]
        before = previous.get(model)
        before = (
            before if isinstance(before, list) and len(before) == len(totals) else [0] * len(totals)
        )
        grew = all(t >= as_count(b) for t, b in zip(totals, before, strict=True))
        lifetime = [t - as_count(b) for t, b in zip(totals, before, strict=True)] if grew else totals
        done = counted.get(model)
        done = done if isinstance(done, list) and len(done) == len(totals) else [0] * len(totals)
        extra = [max(0, n - as_count(d)) for n, d in zip(lifetime, done, strict=True)]
        previous[model] = totals
        if any(extra):
            line.event(USAGE, line.key(f"usage:{model}"), data=_usage_data(extra, model))
    state["usage_counted"] = {}
    line.close_turn("complete", None)
    _set_model(line, _str(data.get("currentModel")))


def _on_compaction(line: LineContext, data: dict[str, Any]) -> None:
    if data.get("success") is False:
        message = _text(data.get("error")) or "compaction failed"
        line.event(
            ERROR,
            line.key(),
            data={"message": message[:MAX_ERROR_CHARS], "error_type": "compaction"},
        )
    else:
        pre = data.get("preCompactionTokens")
        line.event(
            COMPACTION,
            line.key(),
            data={
                "trigger": _str(data.get("trigger")),
                "pre_tokens": as_count(pre) if pre is not None else None,
            },
        )
    used = _dict(data.get("compactionTokensUsed"))
    if used:
        model = _str(used.get("model")) or _str(line.state.get("model"))
        counts = [
            as_count(used.get(k))
            for k in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
        ]
        counts.append(0)
        if any(counts):
            _count(line, model, counts)
            line.event(USAGE, line.key("usage"), data=_usage_data(counts, model))


def _dispatch(line: LineContext, kind: str, data: dict[str, Any]) -> None:
    state = line.state
    if kind == "session.start":
        _on_start(line, data, resumed=False)
    elif kind == "session.resume":
        _on_start(line, data, resumed=True)
    elif kind == "session.context_changed":
        cwd = _str(data.get("cwd"))
        if cwd and data.get("pendingGitContext") is not True:
            state["cwd"] = cwd
    elif kind == "session.model_change":
        _set_model(line, _str(data.get("newModel")))
    elif kind == "user.message":
        _on_user(line, data)
    elif kind == "assistant.message":
        _on_assistant(line, data)
    elif kind == "assistant.reasoning":
        state["reasoning_events"] = True
        content = data.get("content")
        reasoning_id = _str(data.get("reasoningId"))
        key = f"{NAME}:{line.native_id}:reasoning:{reasoning_id}" if reasoning_id else line.key()
        line.event(REASONING, key, data={"chars": len(content)} if isinstance(content, str) else {})
    elif kind in ("tool.execution_start", "tool.user_requested"):
        _emit_call(
            line, _str(data.get("toolCallId")), _str(data.get("toolName")), data.get("arguments")
        )
    elif kind == "tool.execution_complete":
        _on_complete(line, data)
    elif kind == "abort":
        if line.subagent_id is None:
            line.close_turn("aborted", _str(data.get("reason")), at_marker=True)
    elif kind == "session.error":
        message = _text(data.get("message")) or "error"
        error_type = _str(data.get("errorType")) or "error"
        line.event(
            ERROR, line.key(), data={"message": message[:MAX_ERROR_CHARS], "error_type": error_type}
        )
    elif kind == "session.compaction_complete":
        _on_compaction(line, data)
    elif kind == "session.truncation":
        pre = data.get("preTruncationTokensInMessages")
        line.event(
            COMPACTION,
            line.key(),
            data={"trigger": "truncation", "pre_tokens": as_count(pre) if pre is not None else None},
        )
    elif kind == "session.shutdown":
        _on_shutdown(line, data)
    elif kind not in IGNORED_TYPES:
        line.drift(kind)


# --------------------------------------------------------------------------- legacy document


def _document(line: LineContext, obj: dict[str, Any]) -> None:
    """``history-session-state/session_<id>_<ms>.json`` (before 0.0.342). The timeline
    has ids, times and texts; tool outputs come from the OpenAI-style ``chatMessages``
    (what the model saw). Entries seen before (same digest) are skipped."""
    state = line.state
    native = _str(obj.get("sessionId"))
    if native:
        state["session"] = native
    started = normalize_ts(obj.get("startTime"))
    timeline = obj.get("timeline")
    if not isinstance(timeline, list):
        line.drift("document/<no timeline>")
        return
    seen = _table(state, "doc")
    outputs: dict[str, str] | None = None
    latest: str | None = None
    for entry in timeline:
        entry = _dict(entry)
        entry_id = _str(entry.get("id"))
        if entry_id is None:
            continue
        digest = stable_digest(entry)
        done = seen.get(entry_id)
        done = done if isinstance(done, dict) else {}
        if done.get("h") == digest:
            continue
        done["h"] = digest
        _remember(seen, entry_id, done, MAX_DOC_ENTRIES)
        line.ts = normalize_ts(entry.get("timestamp"))
        line.record_id = entry_id
        latest = max(latest, line.ts) if latest and line.ts else (line.ts or latest)
        if outputs is None and entry.get("type") == "tool_call_completed":
            outputs = _tool_outputs(obj.get("chatMessages"))  # built once, when needed
        _timeline_entry(line, entry, done, outputs or {})
        state["last_ts"] = line.ts or state.get("last_ts")
    if started and state.get("doc_started") != started:
        state["doc_started"] = started
    else:
        started = None
    if started or latest:
        line.record_id = None
        line.facts(started_at=started, last_event_at=latest)


def _timeline_entry(
    line: LineContext, entry: dict[str, Any], done: dict[str, Any], outputs: dict[str, str]
) -> None:
    """One new or changed timeline entry; ``done`` marks the parts already emitted.
    ``outputs``: the chat's tool messages by call id (what the model saw)."""
    kind = entry.get("type")
    text = _text(entry.get("text")).strip()
    if kind in ("tool_call_requested", "tool_call_completed"):
        call_id = _str(entry.get("callId"))
        if not done.get("c"):
            done["c"] = 1
            _emit_call(line, call_id, _str(entry.get("name")), entry.get("arguments"))
        if kind == "tool_call_completed" and not done.get("r"):
            done["r"] = 1
            _legacy_result(line, entry, call_id, outputs)
        return
    if done.get("d"):
        return
    done["d"] = 1
    if kind == "user":
        if text:
            turn = line.key()
            _start_turn(line, turn)
            line.event(PROMPT, turn, data={"text": text})
            _title(line, text)
    elif kind == "copilot":
        if text:
            line.event(MESSAGE, line.key("message"), data={"text": text})
    elif kind == "error":
        data = {"message": (text or "error")[:MAX_ERROR_CHARS], "error_type": "error"}
        line.event(ERROR, line.key(), data=data)
    elif kind not in ("info", "warning"):
        line.drift(f"timeline/{kind if isinstance(kind, str) else '<no type>'}")


def _tool_outputs(messages: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for message in messages if isinstance(messages, list) else []:
        message = _dict(message)
        call_id = _str(message.get("tool_call_id"))
        if message.get("role") == "tool" and call_id:
            out[call_id] = _text(message.get("content"))
    return out


def _legacy_result(
    line: LineContext, entry: dict[str, Any], call_id: str | None, outputs: dict[str, str]
) -> None:
    result = _dict(entry.get("result"))
    output = outputs.get(call_id or "", "") or _text(result.get("log"))
    _on_complete(
        line,
        {
            "toolCallId": call_id,
            "success": result.get("type") == "success"
            if isinstance(result.get("type"), str)
            else None,
            "result": {"content": output},
        },
    )


# --------------------------------------------------------------------------- adapter


class CopilotAdapter:
    name = NAME

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, event type, ignored on purpose) of a line or document just read,
        for the fidelity tally (an ``ephemeral`` event is ignored by definition)."""
        version = _str(state.get("version")) or "unknown"
        if not isinstance(obj, dict):
            return version, "<not an object>", False
        kind = obj.get("type")
        if not isinstance(kind, str):
            return version, "document" if "chatMessages" in obj else "<no type>", False
        return version, kind, kind in IGNORED_TYPES or obj.get("ephemeral") is True

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        kind = obj.get("type")
        data = obj.get("data")
        agent = _str(obj.get("agentId")) or _str(_dict(data).get("parentToolCallId"))
        out: list[Record] = []
        ts = normalize_ts(obj.get("timestamp"))
        line = LineContext(
            RULES, source_path, offset, state, ts, out, record_id=_str(obj.get("id")), subagent_id=agent
        )
        if not isinstance(kind, str):
            line.drift("<no type>")
        elif obj.get("ephemeral") is True:
            pass  # transient by definition: never meant to be in the log
        elif not isinstance(data, dict):
            if kind not in IGNORED_TYPES:
                line.drift(f"{kind}/<no data>")
        else:
            _dispatch(line, kind, data)
        if ts is not None:
            state["last_ts"] = ts
        return out

    def read_sidecar(self, text: str, sidecar_path: str, state: dict[str, Any]) -> list[Record]:
        """A session's ``workspace.yaml``: SessionFacts (cwd, times, a title), and the
        cwd for the log's events until the log names its own."""
        records = workspace_records(text, sidecar_path)
        for rec in records:
            if isinstance(rec, SessionFacts):
                seed_cwd(state, rec.cwd)
        return records

    def parse_document(
        self, obj: Any, source_path: str, state: dict[str, Any] | None = None
    ) -> list[Record]:
        """The legacy ``history-session-state`` document; anything else yields nothing."""
        if state is None:
            state = _fresh_state(source_path)
        upgrade_state(state, source_path, RULES)
        out: list[Record] = []
        line = LineContext(RULES, source_path, 0, state, None, out)
        if not isinstance(obj, dict):
            return []
        _document(line, obj)
        return out


ADAPTER = CopilotAdapter()
