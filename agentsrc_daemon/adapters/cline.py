"""Cline, Roo Code and Kilo Code task folders -> normalized records.

The three VS Code extensions keep one folder per task (docs/formats.md, "Cline, Roo Code
and Kilo Code"; the sources: cline/cline ``src/shared/ExtensionMessage.ts`` and
``src/core/task``, RooCodeInc/Roo-Code ``packages/types/src/message.ts``): under
``<editor user dir>/globalStorage/<extension id>/tasks/<task id>/`` (and, for the Cline
CLI before its SDK, ``~/.cline/data/tasks/<task id>/``) three JSON documents, each
rewritten whole as the task runs:

* ``ui_messages.json``: every step the extension showed, ``{ts, type: say|ask, say|ask,
  text, ...}``: the task and the person's feedback, the model's text and reasoning, its
  tools (a JSON string in ``text``), commands and their output, ``api_req_started``
  with the request's tokens and cost. The task's record: its events come from here.
* ``api_conversation_history.json``: the Anthropic-style messages sent to the model.
  Cline's rows already hold what it says (each request's text): only its model and
  cwd are read. Roo Code's and Kilo Code's rows do not: their tool results (and the
  exit codes in them) come from here.
* ``task_metadata.json``: the files in context, the models and the extension versions
  used: the version and the model are read.

The Cline CLI and, since Cline's SDK, the extension keep ``~/.cline/data/sessions/<id>/``
instead: read by ``cline_sessions``.

A document is read whole when it changes; each row keeps a digest (and a revision) in
the state, so a rewrite emits only what changed, and a row that changed re-emits its
events under the same keys with a higher ``Event.revision``. Keys are built from the
task id and each row's ``ts`` (its n-th repeat in the document when two rows share one),
so a lost state cannot duplicate an event either.

Requests: one ``api_req_started`` row is one request. A failed request that is retried
is retried in the same row (its counts are reset and replaced), so each row is counted
once, with what it holds last; ``api_req_retried`` and ``error_retry`` rows are the
retries' notices. A row with no tokens and no cost (a request that failed) gives no
usage. ``deleted_api_reqs`` (a checkpoint restore that removed requests from the task)
carries their totals: what of them was not already counted from the removed rows is
counted there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
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
    Record,
    TurnFacts,
)
from . import cline_sessions
from .common import (
    LineContext,
    LineRules,
    as_count,
    begin,
    normalize_ts,
    stable_digest,
    summarize_input,
    text_of,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text, title_from

AGENTS = ("cline", "roo-code", "kilo-code")
# The agents whose UI rows hold no request text: their tool results come from the API
# history (tool_result blocks, or "[tool for 'x'] Result:" texts).
RESULTS_FROM_API = frozenset({"roo-code", "kilo-code"})
STATE_SCHEMA = 1
MAX_ROWS = 8192  # row digests kept (the oldest forgotten: their keys still dedupe)
MAX_REQUESTS = 4096  # requests' counts kept, for a later deleted_api_reqs
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500

# Rows that are the extension's own notices, progress or UI prompts: nothing to record.
IGNORED = frozenset(
    {
        "say/checkpoint_created", "say/checkpoint_saved", "say/task_progress",
        "say/api_req_retried", "say/error_retry", "say/api_req_finished",
        "say/api_req_retry_delayed", "say/api_req_rate_limit_wait",
        "say/shell_integration_warning", "say/shell_integration_warning_with_suggestion",
        "say/mcp_server_request_started", "say/load_mcp_documentation", "say/info",
        "say/hook_status", "say/hook_output_stream", "say/conditional_rules_applied",
        "say/clineignore_error", "say/rooignore_error", "say/user_feedback_diff",
        "say/image", "say/user_edit_todos", "say/too_many_tools_warning",
        "say/codebase_search_result", "say/subtask_result", "say/mcp_notification",
        "say/subagent", "say/command_permission_denied", "say/sliding_window_truncation",
        "ask/resume_task", "ask/resume_completed_task", "ask/completion_result",
        "ask/report_bug", "ask/condense", "ask/summarize_task",
        "ask/auto_approval_max_req_reached",
    }
)
MESSAGE_ROWS = frozenset({"say/completion_result", "say/plan_completion_result",
                          "ask/followup", "ask/plan_mode_respond", "ask/act_mode_respond"})
ERROR_ROWS = frozenset({"say/error", "say/diff_error", "say/condense_context_error",
                        "ask/api_req_failed", "ask/mistake_limit_reached"})
COMPACTION_ROWS = frozenset({"say/condense_context", "say/compaction"})
USAGE_FIELDS = (("tokensIn", "input_tokens"), ("tokensOut", "output_tokens"),
                ("cacheReads", "cache_read_tokens"), ("cacheWrites", "cache_creation_tokens"))
REQ_APP = "REQ_APP"  # Cline appends it to a command that waits for approval

# Where a request names the cwd (the environment details of the first request).
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \(([^)\n]+)\) Files")
# A tool result as Cline's and Roo Code's XML-era requests write it.
_RESULT_HEADER = re.compile(r"^\[([a-z_]+)(?: for '(.*?)')?\] Result:", re.DOTALL)
# Exit codes: Cline ("Command executed successfully (exit code 0)." / "Command failed
# with exit code N."), Roo Code and Kilo Code ("Command executed in terminal within
# working directory '...'. Exit code: N", the code on a line of its own after a failure).
_EXIT = re.compile(r"\(exit code (-?\d+)\)|failed with exit code (-?\d+)|Exit code: (-?\d+)")


def exit_code_in(text: str) -> int | None:
    match = _EXIT.search(text)
    if match is None:
        return None
    return int(next(g for g in match.groups() if g is not None))


def task_id_of(source_path: str) -> str:
    return os.path.basename(os.path.dirname(source_path))


def _fresh_state(source_path: str) -> dict[str, Any]:
    return {"schema": STATE_SCHEMA, "task": task_id_of(source_path), "rows": {},
            "requests": {}, "titled": False, "facts": False,
            "file": os.path.basename(source_path)}  # what the fidelity tally names


def _rules(agent: str) -> LineRules:
    return LineRules(
        agent=agent,
        native_id=lambda state: _str(state.get("task")) or "unknown",
        version=None,
        fresh_state=_fresh_state,
        state_schema=STATE_SCHEMA,
        state_tables=("rows", "requests"),
    )


RULES = {agent: _rules(agent) for agent in AGENTS}


# --------------------------------------------------------------------------- ui_messages


@dataclass
class _Walk:
    """What the rows before a row tell it, whether or not they changed: the turn, the
    model, the call awaiting its result and the command's output so far."""

    turn: str | None = None
    last_ts: str | None = None
    model: str | None = None
    provider: str | None = None
    call: tuple[str, str, dict[str, Any]] | None = None  # key, tool, input
    outputs: list[str] = field(default_factory=list)
    prompts: int = 0
    row_ts: int | None = None  # this row's ts as written (ms)
    previous_ts: int | None = None  # the row before it's
    present: set[str] = field(default_factory=set)  # the request rows of this version


