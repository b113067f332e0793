"""The normalized records that adapters produce and every later stage consumes.

This module is pure: it imports nothing from the rest of the package. Everything
downstream (derivation, secret scanning, the store, the server) speaks these types.

Three kinds of record come out of an adapter:

* ``Event``: one thing that happened in a session (a prompt, an assistant message,
  a tool call, its result, token usage, a compaction, a turn boundary...). Events are
  append-only and carry a deterministic ``key`` so re-reading a file never duplicates.
* ``SessionFacts``: what a line says about its session (cwd, model, version...).
* ``TurnFacts``: what a line says about a turn (start, end, status, cwd, model).

plus ``Drift`` for record types an adapter did not recognise (format-drift telemetry).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

AGENTS = (
    "codex",
    "claude-code",
    "muse",
    "gemini",
    "copilot",
    "opencode",
    "qwen",
    "amp",
    "pi",
    "cursor",
    "cline",
    "roo-code",
    "kilo-code",
    "continue",
    "crush",
    "aider",
)

# Event kinds. Strings, not an enum, because they travel as-is through SQLite and JSON.
PROMPT = "prompt"  # a user prompt: text stored (redacted by the scanner)
DIRECTIVE = "directive"  # a runtime/scheduler instruction in the user role (Muse): not a prompt
MESSAGE = "message"  # assistant text, one event per assistant message
REASONING = "reasoning"  # the model reasoned; its content is never kept
TOOL_CALL = "tool_call"  # a tool invocation; tool, call_id, summarized input
TOOL_RESULT = "tool_result"  # the result of a call; output never stored, only its size
USAGE = "usage"  # token usage increment for one model response
COMPACTION = "compaction"  # context compaction; no summary stored
TURN_START = "turn_start"
TURN_END = "turn_end"  # data.status: complete | aborted
ERROR = "error"  # an error the agent reported (api error, stream error)
# Derived kinds (see derive.py and scan.py)
READ = "read"
EDIT = "edit"
COMMAND = "command"
SECRET = "secret"
SENSITIVE_READ = "sensitive_read"
# Transient kinds: made by an adapter for the scan stage only, never stored (ingest drops
# them once scanned; what the scan found is stored as ``secret`` events).
REQUEST = "request"  # what a model was sent (Aider's LLM history): scanned, never kept
TRANSIENT_KINDS = frozenset({REQUEST})

# Stored prompt and assistant text is cut here (ingest records the full length in
# ``text_chars``): a pasted 50 MB log is not worth keeping whole, and holding it twice
# more for the insert would break the memory bound.
MAX_STORED_TEXT_CHARS = 256 * 1024

EVENT_KINDS = (
    PROMPT,
    DIRECTIVE,
    MESSAGE,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    USAGE,
    COMPACTION,
    TURN_START,
    TURN_END,
    ERROR,
    READ,
    EDIT,
    COMMAND,
    SECRET,
    SENSITIVE_READ,
)


def session_key(agent: str, native_id: str) -> str:
    """Our session id: the agent's own id, prefixed so ids never collide across agents."""
    return f"{agent}:{native_id}"


# Claims: how strongly an event's session owns it. The same record can be written into
# several sessions' files (a resumed Codex rollout replays its parent's history; Claude
# Code copies records, same uuid, into resumed and forked sessions and side-question
# sub-agents). The adapter says how it holds each record, the store keeps the strongest
# claim for a key whatever the order the files are read in, and remembers the other
# holders as copies (docs/architecture.md, "Exactly once").
CLAIM_COPY = 0  # a copy of another session's record (a replayed or forked history)
CLAIM_SUBAGENT = 1  # a record in a sub-agent's file, which may copy its parent's records
CLAIM_OWN = 2  # the record in the file of the session that wrote it


