"""OpenAI Codex CLI rollouts -> normalized records.

Codex writes one rollout per session under ``~/.codex/sessions/YYYY/MM/DD/``. Three
layouts exist (docs/formats.md, Codex section, has the per-version details):

* the ``{timestamp, type, payload}`` envelope (Codex 0.3x and later): ``session_meta``,
  ``turn_context``, ``event_msg``, ``response_item`` and ``compacted`` records;
* the older pre-envelope JSONL: a ``{id, timestamp, instructions, git}`` header line,
  ``{"record_type": "state"}`` lines and bare response items without timestamps;
* the legacy single-JSON ``.json`` rollout ``{"session": {...}, "items": [...]}``, read
  whole through ``parse_document``.

Codex records most things twice: a prompt as a ``response_item`` user message and as an
``event_msg/user_message``; assistant text as ``response_item`` and ``event_msg/
agent_message``. Each is counted once (see ``_seen_from_other_source``).

The module is pure: no file, database or socket access. All per-file memory lives in the
plain ``state`` dict, which the tail-reader persists with orjson after every batch.

Long on purpose: one agent's format across its versions (0.1x to 0.157 and vendor
builds), each record type and its reason in one place; the turn items of 0.144+ are in
codex_items.py.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import PurePath
from typing import Any

import orjson

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
    TURN_END,
    TURN_START,
    USAGE,
    Drift,
    Event,
    Record,
    SessionFacts,
    SpawnPoint,
    TurnFacts,
    line_key,
    session_key,
)
from . import codex_items as items
from .common import (
    LineContext,
    LineRules,
    begin,
    normalize_ts,
    remember_bounded,
    seconds_to_ms,
    summarize_input,
    text_of,
    upgrade_state,
)
from .common import as_dict as _dict
from .common import as_int as _int
from .common import nonempty_str as _str
from .common import parse_arguments as _parse_arguments
from .injected import person_text

AGENT = "codex"

# Bounds on the persisted state: it is rewritten after every batch, so it must stay small.
MAX_PENDING_CALLS = 2000  # calls awaiting their output; the oldest are dropped beyond this
MAX_PENDING_INPUT_BYTES = 64 * 1024  # a bigger call input is kept summarized, not in full
MAX_UNMATCHED = 16  # remembered prompt/message hashes waiting for their twin record
MAX_ERROR_CHARS = 500
TITLE_CHARS = 200  # a title is the first real prompt, whitespace squeezed, cut here
STATE_SCHEMA = 3  # bump when the state's keys change; older states get the new keys
SESSION_INDEX = "session_index.jsonl"  # ~/.codex: the threads' names, latest line wins
MAX_DONE_IDS = 256  # answered call ids and emitted item ids, for items recording them again

# A forked or resumed rollout copies the parent's history right after the parent's
# session_meta, in one burst (the copied records are a few milliseconds apart). The first
# record after a longer pause is new activity. See _continues_replay.
REPLAY_GAP_SECONDS = 1.0

RECORD_TYPES = (
    "session_meta",
    "turn_context",
    "event_msg",
    "response_item",
    "compacted",
    "token_usage_record",
    "world_state",
    "inter_agent_communication_metadata",
)
# Top-level records read for nothing, with the reason.
IGNORED_RECORD_TYPES = {
    "world_state": "a snapshot of the instructions and environment the model was given"
    " (the cwd and model come from turn_context)",
    "inter_agent_communication_metadata": "whether the next inter-agent message starts a"
    " turn; task_started says when one does",
}

# event_msg types that carry nothing we need, each with its reason: a duplicate of a
# response item or an item, or UI bookkeeping.
IGNORED_EVENT_MSG_TYPES: dict[str, str] = {
    "agent_reasoning": "the reasoning summary again; the reasoning item is counted",
    "agent_reasoning_raw_content": "the raw reasoning again; never stored",
    "agent_reasoning_section_break": "a break in the streamed reasoning",
    "agent_message_delta": "a piece of a message the item holds whole",
    "agent_reasoning_delta": "a piece of reasoning the item holds whole",
    "exec_command_begin": "a command started; its call and output are the records",
    "exec_command_output_delta": "a piece of output the call's output holds whole",
    "mcp_tool_call_begin": "an MCP call started; the function call is the record",
    "mcp_tool_call_end": "an MCP call's end; its output is the record",
    "patch_apply_begin": "a patch started; the apply_patch call is the record",
    "patch_apply_end": "a patch's end; its output is the record",
    "web_search_begin": "a search started; the web_search_call is the record",
    "web_search_end": "a search's end; the web_search_call is the record",
    "view_image_tool_call": "the view_image call again",
    "plan_update": "the update_plan call again",
    "turn_diff": "the turn's diff; the edits come from the patches",
    "background_event": "a notice the UI showed",
    "exited_review_mode": "review mode ended; its start links the review sub-agent",
    "undo_started": "an undo began; what it restores is Codex's own snapshot",
    "undo_completed": "an undo ended",
    "thread_rolled_back": "turns taken back; what they did happened and stays counted",
    "item_started": "an item started; its item_completed is the record",
    "sub_agent_activity": "a sub-agent started or finished; its rollout names its parent",
    "collab_agent_spawn_begin": "a sub-agent's spawn began; its rollout names its parent",
    "collab_agent_spawn_end": "a sub-agent's spawn ended; its rollout names its parent",
    "session_configured": "the session's settings; session_meta and turn_context say them",
    "shutdown_complete": "Codex exited",
}

# response_item types deliberately skipped, with the reason.
IGNORED_RESPONSE_ITEM_TYPES: dict[str, str] = {
    "ghost_snapshot": "Codex's own undo commit, not an agent action",
    "compaction": "the opaque remote-compaction item; the compacted record counts it",
}

# A user-role block that Codex marks (0.150 and later, ``content_item_kinds``) as typed.
TYPED_KIND = "user.text"
_PROPOSED_PLAN = re.compile(r"<proposed_plan>.*?</proposed_plan>", re.DOTALL)

# Codex's own error texts in a tool output that has no exit code.
TOOL_ERROR_PREFIXES = (
    "failed in sandbox",
    "execution error",
    "apply_patch verification failed",
    "failed to parse function arguments",
    "error:",
)

_UUID_PATTERN = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_UUID = re.compile(_UUID_PATTERN)
# The thread's uuid ends the name, or (a resumed segment) comes before ``_<segment uuid>``.
_UUID_IN_NAME = re.compile(rf"({_UUID_PATTERN})(?:_{_UUID_PATTERN})?\.jsonl?$")

# Text tool outputs (shell_command, exec_command, write_stdin) start with header lines,
# then a line "Output:" and the output itself.
_EXIT_CODE = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)$")
_WALL_TIME = re.compile(r"^Wall time: (\d+(?:\.\d+)?) seconds$")
_KNOWN_HEADER = re.compile(
    r"^(?:Exit code: |Process exited with code |Process running with session ID |Wall time: "
    r"|Chunk ID: |Original token count: |Total output lines: |Command: )"
)
MAX_HEADER_LINES = 64
# Codex (0.14x) puts this notice before a shell output it cut for the model.
_TRUNCATED = re.compile(r"^Warning: truncated output \(original token count: \d+\)\nTotal output lines: \d+\n\n")
_ABORTED = re.compile(r"^aborted(?: by user after \d+(?:\.\d+)?s)?$")

USAGE_FIELDS = (
    # (Codex total_token_usage field, our USAGE data key)
    ("input_tokens", "input_tokens"),
    ("cached_input_tokens", "cache_read_tokens"),
    ("cache_write_input_tokens", "cache_creation_tokens"),
    ("output_tokens", "output_tokens"),
    ("reasoning_output_tokens", "reasoning_tokens"),
    ("total_tokens", "total_tokens"),
)

# Where a prompt or message was seen, for counting Codex's twin records once.
FROM_ITEM = "response_item"
FROM_EVENT = "event_msg"
FROM_COMPLETED = "item_completed"
# Sub-agents whose user-role text is never typed by a person: a spawned agent's brief
# from its parent, the review request Codex builds for a guardian.
DIRECTED_SUBAGENTS = frozenset({"thread_spawn", "guardian"})


# --------------------------------------------------------------------------- state


def _native_id_from_path(source_path: str) -> str:
    """The thread's uuid from the file's name, when no session_meta says it: the uuid of
    ``rollout-<ts>-<uuid>.jsonl``, the first of a resumed segment's
    ``rollout-<ts>-<thread>_<segment>.jsonl``, the folder of
    ``session_parts/<thread>/part-NNNN.jsonl``; else the file stem."""
    path = PurePath(source_path)
    name = path.name
    if path.parent.parent.name == "session_parts" and _UUID.fullmatch(path.parent.name):
        return path.parent.name.lower()
    match = _UUID_IN_NAME.search(name)
    if match:
        return match.group(1).lower()
    return path.stem or name or "unknown"


def _fresh_state(source_path: str) -> dict[str, Any]:
    return {
        "schema": STATE_SCHEMA,
        "native_id": _native_id_from_path(source_path),
        "meta_seen": False,  # the first session_meta (or legacy header) names the session
        "version": None,  # cli_version
        "session_cwd": None,
        "cwd": None,  # latest turn_context cwd
        "model": None,  # latest turn_context model
        "reported_model": None,  # last model sent in SessionFacts
        "turn_id": None,  # the open turn, None between turns
        "turn_seq": 0,  # implicit turns opened so far (for deterministic ids)
        "explicit_turns": False,  # task_started seen: turns come from the agent
        "turn_last_ts": None,  # last timestamp seen inside the open turn
        "turn_facts": None,  # [cwd, model] last reported for the open turn
        "pending": {},  # call_id -> {"tool", "input", "end"}; insertion-ordered
        "unmatched": {},  # kind -> [[source, hash], ...] awaiting the twin record
        "usage_total": None,  # last cumulative total_token_usage, our field names
        "context_tokens": None,  # last_token_usage.total_tokens: context size
        "replay": False,  # inside a forked rollout's copy of the parent history
        "replay_last_ts": None,
        "replay_state": None,  # the parent session's state while its history is replayed
        "hist_pos": 0,  # envelope records (but session_meta) of this session so far
        "title_set": False,  # the first real prompt was sent as the session's title
        "subagent": None,  # the sub-agent kind session_meta names (review, thread_spawn, guardian)
        "usage_records": False,  # token_usage_record seen: usage comes from them (0.150+)
        "continuation": False,  # a resumed segment (history_base): totals run on from before
        "copy_until": None,  # a paginated sub-agent's rows below this ordinal are its parent's
        "done": {},  # answered call ids and emitted item ids (items may record them again)
    }


# --------------------------------------------------------------------------- small readers






def _ts(value: Any) -> str | None:
    # common.normalize_ts raises on a few odd inputs (a str like "²" passes isdigit() but
    # not int(); an int too big for a float); a transcript line must never crash us.
    try:
        return normalize_ts(value)
    except (ValueError, OverflowError):
        return None


def _parse_ts(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        dt = datetime.fromisoformat(ts[:-1] + "+00:00" if ts.endswith("Z") else ts)
    except ValueError:
        return None
    return dt if dt.tzinfo is not None else None


def _text_hash(text: str) -> str:
    # Whitespace is dropped: Codex joins multi-block user messages with nothing in
    # event_msg/user_message but we join blocks with "\n" (text_of).
    squeezed = "".join(text.split())
    return hashlib.sha256(squeezed.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _safe_summary(value: dict[str, Any]) -> Any:
    try:
        return summarize_input(value)
    except RecursionError:  # absurdly nested input: keep nothing of it
        return {"omitted": "too deeply nested"}


# --------------------------------------------------------------------------- line context


def _key(line: LineContext) -> str:
    """The record's key base (its history key, or a legacy document item's key), then
    ``.1``, ``.2`` for further events of the record; else where the line sits."""
    n = line.emitted
    line.emitted += 1
    base = line.record_id
    if base is not None:
        return base if n == 0 else f"{base}.{n}"
    return line_key(line.source_path, line.offset, n)


def _native_of(state: dict[str, Any]) -> str:
    return str(state["native_id"])


def _turn_of(state: dict[str, Any]) -> str | None:
    return _str(state.get("turn_id"))


def _cwd_of(state: dict[str, Any]) -> str | None:
    return _str(state.get("cwd")) or _str(state.get("session_cwd"))


# The line context's rules (common.LineRules): session, turn and cwd are read from the
# state, which session_meta, turn_context and the turns change in the middle of a line.
RULES = LineRules(
    agent=AGENT,
    key=_key,
    native_id=_native_of,
    turn=_turn_of,
    cwd=_cwd_of,
    fresh_state=_fresh_state,
    state_schema=STATE_SCHEMA,
    state_tables=("pending", "unmatched", "done"),
    not_object_drift=True,
)
# The same rules for the items of a legacy ``.json`` document: every key derives from
# the item's index (_own_key tells them apart by identity).
ITEM_RULES = replace(RULES)


def _line(
    source_path: str,
    offset: int,
    ts: str | None,
    state: dict[str, Any],
    out: list[Record] | None,
    record_id: str | None = None,
    rules: LineRules = RULES,
    obj: dict[str, Any] | None = None,
) -> LineContext:
    """One record being parsed, its records collected in ``out``. The parent's history
    replayed in a child's rollout (the state names a ``holder``) is the parent's record,
    a copy held by the child: the parent's own rollout makes the stronger claim."""
    holder = _str(state.get("holder"))
    claim = None if holder is None else (CLAIM_COPY, None, holder)
    if obj is None:
        return LineContext(rules, source_path, offset, state, ts, out, record_id=record_id, claim=claim)
    return LineContext(
        rules, source_path, offset, state, ts, out, obj=obj, record_id=record_id, claim=claim
    )


