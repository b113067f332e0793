"""Amp threads -> normalized records.

Amp (Sourcegraph; closed source: its thread files are the spec) keeps one JSON document
per thread, ``$XDG_DATA_HOME/amp/threads/T-<uuid>.json`` (``~/.local/share/amp``),
rewritten whole as the thread runs (its ``v`` counts the rewrites):

* ``{v, id, created (ms), title, agentMode, env: {initial: {trees: [{uri: file://...}],
  platform: {client, clientVersion}}}, messages: [...], usageLedger: {events: [...]}}``;
* a message is ``{role, messageId, content: [...], state?, usage?, meta?: {sentAt}}``:
  ``user`` (``text`` blocks a person typed, ``tool_result`` blocks ``{toolUseID, run:
  {status, result?, error?}}``), ``assistant`` (``text``, ``thinking``, ``tool_use``;
  ``state: {type: complete | cancelled | error | streaming, stopReason}``; ``usage:
  {model, inputTokens, outputTokens, cacheCreationInputTokens, cacheReadInputTokens,
  credits}``), ``info`` (``summary`` blocks a compaction leaves);
* the ledger's events ``{id, timestamp, model, credits, tokens: {input, output},
  operationType, fromMessageId, toMessageId}`` bill every request, an assistant answer's
  (``inference``) and the side requests no message shows (``title-generation``...).

Each message keeps a small entry in the file's state (a digest of its last version, the
parts already emitted), and each ledger event a mark, so a rewrite costs a digest per
unchanged message and emits only what is new. An answer still ``streaming`` is read
when it is done. Keys are ``amp:<thread>:<messageId>[:<part>]``, a tool call's and its
result's by the tool call's id, a side request's by its ledger id: a lost state cannot
duplicate an event.

Usage: one event per request. An answer's is keyed by its message: from the message's
``usage`` (with the cache tokens; revision 2) or, while it has none yet, from its ledger
event (revision 1, replaced when the message's arrives). Its ``credits`` are kept, and
``cost`` is ``credits / 100`` dollars (docs/formats.md, Amp: a credit in a thread file is
a cent; Amp passes model costs through without markup for individuals).

Times: Amp writes none on assistant messages and tool results. An answer takes the time
of the ledger event that billed it (else its message's ``usage.timestamp``, else the
time before it); a tool result its call's.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote, urlparse

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
    as_int,
    first_line,
    json_text,
    normalize_ts,
    remember_bounded,
    stable_digest,
    storable_input,
    summarize_input,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import state_table as _table
from .injected import person_text

NAME = "amp"
STATE_SCHEMA = 1

ROLES = frozenset({"user", "assistant", "info"})
USER_BLOCKS = frozenset({"text", "tool_result", "image"})
ASSISTANT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
DONE_STATUSES = frozenset({"done", "error", "cancelled", "rejected-by-user"})
ERROR_STATUSES = frozenset({"error", "cancelled", "rejected-by-user"})
SHELL_TOOL = "Bash"
INFERENCE = "inference"

TITLE_PROMPT, TITLE_THREAD = 1, 2
MAX_MESSAGES = 4096
MAX_PENDING_CALLS = 2000
MAX_PENDING_INPUT_BYTES = 64 * 1024
MAX_LEDGER_MARKS = 8192
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500
CENTS = Decimal(100)


def _key(line: LineContext, *parts: str) -> str:
    return ":".join((NAME, line.native_id, *parts))


def _version_rule(state: dict[str, Any], obj: Any) -> str:
    return _str(state.get("version")) or "unknown"


def _fresh_state(source_path: str) -> dict[str, Any]:
    return {
        "schema": STATE_SCHEMA,
        "version": None,
        "cwd": None,
        "model": None,  # last model reported in SessionFacts
        "title_rank": 0,
        "title": None,
        "msgs": {},  # messageId -> {"h": digest, marks of what was emitted}
        "ledger": {},  # ledger event id -> 1 once its usage was emitted
        "pending": {},  # tool call id -> {"tool", "input", "ts"}
    }


# One context per document version: every event names its own time and turn.
RULES = LineRules(agent=NAME, key=_key, version=_version_rule)


def credits_cost(credits: Any) -> float | None:
    """The dollars ``credits`` stand for: a credit in a thread file is a cent."""
    if isinstance(credits, bool) or not isinstance(credits, int | float):
        return None
    try:
        usd = Decimal(str(credits)) / CENTS
    except InvalidOperation:
        return None
    return float(usd) if usd.is_finite() and usd >= 0 else None


def _file_path(uri: Any) -> str | None:
    """The path of a ``file://`` workspace tree (a plain path is taken as it is)."""
    if not isinstance(uri, str) or not uri:
        return None
    if not uri.startswith("file:"):
        return uri if uri.startswith("/") else None
    path = unquote(urlparse(uri).path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # file:///C:/work
        path = path[1:]
    return path or None


# --------------------------------------------------------------------------- the document


class _Walk:
    """One version of one thread, read message by message."""

    def __init__(self, line: LineContext, ledger: dict[int, dict[str, Any]]) -> None:
        self.line = line
        self.state = line.state
        self.ledger = ledger  # toMessageId -> its inference ledger event
        self.running: str | None = None  # the open turn (its prompt's key)
        self.ts: str | None = None  # the latest time seen
        self.model: str | None = None

    def message(self, msg: dict[str, Any]) -> None:
        message_id = as_int(msg.get("messageId"))
        role = msg.get("role")
        if message_id is None:
            return
        table = _table(self.state, "msgs")
        mid = str(message_id)
        own_ts = self._time(msg, message_id)
        digest = stable_digest(msg)
        entry = table.get(mid)
        if isinstance(entry, dict) and entry.get("h") == digest:
            if entry.get("P"):
                self.running = self.line.key(mid)
            self.ts = own_ts or self.ts
            return
        entry = entry if isinstance(entry, dict) else {}
        entry["h"] = digest
        remember_bounded(table, mid, entry, MAX_MESSAGES)
        ts = own_ts or self.ts
        self.line.saw(own_ts)
        if role == "user":
            self._user(msg, mid, entry, ts)
        elif role == "assistant":
            self._assistant(msg, mid, entry, ts)
        elif role == "info":
            self._info(msg, mid, entry, ts)
        else:
            self.line.drift(f"message/{role if isinstance(role, str) else '<no role>'}")
        self.ts = ts

    def _time(self, msg: dict[str, Any], message_id: int) -> str | None:
        sent = normalize_ts(_dict(msg.get("meta")).get("sentAt"))
        if sent:
            return sent
        billed = self.ledger.get(message_id)
        if billed is not None:
            return normalize_ts(billed.get("timestamp"))
        return normalize_ts(_dict(msg.get("usage")).get("timestamp"))

    def _blocks(self, msg: dict[str, Any], known: frozenset[str], role: str) -> list[dict[str, Any]]:
        content = msg.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        for block in blocks:
            kind = _str(block.get("type"))
            if kind not in known:
                self.line.drift(f"{role}/{kind or '<no type>'}")
        return blocks

    # -- user ------------------------------------------------------------------------

    def _user(self, msg: dict[str, Any], mid: str, entry: dict[str, Any], ts: str | None) -> None:
        blocks = self._blocks(msg, USER_BLOCKS, "user")
        for block in blocks:
            if block.get("type") == "tool_result":
                self._result(block, entry)
        typed = person_text("\n".join(
            b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
        ))
        if not typed:
            return
        line = self.line
        key = line.key(mid)
        entry["P"] = 1
        if not entry.get("d"):
            entry["d"] = 1
            if self.running is not None and self.running != key:
                ended = self.ts or ts
                line.event(TURN_END, f"{self.running}:end", ts=ended, turn_id=self.running,
                           data={"status": "complete", "reason": None})
                line.emit(TurnFacts(line.session_id, self.running, ended_at=ended, status="complete"))
            line.event(TURN_START, f"{key}:start", ts=ts, turn_id=key)
            line.emit(TurnFacts(line.session_id, key, started_at=ts, status="open", cwd=line.cwd))
            line.event(PROMPT, key, ts=ts, turn_id=key, data={"text": typed})
            _title(line, typed, TITLE_PROMPT)
        self.running = key

    def _result(self, block: dict[str, Any], entry: dict[str, Any]) -> None:
        call_id = _str(block.get("toolUseID")) or _str(block.get("tool_use_id"))
        run = _dict(block.get("run"))
        status = _str(run.get("status"))
        done = entry.setdefault("r", [])
        if not call_id or status not in DONE_STATUSES or not isinstance(done, list) or call_id in done:
            return
        done.append(call_id)
        pending = _dict(_table(self.state, "pending").pop(call_id, None))
        tool = _str(pending.get("tool"))
        texts = _result_texts(run)
        result = run.get("result")
        code = as_int(_dict(result).get("exitCode")) if tool == SHELL_TOOL else None
        self.line.event(
            TOOL_RESULT,
            self.line.key("result", call_id),
            ts=_str(pending.get("ts")) or self.ts,
            turn_id=self.running,
            tool=tool,
            call_id=call_id,
            data={
                "is_error": status in ERROR_STATUSES,
                "exit_code": code,
                "duration_ms": None,
                "output_chars": sum(len(t) for t in texts),
                "interrupted": status == "cancelled",
            },
            input=_dict(pending.get("input")) if "input" in pending else None,
            contents=[("output", t) for t in texts if t],
        )

    # -- assistant -------------------------------------------------------------------

    def _assistant(self, msg: dict[str, Any], mid: str, entry: dict[str, Any], ts: str | None) -> None:
        state = _dict(msg.get("state"))
        if state.get("type") == "streaming":
            entry["h"] = None  # read again when it is done
            return
        line, turn = self.line, self.running
        blocks = self._blocks(msg, ASSISTANT_BLOCKS, "assistant")
        usage = _dict(msg.get("usage"))
        model = _str(usage.get("model"))
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text"
                         and isinstance(b.get("text"), str)).strip()
        if text and not entry.get("d"):
            entry["d"] = 1
            line.event(MESSAGE, line.key(mid), ts=ts, turn_id=turn, data={"text": text, "model": model})
        thoughts = [b for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
        done = as_count(entry.get("n"))
        for index in range(done, len(thoughts)):
            thinking = thoughts[index].get("thinking")
            line.event(REASONING, line.key(mid, "thought", str(index)), ts=ts, turn_id=turn,
                       data={"chars": len(thinking) if isinstance(thinking, str) else 0})
        entry["n"] = max(done, len(thoughts))
        for block in blocks:
            if block.get("type") == "tool_use":
                self._call(block, entry, ts)
        if state.get("type") == "error" and not entry.get("e"):
            entry["e"] = 1
            message = _str(_dict(state.get("error")).get("message")) or _str(state.get("error")) or "error"
            line.event(ERROR, line.key(mid, "error"), ts=ts, turn_id=turn,
                       data={"message": message[:MAX_ERROR_CHARS], "error_type": "error"})
        if usage and (entry.get("u") or 0) < 2:
            entry["u"] = 2
            self._usage(mid, usage, ts, 2)
        elif not usage and not entry.get("u") and int(mid) in self.ledger:
            entry["u"] = 1
            self._usage(mid, self.ledger[int(mid)], ts, 1)
        if model:
            self.model = model
            if turn is not None and entry.get("m") != turn:
                entry["m"] = turn
                line.emit(TurnFacts(line.session_id, turn, model=model))

    def _call(self, block: dict[str, Any], entry: dict[str, Any], ts: str | None) -> None:
        call_id = _str(block.get("id"))
        called = entry.setdefault("c", [])
        if not call_id or not isinstance(called, list) or call_id in called:
            return
        called.append(call_id)
        name = _str(block.get("name"))
        raw = block.get("input")
        args: dict[str, Any] = raw if isinstance(raw, dict) else ({} if raw is None else {"raw": raw})
        kept = storable_input(args, MAX_PENDING_INPUT_BYTES)
        remember_bounded(_table(self.state, "pending"), call_id,
                         {"tool": name, "input": kept, "ts": ts}, MAX_PENDING_CALLS)
        self.line.event(TOOL_CALL, self.line.key("call", call_id), ts=ts, turn_id=self.running,
                        tool=name, call_id=call_id, data={"input": summarize_input(args)}, input=args)

    def _usage(self, mid: str, usage: dict[str, Any], ts: str | None, revision: int) -> None:
        """An answer's request: from its message's ``usage`` (revision 2) or its ledger
        event (``tokens``, revision 1)."""
        billed = self.ledger.get(int(mid))
        when = normalize_ts(billed.get("timestamp")) if billed else None
        data = _usage_data(usage)
        event = self.line.event(USAGE, self.line.key(mid, "usage"), ts=when or ts,
                                turn_id=self.running, data=data)
        event.revision = revision

    # -- info ------------------------------------------------------------------------

    def _info(self, msg: dict[str, Any], mid: str, entry: dict[str, Any], ts: str | None) -> None:
        blocks = self._blocks(msg, frozenset({"summary", "text"}), "info")
        if any(b.get("type") == "summary" for b in blocks) and not entry.get("d"):
            entry["d"] = 1
            self.line.event(COMPACTION, self.line.key(mid, "compaction"), ts=ts, turn_id=self.running,
                            data={"trigger": None, "pre_tokens": None})


def _usage_data(usage: dict[str, Any]) -> dict[str, Any]:
    """A message's ``usage`` (camelCase counts) or a ledger event's (``tokens``)."""
    tokens = _dict(usage.get("tokens"))
    if tokens:
        counts = [as_count(tokens.get("input")), as_count(tokens.get("output")), 0, 0]
    else:
        counts = [as_count(usage.get(k)) for k in (
            "inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")]
    uncached, output, read, written = counts
    data: dict[str, Any] = {
        "input_tokens": uncached,
        "output_tokens": output,
        "cache_read_tokens": read,
        "cache_creation_tokens": written,
        "reasoning_tokens": 0,
        "total_tokens": uncached + output + read + written,
        "model": _str(usage.get("model")),
    }
    credits = usage.get("credits")
    if credits_cost(credits) is not None:
        data["credits"] = credits
        data["cost"] = credits_cost(credits)
    operation = _str(usage.get("operationType"))
    if operation and operation != INFERENCE:
        data["operation"] = operation
    return data


def _result_texts(run: dict[str, Any]) -> list[str]:
    """What the model was given back: the result (text, or the output of a command, or
    the whole result as JSON) and any error."""
    texts: list[str] = []
    for value in (run.get("result"), run.get("error")):
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            output = value.get("output") if "output" in value else value.get("message")
            texts.append(output if isinstance(output, str) else json_text(value))
        elif isinstance(value, list) and value:
            texts.append(json_text(value))
    return texts


def _title(line: LineContext, text: str, rank: int) -> None:
    """The thread's own title (Amp generates one) wins over the first typed prompt."""
    state = line.state
    current = as_int(state.get("title_rank")) or 0
    if rank < current or (rank == TITLE_PROMPT and current):
        return
    title = first_line(text, MAX_TITLE_CHARS)
    if not title or title == state.get("title"):
        return
    state["title_rank"], state["title"] = rank, title
    line.facts(title=title)


def _ledger(line: LineContext, doc: dict[str, Any], answers: set[int]) -> dict[int, dict[str, Any]]:
    """The ledger's inference events by the answer they billed; a usage event for each
    other one (a side request no message shows), once."""
    events = _dict(doc.get("usageLedger")).get("events")
    by_answer: dict[int, dict[str, Any]] = {}
    marks = _table(line.state, "ledger")
    for event in events if isinstance(events, list) else []:
        event = _dict(event)
        target = as_int(event.get("toMessageId"))
        if event.get("operationType", INFERENCE) == INFERENCE and target in answers:
            by_answer[target] = event  # type: ignore[index]
            continue
        event_id = _str(event.get("id"))
        if event_id is None or marks.get(event_id):
            continue
        remember_bounded(marks, event_id, 1, MAX_LEDGER_MARKS)
        line.event(USAGE, line.key("ledger", event_id), ts=normalize_ts(event.get("timestamp")),
                   turn_id=None, data=_usage_data(event))
    return by_answer


class AmpAdapter:
    name = NAME

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return _fresh_state(source_path)

    def parse(self, obj: dict[str, Any], offset: int, source_path: str,
              state: dict[str, Any]) -> list[Record]:
        return []  # threads are documents (ingest/sources.py), never tailed

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a thread document just read,
        for the fidelity tally: a whole ``thread``, the version its client wrote."""
        version = _version_rule(state, obj)
        return version, "thread" if isinstance(obj, dict) else "<not an object>", False

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        """A whole ``threads/T-*.json``: the records of what is new since the state's
        digests."""
        if not isinstance(obj, dict):
            return []
        native = _str(obj.get("id"))
        if native is None:
            return [Drift(NAME, _version_rule(state, obj), "thread/<no id>")]
        for table in ("msgs", "ledger", "pending"):
            _table(state, table)
        env = _dict(_dict(obj.get("env")).get("initial"))
        platform = _dict(env.get("platform"))
        version = _str(platform.get("clientVersion"))
        if version:
            state["version"] = version
        trees = env.get("trees")
        cwd = _file_path(_dict(trees[0]).get("uri")) if isinstance(trees, list) and trees else None
        if cwd:
            state["cwd"] = cwd
        out: list[Record] = []
        line = LineContext(RULES, source_path, 0, state, None, out, native, obj, None, None,
                           _str(state.get("cwd")))
        title = _str(obj.get("title"))
        if title:  # before the prompts: a thread's own title is never replaced by one
            _title(line, title, TITLE_THREAD)
        messages = obj.get("messages")
        messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        answers = {as_int(m.get("messageId")) for m in messages if m.get("role") == "assistant"}
        walk = _Walk(line, _ledger(line, obj, {a for a in answers if a is not None}))
        for msg in messages:
            walk.message(msg)
        model = walk.model if walk.model and walk.model != state.get("model") else None
        if model:
            state["model"] = model
        line.facts(
            cwd=_str(state.get("cwd")),
            model=model,
            version=version,
            originator=_str(platform.get("client")),
            started_at=normalize_ts(obj.get("created")) or line.earliest,
            last_event_at=line.latest,
        )
        return out


ADAPTER = AmpAdapter()
