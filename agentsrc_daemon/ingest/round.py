"""Ingest of one source: tail -> adapter -> derive -> scan -> price -> a Batch for the store.

This is the glue between the pure stages (adapters, derivation, scanning) and the
readers. It holds the in-memory cursors; the daemon commits each Batch (events and the
cursors that cover them) in one transaction. Per mode (sources.py):

* ``jsonl``: the tail-reader (tail.py), at most ``budget_bytes`` per round;
* ``document``: the whole file, when its hash changed, with the adapter's state kept
  across versions (so a rewrite costs what changed);
* ``sqlite``: one poll of the database's reader per round (``DB_READERS``: an
  ``AgentDB`` over OpenCode's or Crush's tables, at most 500 rows and ``budget_bytes`` of
  data; a Cursor chat's ``meta`` table), its reader cursor kept in ``Cursor.state`` beside
  the adapter's state and committed with the records; a busy database is retried later
  (``FileRound.retry_after``);
* ``text``: complete lines from where the last final record ended (or the record
  re-opened), with the companions' lines, handed to the adapter's ``parse_text_stream``
  (ingest/text_tail.py, ``_ingest_text``); a last record still open is emitted once the
  file has been quiet for ``text_tail.QUIET_S``, and the round asks to be run again then;
* ``memory``: size and hash only.

Sidecars (``sources.sidecar_of``: Gemini ``.project_root``, Copilot ``workspace.yaml``)
are read here, with the transcript they describe, and their text handed to the adapter's
``read_sidecar``: it seeds the adapter's state and its records follow the transcript's
own. A database's rows go to the adapter's ``parse_rows``. Both are optional methods of
the adapter protocol (``adapters.sidecar_reader``, ``adapters.row_reader``): no adapter
is named here, and the adapters never read a file.

Long on purpose (over 600 lines): one round's reading of each source mode (jsonl,
document, sqlite, text, memory) by the Ingestor that holds the files' states; the modes
share its state cache, the cursors and the batch. The reading beneath each mode is in
modules of its own (tail.py, text_tail.py, agent_db.py).
"""

from __future__ import annotations

import functools
import os
import stat as stat_mod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

import orjson
import structlog

from ..adapters import (
    ADAPTERS,
    FILE_TIME,
    FOLDER_CWD,
    Adapter,
    final_lines,
    folder_namer,
    record_kind,
    row_reader,
    sidecar_reader,
    text_reader,
    text_stream_reader,
    times_from_file,
)
from ..cursor import SIDECAR_KEY, Cursor
from ..cursor_table import CursorTable, peek, peek_items
from ..events import (
    MAX_STORED_TEXT_CHARS,
    TRANSIENT_KINDS,
    Drift,
    Event,
    Record,
    SessionFacts,
    SpawnPoint,
    TurnFacts,
)
from ..store import Batch, DocumentFacts, utc_now
from ..store.batch import tally_record
from ..store.cursors import CursorStore
from . import fingerprint, sources, tail, text_tail
from .agent_db import AgentDB
from .cursor_db import CursorChatDB
from .db_schemas import SCHEMAS
from .folders import resolve_encoded
from .open_files import OpenFiles

log = structlog.get_logger("agentsrc.ingest")

# Skip reason (a key of Cursor.skipped) for a line or document the adapter raised on:
# adapters do not catch their own bugs, ingest counts them here and goes on.
ADAPTER_ERROR = "adapter_error"

# The ingest layer's own entry in the adapter state of a source with a sidecar
# (cursor.SIDECAR_KEY): the sidecar's stat when it was read, and what it said that later
# rounds still need.
MAX_SIDECAR_BYTES = 64 * 1024
# A busy or locked database is polled again after this long, doubling up to the cap.
BUSY_RETRY_S = 0.1
BUSY_RETRY_MAX_S = 5.0
# The sqlite mode's Cursor.state: {"adapter": <adapter state>, "reader": <reader cursor>};
# the text mode's: {"adapter": <adapter state>, "text": <where it reads from>}.
ADAPTER_STATE = text_tail.ADAPTER_STATE
READER_CURSOR = "reader"

