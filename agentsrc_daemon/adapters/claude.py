"""Claude Code adapter: one line of ``~/.claude/projects/<encoded cwd>/*.jsonl`` in,
normalized records out.

Files this adapter reads (all JSONL, one record per line):

* ``<project>/<sessionId>.jsonl``: a session.
* ``<project>/agent-<id>.jsonl`` (2.0.x): a subagent transcript beside its session.
* ``<project>/<sessionId>/subagents/agent-<id>.jsonl`` (2.1.x): a subagent transcript.
* ``<project>/<sessionId>/subagents/agent-<id>.meta.json``: a subagent's sidecar, read by
  ``parse_document`` (it yields nothing: see there).

Subagents never make sessions of their own: their records carry the parent's
``sessionId`` and every event they produce is tagged with ``subagent_id``. See
docs/formats-claude.md for what is derived from which record and why.

Long on purpose: one agent's format across its versions, the ownership rules of forks,
background copies and sub-agents beside the records they read.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from typing import Any

import orjson

from ..events import (
    CLAIM_COPY,
    CLAIM_OWN,
    CLAIM_SUBAGENT,
    COMPACTION,
    DIRECTIVE,
    ERROR,
    MAX_STORED_TEXT_CHARS,
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    USAGE,
    Drift,
    Event,
    Record,
    TurnFacts,
    session_key,
)
from .common import (
    LineContext,
    LineRules,
    begin,
    normalize_ts,
    seconds_to_ms,
    summarize_input,
    text_of,
)
from .common import as_dict as _dict
from .common import as_int as _int
from .common import first_line as common_first_line
from .common import nonempty_str as _str
from .common import remember_bounded as _remember
from .common import state_table as _table
from .injected import person_text

NAME = "claude-code"

# Top-level record types. Each one is handled or deliberately ignored; anything else is
# reported as Drift so a format change shows up instead of silently losing data.
HANDLED_RECORD_TYPES = frozenset({"user", "assistant", "system", "custom-title", "ai-title"})
IGNORED_RECORD_TYPES = frozenset(
    {
        "summary",  # a /resume label for a leaf uuid, often of another session
        "permission-mode",  # UI permission mode switches
        "file-history-snapshot",  # undo backups of edited files
        "attachment",  # harness context: deferred tool lists, skill listings, reminders
        "agent-name",  # a name for agent views (the custom title again in the corpus)
        "last-prompt",  # a copy of the latest prompt, already seen as a user record
        "queue-operation",  # queued input; the text arrives later as a user record
        "progress",  # hook/subagent heartbeats; subagents have their own transcript
        "mode",  # the UI's input mode (2.1.1xx: "normal"), not the conversation
    }
)
HANDLED_SYSTEM_SUBTYPES = frozenset({"compact_boundary", "api_error", "turn_duration"})
IGNORED_SYSTEM_SUBTYPES = frozenset(
    {
        "stop_hook_summary",  # hook bookkeeping at the end of a turn
        "informational",  # a notice the UI showed (a setting changed, a tip)
        "local_command",  # slash-command output shown in the UI
        "microcompact_boundary",  # old tool outputs cleared: not a conversation summary
        "memory_saved",  # a memory file written; the memory file is a document of its own
        "bridge_status",  # the IDE bridge connected or not
        "agents_killed",  # background sub-agents stopped; their transcripts say what ran
        "permission_retry",  # a tool call retried after a permission prompt; the call is the record
        "away_summary",  # "while you were away": a recap the UI wrote, not the conversation
        "api_metrics",  # request timings, not tokens (usage comes with each message)
        "scheduled_task_fire",  # a scheduled task started; its prompt arrives as a user record
    }
)
# Content blocks the model produced or saw that carry nothing we record.
IGNORED_ASSISTANT_BLOCKS = frozenset(
    {"server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "image", "document"}
)
IGNORED_USER_BLOCKS = frozenset({"image", "document", "tool_reference"})

# User text the harness writes in the user role: never a prompt.
HARNESS_TAGS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<command-contents>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<task-notification>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-memory-input>",
    "<system-reminder>",
)
# A slash-command invocation (a turn when the model answers it, see _user).
COMMAND_TAGS = ("<command-name>", "<command-message>")
# Context blocks an IDE integration prepends to a prompt: dropped from the prompt text.
INJECTED_BLOCK_TAGS = ("<ide_", "<system-reminder>")
INTERRUPTED_PREFIX = "[Request interrupted by user"
BACKGROUND_KIND = "bg"  # sessionKind of a session handed off to the background
# promptSource of text Claude Code queued itself (a finished background task's notice).
SYSTEM_PROMPT_SOURCE = "system"
SYNTHETIC_MODEL = "<synthetic>"
PERSISTED_OUTPUT_TAG = "<persisted-output>"

# Bounds on the per-file state (it is persisted after every batch).
MAX_PENDING_CALLS = 2000
MAX_PENDING_INPUT_BYTES = 64 * 1024  # bigger inputs are kept summarized in the state
MAX_USAGE_IDS = 200
MAX_SIDECHAIN_LINKS = 500
MAX_SEEN_PARTS = 1000
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500

# Title sources, weakest first: an explicit rename beats the AI title beats the prompt.
TITLE_RANK = {"prompt": 1, "ai": 2, "custom": 3}

_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_AGENT_FILE = re.compile(r"agent-([A-Za-z0-9_-]+)\.jsonl")


@functools.lru_cache(maxsize=1024)
def _file_name(source_path: str) -> tuple[str | None, str, bool]:
    """What a file's name says, asked for on every line and the same for all of them:
    (the sub-agent id of an ``agent-<id>.jsonl`` file or None, the name without
    ``.jsonl``, whether that stem is a safe session id)."""
    name = os.path.basename(source_path)
    match = _AGENT_FILE.fullmatch(name)
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return (match.group(1) if match else None), stem, _SAFE_NAME.fullmatch(stem) is not None


def first_line(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    return common_first_line(text, limit)


def _key(line: LineContext, suffix: int | None = None) -> str:
    """The record's uuid (with a block index when one record yields several events),
    or where the line sits in its file when it has no uuid."""
    uuid = line.record_id
    if uuid is None:
        return line.position_key(suffix or 0)
    return uuid if suffix is None else f"{uuid}.{suffix}"


def _version_rule(state: dict[str, Any], obj: Any) -> str:
    return _version(obj, state)


# The line context's rules (common.LineRules): the session, cwd, sub-agent, turn and
# claim of a line are fixed when it is read; turns live in the state as turn/turn_open.
RULES = LineRules(
    agent=NAME,
    key=_key,
    version=_version_rule,
    turn_key=f"{NAME}:turn:",
    record_types=HANDLED_RECORD_TYPES,
    ignored_types=IGNORED_RECORD_TYPES,
)



def _claim(
    native_id: str, source_path: str, state: dict[str, Any], ts: str | None, kind: Any = None
) -> tuple[int, str | None, str | None]:
    """How this file holds the record (Event.claim): Claude Code copies records, same
    uuid, into other files (a resumed or forked session starts with the earlier
    conversation; the side-question sub-agent replays its parent's records). The record
    is owned by the session whose own file holds it under its own sessionId (a session
    file ``<sessionId>.jsonl``), then by a sub-agent's file, then by a copy carrying
    another session's id; between equals, by the session whose file began first (the
    file's first timestamp, kept in the state). Returns (claim, since, holder)."""
    if state.get("since") is None and ts is not None:
        state["since"] = ts
    since = _str(state.get("since"))
    agent_file, stem, safe = _file_name(source_path)
    if agent_file is not None:
        return CLAIM_SUBAGENT, since, None
    if kind == BACKGROUND_KIND:
        # A background handoff (/background, Ctrl+B) replays the conversation into a new
        # file, every record under the new session's id: the original file's copy owns
        # what both hold; the records only this file has are its session's all the same.
        return CLAIM_COPY, since, None
    if stem == native_id or not safe:
        return CLAIM_OWN, since, None
    return CLAIM_COPY, since, session_key(NAME, stem)


class ClaudeAdapter:
    name = NAME

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a line or document just read,
        for the fidelity tally: the type, ``system/<subtype>``, ``attachment/<type>``."""
        version = _version(obj, state)
        if not isinstance(obj, dict):
            return version, "<not an object>", False
        record_type = obj.get("type")
        if not isinstance(record_type, str):
            return version, "document" if "agentType" in obj else "<no type>", False
        if record_type == "system":
            sub = obj.get("subtype")
            name = sub if isinstance(sub, str) else "?"
            return version, f"system/{name}", name in IGNORED_SYSTEM_SUBTYPES
        if record_type == "attachment":
            kind = _dict(obj.get("attachment")).get("type")
            return version, f"attachment/{kind if isinstance(kind, str) else '?'}", True
        return version, record_type, record_type in IGNORED_RECORD_TYPES

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return {
            "session": None,  # native session id last seen in this file
            "version": None,
            "cwd": None,  # last working directory seen
            "turn": None,  # the latest turn started in this file (events are tagged with it)
            "turn_open": False,
            "turn_model": None,
            "last_ts": None,
            "model": None,  # last model reported in SessionFacts
            "title_rank": 0,
            "pending": {},  # tool_use id -> {"tool": name, "input": input}
            "usage": {},  # message id -> the USAGE_FIELDS counted
            "parts": {},  # digests of (message id, text) of the message parts already emitted
            "message": None,  # the open assistant message, see _message
            "sidechains": {},  # inline sidechain record uuid -> its subagent id
            "command": None,  # a slash command not yet answered: {"id", "ts", "cwd"}
        }

    def parse_document(
        self, obj: Any, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """``agent-<id>.meta.json`` sidecars ({"agentType", "description"}) describe a
        subagent, not the session: nothing in the event model holds them, so they yield
        no records. Other documents are not Claude Code files either."""
        return []

    # -- dispatch ---------------------------------------------------------------------

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        record_type = obj["type"]
        version = _str(obj.get("version"))
        if version:
            state["version"] = version
        native_id = _native_session_id(obj, source_path, state)
        state["session"] = native_id
        ts = normalize_ts(obj.get("timestamp"))
        subagent_id = _subagent_id(obj, source_path, state)
        claim = _claim(native_id, source_path, state, ts, obj.get("sessionKind"))
        # Every conversation record names its cwd; the few that do not inherit it.
        cwd = _str(obj.get("cwd")) or _str(state.get("cwd"))
        # By position (LineContext's order: ts, out, native_id, obj, record_id, turn_id,
        # cwd, subagent_id, claim): binding keywords cost more than the constructor.
        line = LineContext(
            RULES,
            source_path,
            offset,
            state,
            ts,
            None,
            native_id,
            obj,
            _str(obj.get("uuid")),
            _turn_for(obj, source_path, state, subagent_id),
            cwd,
            subagent_id,
            claim,
        )

        out: list[Record] = []
        if record_type == "user":
            out += _user(line)
        elif record_type == "assistant":
            out += _assistant(line)
        elif record_type == "system":
            out += _system(line)
        elif record_type == "custom-title":
            out += _title(line, _str(obj.get("customTitle")), "custom")
        elif record_type == "ai-title":
            out += _title(line, _str(obj.get("aiTitle")), "ai")
        out += _session_facts(line)
        if ts:
            state["last_ts"] = ts
        if cwd:
            state["cwd"] = cwd
        return out


ADAPTER = ClaudeAdapter()


# -- identity -------------------------------------------------------------------------


def _version(obj: Any, state: dict[str, Any]) -> str:
    if isinstance(obj, dict) and _str(obj.get("version")):
        return str(obj["version"])
    return _str(state.get("version")) or "unknown"


def _native_session_id(obj: dict[str, Any], source_path: str, state: dict[str, Any]) -> str:
    """The record's sessionId; else the one seen earlier in the file; else the path:
    ``<sessionId>/subagents/agent-x.jsonl`` names its session by its directory,
    ``<sessionId>.jsonl`` by its file name."""
    sid = _str(obj.get("sessionId")) or _str(state.get("session"))
    if sid:
        return sid
    session_dir = _session_dir_above(os.path.dirname(source_path), None)
    if session_dir is not None:
        return os.path.basename(session_dir) or "unknown"
    stem = os.path.basename(source_path)
    if stem.endswith(".jsonl"):
        stem = stem[: -len(".jsonl")]
    return stem or "unknown"


def _subagent_id(obj: dict[str, Any], source_path: str, state: dict[str, Any]) -> str | None:
    """Which subagent wrote this record, or None for the main conversation.

    * Subagent files (``agent-<id>.jsonl``, both layouts): the record's ``agentId``,
      else the id in the file name. Every record of such a file is the subagent's.
    * Inline sidechains (pre-2.0, ``isSidechain: true`` in the session file): the
      ``agentId`` if present, else the uuid of the sidechain's root record (the one
      whose parent is not a sidechain record we know), followed through parentUuid.
    """
    agent_id = _str(obj.get("agentId"))
    agent_file = _file_name(source_path)[0]
    if agent_file is not None:
        return agent_id or agent_file
    if obj.get("isSidechain") is not True:
        return None
    links = _table(state, "sidechains")
    uuid = _str(obj.get("uuid"))
    parent = _str(obj.get("parentUuid"))
    subagent = agent_id or (links.get(parent) if parent else None) or uuid
    if not isinstance(subagent, str):
        return "sidechain"  # no uuid at all: still a subagent, just not an identifiable one
    if uuid:
        _remember(links, uuid, subagent, MAX_SIDECHAIN_LINKS)
    return subagent


def _turn_for(
    obj: dict[str, Any], source_path: str, state: dict[str, Any], subagent_id: str | None
) -> str | None:
    """Main-conversation events belong to the latest turn of the file. A subagent's
    events belong to the parent's turn: its 2.1.x records carry the parent prompt's
    ``promptId`` (which is the turn id, see _start_turn); an inline sidechain runs
    inside the parent's open turn; older subagent files cannot tell."""
    if subagent_id is not None:
        prompt_id = _str(obj.get("promptId"))
        if prompt_id:
            if _file_name(source_path)[0] is not None:
                state["turn"] = prompt_id  # only user records carry it: keep it for the rest
            return prompt_id
    turn = state.get("turn")
    return turn if isinstance(turn, str) else None


