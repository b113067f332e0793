"""The read side of the store: queries, one short read transaction each.

One writer (the ingest loop) and any number of readers (socket handlers), each with its
own connection. Reads are short so checkpoints are never starved.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import orjson

from . import activity, breakdowns, reports, timeline
from .batch import event_row_to_json
from .listings import RankedListing, RankedListings
from .ranked import SEARCH_CANDIDATES, SEARCH_TITLE_CANDIDATES, Cut, estimate_weights
from .ranked import register as register_ranking
from .schema import PROJECT_KINDS, USAGE_FIELDS, connect
from .search import TITLE_KIND, QuerySyntaxError, compile_query, snippet
from .where import E_COMMAND_FAILED, Where
from .where import finding_path_filter as _finding_path_filter


def _finding_path(path: str) -> tuple[Any, ...]:
    condition, args = _finding_path_filter(path)
    return (condition, *args)

# Ranking: BM25 (higher is better) divided by 1 + age in days / RECENCY_DAYS, so a hit
# RECENCY_DAYS old weighs half as much as one from now. An event without a time counts
# as a year old.
RECENCY_DAYS = 30.0

EVENT_COLUMNS = (
    "e.id, e.session_id, e.kind, e.ts, e.turn_id, e.tool, e.call_id, e.subagent_id,"
    " e.adapter, s.path, e.offset, e.data"
)

# Newest first is by the time an event happened (ids are commit order: a backfill of old
# transcripts commits old events late), ties by id; an event without a time comes last.
NEWEST_FIRST = "COALESCE(e.ts, '') DESC, e.id DESC"

SESSION_COLUMNS = (
    "id, agent, native_id, cwd, model, started_at, last_event_at, title, version, originator,"
    " source, model_provider, parent_session_id, prompts, messages, tool_calls, compactions,"
    " errors, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,"
    " reasoning_tokens, total_tokens, project_root, replayed_in, own_record"
)
_SESSION_NAMES = [c.strip() for c in SESSION_COLUMNS.split(",")]
# A search hit's event (NULL for a title's hit) and its session's text id ``ek.id``,
# joined from the rows: the ``events`` view is itself a join, and SQLite cannot put a
# join view on the right of a LEFT JOIN without reading all of it (schema 16).
EVENT_HIT_JOINS = (
    " LEFT JOIN event_rows e ON f.rowid > 0 AND e.id = f.rowid"
    " LEFT JOIN session_keys ek ON ek.key = e.session_key"
)


_MIN_ROWID = -(2**63)  # below every index rowid (a title's is minus its search_titles id)


@dataclass(frozen=True, slots=True)
class _SearchFilters:
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


class Reader:
    """Read-only queries, one per socket handler thread. Every method is one short
    read transaction (a long-lived reader would stop WAL checkpoints)."""

    # The scored candidates of recent ranked listings, shared by every connection's
    # Reader in the process (store/listings.py).
    ranked_listings = RankedListings()

    def __init__(self, db_path: Path) -> None:
        self.db_path = str(db_path)
        self.conn = connect(db_path, readonly=True)
        register_ranking(self.conn)

    def close(self) -> None:
        self.conn.close()

    def ready_for_reuse(self) -> bool:
        """Whether this Reader may serve another connection: no read transaction open
        (an unfinished statement would hold a snapshot of the WAL, and no checkpoint
        could pass it), and then its page cache released (it waits idle)."""
        try:
            if self.conn.txn_state() != apsw.SQLITE_TXN_NONE:
                return False
            self.conn.execute("PRAGMA shrink_memory")
        except apsw.Error:
            return False
        return True

    @contextmanager
    def snapshot(self) -> Iterator[apsw.Connection]:
        with self.conn:
            yield self.conn

    # -- status
    def counts(self) -> dict[str, int]:
        """The store's sizes for ``status``: by indexes and counters, never the sources'
        rows (each holds its file's adapter state: schema 18)."""
        c = self.conn
        files = c.execute(
            "SELECT COUNT(*) FROM sources INDEXED BY sources_present WHERE gone_at IS NULL"
        ).fetchone()
        sessions = c.execute("SELECT COUNT(*) FROM sessions").fetchone()
        events = c.execute("SELECT value FROM counters WHERE name = 'events'").fetchone()
        gone = c.execute(
            "SELECT COUNT(*) FROM sources INDEXED BY sources_gone WHERE gone_at IS NOT NULL"
        ).fetchone()
        return {
            "files": int(files[0]) if files else 0,
            "files_gone": int(gone[0]) if gone else 0,
            "sessions": int(sessions[0]) if sessions else 0,
            "events": int(events[0]) if events else 0,
        }

    def event_count(self) -> int:
        row = self.conn.execute("SELECT COUNT(*) FROM events").fetchone()
        return int(row[0]) if row else 0

    def last_event_id(self) -> int:
        """The newest event id (ids increase but have gaps: not a count)."""
        row = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
        return int(row[0]) if row else 0

    def skipped_totals(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for (skipped,) in self.conn.execute(
            "SELECT skipped FROM sources INDEXED BY sources_skipping WHERE skipped != '{}'"
        ):
            for k, v in orjson.loads(skipped).items():
                totals[k] = totals.get(k, 0) + int(v)
        return totals

    def drift(self) -> list[dict[str, Any]]:
        return [
            {"adapter": a, "version": v, "record_type": t, "count": n, "last_seen": ls}
            for a, v, t, n, ls in self.conn.execute(
                "SELECT adapter, version, record_type, count, last_seen FROM drift"
                " ORDER BY count DESC, adapter, record_type"
            )
        ]

    def sources(self, path_like: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT path, adapter, mode, size, offset, lines, skipped, generation, gone_at"
            " FROM sources"
        )
        args: tuple[Any, ...] = ()
        if path_like:
            sql += " WHERE path LIKE ?"
            args = (path_like,)
        return [
            {
                "path": p,
                "adapter": a,
                "mode": m,
                "size": s,
                "offset": o,
                "lines": n,
                "skipped": orjson.loads(sk) if sk else {},
                "generation": g,
                "gone_at": gone,
            }
            for p, a, m, s, o, n, sk, g, gone in self.conn.execute(sql + " ORDER BY path", args)
        ]

    # -- sessions
    def _session_dicts(self, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """Session rows as the socket returns them, with their sub-agent counts and the
        state of their transcripts: one query each for the whole page (per row, they
        were most of a page's time at 32,000 sessions)."""
        if not rows:
            return []
        ids = orjson.dumps([row[0] for row in rows]).decode()
        subagents = dict(
            self.conn.execute(
                "SELECT session_id, COUNT(*) FROM session_subagents"
                " WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id",
                (ids,),
            )
        )
        # (transcripts, those gone) per session, counted in SQL (a session can have
        # hundreds of transcripts: its sub-agents'). The gone ones from their index
        # (schema 10), not the sources' rows: a row holds its adapter state before
        # gone_at, often past the page, so reading gone_at read its overflow pages (9 ms
        # a page of sessions at 10 million events). Every session_sources row names a
        # source: rows of sources are never deleted, and are inserted first.
        sources = {
            sid: (int(n), int(gone))
            for sid, n, gone in self.conn.execute(
                "SELECT ss.session_id, COUNT(*), COUNT(g.id) FROM session_sources ss"
                " LEFT JOIN sources g INDEXED BY sources_gone"
                " ON g.id = ss.source_id AND g.gone_at IS NOT NULL"
                " WHERE ss.session_id IN (SELECT value FROM json_each(?)) GROUP BY ss.session_id",
                (ids,),
            )
        }
        return [
            _session_dict(row, int(subagents.get(row[0], 0)), *sources.get(row[0], (0, 0)))
            for row in rows
        ]

    SESSION_SORTS = {
        "last": "COALESCE(last_event_at, started_at, '')",
        "started": "COALESCE(started_at, '')",
        "tokens": "total_tokens",
        "tools": "tool_calls",
    }

    def sessions(self, **filters: Any) -> list[dict[str, Any]]:
        """The sessions of ``sessions_listing``'s first page (same filters)."""
        return list(self.sessions_listing(**filters)["sessions"])

    def sessions_listing(
        self,
        *,
        agent: str | None = None,
        limit: int = 50,
        cwd: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
        until_ts: str | None = None,
        model: str | None = None,
        search: str | None = None,
        sort: str = "last",
        after: tuple[Any, str] | None = None,
        search_cut: list[int] | None = None,
        has_findings: bool = False,
        failed_commands: bool = False,
    ) -> dict[str, Any]:
        """Sessions, by ``sort`` descending (then id), after the keyset ``after`` (the
        last row's sort value and id). ``since``/``until``: active at or after / started
        before. ``search``: sessions with a hit of that query (store/search.py), among
        the newest ``search_candidates`` event hits and ``search_title_candidates``
        title hits when the index has more (store/ranked.py): ``search_cut`` (upto,
        event floor, title range) fixes those of a capped listing's first page for its
        later pages (``after`` given and no cut: every hit, as that first page had).

        -> {"sessions", "search_cut" (None unless capped), "searched_over" (the hits
        whose sessions were listed, on a first page), "capped"}."""
        where = Where()
        if agent:
            where.add("agent=?", agent)
        if cwd:
            where.add("cwd=?", cwd)
        if project:
            where.add("(project_root=? OR cwd=?)", project, project)
        if since_ts:
            # COALESCE(last_event_at, started_at) >= since, in the terms of sessions_by_last
            # (a session with neither is before any time, as NULL matched nothing).
            where.add("COALESCE(last_event_at, started_at, '') >= ?", since_ts)
        if until_ts:
            where.add("COALESCE(started_at, last_event_at) < ?", until_ts)
        if model:
            where.add("model=?", model)
        for condition, values in activity.session_filters(
                self.conn, self.db_path, has_findings, failed_commands):
            where.add(condition, *values)
        match = compile_query(search) if search else None
        key = self.SESSION_SORTS[sort]
        if after is not None:
            where.add(f"({key} < ? OR ({key} = ? AND id > ?))", after[0], after[0], after[1])
        # Each sort key has an index (schema 8): a page is a walk of LIMIT rows. A filter
        # that few sessions match (a model, a time range) would walk the whole index
        # looking them up one by one: there, scanning the sessions and sorting those that
        # match is cheaper (measured at 32,000 sessions: 17-33 ms against 390 ms), and
        # the unary + keeps SQLite from ordering by the index. Except in the default
        # order, by the last event: `since` is a range of that index, and a model has
        # one of its own in that order (schema 10).
        indexed = sort == "last" and not (until_ts or search)  # (an agent: sessions_by_agent)
        order = key if indexed or not (model or since_ts or until_ts or search) else f"+{key}"
        sql = (
            f"SELECT {SESSION_COLUMNS}, {key} FROM sessions{where.sql()}"
            f" ORDER BY {order} DESC, id LIMIT ?"
        )
        searched_over: int | None = None
        with self.snapshot():
            if match is not None:
                if after is None and search_cut is None:
                    search_cut, searched_over = self._sessions_search_cut(match)
                hits = Where()
                if search_cut is None:  # every hit (the index has no more than the caps)
                    hits.add(
                        "id IN (SELECT COALESCE(ek.id, t.session_id) FROM search_index f"
                        f"{EVENT_HIT_JOINS}"
                        " LEFT JOIN search_titles t ON f.rowid < 0 AND t.id = -f.rowid"
                        " WHERE search_index MATCH ?)",
                        match,
                    )
                else:
                    upto, floor, lo, hi = search_cut
                    hits.add(
                        "id IN (SELECT e.session_id FROM search_index f"
                        " JOIN events e ON e.id = f.rowid"
                        " WHERE search_index MATCH ? AND f.rowid BETWEEN ? AND ?"
                        " UNION ALL SELECT t.session_id FROM search_index f"
                        " JOIN search_titles t ON t.id = -f.rowid"
                        " WHERE search_index MATCH ? AND f.rowid BETWEEN ? AND ?)",
                        match, floor, upto, match, lo, hi,
                    )
                where = Where(hits.conditions + where.conditions, hits.args + where.args)
                sql = (
                    f"SELECT {SESSION_COLUMNS}, {key} FROM sessions{where.sql()}"
                    f" ORDER BY {order} DESC, id LIMIT ?"
                )
            rows = list(self.conn.execute(sql, [*where.args, limit]))
            out = self._session_dicts([r[:-1] for r in rows])
            for r, d in zip(rows, out, strict=True):
                d["_key"] = (r[-1], d["id"])
        return {
            "sessions": out,
            "search_cut": search_cut,
            "searched_over": searched_over,
            "capped": search_cut is not None,
        }

    def _sessions_search_cut(self, match: str) -> tuple[list[int] | None, int]:
        """sessions.list's search on a first page: None (every hit: the index has at
        most the caps of each kind) or [upto, event floor, title lo, title hi], the
        newest hits of each kind (index rowids alone, no join); and how many hits."""
        n, nt = self.search_candidates, self.search_title_candidates
        upto = self.last_event_id()
        nth = self.conn.execute(
            "SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid BETWEEN 1 AND ?"
            " ORDER BY rowid DESC LIMIT 1 OFFSET ?", (match, upto, n)).fetchone()
        titles = [int(r) for (r,) in self.conn.execute(
            "SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid < 0"
            " ORDER BY rowid LIMIT ?", (match, nt + 1))]
        if nth is None and len(titles) <= nt:
            (count,) = self.conn.execute(
                "SELECT COUNT(*) FROM search_index WHERE search_index MATCH ?", (match,)
            ).fetchone() or (0,)
            return None, int(count)
        floor = 1 if nth is None else int(nth[0]) + 1
        if nth is None:
            (events,) = self.conn.execute(
                "SELECT COUNT(*) FROM search_index WHERE search_index MATCH ?"
                " AND rowid BETWEEN 1 AND ?", (match, upto)).fetchone() or (0,)
        else:
            events = n
        titles = titles[:nt]
        lo, hi = (titles[0], titles[-1]) if titles else (0, -1)
        return [upto, floor, lo, hi], int(events) + len(titles)

    def resolve_session(self, ident: str) -> str | None:
        """Accept our id, the agent's native id, or a unique prefix of either."""
        row = self.conn.execute("SELECT id FROM sessions WHERE id=?", (ident,)).fetchone()
        if row:
            return str(row[0])
        rows = list(
            self.conn.execute(
                "SELECT id FROM sessions WHERE native_id=? OR id LIKE ? OR native_id LIKE ?"
                " LIMIT 2",
                (ident, ident + "%", ident + "%"),
            )
        )
        if len(rows) == 1:
            return str(rows[0][0])
        return None

    def session(self, session_id: str) -> dict[str, Any] | None:
        with self.snapshot():
            row = self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            (d,) = self._session_dicts([row])
            d["turns"] = [
                {
                    "turn_id": t,
                    "started_at": s,
                    "ended_at": e,
                    "status": st,
                    "cwd": cwd,
                    "model": m,
                }
                for t, s, e, st, cwd, m in self.conn.execute(
                    "SELECT turn_id, started_at, ended_at, status, cwd, model FROM turns"
                    " WHERE session_id=? ORDER BY COALESCE(started_at, ''), turn_id",
                    (session_id,),
                )
            ]
            d["sources"] = [
                {"path": p, "gone": gone is not None, "gone_at": gone}
                for p, gone in self.conn.execute(
                    "SELECT s.path, s.gone_at FROM session_sources ss"
                    " JOIN sources s ON s.id=ss.source_id WHERE ss.session_id=? ORDER BY s.path",
                    (session_id,),
                )
            ]
            d["subagent_ids"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT subagent_id FROM session_subagents WHERE session_id=? ORDER BY 1",
                    (session_id,),
                )
            ]
            d["children"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM sessions WHERE parent_session_id=?"
                    " ORDER BY COALESCE(started_at, ''), id",
                    (session_id,),
                )
            ]
            # Records this session holds copies of, owned (and counted) by another session
            # (a resumed or forked history, a sub-agent's replay): shown, marked
            # inherited, never counted here.
            d["inherited"] = {
                k: n
                for k, n in self.conn.execute(
                    "SELECT e.kind, COUNT(*) FROM event_copies c JOIN events e"
                    " ON e.id = c.event_id WHERE c.session_id=? AND e.session_id != ?"
                    " GROUP BY e.kind",
                    (session_id, session_id),
                )
            }
            # The turns of this session's copies, as its own file has them (a resumed
            # Claude session's first turns are the earlier conversation's).
            d["inherited_turns"] = [
                {"turn_id": t, "events": n, "owner": owner}
                for t, n, owner in self.conn.execute(
                    "SELECT c.turn_id, COUNT(*), MIN(e.session_id) FROM event_copies c"
                    " JOIN events e ON e.id = c.event_id WHERE c.session_id=?"
                    " AND e.session_id != ? AND c.turn_id IS NOT NULL"
                    " GROUP BY c.turn_id ORDER BY MIN(e.ts), c.turn_id",
                    (session_id, session_id),
                )
            ]
            # Links by the data, for agents whose files do not name them (a resumed or
            # forked Claude Code session starts with copies of the earlier one's records):
            # the sessions whose records this one holds copies of, and those holding
            # copies of its records.
            d["copied_from"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT e.session_id FROM event_copies c JOIN events e ON e.id = c.event_id"
                    " WHERE c.session_id=? AND e.session_id != ? GROUP BY e.session_id"
                    " ORDER BY MIN(e.ts), e.session_id",
                    (session_id, session_id),
                )
            ]
            d["copied_into"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT DISTINCT c.session_id FROM events e JOIN event_copies c"
                    " ON c.event_id = e.id WHERE e.session_id=? AND c.session_id != ?"
                    " ORDER BY 1",
                    (session_id, session_id),
                )
            ]
            if d["parent_session_id"] is None and d["copied_from"]:
                d["parent_session_id"] = d["copied_from"][0]
            d["children"] += [c for c in d["copied_into"] if c not in d["children"]]
            d["kinds"] = {
                k: n
                for k, n in self.conn.execute(
                    "SELECT kind, COUNT(*) FROM events WHERE session_id=? GROUP BY kind",
                    (session_id,),
                )
            }
            return d

    # -- search
    def search_progress(self) -> dict[str, Any]:
        values = dict(
            self.conn.execute(
                "SELECT name, value FROM counters WHERE name IN ('search_done', 'search_target')"
            )
        )
        done, target = int(values.get("search_done", 0)), int(values.get("search_target", 0))
        return {
            "state": "ready" if done >= target else "building",
            "indexed_upto": done,
            "target": target,
        }

    def search(
        self,
        q: str,
        *,
        agent: str | None = None,
        project: str | None = None,
        session_id: str | None = None,
        kinds: Sequence[str] | None = None,
        since_ts: str | None = None,
        until_ts: str | None = None,
        limit: int = 20,
        order: str = "rank",
        upto: int | None = None,
        now: str | None = None,
        after: tuple[float, int] | None = None,
        cut: Cut | None = None,
    ) -> dict[str, Any]:
        """Hits of a query (store/search.py's language), best first (``order`` "rank")
        or newest first ("recent"). A page is fixed by ``upto`` (the last event id the
        first page saw: later events are not hits of this listing) and ``now`` (the
        moment recency is measured from); ``after`` is the last hit's (rank, rowid).

        Rank order ranks every hit while the index has at most ``search_candidates`` of
        the query's event hits and as many title hits; beyond that, the newest of them
        that pass the filters (store/ranked.py). ``cut``: a capped listing's candidates
        and weights, as its first page answered them (None on a first page, and on
        every page of a listing that ranks every hit)."""
        match = compile_query(q)
        with self.snapshot():
            first = upto is None
            if upto is None:
                upto = self.last_event_id()
            if now is None:
                from .batch import utc_now

                now = utc_now()
            filters = _SearchFilters(
                agent, project, session_id, tuple(kinds) if kinds is not None else None,
                since_ts, until_ts)
            try:
                if order == "recent":
                    rows = self._search_recent(match, filters, upto, now, after, limit)
                    ranked_over: int | None = None
                else:
                    rows, cut, ranked_over = self._search_ranked(
                        match, filters, upto, now, after, limit, cut, first)
            except apsw.SQLError as exc:  # what the parser let through and FTS5 did not take
                raise QuerySyntaxError(f"the query cannot be searched: {q!r}") from exc
        hits = []
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
            hits.append(hit)
        return {
            "hits": hits,
            "upto": upto,
            "now": now,
            "cut": cut,
            "ranked_over": ranked_over,
            "capped": bool(cut is not None and cut.capped),
        }

    # The candidates of a capped listing, per kind of hit (store/ranked.py); a Reader's
    # own so a test can make it small.
    search_candidates = SEARCH_CANDIDATES
    search_title_candidates = SEARCH_TITLE_CANDIDATES

    def _nth_event_hits(self, match: str, upto: int, n: int) -> list[int]:
        """The index rowids of the query's n-th and (n+1)-th newest event hits up to
        ``upto``, as many as exist: two when it has more than n. Index rows alone, no
        join: a walk of n + 1 rowids."""
        return [int(r) for (r,) in self.conn.execute(
            "SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid BETWEEN 1"
            " AND ? ORDER BY rowid DESC LIMIT 2 OFFSET ?", (match, upto, n - 1))]

    def _search_recent(
        self, match: str, filters: _SearchFilters, upto: int, now: str,
        after: tuple[float, int] | None, limit: int,
    ) -> list[tuple[Any, ...]]:
        """Newest first: FTS5 reads the query's hits from the newest index row down,
        joined as it goes, until the page is full. The order needs no score; each hit's
        ``rank`` is told all the same, by bm25() when the query has at most
        ``search_candidates`` event hits, else by agentsrc_rank with estimated idfs (as a
        capped ranked listing scores): bm25()'s idf pass alone counts every hit (13 ms
        of a 14 ms page for a word with 225,000 hits at 10 million events)."""
        n = self.search_candidates
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

    def _search_ranked(
        self, match: str, filters: _SearchFilters, upto: int, now: str,
        after: tuple[float, int] | None, limit: int, cut: Cut | None, first: bool,
    ) -> tuple[list[tuple[Any, ...]], Cut | None, int]:
        """Best first: score the candidates (every hit, or a capped listing's newest),
        sort them here, then read the page's rows alone (an event's data is unpacked
        for the page, not for every candidate)."""
        n, nt = self.search_candidates, self.search_title_candidates
        if not first:  # a later page: the listing's candidates as its first page scored them
            listing = self.ranked_listings.get(self._listing_key(match, filters, upto, now, cut))
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
        self.ranked_listings.put(self._listing_key(match, filters, upto, now, cut), listing)
        return self._hit_rows(listing.page(after, limit)), cut, listing.ranked_over

    def _listing_key(
        self, match: str, filters: _SearchFilters, upto: int, now: str, cut: Cut | None,
    ) -> tuple[Any, ...]:
        """What fixes a ranked listing's candidates and their scores (store/listings.py):
        the same key on every page of one listing, another for any other listing."""
        return (self.db_path, match, filters, upto, now, cut,
                self.search_candidates, self.search_title_candidates)

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
        self, match: str, filters: _SearchFilters, now: str, weights: tuple[float, ...] | None,
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
        self, match: str, filters: _SearchFilters, now: str, weights: tuple[float, ...] | None,
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

    # -- a session turn by turn
    def session_turns(
        self, session_id: str, *, after_id: int = 0, limit: int = 20
    ) -> dict[str, Any]:
        """A session's turns in order, each its prompt, its steps (one per tool call, or
        per read, edit or command derived from it), its answer, tokens and wall time.
        Sub-agent events go under the turn they happened in, with ``depth`` 1. Pages of
        ``limit`` turns: ``next_after_id`` is the last event id of the page's last turn."""
        cols = "id, kind, ts, turn_id, tool, call_id, subagent_id, path, data"
        kinds = ("prompt", "message", "tool_call", "read", "edit", "command", "usage",
                 "turn_start", "turn_end")
        in_kinds = ",".join(f"'{k}'" for k in kinds)
        turns: list[dict[str, Any]] = []
        events_of: list[list[tuple[Any, ...]]] = []
        cursor = after_id
        next_after: int | None = None
        with self.snapshot():
            # One statement, stepped as far as the page goes: a row is read (and its data
            # unpacked) only when the page needs it, not in batches past the last turn.
            rows = self.conn.execute(
                f"SELECT {cols} FROM events WHERE session_id = ? AND id > ?"
                f" AND subagent_id IS NULL AND kind IN ({in_kinds}) ORDER BY id",
                (session_id, cursor),
            )
            for row in rows:
                eid, kind, ts, turn_id = row[0], row[1], row[2], row[3]
                cur = turns[-1] if turns else None
                new = cur is None or (
                    turn_id is not None and cur["turn_id"] is not None
                    and turn_id != cur["turn_id"]
                ) or (kind == "prompt" and cur["prompt"] is not None)
                if new:
                    if len(turns) == limit:
                        next_after = cursor
                        break
                    turns.append({"turn_id": turn_id, "started_at": ts, "ended_at": ts,
                                  "prompt": None, "first_id": eid})
                    events_of.append([])
                    cur = turns[-1]
                assert cur is not None
                if cur["turn_id"] is None and turn_id is not None:
                    cur["turn_id"] = turn_id
                if kind == "prompt" and cur["prompt"] is None:
                    cur["prompt"] = orjson.loads(row[8]).get("text")
                if ts:
                    cur["started_at"] = min(cur["started_at"] or ts, ts)
                    cur["ended_at"] = max(cur["ended_at"] or ts, ts)
                events_of[-1].append(row)
                cursor = eid
            rows.close()
            if turns:
                # Sub-agent events: under the last turn started at or before each.
                starts = [t["started_at"] or "" for t in turns]
                until = None
                if next_after is not None:
                    nxt = self.conn.execute(
                        "SELECT ts FROM events WHERE session_id = ? AND id > ?"
                        " AND subagent_id IS NULL ORDER BY id LIMIT 1", (session_id, next_after),
                    ).fetchone()
                    until = nxt[0] if nxt else None
                where = Where()
                where.add("session_id = ?", session_id)
                where.add("subagent_id IS NOT NULL")
                where.add(f"kind IN ({in_kinds})")
                if after_id and starts[0]:
                    where.add("ts >= ?", starts[0])
                if until:
                    where.add("ts < ?", until)
                for row in self.conn.execute(
                    f"SELECT {cols} FROM events{where.sql()} ORDER BY ts, id", where.args
                ):
                    ts = row[2] or ""
                    k = 0
                    for i, st in enumerate(starts):
                        if st <= ts:
                            k = i
                    events_of[k].append(row)
                facts = {
                    t: (s_, e_, st)
                    for t, s_, e_, st in self.conn.execute(
                        "SELECT turn_id, started_at, ended_at, status FROM turns"
                        " WHERE session_id = ?", (session_id,),
                    )
                }
        out = [_turn(t, evs, facts) for t, evs in zip(turns, events_of, strict=True)]
        return {"session_id": session_id, "turns": out, "next_after_id": next_after}

    # -- events
    def events(
        self,
        *,
        session_id: str | None = None,
        kinds: Sequence[str] | None = None,
        since_id: int = 0,
        limit: int = 100,
        path: str | None = None,
        path_glob: str | None = None,
        call_id: str | None = None,
    ) -> list[dict[str, Any]]:
        where = _event_page(since_id, session_id, kinds)
        if path:
            where.add("e.path = ?", path)
        if path_glob:
            where.add("e.path GLOB ?", path_glob)
        if call_id:
            where.add("e.call_id = ?", call_id)
        return self._events(where, limit)

    def _events(self, where: Where, limit: int, newest_first: bool = False) -> list[dict[str, Any]]:
        sql = (
            f"SELECT {EVENT_COLUMNS} FROM events e JOIN sources s ON s.id = e.source_id"
            f"{where.sql()} ORDER BY {NEWEST_FIRST if newest_first else 'e.id'} LIMIT ?"
        )
        with self.snapshot():
            return [event_row_to_json(r) for r in self.conn.execute(sql, [*where.args, limit])]

    def file_events(
        self,
        kind: str,
        path: str | None,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
        before_id: int | None = None,
        newest_first: bool = False,
    ) -> list[dict[str, Any]]:
        where = _event_page(since_id, session_id, [kind], before_id, newest_first)
        if project and _by_project_arms(kind, session_id, path, newest_first):
            where.scope(agent=agent, since_ts=since_ts)
            return self._project_events(where, kind, project, limit)
        where.scope(agent=agent, project=project, since_ts=since_ts)
        where.path_matches(path)
        return self._events(where, limit, newest_first)

    def commands(
        self,
        *,
        session_id: str | None = None,
        project: str | None = None,
        failed: bool | None = None,
        exit_code: int | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
        before_id: int | None = None,
        newest_first: bool = False,
    ) -> list[dict[str, Any]]:
        where = _event_page(since_id, session_id, ["command"], before_id, newest_first)
        arms = bool(project) and _by_project_arms("command", session_id, None, newest_first)
        where.scope(project=None if arms else project, since_ts=since_ts)
        if failed is True:
            where.add(E_COMMAND_FAILED)  # the WHERE of events_failed_commands
        elif failed is False:
            where.add("json_extract(e.data, '$.exit_code') = 0")
        if exit_code is not None:
            where.add("json_extract(e.data, '$.exit_code') = ?", exit_code)
        if arms and project:
            return self._project_events(where, "command", project, limit)
        return self._events(where, limit, newest_first)

    def _project_events(
        self, where: Where, kind: str, project: str, limit: int
    ) -> list[dict[str, Any]]:
        """``_events`` oldest first with ``where`` and the events of ``project``: the
        first ``limit`` ids of each of Where.project_arms, and of those the first
        ``limit``."""
        by_session, session_args, by_root, root_args = where.project_arms(kind, project)
        sql = (
            f"SELECT {EVENT_COLUMNS} FROM events e JOIN sources s ON s.id = e.source_id"
            f" WHERE e.id IN (SELECT id FROM ({by_session}) UNION ALL SELECT id FROM ({by_root}))"
            " ORDER BY e.id LIMIT ?"
        )
        args = [*session_args, limit, *root_args, limit, limit]
        with self.snapshot():
            return [event_row_to_json(r) for r in self.conn.execute(sql, args)]

    def documents(self) -> list[dict[str, Any]]:
        """Memory files (Codex AGENTS.md and memories/, Claude project memory/): what
        and where, never their content."""
        names = ("path", "agent", "project", "size", "sha256", "gone_at", "updated_at")
        with self.snapshot():
            return [
                dict(zip(names, row, strict=True))
                for row in self.conn.execute(
                    "SELECT path, agent, project, size, sha256, gone_at, updated_at"
                    " FROM documents ORDER BY path"
                )
            ]

    def findings(
        self,
        *,
        session_id: str | None = None,
        path: str | None = None,
        secret_type: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
        before_id: int | None = None,
        newest_first: bool = False,
    ) -> list[dict[str, Any]]:
        """Secret findings, newest last (or first): the JSON contract of a finding."""
        where = Where()
        where.kind_in(["secret"])
        where.add("e.id > ?", since_id)
        _before(where, before_id, newest_first)
        where.scope(session_id=session_id, project=project, since_ts=since_ts)
        if path:
            where.add(*_finding_path(path))
        if secret_type:
            where.add("json_extract(e.data, '$.type') = ?", secret_type)
        sql = (
            "SELECT e.id, e.session_id, e.ts, e.turn_id, e.call_id, e.tool, e.subagent_id, e.path,"
            " json_extract(e.data, '$.type'), json_extract(e.data, '$.line'),"
            " json_extract(e.data, '$.hash'), json_extract(e.data, '$.label'),"
            " json_extract(e.data, '$.of_kind'),"
            " (SELECT o.id FROM events o WHERE o.key_hash = unhex(json_extract(e.data, '$.of'))),"
            f" e.adapter, json_extract(e.data, '$.paths') FROM events e{where.sql()}"
            f" ORDER BY {NEWEST_FIRST if newest_first else 'e.id'} LIMIT ?"
        )
        names = ("id", "session_id", "ts", "turn_id", "call_id", "tool", "subagent_id", "path",
                 "type", "line", "hash", "label", "of_kind", "event_id", "agent", "paths")
        with self.snapshot():
            out = [
                dict(zip(names, row, strict=True))
                for row in self.conn.execute(sql, [*where.args, limit])
            ]
        for f in out:
            # The candidate paths of a finding in the output of a call that read several
            # files; [path] (or []) otherwise.
            f["paths"] = orjson.loads(f["paths"]) if f["paths"] else (
                [f["path"]] if f["path"] else []
            )
        return out

    def findings_report(self, *, since_ts: str | None = None) -> dict[str, Any]:
        """Counts by type, session and project; sensitive reads; reads outside the
        project whose content carried a secret (store/reports.py)."""
        with self.snapshot():
            return reports.findings_report(self.conn, since_ts)

    def usage_summary(
        self,
        *,
        since_ts: str | None = None,
        until_ts: str | None = None,
        project: str | None = None,
        agent: str | None = None,
    ) -> dict[str, Any]:
        """Token counts of the usage events, in total and by model, project, day (UTC) and
        agent (store/reports.py)."""
        with self.snapshot():
            return reports.usage_summary(
                self.conn, since_ts=since_ts, until_ts=until_ts, project=project, agent=agent
            )

    def session_files(self, session_id: str) -> dict[str, Any]:
        """Everything one session read and changed, one row per path, with counts."""
        with self.snapshot():
            rows = list(
                self.conn.execute(
                    "SELECT e.kind, e.path, json_extract(e.data, '$.rel_path'),"
                    " json_extract(e.data, '$.external'), json_extract(e.data, '$.op'),"
                    " COUNT(*), MIN(e.ts), MAX(e.ts) FROM events e"
                    " WHERE e.session_id = ? AND e.kind IN ('read', 'edit') AND e.path IS NOT NULL"
                    " GROUP BY e.kind, e.path, json_extract(e.data, '$.op')"
                    " ORDER BY e.path",
                    (session_id,),
                )
            )
            commands = self.conn.execute(
                "SELECT COUNT(*), SUM(CASE WHEN COALESCE(json_extract(data, '$.exit_code'), 0) != 0"
                " THEN 1 ELSE 0 END) FROM events WHERE session_id = ? AND kind = 'command'",
                (session_id,),
            ).fetchone()
        files: dict[str, dict[str, Any]] = {}
        for kind, path, rel, external, op, n, first, last in rows:
            f = files.setdefault(
                path,
                {
                    "path": path,
                    "rel_path": rel,
                    "external": bool(external),
                    "reads": 0,
                    "edits": 0,
                    "ops": {},
                    "first_ts": first,
                    "last_ts": last,
                },
            )
            if kind == "read":
                f["reads"] += n
            else:
                f["edits"] += n
            f["ops"][op or kind] = f["ops"].get(op or kind, 0) + n
            f["first_ts"] = min(x for x in (f["first_ts"], first) if x) if (f["first_ts"] or first) else None
            f["last_ts"] = max(x for x in (f["last_ts"], last) if x) if (f["last_ts"] or last) else None
        out = sorted(files.values(), key=lambda f: f["path"])
        return {
            "session_id": session_id,
            "files": out,
            "read_files": sum(1 for f in out if f["reads"]),
            "edited_files": sum(1 for f in out if f["edits"]),
            "external_reads": sum(1 for f in out if f["reads"] and f["external"]),
            "commands": int(commands[0] or 0) if commands else 0,
            "failed_commands": int(commands[1] or 0) if commands else 0,
        }


    # -- the web page's views (their SQL in timeline.py, activity.py, breakdowns.py)
    def session_timeline(self, session_id: str, **kw: Any) -> dict[str, Any]:
        return timeline.session_timeline(self.conn, session_id, **kw)

    def live_sessions(self, since_ts: str, limit: int) -> dict[str, Any]:
        return activity.live_sessions(self, since_ts, limit)

    def count_sessions(self, **filters: Any) -> int:
        return activity.count_sessions(self.conn, self.db_path, **filters)

    def usage_blocks(self, since_ts: str, until_ts: str | None) -> dict[str, Any]:
        return breakdowns.usage_blocks(self.conn, since_ts, until_ts)

    def findings_by_day(self, since_day: str | None) -> dict[str, Any]:
        return breakdowns.findings_by_day(self.conn, since_day)

    def files_top(self, **kw: Any) -> dict[str, Any]:
        return breakdowns.files_top(self.conn, **kw)

    def search_facets(self, q: str) -> dict[str, Any]:
        return breakdowns.search_facets(self.conn, q)

    def store_info(self) -> dict[str, Any]:
        return breakdowns.store_info(self.conn, self.db_path)

