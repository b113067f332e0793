"""What the adapters share: the per-line context every event is built in (``LineContext``,
its adapter's ``LineRules`` and the ``begin`` preamble of ``parse``), and small pure
helpers: timestamps, text of content blocks, stored tool-input summaries, numbers.

Long on purpose: the one per-line context every adapter builds its events in, and the
helpers they share, kept together so an adapter imports one module.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from ..events import (
    TURN_END,
    TURN_START,
    Drift,
    Event,
    Record,
    SessionFacts,
    TurnFacts,
    line_key,
    session_key,
)

# Tool-input fields that hold file content or patch text: never stored, only their size.
CONTENT_FIELDS = frozenset(
    {
        "content",
        "old_string",
        "new_string",
        "old_text",
        "new_text",
        "edits",
        "new_source",
        "patch",
        "input",  # Codex apply_patch custom tool: the raw patch text
        "chars",  # Codex write_stdin
        "file_text",  # Copilot CLI create / str_replace_editor
        "old_str",  # Copilot CLI edit / str_replace_editor
        "new_str",
        "contents",  # Cursor Write
        "diff",  # Cline replace_in_file, and its UI rows' diffs
    }
)
MAX_STORED_STRING = 4096

# Keys ingest writes into an adapter's per-file state (adapters/__init__.py): the file's
# modification time for an agent that writes no times (``times_from_file``), and the
# directory a folder named after the cwd stands for (``project_folder``; None when no
# directory on this machine matches it).
FILE_TIME = "file_time"
FOLDER_CWD = "folder_cwd"


def summarize_input(value: Any) -> Any:
    """The part of a tool input that is stored: content fields become their size,
    long strings are cut. The full input still travels (transiently) to derivation
    and secret scanning."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in CONTENT_FIELDS and v is not None and not isinstance(v, bool | int | float):
                size = len(v) if isinstance(v, str | list | dict) else 0
                out[k] = {"omitted_chars" if isinstance(v, str) else "omitted_items": size}
            else:
                out[k] = summarize_input(v)
        return out
    if isinstance(value, list):
        return [summarize_input(v) for v in value[:200]]
    if isinstance(value, str) and len(value) > MAX_STORED_STRING:
        return value[:MAX_STORED_STRING] + f"…[{len(value) - MAX_STORED_STRING} more chars]"
    return value


def normalize_ts(value: Any) -> str | None:
    """ISO 8601 UTC with a Z suffix. Accepts ISO strings and epoch seconds or milliseconds.
    Never raises: what cannot be understood is kept as written (strings) or dropped."""
    try:
        return _normalize_ts(value)
    except (OverflowError, OSError, ValueError):
        return value if isinstance(value, str) and value.strip() else None