Stat = list[int]  # [dev, ino, size, mtime_ns]: JSON-friendly, compared as a whole
# Adapter states kept decoded in memory: the most recently read files' (live sessions
# append to a few files; the others' states wait in the store: Ingestor.committed).
KEPT_STATES = 64

# The reader of each agent's databases (the sqlite mode), by adapter: one per database
# file, kept open between rounds; ``poll(cursor) -> PollResult`` and ``changed()``
# (agent_db). OpenCode's and Crush's keyset tables are their DbSchema (db_schemas.py).
DB_READERS: dict[str, Callable[..., AgentDB]] = {
    **{adapter: partial(AgentDB, schema=schema) for adapter, schema in SCHEMAS.items()},
    "cursor": CursorChatDB,
}


def _seed(adapter: Adapter, path: str, state: dict[str, Any], mtime_ns: int | None) -> None:
    """What ingest tells an adapter before it reads a file (adapters/__init__.py): the
    file's modification time, for an agent that writes no times; the directory its
    cwd-named folder stands for, looked up once per file."""
    if times_from_file(adapter) and mtime_ns is not None:
        when = datetime.fromtimestamp(mtime_ns // 1_000_000 / 1000, tz=UTC)
        state[FILE_TIME] = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    namer = folder_namer(adapter)
    if namer is not None and FOLDER_CWD not in state:
        folder = namer.project_folder(path)
        state[FOLDER_CWD] = resolve_encoded(folder) if folder else None


@functools.lru_cache(maxsize=1024)
def _sidecar_of(spec: sources.SourceSpec) -> str | None:
    """sources.sidecar_of, asked on every round of a file (a Gemini chat's live line
    paid 6% of its round for the path's joins and splits): the same spec (a frozen
    record), the same sidecar."""
    return sources.sidecar_of(spec)


def _stat(path: str) -> Stat | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _read_small(path: str) -> str | None:
    """A sidecar's text, or None (missing, not a regular file, too large, not UTF-8)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_SIDECAR_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_SIDECAR_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


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
    retry_after: float | None = None  # busy (a locked database): try again in this many s
    unchanged: bool = False  # nothing moved: the store's cursor is this one (not in the batch)


def _persisted(c: Cursor) -> tuple[Any, ...]:
    """What the store keeps of a JSONL file's cursor, but its state (which only a line,
    a reset or a sidecar moves)."""
    return (c.dev, c.ino, c.size, c.mtime_ns, c.offset, c.head_len, c.head_hash, c.skipping,
            c.generation, c.lines, tuple(c.skipped.items()), c.state is None)


@dataclass
class Ingestor:
    max_line_bytes: int
    derive: DeriveStage | None = None
    scan: ScanStage | None = None
    project_root_for: Callable[[str], str] | None = None
    # The pricing stage (pricing/stage.py): a usage event's cost set on it.
    price: Callable[[Event], None] | None = None
    # Every file's cursor; the daemon's a CursorTable (packed until the file is read).
    cursors: MutableMapping[str, Cursor] = field(default_factory=dict)
    defer_big_lines: bool = False  # set while a backfill worker runs (see ingest/workers.py)
    adapters: Mapping[str, Adapter] = field(default_factory=lambda: ADAPTERS)
    # The sqlite mode's readers, one per database, kept open between polls (their
    # connection's data_version tells a commit apart from nothing), and which of them
    # were caught up at their last poll.
    readers: dict[str, AgentDB] = field(default_factory=dict)
    caught_up: set[str] = field(default_factory=set)
    busy: dict[str, float] = field(default_factory=dict)  # path -> the next retry delay
    # The store's cursors (the Store's, set by the daemon): a cursor's state left in the
    # store at start (Cursor.state_in_store) is fetched by its source id
    # (``load_state``), and the cursors of files marked gone, left there at start too
    # (most never come back), by path: ``known_cursor`` asks for a path that has no
    # cursor in memory, so a file seen again carries on from its old cursor (its
    # offset, its identity, its generation) as if it had been loaded.
    cursor_store: CursorStore | None = None
    # The files whose adapter states are kept decoded, the most recently read last
    # (KEPT_STATES of them), and the files read since their cursor was last committed
    # (their state in memory is ahead of the store's): see ``committed``.
    kept: OrderedDict[str, None] = field(default_factory=OrderedDict)
    uncommitted: set[str] = field(default_factory=set)
    # The heads of the files read last, so a read checks its file's identity without
    # hashing its head again (fingerprint.HeadCache).
    heads: fingerprint.HeadCache = field(default_factory=lambda: fingerprint.HeadCache(KEPT_STATES))
    # The files read last, kept open: a live append's round stats its file's path
    # instead of opening, checking and closing it (open_files.py).
    files: OpenFiles = field(default_factory=lambda: OpenFiles(KEPT_STATES))

    def take_over(self, old: Ingestor) -> None:
        """Carry on from ``old`` (a reload builds new stages): its cursors and readers."""
        self.cursors = old.cursors
        self.cursor_store = old.cursor_store
        self.kept, self.uncommitted = old.kept, old.uncommitted
        self.defer_big_lines = old.defer_big_lines
        self.readers, self.caught_up, self.busy = old.readers, old.caught_up, old.busy
        self.heads, self.files = old.heads, old.files
        old.files = OpenFiles(0)  # handed over: the old ingestor closes none of them

    def restore(self, path: str, cursor: Cursor | None) -> None:
        """Back to a committed cursor (None: nothing committed) after a commit of this
        file's round failed, so its next round reads the same lines again."""
        if cursor is None:
            self.cursors.pop(path, None)
        else:
            self.cursors[path] = cursor
        self.caught_up.discard(path)
        self.uncommitted.discard(path)  # the store's own cursor

    def close(self) -> None:
        for db in self.readers.values():
            db.close()
        self.readers.clear()
        self.caught_up.clear()
        self.files.close()

    def known_cursor(self, path: str) -> Cursor | None:
        """The path's cursor: the one in memory, or a gone file's fetched from the store
        (then kept in memory); None for a path never seen."""
        c = self.cursors.get(path)
        if c is None and self.cursor_store is not None:
            c = self.cursor_store.gone_cursor(path)
            if c is not None:
                self.cursors[path] = c
        return c

    def cursor_for(self, spec: sources.SourceSpec) -> Cursor:
        c = self.known_cursor(spec.path)
        if c is None:
            c = self.cursors[spec.path] = Cursor(spec.path, spec.adapter, spec.mode)
        return c

    def load_state(self, cursor: Cursor) -> None:
        """The cursor's adapter state, fetched from the store if it was left there at
        start, and decoded (before a round, here or in a worker)."""
        if cursor.state_in_store:
            if self.cursor_store is None or cursor.source_id is None:
                raise RuntimeError(f"no way to read the state of {cursor.path} from the store")
            cursor.state_json = self.cursor_store.state(cursor.source_id)
            cursor.state_in_store = False
        cursor.load_state()
        self.uncommitted.add(cursor.path)  # a round moves it on from here
        self.kept[cursor.path] = None
        self.kept.move_to_end(cursor.path)
        while len(self.kept) > KEPT_STATES:
            old, _ = self.kept.popitem(last=False)
            if old not in self.uncommitted:
                self._release_state(old)  # else at its commit

    def committed(self, paths: Iterable[str]) -> None:
        """The store now holds these files' cursors. A file's state not among the
        KEPT_STATES most recently read goes back to the store (``load_state`` reads it
        again when the file is read: 0.1 ms): the live daemon's memory stays its live
        sessions', not every file a backfill read (a state is about 10 KB decoded: 26 MB
        for 2,479 files after a backfill)."""
        for path in paths:
            self.uncommitted.discard(path)
            if path not in self.kept:
                self._release_state(path)

    def _release_state(self, path: str) -> None:
        c = peek(self.cursors, path)  # a packed cursor holds no state: nothing to release
        if (self.cursor_store is None or c is None or c.state_in_store or c.source_id is None
                or c.mode == sources.SQLITE
                or (c.state is None and c.state_json is None)):
            return  # nothing held, or no row in the store to read it from
        if c.state is None:
            c.load_state()  # a worker's cursor holds its state encoded
        # The reconcile compares a sidecar's stat with the signature the state keeps.
        c.sidecar_sig = _sidecar_held(c).get("sig")
        c.state, c.state_json, c.state_in_store = None, None, True
        if isinstance(self.cursors, CursorTable):
            # Committed, its state in the store: the file is not being read (its next
            # round takes the cursor again), so it goes back to its packed form.
            self.cursors.cool(path)

    def needs_read(self, spec: sources.SourceSpec, st: os.stat_result) -> bool:
        """Cheap check from a stat (reconcile scans): does this file have news?"""
        c = peek(self.cursors, spec.path)  # a look: a packed cursor stays packed
        if c is None or c.gone_at is not None:
            return True
        if spec.mode == sources.SQLITE:
            # Two stats and one pragma on the open reader; a first poll after a start.
            db = self.readers.get(spec.path)
            if db is None or spec.path not in self.caught_up:
                return True
            return db.changed()
        if (st.st_dev, st.st_ino) != (c.dev, c.ino):
            return True
        sidecar = sources.sidecar_of(spec)
        if sidecar is not None:
            # The signature is kept in the state; read alone at start (Cursor.sidecar_sig).
            held = c.sidecar_sig if c.state_in_store else _sidecar_held(c).get("sig")
            if _stat(sidecar) != held:
                return True
        if spec.mode in (sources.JSONL, sources.TEXT):
            return st.st_size != c.offset or st.st_mtime_ns != c.mtime_ns
        return st.st_size != c.size or st.st_mtime_ns != c.mtime_ns

    def pending_bytes(self, paths: Iterable[str] | None = None) -> int:
        """The bytes left to read in every known file, or only in ``paths`` (a live
        daemon asks about its queue: a sum over 40,000 cursors costs 90 ms)."""
        if paths is None:
            cursors: Iterable[Cursor] = (c for _, c in peek_items(self.cursors))
        else:
            cursors = (c for c in (peek(self.cursors, p) for p in paths) if c is not None)
        return sum(
            max(0, (c.size or 0) - c.offset)
            for c in cursors
            if c.mode in (sources.JSONL, sources.TEXT) and c.gone_at is None
        )

    # ---- one file ----------------------------------------------------------------

    def ingest(
        self,
        spec: sources.SourceSpec,
        batch: Batch,
        budget_bytes: int,
        stop: Callable[[], bool] | None = None,
        max_events: int | None = None,
    ) -> FileRound:
        """One round of a source. A JSONL round ends early, after a line, once ``stop()``
        says so or once its lines gave ``max_events`` events (so a round of tiny lines
        is not one commit of tens of thousands)."""
        cursor = self.cursor_for(spec)
        # Whether the store holds this very cursor (it has a row, and no round of it waits
        # for a commit): then a round that moves nothing adds nothing to the batch.
        held = (cursor.source_id is None or spec.path in batch.cursors
                or spec.path in self.uncommitted)
        self.load_state(cursor)  # read and decoded only for files read
        if spec.mode == sources.JSONL:
            rnd = self._ingest_jsonl(spec, cursor, batch, budget_bytes, stop, max_events,
                                     as_stored=None if held else _persisted(cursor))
            if rnd.unchanged:
                self.uncommitted.discard(spec.path)  # the store's cursor is this one
        elif spec.mode == sources.DOCUMENT:
            rnd = self._ingest_document(spec, cursor, batch)
        elif spec.mode == sources.SQLITE:
            rnd = self._ingest_sqlite(spec, cursor, batch, budget_bytes)
        elif spec.mode == sources.TEXT:
            rnd = self._ingest_text(spec, cursor, batch, budget_bytes)
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
        self,
        spec: sources.SourceSpec,
        cursor: Cursor,
        batch: Batch,
        budget: int,
        stop: Callable[[], bool] | None = None,
        max_events: int | None = None,
        as_stored: tuple[Any, ...] | None = None,
    ) -> FileRound:
        """A JSONL source from its offset: the tail-reader's complete lines through the
        adapter, at most ``budget`` bytes (or ``max_events``). Long on purpose: the per-line
        callback and what the tail-reader's result means for the cursor (a reset, deferred big
        lines, a sidecar) share one file's round. ``as_stored``: the cursor's persisted
        values when the store holds them as they are; a round that leaves them so (a
        write's second notice, its close, finds nothing new) is ``unchanged``, its cursor
        not in the batch: no commit for nothing."""
        adapter = self.adapters[spec.adapter]
        rnd = FileRound(spec.path)
        start_offset = cursor.offset
        produced: list[Event] = []
        if max_events is not None:
            asked = stop

            def stop() -> bool:
                return len(produced) >= max_events or (asked is not None and asked())

        sessions_seen: set[str] = set()
        titled = False
        # The sidecar's records, routed after the lines'.
        side_changed, side = self._sidecar(spec, cursor)
        st = _stat(spec.path) if times_from_file(adapter) else None
        mtime_ns = st[3] if st is not None else None
        if cursor.state is not None:
            _seed(adapter, spec.path, cursor.state, mtime_ns)

        def on_line(line: tail.Line) -> None:
            nonlocal titled
            if cursor.state is None:  # a new file, or one the tail-reader just reset
                cursor.state = adapter.initial_state(spec.path)
                _seed(adapter, spec.path, cursor.state, mtime_ns)
                side.extend(self._sidecar(spec, cursor)[1])
            try:
                records = adapter.parse(line.obj, line.offset, spec.path, cursor.state)
            except Exception as exc:
                _count_adapter_error(cursor, exc, offset=line.offset)
                _tally(batch, spec.adapter, adapter, line.obj, cursor.state, None)
                return
            _tally(batch, spec.adapter, adapter, line.obj, cursor.state, records)
            prefix = f"{spec.path}@{line.offset}."
            for rec in records:
                if isinstance(rec, SessionFacts) and rec.title:
                    titled = True
                self._route(rec, spec.path, prefix, line.crc, produced, sessions_seen, batch)

        result = tail.read_new_lines(  # by position: budget, max line, defer big lines,
            spec.path,                 # stop, final line, heads, files
            cursor,
            on_line,
            budget,
            self.max_line_bytes,
            self.defer_big_lines,
            stop,
            final_lines(adapter),
            self.heads,
            self.files,
        )
        rnd.deferred = result.deferred
        rnd.reset = result.reset
        rnd.more = result.more
        rnd.gone = result.gone
        if result.reset:
            log.info("source_reset", path=spec.path, reason=result.reset)
        rnd.bytes = max(0, cursor.offset - (0 if result.reset else start_offset))
        if titled and not any(isinstance(r, SessionFacts) and r.title for r in side):
            side += _sidecar_title(cursor)
        for rec in side:
            self._route(rec, spec.path, "\0", 0, produced, sessions_seen, batch)
        self._finish(produced, sessions_seen, spec.path, batch)
        if result.gone:  # a vanished file's cursor is saved by ingest() (gone_at)
            return rnd
        if (as_stored is not None and not produced and not side and not side_changed
                and result.reset is None and _persisted(cursor) == as_stored):
            rnd.unchanged = True
        else:
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
            if (rec.cwd and self.project_root_for is not None
                    and rec.session_id not in batch.project_roots):  # the first one stays
                batch.project_roots[rec.session_id] = self.project_root_for(rec.cwd)
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
        price = self.price
        transient = False
        for ev in produced:
            if ev.kind in TRANSIENT_KINDS:
                transient = True  # made for the scan alone (what a model was sent)
                continue
            if price is not None:
                price(ev)
            # Derivation and scanning are done: drop what must never be stored, now,
            # rather than holding full tool outputs until the batch commits.
            ev.input = None
            if ev.contents:
                ev.contents = []
            ev.spill_path = None
        if transient:  # dropped; their findings are kept
            produced[:] = [ev for ev in produced if ev.kind not in TRANSIENT_KINDS]
        batch.events.extend(produced)
        for sid in sessions_seen:
            batch.session_sources.add((sid, path))

    def _ingest_document(self, spec: sources.SourceSpec, cursor: Cursor, batch: Batch) -> FileRound:
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
            cursor.count_skip(tail.OVERSIZE)
            return rnd
        side_changed, side = self._sidecar(spec, cursor)
        digest = fingerprint.content_hash(data)
        if digest == cursor.head_hash and not side_changed:
            # Unchanged (a sidecar that changed makes the adapter look again: the new
            # cwd then reaches the session's facts).
            return rnd
        cursor.head_hash = digest
        cursor.head_len = 0  # documents are identified by their whole hash
        cursor.offset = len(data)
        rnd.bytes = len(data)
        adapter = self.adapters[spec.adapter]
        texts = text_reader(adapter) if sources.text_document(spec) else None
        obj: Any = None
        if texts is None:
            try:
                obj = orjson.loads(data)
            except orjson.JSONDecodeError:
                # A document caught mid-write: it will change again and be re-read.
                cursor.count_skip(tail.MALFORMED)
                cursor.head_hash = None
                return rnd
        if cursor.state is None:
            # Kept across the document's versions (persisted with the cursor, as for a
            # JSONL file), so an adapter can tell what a rewrite added.
            cursor.state = adapter.initial_state(spec.path)
        _seed(adapter, spec.path, cursor.state, st.st_mtime_ns)
        try:
            if texts is not None:
                # Undecodable bytes become U+FFFD: a text transcript is never refused.
                obj = data.decode("utf-8", "replace")  # what the fidelity tally names, too
                records = texts.parse_text(obj, spec.path, cursor.state)
            else:
                records = adapter.parse_document(obj, spec.path, cursor.state)
        except Exception as exc:
            _count_adapter_error(cursor, exc)
            _tally(batch, spec.adapter, adapter, obj, cursor.state, None)
            return rnd
        _tally(batch, spec.adapter, adapter, obj, cursor.state, records)
        produced: list[Event] = []
        sessions_seen: set[str] = set()
        for rec in records:
            self._route(rec, spec.path, "\0", 0, produced, sessions_seen, batch)
        self._finish(produced, sessions_seen, spec.path, batch)
        return rnd

    # ---- sidecars ----------------------------------------------------------------

    def _sidecar(self, spec: sources.SourceSpec, cursor: Cursor) -> tuple[bool, list[Record]]:
        """Read the source's sidecar when it changed since its stat was recorded in the
        adapter state (or the state is new): seed the state, and return (changed, its
        records). The stat goes into the state, so it is committed with the cursor."""
        path = _sidecar_of(spec)
        if path is None:
            return False, []
        adapter = self.adapters[spec.adapter]
        reader = sidecar_reader(adapter)
        if reader is None:
            return False, []
        if cursor.state is None:
            cursor.state = adapter.initial_state(spec.path)
        sig = _stat(path)
        if SIDECAR_KEY in cursor.state and sig == _sidecar_held(cursor).get("sig"):
            return False, []
        held: dict[str, Any] = {"sig": sig}
        records: list[Record] = []
        text = _read_small(path) if sig is not None else None
        if text is not None:
            records = reader.read_sidecar(text, path, cursor.state)
            for rec in records:
                if isinstance(rec, SessionFacts):
                    # Kept: the sidecar's title wins over the first prompt's whenever a
                    # round emits that one (see _ingest_jsonl, _sidecar_title).
                    held["session"] = [rec.session_id, rec.native_id]
                    held["title"] = rec.title
        cursor.state[SIDECAR_KEY] = held
        return True, records

    # ---- databases -----------------------------------------------------------------

    def _ingest_sqlite(
        self, spec: sources.SourceSpec, cursor: Cursor, batch: Batch, budget: int
    ) -> FileRound:
        """One poll of an agent's database: what changed since the reader cursor, at
        most ``budget`` bytes of data. The reader cursor and the adapter state are
        committed with the records, in ``Cursor.state``. Long on purpose: a gone, busy,
        replaced or reset database each leave the cursor their own way, in one place."""
        rnd = FileRound(spec.path)
        path = spec.path
        db = self.readers.get(path)
        if db is None:
            db = self.readers[path] = DB_READERS[spec.adapter](path, max_bytes=budget)
        elif path in self.caught_up and path not in self.busy and not db.changed():
            return rnd  # woken by our own read mark in -shm, or a stat with no commit
        held = cursor.state if isinstance(cursor.state, dict) else {}
        result = db.poll(held.get(READER_CURSOR))
        if result.gone:
            db.close()
            del self.readers[path]
            self.caught_up.discard(path)
            self.busy.pop(path, None)
            rnd.gone = True
            return rnd
        if result.busy:
            # Locked (a writer in rollback mode, a WAL recovery): nothing was read and
            # the cursor is unchanged. The loop goes on with other files meanwhile.
            delay = self.busy.get(path, BUSY_RETRY_S)
            self.busy[path] = min(BUSY_RETRY_MAX_S, delay * 2)
            rnd.retry_after = delay
            log.info("source_busy", path=path, retry_s=delay)
            return rnd
        self.busy.pop(path, None)
        for reason, n in result.errors.items():
            cursor.count_skip(reason, n)
        adapter_state = held.get(ADAPTER_STATE)
        if result.reset:
            fingerprint.reset_cursor(cursor)  # a new generation, a fresh adapter state
            rnd.reset = result.reset
            log.info("source_reset", path=path, reason=result.reset)
            adapter_state = None
        adapter = self.adapters[spec.adapter]
        reader = row_reader(adapter)
        if reader is None:
            raise RuntimeError(f"the {spec.adapter} adapter reads no database rows ({path})")
        if not isinstance(adapter_state, dict):
            adapter_state = adapter.initial_state(path)
        produced: list[Event] = []
        sessions_seen: set[str] = set()
        for page in result.pages:
            records = reader.parse_rows(page.table, page.rows, path, adapter_state)
            _tally_rows(batch, spec.adapter, page.table, len(page.rows), adapter_state, records)
            for rec in records:
                self._route(rec, path, "\0", 0, produced, sessions_seen, batch)
        self._finish(produced, sessions_seen, path, batch)
        cursor.state = {ADAPTER_STATE: adapter_state, READER_CURSOR: result.cursor}
        cursor.lines += result.rows
        st = _stat(path)
        if st is not None:
            cursor.dev, cursor.ino, cursor.size, cursor.mtime_ns = st
        # offset == size says "caught up at that size", as for the other modes.
        size = cursor.size or 0
        cursor.offset = size if not result.more else min(cursor.offset, size)
        rnd.more = result.more
        if result.more:
            self.caught_up.discard(path)
        else:
            self.caught_up.add(path)
        batch.cursors[path] = cursor
        return rnd

    # ---- text sources ----------------------------------------------------------------

    def _ingest_text(
        self, spec: sources.SourceSpec, cursor: Cursor, batch: Batch, budget: int
    ) -> FileRound:
        """One read of a text source and its companions (ingest/text_tail.py): the
        adapter's final records, the positions it reached committed with them."""
        reader = text_stream_reader(self.adapters[spec.adapter])
        if reader is None:
            raise RuntimeError(f"the {spec.adapter} adapter reads no text sources ({spec.path})")
        rnd = FileRound(spec.path)
        try:
            got = text_tail.read_source(spec, cursor, self.adapters[spec.adapter], reader,
                                        budget, self.max_line_bytes)
        except Exception as exc:  # the adapter's: counted, the source goes on later
            _count_adapter_error(cursor, exc)
            batch.cursors[spec.path] = cursor
            return rnd
        if got is None:
            rnd.gone = True
            return rnd
        if got.reset:
            rnd.reset = got.reset
            log.info("source_reset", path=spec.path, reason=got.reset)
        produced: list[Event] = []
        sessions_seen: set[str] = set()
        _tally_text(batch, spec.adapter, self.adapters[spec.adapter], got.read, cursor.state)
        for rec in got.records:
            self._route(rec, spec.path, "\0", 0, produced, sessions_seen, batch)
        self._finish(produced, sessions_seen, spec.path, batch)
        rnd.bytes, rnd.more, rnd.retry_after = got.bytes, got.more, got.retry_after
        batch.cursors[spec.path] = cursor
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


