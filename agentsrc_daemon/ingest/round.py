"""Ingest of one source file: tail -> adapter -> derive -> scan -> a Batch for the store.

This is the glue between the pure stages (adapters, derivation, scanning) and the
tail-reader. It holds the in-memory cursors; the daemon commits each Batch (events and
the cursors that cover them) in one transaction.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
import structlog

from ..adapters import ADAPTERS, Adapter
from ..events import MAX_STORED_TEXT_CHARS, Drift, Event, SessionFacts, SpawnPoint, TurnFacts
from ..store import Batch, DocumentFacts, utc_now
from . import fingerprint, sources, tail
from .cursor import Cursor

log = structlog.get_logger("agentsrc.ingest")

# Skip reason (a key of Cursor.skipped) for a line or document the adapter raised on:
# adapters do not catch their own bugs, ingest counts them here and goes on.
ADAPTER_ERROR = "adapter_error"


class DeriveStage(Protocol):
    def __call__(self, event: Event) -> list[Event]: ...

    def learn(self, facts: SessionFacts) -> None:
        """Session facts (the session's home) that later derivations use."""
        ...


class ScanStage(Protocol):
    def process(self, events: list[Event]) -> list[Event]:
        """Scan the events' contents, redact their stored text in place, and return the
        extra events (secrets, sensitive reads) to store beside them."""
        ...

    def redact_title(self, title: str) -> str | None:
        """A session title (taken from a prompt) as it may be stored."""
        ...


@dataclass(slots=True)
class FileRound:
    """What one pass over one file produced (for logs and progress)."""

    path: str
    bytes: int = 0
    reset: str | None = None
    more: bool = False
    gone: bool = False
    deferred: bool = False  # a line over BIG_LINE_BYTES is next: read it later


@dataclass
class Ingestor:
    max_line_bytes: int
    derive: DeriveStage | None = None
    scan: ScanStage | None = None
    project_root_for: Callable[[str], str] | None = None
    cursors: dict[str, Cursor] = field(default_factory=dict)
    defer_big_lines: bool = False  # set while a backfill worker runs (see ingest/workers.py)
    adapters: Mapping[str, Adapter] = field(default_factory=lambda: ADAPTERS)

    def cursor_for(self, spec: sources.SourceSpec) -> Cursor:
        c = self.cursors.get(spec.path)
        if c is None:
            c = self.cursors[spec.path] = Cursor(spec.path, spec.adapter, spec.mode)
        return c

    def needs_read(self, spec: sources.SourceSpec, st: os.stat_result) -> bool:
        """Cheap check from a stat (reconcile scans): does this file have news?"""
        c = self.cursors.get(spec.path)
        if c is None or c.gone_at is not None:
            return True
        if (st.st_dev, st.st_ino) != (c.dev, c.ino):
            return True
        if spec.mode == sources.JSONL:
            return st.st_size != c.offset or st.st_mtime_ns != c.mtime_ns
        return st.st_size != c.size or st.st_mtime_ns != c.mtime_ns

    def pending_bytes(self) -> int:
        return sum(
            max(0, (c.size or 0) - c.offset)
            for c in self.cursors.values()
            if c.mode == sources.JSONL and c.gone_at is None
        )

    # ---- one file ----------------------------------------------------------------

    def ingest(self, spec: sources.SourceSpec, batch: Batch, budget_bytes: int) -> FileRound:
        cursor = self.cursor_for(spec)
        if spec.mode == sources.JSONL:
            rnd = self._ingest_jsonl(spec, cursor, batch, budget_bytes)
        elif spec.mode == sources.DOCUMENT:
            rnd = self._ingest_document(spec, cursor, batch)
        else:
            rnd = self._ingest_memory(spec, cursor, batch)
        if rnd.gone:
            if cursor.gone_at is None:
                cursor.gone_at = utc_now()
                batch.cursors[spec.path] = cursor
                if spec.mode == sources.MEMORY:
                    batch.gone_documents.append(spec.path)
        elif cursor.gone_at is not None:
            cursor.gone_at = None
            batch.cursors[spec.path] = cursor
        return rnd

    def _ingest_jsonl(
        self, spec: sources.SourceSpec, cursor: Cursor, batch: Batch, budget: int
    ) -> FileRound:
        adapter = self.adapters[spec.adapter]
        rnd = FileRound(spec.path)
        start_offset = cursor.offset
        produced: list[Event] = []
        sessions_seen: set[str] = set()

        def on_line(line: tail.Line) -> None:
            if cursor.state is None:
                cursor.state = adapter.initial_state(spec.path)
            try:
                records = adapter.parse(line.obj, line.offset, spec.path, cursor.state)
            except Exception as exc:
                _count_adapter_error(cursor, exc, offset=line.offset)
                return
            prefix = f"{spec.path}@{line.offset}."
            for rec in records:
                self._route(rec, spec.path, prefix, line.crc, produced, sessions_seen, batch)

        result = tail.read_new_lines(
            spec.path,
            cursor,
            on_line,
            budget_bytes=budget,
            max_line_bytes=self.max_line_bytes,
            defer_big_lines=self.defer_big_lines,
        )
        rnd.deferred = result.deferred
        rnd.reset = result.reset
        rnd.more = result.more
        rnd.gone = result.gone
        if result.reset:
            log.info("source_reset", path=spec.path, reason=result.reset)
        rnd.bytes = max(0, cursor.offset - (0 if result.reset else start_offset))
        self._finish(produced, sessions_seen, spec.path, batch)
        if not result.gone:  # a vanished file's cursor is saved by ingest() (gone_at)
            batch.cursors[spec.path] = cursor
        return rnd

    def _route(
        self,
        rec: Any,
        path: str,
        prefix: str,
        crc: int,
        produced: list[Event],
        sessions_seen: set[str],
        batch: Batch,
    ) -> None:
        if isinstance(rec, Event):
            if rec.key.startswith(prefix):
                # Offset keys also carry the line's checksum, so a file rewritten with
                # different content at the same offsets is not mistaken for a duplicate.
                rec.key = f"{rec.key}#{crc:08x}"
            produced.append(rec)
            # A file is a source of the sessions it holds records of, not of the parent a
            # replay attributes its copied history to.
            sessions_seen.add(rec.holder or rec.session_id)
            if self.derive is not None:
                produced.extend(self.derive(rec))
        elif isinstance(rec, SessionFacts):
            if self.derive is not None:
                self.derive.learn(rec)
            if rec.title and self.scan is not None:
                rec.title = self.scan.redact_title(rec.title)
            batch.sessions.append(rec)
            if not rec.weak:
                sessions_seen.add(rec.session_id)
            if rec.cwd and self.project_root_for is not None:
                batch.project_roots.setdefault(rec.session_id, self.project_root_for(rec.cwd))
        elif isinstance(rec, TurnFacts):
            batch.turns.append(rec)
        elif isinstance(rec, Drift):
            batch.drift.append(rec)
        elif isinstance(rec, SpawnPoint):
            batch.spawns.append(rec)

    def _finish(
        self, produced: list[Event], sessions_seen: set[str], path: str, batch: Batch
    ) -> None:
        for ev in produced:
            text = ev.data.get("text")
            if isinstance(text, str) and len(text) > MAX_STORED_TEXT_CHARS:
                # Stored cut short; scanned whole (as content, in slices).
                ev.contents.append(("text", text))
                ev.data["text"] = text[:MAX_STORED_TEXT_CHARS]
                ev.data["text_chars"] = len(text)
                ev.data["text_truncated"] = True
        if produced and self.scan is not None:
            produced.extend(self.scan.process(produced))
        for ev in produced:
            # Derivation and scanning are done: drop what must never be stored, now,
            # rather than holding full tool outputs until the batch commits.
            ev.input = None
            ev.contents = []
            ev.spill_path = None
        batch.events.extend(produced)
        for sid in sessions_seen:
            batch.session_sources.add((sid, path))

    def _ingest_document(
        self, spec: sources.SourceSpec, cursor: Cursor, batch: Batch
    ) -> FileRound:
        rnd = FileRound(spec.path)
        data, st = tail.read_document(spec.path, self.max_line_bytes)
        if st is None:
            rnd.gone = True
            return rnd
        cursor.dev, cursor.ino, cursor.size, cursor.mtime_ns = (
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
        )
        batch.cursors[spec.path] = cursor
        if data is None:
            cursor.skipped[tail.OVERSIZE] = cursor.skipped.get(tail.OVERSIZE, 0) + 1
            return rnd
        digest = fingerprint.content_hash(data)
        if digest == cursor.head_hash:
            return rnd
        cursor.head_hash = digest
        cursor.head_len = 0  # documents are identified by their whole hash
        cursor.offset = len(data)
        rnd.bytes = len(data)
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            # A document caught mid-write: it will change again and be re-read.
            cursor.skipped[tail.MALFORMED] = cursor.skipped.get(tail.MALFORMED, 0) + 1
            cursor.head_hash = None
            return rnd
        adapter = self.adapters[spec.adapter]
        if cursor.state is None:
            # Kept across the document's versions (persisted with the cursor, as for a
            # JSONL file), so an adapter can tell what a rewrite added.
            cursor.state = adapter.initial_state(spec.path)
        try:
            records = adapter.parse_document(obj, spec.path, cursor.state)
        except Exception as exc:
            _count_adapter_error(cursor, exc)
            return rnd
        produced: list[Event] = []
        sessions_seen: set[str] = set()
        for rec in records:
            self._route(rec, spec.path, "\0", 0, produced, sessions_seen, batch)
        self._finish(produced, sessions_seen, spec.path, batch)
        return rnd

    def _ingest_memory(self, spec: sources.SourceSpec, cursor: Cursor, batch: Batch) -> FileRound:
        rnd = FileRound(spec.path)
        facts = tail.hash_file(spec.path)
        if facts is None:
            rnd.gone = True
            return rnd
        size, sha, mtime_ns = facts
        try:
            st = os.stat(spec.path)
            cursor.dev, cursor.ino = st.st_dev, st.st_ino
        except OSError:
            pass
        cursor.size, cursor.mtime_ns, cursor.offset = size, mtime_ns, size
        batch.cursors[spec.path] = cursor
        batch.documents.append(
            DocumentFacts(
                path=spec.path,
                agent=spec.adapter,
                project=sources.project_of_memory(spec),
                size=size,
                sha256=sha,
                mtime_ns=mtime_ns,
            )
        )
        rnd.bytes = size
        return rnd


def _count_adapter_error(cursor: Cursor, exc: Exception, offset: int | None = None) -> None:
    """An adapter bug must not stop ingest: the line (or document) is skipped and
    counted in the file's skip counters. Logged by exception type only: the message
    may quote the transcript."""
    cursor.skipped[ADAPTER_ERROR] = cursor.skipped.get(ADAPTER_ERROR, 0) + 1
    where = {} if offset is None else {"offset": offset}
    log.warning("adapter_error", path=cursor.path, **where, error=type(exc).__name__)