def _normalize_ts(value: Any) -> str | None:
    # Strings first, and in them a ready YYYY-MM-DDTHH:MM:SS.mmmZ first: nearly every
    # timestamp of every format is one (its other tests cost more than the answer).
    if isinstance(value, str):
        s = value.strip()
        if len(s) == 24 and s[19] == "." and s[23] == "Z":
            return s
        if not s:
            return None
        if s.isascii() and s.isdigit():
            return _normalize_ts(int(s))
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return s
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        dt = dt.astimezone(UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if seconds > 1e11:  # milliseconds
            seconds /= 1000.0
        dt = datetime.fromtimestamp(seconds, tz=UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return None


def text_of(content: Any) -> str:
    """Concatenated text of a message content: a string, or a list of blocks with
    ``text`` (Claude text blocks, Codex input_text/output_text, Muse parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                t = block.get("text")
                if isinstance(t, str):
                    parts.append(t)
        return "\n".join(parts)
    return ""


TITLE_SCAN_CHARS = 64 * 1024


FIRST_LOOK_CHARS = 1024


def first_line(text: str, limit: int = 120) -> str:
    """The first non-blank line, cut to ``limit``. Looks only at the start of the
    text: a 50 MB pasted prompt must not be split (copied) just to title a session.
    A long text is first split over its first FIRST_LOOK_CHARS: a line found there
    with another after it is whole, the same line the whole split gives (64 KiB of a
    pasted log cut into a thousand strings for its first one cost about 50 us)."""
    if len(text) > FIRST_LOOK_CHARS:
        lines = text[:FIRST_LOOK_CHARS].splitlines()
        for line in lines[:-1]:  # the last may go on past the look
            stripped = line.strip()
            if stripped:
                return stripped[:limit]
    for line in text[:TITLE_SCAN_CHARS].splitlines():
        stripped = line.strip()
        if stripped:
            return stripped[:limit]
    return ""


def nonempty_str(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None (transcript fields are untyped)."""
    return value if isinstance(value, str) and value else None


# What a stored integer may hold: SQLite's INTEGER and orjson's int are both 64-bit.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1  # the largest integer orjson writes


def as_int(value: Any) -> int | None:
    """``value`` as an int, or None: the one reading of an untyped JSON number as an
    integer (counts, exit codes, durations), for the adapters and derive alike.

    * An int is kept as written, if orjson can write it (-2**63 to 2**64 - 1): a line
      over 4 MiB is parsed by the stdlib, which reads an integer of any size.
      A bool is not a number here (JSON true is not 1).
    * A float is rounded to the nearest int (halves to even, Python's ``round``): a
      writer that emits whole numbers as floats (``2.0``) loses nothing, and a
      fractional duration (41.6 ms) becomes the nearest whole one (42), not a
      truncated one.
    * A float that is not finite, or that rounds to more than 64 bits, is None: it
      cannot be stored (orjson reads an integer past 2**64 as a float).
    * Anything else (strings included) is None: numbers written as text are a format
      of their own, parsed where the adapter knows that format.
    """
    if type(value) is int:  # the common case first (a bool's type is bool, not int)
        return value if INT64_MIN <= value <= UINT64_MAX else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if INT64_MIN <= value <= UINT64_MAX else None
    if isinstance(value, float) and math.isfinite(value):
        rounded = round(value)
        return rounded if INT64_MIN <= rounded <= INT64_MAX else None
    return None


# The largest count read (2**53, nine quadrillion tokens): far past any real one, and
# sums of a session's worth of them stay inside the signed 64 bits SQLite sums in (a
# count near 2**64 that orjson can write made SUM overflow, and a file's state that
# added two of them could no longer be written).
MAX_COUNT = 2**53


def as_count(value: Any) -> int:
    """A count (tokens, retries) read by the ``as_int`` rule; missing, unreadable,
    negative or past ``MAX_COUNT`` is 0, so counters can be summed without checks."""
    n = as_int(value)
    return n if n is not None and 0 < n <= MAX_COUNT else 0


def seconds_to_ms(value: Any) -> int | None:
    """A duration in seconds (an int or a float) as whole milliseconds, by ``as_int``'s
    rule (0.0416 s is 42 ms); None when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return as_int(value * 1000)


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A function call's ``arguments``: a JSON object string (or, leniently, an object).
    Anything else is kept whole as ``{"raw": ...}``."""
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"raw": raw}
        return parsed if isinstance(parsed, dict) else {"raw": raw}
    return {"raw": raw}


def stable_digest(value: Any, size: int = 8) -> str:
    """A short hex digest of a decoded JSON value, the same for equal values whatever
    their key order. Values orjson cannot encode (integers past 64 bits, which the
    stdlib parser of very long lines can produce) go through the stdlib encoder."""
    try:
        raw = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        raw = json.dumps(value, sort_keys=True, default=repr).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=size).hexdigest()


def state_table(state: dict[str, Any], name: str) -> dict[str, Any]:
    """The dict ``state[name]`` of an adapter's per-file state, created when missing (or
    not a dict: a state persisted by an older version)."""
    table = state.get(name)
    if not isinstance(table, dict):
        table = {}
        state[name] = table
    return table


def remember_bounded(table: dict[str, Any], key: str, value: Any, cap: int) -> None:
    """Insert into a bounded table, dropping the oldest entries past ``cap``: per-file
    state is persisted with the cursor on every commit, so it must stay small."""
    table.pop(key, None)
    table[key] = value
    while len(table) > cap:
        del table[next(iter(table))]


# ---- text sources ------------------------------------------------------------------------


@dataclass(slots=True)
class TextLines:
    """What ingest read of a text file (the ``text`` mode: Aider's Markdown history and
    its companions): complete lines, each with the offset it starts at, decoded
    (invalid UTF-8 replaced), without their newline."""

    lines: list[tuple[int, str]]
    start: int  # where the read began (a record's start: see TextRead.reopen)
    end: int  # just past the last complete line
    eof: bool  # the read reached the end of the file (no budget cut it short)


