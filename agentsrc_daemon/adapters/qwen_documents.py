"""Qwen Code's first chat recordings, and what they share with its JSONL records.

Before its JSONL chats (adapters/qwen.py), Qwen Code wrote Gemini CLI's chat document:
``~/.qwen/tmp/<SHA-256 of the project root>/chats/session-<time>-<id8>.json``, one
``ConversationRecord`` ``{sessionId, projectHash, startTime, lastUpdated, messages}``
rewritten whole on every update. Its messages are Gemini CLI's with the assistant's
type renamed: ``user``, ``qwen`` (``content``, ``thoughts``, ``tokens {input, output,
cached, thoughts, tool, total}``, ``model``, ``toolCalls [{id, name, args, result,
status, timestamp}]``), ``info``, ``error``, ``warning`` (the shapes read by Qwen Code's
own ``QwenSessionReader``, packages/vscode-ide-companion).

Each message id keeps a small entry in the file's state: a digest of the version last
seen and which of its parts were emitted, so a rewrite costs a digest per unchanged
message and emits each part once. Keys are ``qwen:<session>:<message id>[:<part>]`` (a
tool call's by its id), so even a lost state cannot duplicate an event.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

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
    Record,
    TurnFacts,
)
from .common import (
    LineContext,
    LineRules,
    as_count,
    first_line,
    json_text,
    normalize_ts,
    remember_bounded,
    stable_digest,
    summarize_input,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text

NAME = "qwen"
SHELL_TOOL = "run_shell_command"
ANSWER_TYPES = frozenset({"qwen", "gemini"})  # the assistant, as the fork renamed it or not
TERMINAL_STATUSES = frozenset({"success", "error", "cancelled"})
COMPRESSION_PREFIXES = ("Context compressed from", "Chat history compressed from")
_COMPRESSED_TOKENS = re.compile(r"compressed from ([0-9][0-9,]*) to [0-9][0-9,]* tokens")
_EXIT_CODE = re.compile(r"^Exit Code: (-?[0-9]+)\s*$")
# The environment context names the project: "I'm currently working in the directory: X".
_WORKING_DIR = re.compile(r"working in the directory: ([^\n]+)")
MAX_MESSAGES = 4096
MAX_MARKS = 256
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500


def shell_exit_code(output: str) -> int | None:
    """The exit code in a ``run_shell_command`` result's trailer: ``Exit Code: N``, among
    ``Error:``, ``Signal:``, ``Background PIDs:`` lines (``(none)`` when the command was
    killed or never ran: None)."""
    for line in reversed(output.rstrip("\n").split("\n")[-12:]):
        match = _EXIT_CODE.match(line)
        if match:
            return int(match.group(1))
    return None


def usage_data(model: str | None, counts: list[int], thoughts_in_output: bool) -> dict[str, Any]:
    """One request's tokens as Qwen Code counts them, ``counts`` being [prompt, output,
    cached, thoughts, tool, total]: the prompt holds the cached tokens; the output holds
    the thoughts for OpenAI-compatible providers (Qwen OAuth included), not for Gemini's
    (then they are added, so ``output_tokens`` always holds them)."""
    prompt, output, cached, thoughts, tool, total = counts
    out = output if thoughts_in_output else output + thoughts
    return {
        "input_tokens": prompt + tool,
        "output_tokens": out,
        "cache_read_tokens": cached,
        "cache_creation_tokens": 0,
        "reasoning_tokens": thoughts,
        "total_tokens": total or prompt + tool + out,
        "model": model,
    }


def thoughts_counted_in_output(counts: list[int]) -> bool:
    """Where no auth type says it: the thoughts are inside the output when the total
    says so (prompt + tool + output = total), or when there are none."""
    prompt, output, _cached, thoughts, tool, total = counts
    return not thoughts or total == prompt + tool + output


# --------------------------------------------------------------------------- documents


def _key(line: LineContext, *parts: str) -> str:
    return ":".join((NAME, line.native_id, *parts))


RULES = LineRules(agent=NAME, key=_key, version=None)


def parse_conversation(obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
    """A whole ``session-*.json``: the records of the messages new or changed since the
    state's digests."""
    out: list[Record] = []
    if not isinstance(obj, dict):
        return out
    native = _str(obj.get("sessionId"))
    if native is None:
        return [Drift(NAME, "unknown", "document/<no sessionId>")]
    state["session"] = native
    messages = obj.get("messages")
    messages = messages if isinstance(messages, list) else []
    _seed_cwd(state, messages[:4], _str(obj.get("projectHash")))
    line = LineContext(RULES, source_path, 0, state, None, out, native, obj, None, None,
                       _str(state.get("cwd")))
    model = _walk(line, messages)
    started = normalize_ts(obj.get("startTime"))
    updated = normalize_ts(obj.get("lastUpdated"))
    reported = model if model and model != state.get("model") else None
    if reported:
        state["model"] = model
    line.facts(cwd=_str(state.get("cwd")), model=reported, started_at=started or line.earliest,
               last_event_at=updated or line.latest)
    return out