def _session_dict(row: Sequence[Any], subagents: int, sources: int, gone: int) -> dict[str, Any]:
    """A session row, its number of sub-agents, of transcripts and of those gone from
    disk, as the socket returns a session."""
    d = dict(zip(_SESSION_NAMES, row, strict=True))
    source = d.get("source")
    if isinstance(source, str) and source.startswith("{"):
        with suppress(orjson.JSONDecodeError):
            d["source"] = orjson.loads(source)  # an object the agent wrote, as written
    # A session known only through another session's copy of its history (a Codex
    # resume replays its parent's): its own transcript was never read.
    d["known_from_replay"] = d.pop("replayed_in") if not d.pop("own_record") else None
    d["subagents"] = subagents
    if not gone:
        d["source_state"] = "present"
    elif gone < sources:
        d["source_state"] = "partial"
    else:
        d["source_state"] = "gone"
    d["tokens"] = {f: d.pop(f) for f in USAGE_FIELDS}
    return d


def _iso_ms(ts: str | None) -> float | None:
    if not ts:
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return None


def _step_of_call(tool: str | None, data: dict[str, Any]) -> dict[str, Any]:
    inp = data.get("input") if isinstance(data.get("input"), dict) else {}
    assert isinstance(inp, dict)
    name = tool or ""
    if name.startswith("mcp__") or name.startswith("mcp_"):
        return {"kind": "mcp", "summary": name}
    if name in ("Grep", "grep", "search", "rg"):
        return {"kind": "grep", "summary": str(inp.get("pattern") or inp.get("query") or "")}
    if name in ("Task", "Agent", "task", "spawn_agent"):
        return {"kind": "subagent",
                "summary": str(inp.get("description") or inp.get("subagent_type") or "")}
    first = next((v for v in inp.values() if isinstance(v, str)), "")
    return {"kind": "tool", "summary": first}