def _row_kind(row: dict[str, Any]) -> str:
    kind = row.get("type")
    name = row.get(kind) if kind in ("say", "ask") else None
    return f"{kind}/{name}" if isinstance(kind, str) and isinstance(name, str) else "<no kind>"


def _ui(ctx: LineContext, rows: list[Any]) -> None:
    state = ctx.state
    table = _table(state, "rows")
    walk = _Walk()
    repeats: dict[Any, int] = {}
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            ctx.drift("row/<not an object>")
            continue
        raw_ts = row.get("ts")
        n = repeats.get(raw_ts, 0)
        repeats[raw_ts] = n + 1
        row_key = f"{raw_ts}" if n == 0 else f"{raw_ts}#{n}"
        digest = stable_digest(row, 6)
        entry = table.get(row_key)
        emit = not (isinstance(entry, list) and len(entry) == 2 and entry[0] == digest)
        if emit:
            revision = (as_count(entry[1]) + 1) if isinstance(entry, list) and len(entry) == 2 else 0
            table.pop(row_key, None)
            table[row_key] = [digest, revision]
            ctx.revision = revision
        ctx.ts = normalize_ts(raw_ts)
        walk.row_ts = raw_ts if isinstance(raw_ts, int) and not isinstance(raw_ts, bool) else None
        _row(ctx, walk, row, index, f"{ctx.rules.agent}:{ctx.native_id}:{row_key}", emit)
        ctx.revision = 0
        if ctx.ts is not None:
            walk.last_ts = ctx.ts
        if isinstance(raw_ts, int) and not isinstance(raw_ts, bool):
            walk.previous_ts = raw_ts
    while len(table) > MAX_ROWS:
        del table[next(iter(table))]
    if walk.last_ts is not None:
        ctx.facts(last_event_at=walk.last_ts)