def _sidecar_held(cursor: Cursor) -> dict[str, Any]:
    state = cursor.load_state()
    held = state.get(SIDECAR_KEY) if isinstance(state, dict) else None
    return held if isinstance(held, dict) else {}


def _sidecar_title(cursor: Cursor) -> list[Record]:
    """The sidecar's title again (Copilot's summary, or the name the user gave), after
    a round whose lines titled the session from its first prompt: the sidecar's wins."""
    held = _sidecar_held(cursor)
    title, session = held.get("title"), held.get("session")
    if not (isinstance(title, str) and title and isinstance(session, list) and len(session) == 2):
        return []
    return [SessionFacts(str(session[0]), cursor.adapter, str(session[1]), title=title)]


# store/batch.py's OUTCOMES, by index.
EVENTS, IGNORED, FOLDED, NOT_UNDERSTOOD = range(4)


def _tally(
    batch: Batch,
    name: str,
    adapter: Adapter,
    obj: Any,
    state: dict[str, Any] | None,
    records: list[Record] | None,
) -> None:
    """Count a record read in the batch's fidelity tally by what became of it: not
    understood (the adapter reported drift, or failed: ``records`` None), events, ignored
    on purpose (its type is on the adapter's lists), else folded (read into the file's
    state or the session's facts, or a twin already counted)."""
    version, record_type, ignored = record_kind(adapter, obj, state)
    if records is None:
        outcome = NOT_UNDERSTOOD
    else:
        outcome = IGNORED if ignored else FOLDED
        for rec in records:  # one pass, run for every line read
            kind = type(rec)
            if kind is Drift:
                outcome = NOT_UNDERSTOOD
                break
            if kind is Event:
                outcome = EVENTS
    tally_record(batch.fidelity, name, version, record_type, outcome)


