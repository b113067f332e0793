"""search.query's hits: ranked (best first) or recent (newest first), with their
filters, scores and the rows a page shows. The query language and the indexed text
are store/search.py's; ranking beyond the caps store/ranked.py's; the candidates of a
ranked listing's first page are kept for its later pages by store/listings.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import orjson

from ..listings import RankedListing, RankedListings
from ..ranked import Cut, estimate_weights
from ..search import TITLE_KIND, snippet
from ..where import Where

# Ranking: BM25 (higher is better) divided by 1 + age in days / RECENCY_DAYS, so a hit
# RECENCY_DAYS old weighs half as much as one from now. An event without a time counts
# as a year old.
RECENCY_DAYS = 30.0

# A search hit's event (NULL for a title's hit) and its session's text id ``ek.id``,
# joined from the rows: the ``events`` view is itself a join, and SQLite cannot put a
# join view on the right of a LEFT JOIN without reading all of it (schema 16).
EVENT_HIT_JOINS = (
    " LEFT JOIN event_rows e ON f.rowid > 0 AND e.id = f.rowid"
    " LEFT JOIN session_keys ek ON ek.key = e.session_key"
)


_MIN_ROWID = -(2**63)  # below every index rowid (a title's is minus its search_titles id)


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """search.query's filters, as conditions on the joins each statement has."""

    agent: str | None
    project: str | None
    session_id: str | None
    kinds: Sequence[str] | None
    since_ts: str | None
    until_ts: str | None

    def events_on(self) -> bool:
        return not self.kinds or any(k != TITLE_KIND for k in self.kinds)

    def titles_on(self) -> bool:
        return not self.kinds or TITLE_KIND in self.kinds

    def recent_where(self, where: Where) -> None:
        """Over a hit's event ``e`` (NULL for a title) and session ``s``."""
        if self.session_id:
            where.add("s.id = ?", self.session_id)
        if self.agent:
            where.add("s.agent = ?", self.agent)
        if self.project:
            where.add(
                "(s.project_root = ? OR s.cwd = ? OR json_extract(e.data, '$.project_root') = ?)",
                self.project, self.project, self.project,
            )
        if self.kinds:
            where.add(f"COALESCE(e.kind, '{TITLE_KIND}') IN ({','.join('?' * len(self.kinds))})",
                      *self.kinds)
        if self.since_ts:
            where.add("COALESCE(e.ts, s.last_event_at) >= ?", self.since_ts)
        if self.until_ts:
            where.add("COALESCE(e.ts, s.last_event_at) < ?", self.until_ts)

    def event_where(self, where: Where) -> bool:
        """Over an event hit ``e``; True when the conditions need its session ``s``."""
        joined = False
        if self.session_id:
            where.add("e.session_id = ?", self.session_id)
        if self.agent:
            where.add("s.agent = ?", self.agent)
            joined = True
        if self.project:
            where.add(
                "(s.project_root = ? OR s.cwd = ? OR json_extract(e.data, '$.project_root') = ?)",
                self.project, self.project, self.project,
            )
            joined = True
        kinds = [k for k in self.kinds or () if k != TITLE_KIND]
        if kinds:
            where.add(f"e.kind IN ({','.join('?' * len(kinds))})", *kinds)
        if self.since_ts:
            where.add("COALESCE(e.ts, s.last_event_at) >= ?", self.since_ts)
            joined = True
        if self.until_ts:
            where.add("COALESCE(e.ts, s.last_event_at) < ?", self.until_ts)
            joined = True
        return joined

    def title_where(self, where: Where) -> None:
        """Over a title hit's session ``s`` (a title has no event: no event's project,
        its session's last event for its time)."""
        if self.session_id:
            where.add("s.id = ?", self.session_id)
        if self.agent:
            where.add("s.agent = ?", self.agent)
        if self.project:
            where.add("(s.project_root = ? OR s.cwd = ?)", self.project, self.project)
        if self.since_ts:
            where.add("s.last_event_at >= ?", self.since_ts)
        if self.until_ts:
            where.add("s.last_event_at < ?", self.until_ts)