def _row(ctx: LineContext, walk: _Walk, row: dict[str, Any], index: int, key: str, emit: bool) -> None:
    """One UI row by its kind. Long on purpose: one dispatch over the row kinds, a
    branch of a few lines each (docs/formats.md, "ui_messages.json"), kept in one place so
    the kinds read as the list they are."""
    kind = _row_kind(row)
    raw_text = row.get("text")
    text: str = raw_text if isinstance(raw_text, str) else ""
    info = _dict(row.get("modelInfo"))
    if _str(info.get("modelId")):
        walk.model, walk.provider = info["modelId"], _str(info.get("providerId"))
    if kind in ("say/task", "say/user_feedback") or (index == 0 and kind == "say/text"):
        # The task (Cline said "text" for it until 2026, Roo Code and Kilo Code do) and
        # the person's feedback: a prompt that opens a turn.
        _prompt(ctx, walk, key, text, emit)
        return
    if kind in IGNORED:
        return
    if kind == "say/api_req_started":
        _request(ctx, walk, key, text, emit)
    elif kind in ("say/deleted_api_reqs", "say/api_req_deleted"):
        if emit:
            _deleted_requests(ctx, walk, key, text)
    elif kind == "say/subagent_usage":
        if emit:
            _usage(ctx, walk, key, _json(text))
    elif kind in ("say/tool", "ask/tool"):
        spec = _json(text)
        tool = _str(spec.get("tool")) or "unknown"
        _call(ctx, walk, key, tool, {k: v for k, v in spec.items() if k != "tool"}, emit)
    elif kind in ("say/command", "ask/command"):
        command = text[: -len(REQ_APP)] if text.endswith(REQ_APP) else text
        _call(ctx, walk, key, "execute_command", {"command": command.strip()}, emit)
    elif kind in ("say/command_output", "ask/command_output"):
        if text:
            walk.outputs.append(text)
    elif kind in ("say/use_mcp_server", "ask/use_mcp_server"):
        spec = _json(text)
        tool = f"mcp:{_str(spec.get('serverName')) or '?'}/{_str(spec.get('toolName')) or _str(spec.get('uri')) or '?'}"
        arguments = _json(spec.get("arguments")) if isinstance(spec.get("arguments"), str) else {}
        _call(ctx, walk, key, tool, arguments, emit)
    elif kind in ("say/mcp_server_response", "say/browser_action_result"):
        walk.outputs.append(text)
    elif kind in ("say/browser_action_launch", "ask/browser_action_launch"):
        _call(ctx, walk, key, "browser_action", {"action": "launch", "url": text}, emit)
    elif kind == "say/browser_action":
        _call(ctx, walk, key, "browser_action", _json(text), emit)
    elif kind in ("ask/new_task", "ask/use_subagents", "say/use_subagents"):
        name = kind.split("/", 1)[1]
        _call(ctx, walk, key, name, _json(text) or {"context": text}, emit)
    elif not emit:
        return
    elif kind == "say/text":
        if text.strip():
            ctx.event(MESSAGE, f"{key}:message", turn_id=walk.turn, data={"text": text})
    elif kind == "say/reasoning":
        reasoning = text or _str(row.get("reasoning")) or ""
        ctx.event(REASONING, f"{key}:reasoning", turn_id=walk.turn, data={"chars": len(reasoning)})
    elif kind in MESSAGE_ROWS:
        spec = _json(text)
        said = _str(spec.get("question")) or _str(spec.get("response")) or text or ""
        if said.strip():
            ctx.event(MESSAGE, f"{key}:message", turn_id=walk.turn, data={"text": said})
    elif kind in ERROR_ROWS:
        message = _str(_json(text).get("message")) or text or kind
        ctx.event(ERROR, f"{key}:error", turn_id=walk.turn,
                  data={"message": message[:MAX_ERROR_CHARS], "error_type": kind.split("/", 1)[1]})
    elif kind in COMPACTION_ROWS:
        spec = _dict(row.get("contextCondense")) or _json(text)
        ctx.event(COMPACTION, f"{key}:compaction", turn_id=walk.turn,
                  data={"trigger": None, "pre_tokens": spec.get("prevContextTokens")
                        if isinstance(spec.get("prevContextTokens"), int) else None})
    else:
        ctx.drift(kind)