def _tally_rows(
    batch: Batch, name: str, table: str, rows: int, state: dict[str, Any], records: list[Record]
) -> None:
    """A database page of ``rows`` rows of ``table``, counted as records ``row/<table>``:
    as many not understood as the page reported drift, the rest events when the page
    gave any, else folded (a page's records are not told apart by row)."""
    version = state.get("version")
    key = (name, version if isinstance(version, str) and version else "unknown", f"row/{table}")
    drift = sum(1 for r in records if type(r) is Drift)
    rest = EVENTS if any(type(r) is Event for r in records) else FOLDED
    for _ in range(min(drift, rows)):
        tally_record(batch.fidelity, *key, NOT_UNDERSTOOD)
    for _ in range(rows - min(drift, rows)):
        tally_record(batch.fidelity, *key, rest)


def _tally_text(
    batch: Batch, name: str, adapter: Adapter, read: list[dict[str, Any]], state: Any
) -> None:
    """The final records of a text source's read (``TextRead.read``), each counted by
    what became of it, named by the adapter's ``record_kind``."""
    adapter_state = state.get(ADAPTER_STATE) if isinstance(state, dict) else None
    for obj in read:
        version, record_type, ignored = record_kind(adapter, obj, adapter_state)
        if obj.get("drift"):
            outcome = NOT_UNDERSTOOD
        elif obj.get("events"):
            outcome = EVENTS
        else:
            outcome = IGNORED if ignored else FOLDED
        tally_record(batch.fidelity, name, version, record_type, outcome)


def _count_adapter_error(cursor: Cursor, exc: Exception, offset: int | None = None) -> None:
    """An adapter bug must not stop ingest: the line (or document) is skipped and
    counted in the file's skip counters. Logged by exception type only: the message
    may quote the transcript."""
    cursor.count_skip(ADAPTER_ERROR)
    where = {} if offset is None else {"offset": offset}
    log.warning("adapter_error", path=cursor.path, **where, error=type(exc).__name__)