def _ordinal(line: LineContext) -> int | None:
    """The line's ``ordinal`` (paginated rollouts, 0.150+): its place in the history."""
    return _int(line.obj.get("ordinal"))


def _own_key(line: LineContext, kind: str, own_id: str | None) -> str:
    """Key from the agent's own id (call_id, item id) when there is one."""
    if own_id is None or line.rules is ITEM_RULES:
        return line.key()
    line.emitted += 1
    return f"{AGENT}:{line.native_id}:{kind}:{own_id}"


def _replayed(line: LineContext) -> bool:
    """A record of the parent's history replayed in a child's rollout: its envelope
    time is the replay's, not the record's, so no time of it is kept as a fact."""
    return line.state.get("holder") is not None


def _session_facts(line: LineContext, **fields: Any) -> None:
    replayed = _replayed(line)
    line.facts(last_event_at=None if replayed else line.ts, weak=replayed, **fields)


# --------------------------------------------------------------------------- twins


def _seen_from_other_source(line: LineContext, kind: str, source: str, text: str) -> bool:
    """True when this prompt/message/compaction was already emitted from a twin record.

    Codex writes most things two or three times (a prompt as a user item, as
    event_msg/user_message and, from 0.147, as an item_completed UserMessage; assistant
    text likewise), in an order that changed across versions. Whichever comes first is
    emitted and its hash remembered with its source; a record of another source with the
    same text is a twin, counted once. Lists are cleared at each turn start, so a stale
    entry can only match within its own turn.
    """
    digest = _text_hash(text)
    for entry in line.state["unmatched"].setdefault(kind, []):
        if not isinstance(entry, list) or len(entry) != 2 or entry[1] != digest:
            continue
        sources = entry[0] if isinstance(entry[0], list) else [entry[0]]
        if source not in sources:
            entry[0] = [*sources, source]
            return True
    return False