def _walk(line: LineContext, messages: list[Any]) -> str | None:
    table = _table(line.state, "msgs")
    running: str | None = None
    previous_ts: str | None = None
    model: str | None = None
    for msg in messages:
        message_id = _str(_dict(msg).get("id"))
        if message_id is None:
            continue
        ts = normalize_ts(msg.get("timestamp"))
        short = message_id if len(message_id) <= 16 else stable_digest(message_id, 6)
        digest = stable_digest(msg)
        entry = table.get(short)
        if isinstance(entry, dict) and entry.get("h") == digest:
            running = line.key(message_id) if entry.get("P") else running
            previous_ts = ts or previous_ts
            continue
        entry = entry if isinstance(entry, dict) else {}
        entry["h"] = digest
        remember_bounded(table, short, entry, MAX_MESSAGES)
        line.saw(ts)
        kind = _str(msg.get("type"))
        if kind == "user":
            running = _user(line, msg, message_id, entry, ts, running, previous_ts)
        elif kind in ANSWER_TYPES:
            model = _answer(line, msg, message_id, entry, ts, running) or model
        elif kind == "error" and not entry.get("d"):
            entry["d"] = 1
            text = _content_text(msg.get("content")).strip() or "error"
            line.event(ERROR, line.key(message_id, "error"), ts=ts, turn_id=running,
                       data={"message": text[:MAX_ERROR_CHARS], "error_type": "error"})
        elif kind == "info":
            _info(line, msg, message_id, entry, ts, running)
        elif kind != "warning":
            line.emit(Drift(NAME, "unknown", f"message/{kind or '<no type>'}"))
        previous_ts = ts or previous_ts
    return model


def _content_text(content: Any) -> str:
    items = content if isinstance(content, list) else [content]
    return "".join(
        part if isinstance(part, str) else part.get("text", "")
        for part in items
        if isinstance(part, str)
        or (isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("thought") is not True)
    )


def _user(line: LineContext, msg: dict[str, Any], message_id: str, entry: dict[str, Any],
          ts: str | None, running: str | None, previous_ts: str | None) -> str | None:
    text = person_text(_content_text(msg.get("content")))
    if not text:
        return running
    key = line.key(message_id)
    entry["P"] = 1
    if entry.get("d"):
        return key
    entry["d"] = 1
    if running is not None and running != key:
        ended = previous_ts or ts
        line.event(TURN_END, f"{running}:end", ts=ended, turn_id=running,
                   data={"status": "complete", "reason": None})
        line.emit(TurnFacts(line.session_id, running, ended_at=ended, status="complete"))
    line.event(TURN_START, f"{key}:start", ts=ts, turn_id=key)
    line.emit(TurnFacts(line.session_id, key, started_at=ts, status="open", cwd=line.cwd))
    line.event(PROMPT, key, ts=ts, turn_id=key, data={"text": text})
    if not line.state.get("title"):
        title = first_line(text, MAX_TITLE_CHARS)
        if title:
            line.state["title"] = title
            line.facts(title=title)
    return key


def _seed_cwd(state: dict[str, Any], first: list[Any], project_hash: str | None) -> None:
    """The project root, from the environment context a first user message carries (its
    directory, when its SHA-256 is the document's ``projectHash``)."""
    if _str(state.get("cwd")) or not project_hash:
        return
    for msg in first:
        if _dict(msg).get("type") != "user":
            continue
        for match in _WORKING_DIR.finditer(_content_text(msg.get("content"))[:65536]):
            candidate = match.group(1).strip().rstrip(".")
            if hashlib.sha256(candidate.encode("utf-8", "surrogatepass")).hexdigest() == project_hash:
                state["cwd"] = candidate
                return