def _turn(
    t: dict[str, Any], rows: list[tuple[Any, ...]], facts: dict[str, tuple[Any, Any, Any]]
) -> dict[str, Any]:
    derived: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        if row[1] in ("read", "edit", "command") and row[5]:
            derived.setdefault(row[5], []).append(row)
    steps: list[dict[str, Any]] = []
    answer: str | None = None
    tokens = 0
    status = None
    used: set[int] = set()
    for eid, kind, ts, _turn_id, tool, call_id, subagent_id, path, data in rows:
        depth = 1 if subagent_id else 0
        if kind == "message":
            if not subagent_id:
                answer = orjson.loads(data).get("text") or answer
            continue
        if kind == "usage":
            d = orjson.loads(data)
            tokens += int(d.get("total_tokens") or 0) or (
                int(d.get("input_tokens") or 0) + int(d.get("output_tokens") or 0))
            continue
        if kind == "turn_end":
            status = orjson.loads(data).get("status")
            continue
        if kind == "tool_call":
            mine = derived.get(call_id or "", [])
            if not mine:
                step = _step_of_call(tool, orjson.loads(data))
                steps.append({"event_id": eid, "ts": ts, "tool": tool, "call_id": call_id,
                              "subagent_id": subagent_id, "depth": depth, **step})
                continue
            for d_row in mine:
                used.add(d_row[0])
                steps.append(_derived_step(d_row, depth))
            continue
        if kind in ("read", "edit", "command") and eid not in used:
            used.add(eid)
            steps.append(_derived_step((eid, kind, ts, None, tool, call_id, subagent_id, path,
                                        data), depth))
    fact = facts.get(t["turn_id"] or "")
    started, ended = t["started_at"], t["ended_at"]
    if fact:
        started = fact[0] or started
        ended = fact[1] or ended
        status = fact[2] or status
    a, b = _iso_ms(started), _iso_ms(ended)
    return {
        "turn_id": t["turn_id"],
        "first_event_id": t["first_id"],
        "started_at": started,
        "ended_at": ended,
        "status": status,
        "wall_ms": int(b - a) if a is not None and b is not None else None,
        "tokens": tokens,
        "prompt": t["prompt"],
        "steps": steps,
        "answer": answer,
    }