@dataclass(slots=True)
class TextRead:
    """What an adapter made of a text source's lines (``parse_text_stream``)."""

    records: list[Record]
    # The source's new offset: every record before it is final. A record still being
    # written (its end not seen) starts where the offset stops, and is read again whole.
    offset: int
    # Where the next read starts when that is before ``offset``: a record emitted before
    # its end was seen (the file went quiet) starts there, so more of it is read with it.
    reopen: int | None = None
    # Each companion's new offset (what was used of it).
    companions: dict[str, int] = field(default_factory=dict)
    # The final records read, for the fidelity tally: each a small object the adapter's
    # ``record_kind`` names, with what became of it ({"type", "events", "drift"}).
    read: list[dict[str, Any]] = field(default_factory=list)


# ---- the per-line context ------------------------------------------------------------

StateRead = Callable[[dict[str, Any]], Any]  # a value an adapter keeps in its per-file state
Claim = tuple[int, str | None, str | None]  # an event's claim, claim_since and holder
# "The line's own": the default of event()'s ts, turn_id and cwd (None is a value given).
_LINE: Any = object()
# The record of a context built without one (a document's head, a database row): empty,
# and never written (adapters read records, they never change them).
_NO_RECORD: dict[str, Any] = {}


def position_key(line: LineContext, *suffix: Any) -> str:
    """The default key rule: where the line sits in its file, the n-th event of the
    line getting index n (``events.line_key``)."""
    return line.position_key()


def state_version(state: dict[str, Any], obj: Any = None) -> str:
    """The default version rule: the agent version the state last recorded."""
    return nonempty_str(state.get("version")) or "unknown"


def cwd_in_state(state: dict[str, Any]) -> str | None:
    """A cwd rule: the state's ``cwd``."""
    return nonempty_str(state.get("cwd"))


def open_turn_in_state(state: dict[str, Any]) -> str | None:
    """A turn rule: the state's ``turn`` while ``turn_open`` (see open_turn)."""
    turn = state.get("turn")
    return turn if state.get("turn_open") and isinstance(turn, str) else None