def _answer(line: LineContext, msg: dict[str, Any], message_id: str, entry: dict[str, Any],
            ts: str | None, turn: str | None) -> str | None:
    model = _str(msg.get("model"))
    text = _content_text(msg.get("content")).strip()
    if text and not entry.get("d"):
        entry["d"] = 1
        line.event(MESSAGE, line.key(message_id, "message"), ts=ts, turn_id=turn,
                   data={"text": text, "model": model})
    thoughts = msg.get("thoughts")
    if isinstance(thoughts, list):
        done = as_count(entry.get("n"))
        for index in range(done, len(thoughts)):
            thought = _dict(thoughts[index])
            chars = sum(len(v) for v in (thought.get("subject"), thought.get("description"))
                        if isinstance(v, str))
            line.event(REASONING, line.key(message_id, "thought", str(index)),
                       ts=normalize_ts(thought.get("timestamp")) or ts, turn_id=turn,
                       data={"chars": chars})
        entry["n"] = max(done, len(thoughts))
    calls = msg.get("toolCalls")
    for index, call in enumerate(calls if isinstance(calls, list) else []):
        if isinstance(call, dict):
            _tool_call(line, call, message_id, index, entry, ts, turn)
    tokens = msg.get("tokens")
    if isinstance(tokens, dict) and not entry.get("u"):
        counts = [as_count(tokens.get(k)) for k in ("input", "output", "cached", "thoughts", "tool", "total")]
        if any(counts):
            entry["u"] = 1
            line.event(USAGE, line.key(message_id, "usage"), ts=ts, turn_id=turn,
                       data=usage_data(model, counts, thoughts_counted_in_output(counts)))
    return model


def _marks(entry: dict[str, Any], name: str) -> list[str]:
    marks = entry.get(name)
    if not isinstance(marks, list):
        marks = entry[name] = []
    return marks


def _tool_call(line: LineContext, call: dict[str, Any], message_id: str, index: int,
               entry: dict[str, Any], message_ts: str | None, turn: str | None) -> None:
    call_id = _str(call.get("id")) or f"{message_id}.{index}"
    mark = call_id if len(call_id) <= 16 else stable_digest(call_id, 6)
    name = _str(call.get("name"))
    raw = call.get("args")
    args: dict[str, Any] = raw if isinstance(raw, dict) else ({} if raw is None else {"raw": raw})
    ts = normalize_ts(call.get("timestamp")) or message_ts
    called = _marks(entry, "c")
    if mark not in called:
        called.append(mark)
        del called[:-MAX_MARKS]
        line.event(TOOL_CALL, line.key("call", call_id), ts=ts, turn_id=turn, tool=name,
                   call_id=call_id, data={"input": summarize_input(args)}, input=args)
    status = _str(call.get("status"))
    result = call.get("result")
    done = _marks(entry, "r")
    if mark in done or not (status in TERMINAL_STATUSES or result):
        return
    done.append(mark)
    del done[:-MAX_MARKS]
    texts = _result_texts(result)
    line.event(
        TOOL_RESULT,
        line.key("result", call_id),
        ts=ts,
        turn_id=turn,
        tool=name,
        call_id=call_id,
        data={
            "is_error": status in ("error", "cancelled") if status else None,
            "exit_code": shell_exit_code("\n".join(texts)) if name == SHELL_TOOL else None,
            "duration_ms": None,
            "output_chars": sum(len(t) for t in texts),
            "interrupted": status == "cancelled",
        },
        input=args,
        contents=[("output", t) for t in texts if t],
    )


def _result_texts(result: Any) -> list[str]:
    """What the model was given back: each function response's ``output`` or ``error``."""
    texts: list[str] = []
    for part in result if isinstance(result, list) else [result]:
        if isinstance(part, str):
            texts.append(part)
            continue
        response = _dict(_dict(part).get("functionResponse")).get("response")
        if isinstance(response, dict):
            found = [v for v in (response.get("output"), response.get("error")) if isinstance(v, str)]
            texts += found or ([json_text(response)] if response else [])
        elif isinstance(response, str):
            texts.append(response)
    return texts


def _info(line: LineContext, msg: dict[str, Any], message_id: str, entry: dict[str, Any],
          ts: str | None, turn: str | None) -> None:
    text = _content_text(msg.get("content")).strip()
    if not text.startswith(COMPRESSION_PREFIXES) or entry.get("d"):
        return
    entry["d"] = 1
    match = _COMPRESSED_TOKENS.search(text)
    pre_tokens = int(match.group(1).replace(",", "")) if match else None
    line.event(COMPACTION, line.key(message_id, "compaction"), ts=ts, turn_id=turn,
               data={"trigger": None, "pre_tokens": pre_tokens})
