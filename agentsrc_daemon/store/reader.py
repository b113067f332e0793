"""The read side of the store: the ``Reader``, one per socket handler thread.

One writer (the ingest loop) and any number of readers (socket handlers), each with its
own connection. Reads are short so checkpoints are never starved. The Reader owns the
connection and the read transaction each query runs in; the queries themselves are in
store/queries/, by what they ask: status, sessions, events, search, turns (and the
reports in store/reports.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import apsw

from . import activity, breakdowns, costs, reports, timeline, usage_report
from .connection import connect
from .listings import RankedListings
from .queries import events as event_pages
from .queries import fidelity, status, turns
from .queries import search as search_hits
from .queries import sessions as session_queries
from .ranked import SEARCH_CANDIDATES, SEARCH_TITLE_CANDIDATES, Cut
from .ranked import register as register_ranking
from .search import QuerySyntaxError, compile_query


class Reader:
    """Read-only queries, one per socket handler thread. Every method is one short
    read transaction (a long-lived reader would stop WAL checkpoints)."""

    # The scored candidates of recent ranked listings, shared by every connection's
    # Reader in the process (store/listings.py).
    ranked_listings = RankedListings()
    # The candidates of a capped listing, per kind of hit (store/ranked.py); a Reader's
    # own so a test can make it small.
    search_candidates = SEARCH_CANDIDATES
    search_title_candidates = SEARCH_TITLE_CANDIDATES
    SESSION_SORTS = session_queries.SESSION_SORTS

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

    # -- status (store/queries/status.py)
    def counts(self) -> dict[str, int]:
        return status.counts(self.conn)

    def last_event_id(self) -> int:
        return status.last_event_id(self.conn)

    def skipped_totals(self) -> dict[str, int]:
        return status.skipped_totals(self.conn)

    def drift(self) -> list[dict[str, Any]]:
        return status.drift(self.conn)

    def sources(self, path_like: str | None = None) -> list[dict[str, Any]]:
        return status.sources(self.conn, path_like)

    # -- fidelity (store/queries/fidelity.py)
    def fidelity(
        self, adapter: str | None = None, version: str | None = None
    ) -> list[dict[str, Any]]:
        return fidelity.rows(self.conn, adapter, version)

    def fidelity_summary(self) -> list[dict[str, Any]]:
        return fidelity.summary(fidelity.rows(self.conn))

    def search_progress(self) -> dict[str, Any]:
        return status.search_progress(self.conn)

    def reprice_progress(self) -> dict[str, Any] | None:
        with self.snapshot():
            return costs.reprice_progress(self.conn)

    # -- sessions (store/queries/sessions.py)
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
        """queries.sessions.listing, with this Reader's search candidates."""
        with self.snapshot():
            return session_queries.listing(
                self.conn, (self.search_candidates, self.search_title_candidates),
                agent=agent, limit=limit, cwd=cwd, project=project, since_ts=since_ts,
                until_ts=until_ts, model=model, search=search, sort=sort, after=after,
                search_cut=search_cut, has_findings=has_findings,
                failed_commands=failed_commands,
            )

    def resolve_session(self, ident: str) -> str | None:
        """Accept our id, the agent's native id, or a unique prefix of either."""
        return session_queries.resolve(self.conn, ident)

    def session(self, session_id: str) -> dict[str, Any] | None:
        with self.snapshot():
            return session_queries.session(self.conn, session_id)

    def session_turns(
        self, session_id: str, *, after_id: int = 0, limit: int = 20
    ) -> dict[str, Any]:
        """A session turn by turn (store/queries/turns.py)."""
        with self.snapshot():
            return turns.session_turns(self.conn, session_id, after_id=after_id, limit=limit)

    # -- search (store/queries/search.py)
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
        searcher = search_hits.Searcher(self.conn, self.db_path, self.search_candidates,
                                 self.search_title_candidates, self.ranked_listings)
        with self.snapshot():
            first = upto is None
            if upto is None:
                upto = self.last_event_id()
            if now is None:
                from .batch import utc_now

                now = utc_now()
            filters = search_hits.SearchFilters(
                agent, project, session_id, tuple(kinds) if kinds is not None else None,
                since_ts, until_ts)
            try:
                if order == "recent":
                    rows = searcher.recent(match, filters, upto, now, after, limit)
                    ranked_over: int | None = None
                else:
                    rows, cut, ranked_over = searcher.ranked(
                        match, filters, upto, now, after, limit, cut, first)
            except apsw.SQLError as exc:  # what the parser let through and FTS5 did not take
                raise QuerySyntaxError(f"the query cannot be searched: {q!r}") from exc
        return {
            "hits": search_hits.hits(rows, q),
            "upto": upto,
            "now": now,
            "cut": cut,
            "ranked_over": ranked_over,
            "capped": bool(cut is not None and cut.capped),
        }

    # -- events (store/queries/events.py)
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
        with self.snapshot():
            return event_pages.events(
                self.conn, session_id=session_id, kinds=kinds, since_id=since_id, limit=limit,
                path=path, path_glob=path_glob, call_id=call_id,
            )

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
        with self.snapshot():
            return event_pages.file_events(
                self.conn, kind, path, session_id=session_id, agent=agent, project=project,
                since_ts=since_ts, since_id=since_id, limit=limit, before_id=before_id,
                newest_first=newest_first,
            )

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
        with self.snapshot():
            return event_pages.commands(
                self.conn, session_id=session_id, project=project, failed=failed,
                exit_code=exit_code, since_ts=since_ts, since_id=since_id, limit=limit,
                before_id=before_id, newest_first=newest_first,
            )

    def documents(self) -> list[dict[str, Any]]:
        with self.snapshot():
            return event_pages.documents(self.conn)

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
        with self.snapshot():
            return event_pages.findings(
                self.conn, session_id=session_id, path=path, secret_type=secret_type,
                project=project, since_ts=since_ts, since_id=since_id, limit=limit,
                before_id=before_id, newest_first=newest_first,
            )

    def session_files(self, session_id: str) -> dict[str, Any]:
        with self.snapshot():
            return event_pages.session_files(self.conn, session_id)

    # -- reports (store/reports.py)
    def findings_report(
        self, *, since_ts: str | None = None, sessions_limit: int | None = None
    ) -> dict[str, Any]:
        """Counts by type, session and project; sensitive reads; reads outside the
        project whose content carried a secret (store/reports.py)."""
        with self.snapshot():
            return reports.findings_report(self.conn, since_ts, sessions_limit)

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

    def usage_report(self, **kw: Any) -> dict[str, Any]:
        """Usage and cost by one grouping (store/usage_report.py)."""
        with self.snapshot():
            return usage_report.usage_report(self.conn, **kw)

    def usage_statusline(
        self, session_id: str | None, day_start: str, now: datetime
    ) -> dict[str, Any]:
        """What the status line shows (store/usage_report.py)."""
        with self.snapshot():
            return usage_report.statusline(self.conn, session_id, day_start, now)

    # -- the web page's views (their SQL in timeline.py, activity.py, breakdowns.py)
    def session_timeline(self, session_id: str, **kw: Any) -> dict[str, Any]:
        return timeline.session_timeline(self.conn, session_id, **kw)

    def live_sessions(self, since_ts: str, limit: int) -> dict[str, Any]:
        listing = self.sessions_listing(since_ts=since_ts, limit=limit)
        return activity.live_sessions(self.conn, listing["sessions"], since_ts)

    def count_sessions(self, **filters: Any) -> int:
        return activity.count_sessions(self.conn, **filters)

    def usage_blocks(self, since_ts: str, until_ts: str | None) -> dict[str, Any]:
        return breakdowns.usage_blocks(self.conn, since_ts, until_ts)

    def findings_by_day(self, since_day: str | None) -> dict[str, Any]:
        return breakdowns.findings_by_day(self.conn, since_day)

    def files_top(self, **kw: Any) -> dict[str, Any]:
        return breakdowns.files_top(self.conn, **kw)

    def projects(self, limit: int) -> list[dict[str, Any]]:
        return breakdowns.projects(self.conn, limit)

    def search_facets(self, q: str) -> dict[str, Any]:
        return breakdowns.search_facets(self.conn, q)

    def store_info(self) -> dict[str, Any]:
        return breakdowns.store_info(self.conn, self.db_path)