def _json(value: Any) -> dict[str, Any]:
    """A row's JSON text (tools, requests, questions) as an object; {} when it is none."""
    if not isinstance(value, str) or not value.startswith("{"):
        return {}
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {}
    return obj if isinstance(obj, dict) else {}


def _prompt(ctx: LineContext, walk: _Walk, key: str, text: str, emit: bool) -> None:
    """The person's text opens a turn (the previous one ends at the row before it)."""
    typed = person_text(text)
    if not typed:
        return
    previous, walk.turn = walk.turn, key
    walk.prompts += 1
    walk.call, walk.outputs = None, []
    if not emit:
        return
    sid = ctx.session_id
    if previous is not None:
        ended = walk.last_ts or ctx.ts
        ctx.event(TURN_END, f"{previous}:end", turn_id=previous, ts=ended,
                  data={"status": "complete", "reason": None})
        ctx.emit(TurnFacts(sid, previous, ended_at=ended, status="complete"))
    ctx.event(TURN_START, f"{key}:start", turn_id=key)
    ctx.emit(TurnFacts(sid, key, started_at=ctx.ts, status="open", model=walk.model))
    ctx.event(PROMPT, f"{key}:prompt", turn_id=key, data={"text": typed})
    facts: dict[str, Any] = {"started_at": ctx.ts} if walk.prompts == 1 else {}
    if walk.prompts == 1:
        facts["title"] = title_from(typed, MAX_TITLE_CHARS) or None
    if facts:
        ctx.facts(**facts)


def _call(ctx: LineContext, walk: _Walk, key: str, tool: str, arguments: dict[str, Any],
          emit: bool) -> None:
    walk.call, walk.outputs = (key, tool, arguments), []
    if not emit:
        return
    written = [(name, arguments[name]) for name in ("content", "diff")
               if isinstance(arguments.get(name), str) and arguments[name]
               and tool not in ("readFile", "listFilesTopLevel", "listFilesRecursive",
                                "listCodeDefinitionNames", "searchFiles")]
    ctx.event(TOOL_CALL, f"{key}:call", turn_id=walk.turn, tool=tool, call_id=key,
              data={"input": summarize_input(arguments)}, input=arguments, contents=written)


def _request(ctx: LineContext, walk: _Walk, key: str, text: str, emit: bool) -> None:
    """A request: the result of the call before it (Cline writes the request's text,
    which starts with that result), its usage, the cwd its first one names."""
    spec = _json(text)
    request = _str(spec.get("request")) or ""
    walk.present.add(key)
    call, outputs = walk.call, walk.outputs
    walk.call, walk.outputs = None, []
    if not emit:
        return
    if not ctx.state.get("facts"):
        match = _CWD.search(request)
        if match:
            ctx.state["facts"] = True
            ctx.facts(cwd=match.group(1).strip())
    if call is not None and ctx.rules.agent not in RESULTS_FROM_API:
        _result(ctx, walk, call, outputs, request)
    _usage(ctx, walk, f"{key}", spec)


def _result(ctx: LineContext, walk: _Walk, call: tuple[str, str, dict[str, Any]],
            outputs: list[str], request: str) -> None:
    call_key, tool, arguments = call
    header = _RESULT_HEADER.match(request)
    output = "\n".join(outputs)
    contents = [(label, text) for label, text in (("output", output), ("request", request)) if text]
    exit_code = exit_code_in(request) if tool == "execute_command" and header else None
    ctx.event(TOOL_RESULT, f"{call_key}:result", turn_id=walk.turn, tool=tool, call_id=call_key,
              data={"is_error": None, "exit_code": exit_code,
                    "output_chars": len(output) or len(request)},
              input=arguments, contents=contents)