# -- user records ---------------------------------------------------------------------


def _user(line: LineContext) -> list[Record]:
    obj = line.obj
    message = _dict(obj.get("message"))
    content = message.get("content")
    out: list[Record] = []
    if isinstance(content, list):  # a typed prompt is most often a string: nothing to look at
        blocks = content
        if any(_dict(b).get("type") == "tool_result" for b in blocks):
            return _tool_results(line, blocks)
        out = [
            Drift(NAME, _version(obj, line.state), f"user/{b['type']}")
            for b in blocks
            if isinstance(b, dict)
            and isinstance(b.get("type"), str)
            and b["type"] not in IGNORED_USER_BLOCKS
            and b["type"] != "text"
        ]
    if obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
        return out  # injected context (slash-command expansions, caveats) and summaries
    text = _prompt_text(content)
    if not text:
        return out
    if text.startswith(INTERRUPTED_PREFIX):
        if line.subagent_id is None:
            out += _end_turn(line, "aborted", "interrupted", closed_by_marker=True)
        return out
    if text.startswith(COMMAND_TAGS) and line.subagent_id is None:
        # A slash command. Local ones (/model, /clear) only print something; custom ones
        # expand into an isMeta prompt the model then works on. Which one it was shows
        # when the assistant answers: that answer opens a turn for the command.
        line.state["command"] = {"id": line.key(), "ts": line.ts, "cwd": line.cwd}
        return out
    if text.startswith(HARNESS_TAGS):
        return out
    if obj.get("promptSource") == SYSTEM_PROMPT_SOURCE:
        # Queued by Claude Code itself, not typed: the runtime's directive.
        out.append(line.event(DIRECTIVE, line.key(), data={"text": text, "source": "system"}))
        return out
    typed = _typed_prompt(content)
    if line.subagent_id is None and not typed:
        return out  # all of it injected (a compaction summary opening a session, say)
    if line.subagent_id is not None:
        # A sub-agent's task: the root of its sidechain, its parent agent's brief, inside
        # the parent's turn, never a person's prompt (adapters/injected.py): a directive.
        # Other text in a sub-agent's file (the side-question agent's replay of its
        # parent's prompts, and the question typed after it) stays a prompt of the agent.
        if obj.get("isSidechain") is True and obj.get("parentUuid") is None:
            out.append(line.event(DIRECTIVE, line.key(), data={"text": text, "source": "agent"}))
        else:
            out.append(line.event(PROMPT, line.key(), data={"text": text}))
        return out
    # A real prompt opens a turn. Its id is the prompt's ``promptId`` (2.1.x: shared with
    # the records of that turn and with its subagents' records) else the record uuid.
    line.state["command"] = None
    turn_id = _str(obj.get("promptId")) or line.key()
    out += _start_turn(line, turn_id, line.ts, line.cwd)
    out.append(line.event(PROMPT, line.key(), data={"text": typed}))
    if not _int(line.state.get("title_rank")):  # only an untitled session's (see _title)
        out += _title(line, first_line(typed), "prompt")
    return out


