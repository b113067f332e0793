"""Cursor agent transcripts (the IDE agent and ``cursor-agent``) -> normalized records.

Cursor writes under ``~/.cursor`` (docs/formats.md, "Cursor"; Cursor is closed, its
files are the spec):

* ``projects/<cwd, separators as "->/agent-transcripts/<uuid>.txt`` (older): plain
  text, ``user:`` and ``assistant:`` blocks; the person's text in ``<user_query>``;
  ``[Tool call] Name`` with its arguments on the lines below (``  key: value``, a value
  continuing on the lines after it), ``[Tool result] Name`` with the output left out;
  reasoning in ``<think>...</think>``. Read whole each time it changes (``parse_text``).
* ``.../agent-transcripts/<uuid>.jsonl`` and ``<uuid>/<uuid>.jsonl`` (newer): one
  ``{"role", "message": {"content": [text | tool_use]}}`` per line, tailed (``parse``);
  a sub-agent's transcript in ``<uuid>/subagents/<id>.jsonl``: its events are the
  parent conversation's, tagged with the sub-agent's id.
* ``chats/<md5 of cwd>/<agent id>/store.db`` (the CLI): its ``meta`` row (hex-encoded
  JSON: the chat's name, model and creation time) read by ``parse_rows``; the
  conversation in its ``blobs`` is not read.

None of the transcripts holds a time, an id, a tool result's output or usage. Times
are the file's own (its modification time when a round read it, handed over by ingest
as ``common.FILE_TIME``: everything first read in one round gets that time), and the
session says so (``source: {"times": "file"}``). Keys are the place of a record in its
file (a line's offset; a block's ordinal in a text transcript), so a re-read emits
nothing twice. The cwd is the directory the project folder's name stands for on this
machine (``common.FOLDER_CWD``, looked up by ingest), else unknown.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from ..events import (
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    Record,
    SessionFacts,
    session_key,
)
from .common import (
    FILE_TIME,
    FOLDER_CWD,
    LineContext,
    LineRules,
    as_count,
    begin,
    normalize_ts,
    stable_digest,
    summarize_input,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text, title_from

NAME = "cursor"
STATE_SCHEMA = 1
MAX_TITLE_CHARS = 120
MAX_BLOCKS = 8192  # block digests kept for a text transcript (the oldest forgotten)
MAX_PENDING = 256  # calls awaiting their result marker in a text transcript
TIMES = {"times": "file"}  # the session's mark: its times are its file's

ROLES = frozenset({"user", "assistant"})
BLOCK_TYPES = frozenset({"text", "tool_use"})
# Tool inputs holding what the model wrote (scanned, never stored): Write's contents,
# StrReplace's new string.
WRITTEN = (("contents", "write"), ("new_string", "new_string"))

_SEGMENT = re.compile(r"^(user|assistant):[ \t]*$", re.MULTILINE)
_THINK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL)
_ARG = re.compile(r"^  (-{0,2}[A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?$")
_CALL = "[Tool call] "
_RESULT = "[Tool result] "


# --------------------------------------------------------------------------- paths


def transcript_ids(source_path: str) -> tuple[str, str | None]:
    """(conversation id, sub-agent id or None) of a transcript, from its path:
    ``<uuid>.jsonl|.txt``, ``<uuid>/<uuid>.jsonl``, ``<uuid>/subagents/<id>.jsonl``."""
    stem = os.path.splitext(os.path.basename(source_path))[0]
    parent = os.path.dirname(source_path)
    if os.path.basename(parent) == "subagents":
        return os.path.basename(os.path.dirname(parent)), stem
    return stem, None


def project_folder_of(source_path: str) -> str | None:
    """``<folder>`` of ``.../projects/<folder>/agent-transcripts/...``."""
    parts = source_path.replace(os.sep, "/").split("/")
    if "agent-transcripts" not in parts:
        return None
    i = len(parts) - 1 - parts[::-1].index("agent-transcripts")
    return parts[i - 1] if i >= 1 and parts[i - 2 : i - 1] == ["projects"] else None


def _fresh_state(source_path: str) -> dict[str, Any]:
    native, subagent = transcript_ids(source_path)
    return {"schema": STATE_SCHEMA, "session": native, "subagent": subagent, "turn": None,
            "turn_open": False, "facts": False, "titled": False, "blocks": {}, "pending": []}


def _session(state: dict[str, Any]) -> str:
    return _str(state.get("session")) or "unknown"


RULES = LineRules(
    agent=NAME,
    native_id=_session,
    cwd=lambda state: _str(state.get(FOLDER_CWD)),
    subagent=lambda state: _str(state.get("subagent")),
    turn=lambda state: state.get("turn") if state.get("turn_open") else None,
    version=None,  # Cursor records no version of its own
    fresh_state=_fresh_state,
    state_schema=STATE_SCHEMA,
    state_tables=("blocks",),
    not_object_drift=True,
)


# --------------------------------------------------------------------------- shared


def _facts(ctx: LineContext, ts: str | None) -> None:
    """The session's facts: once its cwd, start and time mark (from the main
    transcript), and the last time anything was read."""
    state = ctx.state
    if state.get("subagent") is None and not state.get("facts"):
        state["facts"] = True
        folder = project_folder_of(ctx.source_path)
        source = {**TIMES, "project_folder": folder} if folder else dict(TIMES)
        ctx.facts(cwd=ctx.cwd, started_at=ts, last_event_at=ts, source=source)
    elif ts is not None and ts != state.get("last_ts"):
        ctx.facts(last_event_at=ts)
    state["last_ts"] = ts


def _prompt(ctx: LineContext, key: str, text: str, ts: str | None) -> None:
    """A user text: a prompt when a person typed part of it. In the main conversation
    it opens a turn and titles the session (weakly: a chat's own name wins)."""
    typed = person_text(text)
    if not typed:
        return  # injected context only (attached files, images)
    if ctx.state.get("subagent") is not None:
        ctx.event(PROMPT, key, ts=ts, data={"text": typed})  # the parent agent's brief
        return
    ctx.open_turn(key, ts=ts, cwd=ctx.cwd)
    ctx.event(PROMPT, key, ts=ts, data={"text": typed})
    if not ctx.state.get("titled"):
        ctx.state["titled"] = True
        title = title_from(typed, MAX_TITLE_CHARS)
        if title:
            ctx.emit(SessionFacts(ctx.session_id, NAME, ctx.native_id, title=title, weak=True))


def _call(
    ctx: LineContext, key: str, call_id: str, name: str, arguments: dict[str, Any],
    ts: str | None, no_result: bool,
) -> None:
    contents = [(label, arguments[field]) for field, label in WRITTEN
                if isinstance(arguments.get(field), str) and arguments[field]]
    data: dict[str, Any] = {"input": summarize_input(arguments)}
    if no_result:
        data["no_result"] = True  # the format records no result: derive times the command here
    ctx.event(TOOL_CALL, key, ts=ts, tool=name, call_id=call_id, data=data, input=arguments,
              contents=contents)


# --------------------------------------------------------------------------- JSONL


def _jsonl_line(ctx: LineContext, obj: dict[str, Any]) -> None:
    role = obj.get("role")
    if role not in ROLES:
        ctx.drift(f"role/{role if isinstance(role, str) else '<none>'}")
        return
    ts = _str(ctx.state.get(FILE_TIME))
    ctx.ts = ts
    content = _dict(obj.get("message")).get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        ctx.drift(f"{role}/<no content>")
        return
    texts: list[str] = []
    stem = os.path.splitext(os.path.basename(ctx.source_path))[0]
    for index, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text.strip():
                texts.append(text)
        elif kind == "tool_use" and role == "assistant":
            name = _str(block.get("name")) or "unknown"
            args = block.get("input")
            arguments = args if isinstance(args, dict) else ({} if args is None else {"raw": args})
            call_id = f"{stem}:{ctx.offset}.{index}"
            _call(ctx, ctx.position_key(index + 1), call_id, name, arguments, ts, no_result=True)
        else:
            ctx.drift(f"{role}/{kind if isinstance(kind, str) else '<no type>'}")
    text = "\n".join(texts)
    if role == "user":
        if text:
            _prompt(ctx, ctx.position_key(0), text, ts)
    elif text.strip():
        ctx.event(MESSAGE, ctx.position_key(0), data={"text": text})
    _facts(ctx, ts)


# --------------------------------------------------------------------------- text


def split_blocks(text: str) -> list[tuple[str, str]]:
    """(role, body) of each ``user:`` / ``assistant:`` block, in order; text before the
    first marker is returned with role "" (not a block of the format)."""
    out: list[tuple[str, str]] = []
    marks = list(_SEGMENT.finditer(text))
    head = text[: marks[0].start()] if marks else text
    if head.strip():
        out.append(("", head))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((mark.group(1), text[mark.end() : end].strip("\n")))
    return out


def parse_assistant(body: str) -> list[tuple[str, Any]]:
    """An assistant block as its parts in order: ("text", str), ("think", str),
    ("call", (name, arguments)), ("result", name). A call's arguments are the
    ``  key: value`` lines below it; a line that starts no new key continues the last
    value (a multi-line string), until a marker line (``[Tool ...]``, ``<think>``)."""
    parts: list[tuple[str, Any]] = []
    text: list[str] = []
    call: tuple[str, dict[str, Any]] | None = None
    last: str | None = None

    def flush_text() -> None:
        joined = "\n".join(text)
        text.clear()
        pos = 0
        for m in _THINK.finditer(joined):
            if joined[pos : m.start()].strip():
                parts.append(("text", joined[pos : m.start()].strip()))
            parts.append(("think", m.group(1)))
            pos = m.end()
        if joined[pos:].strip():
            parts.append(("text", joined[pos:].strip()))

    def flush_call() -> None:
        nonlocal call, last
        if call is not None:
            parts.append(("call", (call[0], {k: _value(v) for k, v in call[1].items()})))
        call, last = None, None

    for line in body.split("\n"):
        if line.startswith(_CALL) or line.startswith(_RESULT):
            flush_call()
            flush_text()
            if line.startswith(_CALL):
                call = (line[len(_CALL) :].strip() or "unknown", {})
            else:
                parts.append(("result", line[len(_RESULT) :].strip() or "unknown"))
            continue
        if call is not None:
            m = _ARG.match(line)
            if m and m.group(1) not in call[1]:
                last = m.group(1)
                call[1][last] = m.group(2) or ""
                continue
            if not line.startswith("<think>") and last is not None:
                call[1][last] += "\n" + line
                continue
            flush_call()
        text.append(line)
    flush_call()
    flush_text()
    return parts


def _value(raw: str) -> Any:
    """An argument's value: JSON when it is a JSON array, object, number or boolean (the
    format writes those as JSON: todos, limits, flags), else the string, trailing blank
    lines dropped."""
    value = raw.rstrip("\n")
    if value[:1] in ("[", "{") or value in ("true", "false") or value.lstrip("-").isdigit():
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        if not isinstance(parsed, int) or len(value) < 19:
            return parsed
    return value


def _text_document(ctx: LineContext, text: str) -> None:
    state = ctx.state
    ts = _str(state.get(FILE_TIME))
    ctx.ts = ts
    digests = _table(state, "blocks")
    pending: list[list[Any]] = []  # [call key, call id, name, arguments] not yet answered
    native = ctx.native_id
    for ordinal, (role, body) in enumerate(split_blocks(text)):
        if role == "":
            ctx.drift("text/<before the first block>")
            continue
        digest = stable_digest([role, body], 6)
        entry = digests.get(str(ordinal))
        seen = isinstance(entry, list) and len(entry) == 2 and entry[0] == digest
        if not seen:
            # A block written again (the last one while it streams): its events again,
            # under the same keys, with a higher revision.
            ctx.revision = as_count(entry[1]) + 1 if isinstance(entry, list) and len(entry) == 2 else 0
            digests.pop(str(ordinal), None)
            digests[str(ordinal)] = [digest, ctx.revision]
        base = f"{NAME}:{native}:b{ordinal}"
        if role == "user":
            if not seen:
                _prompt(ctx, f"{base}:prompt", body, ts)
        else:
            _assistant_block(ctx, base, parse_assistant(body), pending, emit=not seen)
        ctx.revision = 0
    while len(digests) > MAX_BLOCKS:
        del digests[next(iter(digests))]
    _facts(ctx, ts)


def _assistant_block(
    ctx: LineContext, base: str, parts: list[tuple[str, Any]], pending: list[list[Any]],
    emit: bool,
) -> None:
    """One assistant block's events (when ``emit``); its calls join ``pending`` and its
    results answer the oldest pending call of their tool either way, so a result in a
    later block finds its call."""
    texts: list[str] = []
    calls = thinks = 0
    for kind, value in parts:
        if kind == "text":
            texts.append(value)
        elif kind == "think":
            if emit:
                ctx.event(REASONING, f"{base}:think:{thinks}", data={"chars": len(value)})
            thinks += 1
        elif kind == "call":
            name, arguments = value
            key = f"{base}:call:{calls}"
            call_id = key.split(":", 1)[1]
            if emit:
                _call(ctx, key, call_id, name, arguments, ctx.ts, no_result=False)
            pending.append([key, call_id, name, arguments])
            del pending[:-MAX_PENDING]
            calls += 1
        else:  # a result marker: the output itself was left out
            match = next((p for p in pending if p[2] == value), None)
            if match is None:
                if emit:
                    ctx.drift("text/result without a call")
                continue
            pending.remove(match)
            if emit:
                ctx.event(TOOL_RESULT, f"{match[0]}:result", tool=value, call_id=match[1],
                          data={"is_error": None, "exit_code": None, "output_chars": None},
                          input=match[3])
    if emit and texts:
        ctx.event(MESSAGE, f"{base}:message", data={"text": "\n\n".join(texts)})


# --------------------------------------------------------------------------- store.db


def _meta(ctx: LineContext, rows: list[dict[str, Any]], source_path: str) -> None:
    """The chat's ``meta`` row: hex-encoded JSON naming it, its model and when it was
    made. The chat's id is its folder's name (``agentId`` says the same)."""
    for row in rows:
        value = row.get("value")
        try:
            meta = orjson.loads(bytes.fromhex(value)) if isinstance(value, str) else None
        except (ValueError, orjson.JSONDecodeError):
            meta = None
        if not isinstance(meta, dict):
            ctx.drift("meta/<not hex JSON>")
            continue
        native = _str(meta.get("agentId")) or os.path.basename(os.path.dirname(source_path))
        name = _str(meta.get("name"))
        ctx.emit(SessionFacts(
            session_key(NAME, native), NAME, native,
            title=name.strip()[:MAX_TITLE_CHARS] if name and name.strip() else None,
            model=_str(meta.get("lastUsedModel")),
            started_at=normalize_ts(meta.get("createdAt")),
        ))  # no source: the transcript's (its times mark, its folder) is the session's


# --------------------------------------------------------------------------- the adapter


class CursorAdapter:
    name = NAME
    times_from_file = True
    final_lines = True  # Cursor's JSONL files never end with a newline

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def project_folder(self, source_path: str) -> str | None:
        return project_folder_of(source_path)

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """One line of a ``.jsonl`` transcript."""
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        out: list[Record] = []
        _jsonl_line(LineContext(RULES, source_path, offset, state, None, out), obj)
        return out

    def parse_text(self, text: str, source_path: str, state: dict[str, Any]) -> list[Record]:
        """A whole ``.txt`` transcript: only blocks new or changed since the state's
        digests give events."""
        begin(RULES, {}, source_path, state)
        out: list[Record] = []
        _text_document(LineContext(RULES, source_path, 0, state, None, out), text)
        return out

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """For the fidelity tally: a JSONL line by its role (``role/user``,
        ``role/assistant``), a ``.txt`` transcript as one ``text`` record. Cursor writes
        no version."""
        if isinstance(obj, str):
            return "unknown", "text", False
        role = obj.get("role") if isinstance(obj, dict) else None
        return "unknown", f"role/{role}" if isinstance(role, str) else "<no role>", False

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        """Cursor writes no JSON documents: a source classified as one is drift."""
        return [LineContext(RULES, source_path, 0, state).drift("document/<unexpected>")]

    def parse_rows(
        self, table: str, rows: Any, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """A chat database's ``meta`` rows (ingest/cursor_db.py)."""
        out: list[Record] = []
        ctx = LineContext(RULES, source_path, 0, state, None, out)
        if table == "meta":
            _meta(ctx, list(rows), source_path)
        else:
            ctx.drift(f"table/{table}")
        return out


ADAPTER = CursorAdapter()
