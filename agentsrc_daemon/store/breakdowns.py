"""The breakdowns the web page draws, each one bounded query: usage in 5-hour blocks
(``usage.blocks``), findings per day (``findings.by_day``), a project's most changed
files and the commands that keep failing (``files.top``), the projects with the most
sessions (``projects.list``), the facets of a search (``search.facets``), and the
store's size on disk (``store.info``).

Each reads what an index gives it in order, and no more: the usage events of a time
range by the report-day index, the findings from their aggregate, edits and failed
commands by their time indexes from a moment on, a query's newest hits."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import apsw

from ..pricing.blocks import Block
from ..pricing.cost import Cost, usd_float
from ..pricing.usage import parse_ts
from .aggregates import NONE
from .costs import cost_json
from .search import compile_query
from .vocabulary import COST_FIELDS, USAGE_FIELDS
from .where import E_COMMAND_FAILED, Where

BLOCK_HOURS = 5  # Anthropic's plan limits are counted in 5-hour windows
FACET_HITS = 1000  # search.facets counts the newest this many event hits
TOP_EVENTS = 2000  # files.top groups the newest this many edits, and failed commands
TOP_FAILED = 1000  # (failed commands are read with their data: fewer)


def hourly_costs(
    conn: apsw.Connection, since_ts: str, until_ts: str | None, *, tokens: bool = True
) -> list[dict[str, Any]]:
    """The usage events from ``since_ts`` (until ``until_ts``) summed by UTC hour, in
    hour order: ``h`` (``YYYY-MM-DDTHH``), responses, their costs (COST_FIELDS), the
    first and last request's time, and the token counts unless ``tokens`` is False
    (then no event's JSON is read: the status line's way)."""
    conditions = ["e.kind IN ('usage', 'secret', 'sensitive_read')", "e.kind = 'usage'",
                  "substr(e.ts, 1, 10) >= ?", "e.ts >= ?"]
    args: list[Any] = [since_ts[:10], since_ts]
    if until_ts:
        conditions += ["substr(e.ts, 1, 10) <= ?", "e.ts < ?"]
        args += [until_ts[:10], until_ts]
    fields = (*(USAGE_FIELDS if tokens else ()), *COST_FIELDS)
    token_sums = [f"SUM(COALESCE(j ->> '$.{f}', 0))" for f in USAGE_FIELDS] if tokens else []
    cost_sums = ["SUM(COALESCE(c.nusd, 0))", "SUM(COALESCE(c.est_nusd, 0))",
                 "SUM(COALESCE(c.unpriced_tokens, j ->> '$.total_tokens', 0))"
                 if tokens else "SUM(COALESCE(c.unpriced_tokens, 0))",
                 "SUM(c.kind IS 'estimated')", "SUM(c.kind IS 'reported')"]
    data = ", e.data j" if tokens else ""
    sql = (
        f"WITH u AS MATERIALIZED (SELECT e.id, substr(e.ts, 1, 13) h, e.ts{data} FROM events e"
        f" WHERE {' AND '.join(conditions)})"
        f" SELECT h, COUNT(*), {', '.join([*token_sums, *cost_sums])}, MIN(ts), MAX(ts)"
        " FROM u LEFT JOIN usage_costs c ON c.event_id = u.id GROUP BY h ORDER BY h"
    )
    with conn:
        rows = list(conn.execute(sql, args))
    return [
        {"h": h, "responses": int(n), **dict(zip(fields, (int(v or 0) for v in sums), strict=True)),
         "first": first, "last": last}
        for h, n, *sums, first, last in rows
    ]


def block_of(start: datetime, hours: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """A 5-hour block from its hours' sums: its start and end, responses, token counts
    (when the hours have them), ``cost``, whether it is active at ``now``, and its burn
    rate and projection by pricing/blocks.py's rules."""
    responses = sum(h["responses"] for h in hours)
    sums = {f: sum(h[f] for h in hours) for f in COST_FIELDS}
    cost = cost_json(sums, responses)
    block = Block(start, _moment(hours[0]["first"]) or start,
                  _moment(hours[-1]["last"]) or start, _cost(cost, responses), 0)
    out: dict[str, Any] = {"start": _iso(start), "end": _iso(block.end), "responses": responses,
                           "active_hours": len(hours)}
    if "total_tokens" in hours[0]:
        out.update({f: sum(h[f] for h in hours) for f in USAGE_FIELDS})
    rate = block.burn_usd_per_hour()
    projected = block.projected_usd(now)
    out.update({
        "cost": cost,
        "active": block.active(now),
        "first": hours[0]["first"],
        "last": hours[-1]["last"],
        "burn_usd_per_hour": None if rate is None else usd_float(rate),
        "projected": None if projected is None else {"usd": usd_float(projected),
                                                     "kind": cost["kind"]},
    })
    return out