def _typed_prompt(content: Any) -> str:
    """The part of a prompt a person typed: each text block without what Claude Code or
    an IDE injected (adapters/injected.py: IDE context, reminders, the desktop agent's
    ``<uploaded_files>``, a compaction summary)."""
    if isinstance(content, str):
        return person_text(content)  # one block: what the join below makes of it
    blocks = [
        b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"
    ] if isinstance(content, list) else []
    parts = [t for t in (person_text(b) for b in blocks if isinstance(b, str)) if t]
    return "\n".join(parts)


def _prompt_text(content: Any) -> str:
    """The text a person typed: a string, or the text blocks minus IDE-injected context."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text":
            continue
        text = block.get("text")
        if (
            isinstance(text, str)
            and text.strip()
            and not text.lstrip().startswith(INJECTED_BLOCK_TAGS)
        ):
            parts.append(text)
    return "\n".join(parts).strip()


def _start_turn(line: LineContext, turn_id: str, ts: str | None, cwd: str | None) -> list[Record]:
    state = line.state
    if state.get("turn_open") and state.get("turn") == turn_id:
        return []  # a second prompt record of the same turn
    out = line.open_turn(turn_id, ts=ts, cwd=cwd)
    state["turn_model"] = None
    return out


def _end_turn(
    line: LineContext, status: str, reason: str | None, *, closed_by_marker: bool = False
) -> list[Record]:
    """Close the open turn. An end marker (turn_duration, an interruption notice) ends
    it at its own time; a new prompt ends the previous turn at the last event before it."""
    return line.close_turn(status, reason, at_marker=closed_by_marker)


def _tool_results(line: LineContext, blocks: list[Any]) -> list[Record]:
    obj = line.obj
    pending = _table(line.state, "pending")
    results = [(i, b) for i, b in enumerate(blocks) if _dict(b).get("type") == "tool_result"]
    # toolUseResult describes the record's result; with several results it is ambiguous.
    extra = obj.get("toolUseResult") if len(results) == 1 else None
    extra_obj = _dict(extra)
    out: list[Record] = []
    for index, block in results:
        call_id = _str(block.get("tool_use_id"))
        call = _dict(pending.pop(call_id, None)) if call_id else {}
        inline = _result_text(block.get("content"))
        contents: list[tuple[str, str]] = [("output", inline)] if inline else []
        if isinstance(extra, str) and extra and extra != inline:
            contents.append(("output", extra))
        for label, value in (
            ("stdout", extra_obj.get("stdout")),
            ("stderr", extra_obj.get("stderr")),
            ("file", _dict(extra_obj.get("file")).get("content")),
        ):
            if isinstance(value, str) and value:
                contents.append((label, value))
        is_error = block.get("is_error")
        event = line.event(
            TOOL_RESULT,
            f"{NAME}:tool_result:{call_id}" if call_id else line.key(index),
            tool=_str(call.get("tool")),
            call_id=call_id,
            data={
                "is_error": is_error if isinstance(is_error, bool) else None,
                "exit_code": _exit_code(extra_obj),
                "duration_ms": _duration_ms(extra_obj),
                "output_chars": len(inline),
                "interrupted": extra_obj.get("interrupted") is True
                or inline.lstrip().startswith(INTERRUPTED_PREFIX),
                # The sub-agent an Agent/Task call started (its own transcript's agentId):
                # nested sub-agents link to the agent that started them this way.
                **({"agent_id": agent} if (agent := _str(extra_obj.get("agentId"))) else {}),
            },
            input=_dict(call.get("input")) if "input" in call else None,
            contents=contents,
        )
        if call_id and inline.lstrip().startswith(PERSISTED_OUTPUT_TAG):
            event.spill_path = spill_path(line.source_path, line.native_id, call_id)
        out.append(event)
    return out


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return text_of(content) if isinstance(content, list) else ""


def _exit_code(result: dict[str, Any]) -> int | None:
    for name in ("exitCode", "exit_code", "returnCode"):
        code = _int(result.get(name))
        if code is not None:
            return code
    return None


def _duration_ms(result: dict[str, Any]) -> int | None:
    for name in ("durationMs", "totalDurationMs"):
        ms = _int(result.get(name))
        if ms is not None:
            return ms
    return seconds_to_ms(result.get("durationSeconds"))


def spill_path(source_path: str, native_session_id: str, tool_use_id: str) -> str | None:
    """Where Claude Code spilled a tool result too large to inline:
    ``<project>/<sessionId>/tool-results/<tool_use_id>.txt``. Computed from the
    transcript's own location (a subagent under ``<sessionId>/subagents/`` shares its
    session's directory), never from a path written in the transcript; ids that are
    not plain names get no path at all."""
    if not _SAFE_NAME.fullmatch(tool_use_id):
        return None
    directory = os.path.dirname(source_path)
    session_dir = _session_dir_above(directory, native_session_id)
    if session_dir is None:
        if not _SAFE_NAME.fullmatch(native_session_id):
            return None
        session_dir = os.path.join(directory, native_session_id)
    return os.path.join(session_dir, "tool-results", f"{tool_use_id}.txt")


def _session_dir_above(directory: str, native_session_id: str | None) -> str | None:
    """For a subagent transcript somewhere under ``<sessionId>/subagents/``, the session's
    directory: the ancestor holding a ``subagents`` dir and named after the session, else
    the nearest such ancestor that is not itself a subagent's. None outside that layout."""
    candidates = []
    ancestor = directory
    while os.path.basename(ancestor):
        if os.path.basename(ancestor) == "subagents":
            session_dir = os.path.dirname(ancestor)
            if native_session_id and os.path.basename(session_dir) == native_session_id:
                return session_dir
            candidates.append(session_dir)
        ancestor = os.path.dirname(ancestor)
    return next((c for c in candidates if not os.path.basename(c).startswith("agent-")), None)