@dataclass(frozen=True, slots=True)
class LineRules:
    """What differs between the adapters' line contexts, given once per adapter (a
    module constant) and read by ``LineContext`` and ``begin``.

    Read from all six adapters, the differences and how each is passed in:

    * **Keys** (``key``): how ``LineContext.key(*suffix)`` names an event that has no
      key of its own. Claude: the record's ``uuid`` (``uuid.<block>``), else the line's
      place; Muse: ``muse:<session>:<seq>``, else the place; Codex: the record's history
      key or a legacy document's item key, then ``.1``, ``.2`` for further events of
      the record, else the place with a counter; Copilot:
      ``copilot:<session>:<event id>[:suffix]``, else the place with a counter; Gemini:
      ``gemini:<session>[:<subagent>]:<parts>``; OpenCode names every key itself (its
      own ids). The record's own id, when a key rule needs one, is ``record_id``.
    * **Session, turn, cwd, sub-agent, version**: a value is either the line's own,
      given by the adapter when it builds the line (the rule is None), or read from
      the per-file state each time it is asked for (the rule is a ``StateRead``),
      because the adapter changes it in the state in the middle of a line. Session: Claude, Muse and OpenCode fix it per line; Codex
      (``native_id``), Copilot and Gemini (``session``) read it. Turn: Claude fixes the
      line's turn (a sub-agent's is its parent prompt's; ``open_turn`` moves it); Muse
      and Copilot read the open turn (``turn`` while ``turn_open``), Codex its
      ``turn_id``; Gemini and OpenCode name the turn of each event (the default is
      None). Cwd: Claude fixes the record's own (else the last one seen); Muse,
      Copilot and Gemini read ``cwd``, Codex ``cwd`` else ``session_cwd``; OpenCode
      names it per event. Sub-agent: Claude and Copilot fix it per line; Gemini reads
      it (a nested recording once its metadata named it); the others have none.
      Version (a ``(state, record) -> str`` rule, for ``Drift``): Claude prefers the
      record's own ``version``; Gemini records none ("unknown"); OpenCode fixes its
      row's session's; the others read ``version`` (``state_version``).
    * **Turns** (``turn_key``): Claude, Muse and Copilot keep the open turn in the state
      as ``turn``/``turn_open`` and open and close it with ``open_turn``/``close_turn``;
      their TURN_START/TURN_END keys are ``<turn_key><turn>:start``/``:end`` (Claude's
      ``turn_key`` is ``claude-code:turn:``, the others' empty). What else a turn change
      does stays with the adapter (Claude: the same turn's second prompt opens
      nothing; Claude and Copilot: the turn's model). Codex (turns numbered or named
      by task_started, closed by task_complete), Gemini (a running turn carried
      through a conversation) and OpenCode (a turn per user message row) keep their
      own machines.
    * **Claims, revisions, times**: Claude fixes each line's claim (``claim``: the
      events' claim, claim_since and holder); Codex fixes a copy's claim when it reads
      a parent's replayed history (the state's ``holder``); OpenCode fixes each row's
      ``revision``. Gemini and OpenCode name the time of each event (``ts=``); Gemini
      gathers a parse call's span with ``saw``.
    * **Output**: Codex, Copilot and Gemini collect what a line yields in ``out`` (each
      builder appends to it); Claude, Muse and OpenCode return lists themselves
      (``out`` is None; builders only return).
    * **The preamble** (``begin``): Codex, Copilot and Gemini bring a state persisted by
      an older adapter up to date (``fresh_state``, ``state_schema``, ``state_tables``;
      Gemini also when its messages table is no dict, ``checked_tables``)
      and report a record that is not an object as Drift (``not_object_drift``);
      Claude and Muse skip it and check the record's ``type`` against the handled
      (``record_types``) and deliberately ignored (``ignored_types``) ones; OpenCode
      only skips a record that is not an object.
    """

    agent: str
    key: Callable[..., str] = position_key
    native_id: StateRead | None = None
    turn: StateRead | None = None
    cwd: StateRead | None = None
    subagent: StateRead | None = None
    version: Callable[[dict[str, Any], Any], str] | None = state_version
    turn_key: str = ""
    # The preamble (begin).
    fresh_state: Callable[[str], dict[str, Any]] | None = None
    state_schema: int | None = None
    state_tables: tuple[str, ...] = ()  # made dicts when a state is brought up to date
    checked_tables: tuple[str, ...] = ()  # checked on every line (costs ~1% of a line)
    not_object_drift: bool = False
    record_types: frozenset[str] | None = None
    ignored_types: frozenset[str] = frozenset()