def _usage(ctx: LineContext, walk: _Walk, key: str, spec: dict[str, Any]) -> None:
    counts = _counts(ctx.rules.agent, spec)
    cost = spec.get("cost")
    has_cost = isinstance(cost, int | float) and not isinstance(cost, bool)
    if not any(counts) and not (has_cost and cost):
        return  # no request was made, or it failed before anything was billed
    requests = _table(ctx.state, "requests")
    requests.pop(key, None)
    requests[key] = [*counts, cost if has_cost else 0]
    while len(requests) > MAX_REQUESTS:
        del requests[next(iter(requests))]
    _usage_event(ctx, walk, f"{key}:usage", counts, cost if has_cost else None)


def _counts(agent: str, spec: dict[str, Any]) -> list[int]:
    """input, output, cache read, cache write, as Anthropic counts them (input without
    the cache). Roo Code and Kilo Code (3.30 and later) write the whole input, cache
    included, as ``tokensIn``: taken out when it is at least the cache counts (an older
    row, whose input leaves them out, has an input below them when they are large)."""
    counts = [as_count(spec.get(name)) for name, _ in USAGE_FIELDS]
    if agent in RESULTS_FROM_API and counts[0] >= counts[2] + counts[3]:
        counts[0] -= counts[2] + counts[3]
    return counts


def _usage_event(ctx: LineContext, walk: _Walk, key: str, counts: list[int],
                 cost: float | None) -> None:
    data: dict[str, Any] = {name: n for (_, name), n in zip(USAGE_FIELDS, counts, strict=True)}
    data["reasoning_tokens"] = 0
    data["total_tokens"] = sum(counts)
    data["model"] = walk.model
    if walk.provider:
        data["provider"] = walk.provider
    if cost is not None:
        data["cost"] = cost
    ctx.event(USAGE, key, turn_id=walk.turn, data=data)


def _deleted_requests(ctx: LineContext, walk: _Walk, key: str, text: str) -> None:
    """The totals of the requests a checkpoint restore removed, less what was counted
    from those rows when they were seen (they are no longer in the document)."""
    spec = _json(text)
    cost = spec.get("cost")
    totals = [*_counts(ctx.rules.agent, spec), cost if isinstance(cost, int | float) else 0]
    prefix = f"{ctx.rules.agent}:{ctx.native_id}:"
    low, high = walk.previous_ts, walk.row_ts
    counted: list[float] = [0, 0, 0, 0, 0.0]
    for request_key, values in _table(ctx.state, "requests").items():
        ts = request_key[len(prefix) :].split("#", 1)[0] if request_key.startswith(prefix) else ""
        if not ts.isdigit() or request_key in walk.present or not isinstance(values, list):
            continue
        if (low is None or int(ts) > low) and (high is None or int(ts) < high):
            counted = [a + (b if isinstance(b, int | float) else 0)
                       for a, b in zip(counted, values, strict=False)]
    remainder = [int(max(0, t - c)) for t, c in zip(totals[:4], counted[:4], strict=True)]
    left = max(0.0, float(totals[4] or 0) - float(counted[4]))
    if any(remainder) or left:
        _usage_event(ctx, walk, f"{key}:usage", remainder, round(left, 10))


# --------------------------------------------------------------------------- api history


def _api_history(ctx: LineContext, messages: list[Any]) -> None:
    """The model's view: its model and the cwd (every agent); for Roo Code and Kilo
    Code, the tool results with what the model saw and the commands' exit codes."""
    state = ctx.state
    table = _table(state, "rows")
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    model = None
    for index, msg in enumerate(messages):
        if not isinstance(msg, dict):
            ctx.drift("message/<not an object>")
            continue
        role = msg.get("role")
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = blocks if isinstance(blocks, list) else []
        if role == "assistant":
            model = _str(_dict(msg.get("modelInfo")).get("modelId")) or model
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use" and _str(block.get("id")):
                    calls[block["id"]] = (_str(block.get("name")) or "unknown", _dict(block.get("input")))
            continue
        if role != "user":
            ctx.drift(f"message/{role if isinstance(role, str) else '<no role>'}")
            continue
        if not state.get("facts"):
            match = _CWD.search(text_of(blocks))
            if match:
                state["facts"] = True
                ctx.facts(cwd=match.group(1).strip())
        if ctx.rules.agent not in RESULTS_FROM_API:
            continue
        digest = stable_digest(msg, 6)
        if table.get(str(index)) == digest:
            continue
        table[str(index)] = digest
        ctx.ts = normalize_ts(msg.get("ts"))
        for n, block in enumerate(blocks):
            _api_result(ctx, calls, index, n, block)
    while len(table) > MAX_ROWS:
        del table[next(iter(table))]
    if model and model != state.get("model"):
        state["model"] = model
        ctx.facts(model=model)