# -- assistant records ----------------------------------------------------------------


def _assistant(line: LineContext) -> list[Record]:
    obj = line.obj
    message = _dict(obj.get("message"))
    model = _str(message.get("model"))
    content = message.get("content")
    blocks: list[Any] = (
        [{"type": "text", "text": content}]
        if isinstance(content, str)
        else (content if isinstance(content, list) else [])
    )
    if model == SYNTHETIC_MODEL or obj.get("isApiErrorMessage") is True:
        # Text the harness wrote in the assistant role (API errors, "No response
        # requested."): not the model's output and no tokens spent.
        if obj.get("isApiErrorMessage") is not True:
            return []
        notice = text_of(blocks).strip() or "API error"
        error_type = _str(obj.get("error")) or "api_error_message"
        data = {"message": notice[:MAX_ERROR_CHARS], "error_type": error_type}
        return [line.event(ERROR, line.key(), data=data)]

    out: list[Record] = []
    command = _dict(line.state.get("command"))
    if line.subagent_id is None and _str(command.get("id")):
        # The model answers a slash command: the command opened a turn.
        line.state["command"] = None
        out += _start_turn(line, command["id"], _str(command.get("ts")), _str(command.get("cwd")))
    message_id = _str(message.get("id"))
    texts: list[str] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text":
            block_text = block.get("text")
            if (
                isinstance(block_text, str)
                and block_text.strip()
                and (message_id is None or _first_sighting(line, message_id, block_text))
            ):
                texts.append(block_text)
        elif block_type in ("thinking", "redacted_thinking"):
            thinking = block.get("thinking")
            reasoning: dict[str, Any] = (
                {"chars": len(thinking)} if isinstance(thinking, str) else {}
            )
            key = line.key(index)
            if message_id:
                # Keyed by content so a replayed copy of the message dedupes.
                digest = _digest(orjson.dumps(block, option=orjson.OPT_SORT_KEYS))
                key = f"{NAME}:reasoning:{message_id}:{digest}"
            out.append(line.event(REASONING, key, data=reasoning))
        elif block_type == "tool_use":
            out.append(_tool_call(line, block, index))
        elif isinstance(block_type, str) and block_type not in IGNORED_ASSISTANT_BLOCKS:
            out.append(Drift(NAME, _version(obj, line.state), f"assistant/{block_type}"))

    if texts:
        out.append(_message(line, message_id, "\n".join(texts)))
    usage = message.get("usage")
    if isinstance(usage, dict):
        out += _usage(line, message_id, usage, model)
    if model and line.subagent_id is None:
        out += _turn_model(line, model)
    return out


