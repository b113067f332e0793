"""The search index's upkeep on the writer's connection (store/search.py says what is
indexed and how; the Reader's store/queries/search.py reads it).

``SearchIndex`` is held by the ``Store``. It writes each commit's events and titles in
the commit's transaction; builds, in id-ranged chunks of their own transactions, the
index of the events stored before it existed (or left to it by a cold backfill:
``defer``); and merges its segments in small steps the ingest loop runs when no append
waits, paced by FTS5's own rule (store/search_merge.py)."""

from __future__ import annotations

import time

import apsw

from .batch import Row
from .search import INDEXED_KINDS, body_of, index_text
from .search_merge import STRUCTURE_ROWID, Structure, StructureError, decode_structure
from .wal import WalBound

# Event ids indexed per transaction by the index build (build_step): about 60 ms
# of work on a loaded 2-core machine, so an append waits for little while it runs.
SEARCH_CHUNK_IDS = 5_000
SEARCH_CHUNK_TEXT_BYTES = 4 << 20  # and at most about this much text
# Pages of the search index merged per step (merge_step): about 6 ms of CPU,
# what an append that arrives during one waits at most.
SEARCH_MERGE_PAGES = 64
# The structure record is read and decoded (in Python: a few varints per segment, 0.13 ms
# on a small index, more while segments wait for their merge) at most this often while
# commits stream in; the leaves the commits in between wrote are counted at once.
MEASURE_EVERY_S = 0.1
_INDEXED = frozenset(INDEXED_KINDS)


