"""Continue sessions -> normalized records.

Continue (the IDE extensions and the ``cn`` CLI) keeps ``~/.continue/sessions/``
(``$CONTINUE_GLOBAL_DIR/sessions``; docs/formats.md, "Continue"; the source:
continuedev/continue ``core/index.d.ts``, ``core/util/paths.ts``,
``extensions/cli/src/session.ts``):

* ``<id>.json``: one ``Session`` document, rewritten whole: ``{sessionId, title,
  workspaceDirectory (a file:// URI), history: [ChatHistoryItem], mode,
  chatModelTitle, usage?}``; a history item holds a ``message`` (role user, assistant,
  thinking, tool, system) and, on an assistant message that called tools, its
  ``toolCallStates`` (``status``, ``parsedArgs``, ``output`` context items).
* ``sessions.json``: the index, ``[{sessionId, title, dateCreated,
  workspaceDirectory}]``: the titles and start dates.

No message has a time. Events take the file's modification time when a round first
read them (handed over by ingest as ``common.FILE_TIME``), the session's start is the
index's ``dateCreated``, and the session says so (``source: {"times": "file"}``).
Usage: an assistant message's ``usage`` (OpenAI-style: ``promptTokens`` holds the cache
except from Anthropic's API) when there is one; the CLI's session-wide ``usage`` (tokens
and ``totalCost``, a running sum) when no message has its own, as one request-less total
that grows (re-emitted with a higher revision).

Each history item keeps a digest in the state: a rewrite emits only what changed, and
an item that changed re-emits its events under the same keys (the message ``id``, else
its place) with a higher revision.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import unquote, urlparse

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
    FILE_TIME,
    LineContext,
    LineRules,
    as_count,
    normalize_ts,
    parse_arguments,
    stable_digest,
    summarize_input,
    text_of,
    upgrade_state,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text, title_from

NAME = "continue"
STATE_SCHEMA = 1
INDEX = "sessions.json"
MAX_ITEMS = 8192
MAX_TITLE_CHARS = 120
DEFAULT_TITLES = frozenset({"New Session", ""})  # Continue's placeholder until titled
TIMES = {"times": "file"}
ROLES = frozenset({"user", "assistant", "thinking", "tool", "system"})
WRITTEN_FIELDS = ("contents", "new_string", "changes")
# A terminal command's output item: "Command completed", "Command failed with exit code N".
_FAILED = re.compile(r"failed with exit code (-?\d+)")


def _fresh_state(source_path: str) -> dict[str, Any]:
    return {"schema": STATE_SCHEMA, "session": os.path.splitext(os.path.basename(source_path))[0],
            "items": {}, "titled": False, "facts": False}


RULES = LineRules(
    agent=NAME,
    native_id=lambda state: _str(state.get("session")) or "unknown",
    version=None,  # Continue writes no version into its sessions
    fresh_state=_fresh_state,
    state_schema=STATE_SCHEMA,
    state_tables=("items",),
)


def cwd_of(uri: Any) -> str | None:
    """``workspaceDirectory`` (a file:// URI, or a path) as a path; a Windows drive
    URI (``file:///c%3A/x``) as ``c:/x``."""
    if not isinstance(uri, str) or not uri:
        return None
    if not uri.startswith("file:"):
        return uri
    path = unquote(urlparse(uri).path)
    if re.match(r"^/[A-Za-z]:/", path):
        path = path[1:]
    return path or None


def _index(ctx: LineContext, entries: list[Any]) -> None:
    """``sessions.json``: each session's title and start."""
    digests = _table(ctx.state, "items")
    for entry in entries:
        if not isinstance(entry, dict) or not _str(entry.get("sessionId")):
            ctx.drift("index/<no sessionId>")
            continue
        native = entry["sessionId"]
        digest = stable_digest(entry, 6)
        if digests.get(native) == digest:
            continue
        digests.pop(native, None)
        digests[native] = digest
        title = _str(entry.get("title"))
        ctx.emit(SessionFacts(
            session_key(NAME, native), NAME, native,
            title=title.strip()[:MAX_TITLE_CHARS] if title and title.strip() not in DEFAULT_TITLES else None,
            started_at=normalize_ts(entry.get("dateCreated")),
            cwd=cwd_of(entry.get("workspaceDirectory")),
        ))
    while len(digests) > MAX_ITEMS:
        del digests[next(iter(digests))]


def _session(ctx: LineContext, doc: dict[str, Any]) -> None:
    state = ctx.state
    if _str(doc.get("sessionId")):
        state["session"] = doc["sessionId"]
    ts = _str(state.get(FILE_TIME))
    ctx.ts = ts
    title = _str(doc.get("title"))
    if not state.get("facts"):
        state["facts"] = True
        ctx.facts(cwd=cwd_of(doc.get("workspaceDirectory")), source=dict(TIMES),
                  started_at=ts, model=_str(doc.get("chatModelTitle")))
    if title and title.strip() not in DEFAULT_TITLES and title != state.get("title"):
        state["title"] = title
        ctx.facts(title=title.strip()[:MAX_TITLE_CHARS])
    history = doc.get("history")
    items = history if isinstance(history, list) else []
    per_message_usage = any(isinstance(_dict(_dict(i).get("message")).get("usage"), dict) for i in items)
    _history(ctx, items, _str(doc.get("chatModelTitle")), per_message_usage)
    usage = doc.get("usage")
    if isinstance(usage, dict) and not per_message_usage:
        _session_usage(ctx, usage, _str(doc.get("chatModelTitle")))
    ctx.facts(last_event_at=ts)


def _history(ctx: LineContext, items: list[Any], model: str | None, message_usage: bool) -> None:
    table = _table(ctx.state, "items")
    turn: str | None = None
    for index, item in enumerate(items):
        item = item if isinstance(item, dict) else {}
        msg = _dict(item.get("message"))
        role = msg.get("role")
        key = f"{NAME}:{ctx.native_id}:{_str(msg.get('id')) or f'#{index}'}"
        typed = person_text(text_of(msg.get("content"))) if role == "user" else ""
        digest = stable_digest(item, 6)
        entry = table.get(key)
        emit = not (isinstance(entry, list) and entry[0] == digest)
        previous = turn
        if typed:
            turn = key
        if not emit:
            continue
        revision = as_count(entry[1]) + 1 if isinstance(entry, list) and len(entry) == 2 else 0
        table.pop(key, None)
        table[key] = [digest, revision]
        ctx.revision = revision
        if role not in ROLES:
            ctx.drift(f"message/{role if isinstance(role, str) else '<no role>'}")
        elif role == "user":
            if typed:
                _prompt(ctx, key, previous, typed, item)
        elif role == "assistant":
            _assistant(ctx, key, turn, msg, item, model, message_usage)
        elif role == "thinking":
            text = text_of(msg.get("content"))
            ctx.event(REASONING, f"{key}:thinking", turn_id=turn, data={"chars": len(text)})
        ctx.revision = 0  # tool messages repeat the states' output; system text is Continue's
    while len(table) > MAX_ITEMS:
        del table[next(iter(table))]


def _prompt(ctx: LineContext, key: str, previous: str | None, typed: str, item: dict[str, Any]) -> None:
    sid = ctx.session_id
    if previous is not None:
        ctx.event(TURN_END, f"{previous}:end", turn_id=previous,
                  data={"status": "complete", "reason": None})
        ctx.emit(TurnFacts(sid, previous, ended_at=ctx.ts, status="complete"))
    ctx.event(TURN_START, f"{key}:start", turn_id=key)
    ctx.emit(TurnFacts(sid, key, started_at=ctx.ts, status="open"))
    context = [(f"context:{_str(c.get('name')) or '?'}", c["content"])
               for c in item.get("contextItems") or [] if isinstance(c, dict)
               and isinstance(c.get("content"), str)]
    ctx.event(PROMPT, f"{key}:prompt", turn_id=key, data={"text": typed}, contents=context)
    if not ctx.state.get("titled"):
        ctx.state["titled"] = True
        title = title_from(typed, MAX_TITLE_CHARS)
        if title:
            ctx.emit(SessionFacts(sid, NAME, ctx.native_id, title=title, weak=True))


def _assistant(ctx: LineContext, key: str, turn: str | None, msg: dict[str, Any],
               item: dict[str, Any], model: str | None, message_usage: bool) -> None:
    text = text_of(msg.get("content"))
    if text.strip():
        ctx.event(MESSAGE, f"{key}:message", turn_id=turn, data={"text": text})
    states = {(_str(s.get("toolCallId")) or ""): s for s in item.get("toolCallStates") or []
              if isinstance(s, dict)}
    for n, call in enumerate(msg.get("toolCalls") or []):
        call = _dict(call)
        call_id = _str(call.get("id")) or f"{key}:{n}"
        function = _dict(call.get("function"))
        tool = _str(function.get("name")) or "unknown"
        call_state = _dict(states.get(call_id))
        arguments = call_state.get("parsedArgs")
        if not isinstance(arguments, dict):
            arguments = parse_arguments(function.get("arguments"))
        written = [(f, arguments[f]) for f in WRITTEN_FIELDS if isinstance(arguments.get(f), str)]
        ctx.event(TOOL_CALL, f"{key}:call:{call_id}", turn_id=turn, tool=tool, call_id=call_id,
                  data={"input": summarize_input(arguments), "status": _str(call_state.get("status"))},
                  input=arguments, contents=written)
        if call_state.get("status") in ("done", "errored"):
            _result(ctx, f"{key}:call:{call_id}", turn, tool, call_id, arguments, call_state)
    usage = msg.get("usage")
    if message_usage and isinstance(usage, dict):
        provider = next((_str(p.get("modelProvider")) for p in item.get("promptLogs") or []
                         if isinstance(p, dict)), None)
        _usage_event(ctx, f"{key}:usage", turn, usage, model, provider, None, False)


def _result(ctx: LineContext, key: str, turn: str | None, tool: str, call_id: str,
            arguments: dict[str, Any], call_state: dict[str, Any]) -> None:
    outputs = [o for o in call_state.get("output") or [] if isinstance(o, dict)]
    texts = [o["content"] for o in outputs if isinstance(o.get("content"), str)]
    exit_code = None
    if tool == "run_terminal_command":
        for o in outputs:
            status = _str(o.get("status")) or ""
            failed = _FAILED.search(status)
            if failed:
                exit_code = int(failed.group(1))
            elif status.strip().startswith("Command completed"):
                exit_code = 0
    ctx.event(TOOL_RESULT, f"{key}:result", turn_id=turn, tool=tool, call_id=call_id,
              data={"is_error": call_state.get("status") == "errored", "exit_code": exit_code,
                    "output_chars": sum(len(t) for t in texts)},
              input=arguments, contents=[("output", t) for t in texts if t])


def _usage_event(ctx: LineContext, key: str, turn: str | None, usage: dict[str, Any],
                 model: str | None, provider: str | None, cost: Any, aggregate: bool) -> None:
    """OpenAI-style counts: ``promptTokens`` holds the cache, except from Anthropic's
    API, whose cache is added to it here so every event counts it one way."""
    details = _dict(usage.get("promptTokensDetails"))
    out_details = _dict(usage.get("completionTokensDetails"))
    prompt = as_count(usage.get("promptTokens"))
    cached, written = as_count(details.get("cachedTokens")), as_count(details.get("cacheWriteTokens"))
    if provider == "anthropic":
        prompt += cached + written
    output = as_count(usage.get("completionTokens"))
    data: dict[str, Any] = {
        "input_tokens": prompt, "output_tokens": output, "cache_read_tokens": cached,
        "cache_creation_tokens": written,
        "reasoning_tokens": as_count(out_details.get("reasoningTokens")),
        "total_tokens": prompt + output, "model": model,
    }
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        data["cost"] = cost
    if aggregate:
        data["aggregate"] = True  # a session's running sum: no price tier can be told
    ctx.event(USAGE, key, turn_id=turn, data=data)


def _session_usage(ctx: LineContext, usage: dict[str, Any], model: str | None) -> None:
    """The CLI's running totals for the whole session: one event, re-emitted with a
    higher revision whenever they grow."""
    digest = stable_digest(usage, 6)
    held = _dict(ctx.state.get("usage"))
    if held.get("h") == digest:
        return
    revision = as_count(held.get("r")) + 1 if held else 0
    ctx.state["usage"] = {"h": digest, "r": revision}
    ctx.revision = revision
    _usage_event(ctx, f"{NAME}:{ctx.native_id}:usage", None, usage, model, None,
                 usage.get("totalCost"), True)
    ctx.revision = 0


class ContinueAdapter:
    name = NAME
    times_from_file = True

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def parse(self, obj: dict[str, Any], offset: int, source_path: str,
              state: dict[str, Any]) -> list[Record]:
        """No JSONL: a line is drift."""
        return [LineContext(RULES, source_path, offset, state).drift("line/<unexpected>")]

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """For the fidelity tally: a session document, or the ``sessions.json`` index.
        Continue writes no version."""
        if isinstance(obj, list):
            return "unknown", "index", False
        return "unknown", "session" if isinstance(obj, dict) else "<not a document>", False

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        upgrade_state(state, source_path, RULES)
        out: list[Record] = []
        ctx = LineContext(RULES, source_path, 0, state, None, out)
        if os.path.basename(source_path) == INDEX:
            if isinstance(obj, list):
                _index(ctx, obj)
            else:
                ctx.drift("index/<not a list>")
        elif isinstance(obj, dict) and isinstance(obj.get("history"), list):
            _session(ctx, obj)
        else:
            ctx.drift("session/<no history>")
        return out


ADAPTER = ContinueAdapter()