def usage_blocks(conn: apsw.Connection, since_ts: str, until_ts: str | None) -> dict[str, Any]:
    """The usage events from ``since_ts`` (until ``until_ts``) in 5-hour blocks, as the
    plans count them: a block starts at the hour of the first response after the
    previous block ended and lasts 5 hours. Hourly sums are enough to place every
    response exactly (a block starts and ends on the hour). Newest block first, each
    with its cost, and the active one with its burn rate and projection."""
    now = datetime.now(UTC)
    blocks = chain(hourly_costs(conn, since_ts, until_ts))
    out = [block_of(start, hours, now) for start, hours in reversed(blocks)]
    return {"since": since_ts, "until": until_ts, "hours": BLOCK_HOURS, "blocks": out}


def chain(hours: list[dict[str, Any]]) -> list[tuple[datetime, list[dict[str, Any]]]]:
    """Hours (hourly_costs') in 5-hour blocks, oldest first: a block starts at the hour
    of the first response after the previous block ended."""
    blocks: list[tuple[datetime, list[dict[str, Any]]]] = []
    end: datetime | None = None
    for hour in hours:
        try:
            at = datetime.strptime(hour["h"], "%Y-%m-%dT%H").replace(tzinfo=UTC)
        except (TypeError, ValueError):
            continue
        if end is None or at >= end:
            end = at + timedelta(hours=BLOCK_HOURS)
            blocks.append((at, []))
        blocks[-1][1].append(hour)
    return blocks


def _moment(ts: Any) -> datetime | None:
    return parse_ts(ts) if isinstance(ts, str) else None


def _cost(cost: dict[str, Any], responses: int) -> Cost:
    """A block's cost as pricing's Cost (for its burn-rate rules)."""
    usd = cost.get("usd")
    return Cost(None if usd is None else Decimal(str(usd)), cost["kind"],
                int(cost.get("unpriced_tokens", 0)), responses)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def findings_by_day(conn: apsw.Connection, since_day: str | None) -> dict[str, Any]:
    """Findings per UTC day (and per type within it) from the findings' aggregate, days
    at or after ``since_day`` (YYYY-MM-DD), oldest first."""
    where = f"WHERE day < {NONE}" + (" AND day >= ?" if since_day else "")
    args = [since_day] if since_day else []
    with conn:
        rows = list(conn.execute(
            f"SELECT day, type, SUM(n) FROM agg_secret_sessions {where}"
            " GROUP BY day, type HAVING SUM(n) > 0 ORDER BY day, type", args))
    days: dict[str, dict[str, Any]] = {}
    for day, typ, n in rows:
        d = days.setdefault(day, {"day": day, "findings": 0, "by_type": {}})
        d["findings"] += int(n)
        name = typ if isinstance(typ, str) else None
        d["by_type"][name or ""] = d["by_type"].get(name or "", 0) + int(n)
    return {"since": since_day, "days": list(days.values())}