def _digest(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.blake2b(raw, digest_size=8).hexdigest()


def _first_sighting(line: LineContext, message_id: str, text: str) -> bool:
    """False when this file already gave this text for this message: a conversation
    replayed into the file (forks, resumes) repeats whole messages under new uuids."""
    seen = _table(line.state, "parts")
    mark = _digest(f"{message_id}\n{text}")
    if mark in seen:
        return False
    _remember(seen, mark, 1, MAX_SEEN_PARTS)
    return True


def _message(line: LineContext, message_id: str | None, part: str) -> Event:
    """The MESSAGE event of an assistant message, with this line's new text ``part``.

    One assistant message is written as one line per content block, every line with the
    same message.id. The file's open message (its id, revision, length and data, in the
    state) takes each new part, joined by a blank line, and the event is emitted again
    under the message's key with the next revision: the store replaces the stored
    message with it (see Event.revision). Only the latest message with text is kept
    open: the blocks of a message are written together (in the corpus, no message has
    text after another message's text).

    The state holds the event's own ``data``, which ingest then cuts, redacts or empties
    in place: it keeps the message as stored, never text the store does not have. When
    that is only a prefix (cut at MAX_STORED_TEXT_CHARS, or no text stored), it stays
    the stored text and the new part is given to the scanner as content."""
    if message_id is None:  # a message of one line (no id to join lines by)
        key = _str(line.obj.get("uuid")) or line.key(0)
        return line.event(MESSAGE, f"{NAME}:message:{key}", data={"text": part})
    held = _dict(line.state.get("message"))
    if held.get("id") != message_id:
        data: dict[str, Any] = {"text": part}
        revision, chars = 0, len(part)
        contents: list[tuple[str, str]] = []
    else:
        revision = (_int(held.get("revision")) or 0) + 1
        chars = (_int(held.get("chars")) or 0) + 2 + len(part)
        stored = _dict(held.get("data"))
        text = stored.get("text")
        if (
            isinstance(text, str)
            and not stored.get("text_truncated")
            and len(text) <= MAX_STORED_TEXT_CHARS  # not cut yet: this round's own lines
        ):
            data, contents = {"text": f"{text}\n\n{part}"}, []
        else:  # only a prefix is held (cut), or no text (not stored)
            data = {"text_chars": chars}
            if isinstance(text, str):
                data["text"] = text[:MAX_STORED_TEXT_CHARS]
                data["text_truncated"] = True
            contents = [("text", part)]
    line.state["message"] = {"id": message_id, "revision": revision, "chars": chars, "data": data}
    event = line.event(MESSAGE, f"{NAME}:message:{message_id}", data=data, contents=contents)
    event.revision = revision
    return event


def _tool_call(line: LineContext, block: dict[str, Any], index: int) -> Event:
    name = _str(block.get("name"))
    call_id = _str(block.get("id"))
    raw_input = block.get("input")
    full_input: dict[str, Any]
    if isinstance(raw_input, dict):
        full_input = raw_input
    elif raw_input is None:
        full_input = {}
    else:
        full_input = {"raw": raw_input}
    if call_id:
        kept = full_input
        if len(orjson.dumps(full_input)) > MAX_PENDING_INPUT_BYTES:
            kept = summarize_input(full_input)
        _remember(
            _table(line.state, "pending"),
            call_id,
            {"tool": name, "input": kept},
            MAX_PENDING_CALLS,
        )
    return line.event(
        TOOL_CALL,
        f"{NAME}:tool_use:{call_id}" if call_id else line.key(index),
        tool=name,
        call_id=call_id,
        data={"input": summarize_input(full_input)},
        input=full_input,
    )


USAGE_FIELDS = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_input_tokens", "cache_read_tokens"),
    ("cache_creation_input_tokens", "cache_creation_tokens"),
    # The part of cache_creation_input_tokens written for an hour (priced at twice the
    # input rate, where a 5-minute write is 1.25 times): usage.cache_creation's
    # ephemeral_1h_input_tokens, since Claude Code 1.0.x's API responses carried it.
    ("ephemeral_1h_input_tokens", "cache_creation_1h_tokens"),
)
# The counters a usage increase is keyed by (the 1-hour writes are part of the
# cache writes, so they add nothing to tell two increases apart; keys stay the same as
# before the 1-hour count was kept).
KEYED_COUNTERS = 4