class LineContext:
    """One record being read (a line, a document or a database row), with what every
    record built from it shares: its file, offset, time, session, turn, cwd, sub-agent
    and claim. ``event``, ``facts`` and ``drift`` build the records; ``open_turn`` and
    ``close_turn`` move the turn kept in the state. What differs between adapters is
    in ``rules`` (see ``LineRules``)."""

    __slots__ = (
        "rules",
        "source_path",
        "offset",
        "state",
        "ts",
        "obj",
        "record_id",
        "out",
        "emitted",
        "claim",
        "revision",
        "earliest",
        "latest",
        "_native_id",
        "_session_id",
        "_turn_id",
        "_cwd",
        "_subagent_id",
        "_version",
    )

    # No keyword-only parameters and the first six by position at the busiest call
    # sites: a line context is built for every line, and binding keywords costs more
    # than the rest of the constructor (measured with callgrind).
    def __init__(
        self,
        rules: LineRules,
        source_path: str,
        offset: int,
        state: dict[str, Any],
        ts: str | None = None,
        out: list[Record] | None = None,
        native_id: str | None = None,
        obj: dict[str, Any] = _NO_RECORD,
        record_id: str | None = None,
        turn_id: str | None = None,
        cwd: str | None = None,
        subagent_id: str | None = None,
        claim: Claim | None = None,
        revision: int = 0,
        version: str | None = None,
    ) -> None:
        self.rules = rules
        self.source_path = source_path
        self.offset = offset
        self.state = state
        self.ts = ts
        self.out = out  # where the builders put what they build (None: nowhere)
        self.obj = obj  # the decoded record, for rules that read it (never changed)
        self.record_id = record_id  # the record's own id, for the key rule
        self.emitted = 0  # events keyed by position so far (position_key)
        self.claim = claim  # None: the events' defaults (CLAIM_OWN, no since, no holder)
        self.revision = revision
        self.earliest: str | None = None  # the span of times seen (saw)
        self.latest: str | None = None
        self._native_id = native_id or "unknown"
        self._session_id = "" if rules.native_id else session_key(rules.agent, self._native_id)
        self._turn_id = turn_id
        self._cwd = cwd
        self._subagent_id = subagent_id
        self._version = version

    # -- the values the rules say where to find

    @property
    def native_id(self) -> str:
        read = self.rules.native_id
        return self._native_id if read is None else str(read(self.state))

    @property
    def session_id(self) -> str:
        read = self.rules.native_id
        if read is None:
            return self._session_id
        return session_key(self.rules.agent, str(read(self.state)))

    @property
    def turn_id(self) -> str | None:
        read = self.rules.turn
        return self._turn_id if read is None else read(self.state)

    @property
    def cwd(self) -> str | None:
        read = self.rules.cwd
        return self._cwd if read is None else read(self.state)

    @property
    def subagent_id(self) -> str | None:
        read = self.rules.subagent
        return self._subagent_id if read is None else read(self.state)

    @property
    def version(self) -> str:
        read = self.rules.version
        return (self._version or "unknown") if read is None else read(self.state, self.obj)

    # -- keys

    def key(self, *suffix: Any) -> str:
        """The key of an event with no key of its own, by the adapter's rule."""
        return self.rules.key(self, *suffix)

    def position_key(self, index: int | None = None) -> str:
        """Where the line sits in its file: ``index``, else the next of a counter."""
        if index is None:
            index = self.emitted
            self.emitted += 1
        return line_key(self.source_path, self.offset, index)

    # -- records

    def event(
        self,
        kind: str,
        key: str | None = None,
        *,
        ts: str | None = _LINE,
        turn_id: str | None = _LINE,
        cwd: str | None = _LINE,
        **fields: Any,
    ) -> Event:
        """An event of this line. ``ts``, ``turn_id`` and ``cwd`` are the line's unless
        given; the key is ``key()``'s unless given. (Event's leading fields are passed
        by position: this is called for every event of every line.)"""
        rules = self.rules
        ev = Event(
            key if key is not None else rules.key(self),
            self._session_id if rules.native_id is None else self.session_id,
            kind,
            self.ts if ts is _LINE else ts,
            rules.agent,
            self.source_path,
            self.offset,
            (self._turn_id if rules.turn is None else rules.turn(self.state))
            if turn_id is _LINE
            else turn_id,
            **fields,
        )
        # The rest is set only when it is not the Event's default (cheaper than passing
        # it, for the events of a line of which most carry none of it).
        if cwd is _LINE:
            cwd = self._cwd if rules.cwd is None else rules.cwd(self.state)
        if cwd is not None:
            ev.cwd = cwd
        subagent_id = self._subagent_id if rules.subagent is None else rules.subagent(self.state)
        if subagent_id is not None:
            ev.subagent_id = subagent_id
        if self.claim is not None:
            ev.claim, ev.claim_since, ev.holder = self.claim
        if self.revision:
            ev.revision = self.revision
        if self.out is not None:
            self.out.append(ev)
        return ev

    def emit(self, record: Record) -> None:
        """Put a record the adapter built itself where the builders put theirs."""
        if self.out is not None:
            self.out.append(record)

    def facts(self, **fields: Any) -> SessionFacts:
        """SessionFacts of the line's session."""
        rules = self.rules
        if rules.native_id is None:
            facts = SessionFacts(self._session_id, rules.agent, self._native_id, **fields)
        else:
            facts = SessionFacts(self.session_id, rules.agent, self.native_id, **fields)
        if self.out is not None:
            self.out.append(facts)
        return facts

    def drift(self, record_type: str) -> Drift:
        drift = Drift(self.rules.agent, self.version, record_type)
        if self.out is not None:
            self.out.append(drift)
        return drift

    def saw(self, ts: str | None) -> None:
        """Widen the span of times this line (or document) covers."""
        if ts is None:
            return
        if self.earliest is None or ts < self.earliest:
            self.earliest = ts
        if self.latest is None or ts > self.latest:
            self.latest = ts

    # -- turns kept in the state as turn / turn_open (Claude, Muse, Copilot)

    def open_turn(
        self, turn_id: str, *, ts: str | None, cwd: str | None, model: str | None = None
    ) -> list[Record]:
        """Close the open turn (see close_turn), then open ``turn_id``: TURN_START at
        ``ts`` in ``cwd`` and its TurnFacts."""
        out = self.close_turn("complete", None)
        state = self.state
        state["turn"] = turn_id
        state["turn_open"] = True
        if self.rules.turn is None:
            self._turn_id = turn_id
        start = self.event(
            TURN_START, f"{self.rules.turn_key}{turn_id}:start", turn_id=turn_id, ts=ts, cwd=cwd
        )
        facts = TurnFacts(
            self.session_id, turn_id, started_at=ts, status="open", cwd=cwd, model=model
        )
        if self.out is not None:
            self.out.append(facts)
        out += (start, facts)
        return out

    def close_turn(
        self, status: str, reason: str | None, *, at_marker: bool = False
    ) -> list[Record]:
        """Close the open turn, if any. An end marker (an abort, a turn-end record) ends
        it at the marker's time; the next prompt ends the previous turn at the last
        event before it (the state's ``last_ts``)."""
        state = self.state
        turn_id = state.get("turn")
        if not state.get("turn_open") or not isinstance(turn_id, str):
            return []
        state["turn_open"] = False
        ended_at = self.ts if at_marker else (nonempty_str(state.get("last_ts")) or self.ts)
        end = self.event(
            TURN_END,
            f"{self.rules.turn_key}{turn_id}:end",
            turn_id=turn_id,
            ts=ended_at,
            data={"status": status, "reason": reason},
        )
        facts = TurnFacts(self.session_id, turn_id, ended_at=ended_at, status=status)
        if self.out is not None:
            self.out.append(facts)
        return [end, facts]