def files_top(
    conn: apsw.Connection, *, project: str | None, since_ts: str, limit: int
) -> dict[str, Any]:
    """Since ``since_ts``: the most changed files (edits, sessions, the last time) and
    the commands that failed more than once (failures, sessions, the last time and
    exit code), of one project or of every project. Among the newest TOP_EVENTS edits
    and failed commands in range (``capped`` says when there were more): the time and
    failure indexes give them in order, and a page reads no more."""
    edits = Where()
    edits.add("e.kind = 'edit'")
    edits.add("COALESCE(e.ts, '') >= ?", since_ts)  # events_edits_by_time's expression
    edits.scope(project=project)
    failed = Where()
    failed.add("e.kind = 'command'")
    failed.add(E_COMMAND_FAILED)  # the partial index's WHERE
    failed.add("COALESCE(e.ts, '') >= ?", since_ts)
    failed.scope(project=project)
    with conn:
        changed = [
            {"path": p, "rel_path": _relative(p, project), "edits": int(n), "sessions": int(s),
             "last_ts": ts}
            for p, rel, n, s, ts in conn.execute(
                "WITH x AS MATERIALIZED (SELECT e.path p, e.session_id s, e.ts ts"
                f" FROM events e{edits.sql()} ORDER BY COALESCE(e.ts, '') DESC LIMIT ?),"
                " top AS (SELECT p, COUNT(*) n, COUNT(DISTINCT s) ns, MAX(ts) ts FROM x"
                " WHERE p IS NOT NULL GROUP BY p ORDER BY 2 DESC, 1 LIMIT ?)"
                " SELECT p, NULL, n, ns, ts FROM top",
                [*edits.args, TOP_EVENTS, limit])
        ]
        # The rows through the failed commands' partial index, named (on the rows'
        # table): SQLite would rather walk every command by session, unpacking each.
        rows = list(conn.execute(
            "WITH x AS MATERIALIZED (SELECT e.id id, k.id s, e.ts ts, e.data j"
            " FROM event_rows e INDEXED BY events_failed_commands"
            f" JOIN session_keys k ON k.key = e.session_key{failed.sql()}"
            " ORDER BY e.id DESC LIMIT ?)"
            " SELECT id, s, ts, j ->> '$.command', j ->> '$.exit_code' FROM x",
            [*failed.args, TOP_FAILED]))
        counted = [
            int((conn.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {table}{w.sql()} LIMIT ?)",
                              [*w.args, cap + 1]).fetchone() or (0,))[0]) > cap
            for table, w, cap in (
                ("events e", edits, TOP_EVENTS),
                ("event_rows e INDEXED BY events_failed_commands", failed, TOP_FAILED))
        ]
    return {"project": project, "since": since_ts, "most_changed": changed,
            "failing_commands": _failing(rows, limit),
            "capped": any(counted), "among": {"edits": TOP_EVENTS, "failed": TOP_FAILED}}


def _relative(path: str, project: str | None) -> str | None:
    """The path under the project's root, when it is there (the edits' own ``rel_path``
    is relative to their session's root: reading it would unpack each)."""
    root = (project or "").rstrip("/")
    return path[len(root) + 1:] if root and path.startswith(root + "/") else None


def _failing(rows: list[tuple[Any, ...]], limit: int) -> list[dict[str, Any]]:
    """The command lines of failed commands (newest first) that failed more than once:
    failures, sessions, and the newest failure's time, exit code, event and session."""
    groups: dict[str, dict[str, Any]] = {}
    for eid, sid, ts, command, code in rows:
        if not isinstance(command, str):
            continue
        g = groups.get(command)
        if g is None:  # the newest failure of this line (rows are newest first)
            groups[command] = {"command": command, "failures": 1, "sessions": {sid},
                               "last_ts": ts, "last_exit_code": code, "last_event_id": eid,
                               "last_session_id": sid}
            continue
        g["failures"] += 1
        g["sessions"].add(sid)
        if (ts or "") > (g["last_ts"] or ""):
            g.update(last_ts=ts, last_exit_code=code, last_event_id=eid, last_session_id=sid)
    out = [{**g, "sessions": len(g["sessions"])} for g in groups.values() if g["failures"] > 1]
    out.sort(key=lambda g: (-g["failures"], g["command"]))
    return out[:limit]


