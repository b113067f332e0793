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

AGENTS = ("codex", "claude-code", "muse", "gemini", "copilot", "opencode")

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
    # Transient fields: used by derivation and secret scanning, NEVER stored.
    input: dict[str, Any] | None = None  # full tool input (tool_call; call input on tool_result)
    # What the model saw or wrote, as (label, text) pairs: tool output ("output", "stdout",
    # "stderr", "file"), written content ("write", "new_string", "patch"). Scanned, then dropped.
    contents: list[tuple[str, str]] = field(default_factory=list)
    spill_path: str | None = None  # Claude <persisted-output> file this result spilled into
    cwd: str | None = None  # effective working directory at this event, for path resolution


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
    source: str | None = None
    model_provider: str | None = None
    parent_session_id: str | None = None
    home: str | None = None  # the user's home as seen by the agent, when derivable

    # title is latest-wins: adapters emit a prompt-derived title once, and a later
    # custom or AI title must replace it.
    FIRST_WINS = ("cwd", "originator", "source", "parent_session_id", "home")
    EARLIEST_WINS = ("started_at",)


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


Record = Event | SessionFacts | TurnFacts | Drift
