"""The writer side of the store: one ``Store`` per daemon, used from the ingest thread.

The store knows nothing of agent formats. It is given ``Batch`` objects (normalized
records plus the cursors of the files they came from) and commits each in ONE
transaction, so a file's offset never runs ahead of, or behind, its events: a crash at
any instant loses nothing and duplicates nothing. Event keys are hashed into a UNIQUE
column and inserted with ``INSERT OR IGNORE``, so re-reading a file is idempotent. An
event emitted again with a higher ``Event.revision`` replaces the data stored for it.

A record held by several sessions (a replayed history, a copied conversation) is one
row, owned by the strongest claim made for its key (``Event.claim``, then the earliest
``claim_since``, then the smallest holder, sub-agent, source and offset): a stronger
claim arriving later moves the row, with its counters, to its session; every other
session holding it is remembered in ``event_copies``. The outcome is the same whatever
the order the claims arrive in.

Long on purpose (over 600 lines): one transaction's work on one connection (the rows, their claims, the
sessions' counters, the aggregates and the costs in step with them), whose parts share
the commit's keys and tallies; what stands apart is in its own modules (cursors, the
search index, the WAL, the aggregates' SQL, the costs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import apsw
import orjson

from ..cursor import Cursor
from ..events import (
    CLAIM_COPY,
    COMMAND,
    COMPACTION,
    ERROR,
    MESSAGE,
    PROMPT,
    TOOL_CALL,
    USAGE,
    TurnFacts,
)
from . import aggregates, costs, packing, wal
from .batch import Batch, Inserted, Row, coalesce_facts, prepare, utc_now
from .connection import connect, secure_file
from .cursors import CursorStore
from .migrations.runner import Progress, migrate
from .packing import pack
from .search_index import SearchIndex
from .session_rows import SessionRows, SessionTally
from .vocabulary import KEY_TABLES, USAGE_FIELDS, command_failed

# Session and turn keys the writer remembers (of each; then it starts over): the ids of
# the files being read, far more than a commit meets.
KEYS_REMEMBERED = 4096
# The writer's page cache once live (connection.WRITER_CACHE_KIB during a backfill).
LIVE_CACHE_KIB = 2 * 1024

_COUNTED_KINDS = {
    PROMPT: "prompts",
    MESSAGE: "messages",
    TOOL_CALL: "tool_calls",
    COMPACTION: "compactions",
    ERROR: "errors",
}


# A spawned sub-agent and the spawn point of its parent are linked when they are this
# close in time (the sub-agent's session begins as the parent enters the mode).
SPAWN_MATCH_SECONDS = 30

_STORED = (
    "SELECT e.id, e.session_id, e.holder, e.claim, e.claim_since, e.subagent_id, s.path,"
    " e.offset, e.revision, e.kind, e.data, e.turn_id, e.ts FROM events e"
    " JOIN sources s ON s.id = e.source_id WHERE e.key_hash = ?"
)
_KEEP = costs.KEEP


def claim_order(
    claim: int,
    since: str | None,
    holder: str,
    subagent_id: str | None,
    source_path: str,
    offset: int,
) -> tuple[Any, ...]:
    """Claims sorted strongest first: the higher rank, then the earlier ``since`` (a
    claim without one comes after any with one), then the smallest holder, sub-agent,
    source path and offset, so that two claims are never equal unless they are the same
    record read twice."""
    return (-claim, since is None, since or "", holder, subagent_id or "", source_path, offset)


class Store:
    """The writer side: one per daemon, used from the ingest thread only."""

    def __init__(
        self,
        db_path: Path,
        progress: Progress | None = None,
        *,
        search_index: bool = True,
        search_merge_pages: int | None = None,
        migrate_chunk_ids: int | None = None,
    ) -> None:
        """Opens the store and migrates it (``progress`` is told how a chunked migration
        advances). The keywords are config.Tuning's knobs for measuring and tests: no
        search index at all, a search merge step's pages, a chunked migration's chunk."""
        self.db_path = db_path
        old_umask = os.umask(0o077)
        try:
            self.conn = connect(db_path)
            migrate(self.conn, progress, migrate_chunk_ids or 0)
            self._wal = wal.WalBound(self.conn)
        finally:
            os.umask(old_umask)
        for suffix in ("", "-wal", "-shm"):
            secure_file(Path(str(db_path) + suffix))
        # The files' cursors, saved in the commits' transactions (and handed to the
        # Ingestor for what the start left in the store).
        self.cursors = CursorStore(self.conn)
        # The integer keys of session and turn ids (schema 16), as committed: emptied
        # when a commit fails (its new keys were rolled back with it).
        self._keys: dict[str, dict[str, int]] = {table: {} for table in KEY_TABLES}
        # The sessions' rows: facts, counters, times (what the latest commits read or
        # wrote of them remembered, as committed, like the keys).
        self.sessions = SessionRows(self.conn)
        # The full-text index's writes in the commits, its build and its merging.
        self.search_index = SearchIndex(self.conn, self._wal, on=search_index,
                                        merge_pages=search_merge_pages)
        # The costs of a commit's usage events (store/costs.py), priced by the function
        # ``pricing`` sets: a usage event a claim or a revision rewrote, one that came
        # without its cost, and the re-price.
        self._costs = costs.CommitCosts()

    def pricing(self, fingerprint: str, cost_of: costs.CostOf, *, at_start: bool) -> bool:
        """The prices from now on (their fingerprint, and the function that prices a
        stored usage event): when the stored costs were computed with other prices, a
        re-price begins (``reprice_step``). Whether one does."""
        self._costs.cost_of = cost_of
        return costs.begin_reprice(self.conn, fingerprint, at_start=at_start)

    def reprice_pending(self) -> bool:
        """Whether a re-price has events left (begun at start, or cut short by a stop)."""
        return costs.reprice_progress(self.conn) is not None

    def reprice_step(self, chunk: int) -> costs.Step:
        """A chunk of the re-price in its own transaction (store/costs.py): how many
        usage events it priced again, and whether more is left."""
        if self._costs.cost_of is None:
            return costs.Step(0, False)
        step = costs.reprice_step(self.conn, self._costs.cost_of, chunk)
        self._wal.check(self.conn)
        return step

    def close(self) -> None:
        self.conn.close()

    @property
    def wal_pages(self) -> int:
        """The frames in the WAL after the last commit (its WAL hook's count)."""
        return self._wal.pages

    @property
    def wal_due(self) -> bool:
        """The WAL holds a quarter of its bound: the next ``check_wal`` checkpoints it."""
        return self._wal.due

    def check_wal(self) -> None:
        """The WAL's bound kept after commits made with ``check_wal=False`` (the ingest
        loop runs it after publishing, when no live append waits for it)."""
        self._wal.check(self.conn)

    def truncate_wal(self) -> bool:
        """Checkpoint the whole WAL and truncate it to nothing (when idle). A reader in
        the middle of a transaction holds it: then give up at once (the ingest loop must
        not wait on readers) and say so; the caller tries again later (wal.truncate)."""
        return wal.truncate(self.conn)

    def shrink_cache(self) -> None:
        """Once live: the page cache a backfill filled is freed and kept small after
        (appends touch a few pages per commit; the OS keeps the file's pages cached)."""
        self.conn.execute(f"PRAGMA cache_size=-{LIVE_CACHE_KIB}")
        self.conn.execute("PRAGMA shrink_memory")

    # ---- the commit --------------------------------------------------------------

    def commit(self, batch: Batch, *, check_wal: bool = True, live: bool = False) -> Inserted:
        """Commit a batch in one transaction. Returns what was newly inserted (not
        ignored as already known); ``Inserted.rows()`` shapes it for subscribers.
        A full disk or an I/O error is raised as itself, the transaction rolled back.
        Then the WAL's bound is kept (a checkpoint when due), unless ``check_wal`` is
        False: the caller runs ``check_wal`` itself. ``live``: a commit of appends (its
        files' states are packed later: CursorStore.save)."""
        try:
            inserted = self._commit(batch, live)
        except apsw.SQLError as exc:
            self._rolled_back()
            # SQLite may roll a transaction back by itself on SQLITE_FULL or SQLITE_IOERR
            # (sqlite.org/lang_transaction.html#response_to_errors_within_a_transaction):
            # the context manager's ROLLBACK then fails with "no transaction is active",
            # hiding the error that matters.
            cause = exc.__context__
            if isinstance(cause, (apsw.FullError, apsw.IOError)) and self.conn.getautocommit():
                raise cause from None
            raise
        except BaseException:
            self._rolled_back()
            raise
        self.search_index.owe_merge()
        if check_wal:
            self._wal.check(self.conn)
        return inserted

    def _rolled_back(self) -> None:
        """What the writer remembers of a commit that did not happen is forgotten."""
        self.search_index.rolled_back()
        self.sessions.forget()
        for keys in self._keys.values():
            keys.clear()

    def _commit(self, batch: Batch, live: bool = False) -> Inserted:
        if batch.events:
            prepare(batch)
        with self.conn:
            for cursor in batch.cursors.values():
                self.cursors.source_id(cursor)
            for facts in coalesce_facts(batch.sessions):
                self.sessions.merge(facts)
                if facts.title is not None:
                    self.search_index.index_title(facts.session_id)
            for sid, root in batch.project_roots.items():
                self.sessions.set_project_root(sid, root)
            self._merge_turns(batch.turns)
            self._link_spawned(batch)
            for sid, adapter in {(r.session_id, r.adapter) for r in batch.rows} | {
                (r.holder, r.adapter) for r in batch.rows if r.holder
            }:
                # Events can arrive before any facts about their session (a subagent
                # file read before its parent): the row must exist for the counters.
                native = sid.split(":", 1)[1] if sid.startswith(adapter + ":") else sid
                self.sessions.ensure(sid, adapter, native)
            tally: dict[str, SessionTally] = {}
            inserted = self._insert_events(batch, tally)
            self.sessions.apply_tally(tally)
            self.search_index.add(inserted.events)
            if inserted:
                self.conn.execute(
                    "UPDATE counters SET value = value + ? WHERE name = 'events'",
                    (len(inserted),),
                )
            for session_id, path in batch.session_sources:
                src = self.cursors.source_ids.get(path)
                if src is not None:
                    self.sessions.link_source(session_id, src)
            self._write_drift_and_documents(batch)
            for cursor in batch.cursors.values():
                self.cursors.save(cursor, live=live)
        return inserted

    def _write_drift_and_documents(self, batch: Batch) -> None:
        """A batch's record types an adapter did not know, what became of the records it
        read (fidelity), and its memory documents (in the commit's transaction)."""
        for d in batch.drift:
            self.conn.execute(
                "INSERT INTO drift(adapter, version, record_type, count, last_seen)"
                " VALUES(?,?,?,1,?) ON CONFLICT(adapter, version, record_type)"
                " DO UPDATE SET count=count+1, last_seen=excluded.last_seen",
                (d.adapter, d.version, d.record_type, utc_now()),
            )
        for (adapter, version, record_type), counts in batch.fidelity.items():
            self.conn.execute(
                "INSERT INTO fidelity(adapter, version, record_type, read, events, ignored,"
                " folded, not_understood, last_seen) VALUES(?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(adapter, version, record_type) DO UPDATE SET read=read+excluded.read,"
                " events=events+excluded.events, ignored=ignored+excluded.ignored,"
                " folded=folded+excluded.folded,"
                " not_understood=not_understood+excluded.not_understood,"
                " last_seen=excluded.last_seen",
                (adapter, version, record_type, sum(counts), *counts, utc_now()),
            )
        for doc in batch.documents:
            self.conn.execute(
                "INSERT INTO documents(path, agent, project, size, sha256, mtime_ns,"
                " gone_at, updated_at) VALUES(?,?,?,?,?,?,NULL,?) ON CONFLICT(path) DO UPDATE"
                " SET size=excluded.size, sha256=excluded.sha256, mtime_ns=excluded.mtime_ns,"
                " gone_at=NULL, updated_at=excluded.updated_at",
                (doc.path, doc.agent, doc.project, doc.size, doc.sha256, doc.mtime_ns, utc_now()),
            )
        for path in batch.gone_documents:
            self.conn.execute(
                "UPDATE documents SET gone_at=? WHERE path=? AND gone_at IS NULL",
                (utc_now(), path),
            )

    def _link_spawned(self, batch: Batch) -> None:
        """Sub-agents that know only what kind they are (``spawned_as``) get as parent
        the session that entered that mode in the same cwd closest to their start
        (within SPAWN_MATCH_SECONDS; ties to the smaller id). Recomputed whenever a
        spawn point or such a sub-agent arrives, so the order does not matter."""
        for p in batch.spawns:
            self.conn.execute(
                "INSERT OR IGNORE INTO spawn_points(session_id, kind, at, cwd) VALUES(?,?,?,?)",
                (p.session_id, p.kind, p.at, p.cwd),
            )
        if not batch.spawns and not any(f.spawned_as for f in batch.sessions):
            return
        distance = "abs(julianday(p.at) - julianday(sessions.started_at)) * 86400.0"
        self.conn.execute(
            "UPDATE sessions SET parent_session_id = (SELECT p.session_id FROM spawn_points p"
            " WHERE p.kind = sessions.spawned_as AND p.cwd IS sessions.cwd"
            f" AND p.session_id != sessions.id AND {distance} <= ?"
            f" ORDER BY {distance}, p.session_id LIMIT 1)"
            " WHERE spawned_as IS NOT NULL AND started_at IS NOT NULL",
            (SPAWN_MATCH_SECONDS,),
        )
        self.sessions.parents_linked()

    def _merge_turns(self, turns: list[TurnFacts]) -> None:
        """The batch's turn facts, in order, in one statement (a live prompt brings two:
        23 us each, one at a time)."""
        if not turns:
            return
        session_keys = self._keys_of("session_keys", {t.session_id for t in turns})
        turn_keys = self._keys_of("turn_keys", {t.turn_id for t in turns})
        self.conn.executemany(
            "INSERT INTO turn_rows(session_key, turn_key, started_at, ended_at, status, cwd,"
            " model) VALUES(?,?,?,?,?,?,?) ON CONFLICT(session_key, turn_key) DO UPDATE SET"
            " started_at=COALESCE(turn_rows.started_at, excluded.started_at),"
            " ended_at=COALESCE(excluded.ended_at, turn_rows.ended_at),"
            " status=COALESCE(excluded.status, turn_rows.status),"
            " cwd=COALESCE(turn_rows.cwd, excluded.cwd),"
            " model=COALESCE(excluded.model, turn_rows.model)",
            [(session_keys[t.session_id], turn_keys[t.turn_id], t.started_at, t.ended_at,
              t.status, t.cwd, t.model) for t in turns],
        )

    def _insert_events(self, batch: Batch, tally: dict[str, SessionTally]) -> Inserted:
        """Insert a batch with one executemany; the rows that were new (not ignored as
        already known) are read back by id. A row whose key was known is a claim on the
        stored event: see ``_claim``. The rows' packed data is unpacked from their JSON
        meanwhile (packing.known): the indexes on json_extract(data) read every row."""
        with packing.known((r.packed, r.data) for r in batch.rows
                           if r.packed[:1] == packing.PACKED_V1):
            return self._insert_rows(batch, tally)

    # Over 60 lines: the fast path (every row new: their ids known without a read) and
    # the read-back path share the keys and the counter built at its top.
    def _insert_rows(self, batch: Batch, tally: dict[str, SessionTally]) -> Inserted:
        prepared = batch.rows
        if not prepared:
            return Inserted([])
        # AUTOINCREMENT's counter: new ids start right after it.
        row = self.conn.execute(
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'event_rows'), 0)"
        ).fetchone()
        before = int(row[0]) if row else 0
        source_ids = self.cursors.source_ids
        for r in prepared:
            if r.source_path not in source_ids:
                self.cursors.source_id(Cursor(r.source_path, r.adapter, "jsonl"))
        session_keys = self._keys_of("session_keys", {r.session_id for r in prepared})
        turn_keys = self._keys_of("turn_keys", {r.turn_id for r in prepared})
        adapter_keys = self._keys_of("adapter_keys", {r.adapter for r in prepared})
        changes_before = self.conn.total_changes()
        self.conn.executemany(
            "INSERT OR IGNORE INTO event_rows(key_hash, session_id, kind, ts, turn_id, tool,"
            " call_id, subagent_id, adapter, offset, path, packed, revision, claim, claim_since,"
            " holder, source_id, session_key, turn_key, adapter_key)"
            " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                r.bind(source_ids[r.source_path], session_keys[r.session_id],
                       None if r.turn_id is None else turn_keys[r.turn_id],
                       adapter_keys[r.adapter])
                for r in prepared
            ],
        )
        copies: list[tuple[int, str, str | None, str | None]] = []
        self._costs.pending = {}
        if self.conn.total_changes() - changes_before == len(prepared):
            # Every row was new: one writer, AUTOINCREMENT, so their ids are consecutive
            # in insertion order and nothing needs to be read back (the common case).
            inserted = [(before + 1 + i, r) for i, r in enumerate(prepared)]
            for eid, r in inserted:
                self._count(r.session_id, r.kind, r.data, tally, 1)
                self._touch(r, tally)
                if r.holder:
                    copies.append((eid, r.holder, r.turn_id, r.subagent_id))
                if r.kind == USAGE:
                    self._costs.new(eid, r)
            self._add_copies(copies)
            self._aggregate_new(prepared, before, rewritten=False)
            return Inserted(inserted)
        new_ids = {
            kh: eid
            for eid, kh in self.conn.execute(
                "SELECT id, key_hash FROM events WHERE id > ?", (before,)
            )
        }
        out: list[tuple[int, Row]] = []
        rewritten = False
        for r in prepared:
            self._touch(r, tally)
            eid = new_ids.pop(r.key_hash, None)  # pop: a key twice in one batch is new once
            if eid is None:
                rewritten |= self._claim(r, tally, copies, before)
                continue
            self._count(r.session_id, r.kind, r.data, tally, 1)
            if r.holder:
                copies.append((eid, r.holder, r.turn_id, r.subagent_id))
            if r.kind == USAGE:
                self._costs.new(eid, r)
            out.append((eid, r))
        self._add_copies(copies)
        self._aggregate_new(prepared, before, rewritten)
        return Inserted(out)

    def _keys_of(self, table: str, ids: set[str | None]) -> dict[str, int]:
        """The integer keys of session or turn ids or adapters (``table``: one of
        vocabulary.KEY_TABLES),
        each made when first met (None, an event without a turn, has none: ``get``
        gives it None). A commit meets a few ids; the keys of the latest are remembered
        (KEYS_REMEMBERED)."""
        known = self._keys[table]
        out: dict[str, int] = {}
        for text_id in ids:
            if text_id is None:
                continue
            key = known.get(text_id)
            if key is None:
                # Made first (a live prompt's turn is new; one statement), read when it
                # was there (RETURNING gives no row for a conflict).
                row = self.conn.execute(
                    f"INSERT INTO {table}(id) VALUES(?) ON CONFLICT(id) DO NOTHING RETURNING key",
                    (text_id,),
                ).fetchone() or self.conn.execute(
                    f"SELECT key FROM {table} WHERE id = ?", (text_id,)
                ).fetchone()
                assert row is not None  # made by the INSERT, or found
                key = int(row[0])
                if len(known) >= KEYS_REMEMBERED:
                    known.clear()
                known[text_id] = key
            out[text_id] = key
        return out

    def _aggregate_new(self, rows: list[Row], before: int, rewritten: bool) -> None:
        """The reports' aggregates (store/aggregates.py) take the rows this commit
        inserted, as they stand after its claims (a key twice in one batch is one row,
        owned by the stronger claim), with their costs, and lose the keys a rewrite
        emptied."""
        self._costs.flush(self.conn)
        kinds = frozenset(r.kind for r in rows) & aggregates.AGGREGATED_KINDS
        if kinds:
            aggregates.add_range(self.conn, before, None, kinds)
        if rewritten:
            aggregates.drop_empty(self.conn)

    # Over 60 lines: a weaker and a stronger claim read the same stored row (twelve
    # values) and end the same way; apart, each half would take them all.
    def _claim(
        self,
        r: Row,
        tally: dict[str, SessionTally],
        copies: list[tuple[int, str, str | None, str | None]],
        before: int,
    ) -> bool:
        """A row whose key is already stored. A stronger claim takes the stored event
        over (its session, holder, turn, sub-agent, time and provenance; the data of the
        highest revision) and moves its counters; the holder it displaces keeps a copy.
        A weaker or equal one leaves it, keeps a copy when it is another session's, and
        still brings a higher revision's data (a message that grew, see
        ``Event.revision``). Nothing is counted twice, and subscribers are not told:
        they were given the event when it was inserted. Returns whether it rewrote a row
        committed before this batch (whose share of the aggregates then moved; a row this
        batch inserted is aggregated once the batch's claims are done)."""
        self._add_copies(copies)  # an earlier row of this batch may have made one
        copies.clear()
        stored = self.conn.execute(_STORED, (r.key_hash,)).fetchone()
        if stored is None:
            return False
        (eid, owner, s_holder, s_claim, s_since, s_sub, s_path, s_offset, s_rev, s_kind,
         s_data, s_turn, s_ts) = stored
        s_holder = s_holder or owner
        holder = r.holder or r.session_id
        stronger = claim_order(
            r.claim, r.claim_since, holder, r.subagent_id, r.source_path, r.offset
        ) < claim_order(s_claim, s_since, s_holder, s_sub, s_path, s_offset)
        aggregated = eid <= before and s_kind in aggregates.AGGREGATED_KINDS
        if not stronger:
            if r.revision > s_rev:
                self._rewrite_event(
                    eid, s_kind, aggregated,
                    "UPDATE event_rows SET packed=?, revision=? WHERE id=?",
                    (r.packed, r.revision, eid),
                    self._costs.after(r, r.data, s_ts, s_ts) if s_kind == USAGE else _KEEP,
                )
                self.search_index.reindex(eid, r)
                self._count(owner, s_kind, s_data, tally, -1)
                self._count(owner, r.kind, r.data, tally, 1)
            if holder != owner:
                copies.append((eid, holder, r.turn_id, r.subagent_id))
            return aggregated and r.revision > s_rev
        data, revision = (r.data, r.revision) if r.revision >= s_rev else (s_data, s_rev)
        packed = r.packed if data is r.data else pack(data)
        self._count(owner, s_kind, s_data, tally, -1)
        self._count(r.session_id, r.kind, data, tally, 1)
        self._rewrite_event(
            eid, s_kind, aggregated,
            "UPDATE event_rows SET session_key=?, holder=?, claim=?, claim_since=?,"
            " subagent_id=?, turn_key=?, ts=?, source_id=?, offset=?, packed=?, revision=?"
            " WHERE id=?",
            (self._keys_of("session_keys", {r.session_id})[r.session_id], r.holder, r.claim,
             r.claim_since, r.subagent_id,
             None if r.turn_id is None else self._keys_of("turn_keys", {r.turn_id})[r.turn_id],
             r.ts, self.cursors.source_ids[r.source_path], r.offset, packed, revision, eid),
            self._costs.after(r, data, r.ts, s_ts) if s_kind == USAGE else _KEEP,
        )
        if revision == r.revision and r.data != s_data:
            self.search_index.reindex(eid, r)
        self.conn.execute(
            "DELETE FROM event_copy_rows WHERE event_id=? AND session_key=?",
            (eid, self._keys_of("session_keys", {r.session_id})[r.session_id]),
        )
        if s_holder != r.session_id:
            copies.append((eid, s_holder, s_turn, s_sub))
        if holder != r.session_id:
            copies.append((eid, holder, r.turn_id, r.subagent_id))
        return aggregated

    def _rewrite_event(
        self,
        eid: int,
        kind: str,
        aggregated: bool,
        sql: str,
        args: tuple[Any, ...],
        cost: costs.CostRow | None = _KEEP,
    ) -> None:
        """An UPDATE of a stored event (and of its cost, a usage event's, unless
        ``_KEEP``); when the reports' aggregates count it, its share is taken out before
        and added back after, as the row now stands. An event this commit inserted is
        not aggregated yet: its cost waits with the others (costs.CommitCosts)."""
        if aggregated:
            aggregates.remove_event(self.conn, eid, kind)
        self.conn.execute(sql, args)
        self._costs.rewritten(self.conn, eid, cost, aggregated)
        if aggregated:
            aggregates.add_range(self.conn, eid - 1, eid, frozenset([kind]))

    def _add_copies(self, copies: list[tuple[int, str, str | None, str | None]]) -> None:
        if copies:
            sessions = self._keys_of("session_keys", {c[1] for c in copies})
            turns = self._keys_of("turn_keys", {c[2] for c in copies})
            self.conn.executemany(
                "INSERT OR IGNORE INTO event_copy_rows(event_id, session_key, turn_key,"
                " subagent_id) VALUES(?,?,?,?)",
                [
                    (eid, sessions[sid], None if turn is None else turns[turn], sub)
                    for eid, sid, turn, sub in copies
                ],
            )

    def _count(
        self, sid: str, kind: str, data: bytes, tally: dict[str, SessionTally], sign: int
    ) -> None:
        """Add (or, ``sign`` -1, take back) an event's share of its session's counters;
        applied once per batch."""
        column = _COUNTED_KINDS.get(kind)
        if column is None and kind != USAGE and kind != COMMAND:
            return
        t = tally.get(sid)
        if t is None:
            t = tally[sid] = SessionTally()
        if column:
            t.counts[column] = t.counts.get(column, 0) + sign
            return
        if kind == COMMAND:
            if command_failed(orjson.loads(data)):
                t.counts["failed_commands"] = t.counts.get("failed_commands", 0) + sign
            return
        payload = orjson.loads(data)
        for f in USAGE_FIELDS:
            v = payload.get(f)
            if isinstance(v, int) and not isinstance(v, bool):
                t.counts[f] = t.counts.get(f, 0) + sign * v

    def _touch(self, r: Row, tally: dict[str, SessionTally]) -> None:
        """What every claim tells its session whether or not it owns the event: its
        sub-agents and, unless it is a copy of another session's record, its times."""
        t = tally.get(r.session_id)
        if t is None:
            t = tally[r.session_id] = SessionTally()
        if r.subagent_id:
            t.subagents.add(r.subagent_id)
        ts = r.ts
        if ts and r.claim != CLAIM_COPY:
            if t.first_ts is None or ts < t.first_ts:
                t.first_ts = ts
            if t.last_ts is None or ts > t.last_ts:
                t.last_ts = ts
