"""The sessions: a listing by a sort key in keyset pages (with filters and a search),
one session in detail, and an id resolved from what a person types."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Any

import apsw
import orjson

from .. import activity, costs
from ..search import compile_query
from ..vocabulary import COST_FIELDS, USAGE_FIELDS
from ..where import Where
from .search import EVENT_HIT_JOINS
from .status import last_event_id

SESSION_COLUMNS = (
    "id, agent, native_id, cwd, model, started_at, last_event_at, title, version, originator,"
    " source, model_provider, parent_session_id, prompts, messages, tool_calls, compactions,"
    " errors, failed_commands, input_tokens, output_tokens, cache_read_tokens,"
    " cache_creation_tokens, reasoning_tokens, total_tokens, project_root, replayed_in,"
    " own_record"
)
_SESSION_NAMES = [c.strip() for c in SESSION_COLUMNS.split(",")]

SESSION_SORTS = {
    "last": "COALESCE(last_event_at, started_at, '')",
    "started": "COALESCE(started_at, '')",
    "tokens": "total_tokens",
    "tools": "tool_calls",
}


def session_dicts(conn: apsw.Connection, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Session rows as the socket returns them, with their sub-agent counts and the
    state of their transcripts: one query each for the whole page (per row, they
    were most of a page's time at 32,000 sessions)."""
    if not rows:
        return []
    ids = orjson.dumps([row[0] for row in rows]).decode()
    subagents = dict(
        conn.execute(
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
        for sid, n, gone in conn.execute(
            "SELECT ss.session_id, COUNT(*), COUNT(g.id) FROM session_sources ss"
            " LEFT JOIN sources g INDEXED BY sources_gone"
            " ON g.id = ss.source_id AND g.gone_at IS NOT NULL"
            " WHERE ss.session_id IN (SELECT value FROM json_each(?)) GROUP BY ss.session_id",
            (ids,),
        )
    }
    spent = session_costs(conn, ids)
    out = []
    for row in rows:
        d = _session_dict(row, int(subagents.get(row[0], 0)), *sources.get(row[0], (0, 0)))
        d["cost"] = spent.get(d["id"]) or costs.no_usage()
        out.append(d)
    return out


def session_costs(conn: apsw.Connection, ids_json: str) -> dict[str, dict[str, Any]]:
    """The ``cost`` of each session of a JSON array of ids that has usage: from the
    usage groupings' per-session rows (one lookup each, store/usage_groups.py), its
    reason when unpriced by whether the session has a model."""
    return {
        sid: costs.cost_json(dict(zip(COST_FIELDS, sums, strict=True)), responses,
                             model_known=model is not None)
        for sid, responses, model, *sums in conn.execute(
            f"SELECT b.session_id, b.responses, s.model, {', '.join(f'b.{f}' for f in COST_FIELDS)}"
            " FROM agg_usage_by b LEFT JOIN sessions s ON s.id = b.session_id"
            " WHERE b.dim = 'session' AND b.value = X'' AND b.session_id IN"
            " (SELECT value FROM json_each(?))",
            (ids_json,),
        )
    }


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


# -- the listing


def listing(
    conn: apsw.Connection,
    candidates: tuple[int, int],
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
    the newest ``candidates`` (event hits, title hits) when the index has more
    (store/ranked.py): ``search_cut`` (upto, event floor, title range) fixes those of
    a capped listing's first page for its later pages (``after`` given and no cut:
    every hit, as that first page had). ``has_findings``, ``failed_commands``: sessions
    with a finding, with a failed command (store/activity.py). In the caller's read
    transaction.

    -> {"sessions", "search_cut" (None unless capped), "searched_over" (the hits
    whose sessions were listed, on a first page), "capped"}."""
    where = _filters(agent, cwd, project, since_ts, until_ts, model)
    for condition in activity.session_filters(has_findings, failed_commands):
        where.add(condition)
    match = compile_query(search) if search else None
    key = SESSION_SORTS[sort]
    if after is not None:
        where.add(f"({key} < ? OR ({key} = ? AND id > ?))", after[0], after[0], after[1])
    order = _order(sort, key, bool(model or since_ts), bool(until_ts), bool(search))
    searched_over: int | None = None
    if match is not None:
        if after is None and search_cut is None:
            search_cut, searched_over = search_cut_of(conn, match, *candidates)
        hits = _hits(match, search_cut)
        where = Where(hits.conditions + where.conditions, hits.args + where.args)
    sql = (
        f"SELECT {SESSION_COLUMNS}, {key} FROM sessions{where.sql()}"
        f" ORDER BY {order} DESC, id LIMIT ?"
    )
    rows = list(conn.execute(sql, [*where.args, limit]))
    out = session_dicts(conn, [r[:-1] for r in rows])
    for r, d in zip(rows, out, strict=True):
        d["_key"] = (r[-1], d["id"])
    return {
        "sessions": out,
        "search_cut": search_cut,
        "searched_over": searched_over,
        "capped": search_cut is not None,
    }


def _order(sort: str, key: str, narrowing: bool, until: bool, search: bool) -> str:
    """The ORDER BY term of the sort ``key``: by its index, or by scanning the matching
    sessions (``narrowing``: a model or a since; ``until``; a ``search``)."""
    # Each sort key has an index (schema 8): a page is a walk of LIMIT rows. A filter
    # that few sessions match (a model, a time range) would walk the whole index
    # looking them up one by one: there, scanning the sessions and sorting those that
    # match is cheaper (measured at 32,000 sessions: 17-33 ms against 390 ms), and
    # the unary + keeps SQLite from ordering by the index. Except in the default
    # order, by the last event: `since` is a range of that index, and a model has
    # one of its own in that order (schema 10).
    indexed = sort == "last" and not (until or search)  # (an agent: sessions_by_agent)
    return key if indexed or not (narrowing or until or search) else f"+{key}"


def _filters(
    agent: str | None, cwd: str | None, project: str | None, since_ts: str | None,
    until_ts: str | None, model: str | None,
) -> Where:
    """The listing's filters on the sessions' own columns."""
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
    return where


def _hits(match: str, search_cut: list[int] | None) -> Where:
    """The sessions with a hit of the query: every hit, or a capped listing's."""
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
    return hits


def search_cut_of(
    conn: apsw.Connection, match: str, n: int, nt: int
) -> tuple[list[int] | None, int]:
    """sessions.list's search on a first page: None (every hit: the index has at
    most the caps of each kind, ``n`` event hits and ``nt`` title hits) or [upto, event
    floor, title lo, title hi], the newest hits of each kind (index rowids alone, no
    join); and how many hits."""
    upto = last_event_id(conn)
    nth = conn.execute(
        "SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid BETWEEN 1 AND ?"
        " ORDER BY rowid DESC LIMIT 1 OFFSET ?", (match, upto, n)).fetchone()
    titles = [int(r) for (r,) in conn.execute(
        "SELECT rowid FROM search_index WHERE search_index MATCH ? AND rowid < 0"
        " ORDER BY rowid LIMIT ?", (match, nt + 1))]
    if nth is None and len(titles) <= nt:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM search_index WHERE search_index MATCH ?", (match,)
        ).fetchone() or (0,)
        return None, int(count)
    floor = 1 if nth is None else int(nth[0]) + 1
    if nth is None:
        (events,) = conn.execute(
            "SELECT COUNT(*) FROM search_index WHERE search_index MATCH ?"
            " AND rowid BETWEEN 1 AND ?", (match, upto)).fetchone() or (0,)
    else:
        events = n
    titles = titles[:nt]
    lo, hi = (titles[0], titles[-1]) if titles else (0, -1)
    return [upto, floor, lo, hi], int(events) + len(titles)


