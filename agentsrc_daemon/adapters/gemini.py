"""Gemini CLI chat recordings -> normalized records.

Gemini CLI records each conversation under ``~/.gemini/tmp/<project>/chats/``
(``$GEMINI_CLI_HOME/.gemini`` when that variable is set), where ``<project>`` is the
SHA-256 of the project root (older versions) or a short slug whose ``.project_root``
file holds the root (0.29 and later). Two layouts (docs/formats.md, Gemini section):

* ``session-<ts>-<id8>.json``: one ``ConversationRecord`` document ``{sessionId,
  projectHash, startTime, lastUpdated, messages[...]}`` rewritten whole on every update
  (until 0.38). Read by ``parse_document``.
* ``session-<ts>-<id8>.jsonl`` (0.39 and later; subagents in
  ``<parentSessionId>/<sessionId>.jsonl``): a metadata line, one line per message, a
  message written again under the same id whenever it changes (tokens, tool calls,
  results: the last copy wins), ``{"$set": {...}}`` lines patching the metadata (a
  ``messages`` list there replaces the whole conversation) and ``{"$rewindTo": id}``.
  Read line by line by ``parse``.

Both come down to the same thing: a stream of message versions. Each message id keeps a
small entry in the per-file state (a digest of the last version seen and which of its
parts were emitted), so a rewritten document or a re-emitted message costs work only
for what changed and never emits a part twice. Every key is built from the session id,
the message id and the tool call id, so even a lost state cannot duplicate an event.

``logs.json`` (the prompt log) and ``checkpoint-<tag>.json`` (raw API history saved by
``/chat save``) repeat what the chats hold: the ingest layer tracks them as memory files
and they yield no events here.

The module is pure: no file, database or socket access. The ingest layer hands it the
text of a project's ``.project_root`` (``GeminiAdapter.read_sidecar``), whose root
``seed_cwd`` gives the chats' per-file state; ``project_root_file``, ``project_hash``
and ``project_root_from_checkpoint`` find a project's root from its paths and
checkpoints.

Long on purpose: two formats of one agent (the JSON documents and the 0.39+ append-only
JSONL with its patches and rewinds) sharing their messages' reading.
"""

from __future__ import annotations