def _api_result(ctx: LineContext, calls: dict[str, tuple[str, dict[str, Any]]], index: int,
                n: int, block: Any) -> None:
    if not isinstance(block, dict):
        return
    call_id = None
    if block.get("type") == "tool_result":
        call_id = _str(block.get("tool_use_id"))
        text = text_of(block.get("content")) if not isinstance(block.get("content"), str) else block["content"]
        tool, arguments = calls.get(call_id or "", (None, {}))
    elif block.get("type") == "text" and isinstance(block.get("text"), str):
        text = block["text"]
        header = _RESULT_HEADER.match(text)
        if header is None:
            return  # the person's text, environment details: the UI rows have them
        tool = header.group(1)
        arguments = {"command": header.group(2)} if tool == "execute_command" and header.group(2) else {}
    else:
        return
    exit_code = exit_code_in(text) if tool == "execute_command" else None
    ctx.event(TOOL_RESULT, f"{ctx.rules.agent}:{ctx.native_id}:api{index}.{n}:result", tool=tool,
              call_id=call_id, data={"is_error": block.get("is_error") if isinstance(
                  block.get("is_error"), bool) else None, "exit_code": exit_code,
                  "output_chars": len(text)},
              input=arguments or None, contents=[("output", text)] if text else [])


# --------------------------------------------------------------------------- task_metadata


def _metadata(ctx: LineContext, obj: dict[str, Any]) -> None:
    """The extension version and the model the task last ran with."""
    versions = [e for e in obj.get("environment_history") or [] if isinstance(e, dict)]
    version = next((_str(v) for e in reversed(versions) for k, v in e.items()
                    if k.endswith("_version") and k not in ("os_version", "host_version")
                    and _str(v)), None)
    models = [e for e in obj.get("model_usage") or [] if isinstance(e, dict)]
    model = _str(models[-1].get("model_id")) if models else None
    if version or model:
        ctx.facts(version=version, model=model)


# --------------------------------------------------------------------------- the adapters


class ClineAdapter:
    def __init__(self, name: str) -> None:
        self.name = name
        self.rules = RULES[name]

    def initial_state(self, source_path: str) -> dict[str, Any]:
        if cline_sessions.is_session_file(source_path):
            return cline_sessions.fresh_state(source_path)
        return _fresh_state(source_path)

    def parse(self, obj: dict[str, Any], offset: int, source_path: str,
              state: dict[str, Any]) -> list[Record]:
        """No JSONL: a line is drift."""
        return [LineContext(self.rules, source_path, offset, state).drift("line/<unexpected>")]

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """For the fidelity tally: each document one record, named by its file
        (``ui_messages``, ``api_conversation_history``, ``task_metadata``; a Cline SDK
        session's ``session/manifest`` and ``session/messages``). The version is in
        task_metadata.json alone, so it is not known here."""
        if "msgs" in state:  # a Cline SDK session's (cline_sessions.fresh_state)
            manifest = state.get("manifest") is True
            return "unknown", "session/manifest" if manifest else "session/messages", False
        name = state.get("file")
        kind = name[: -len(".json")] if isinstance(name, str) and name.endswith(".json") else None
        return "unknown", kind or "<unknown file>", False

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        if cline_sessions.is_session_file(source_path):
            return cline_sessions.parse(self.name, obj, source_path, state)
        begin(self.rules, obj, source_path, state)
        out: list[Record] = []
        ctx = LineContext(self.rules, source_path, 0, state, None, out)
        base = os.path.basename(source_path)
        if base == "ui_messages.json" and isinstance(obj, list):
            _ui(ctx, obj)
        elif base == "api_conversation_history.json" and isinstance(obj, list):
            _api_history(ctx, obj)
        elif base == "task_metadata.json" and isinstance(obj, dict):
            _metadata(ctx, obj)
        else:
            ctx.drift(f"document/{base}")
        return out


ADAPTERS = tuple(ClineAdapter(agent) for agent in AGENTS)