@dataclass(frozen=True, slots=True)
class Searcher:
    """One search over a Reader's connection, in its read transaction: the candidates
    of a capped listing per kind of hit (``candidates`` event hits, ``title_candidates``
    title hits: store/ranked.py), and the process-wide ranked listings it reads and
    fills (store/listings.py), keyed by the database's path among the rest."""

    conn: apsw.Connection
    db_path: str
    candidates: int
    title_candidates: int
    listings: RankedListings

    def _nth_event_hits(self, match: str, upto: int, n: int) -> list[int]:
        """The index rowids of the query's n-th and (n+1)-th newest event hits up to
        ``upto``, as many as exist: two when it has more than n. Index rows alone, no
        join: a walk of n + 1 rowids."""
        return [int(r) for (r,) in self.conn.execute(
            "SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid BETWEEN 1"
            " AND ? ORDER BY rowid DESC LIMIT 2 OFFSET ?", (match, upto, n - 1))]

    def recent(
        self, match: str, filters: SearchFilters, upto: int, now: str,
        after: tuple[float, int] | None, limit: int,
    ) -> list[tuple[Any, ...]]:
        """Newest first: FTS5 reads the query's hits from the newest index row down,
        joined as it goes, until the page is full. The order needs no score; each hit's
        ``rank`` is told all the same, by bm25() when the query has at most
        ``candidates`` event hits, else by agentsrc_rank with estimated idfs (as a
        capped ranked listing scores): bm25()'s idf pass alone counts every hit (13 ms
        of a 14 ms page for a word with 225,000 hits at 10 million events)."""
        n = self.candidates
        nth = self._nth_event_hits(match, upto, n)
        weights = estimate_weights(self.conn, match, upto, n, nth[0]) if len(nth) == 2 else None
        now_jd = self._julianday(now)
        score, score_args = self._score(weights, "COALESCE(e.ts, s.last_event_at)")
        where = Where()
        where.add("search_index MATCH ?", match)
        where.add("f.rowid <= ?", upto)
        filters.recent_where(where)
        inner = (
            "SELECT f.rowid AS rid, s.id AS sid, s.title AS title, s.agent AS agent,"
            f" COALESCE(e.kind, '{TITLE_KIND}') AS kind, COALESCE(e.ts, s.last_event_at) AS ts,"
            f" et.id AS turn_id, e.tool AS tool, e.path AS path, e.data AS data, {score} AS score"
            f" FROM search_index f{EVENT_HIT_JOINS}"
            " LEFT JOIN turn_keys et ON et.key = e.turn_key"
            " LEFT JOIN search_titles t ON f.rowid < 0 AND t.id = -f.rowid"
            " JOIN sessions s ON s.id = COALESCE(ek.id, t.session_id)"
            f"{where.sql()}"
        )
        args: list[Any] = [*score_args, now_jd, now_jd, RECENCY_DAYS, *where.args]
        outer = "SELECT * FROM (" + inner + ")"
        if after is not None:
            outer += " WHERE rid < ?"
            args.append(after[1])
        outer += " ORDER BY rid DESC LIMIT ?"
        args.append(limit)
        return list(self.conn.execute(outer, args))

    def ranked(
        self, match: str, filters: SearchFilters, upto: int, now: str,
        after: tuple[float, int] | None, limit: int, cut: Cut | None, first: bool,
    ) -> tuple[list[tuple[Any, ...]], Cut | None, int]:
        """Best first: score the candidates (every hit, or a capped listing's newest),
        sort them here, then read the page's rows alone (an event's data is unpacked
        for the page, not for every candidate)."""
        n, nt = self.candidates, self.title_candidates
        if not first:  # a later page: the listing's candidates as its first page scored them
            listing = self.listings.get(self._listing_key(match, filters, upto, now, cut))
            if listing is not None:
                return self._hit_rows(listing.page(after, limit)), cut, listing.ranked_over
        events_on = filters.events_on()
        titles_on = filters.titles_on()
        if first:
            # Does the index hold more than the cap of either kind of hit? Index rows
            # alone, no join: a walk of n + 1 rowids (the n-th and the one after).
            nth = self._nth_event_hits(match, upto, n) if events_on else []
            big = len(nth) == 2 or (titles_on and self.conn.execute(
                "SELECT 1 FROM search_index WHERE search_index MATCH ? AND rowid < 0"
                " ORDER BY rowid LIMIT 1 OFFSET ?", (match, nt)).fetchone() is not None)
            if big:
                weights = estimate_weights(self.conn, match, upto, n, nth[0] if nth else None)
                events = self._ranked_events(match, filters, now, weights, 1, upto, n + 1)
                titles = self._ranked_titles(match, filters, now, weights, _MIN_ROWID, -1, nt + 1)
                capped = len(events) > n or len(titles) > nt
                events, titles = events[:n], titles[:nt]
                cut = Cut(
                    event_floor=events[-1][0] if len(events) == n else 1,
                    title_lo=titles[0][0] if titles else 0,
                    title_hi=titles[-1][0] if len(titles) == nt else -1,
                    weights=weights,
                    capped=capped,
                )
        if cut is None:  # every hit, by bm25
            events = self._ranked_events(match, filters, now, None, 1, upto, None)
            titles = self._ranked_titles(match, filters, now, None, _MIN_ROWID, -1, None)
        elif not first:
            events = self._ranked_events(
                match, filters, now, cut.weights, cut.event_floor, upto, None)
            titles = self._ranked_titles(
                match, filters, now, cut.weights, cut.title_lo, cut.title_hi, None)
        candidates = sorted(events + titles, key=lambda c: (-c[1], c[0]))
        listing = RankedListing.of(candidates, len(events) + len(titles))
        self.listings.put(self._listing_key(match, filters, upto, now, cut), listing)
        return self._hit_rows(listing.page(after, limit)), cut, listing.ranked_over

    def _listing_key(
        self, match: str, filters: SearchFilters, upto: int, now: str, cut: Cut | None,
    ) -> tuple[Any, ...]:
        """What fixes a ranked listing's candidates and their scores (store/listings.py):
        the same key on every page of one listing, another for any other listing."""
        return (self.db_path, match, filters, upto, now, cut,
                self.candidates, self.title_candidates)

    def _julianday(self, ts: str) -> float | None:
        """SQLite's julianday of a time, once per statement rather than per hit (the
        same double as in the statement)."""
        row = self.conn.execute("SELECT julianday(?)", (ts,)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def _score(self, weights: tuple[float, ...] | None, ts: str) -> tuple[str, list[Any]]:
        """The score of a hit: BM25 (higher is better), by bm25() or, with weights, by
        agentsrc_rank (store/ranked.py), over the recency decay of its time ``ts``."""
        if weights is None:
            rank, args = "-bm25(search_index)", []
        else:
            rank = f"-agentsrc_rank(search_index, {', '.join('?' * len(weights))})"
            args = list(weights)
        return (
            f"{rank} / (1.0 + MAX(0.0, ? - COALESCE(julianday({ts}), ? - 365)) / ?)",
            args,
        )

    @staticmethod
    def _hits_where(match: str, lo: int, hi: int) -> Where:
        """The WHERE of a query's hits with index rowids lo..hi, for filters to join."""
        where = Where()
        where.add("search_index MATCH ?", match)
        where.add("f.rowid BETWEEN ? AND ?", lo, hi)
        return where

    def _scored_hits(
        self, joins: str, where: Where, score: tuple[str, list[Any]], now: str, order: str,
        limit: int | None,
    ) -> list[tuple[int, float]]:
        """(index rowid, score) of the hits ``where`` selects through ``joins``, in
        ``order`` of rowid, at most ``limit``; ``score`` is ``_score``'s."""
        rank, args = score
        now_jd = self._julianday(now)
        sql = (
            f"SELECT f.rowid, {rank} FROM search_index f {joins}{where.sql()}"
            f" ORDER BY f.rowid {order}" + (f" LIMIT {int(limit)}" if limit is not None else "")
        )
        return [(int(r), float(v)) for r, v in self.conn.execute(
            sql, [*args, now_jd, now_jd, RECENCY_DAYS, *where.args])]

    def _ranked_events(
        self, match: str, filters: SearchFilters, now: str, weights: tuple[float, ...] | None,
        lo: int, hi: int, limit: int | None,
    ) -> list[tuple[int, float]]:
        """(index rowid, score) of the event hits with ids lo..hi passing the filters,
        newest first, at most ``limit``."""
        if not filters.events_on():
            return []
        where = self._hits_where(match, lo, hi)
        joined = filters.event_where(where)
        # An event's time, else its session's last (a correlated lookup only for an
        # event without one, unless the filters join the session anyway).
        ts = ("COALESCE(e.ts, s.last_event_at)" if joined else
              "COALESCE(e.ts, (SELECT last_event_at FROM sessions WHERE id = e.session_id))")
        joins = "JOIN events e ON e.id = f.rowid" + (
            " JOIN sessions s ON s.id = e.session_id" if joined else "")
        return self._scored_hits(joins, where, self._score(weights, ts), now, "DESC", limit)

    def _ranked_titles(
        self, match: str, filters: SearchFilters, now: str, weights: tuple[float, ...] | None,
        lo: int, hi: int, limit: int | None,
    ) -> list[tuple[int, float]]:
        """(index rowid, score) of the title hits with index rowids lo..hi (minus their
        search_titles ids) passing the filters, newest first, at most ``limit``."""
        if not filters.titles_on():
            return []
        where = self._hits_where(match, lo, hi)
        filters.title_where(where)
        joins = "JOIN search_titles t ON t.id = -f.rowid JOIN sessions s ON s.id = t.session_id"
        return self._scored_hits(
            joins, where, self._score(weights, "s.last_event_at"), now, "ASC", limit)

    def _hit_rows(self, page: list[tuple[int, float]]) -> list[tuple[Any, ...]]:
        """The rows of a page's hits, in its order: (rowid, session, title, agent, kind,
        ts, turn, tool, path, data, score)."""
        found: dict[int, tuple[Any, ...]] = {}
        event_ids = [rid for rid, _ in page if rid > 0]
        title_ids = [-rid for rid, _ in page if rid < 0]
        if event_ids:
            for row in self.conn.execute(
                "SELECT e.id, s.id, s.title, s.agent, e.kind, COALESCE(e.ts, s.last_event_at),"
                " e.turn_id, e.tool, e.path, e.data FROM events e"
                f" JOIN sessions s ON s.id = e.session_id WHERE e.id IN ({','.join('?' * len(event_ids))})",
                event_ids,
            ):
                found[int(row[0])] = row
        if title_ids:
            for row in self.conn.execute(
                f"SELECT -t.id, s.id, s.title, s.agent, '{TITLE_KIND}', s.last_event_at,"
                " NULL, NULL, NULL, NULL FROM search_titles t JOIN sessions s ON s.id = t.session_id"
                f" WHERE t.id IN ({','.join('?' * len(title_ids))})",
                title_ids,
            ):
                found[int(row[0])] = row
        return [(*found[rid], score) for rid, score in page if rid in found]


def hits(rows: list[tuple[Any, ...]], q: str) -> list[dict[str, Any]]:
    """A page's rows as the socket returns its hits, each with its snippet of the text
    the query matched and its keyset ``_key`` (score, index rowid)."""
    out = []
    for rid, sid, title, agent_, kind, ts, turn_id, tool, path, data, score in rows:
        if kind == TITLE_KIND:
            text = title or ""
        elif kind in ("read", "edit"):
            text = path or ""
        elif kind == "tool_call":
            text = tool or ""
        else:
            d = orjson.loads(data) if data else {}
            text = d.get("command" if kind == "command" else "text") or ""
        hit = {
            "session_id": sid,
            "title": title,
            "agent": agent_,
            "event_id": rid if rid > 0 else None,
            "turn_id": turn_id,
            "kind": kind,
            "ts": ts,
            "tool": tool,
            "rank": float(f"{score:.6g}"),
            **snippet(text, q),
        }
        hit["_key"] = (float(score), int(rid))
        out.append(hit)
    return out
