"""Cline's sessions (the CLI, and the extension since Cline's SDK, 2026) -> normalized
records: ``~/.cline/data/sessions/<id>/`` (docs/formats.md, "Cline sessions"; the
source: cline/cline ``sdk/packages/core/docs/messages-contract-v1.md``,
``src/services/session-artifacts.ts``), each file a JSON document rewritten whole:

* ``<id>.json``: the session's manifest: ``cwd``, ``model``, ``provider``,
  ``started_at``, ``ended_at``, ``status``, ``source`` (cli, vscode...) and in
  ``metadata`` its ``title`` and the session it was forked from.
* ``<id>.messages.json``: ``{version: 1, agent, sessionId, messages: [...]}``, each
  message ``{id, role: user|assistant, content: [text | thinking | tool_use |
  tool_result | file ...], ts?, modelInfo?, metrics?}``: ``ts`` on assistant messages
  only; the last assistant message of a turn carries the turn's ``metrics`` (tokens,
  cost). A sub-agent's messages are ``<agent id>.messages.json`` beside its parent's:
  events of the parent's session, tagged with the sub-agent's id.

A user message without a ``ts`` takes the time of the first message after it that has
one (the reply it asked for began then). Messages keep a digest each in the state, so a
rewrite emits only what changed (a changed message re-emits with a higher revision);
keys are the message ids.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from ..events import (
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USAGE,
    Record,
    SessionFacts,
    TurnFacts,
    session_key,
)
from .common import (
    LineContext,
    LineRules,
    as_count,
    normalize_ts,
    stable_digest,
    summarize_input,
    text_of,
    upgrade_state,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text, title_from

STATE_SCHEMA = 1
MAX_MESSAGES = 8192
MAX_TITLE_CHARS = 120
SHELL_TOOL = "run_commands"
WRITTEN_FIELDS = ("new_text", "input")  # editor's new text; apply_patch's patch


def is_session_file(source_path: str) -> bool:
    return os.path.basename(os.path.dirname(os.path.dirname(source_path))) == "sessions"


def _ids(source_path: str) -> tuple[str, str | None, bool]:
    """(session id, sub-agent id or None, whether it is the manifest)."""
    session = os.path.basename(os.path.dirname(source_path))
    base = os.path.basename(source_path)
    if base.endswith(".messages.json"):
        stem = base[: -len(".messages.json")]
        return session, (None if stem == session else stem), False
    return session, None, True


def fresh_state(source_path: str) -> dict[str, Any]:
    session, subagent, manifest = _ids(source_path)
    return {"schema": STATE_SCHEMA, "session": session, "subagent": subagent, "msgs": {},
            "titled": False, "manifest": manifest}  # manifest: for the fidelity tally


def _rules(agent: str) -> LineRules:
    return LineRules(
        agent=agent,
        native_id=lambda state: _str(state.get("session")) or "unknown",
        subagent=lambda state: _str(state.get("subagent")),
        version=None,
        fresh_state=fresh_state,
        state_schema=STATE_SCHEMA,
        state_tables=("msgs",),
    )


RULES = {"cline": _rules("cline")}


def parse(agent: str, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
    rules = RULES.get(agent) or _rules(agent)
    upgrade_state(state, source_path, rules)
    out: list[Record] = []
    ctx = LineContext(rules, source_path, 0, state, None, out)
    _, _, manifest = _ids(source_path)
    if not isinstance(obj, dict):
        ctx.drift("document/<not an object>")
    elif manifest:
        _manifest(ctx, obj)
    elif isinstance(obj.get("messages"), list):
        _messages(ctx, obj["messages"])
    else:
        ctx.drift("messages/<no messages>")
    return out


def _manifest(ctx: LineContext, obj: dict[str, Any]) -> None:
    meta = _dict(obj.get("metadata"))
    title = _str(meta.get("title"))
    forked = _str(_dict(meta.get("fork")).get("forkedFromSessionId"))
    source = _str(obj.get("source")) or _str(meta.get("source"))
    ctx.facts(
        cwd=_str(obj.get("cwd")) or _str(obj.get("workspace_root")),
        model=_str(obj.get("model")) or _str(meta.get("model")),
        model_provider=_str(obj.get("provider")) or _str(meta.get("provider")),
        started_at=normalize_ts(obj.get("started_at")),
        last_event_at=normalize_ts(obj.get("ended_at")),
        title=title.strip()[:MAX_TITLE_CHARS] if title and title.strip() else None,
        source=source,
        parent_session_id=session_key(ctx.rules.agent, forked) if forked else None,
    )


def _times(messages: list[Any]) -> list[str | None]:
    """Each message's time: its own ``ts``, else the next message's that has one."""
    out: list[str | None] = [None] * len(messages)
    following: str | None = None
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        own = normalize_ts(msg.get("ts")) if isinstance(msg, dict) else None
        following = own or following
        out[i] = following
    return out


def _messages(ctx: LineContext, messages: list[Any]) -> None:
    state = ctx.state
    table = _table(state, "msgs")
    subagent = state.get("subagent") is not None
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    times = _times(messages)
    turn: str | None = None
    last_ts: str | None = None
    for index, msg in enumerate(messages):
        if not isinstance(msg, dict):
            ctx.drift("message/<not an object>")
            continue
        msg_id = _str(msg.get("id")) or f"#{index}"
        role = msg.get("role")
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = blocks if isinstance(blocks, list) else []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use" and _str(block.get("id")):
                calls[block["id"]] = (_str(block.get("name")) or "unknown", _dict(block.get("input")))
        typed = _typed(blocks) if role == "user" else ""
        digest = stable_digest(msg, 6)
        entry = table.get(msg_id)
        emit = not (isinstance(entry, list) and entry[0] == digest)
        ctx.ts = times[index]
        key = f"{ctx.rules.agent}:{ctx.native_id}:{msg_id}"
        if typed and not subagent:
            previous, turn = turn, key
            if emit:
                _turn(ctx, previous, key, last_ts)
        if emit:
            revision = as_count(entry[1]) + 1 if isinstance(entry, list) and len(entry) == 2 else 0
            table.pop(msg_id, None)
            table[msg_id] = [digest, revision]
            ctx.revision = revision
            if role == "user":
                _user(ctx, key, turn, blocks, typed, calls)
            elif role == "assistant":
                _assistant(ctx, key, turn, msg, blocks)
            else:
                ctx.drift(f"message/{role if isinstance(role, str) else '<no role>'}")
            ctx.revision = 0
        last_ts = ctx.ts or last_ts
    while len(table) > MAX_MESSAGES:
        del table[next(iter(table))]
    if last_ts is not None:
        ctx.facts(last_event_at=last_ts)


def _typed(blocks: list[Any]) -> str:
    texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
             and isinstance(b.get("text"), str)]
    return person_text("\n".join(texts)) if texts else ""


def _turn(ctx: LineContext, previous: str | None, key: str, last_ts: str | None) -> None:
    sid = ctx.session_id
    if previous is not None:
        ended = last_ts or ctx.ts
        ctx.event(TURN_END, f"{previous}:end", turn_id=previous, ts=ended,
                  data={"status": "complete", "reason": None})
        ctx.emit(TurnFacts(sid, previous, ended_at=ended, status="complete"))
    ctx.event(TURN_START, f"{key}:start", turn_id=key)
    ctx.emit(TurnFacts(sid, key, started_at=ctx.ts, status="open"))


def _user(ctx: LineContext, key: str, turn: str | None, blocks: list[Any], typed: str,
          calls: dict[str, tuple[str, dict[str, Any]]]) -> None:
    files = [(f"file:{_str(b.get('path')) or '?'}", b["content"]) for b in blocks
             if isinstance(b, dict) and b.get("type") == "file" and isinstance(b.get("content"), str)]
    if typed:
        ctx.event(PROMPT, f"{key}:prompt", turn_id=turn, data={"text": typed}, contents=files)
        if not ctx.state.get("titled") and ctx.state.get("subagent") is None:
            ctx.state["titled"] = True
            title = title_from(typed, MAX_TITLE_CHARS)
            if title:
                ctx.emit(SessionFacts(ctx.session_id, ctx.rules.agent, ctx.native_id,
                                      title=title, weak=True))
    for n, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            _result(ctx, key, n, turn, block, calls)
        elif kind not in ("text", "file", "image"):
            ctx.drift(f"user/{kind if isinstance(kind, str) else '<no type>'}")


def _result(ctx: LineContext, key: str, n: int, turn: str | None, block: dict[str, Any],
            calls: dict[str, tuple[str, dict[str, Any]]]) -> None:
    call_id = _str(block.get("tool_use_id"))
    tool, arguments = calls.get(call_id or "", (None, {}))
    raw = block.get("content")
    text = raw if isinstance(raw, str) else text_of(raw)
    is_error = block.get("is_error") if isinstance(block.get("is_error"), bool) else None
    if tool == SHELL_TOOL:
        # One result per command (ToolOperationResult[]: query, result, error, success).
        try:
            entries = orjson.loads(text)
        except orjson.JSONDecodeError:
            entries = None
        if isinstance(entries, list) and entries:
            for i, entry in enumerate(entries):
                entry = _dict(entry)
                output = "\n".join(t for t in (_str(entry.get("result")), _str(entry.get("error"))) if t)
                success = entry.get("success")
                ctx.event(TOOL_RESULT, f"{key}:result:{n}.{i}", turn_id=turn, tool=tool,
                          call_id=call_id,
                          data={"is_error": (not success) if isinstance(success, bool) else is_error,
                                "exit_code": None, "output_chars": len(output)},
                          input={"command": _str(entry.get("query")) or ""},
                          contents=[("output", output)] if output else [])
            return
    ctx.event(TOOL_RESULT, f"{key}:result:{n}", turn_id=turn, tool=tool, call_id=call_id,
              data={"is_error": is_error, "exit_code": None, "output_chars": len(text)},
              input=arguments or None, contents=[("output", text)] if text else [])


def _assistant(ctx: LineContext, key: str, turn: str | None, msg: dict[str, Any],
               blocks: list[Any]) -> None:
    texts: list[str] = []
    info = _dict(msg.get("modelInfo"))
    model = _str(info.get("id")) or _str(info.get("modelId"))
    for n, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            if block["text"].strip():
                texts.append(block["text"])
        elif kind in ("thinking", "redacted_thinking"):
            thinking = block.get("thinking")
            ctx.event(REASONING, f"{key}:thinking:{n}", turn_id=turn,
                      data={"chars": len(thinking)} if isinstance(thinking, str) else {})
        elif kind == "tool_use":
            name = _str(block.get("name")) or "unknown"
            arguments = _dict(block.get("input"))
            written = [(f, arguments[f]) for f in WRITTEN_FIELDS if isinstance(arguments.get(f), str)]
            ctx.event(TOOL_CALL, f"{key}:call:{n}", turn_id=turn, tool=name,
                      call_id=_str(block.get("id")), data={"input": summarize_input(arguments)},
                      input=arguments, contents=written)
        else:
            ctx.drift(f"assistant/{kind if isinstance(kind, str) else '<no type>'}")
    if texts:
        ctx.event(MESSAGE, f"{key}:message", turn_id=turn, data={"text": "\n".join(texts)})
    metrics = _dict(msg.get("metrics"))
    if metrics:
        counts = [as_count(metrics.get(name)) for name in
                  ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")]
        cost = metrics.get("cost")
        data: dict[str, Any] = {
            "input_tokens": counts[0], "output_tokens": counts[1],
            "cache_read_tokens": counts[2], "cache_creation_tokens": counts[3],
            "reasoning_tokens": 0, "total_tokens": sum(counts), "model": model,
        }
        provider = _str(info.get("provider")) or _str(info.get("providerId"))
        if provider:
            data["provider"] = provider
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            data["cost"] = cost
        ctx.event(USAGE, f"{key}:usage", turn_id=turn, data=data)
    if model and ctx.state.get("subagent") is None and model != ctx.state.get("model"):
        ctx.state["model"] = model
        ctx.facts(model=model)
