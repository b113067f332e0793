"""Adapters: pure functions from one transcript line (already decoded JSON) plus
per-file state to normalized records. They know nothing of files, SQLite or sockets.

Contract (every adapter module exposes an ``ADAPTER`` object with):

* ``name``: one of ``events.AGENTS``
* ``initial_state(source_path) -> dict``: fresh per-file state. It must stay
  JSON-serializable: ingest stores it beside the file's cursor in the same transaction
  as the events, so a restart resumes exactly (open turn, pending calls).
* ``parse(obj, offset, source_path, state) -> list[Record]``: one decoded line (a dict)
  at byte ``offset`` of ``source_path``. Mutates ``state``. Unknown types yield a
  ``Drift`` record.
* ``parse_document(obj, source_path, state) -> list[Record]``: a whole-file JSON
  document (Codex legacy ``.json`` rollouts, Claude subagent ``.meta.json``, Muse
  ``sessions.json``, Gemini ``.json`` chats, Copilot legacy sessions, OpenCode's JSON
  tree), read again whole each time it changes. ``state`` is that file's
  state, kept across its versions like a JSONL file's, so an adapter for a format
  rewritten on every update can tell what is new (by message id, say). An adapter
  with nothing to remember ignores it.

Optional methods, for an agent that keeps more than transcripts. An adapter defines
them only when its agent has such files; ingest asks for them with ``sidecar_reader``,
``row_reader`` and ``text_reader`` below, never by an adapter's name:

* ``read_sidecar(text, sidecar_path, state) -> list[Record]`` (``ReadsSidecar``): the
  text of a sidecar, a small file that describes a transcript (Gemini's project
  ``.project_root``, Copilot's ``workspace.yaml``; which file is a source's sidecar is
  ``ingest.sources.sidecar_of``). Ingest reads it with its transcript, whenever it
  changed, and hands over its text; the adapter seeds the transcript's ``state`` with
  what its lines need (a cwd) and returns records of its own (SessionFacts), which
  ingest routes after the transcript's. A title among them wins over the one a
  transcript's first prompt gives (ingest keeps it and repeats it after such a round).
* ``record_kind(obj, state) -> (version, record type, ignored)`` (``NamesRecords``):
  what a line or document just parsed is, for the fidelity tally (docs/formats.md,
  "Fidelity"): the agent version that wrote it, its record type as the adapter names it
  (``event_msg/token_count``, ``system/away_summary``...) and whether the adapter
  ignores that type on purpose. Ingest asks for it with ``record_kind`` below; without
  it, the record's ``type`` and the state's ``version``.
* ``parse_rows(table, rows, source_path, state) -> list[Record]`` (``ReadsRows``): rows
  of one table of an agent's database (OpenCode's ``session``, ``message``, ``part``;
  Crush's ``sessions``, ``messages``),
  each a dict of its columns as ``ingest.agent_db`` pages them, for a source read
  in the ``sqlite`` mode. ``state`` is the database's, like a file's.
* ``parse_text(text, source_path, state) -> list[Record]`` (``ReadsText``): a whole
  document that is text, not JSON (Cursor's ``.txt`` transcripts:
  ``ingest.sources.text_document``), read again whole each time it changes, like
  ``parse_document``.
* ``project_folder(source_path) -> str | None`` (``NamesFolder``): the name of the
  folder an agent made from the cwd by replacing its separators (Cursor's
  ``projects/<cwd with / as ->``). Ingest looks for the directory that name stands
  for on this machine once per file and puts what it found (a path, or None) in the
  state under ``common.FOLDER_CWD`` before the adapter reads the file: a name where a
  "-" may be a "/" or a "-" is resolved against the filesystem, never guessed.

And two optional attributes:

* ``times_from_file = True`` for an agent that writes no times at all (Cursor,
  Continue): before each round ingest puts the file's modification time (ISO 8601 UTC)
  in the state under ``common.FILE_TIME``; the adapter times what it reads in that
  round by it, and says so in the session's facts.
* ``final_lines = True`` for an agent whose JSONL writer puts each newline before the
  next line rather than after its own (Cursor: its last line never ends with one): the
  tail-reader takes a last line without a newline when it decodes whole
  (``ingest.tail``'s ``final_line``).
* ``parse_text_stream(text, companions, source_path, state, *, final) -> TextRead``
  (``ReadsTextStream``): complete lines of a text source whose records span lines (Aider's
  Markdown history, the ``text`` mode), from a record's start, with the lines of its
  companions (``ingest.sources.companions_of``) from their positions. It returns its
  records, how far they are final, where the next read starts, and how much of each
  companion it used; with ``final`` (the file has been quiet) the last record is
  emitted too. ``state`` must be left as it was before any record not yet final.

Adapters do not catch their own bugs: an exception is counted by ingest as the file's
``adapter_error`` skip (shown in ``status.skipped``) and that line or document is
skipped. Odd input is not a bug: it yields ``Drift`` or nothing.

``ADAPTERS`` maps each name to its adapter. Adapters never touch a file: ingest reads
transcripts, sidecars and databases and hands adapters what they hold.

``adapters/common.py`` holds what the adapters share: the per-line context every event
is built in (``LineContext``, each adapter's ``LineRules``), ``parse``'s preamble
(``begin``) and small pure helpers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, cast, runtime_checkable

from ..events import Record
from . import (
    aider,
    amp,
    claude,
    cline,
    codex,
    continue_,
    copilot,
    crush,
    cursor,
    gemini,
    muse,
    opencode,
    pi,
    qwen,
)
from .common import FILE_TIME, FOLDER_CWD, TextLines, TextRead

__all__ = ["ADAPTERS", "FILE_TIME", "FOLDER_CWD", "Adapter", "RecordKind", "final_lines", "folder_namer",
           "record_kind", "row_reader", "sidecar_reader", "text_reader", "text_stream_reader",
           "times_from_file"]


class Adapter(Protocol):
    """What every adapter is (see the module's docstring; the optional methods are
    ``ReadsSidecar`` and ``ReadsRows``)."""

    name: str

    def initial_state(self, source_path: str) -> dict[str, Any]: ...

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]: ...

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]: ...


@runtime_checkable
class ReadsSidecar(Protocol):
    """An adapter whose transcripts have a sidecar (the optional ``read_sidecar``)."""

    def read_sidecar(self, text: str, sidecar_path: str, state: dict[str, Any]) -> list[Record]:
        """Seed ``state`` from the sidecar's text; its own records."""
        ...