def _derived_step(row: tuple[Any, ...], depth: int) -> dict[str, Any]:
    eid, kind, ts, _t, tool, call_id, subagent_id, path, data = row
    d = orjson.loads(data)
    step: dict[str, Any] = {"event_id": eid, "ts": ts, "tool": tool, "call_id": call_id,
                            "subagent_id": subagent_id, "depth": depth, "kind": kind}
    if kind == "command":
        step.update(summary=d.get("command") or "", exit_code=d.get("exit_code"),
                    duration_ms=d.get("duration_ms"))
    else:
        step.update(summary=d.get("rel_path") or path or "", path=path, op=d.get("op"))
    return step


def _by_project_arms(
    kind: str, session_id: str | None, path: str | None, newest_first: bool
) -> bool:
    """Whether a page with a project filter is read by its two arms (Where.project_arms):
    oldest first, of a kind they index, with no session or path (whose indexes narrow
    more than the project's arms, and with the project's OR are pages as before).
    Newest first is as before: the kind's time index, testing each event."""
    return kind in PROJECT_KINDS and not session_id and not path and not newest_first


def _event_page(
    since_id: int,
    session_id: str | None,
    kinds: Sequence[str] | None,
    before_id: int | None = None,
    newest_first: bool = False,
) -> Where:
    """The conditions every event listing starts with: after an id (paging forward),
    before one (see ``_before``), of a session, of some kinds."""
    where = Where()
    where.add("e.id > ?", since_id)
    _before(where, before_id, newest_first)
    if session_id:
        where.add("e.session_id = ?", session_id)
    where.kind_in(kinds)
    return where


def _before(where: Where, before_id: int | None, newest_first: bool) -> None:
    """Events before ``before_id``: a smaller id oldest first; newest first, the events
    after it in NEWEST_FIRST order (an older time, or the same time and a smaller id),
    so that the last id of a page is the cursor of the next one."""
    if before_id is None:
        return
    if not newest_first:
        where.add("e.id < ?", before_id)
        return
    # "At or before that time, and before it or a smaller id": the first term is a range
    # of events_by_time (an OR alone, or a row value, is a walk from the index's end).
    at = "(SELECT COALESCE(ts, '') FROM events WHERE id = ?)"
    where.add(
        f"COALESCE(e.ts, '') <= {at} AND (COALESCE(e.ts, '') < {at} OR e.id < ?)",
        before_id,
        before_id,
        before_id,
    )