def _remember(line: LineContext, kind: str, source: str, text: str) -> None:
    entries = line.state["unmatched"].setdefault(kind, [])
    entries.append([[source], _text_hash(text)])
    del entries[:-MAX_UNMATCHED]


def _done(line: LineContext, ident: str | None) -> bool:
    """Was this call answered, or this item emitted, already (by id)?"""
    return ident is not None and ident in line.state["done"]


def _mark_done(line: LineContext, ident: str | None) -> None:
    if ident is None:
        return
    remember_bounded(line.state["done"], ident, True, MAX_DONE_IDS)


# --------------------------------------------------------------------------- turns


def _open_turn(line: LineContext, turn_id: str | None) -> None:
    state = line.state
    if state.get("turn_id") is not None:
        # The transcript never said how the previous turn ended: the next one began.
        _close_turn(line, "complete", "superseded", _str(state.get("turn_last_ts")))
    if turn_id is None:
        state["turn_seq"] = (_int(state.get("turn_seq")) or 0) + 1
        turn_id = f"{line.native_id}:t{state['turn_seq']}"
    state["turn_id"] = turn_id
    state["turn_last_ts"] = line.ts
    state["unmatched"] = {}
    model = _str(state.get("model"))
    state["turn_facts"] = [line.cwd, model]
    line.event(TURN_START)
    line.emit(
        TurnFacts(
            session_id=line.session_id,
            turn_id=turn_id,
            started_at=None if _replayed(line) else line.ts,
            status=None if _replayed(line) else "open",
            cwd=line.cwd,
            model=model,
        )
    )
    if line.ts is not None:
        _session_facts(line)  # last_event_at


def _close_turn(line: LineContext, status: str, reason: str | None, ended_at: str | None) -> None:
    state = line.state
    turn_id = _str(state.get("turn_id"))
    if turn_id is None:
        return
    ev = line.event(TURN_END, data={"status": status, "reason": reason})
    ev.ts = ended_at
    line.emit(
        TurnFacts(
            session_id=line.session_id,
            turn_id=turn_id,
            ended_at=None if _replayed(line) else ended_at,
            status=status,
        )
    )
    state["turn_id"] = None
    state["turn_facts"] = None


# --------------------------------------------------------------------------- prompts, text


def _typed(text: str) -> str:
    """The part of a text a person typed (adapters/injected.py); the text as written,
    spacing included, when all of it was typed."""
    typed = person_text(text)
    return text if typed and typed == text.strip() else typed


def _typed_text(content: Any, kinds: Any = None) -> str:
    """The user-typed part of a user message item: the blocks Codex marks as typed (when
    it marks them), each without what an agent injected (adapters/injected.py)."""
    if isinstance(content, str):
        return _typed(content)
    if not isinstance(content, list):
        return ""
    if isinstance(kinds, list) and len(kinds) == len(content):
        content = [b for b, k in zip(content, kinds, strict=True) if k == TYPED_KIND]
    parts = []
    for block in content:
        text = block if isinstance(block, str) else _dict(block).get("text")
        typed = _typed(text) if isinstance(text, str) else ""
        if typed.strip():
            parts.append(typed)
    return "\n".join(parts)


def _is_directed(line: LineContext) -> bool:
    """A sub-agent whose user-role text a person never typed."""
    return line.state.get("subagent") in DIRECTED_SUBAGENTS


def _on_directive(line: LineContext, text: str, source: str, origin: str) -> None:
    """Text sent in the user's place by the runtime or another agent (a sub-agent's brief,
    a guardian's review request, a hook's prompt): a DIRECTIVE, never a prompt."""
    if not text.strip() or _seen_from_other_source(line, "directive", source, text):
        return
    _remember(line, "directive", source, text)
    line.event(DIRECTIVE, data={"text": text, "source": origin})


def _on_prompt(line: LineContext, text: str, source: str) -> None:
    if not text.strip():
        return
    if _seen_from_other_source(line, "prompt", source, text):
        return
    state = line.state
    if not state.get("explicit_turns") or state.get("turn_id") is None:
        # Before task_started existed, each real prompt starts a turn.
        _open_turn(line, None)
    _remember(line, "prompt", source, text)
    line.event(PROMPT, data={"text": text})
    if not state.get("title_set"):
        state["title_set"] = True  # the first real prompt names the session...
        # ...unless the thread has a name of its own (session_index.jsonl, read before or
        # after this file): a weak title fills an unknown one, never replaces one.
        line.facts(title=_title_of(text), weak=True)


def _on_index_entry(obj: dict[str, Any], state: dict[str, Any]) -> list[Record]:
    """A line of ``~/.codex/session_index.jsonl`` (``{id, thread_name, updated_at}``,
    append-only, the latest line of a thread naming it): the thread's own title."""
    thread_id, name = _str(obj.get("id")), _str(obj.get("thread_name"))
    if thread_id is None or name is None:
        return [Drift(AGENT, _str(state.get("version")) or "unknown", "session_index/<invalid>")]
    name = _title_of(name)
    if not name:
        return []
    return [SessionFacts(session_key(AGENT, thread_id), AGENT, thread_id, title=name)]


def _title_of(text: str) -> str:
    first = " ".join(text.split())
    return first[:TITLE_CHARS]


def _on_assistant_text(line: LineContext, text: str, source: str, own_id: str | None = None) -> None:
    if not text.strip() or _done(line, own_id):
        return
    _mark_done(line, own_id)
    # In plan mode the assistant item also holds the <proposed_plan> block, which
    # event_msg/agent_message leaves out (the plan comes as item_completed/Plan).
    twin_text = _PROPOSED_PLAN.sub("", text) if "<proposed_plan>" in text else text
    if _seen_from_other_source(line, "message", source, twin_text):
        return
    _remember(line, "message", source, twin_text)
    line.event(MESSAGE, key=_own_key(line, "item", own_id), data={"text": text})


def _on_compaction(line: LineContext, source: str) -> None:
    # ``compacted`` and event_msg/context_compacted describe one compaction.
    if _seen_from_other_source(line, "compaction", source, "compaction"):
        return
    _remember(line, "compaction", source, "compaction")
    pre_tokens = _int(line.state.get("context_tokens"))
    line.event(COMPACTION, data={"trigger": None, "pre_tokens": pre_tokens})


# --------------------------------------------------------------------------- tools