def upgrade_state(state: dict[str, Any], source_path: str, rules: LineRules) -> None:
    """A state persisted by an older adapter version (another ``state_schema``, or a
    ``checked_tables`` table that is no dict) gets the keys it lacks from a fresh one,
    and its ``state_tables`` are made dicts."""
    if _current(state, rules):
        return
    fresh = rules.fresh_state
    if fresh is None:
        return
    for key, value in fresh(source_path).items():
        state.setdefault(key, value)
    for table in rules.state_tables:
        if not isinstance(state.get(table), dict):
            state[table] = {}
    state["schema"] = rules.state_schema


def _current(state: dict[str, Any], rules: LineRules) -> bool:
    return state.get("schema") == rules.state_schema and all(
        isinstance(state.get(table), dict) for table in rules.checked_tables
    )


def begin(rules: LineRules, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record] | None:
    """The start every ``parse`` shares (see ``LineRules``, "the preamble"): the state
    brought up to date, then the records to return at once for a record that is not an
    object or whose ``type`` is missing, ignored or unknown; None to go on."""
    if rules.fresh_state is not None:
        if state.get("schema") != rules.state_schema:
            upgrade_state(state, source_path, rules)
        else:
            for table in rules.checked_tables:
                if not isinstance(state.get(table), dict):
                    upgrade_state(state, source_path, rules)
                    break
    if not isinstance(obj, dict):
        if not rules.not_object_drift:
            return []
        return [Drift(rules.agent, _version_of(rules, state, obj), "<not an object>")]
    handled = rules.record_types
    if handled is None:
        return None
    record_type = obj.get("type")
    if not isinstance(record_type, str):
        return [Drift(rules.agent, _version_of(rules, state, obj), "<no type>")]
    if record_type in rules.ignored_types:
        return []
    if record_type not in handled:
        return [Drift(rules.agent, _version_of(rules, state, obj), record_type)]
    return None


def _version_of(rules: LineRules, state: dict[str, Any], obj: Any) -> str:
    return "unknown" if rules.version is None else rules.version(state, obj)


def json_text(value: Any) -> str:
    """A decoded JSON value as JSON text (a tool result that is no text: what the model
    saw of it). Integers past 64 bits go through the stdlib encoder."""
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(value, default=str)


def storable_input(args: dict[str, Any], cap: int = 64 * 1024) -> dict[str, Any]:
    """A tool call's input as an adapter may keep it in its per-file state until the
    result arrives (derive reads a command from the result's input): whole when its JSON
    is under ``cap`` bytes, else summarized; {} when it cannot be stored (orjson cannot
    write it: an integer past 64 bits)."""
    try:
        size = len(orjson.dumps(args))
    except TypeError:
        return {}
    if size <= cap:
        return args
    kept = summarize_input(args)
    try:
        orjson.dumps(kept)
    except TypeError:
        return {}
    return kept