class SearchIndex:
    """The full-text index's writes, build and merging; the writer's ``wal`` bound is
    kept after each build step (a transaction of its own)."""

    def __init__(
        self, conn: apsw.Connection, wal: WalBound, *, on: bool = True,
        merge_pages: int | None = None, measure_every_s: float = MEASURE_EVERY_S,
    ) -> None:
        self.conn = conn
        self._wal = wal
        self._done, self._target = self._progress()
        # Off only to measure what the index costs (bench/run.py backfill-index).
        self._on = on
        self._deferred = False  # see defer
        # The search index's merging (store/search_merge.py): pages owed, the leaves
        # the structure held when last read, and whether this transaction wrote to it.
        self._merge_owed = 0
        structure = self.structure()
        self._leaves = structure.leaves if structure is not None else 0
        self._written = False
        # Transactions that wrote to the index since the structure was last read, and when
        # that was (measure_every_s: 0 reads it after each, as tests of the pacing do).
        self._unmeasured = 0
        self._measured_at = time.monotonic()
        self.measure_every_s = measure_every_s
        self.merges = 0  # steps that merged, for tests and the bench
        # A step's pages (config.Tuning: smaller steps, for tests).
        self.merge_pages = merge_pages or SEARCH_MERGE_PAGES

    def _progress(self) -> tuple[int, int]:
        values = dict(
            self.conn.execute(
                "SELECT name, value FROM counters WHERE name IN ('search_done', 'search_target')"
            )
        )
        return int(values.get("search_done", 0)), int(values.get("search_target", 0))

    # ---- in the commit's transaction ---------------------------------------------

    def _is_indexed(self, event_id: int) -> bool:
        """Events stored before the index existed are indexed by the build, in id order;
        every event stored since is indexed by its commit."""
        return event_id > self._target or event_id <= self._done

    def add(self, events: list[tuple[int, Row]]) -> None:
        """A commit's new events: indexed, or, while the index is deferred, left to the
        build."""
        if self._deferred:
            self._extend_backlog(events)
        else:
            self._index_events(events)

    def _index_events(self, events: list[tuple[int, Row]]) -> None:
        if not self._on:
            return
        values = []
        for eid, r in events:
            if r.kind not in _INDEXED:
                continue
            body = body_of(r.kind, r.tool, r.path, r.data)
            if body:
                values.append((eid, index_text(body)))
        if values:
            self.conn.executemany("INSERT INTO search_index(rowid, body) VALUES(?,?)", values)
            self._written = True

    def reindex(self, event_id: int, r: Row) -> None:
        """The indexed text follows the event's latest version."""
        if r.kind in _INDEXED and self._is_indexed(event_id):
            self.conn.execute("DELETE FROM search_index WHERE rowid=?", (event_id,))
            self._written = True
            self._index_events([(event_id, r)])

    def index_title(self, session_id: str) -> None:
        """A session's title, indexed under minus its search_titles id when it changed."""
        if not self._on:
            return
        row = self.conn.execute("SELECT title FROM sessions WHERE id=?", (session_id,)).fetchone()
        title = row[0] if row else None
        known = self.conn.execute(
            "SELECT id, title FROM search_titles WHERE session_id=?", (session_id,)
        ).fetchone()
        if known is not None and known[1] == title:
            return
        if known is None:
            got = self.conn.execute(
                "INSERT INTO search_titles(session_id, title) VALUES(?,?) RETURNING id",
                (session_id, title),
            ).fetchone()
            assert got is not None
            tid = int(got[0])
        else:
            tid = int(known[0])
            self.conn.execute("UPDATE search_titles SET title=? WHERE id=?", (title, tid))
            self.conn.execute("DELETE FROM search_index WHERE rowid=?", (-tid,))
        if title:
            self.conn.execute(
                "INSERT INTO search_index(rowid, body) VALUES(?,?)", (-tid, index_text(title))
            )
        self._written = True

    def rolled_back(self) -> None:
        """The commit did not happen: it wrote nothing to the index."""
        self._written = False

    # ---- the build -----------------------------------------------------------------

    def defer(self) -> bool:
        """A cold backfill: from now on commits leave their events to the index build
        (``build_step``, run once nothing is pending), which indexes them in
        id-ranged chunks: the backfill does not pay for the index on the daemon's thread,
        and the index is the same once built. Each commit moves the build's target in its
        own transaction, so a crash leaves a backlog the next start builds. Only when no
        build is pending (the chunks' high-water mark must cover every id before the
        first deferred one). Returns whether the index is deferred."""
        if not self._on or self._deferred or self.backlog():
            return self._deferred
        row = self.conn.execute(
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'event_rows'), 0)"
        ).fetchone()
        last = int(row[0]) if row else 0
        with self.conn:
            self.conn.execute(
                "UPDATE counters SET value=? WHERE name IN ('search_done', 'search_target')",
                (last,),
            )
        self._done = self._target = last
        self._deferred = True
        return True

    def end_deferral(self) -> None:
        """Commits index their events again (the build still owes the deferred ones)."""
        self._deferred = False

    def _extend_backlog(self, events: list[tuple[int, Row]]) -> None:
        """A deferred commit: its events join the build's backlog (ids only grow)."""
        if not events:
            return
        last = events[-1][0]
        if last > self._target:
            self.conn.execute("UPDATE counters SET value=? WHERE name='search_target'", (last,))
            self._target = last

    def backlog(self) -> bool:
        """Events stored before the search index existed that it does not hold yet."""
        return self._done < self._target

    @property
    def build_left(self) -> int:
        """Event ids the build has still to index (0 when it holds them all)."""
        return max(0, self._target - self._done)

    def build_step(self, chunk: int = SEARCH_CHUNK_IDS) -> bool:
        """Index the next id range of the events stored before the index existed, in its
        own transaction with the high-water mark (so a kill -9 resumes where the last
        committed chunk ended). The first step indexes the sessions' titles. Returns
        whether more remains."""
        if not self.backlog():
            return False
        lo = self._done
        hi = min(lo + chunk, self._target)
        with self.conn:
            titles = self.conn.execute(
                "SELECT value FROM counters WHERE name = 'search_titles_done'"
            ).fetchone()
            if titles is not None and not titles[0]:
                for (sid,) in list(
                    self.conn.execute(
                        "SELECT id FROM sessions WHERE title IS NOT NULL"
                        " AND id NOT IN (SELECT session_id FROM search_titles)"
                    )
                ):
                    self.index_title(sid)
                self.conn.execute("UPDATE counters SET value=1 WHERE name='search_titles_done'")
            hi = self._index_range(lo, hi)
            self.conn.execute("UPDATE counters SET value=? WHERE name='search_done'", (hi,))
        self.owe_merge()
        self._wal.check(self.conn)
        self._done = hi
        return self.backlog()

    def _index_range(self, lo: int, hi: int) -> int:
        """The indexed events with ids lo+1..hi written to the index, up to about
        SEARCH_CHUNK_TEXT_BYTES of text; returns the last id the chunk covers."""
        kinds = ",".join(f"'{k}'" for k in INDEXED_KINDS)
        values = []
        text_bytes = 0
        for eid, kind, tool, path, data in self.conn.execute(
            f"SELECT id, kind, tool, path, data FROM events WHERE id > ? AND id <= ?"
            f" AND kind IN ({kinds}) ORDER BY id",
            (lo, hi),
        ):
            body = body_of(kind, tool, path, data)
            if body:
                text = index_text(body)
                values.append((eid, text))
                text_bytes += len(text)
                if text_bytes >= SEARCH_CHUNK_TEXT_BYTES:
                    # Long texts: the chunk ends here, its postings a few MiB of WAL
                    # (5,000 texts of 12 KB made one transaction of 85 MiB).
                    hi = eid
                    break
        if values:
            self.conn.executemany("INSERT INTO search_index(rowid, body) VALUES(?,?)", values)
            self._written = True
        return hi

    # ---- merging (store/search_merge.py) -------------------------------------------

    def structure(self) -> Structure | None:
        """The index's structure record, decoded (None: a format this code does not know,
        from a later SQLite)."""
        row = self.conn.execute(
            "SELECT block FROM search_index_data WHERE id = ?", (STRUCTURE_ROWID,)
        ).fetchone()
        if row is None:
            return Structure(0, 0, 0)  # nothing indexed yet
        try:
            return decode_structure(bytes(row[0]))
        except StructureError:
            return None

    def owe_merge(self) -> None:
        """After a transaction: what it owes the search index's merging, by FTS5's own
        rule (levels x leaves written; its segments are written at commit). A structure
        this code cannot read owes a step per write (a little more merging than FTS5's)."""
        if not self._written:
            return
        self._written = False
        self._unmeasured += 1
        self.measure_if_due()

    def measure_if_due(self) -> None:
        """``measure`` once ``measure_every_s`` passed since the last reading."""
        if self._unmeasured and time.monotonic() - self._measured_at >= self.measure_every_s:
            self.measure()

    def measure_due_at(self) -> float | None:
        """When the writes not measured yet are due to be (on time.monotonic's clock;
        None: none wait): an idle loop wakes for it."""
        return self._measured_at + self.measure_every_s if self._unmeasured else None

    def measure(self) -> None:
        """The leaves the transactions since the last reading wrote, owed now (before a
        merge step, and when the ingest loop asks whether one is due)."""
        if not self._unmeasured:
            return
        writes, self._unmeasured = self._unmeasured, 0
        self._measured_at = time.monotonic()
        structure = self.structure()
        if structure is None:
            self._merge_owed += self.merge_pages * writes
            return
        written = structure.leaves - self._leaves
        self._leaves = structure.leaves
        if written > 0:
            self._merge_owed += written * structure.levels

    @property
    def merge_due(self) -> bool:
        """The writes since the last merge step owe at least one step's pages."""
        return self._merge_owed >= self.merge_pages

    @property
    def merge_owed(self) -> int:
        """Pages of merging the search index's writes owe (store/search_merge.py)."""
        return self._merge_owed

    def merge_step(self, pages: int | None = None) -> bool:
        """About ``pages`` (default ``merge_pages``) pages of merging of the search
        index's segments, in a transaction of its own (store/search_merge.py: FTS5's
        automerge is off since schema 15, and the ingest loop runs this when no append
        waits). FTS5 merges a level once it holds ``usermerge`` (4) segments, resuming a
        merge it left half done; a step that finds no such level writes nothing and
        clears the debt. Returns whether it merged."""
        pages = pages or self.merge_pages
        self.measure()  # what was written before counts at the leaves it wrote
        with self.conn:
            before = self.conn.total_changes()
            self.conn.execute(
                "INSERT INTO search_index(search_index, rank) VALUES('merge', ?)", (pages,)
            )
            # The command counts as one change of its own; a merge's writes add theirs.
            merged = self.conn.total_changes() - before > 1
        structure = self.structure()  # the merge's leaves are not a write's
        if structure is not None:
            self._leaves = structure.leaves
        if merged:
            self.merges += 1
            self._merge_owed = max(0, self._merge_owed - pages)
        else:
            self._merge_owed = 0
        return merged