def _usage(
    line: LineContext, message_id: str | None, usage: dict[str, Any], model: str | None
) -> list[Record]:
    """Token usage, once per message id.

    Every line of a multi-block message repeats ``message.usage``, but the repeats are
    streaming snapshots: output_tokens grows from the first block's line to the last.
    The first line seen emits ``claude-code:usage:<id>`` (the store ignores that key
    when another file already counted the message); a later line that raises a counter
    emits only the increase, keyed by the totals reached so the same progression seen
    in another file dedupes too."""
    creation = usage.get("cache_creation")
    nested = creation if isinstance(creation, dict) else {}
    current = [
        max(0, _int(usage.get(field, nested.get(field))) or 0) for field, _ in USAGE_FIELDS
    ]
    if message_id is None:
        uuid = _str(line.obj.get("uuid")) or line.key(0)
        return [_usage_event(line, f"{NAME}:usage:{uuid}", current, model)]
    counted_table = _table(line.state, "usage")
    counted = counted_table.get(message_id)
    if not (isinstance(counted, list) and len(counted) == len(current)):
        _remember(counted_table, message_id, current, MAX_USAGE_IDS)
        return [_usage_event(line, f"{NAME}:usage:{message_id}", current, model)]
    reached = [max(_int(a) or 0, b) for a, b in zip(counted, current, strict=True)]
    increase = [r - (_int(a) or 0) for r, a in zip(reached, counted, strict=True)]
    if not any(increase):
        return []
    _remember(counted_table, message_id, reached, MAX_USAGE_IDS)
    key = f"{NAME}:usage:{message_id}:" + ".".join(str(n) for n in reached[:KEYED_COUNTERS])
    event = _usage_event(line, key, increase, model)
    # The whole request's input (with the cache) for the price tier it reached: an
    # increase is a part of one request, and past 200K input every token of it costs
    # the higher rate, the increase's own output tokens included.
    event.data["request_input_tokens"] = reached[0] + reached[2] + reached[3]
    return [event]