def _written_contents(tool: str | None, tool_input: dict[str, Any]) -> list[tuple[str, str]]:
    """Text the agent wrote through a call, for the secret scanner."""
    contents: list[tuple[str, str]] = []
    patch = tool_input.get("input") if tool == "apply_patch" else None
    if tool == "apply_patch" and not isinstance(patch, str):
        patch = tool_input.get("patch")
    if isinstance(patch, str):
        contents.append(("patch", patch))
    chars = tool_input.get("chars")
    if tool == "write_stdin" and isinstance(chars, str) and chars:
        contents.append(("stdin", chars))
    return contents


def _storable_summary(tool_input: dict[str, Any]) -> Any:
    """The stored form of a call input (common.summarize_input), or a stand-in when it
    cannot be stored as JSON (nested deeper than orjson writes)."""
    summary = _safe_summary(tool_input)
    try:
        orjson.dumps(summary)
    except TypeError:  # orjson.JSONEncodeError
        return {"omitted": "not storable as JSON"}
    return summary


def _remember_call(
    line: LineContext, call_id: str, tool: str | None, tool_input: dict[str, Any], summary: Any
) -> None:
    """Keep the call for its output: the result needs the tool name and the input."""
    try:
        size: int | None = len(orjson.dumps(tool_input))
    except TypeError:  # orjson.JSONEncodeError: the state could not be persisted
        size = None
    fits = size is not None and size <= MAX_PENDING_INPUT_BYTES
    pending: dict[str, Any] = line.state["pending"]
    pending.pop(call_id, None)
    pending[call_id] = {"tool": tool, "input": tool_input if fits else summary, "end": None}
    while len(pending) > MAX_PENDING_CALLS:
        del pending[next(iter(pending))]


def _emit_call(
    line: LineContext, tool: str | None, call_id: str | None, tool_input: dict[str, Any]
) -> None:
    summary = _storable_summary(tool_input)
    line.event(
        TOOL_CALL,
        key=_own_key(line, "call", call_id),
        tool=tool,
        call_id=call_id,
        data={"input": summary},
        input=tool_input,
        contents=_written_contents(tool, tool_input),
    )
    if call_id is not None:
        _remember_call(line, call_id, tool, tool_input, summary)


@dataclass
class ToolOutput:
    """What a function_call_output says, whichever of Codex's output formats it uses."""

    text: str
    exit_code: int | None = None
    duration_ms: int | None = None
    success: bool | None = None


def _parse_json_output(raw: str) -> ToolOutput | None:
    """``{"output": ..., "metadata": {"exit_code", "duration_seconds"}}`` (shell era)."""
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict) or "output" not in parsed:
        return None
    output = parsed.get("output")
    metadata = _dict(parsed.get("metadata"))
    success = parsed.get("success")
    return ToolOutput(
        text=output if isinstance(output, str) else text_of(output),
        exit_code=_int(metadata.get("exit_code")),
        duration_ms=seconds_to_ms(metadata.get("duration_seconds")),
        success=success if isinstance(success, bool) else None,
    )


def _parse_text_output(raw: str) -> ToolOutput | None:
    """``Exit code: N / Wall time: X seconds / Output:`` (shell_command) and ``Chunk ID /
    Wall time / Process exited with code N / Original token count / Output:``
    (exec_command, write_stdin; 0.118 adds a leading ``Command:`` line)."""
    raw = _TRUNCATED.sub("", raw, count=1)
    lines = raw.split("\n", MAX_HEADER_LINES)
    if not _KNOWN_HEADER.match(lines[0]):
        return None
    exit_code: int | None = None
    duration_ms: int | None = None
    for i, header in enumerate(lines[:MAX_HEADER_LINES]):
        if header == "Output:":
            rest = raw.split("\n", i + 1)
            return ToolOutput(
                text=rest[i + 1] if len(rest) > i + 1 else "",
                exit_code=exit_code,
                duration_ms=duration_ms,
            )
        code = _EXIT_CODE.match(header)
        if code:
            exit_code = int(code.group(1))
        wall = _WALL_TIME.match(header)
        if wall:
            duration_ms = seconds_to_ms(float(wall.group(1)))
    return None


def parse_tool_output(raw: Any) -> ToolOutput:
    if isinstance(raw, str):
        if raw.startswith("{"):
            parsed = _parse_json_output(raw)
            if parsed is not None:
                return parsed
        parsed = _parse_text_output(raw)
        if parsed is not None:
            return parsed
        return ToolOutput(text=raw)
    if isinstance(raw, dict):  # {"content": ..., "success": bool}
        success = raw.get("success")
        return ToolOutput(
            text=text_of(raw.get("content")),
            success=success if isinstance(success, bool) else None,
        )
    return ToolOutput(text=text_of(raw))  # a list of content items, or nothing usable


def _is_error(output: ToolOutput) -> bool | None:
    if output.exit_code is not None:
        return output.exit_code != 0
    if output.success is not None:
        return not output.success
    if output.text.lstrip().lower().startswith(TOOL_ERROR_PREFIXES):
        return True
    return None


def _emit_result(line: LineContext, call_id: str | None, raw_output: Any) -> None:
    call = _dict(line.state["pending"].pop(call_id, None)) if call_id else {}
    _mark_done(line, call_id)
    output = parse_tool_output(raw_output)
    # exec_command_end may have arrived before the output (Codex 0.118): fill the gaps.
    end = _dict(call.get("end"))
    exit_code = output.exit_code if output.exit_code is not None else _int(end.get("exit_code"))
    duration = (
        output.duration_ms if output.duration_ms is not None else _int(end.get("duration_ms"))
    )
    output.exit_code = exit_code
    call_input = call.get("input")
    _emit_result_event(line, call, call_id, output, duration)
    if call.get("tool") == items.CODE_MODE_TOOL and not call.get("nested"):
        script = _dict(call_input).get("input")
        _on_script_results(line, call_id, script if isinstance(script, str) else "", raw_output)


def _emit_result_event(
    line: LineContext, call: dict[str, Any], call_id: str | None, output: ToolOutput, duration: int | None
) -> None:
    call_input = call.get("input")
    exit_code = output.exit_code
    line.event(
        TOOL_RESULT,
        key=_own_key(line, "result", call_id),
        tool=_str(call.get("tool")),
        call_id=call_id,
        data={
            "is_error": _is_error(output),
            "exit_code": exit_code,
            "duration_ms": duration,
            "output_chars": len(output.text),
            # Codex's stand-in output ("aborted"; "aborted by user after 14.0s" from 0.15x)
            "interrupted": bool(_ABORTED.match(output.text.strip())),
        },
        input=call_input if isinstance(call_input, dict) else None,
        contents=[("output", output.text)] if output.text else [],
    )


def _on_script_results(line: LineContext, call_id: str | None, script: str, raw_output: Any) -> None:
    """A code-mode script recorded without items (0.144): each shell result it printed
    (a chunk of its output with a shell header) is a command that ran, a tool call of its
    own. Its command line is the script's when the script's literal shell calls pair one
    to one with the results; otherwise it is unknown (``command_unknown``)."""
    chunks = raw_output[1:] if isinstance(raw_output, list) else []
    results = []
    for chunk in chunks:
        text = _dict(chunk).get("text")
        parsed = _parse_text_output(text) if isinstance(text, str) else None
        if parsed is not None and parsed.exit_code is not None:
            results.append(parsed)
    calls = items.script_shell_calls(script) if results else None
    paired = calls is not None and len(calls) == len(results)
    for i, result in enumerate(results):
        nested_id = f"{call_id}#{i}"
        tool_input: dict[str, Any] = dict(calls[i]) if paired and calls else {"command": None}
        data: dict[str, Any] = {"input": _storable_summary(tool_input), "within": call_id}
        line.event(TOOL_CALL, key=_own_key(line, "call", nested_id), tool="shell_command",
                   call_id=nested_id, data=data, input=tool_input)
        result_call = {"tool": "shell_command", "input": tool_input}
        _emit_result_event(line, result_call, nested_id, result, result.duration_ms)
        nested = _last_event(line)
        nested.contents = []  # scanned with the script's output, which holds it
        if not paired:
            nested.data["command_unknown"] = True