def search_facets(conn: apsw.Connection, q: str) -> dict[str, Any]:
    """How the newest FACET_HITS event hits of a query spread over kinds, agents and
    projects, and how many session titles match (at most FACET_HITS)."""
    match = compile_query(q)
    with conn:
        rows = list(conn.execute(
            "WITH h AS MATERIALIZED (SELECT rowid r FROM search_index"
            " WHERE search_index MATCH ? AND rowid > 0 ORDER BY rowid DESC LIMIT ?)"
            " SELECT e.kind, s.agent, COALESCE(s.project_root, s.cwd), COUNT(*) FROM h"
            " JOIN events e ON e.id = h.r JOIN sessions s ON s.id = e.session_id"
            " GROUP BY 1, 2, 3", (match, FACET_HITS + 1)))
        (titles,) = conn.execute(
            "SELECT COUNT(*) FROM (SELECT rowid FROM search_index"
            " WHERE search_index MATCH ? AND rowid < 0 LIMIT ?)", (match, FACET_HITS)
        ).fetchone() or (0,)
    kinds: dict[str, int] = {}
    agents: dict[str, int] = {}
    projects: dict[str, int] = {}
    total = 0
    for kind, agent, project, n in rows:
        total += int(n)
        kinds[kind] = kinds.get(kind, 0) + int(n)
        agents[agent] = agents.get(agent, 0) + int(n)
        projects[project or ""] = projects.get(project or "", 0) + int(n)
    capped = total > FACET_HITS
    if capped:  # the one hit past the cap only says there are more: not counted
        total = FACET_HITS

    def ranked(counts: dict[str, int]) -> list[dict[str, Any]]:
        return [{"value": k or None, "hits": n}
                for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]

    return {"q": q, "event_hits": total, "capped": capped, "title_hits": int(titles),
            "by_kind": ranked(kinds), "by_agent": ranked(agents),
            "by_project": ranked(projects)}


def store_info(conn: apsw.Connection, db_path: str) -> dict[str, Any]:
    """The database's size: its pages, the free ones, and the files on disk (the
    database, its write-ahead log)."""
    with conn:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone() or (0,)
        (pages,) = conn.execute("PRAGMA page_count").fetchone() or (0,)
        (free,) = conn.execute("PRAGMA freelist_count").fetchone() or (0,)
        (version,) = conn.execute("PRAGMA user_version").fetchone() or (0,)

    def size(path: str) -> int | None:
        try:
            return os.stat(path).st_size
        except OSError:
            return None

    return {
        "path": db_path,
        "schema_version": int(version),
        "page_size": int(page_size),
        "pages": int(pages),
        "free_pages": int(free),
        "db_bytes": size(db_path),
        "wal_bytes": size(db_path + "-wal"),
    }


def projects(conn: apsw.Connection, limit: int) -> list[dict[str, Any]]:
    """The projects with the most sessions (then by name): each ``project`` (a session's
    project root, which the store sets whenever it knows the cwd) and its ``sessions``.
    One walk of sessions_project, already grouped (1.5 ms at 36,070 sessions; the usage
    summary's projects, with their sums, 33 ms)."""
    return [
        {"project": project, "sessions": int(n)}
        for project, n in conn.execute(
            "SELECT project_root, COUNT(*) AS n FROM sessions INDEXED BY sessions_project"
            " WHERE project_root IS NOT NULL GROUP BY project_root ORDER BY n DESC, project_root"
            " LIMIT ?",
            (limit,),
        )
    ]