def _usage_event(line: LineContext, key: str, counts: list[int], model: str | None) -> Event:
    data: dict[str, Any] = {name: n for (_, name), n in zip(USAGE_FIELDS, counts, strict=True)}
    data["reasoning_tokens"] = 0
    data["total_tokens"] = sum(counts[:KEYED_COUNTERS])
    data["model"] = model
    return line.event(USAGE, key, data=data)


def _turn_model(line: LineContext, model: str) -> list[Record]:
    state = line.state
    turn_id = state.get("turn")
    if not state.get("turn_open") or not isinstance(turn_id, str):
        return []
    if state.get("turn_model") == model:
        return []
    state["turn_model"] = model
    return [TurnFacts(session_id=line.session_id, turn_id=turn_id, model=model)]


# -- system records -------------------------------------------------------------------


def _system(line: LineContext) -> list[Record]:
    obj = line.obj
    subtype = obj.get("subtype")
    if not isinstance(subtype, str):
        return [Drift(NAME, _version(obj, line.state), "system/<no subtype>")]
    if subtype in IGNORED_SYSTEM_SUBTYPES:
        return []
    if subtype not in HANDLED_SYSTEM_SUBTYPES:
        return [Drift(NAME, _version(obj, line.state), f"system/{subtype}")]
    if subtype == "compact_boundary":
        meta = _dict(obj.get("compactMetadata"))
        trigger = _str(meta.get("trigger"))
        pre_tokens = _int(meta.get("preTokens"))
        return [
            line.event(COMPACTION, line.key(), data={"trigger": trigger, "pre_tokens": pre_tokens})
        ]
    if subtype == "api_error":
        return [line.event(ERROR, line.key(), data=_api_error(obj))]
    # turn_duration: Claude Code 2.1.x marks the end of a turn.
    if line.subagent_id is not None:
        return []
    return _end_turn(line, "complete", None, closed_by_marker=True)