def _last_event(line: LineContext) -> Event:
    """The event the line built last."""
    out = line.out if line.out is not None else []
    for rec in reversed(out):
        if isinstance(rec, Event):
            return rec
    raise LookupError("no event built")


def _on_exec_command_end(line: LineContext, payload: dict[str, Any]) -> None:
    """Exit code and duration of an exec call, kept for its function_call_output.

    When the output came first (or the call is unknown), nothing is emitted: the output
    text already carries the exit code, and events are append-only.
    """
    call_id = _str(payload.get("call_id"))
    call = line.state["pending"].get(call_id) if call_id else None
    if not isinstance(call, dict):
        return
    duration = _dict(payload.get("duration"))
    secs, nanos = _int(duration.get("secs")), _int(duration.get("nanos"))
    duration_ms = secs * 1000 + (nanos or 0) // 1_000_000 if secs is not None else None
    call["end"] = {"exit_code": _int(payload.get("exit_code")), "duration_ms": duration_ms}


# --------------------------------------------------------------------------- usage


def _on_token_count(line: LineContext, payload: dict[str, Any], emit: bool = True) -> None:
    """USAGE increments from Codex's cumulative totals.

    Codex re-emits token_count with unchanged totals; summing each event would overcount,
    so the increment is the difference with the last total seen. When a total goes down
    the counter restarted (a forked session starts from zero), and the new totals are
    counted from zero.
    """
    info = _dict(payload.get("info"))
    total = info.get("total_token_usage")
    if not isinstance(total, dict):
        return
    last = _dict(info.get("last_token_usage"))
    if _int(last.get("total_tokens")) is not None:
        line.state["context_tokens"] = _int(last.get("total_tokens"))
    current = {ours: _int(total.get(theirs)) or 0 for theirs, ours in USAGE_FIELDS}
    previous = line.state.get("usage_total")
    if line.state.get("usage_records") or (line.state.get("continuation") and previous is None):
        # Usage comes from the per-response token_usage_record lines; and a resumed
        # segment's first totals run on from its earlier segments: a baseline only.
        emit = False
    if isinstance(previous, dict) and all(
        current[k] >= (_int(previous.get(k)) or 0) for k in current
    ):
        delta = {k: current[k] - (_int(previous.get(k)) or 0) for k in current}
    else:
        delta = dict(current)
    line.state["usage_total"] = current
    if not emit or not any(delta.values()):
        return
    data: dict[str, Any] = {
        "input_tokens": delta["input_tokens"],
        "output_tokens": delta["output_tokens"],
        "cache_read_tokens": delta["cache_read_tokens"],
        "cache_creation_tokens": delta["cache_creation_tokens"],
        "reasoning_tokens": delta["reasoning_tokens"],
        "total_tokens": delta["total_tokens"],
        "model": _str(line.state.get("model")),
    }
    line.event(USAGE, data=data)


def _on_usage_record(line: LineContext, payload: dict[str, Any]) -> None:
    """``token_usage_record`` (0.150 and later): one response's usage, counted once by its
    ``response_id`` (a copy of it in a sub-agent's or a resumed rollout adds nothing).
    From the first one on, token_count's cumulative totals are only a baseline."""
    line.state["usage_records"] = True
    totals = items.thread_totals(payload)
    if totals is not None:
        line.state["usage_total"] = {ours: totals.get(ours, 0) for _, ours in USAGE_FIELDS}
    usage = items.record_usage(payload)
    if usage is None:
        return
    data: dict[str, Any] = {**usage, "model": _str(line.state.get("model"))}
    line.event(USAGE, key=_own_key(line, "usage", _str(payload.get("response_id"))), data=data)


# --------------------------------------------------------------------------- records


def _on_session_meta(line: LineContext, payload: dict[str, Any]) -> None:
    state = line.state
    meta_id = _str(payload.get("id"))
    version = _str(payload.get("cli_version"))
    if not state.get("meta_seen"):
        state["meta_seen"] = True
        if meta_id:
            state["native_id"] = meta_id
        state["version"] = version
        state["session_cwd"] = _str(payload.get("cwd"))
        source = payload.get("source")
        state["subagent"] = items.subagent_kind(source)
        state["continuation"] = isinstance(payload.get("history_base"), dict)
        if state["continuation"]:
            state["title_set"] = True  # the thread's first rollout titled it
        parent = _str(payload.get("parent_thread_id")) or _str(
            _dict(items.spawn_of(source)).get("parent_thread_id")
        )
        _session_facts(line,
            cwd=state["session_cwd"],
            started_at=_ts(payload.get("timestamp")) or line.ts,
            version=version,
            originator=_str(payload.get("originator")),
            source=_source_value(source),
            model_provider=_str(payload.get("model_provider")),
            own_record=1,
            spawned_as=_spawned_as(source),
            parent_session_id=session_key(AGENT, parent) if parent and parent != meta_id else None,
        )
        _subagent_title(line, payload)
        start = _int(payload.get("subagent_history_start_ordinal"))
        copied_from = _str(payload.get("forked_from_id")) or parent
        if start is not None and copied_from and copied_from != meta_id:
            # A paginated sub-agent: its rows below ``start`` are its parent's, ordinals
            # and all, read as the parent's as a legacy fork's burst is.
            state["copy_until"] = start
            state["replay_state"] = _replay_state(line, copied_from, payload)
    elif meta_id and meta_id != state.get("native_id"):
        # A fork/resume: this is the parent's meta, followed by a copy of its history.
        _session_facts(line, parent_session_id=session_key(AGENT, meta_id))
        state["replay"] = True
        state["replay_last_ts"] = line.ts
        state["replay_state"] = _replay_state(line, meta_id, payload)
    elif version and version != state.get("version"):
        state["version"] = version  # the same session reopened by another Codex
        _session_facts(line, version=version)


def _subagent_title(line: LineContext, payload: dict[str, Any]) -> None:
    """A sub-agent's title is its own name (what it is, never its brief): the nickname and
    path a spawned agent was given, or ``guardian review``."""
    kind = line.state.get("subagent")
    if kind == "thread_spawn":
        spawn = _dict(items.spawn_of(payload.get("source")))
        parts = [
            _str(payload.get("agent_nickname")) or _str(spawn.get("agent_nickname")),
            _str(payload.get("agent_path")) or _str(spawn.get("agent_path")),
        ]
        title = " ".join(p for p in parts if p)
    elif kind == "guardian":
        title = "guardian review"
    else:
        return
    line.state["title_set"] = True
    if title:
        _session_facts(line, title=title)