import hashlib
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
    TURN_END,
    TURN_START,
    USAGE,
    Record,
    TurnFacts,
)
from .common import (
    TITLE_SCAN_CHARS,
    LineContext,
    LineRules,
    as_count,
    begin,
    cwd_in_state,
    first_line,
    normalize_ts,
    stable_digest,
    summarize_input,
    upgrade_state,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str

NAME = "gemini"
VERSION = "unknown"  # Gemini CLI records no version of its own
STATE_SCHEMA = 1

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
# Message types read for nothing, with the reason (a "warning" is a UI notice: loop
# detection, a quota fallback; an "info" that is not a compression notice is one too).
IGNORED_MESSAGE_TYPES = {"warning": "a notice the UI showed, not the conversation"}
# User text the CLI injects at the start of a conversation (environment, hook output):
# never a prompt. The environment block names the workspace directories.
CONTEXT_PREFIXES = ("<session_context>", "<hook_context>")
# Info notices the CLI writes after compressing the history.
COMPRESSION_PREFIXES = ("Context compressed from", "Chat history compressed from")
_COMPRESSED_TOKENS = re.compile(r"compressed from ([0-9][0-9,]*) to [0-9][0-9,]* tokens")
TERMINAL_STATUSES = frozenset({"success", "error", "cancelled"})
SHELL_TOOL = "run_shell_command"

# Bounds on the per-file state (it is persisted after every batch).
MAX_TURNS = 512  # prompts remembered in order, for $rewindTo
MAX_MESSAGES = 4096  # message entries; the oldest are forgotten (their keys still dedupe)
MAX_CALL_MARKS = 256  # tool call marks per message entry
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500

# Where the session context names the project root: the workspace directory list
# (current versions) or the sentence older versions wrote.
_WORKSPACE_DIRS = re.compile(r"\*\*Workspace Directories:\*\*[ \t]*\r?\n((?:[ \t]+- [^\n]*\n?)+)")
_WORKING_DIR = re.compile(r"working in the directory: ([^\n]+)")
# Shell tool output: "Exit Code: N" in the trailer (before 0.27 always written, "(none)"
# when there was none; since then only for a non-zero code).
_EXIT_CODE = re.compile(r"^Exit Code: (-?[0-9]+)\s*$")
_TRAILER = re.compile(r"^(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): ")
MAX_TRAILER_LINES = 12


# --------------------------------------------------------------------------- helpers for ingest


def project_hash(path: str) -> str:
    """The name Gemini CLI gives a project's temp directory in versions before 0.29
    (and writes as ``projectHash`` in every version): the SHA-256 of the root path."""
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()


def project_dir(source_path: str) -> str | None:
    """``~/.gemini/tmp/<project>`` for a file under its ``chats/`` directory."""
    directory = os.path.dirname(source_path)
    while os.path.basename(directory):
        if os.path.basename(directory) == "chats":
            return os.path.dirname(directory)
        directory = os.path.dirname(directory)
    return None


def project_root_file(source_path: str) -> str | None:
    """The ``.project_root`` file that names the project of a chats file. Only slug
    directories (0.29 and later) have one; the path is returned whether it exists or not."""
    directory = project_dir(source_path)
    return os.path.join(directory, ".project_root") if directory else None


def parse_project_root(text: str) -> str | None:
    """The project root written in a ``.project_root`` file: one absolute path."""
    value = text.strip()
    if not value or "\n" in value or "\0" in value:
        return None
    if not (
        value.startswith("/") or value.startswith("\\\\") or re.match(r"^[A-Za-z]:[\\/]", value)
    ):
        return None
    return value


def project_root_in_text(text: str, expected_hash: str | None = None) -> str | None:
    """A project root named by an environment-context text (the first user message of a
    conversation, or of a checkpoint). With ``expected_hash`` (the conversation's
    ``projectHash`` or a hash-named directory) only a directory with that hash counts."""
    head = text[:TITLE_SCAN_CHARS]
    candidates: list[str] = []
    match = _WORKSPACE_DIRS.search(head)
    if match:
        for row in match.group(1).splitlines():
            candidate = row.strip()[2:].strip()
            if candidate:
                candidates.append(candidate)
    candidates += [m.group(1).strip().rstrip(".") for m in _WORKING_DIR.finditer(head)]
    for candidate in candidates:
        if parse_project_root(candidate) is None:
            continue
        if expected_hash is None or project_hash(candidate) == expected_hash:
            return candidate
    return None


def project_root_from_checkpoint(obj: Any, expected_hash: str | None) -> str | None:
    """The project root in a ``checkpoint-<tag>.json`` (raw API ``Content[]``): its first
    user contents carry the environment context. For hash-named project directories,
    which have no ``.project_root``, pass the directory name as ``expected_hash``."""
    if not isinstance(obj, list):
        return None
    for content in obj[:4]:
        for part in _dict(content).get("parts") or []:
            text = _dict(part).get("text")
            if isinstance(text, str):
                root = project_root_in_text(text, expected_hash)
                if root:
                    return root
    return None


def seed_cwd(state: dict[str, Any], cwd: str | None) -> None:
    """Give a file's state the project root the ingest layer found (``.project_root``,
    a checkpoint): events then carry it as their cwd, and it wins over what the
    conversation itself suggests."""
    if cwd:
        state["cwd"] = cwd
        state["cwd_seeded"] = True


# --------------------------------------------------------------------------- small readers


def _ts(value: Any) -> str | None:
    return normalize_ts(value)


def _parts(content: Any) -> list[Any]:
    """A ``PartListUnion``: a string, a part, or a list of strings and parts."""
    if content is None:
        return []
    if isinstance(content, list):
        return content
    return [content]


def _text(content: Any) -> str:
    """The text of a message: its string parts and text parts, minus thought parts."""
    texts = []
    for part in _parts(content):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("thought") is not True:
            text = part.get("text")
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def _short(value: str) -> str:
    """A compact stand-in for an id in the state (ids are kept whole when short)."""
    if len(value) <= 16:
        return value
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def _marks(entry: dict[str, Any], name: str) -> list[str]:
    marks = entry.get(name)
    if not isinstance(marks, list):
        marks = []
        entry[name] = marks
    return marks


def _path_identity(source_path: str) -> tuple[str, str | None]:
    """(native session id, subagent id) from the path alone: a subagent's recording sits
    in ``chats/<parentSessionId>/<sessionId>.jsonl``; any other file is named by its
    stem until its metadata names the session."""
    base = os.path.basename(source_path)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    parent = os.path.dirname(source_path)
    if os.path.basename(parent) != "chats" and os.path.basename(os.path.dirname(parent)) == "chats":
        return os.path.basename(parent) or "unknown", stem or "unknown"
    return stem or "unknown", None


# --------------------------------------------------------------------------- context


def _key(ctx: LineContext, *parts: str) -> str:
    """``gemini:<session>[:<subagent>]:<message id>[:<part>]``: a subagent's ids live
    in its parent's session, so they are qualified by the subagent's own id."""
    subagent = ctx.subagent_id
    head = (NAME, ctx.native_id, subagent) if subagent else (NAME, ctx.native_id)
    return ":".join((*head, *parts))


def _native_of(state: dict[str, Any]) -> str:
    return str(state["session"])


def _subagent_of(state: dict[str, Any]) -> str | None:
    return _str(state.get("subagent")) if state.get("nested") else None


def _version_rule(state: dict[str, Any], obj: Any) -> str:
    return VERSION


def _fresh_state(source_path: str) -> dict[str, Any]:
    native, subagent = _path_identity(source_path)
    return {
        "schema": STATE_SCHEMA,
        "session": native,  # native session id (a subagent's: its parent's)
        "subagent": subagent,  # the subagent's own session id, for nested recordings
        "nested": subagent is not None,  # the file sits in chats/<parentSessionId>/
        "project_hash": None,
        "cwd": None,
        "cwd_seeded": False,
        "turn": None,  # the latest turn (its prompt's key); Gemini writes no turn ends
        "turn_model": None,  # [turn, model] last reported in TurnFacts
        "last_ts": None,  # the latest message time seen (JSONL)
        "model": None,  # last model reported in SessionFacts
        "title_rank": 0,  # 1: first prompt, 2: the CLI's generated summary
        "title": None,
        "cwd_reported": None,
        "span": None,  # [earliest, latest] times reported in SessionFacts
        "msgs": {},  # message id (or its short hash) -> entry, see _message
        "turns": [],  # [prompt message's short id, turn id] in conversation order
    }


# The context's rules (common.LineRules): one context per parse call (a line, or a whole
# document whose messages each name their time and turn: events are given both); the
# session, a nested recording's subagent and the cwd are read from the state, which the
# metadata and the environment context change as they are read.
RULES = LineRules(
    agent=NAME,
    key=_key,
    native_id=_native_of,
    cwd=cwd_in_state,
    subagent=_subagent_of,
    version=_version_rule,
    fresh_state=_fresh_state,
    state_schema=STATE_SCHEMA,
    state_tables=("msgs",),
    checked_tables=("msgs",),
    not_object_drift=True,
)


# --------------------------------------------------------------------------- metadata


def _metadata(ctx: LineContext, meta: dict[str, Any]) -> None:
    """A metadata record (the document itself, the JSONL header, a ``$set``)."""
    state = ctx.state
    session_id = _str(meta.get("sessionId"))
    if session_id:
        if state.get("nested"):
            state["subagent"] = session_id
        else:
            state["session"] = session_id
    project = _str(meta.get("projectHash"))
    if project:
        state["project_hash"] = project
    directories = meta.get("directories")
    if isinstance(directories, list):
        _cwd_candidates(ctx, [d for d in directories if isinstance(d, str)])
    started = _ts(meta.get("startTime"))
    if started is not None and (ctx.earliest is None or started < ctx.earliest):
        ctx.earliest = started
    updated = _ts(meta.get("lastUpdated"))
    if updated is not None and (ctx.latest is None or updated > ctx.latest):
        ctx.latest = updated
    summary = _str(meta.get("summary"))
    if summary:
        _title(ctx, summary, 2)


def _cwd_candidates(ctx: LineContext, candidates: list[str]) -> None:
    state = ctx.state
    if state.get("cwd_seeded") or state.get("cwd"):
        return
    expected = _str(state.get("project_hash"))
    for candidate in candidates:
        if parse_project_root(candidate) is None:
            continue
        if expected is None or project_hash(candidate) == expected:
            state["cwd"] = candidate
            return


def _title(ctx: LineContext, text: str, rank: int) -> None:
    """The first prompt titles the session (rank 1) until the CLI's generated one-line
    summary (rank 2) replaces it; a changed summary replaces the previous one."""
    state = ctx.state
    if ctx.subagent_id is not None:
        return
    current = state.get("title_rank")
    current = current if isinstance(current, int) else 0
    if rank < current or (rank == 1 and current == 1):
        return
    title = first_line(text, MAX_TITLE_CHARS)
    if not title or (rank == current and title == state.get("title")):
        return
    state["title_rank"] = rank
    state["title"] = title
    ctx.facts(title=title)


def _session_facts(ctx: LineContext, model: str | None) -> None:
    """One SessionFacts per parse call, when it learnt something: a wider time span,
    a new model, a cwd not reported yet."""
    state = ctx.state
    span = state.get("span")
    low, high = (span[0], span[1]) if isinstance(span, list) and len(span) == 2 else (None, None)
    earlier = ctx.earliest is not None and (low is None or ctx.earliest < low)
    later = ctx.latest is not None and (high is None or ctx.latest > high)
    new_cwd = ctx.cwd is not None and ctx.cwd != state.get("cwd_reported")
    if not (earlier or later or model or new_cwd):
        return
    state["span"] = [ctx.earliest if earlier else low, ctx.latest if later else high]
    state["cwd_reported"] = ctx.cwd
    ctx.facts(
        cwd=ctx.cwd,
        model=model,
        started_at=ctx.earliest if earlier else None,
        last_event_at=ctx.latest if later else None,
    )


# --------------------------------------------------------------------------- messages


def _walk(ctx: LineContext, messages: list[Any]) -> str | None:
    """A whole conversation (a document, a ``$set`` of messages): unchanged messages cost
    a digest each; the running turn follows the prompts, seen before or not."""
    running: str | None = None
    previous_ts: str | None = None
    model: str | None = None
    for msg in messages:
        if not isinstance(msg, dict) or not _str(msg.get("id")):
            continue
        running, ts, msg_model = _message(ctx, msg, running, previous_ts)
        previous_ts = ts or previous_ts
        model = msg_model or model
    ctx.state["turn"] = running
    return model


def _message(
    ctx: LineContext, msg: dict[str, Any], running: str | None, previous_ts: str | None
) -> tuple[str | None, str | None, str | None]:
    """One version of one message: emits what this version adds. Returns the running
    turn after it, its time and the model that wrote it (new versions only)."""
    message_id = str(msg["id"])
    ts = _ts(msg.get("timestamp"))
    table = ctx.state["msgs"]
    short = _short(message_id)
    digest = stable_digest(msg)
    entry = table.get(short)
    if isinstance(entry, dict) and entry.get("h") == digest:
        if entry.get("P") and ctx.subagent_id is None:
            running = ctx.key(message_id)
        return running, ts, None
    if not isinstance(entry, dict):
        entry = {}
    entry["h"] = digest
    table.pop(short, None)
    table[short] = entry
    while len(table) > MAX_MESSAGES:
        del table[next(iter(table))]
    ctx.saw(ts)

    kind = msg.get("type")
    model = None
    if kind == "user":
        running = _user(ctx, msg, message_id, entry, ts, running, previous_ts)
    elif kind == "gemini":
        model = _gemini(ctx, msg, message_id, entry, ts, running)
    elif kind == "error":
        if not entry.get("d"):
            entry["d"] = 1
            text = _text(msg.get("content")).strip() or "error"
            data = {"message": text[:MAX_ERROR_CHARS], "error_type": "error"}
            ctx.event(ERROR, ctx.key(message_id, "error"), ts=ts, turn_id=running, data=data)
    elif kind == "info":
        text = _text(msg.get("content")).strip()
        if text.startswith(COMPRESSION_PREFIXES) and not entry.get("d"):
            entry["d"] = 1
            match = _COMPRESSED_TOKENS.search(text)
            pre_tokens = int(match.group(1).replace(",", "")) if match else None
            compaction: dict[str, Any] = {"trigger": None, "pre_tokens": pre_tokens}
            ctx.event(
                COMPACTION,
                ctx.key(message_id, "compaction"),
                ts=ts,
                turn_id=running,
                data=compaction,
            )
    elif kind == "warning":
        pass  # UI notices (loop detection, quota fallbacks): nothing we record
    else:
        ctx.drift(f"message/{kind if isinstance(kind, str) else '<no type>'}")
    return running, ts, model


def _user(
    ctx: LineContext,
    msg: dict[str, Any],
    message_id: str,
    entry: dict[str, Any],
    ts: str | None,
    running: str | None,
    previous_ts: str | None,
) -> str | None:
    content_text = _text(msg.get("content"))
    display = msg.get("displayContent")
    shown = _text(display) if display is not None else content_text
    text = shown.strip()
    if not text:
        return running  # a tool response the CLI recorded in the user role, or nothing
    if text.startswith(CONTEXT_PREFIXES):
        # The environment context: not a prompt, but it names the workspace.
        root = project_root_in_text(content_text, _str(ctx.state.get("project_hash")))
        if root:
            _cwd_candidates(ctx, [root])
        return running
    key = ctx.key(message_id)
    if ctx.subagent_id is not None:
        # A subagent's task: its parent agent's brief, inside no turn we can name. Never
        # a person's prompt (adapters/injected.py): a directive.
        if not entry.get("d"):
            entry["d"] = 1
            ctx.event(DIRECTIVE, key, ts=ts, turn_id=None, data={"text": text, "source": "agent"})
        return running
    entry["P"] = 1
    if not entry.get("d"):
        entry["d"] = 1
        if running is not None and running != key:
            ended_at = previous_ts or ts
            ctx.event(
                TURN_END,
                f"{running}:end",
                ts=ended_at,
                turn_id=running,
                data={"status": "complete", "reason": None},
            )
            ctx.emit(TurnFacts(ctx.session_id, running, ended_at=ended_at, status="complete"))
        ctx.event(TURN_START, f"{key}:start", ts=ts, turn_id=key)
        ctx.emit(TurnFacts(ctx.session_id, key, started_at=ts, status="open", cwd=ctx.cwd))
        turns = _turns(ctx.state)
        turns.append([_short(message_id), key])
        del turns[:-MAX_TURNS]
        contents = []
        if display is not None and content_text.strip() and content_text.strip() != text:
            contents.append(("context", content_text))  # @-included files the model saw
        ctx.event(PROMPT, key, ts=ts, turn_id=key, data={"text": text}, contents=contents)
        _title(ctx, text, 1)
    return key


def _turns(state: dict[str, Any]) -> list[Any]:
    """The prompts seen, in order (a state persisted before $rewindTo marked turns has
    none yet)."""
    turns = state.get("turns")
    if not isinstance(turns, list):
        turns = state["turns"] = []
    return turns


def _rewind(ctx: LineContext, message_id: str) -> None:
    """``$rewindTo``: the person took the conversation back to before ``message_id`` (a
    prompt). Gemini drops what follows from the conversation it keeps; here it stays, for
    it happened (the tokens were billed, the files edited, the commands run), and the
    turns from that prompt on are marked ``rewound`` (docs/formats.md)."""
    state = ctx.state
    turns = _turns(state)
    short = _short(message_id)
    at = next((i for i, t in enumerate(turns) if isinstance(t, list) and t[:1] == [short]), None)
    if at is None or ctx.subagent_id is not None:
        return  # not a prompt we saw: nothing we can mark
    running = _str(state.get("turn"))
    for _, turn in turns[at:]:
        if turn == running:
            ended_at = _str(state.get("last_ts"))
            ctx.event(
                TURN_END,
                f"{turn}:end",
                ts=ended_at,
                turn_id=turn,
                data={"status": "rewound", "reason": "rewind"},
            )
            state["turn"] = None
        ctx.emit(TurnFacts(ctx.session_id, turn, status="rewound"))
    del turns[at:]


def _gemini(
    ctx: LineContext,
    msg: dict[str, Any],
    message_id: str,
    entry: dict[str, Any],
    ts: str | None,
    turn: str | None,
) -> str | None:
    if not entry.get("d"):
        text = _text(msg.get("content")).strip()
        if text:
            entry["d"] = 1
            ctx.event(MESSAGE, ctx.key(message_id, "message"), ts=ts, turn_id=turn, data={"text": text})
    thoughts = msg.get("thoughts")
    if isinstance(thoughts, list):
        done = entry.get("n")
        done = done if isinstance(done, int) and done >= 0 else 0
        for index in range(done, len(thoughts)):
            thought = _dict(thoughts[index])
            chars = sum(
                len(v)
                for v in (thought.get("subject"), thought.get("description"))
                if isinstance(v, str)
            )
            ctx.event(
                REASONING,
                ctx.key(message_id, "thought", str(index)),
                ts=_ts(thought.get("timestamp")) or ts,
                turn_id=turn,
                data={"chars": chars},
            )
        entry["n"] = max(done, len(thoughts))
    model = _str(msg.get("model"))
    calls = msg.get("toolCalls")
    if isinstance(calls, list):
        for index, call in enumerate(calls):
            if isinstance(call, dict):
                _tool_call(ctx, call, message_id, index, entry, ts, turn)
    tokens = msg.get("tokens")
    if isinstance(tokens, dict) and not entry.get("u"):
        counts = [
            as_count(tokens.get(k)) for k in ("input", "output", "cached", "thoughts", "tool", "total")
        ]
        if any(counts):
            entry["u"] = 1
            prompt, output, cached, thinking, tool, total = counts
            data = {
                "input_tokens": prompt + tool,
                "output_tokens": output,
                "cache_read_tokens": cached,
                "cache_creation_tokens": 0,
                "reasoning_tokens": thinking,
                "total_tokens": total or prompt + tool + output + thinking,
                "model": model,
            }
            ctx.event(USAGE, ctx.key(message_id, "usage"), ts=ts, turn_id=turn, data=data)
    if model and ctx.subagent_id is None:
        if turn is not None and ctx.state.get("turn_model") != [turn, model]:
            ctx.state["turn_model"] = [turn, model]
            ctx.emit(TurnFacts(ctx.session_id, turn, model=model))
        return model
    return None


def _tool_call(
    ctx: LineContext,
    call: dict[str, Any],
    message_id: str,
    index: int,
    entry: dict[str, Any],
    message_ts: str | None,
    turn: str | None,
) -> None:
    call_id = _str(call.get("id")) or f"{message_id}.{index}"
    mark = _short(call_id)
    name = _str(call.get("name"))
    raw_args = call.get("args")
    args: dict[str, Any] = (
        raw_args if isinstance(raw_args, dict) else ({} if raw_args is None else {"raw": raw_args})
    )
    ts = _ts(call.get("timestamp")) or message_ts
    called = _marks(entry, "c")
    if mark not in called:
        called.append(mark)
        del called[:-MAX_CALL_MARKS]
        ctx.event(
            TOOL_CALL,
            ctx.key("call", call_id),
            ts=ts,
            turn_id=turn,
            tool=name,
            call_id=call_id,
            data={"input": summarize_input(args)},
            input=args,
        )
    status = call.get("status")
    result = call.get("result")
    done = _marks(entry, "r")
    if mark in done or not ((isinstance(status, str) and status in TERMINAL_STATUSES) or result):
        return
    done.append(mark)
    del done[:-MAX_CALL_MARKS]
    outputs = _result_texts(result)
    output_chars = sum(len(text) for text in outputs)
    exit_code = _exit_code(outputs, status) if name == SHELL_TOOL else None
    ctx.event(
        TOOL_RESULT,
        ctx.key("result", call_id),
        ts=ts,
        turn_id=turn,
        tool=name,
        call_id=call_id,
        data={
            "is_error": status == "error" if isinstance(status, str) else None,
            "exit_code": exit_code,
            "duration_ms": None,
            "output_chars": output_chars,
            "interrupted": status == "cancelled",
        },
        input=args,
        contents=[("output", text) for text in outputs if text],
    )


def _result_texts(result: Any) -> list[str]:
    """What the model was given back: each function response's ``output`` (or
    ``error``), and any text part. Binary parts carry nothing we scan."""
    texts: list[str] = []
    for part in _parts(result):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            continue
        text = part.get("text")
        if isinstance(text, str):
            texts.append(text)
        response = _dict(part.get("functionResponse")).get("response")
        if isinstance(response, dict):
            output, error = response.get("output"), response.get("error")
            if isinstance(output, str) or isinstance(error, str):
                texts += [v for v in (output, error) if isinstance(v, str)]
            elif response:
                texts.append(_json_text(response))
        elif isinstance(response, str):
            texts.append(response)
    return texts


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:  # an integer past 64 bits
        return json.dumps(value, default=str)


def _exit_code(outputs: list[str], status: Any) -> int | None:
    """The exit code in a shell result's trailer. Current versions write ``Exit Code:``
    only for a non-zero code, so an ``Output:`` result with no such line, no signal and
    no error, from a successful call, exited 0."""
    text = "\n".join(outputs)
    lines = text.rstrip("\n").split("\n")
    tail = lines[-MAX_TRAILER_LINES:]
    for line in reversed(tail):
        match = _EXIT_CODE.match(line)
        if match:
            return int(match.group(1))
        if not _TRAILER.match(line):
            break
    if any(line.startswith(("Exit Code: ", "Signal: ", "Error: ")) for line in tail):
        return None
    current_format = text.startswith("Output: ") and not text.startswith("Command: ")
    return 0 if current_format and status == "success" else None


# --------------------------------------------------------------------------- adapter


class GeminiAdapter:
    name = NAME

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a line or document just read,
        for the fidelity tally: ``message/<type>``, ``$set``, ``$rewindTo``, the
        metadata line, a whole conversation. Gemini CLI records no version: "unknown"."""
        if not isinstance(obj, dict):
            return VERSION, "<not an object>", False
        if "$rewindTo" in obj:
            return VERSION, "$rewindTo", False
        if "$set" in obj:
            return VERSION, "$set", False
        if _str(obj.get("id")):
            kind = obj.get("type")
            name = kind if isinstance(kind, str) else "<no type>"
            return VERSION, f"message/{name}", name in IGNORED_MESSAGE_TYPES
        if isinstance(obj.get("messages"), list):
            return VERSION, "conversation", False  # a .json document, or one on a line
        if _str(obj.get("sessionId")):
            return VERSION, "metadata", False
        marks = sorted(k for k in obj if isinstance(k, str) and k.startswith("$"))
        return VERSION, f"line/{marks[0]}" if marks else "<no type>", False

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """One line of a ``.jsonl`` recording."""
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        out: list[Record] = []
        ctx = LineContext(RULES, source_path, offset, state, None, out)
        model: str | None = None
        if isinstance(obj.get("$rewindTo"), str):
            _rewind(ctx, obj["$rewindTo"])
        elif _str(obj.get("id")):
            running = _str(state.get("turn"))
            running, ts, model = _message(ctx, obj, running, _str(state.get("last_ts")))
            state["turn"] = running
            if ts is not None:
                state["last_ts"] = ts
        elif isinstance(obj.get("$set"), dict):
            patch = obj["$set"]
            _metadata(ctx, patch)
            messages = patch.get("messages")
            if isinstance(messages, list):
                model = _walk(ctx, messages)
        elif _str(obj.get("sessionId")) and _str(obj.get("projectHash")):
            _metadata(ctx, obj)
            messages = obj.get("messages")
            if isinstance(messages, list):  # a whole legacy record on one line
                model = _walk(ctx, messages)
        else:
            marks = sorted(k for k in obj if isinstance(k, str) and k.startswith("$"))
            ctx.drift(f"line/{marks[0]}" if marks else "line/<unknown>")
        _finish(ctx, model)
        return out

    def read_sidecar(self, text: str, sidecar_path: str, state: dict[str, Any]) -> list[Record]:
        """``tmp/<project>/.project_root``: the project root becomes the chats' cwd."""
        seed_cwd(state, parse_project_root(text))
        return []

    def parse_document(
        self, obj: Any, source_path: str, state: dict[str, Any] | None = None
    ) -> list[Record]:
        """A whole ``session-*.json`` document. Only messages new or changed since the
        state's digests are turned into records. Lists (``logs.json``, checkpoints) are
        memory, not conversations: nothing."""
        if state is None:
            state = _fresh_state(source_path)
        upgrade_state(state, source_path, RULES)
        out: list[Record] = []
        ctx = LineContext(RULES, source_path, 0, state, None, out)
        if not isinstance(obj, dict):
            return out
        if not _str(obj.get("sessionId")):
            ctx.drift("document/<no sessionId>")
            return out
        _metadata(ctx, obj)
        messages = obj.get("messages")
        model = _walk(ctx, messages) if isinstance(messages, list) else None
        _finish(ctx, model)
        return out


def _finish(ctx: LineContext, model: str | None) -> None:
    state = ctx.state
    reported = None
    if model and ctx.subagent_id is None and model != state.get("model"):
        state["model"] = model
        reported = model
    _session_facts(ctx, reported)


ADAPTER = GeminiAdapter()