def project_roots(conn: apsw.Connection) -> list[str]:
    """Every project root the sessions name (what the project scan looks in; the
    sessions_project index holds them, so this reads no session row)."""
    return [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT project_root FROM sessions WHERE project_root IS NOT NULL")]


def resolve(conn: apsw.Connection, ident: str) -> str | None:
    """Accept our id, the agent's native id, or a unique prefix of either."""
    row = conn.execute("SELECT id FROM sessions WHERE id=?", (ident,)).fetchone()
    if row:
        return str(row[0])
    rows = list(
        conn.execute(
            "SELECT id FROM sessions WHERE native_id=? OR id LIKE ? OR native_id LIKE ?"
            " LIMIT 2",
            (ident, ident + "%", ident + "%"),
        )
    )
    if len(rows) == 1:
        return str(rows[0][0])
    return None


# -- one session


def session(conn: apsw.Connection, session_id: str) -> dict[str, Any] | None:
    """One session with its turns, transcripts, sub-agents, the sessions it is linked
    to, and its events counted by kind. In the caller's read transaction."""
    row = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id=?", (session_id,)
    ).fetchone()
    if row is None:
        return None
    (d,) = session_dicts(conn, [row])
    d["turns"] = [
        {
            "turn_id": t,
            "started_at": s,
            "ended_at": e,
            "status": st,
            "cwd": cwd,
            "model": m,
        }
        for t, s, e, st, cwd, m in conn.execute(
            "SELECT turn_id, started_at, ended_at, status, cwd, model FROM turns"
            " WHERE session_id=? ORDER BY COALESCE(started_at, ''), turn_id",
            (session_id,),
        )
    ]
    d["sources"] = [
        {"path": p, "gone": gone is not None, "gone_at": gone}
        for p, gone in conn.execute(
            "SELECT s.path, s.gone_at FROM session_sources ss"
            " JOIN sources s ON s.id=ss.source_id WHERE ss.session_id=? ORDER BY s.path",
            (session_id,),
        )
    ]
    d["subagent_ids"] = [
        r[0]
        for r in conn.execute(
            "SELECT subagent_id FROM session_subagents WHERE session_id=? ORDER BY 1",
            (session_id,),
        )
    ]
    d["children"] = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM sessions WHERE parent_session_id=?"
            " ORDER BY COALESCE(started_at, ''), id",
            (session_id,),
        )
    ]
    _copies(conn, session_id, d)
    d["kinds"] = {
        k: n
        for k, n in conn.execute(
            "SELECT kind, COUNT(*) FROM events WHERE session_id=? GROUP BY kind",
            (session_id,),
        )
    }
    return d


def _copies(conn: apsw.Connection, session_id: str, d: dict[str, Any]) -> None:
    """What a session's copies of other sessions' records say: what it inherited, and
    the sessions it is linked to through them (into ``d``)."""
    # Records this session holds copies of, owned (and counted) by another session
    # (a resumed or forked history, a sub-agent's replay): shown, marked
    # inherited, never counted here.
    d["inherited"] = {
        k: n
        for k, n in conn.execute(
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
        for t, n, owner in conn.execute(
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
        for r in conn.execute(
            "SELECT e.session_id FROM event_copies c JOIN events e ON e.id = c.event_id"
            " WHERE c.session_id=? AND e.session_id != ? GROUP BY e.session_id"
            " ORDER BY MIN(e.ts), e.session_id",
            (session_id, session_id),
        )
    ]
    d["copied_into"] = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT c.session_id FROM events e JOIN event_copies c"
            " ON c.event_id = e.id WHERE e.session_id=? AND c.session_id != ?"
            " ORDER BY 1",
            (session_id, session_id),
        )
    ]
    if d["parent_session_id"] is None and d["copied_from"]:
        d["parent_session_id"] = d["copied_from"][0]
    d["children"] += [c for c in d["copied_into"] if c not in d["children"]]