def _replay_state(line: LineContext, parent_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The parent's state for its replayed history: the records are the parent's, keyed
    and attributed as its own rollout would key them (see _history_key)."""
    sub = _fresh_state(line.source_path)
    sub["native_id"] = parent_id
    sub["meta_seen"] = True
    sub["version"] = _str(payload.get("cli_version"))
    sub["session_cwd"] = _str(payload.get("cwd"))
    sub["holder"] = line.session_id
    parent = _line(line.source_path, line.offset, line.ts, sub, line.out)
    # Known through the child's replay until (unless) the parent's own rollout is read:
    # its own session_meta sets own_record.
    _session_facts(parent,
        cwd=sub["session_cwd"],
        started_at=_ts(payload.get("timestamp")),
        version=sub["version"],
        originator=_str(payload.get("originator")),
        source=_source_value(payload.get("source")),
        model_provider=_str(payload.get("model_provider")),
        replayed_in=line.session_id,
    )
    return sub


def _spawned_as(source: Any) -> str | None:
    """``{"subagent": "review"}``: the kind of sub-agent a rollout says it is."""
    inner = source.get("subagent") if isinstance(source, dict) else None
    return inner if isinstance(inner, str) and inner else None


def _source_value(value: Any) -> str | dict[str, Any] | None:
    """``session_meta.source`` as written: a string ("cli", "vscode", "exec") or an object
    (``{"subagent": "review"}``), kept as the object."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict) and value:
        return value
    return None


def _on_turn_context(line: LineContext, payload: dict[str, Any], emit: bool = True) -> None:
    state = line.state
    cwd, model = _str(payload.get("cwd")), _str(payload.get("model"))
    if cwd:
        state["cwd"] = cwd
    if model:
        state["model"] = model
    if not emit:
        return
    if model and model != state.get("reported_model"):
        state["reported_model"] = model
        _session_facts(line, model=model)
    turn_id = _str(state.get("turn_id"))
    facts = [line.cwd, _str(state.get("model"))]
    if turn_id is not None and facts != state.get("turn_facts"):
        state["turn_facts"] = facts
        line.emit(
            TurnFacts(session_id=line.session_id, turn_id=turn_id, cwd=facts[0], model=facts[1])
        )


def _on_event_msg(line: LineContext, payload: dict[str, Any]) -> None:
    kind = payload.get("type")
    if not isinstance(kind, str):
        line.drift("event_msg/<no type>")
        return
    if kind in IGNORED_EVENT_MSG_TYPES:
        return
    state = line.state
    if kind == "task_started":
        state["explicit_turns"] = True
        _open_turn(line, _str(payload.get("turn_id")))
    elif kind == "entered_review_mode":
        # The review sub-agent's rollout names no parent, only {"subagent": "review"}:
        # the store links it to the session that entered review mode as it began.
        if line.ts is not None and not _replayed(line):
            line.emit(SpawnPoint(line.session_id, "review", line.ts, line.cwd))
    elif kind == "task_complete":
        _close_turn(line, "complete", None, line.ts)
    elif kind == "turn_aborted":
        _close_turn(line, "aborted", _str(payload.get("reason")), line.ts)
    elif kind == "user_message":
        message = payload.get("message")
        text = message if isinstance(message, str) else ""
        if _is_directed(line):
            _on_directive(line, text, FROM_EVENT, "agent")
        else:
            _on_prompt(line, _typed(text), FROM_EVENT)
    elif kind == "agent_message":
        message = payload.get("message")
        _on_assistant_text(line, message if isinstance(message, str) else "", FROM_EVENT)
    elif kind == "token_count":
        _on_token_count(line, payload)
    elif kind == "exec_command_end":
        _on_exec_command_end(line, payload)
    elif kind in ("error", "stream_error"):
        message = payload.get("message")
        text = message if isinstance(message, str) else ""
        line.event(ERROR, data={"message": text[:MAX_ERROR_CHARS], "error_type": kind})
    elif kind == "context_compacted":
        _on_compaction(line, FROM_EVENT)
    elif kind == "item_completed":
        _on_item(line, _dict(payload.get("item")))
    elif kind == "thread_name_updated":
        # The thread's name, given by the person or by Codex: the session's own title.
        name = _str(payload.get("thread_name"))
        if name:
            state["title_set"] = True
            _session_facts(line, title=_title_of(name))
    elif kind == "thread_settings_applied":
        # Settings changed between turns (model, cwd): as a turn_context says them.
        _on_turn_context(line, _dict(payload.get("thread_settings")))
    else:
        line.drift(f"event_msg/{kind}")


def _on_item(line: LineContext, item: dict[str, Any]) -> None:
    """``event_msg/item_completed`` (0.147 and later): one completed turn item."""
    kind = items.item_type(item)
    own_id = _str(item.get("id"))
    if kind == "UserMessage":
        text = items.item_text(item)
        if _is_directed(line):
            _on_directive(line, text, FROM_COMPLETED, "agent")
        else:
            _on_prompt(line, _typed(text), FROM_COMPLETED)
    elif kind == "AgentMessage":
        _on_assistant_text(line, items.item_text(item), FROM_COMPLETED, own_id)
    elif kind == "Reasoning":
        _on_reasoning(line, own_id)
    elif kind == "HookPrompt":
        _on_directive(line, items.item_text(item), FROM_COMPLETED, "hook")
    elif kind == "ContextCompaction":
        _on_compaction(line, FROM_COMPLETED)
    elif kind == "Extension":
        ext = items.extension_kind(item)
        if ext in items.EXTENSION_TOOLS:
            _on_tool_item(line, item, own_id)
        elif ext not in items.IGNORED_EXTENSION_KINDS:
            line.drift(f"event_msg/item_completed/Extension/{ext}")
    elif kind in items.TOOL_ITEMS:
        _on_tool_item(line, item, own_id)
    elif kind not in items.IGNORED_ITEMS:
        line.drift(f"event_msg/item_completed/{kind or '?'}")


def _on_reasoning(line: LineContext, own_id: str | None) -> None:
    """The model reasoned: once, though 0.149 writes it as an item and a response item."""
    if _done(line, own_id):
        return
    _mark_done(line, own_id)
    line.event(REASONING, key=_own_key(line, "item", own_id), data={})


def _open_code_mode_call(line: LineContext) -> str | None:
    """The code-mode ``exec`` call whose output has not come yet (the script running)."""
    for call_id, call in reversed(line.state["pending"].items()):
        if _dict(call).get("tool") == items.CODE_MODE_TOOL:
            return str(call_id)
    return None


def _recorded_call(line: LineContext, item_id: str | None, names: frozenset[str]) -> str | None:
    """The model call a tool item records: its own id, or, ids differing and no script
    running, the latest open call of its kind."""
    pending: dict[str, Any] = line.state["pending"]
    if item_id is not None and item_id in pending:
        return item_id
    if _open_code_mode_call(line) is not None:
        return None
    for call_id, call in reversed(pending.items()):
        if _dict(call).get("tool") in names:
            return str(call_id)
    return None


def _on_tool_item(line: LineContext, item: dict[str, Any], item_id: str | None) -> None:
    """A tool item: what it adds to the model call it records, or, recording none (a call
    a code-mode script made), a tool call and its result of its own."""
    call = items.item_call(item)
    if call is None or _done(line, item_id):
        return
    recorded = _recorded_call(line, item_id, call.names)
    if recorded is not None:
        # The call's output will say the rest; what it may lack is kept for it.
        pending = line.state["pending"][recorded]
        if pending.get("end") is None and (call.exit_code is not None or call.duration_ms):
            pending["end"] = {"exit_code": call.exit_code, "duration_ms": call.duration_ms}
        return
    within = _open_code_mode_call(line)
    summary = _storable_summary(call.call_input)
    data: dict[str, Any] = {"input": summary}
    if within is not None:
        data["within"] = within
        script = line.state["pending"][within]
        script["nested"] = (_int(script.get("nested")) or 0) + 1
    line.event(
        TOOL_CALL,
        key=_own_key(line, "call", item_id),
        tool=call.tool,
        call_id=item_id,
        data=data,
        input=call.call_input,
        contents=_written_contents(call.tool, call.call_input),
    )
    line.event(
        TOOL_RESULT,
        key=_own_key(line, "result", item_id),
        tool=call.tool,
        call_id=item_id,
        data={
            "is_error": call.is_error,
            "exit_code": call.exit_code,
            "duration_ms": call.duration_ms,
            "output_chars": len(call.output),
            "interrupted": False,
        },
        input=call.call_input,
        # Inside a script, the script's output (scanned with its result) holds this one.
        contents=[("output", call.output)] if call.output and within is None else [],
    )
    _mark_done(line, item_id)


def _on_response_item(line: LineContext, item: dict[str, Any]) -> None:
    kind = item.get("type")
    if not isinstance(kind, str):
        line.drift("response_item/<no type>")
        return
    if kind in IGNORED_RESPONSE_ITEM_TYPES:
        return
    own_id = _str(item.get("id"))
    if kind == "message":
        role = item.get("role")
        if role == "user" and _is_directed(line):
            _on_directive(line, text_of(item.get("content")), FROM_ITEM, "agent")
        elif role == "user":
            kinds = _dict(item.get("internal_chat_message_metadata_passthrough")).get(
                "content_item_kinds"
            )
            _on_prompt(line, _typed_text(item.get("content"), kinds), FROM_ITEM)
        elif role == "assistant":
            _on_assistant_text(line, text_of(item.get("content")), FROM_ITEM, own_id)
        # developer and system messages are instructions, never prompts.
    elif kind == "agent_message":
        # A message from another agent of the thread's team (a sub-agent's brief from its
        # parent, a finished sub-agent's answer to its parent): never a person's prompt.
        author = _str(item.get("author"))
        _on_directive(line, text_of(item.get("content")), FROM_ITEM, f"agent:{author}" if author else "agent")
    elif kind == "reasoning":
        _on_reasoning(line, own_id)
    elif kind == "tool_search_call":
        call_id = _str(item.get("call_id")) or own_id
        _emit_call(line, "tool_search", call_id, _dict(item.get("arguments")))
    elif kind == "tool_search_output":
        tools = item.get("tools")
        names = [_str(_dict(t).get("name")) for t in tools] if isinstance(tools, list) else []
        _emit_result(line, _str(item.get("call_id")) or own_id, "\n".join(n for n in names if n))
    elif kind == "function_call":
        call_id = _str(item.get("call_id")) or own_id
        _emit_call(line, _str(item.get("name")), call_id, _parse_arguments(item.get("arguments")))
    elif kind == "custom_tool_call":
        call_id = _str(item.get("call_id")) or own_id
        raw = item.get("input")
        _emit_call(
            line, _str(item.get("name")), call_id, {"input": raw if isinstance(raw, str) else ""}
        )
    elif kind == "local_shell_call":
        call_id = _str(item.get("call_id")) or own_id
        _emit_call(line, "local_shell", call_id, _dict(item.get("action")))
    elif kind == "web_search_call":
        # No output record follows: the model sees the results inside the API.
        _emit_call(line, "web_search", own_id, _dict(item.get("action")))
        if own_id is not None:
            line.state["pending"].pop(own_id, None)
            _mark_done(line, own_id)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        _emit_result(line, _str(item.get("call_id")), item.get("output"))
    else:
        line.drift(f"response_item/{kind}")


def _on_legacy_header(line: LineContext, header: dict[str, Any]) -> None:
    """Pre-envelope line 1: ``{id, timestamp, instructions, git}``."""
    state = line.state
    if state.get("meta_seen"):
        return
    state["meta_seen"] = True
    header_id = _str(header.get("id"))
    if header_id:
        state["native_id"] = header_id
    _session_facts(line, started_at=_ts(header.get("timestamp")))


def _continues_replay(state: dict[str, Any], ts: str | None) -> bool:
    """Is this record still part of the parent history copied into a forked rollout?

    The copy is written in one burst right after the parent's session_meta; new activity
    (the user typing the next prompt) comes after a pause. A record without a usable
    timestamp ends the copy: better to count a copied record twice than to lose a new one.
    """
    now, before = _parse_ts(ts), _parse_ts(_str(state.get("replay_last_ts")))
    if now is None or before is None:
        return False
    return abs((now - before).total_seconds()) <= REPLAY_GAP_SECONDS


def _starts_own_turn(state: dict[str, Any], record_type: str, payload: Any) -> bool:
    """A turn that starts while the copied history's last turn is still open is the
    fork's own: a spawned sub-agent's copy ends in its parent's turn, mid-way (the
    parent waits for it), and the sub-agent's first turn follows within milliseconds
    (0.144 and later)."""
    if record_type != "event_msg" or _dict(payload).get("type") != "task_started":
        return False
    copied = _dict(state.get("replay_state"))
    open_turn = _str(copied.get("turn_id"))
    return open_turn is not None and open_turn != _str(_dict(payload).get("turn_id"))


def _absorb_replayed(line: LineContext, record_type: str, payload: dict[str, Any]) -> None:
    """What the child's live part needs of a copied record: cwd, model and the token
    counter baseline (so the child is given only its own tokens)."""
    if record_type == "turn_context":
        _on_turn_context(line, payload, emit=False)
    elif record_type == "event_msg" and payload.get("type") == "token_count":
        _on_token_count(line, payload, emit=False)


def _history_key(state: dict[str, Any], payload: Any, ordinal: int | None = None) -> str:
    """The key base of an envelope record: its place among its session's records (every
    record but session_meta) and a hash of its payload. The parent's rollout and a
    child's replay of it give a record the same key (the envelope timestamps differ, the
    payloads and their order do not), so the copy adds nothing."""
    pos = _int(state.get("hist_pos")) or 0
    state["hist_pos"] = pos + 1
    try:
        raw = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # nested deeper than orjson writes
        raw = repr(payload).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(raw, digest_size=8).hexdigest()
    if ordinal is not None:
        # Paginated rollouts number their rows themselves, across a thread's segments:
        # a resumed segment, or a sub-agent's copy of its parent's rows, keys each row
        # as the thread's first rollout does.
        return f"{AGENT}:{state['native_id']}:o{ordinal}:{digest}"
    return f"{AGENT}:{state['native_id']}:h{pos}:{digest}"


def _on_replayed(line: LineContext, record_type: str, payload: Any) -> None:
    """A record of the parent's history copied into this rollout: kept, as the parent's
    (its session, its keys), and absorbed into the child's state."""
    sub = line.state.get("replay_state")
    if isinstance(sub, dict) and record_type != "session_meta":
        upgrade_state(sub, line.source_path, RULES)
        parent = _line(line.source_path, line.offset, line.ts, sub, line.out, obj=line.obj)
        _dispatch(parent, record_type, payload)
        if line.ts is not None and sub.get("turn_id") is not None:
            sub["turn_last_ts"] = line.ts
    if isinstance(payload, dict):
        _absorb_replayed(line, record_type, payload)


def _on_envelope(line: LineContext, record_type: str, payload: Any) -> None:
    state = line.state
    copy_until = _int(state.get("copy_until"))
    if copy_until is not None and record_type != "session_meta":
        ordinal = _ordinal(line)
        if ordinal is not None and ordinal < copy_until:
            _on_replayed(line, record_type, payload)
            return
        state["copy_until"] = None
        state["replay_state"] = None
    if state.get("replay"):
        if _continues_replay(state, line.ts) and not _starts_own_turn(state, record_type, payload):
            state["replay_last_ts"] = line.ts
            _on_replayed(line, record_type, payload)
            return
        state["replay"] = False
        state["replay_last_ts"] = None
        state["replay_state"] = None
    _dispatch(line, record_type, payload)


def _dispatch(line: LineContext, record_type: str, payload: Any) -> None:
    if record_type not in RECORD_TYPES:
        line.drift(record_type)
        return
    if not isinstance(payload, dict):
        line.drift(f"{record_type}/<invalid payload>")
        return
    if record_type != "session_meta":
        line.record_id = _history_key(line.state, payload, _ordinal(line))
    if record_type in IGNORED_RECORD_TYPES:
        return
    if record_type == "session_meta":
        _on_session_meta(line, payload)
    elif record_type == "turn_context":
        _on_turn_context(line, payload)
    elif record_type == "event_msg":
        _on_event_msg(line, payload)
    elif record_type == "response_item":
        _on_response_item(line, payload)
    elif record_type == "compacted":
        _on_compaction(line, "compacted")  # never the summary nor replacement_history
    elif record_type == "token_usage_record":
        _on_usage_record(line, payload)


# --------------------------------------------------------------------------- legacy .json


def _on_chat_item(line: LineContext, item: dict[str, Any]) -> None:
    """A Chat-Completions-style item of the legacy .json rollout (ocodex fork)."""
    role = item.get("role")
    if role == "user":
        _on_prompt(line, _typed_text(item.get("content")), FROM_ITEM)
    elif role == "assistant":
        reasoning = item.get("reasoning")
        if isinstance(reasoning, str) and reasoning.strip():
            line.event(REASONING, data={})
        _on_assistant_text(line, text_of(item.get("content")), FROM_ITEM)
        tool_calls = item.get("tool_calls")
        for call in tool_calls if isinstance(tool_calls, list) else []:
            function = _dict(_dict(call).get("function"))
            _emit_call(
                line,
                _str(function.get("name")),
                _str(_dict(call).get("id")),
                _parse_arguments(function.get("arguments")),
            )
    elif role == "tool":
        _emit_result(line, _str(item.get("tool_call_id")), item.get("content"))
    elif role not in ("system", "developer"):
        line.drift(f"document/{role if isinstance(role, str) else '<no role>'}")


# --------------------------------------------------------------------------- fidelity


def _record_kind(obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
    version = _str(state.get("version")) or "unknown"
    if not isinstance(obj, dict):
        return version, "<not an object>", False
    record_type = obj.get("type")
    payload = obj.get("payload")
    if isinstance(record_type, str) and "payload" in obj:
        kind = payload.get("type") if isinstance(payload, dict) else None
        if record_type == "event_msg" and isinstance(kind, str):
            if kind == "item_completed":
                item = _dict(_dict(payload).get("item"))
                name = item.get("type") if isinstance(item.get("type"), str) else "?"
                if name == "Extension":
                    ext = items.extension_kind(item)
                    ignored = ext in items.IGNORED_EXTENSION_KINDS
                    return version, f"event_msg/item_completed/Extension/{ext}", ignored
                return version, f"event_msg/item_completed/{name}", name in items.IGNORED_ITEMS
            return version, f"event_msg/{kind}", kind in IGNORED_EVENT_MSG_TYPES
        if record_type == "response_item" and isinstance(kind, str):
            return version, f"response_item/{kind}", kind in IGNORED_RESPONSE_ITEM_TYPES
        return version, record_type, record_type in IGNORED_RECORD_TYPES
    if "record_type" in obj:
        return version, "state", True  # pre-envelope {"record_type": "state"}: nothing in it
    if isinstance(record_type, str):
        return version, f"response_item/{record_type}", record_type in IGNORED_RESPONSE_ITEM_TYPES
    if "thread_name" in obj:
        return version, "session_index", False
    if "items" in obj and "session" in obj:
        return version, "document", False
    if "id" in obj and "timestamp" in obj:
        return version, "header", False
    return version, "<no type>", False


# --------------------------------------------------------------------------- adapter


class CodexAdapter:
    name = AGENT

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a line or document just read,
        for the fidelity tally: ``event_msg/<type>``, ``response_item/<type>``,
        ``event_msg/item_completed/<ItemType>``, a top-level type."""
        return _record_kind(obj, state)

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        # The file's name, as a string: a PurePath on every line cost 18 us of 90.
        if source_path.rpartition("/")[2] == SESSION_INDEX:
            return _on_index_entry(obj, state)
        out: list[Record] = []
        # A file's own state never names a holder (only a replay's sub-state does, see
        # _line): the line is built directly, as it is for every line of every rollout.
        line = LineContext(RULES, source_path, offset, state, _ts(obj.get("timestamp")), out, obj=obj)
        record_type = obj.get("type")
        if isinstance(record_type, str) and "payload" in obj:
            _on_envelope(line, record_type, obj.get("payload"))
        elif "record_type" in obj:
            pass  # pre-envelope {"record_type": "state"} lines carry nothing
        elif isinstance(record_type, str):
            # A pre-envelope bare response item: no timestamp of its own.
            _on_response_item(line, obj)
        elif "id" in obj and "timestamp" in obj:
            _on_legacy_header(line, obj)
        else:
            line.drift("<no type>")
        if line.ts is not None and state.get("turn_id") is not None:
            state["turn_last_ts"] = line.ts
        return out

    def parse_document(
        self, obj: Any, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """The legacy single-JSON ``.json`` rollout: ``{"session": {...}, "items": [...]}``.

        Items have no timestamps and no byte offsets: keys come from the item index
        (``line_key(path, 0, i)``, then ``.1``, ``.2`` for further events of that item).
        Items may be Chat-Completions style (``role``) or Responses API items (``type``).
        Each version of the file is parsed whole from a fresh state (its keys make a
        re-read duplicate nothing), so the file's persisted ``state`` is not used.
        """
        parse_state = _fresh_state(source_path)
        if not isinstance(obj, dict):
            return [Drift(adapter=AGENT, version="unknown", record_type="document/<not an object>")]
        out: list[Record] = []
        head = _line(source_path, 0, None, parse_state, out)
        session = obj.get("session")
        if isinstance(session, dict):
            _on_legacy_header(head, session)
        else:
            head.drift("document/<no session>")
        items = obj.get("items")
        if not isinstance(items, list):
            head.drift("document/<no items>")
            return out
        for i, item in enumerate(items):
            line = _line(source_path, 0, None, parse_state, out, line_key(source_path, 0, i), ITEM_RULES)
            if not isinstance(item, dict):
                line.drift("document/<not an object>")
            elif isinstance(item.get("type"), str):
                _on_response_item(line, item)
            else:
                _on_chat_item(line, item)
        return out


ADAPTER = CodexAdapter()