def key_digest(key: str) -> bytes:
    """The 16-byte digest an event key is stored (and looked up) as."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def line_key(source_path: str, offset: int, index: int = 0) -> str:
    """Key for an event that has no id of its own: where its line starts in its file."""
    return f"{source_path}@{offset}.{index}"


@dataclass(slots=True)
class Event:
    key: str  # deterministic: the agent's own record id or source@offset
    session_id: str  # session_key(agent, native_id)
    kind: str
    ts: str | None  # ISO 8601 UTC as written by the agent (normalized to ...Z when possible)
    adapter: str  # one of AGENTS
    source_path: str  # provenance: the file the line came from
    offset: int  # provenance: byte offset of the line in that file
    turn_id: str | None = None
    tool: str | None = None
    call_id: str | None = None
    subagent_id: str | None = None
    # Stored as JSON; kind-specific. Ingest edits it in place before it is stored: cuts
    # long text, redacts secrets, drops prompt and assistant text when none is stored.
    data: dict[str, Any] = field(default_factory=dict)
    # 0 for an event emitted once. An adapter that learns more about an event it already
    # emitted (a Claude message is written one content block per line) emits it again,
    # whole, under the same key with a higher revision: the store replaces the stored
    # data with a higher revision's, never with an equal or lower one (a re-read, or a
    # copy of the conversation in another file), and counts the event once, when it is
    # first inserted.
    revision: int = 0
    # How strongly ``session_id`` owns the event (CLAIM_*), and, between claims of one
    # rank, the time that session began (an ISO time: the earlier wins; None loses to
    # any time). ``holder`` is the session whose file holds the record when that is not
    # ``session_id`` (a Codex replay attributes the parent's history to the parent).
    claim: int = CLAIM_OWN
    claim_since: str | None = None
    holder: str | None = None
    # Transient fields: used by derivation and secret scanning, NEVER stored.
    input: dict[str, Any] | None = None  # full tool input (tool_call; call input on tool_result)
    # What the model saw or wrote, as (label, text) pairs: tool output ("output", "stdout",
    # "stderr", "file"), written content ("write", "new_string", "patch"). Scanned, then dropped.
    contents: list[tuple[str, str]] = field(default_factory=list)
    spill_path: str | None = None  # Claude <persisted-output> file this result spilled into
    cwd: str | None = None  # effective working directory at this event, for path resolution
    # A usage event's cost, set by the ingest's pricing stage (pricing/stage.py): (nano-
    # dollars shown, kind, our estimate in nano-dollars, unpriced tokens). Stored beside
    # the event (usage_costs), never in its data.
    cost: tuple[int | None, str, int | None, int] | None = None


def derived_event(source: Event, kind: str, key: str, data: dict[str, Any]) -> Event:
    """An event derived from ``source`` (a read from a tool call, a finding in its
    output...): same session, time, turn, call and provenance; its own kind, key, data."""
    return Event(
        key=key,
        session_id=source.session_id,
        kind=kind,
        ts=source.ts,
        adapter=source.adapter,
        source_path=source.source_path,
        offset=source.offset,
        turn_id=source.turn_id,
        tool=source.tool,
        call_id=source.call_id,
        subagent_id=source.subagent_id,
        data=data,
        claim=source.claim,
        claim_since=source.claim_since,
        holder=source.holder,
        cwd=source.cwd,
    )


@dataclass(slots=True)
class SessionFacts:
    """Facts about a session. The store keeps the first non-null value for ``FIRST_WINS``
    fields and the latest non-null value for the others."""

    session_id: str
    agent: str
    native_id: str
    cwd: str | None = None
    model: str | None = None
    started_at: str | None = None
    last_event_at: str | None = None
    title: str | None = None
    version: str | None = None  # agent version (Codex cli_version, Claude version)
    originator: str | None = None
    # As the agent wrote it: a string ("cli", "vscode") or an object ({"subagent":
    # "review"}); stored as JSON when it is not a string.
    source: Any = None
    model_provider: str | None = None
    parent_session_id: str | None = None
    home: str | None = None  # the user's home as seen by the agent, when derivable
    # A session known through another session's copy of its history (a Codex resume
    # replays the parent's): the session that holds the copy. own_record is 1 once the
    # session's own transcript was read.
    replayed_in: str | None = None
    own_record: int | None = None
    # A sub-agent whose file does not name its parent, only what kind of sub-agent it is
    # (Codex review): the store links it to the session with a matching SpawnPoint.
    spawned_as: str | None = None
    # Facts learnt from a copy of the session's history in another session's file (a
    # Codex replay): they fill what is unknown, never replace what the session's own
    # file says, whatever the order the files are read in.
    weak: bool = False

    # title is latest-wins: adapters emit a prompt-derived title once, and a later
    # custom or AI title must replace it.
    FIRST_WINS = ("cwd", "originator", "source", "parent_session_id", "home", "spawned_as",
                  "replayed_in")
    EARLIEST_WINS = ("started_at",)


def merged_fact(name: str, current: Any, value: Any, weak: bool) -> Any:
    """A session fact's value once ``value`` (not None) arrives where ``current`` is
    (None: unknown), by SessionFacts' rules: the earliest start, the latest event, the
    first of FIRST_WINS, the latest of the others. A weak fact (learnt from a copy in
    another session's file) fills what is unknown, never replaces what the session's
    own file said, except where the rule is the earliest or the latest anyway. Used on
    a batch's facts (store/batch.py) and on a stored row (store/writer.py)."""
    if current is None:
        return value
    if name in SessionFacts.EARLIEST_WINS:
        return min(current, value)
    if name == "last_event_at":
        return max(current, value)
    if name in SessionFacts.FIRST_WINS or weak:
        return current
    return value


@dataclass(slots=True)
class TurnFacts:
    session_id: str
    turn_id: str
    started_at: str | None = None
    ended_at: str | None = None
    status: str | None = None  # open | complete | aborted
    cwd: str | None = None
    model: str | None = None


@dataclass(slots=True)
class Drift:
    """A record or item type an adapter does not know: counted, never fatal."""

    adapter: str
    version: str  # agent version that wrote it, or "unknown"
    record_type: str


@dataclass(slots=True)
class SpawnPoint:
    """A session started a sub-agent of ``kind`` at ``at`` in ``cwd`` without naming it
    (Codex ``entered_review_mode``): the store links the sub-agent session that says it
    is one (``SessionFacts.spawned_as``) and began then, in that cwd."""

    session_id: str
    kind: str
    at: str
    cwd: str | None = None


Record = Event | SessionFacts | TurnFacts | Drift | SpawnPoint