@runtime_checkable
class ReadsRows(Protocol):
    """An adapter whose agent keeps a database (the optional ``parse_rows``)."""

    def parse_rows(
        self, table: str, rows: Iterable[dict[str, Any]], source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """Records from rows of one table."""
        ...


@runtime_checkable
class ReadsText(Protocol):
    """An adapter with documents that are text (the optional ``parse_text``)."""

    def parse_text(self, text: str, source_path: str, state: dict[str, Any]) -> list[Record]:
        """Records from a whole text document."""
        ...


@runtime_checkable
class NamesFolder(Protocol):
    """An adapter whose files sit in a folder named after the cwd (``project_folder``)."""

    def project_folder(self, source_path: str) -> str | None:
        """The encoded folder name of this file's cwd, or None."""
        ...


@runtime_checkable
class ReadsTextStream(Protocol):
    """An adapter whose agent writes records that span lines (the optional
    ``parse_text_stream``)."""

    def parse_text_stream(
        self,
        text: TextLines,
        companions: dict[str, TextLines],
        source_path: str,
        state: dict[str, Any],
        *,
        final: bool,
    ) -> TextRead:
        """Records from complete lines; how far they are final."""
        ...


# Whether an adapter has a protocol's optional methods, asked once per adapter and
# protocol: a runtime-checkable isinstance costs about 60 us, and ingest asks on every
# file's round. The adapter is kept with its answer, so an id reused is not mistaken.
_IMPLEMENTS: dict[tuple[int, type], tuple[object, bool]] = {}


def _implements(adapter: Adapter, protocol: Any) -> bool:
    known = _IMPLEMENTS.get((id(adapter), protocol))
    if known is None or known[0] is not adapter:
        known = _IMPLEMENTS[(id(adapter), protocol)] = (adapter, isinstance(adapter, protocol))
    return known[1]


def text_reader(adapter: Adapter) -> ReadsText | None:
    """The adapter, when it reads text documents."""
    return cast(ReadsText, adapter) if _implements(adapter, ReadsText) else None


def text_stream_reader(adapter: Adapter) -> ReadsTextStream | None:
    """The adapter, when its agent writes records that span lines (the ``text`` mode)."""
    return cast(ReadsTextStream, adapter) if _implements(adapter, ReadsTextStream) else None


def folder_namer(adapter: Adapter) -> NamesFolder | None:
    """The adapter, when its files' folders are named after their cwd."""
    return cast(NamesFolder, adapter) if _implements(adapter, NamesFolder) else None


def times_from_file(adapter: Adapter) -> bool:
    """Whether ingest hands the adapter its file's modification time (see above)."""
    return getattr(adapter, "times_from_file", False) is True


def final_lines(adapter: Adapter) -> bool:
    """Whether a last JSONL line without a newline is taken (see above)."""
    return getattr(adapter, "final_lines", False) is True


def sidecar_reader(adapter: Adapter) -> ReadsSidecar | None:
    """The adapter, when it reads sidecars."""
    return cast(ReadsSidecar, adapter) if _implements(adapter, ReadsSidecar) else None


def row_reader(adapter: Adapter) -> ReadsRows | None:
    """The adapter, when it reads database rows."""
    return cast(ReadsRows, adapter) if _implements(adapter, ReadsRows) else None


# What a record is, for the fidelity tally (store/queries/fidelity.py): the agent version
# that wrote it, its record type as the adapter names it, and whether the adapter ignores
# that type on purpose (a list with its reasons).
RecordKind = tuple[str, str, bool]


@runtime_checkable
class NamesRecords(Protocol):
    """An adapter that names the records it reads (the optional ``record_kind``)."""

    def record_kind(self, obj: Any, state: dict[str, Any]) -> RecordKind:
        """What ``obj`` (a decoded line, or a whole document), just parsed with
        ``state``, is: (version, record type, ignored on purpose)."""
        ...


def record_kind(adapter: Adapter, obj: Any, state: dict[str, Any] | None) -> RecordKind:
    """The adapter's ``record_kind``; for one without it, the record's ``type`` and the
    version its state recorded."""
    state = state if isinstance(state, dict) else {}
    # Asked for every line read: the method looked up, not isinstance(adapter,
    # NamesRecords) (a runtime protocol check costs ~40 us, a third of a line's ingest).
    names = getattr(adapter, "record_kind", None)
    if names is not None:
        return names(obj, state)  # type: ignore[no-any-return]
    version = state.get("version")
    kind = obj.get("type") if isinstance(obj, dict) else None
    return (
        version if isinstance(version, str) and version else "unknown",
        kind if isinstance(kind, str) else "<no type>",
        False,
    )


_ALL: tuple[Adapter, ...] = (
    codex.ADAPTER,
    claude.ADAPTER,
    muse.ADAPTER,
    gemini.ADAPTER,
    copilot.ADAPTER,
    opencode.ADAPTER,
    crush.ADAPTER,
    aider.ADAPTER,
    qwen.ADAPTER,
    amp.ADAPTER,
    pi.ADAPTER,
    cursor.ADAPTER,
    *cline.ADAPTERS,
    continue_.ADAPTER,
)
ADAPTERS: dict[str, Adapter] = {adapter.name: adapter for adapter in _ALL}