def _api_error(obj: dict[str, Any]) -> dict[str, Any]:
    error = _dict(obj.get("error"))
    inner = _dict(error.get("error"))
    cause = _dict(obj.get("cause")) or _dict(error.get("cause"))
    message = (
        _str(inner.get("message"))
        or _str(error.get("message"))
        or _str(cause.get("message"))
        or _str(obj.get("content"))
    )
    if message is None:
        attempt, most = _int(obj.get("retryAttempt")), _int(obj.get("maxRetries"))
        message = "API error" + (f" (retry {attempt}/{most})" if attempt and most else "")
    error_type = (
        _str(inner.get("type"))
        or _str(error.get("type"))
        or _str(cause.get("code"))
        or _str(cause.get("name"))
        or "api_error"
    )
    return {"message": message[:MAX_ERROR_CHARS], "error_type": error_type}


# -- session facts --------------------------------------------------------------------


def _title(line: LineContext, text: str | None, source: str) -> list[Record]:
    """A title from a rename, an AI title or the first prompt: a stronger source
    replaces a weaker one, never the reverse. Subagents never title the session."""
    if not text or line.subagent_id is not None:
        return []
    rank = TITLE_RANK[source]
    current = _int(line.state.get("title_rank")) or 0
    if rank < current or (source == "prompt" and current):
        return []
    line.state["title_rank"] = rank
    title = text.strip()[:MAX_TITLE_CHARS]
    return [line.facts(title=title)] if title else []


def _session_facts(line: LineContext) -> list[Record]:
    """What the line says about its session. The model comes only from the main
    conversation (a subagent may run on a smaller model)."""
    state = line.state
    model = None
    if line.obj.get("type") == "assistant" and line.subagent_id is None:
        candidate = _str(_dict(line.obj.get("message")).get("model"))
        if candidate and candidate != SYNTHETIC_MODEL and candidate != state.get("model"):
            model = candidate
            state["model"] = candidate
    if line.ts is None and model is None:
        return []
    return [
        line.facts(
            cwd=_str(line.obj.get("cwd")),
            model=model,
            started_at=line.ts,
            last_event_at=line.ts,
            version=_str(line.obj.get("version")),
        )
    ]
