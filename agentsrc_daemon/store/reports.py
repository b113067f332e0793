"""The reports (findings.report, usage.summary) answered from the maintained aggregates
(store/aggregates.py) rather than from every event of their kinds.

A ``since`` or ``until`` is any ISO timestamp, compared with the events' ``ts`` as text.
The days wholly inside the bounds come from the aggregates; the boundary days (the
first ten characters of each bound) from the events of that day alone, by the
report-day index (``events_report_day``). An event's day is the first ten characters of its time, and cutting
two strings to the same length keeps their order, so an event with ``ts >= since`` has
a day at or after ``since``'s, and every event of a later day is after ``since``
(likewise for ``until``): the two parts are disjoint and together the events in range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import apsw
import orjson

from . import usage_groups
from .aggregates import (
    COST_JOIN,
    COST_SELECT,
    COST_SUM_TERMS,
    NONE,
    REPORT_KINDS,
    SECRET_HASH,
    SECRET_JSON,
    SECRET_TYPE,
    USAGE_JSON,
    USAGE_MODEL,
    USAGE_PROJECT,
    USAGE_SUM_TERMS,
)
from .costs import cost_json
from .vocabulary import COST_FIELDS, USAGE_FIELDS


@dataclass(slots=True)
class Span:
    """The time bounds of a report: which aggregate days are whole, which days come
    from the events."""

    since: str | None
    until: str | None
    agg_conditions: list[str] = field(default_factory=list)
    agg_args: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.since:
            # Text days only: NONE (no time) is never at or after a time.
            self.agg_conditions.append(f"day > ? AND day < {NONE}")
            self.agg_args.append(self.since[:10])
        if self.until:
            self.agg_conditions.append("day < ?")  # NONE, a blob, sorts after any text
            self.agg_args.append(self.until[:10])

    def boundary_days(self) -> list[str]:
        return list(dict.fromkeys(b[:10] for b in (self.since, self.until) if b))

    def agg_where(self, *more: str) -> str:
        conditions = [*self.agg_conditions, *more]
        return f" WHERE {' AND '.join(conditions)}" if conditions else ""

    def boundary_events(
        self, kind: str, columns: str, more: tuple[str, Any] | None = None, join: str = ""
    ) -> tuple[str, list[Any]]:
        """A SELECT of ``columns`` over the events of ``kind`` on the boundary days that
        are in range (one SELECT per day, UNION ALL; ``more``: one more condition and its
        value; ``join``: a table joined to the events ``e``), and its values; empty
        without bounds. The caller makes it a MATERIALIZED CTE: its JSON is unpacked once
        per event, not once per use."""
        selects: list[str] = []
        args: list[Any] = []
        for day in self.boundary_days():
            conditions = [REPORT_KINDS, f"e.kind = '{kind}'", "substr(e.ts, 1, 10) = ?"]
            args.append(day)
            if self.since:
                conditions.append("e.ts >= ?")
                args.append(self.since)
            if self.until:
                conditions.append("e.ts < ?")
                args.append(self.until)
            if more is not None:
                conditions.append(more[0])
                args.append(more[1])
            selects.append(
                f"SELECT {columns} FROM events e {join} WHERE {' AND '.join(conditions)}")
        return " UNION ALL ".join(selects), args


def _types(concatenated: str | None) -> list[str]:
    return sorted(set((concatenated or "").split(",")))


def _in_span(span: Span, table: str, columns: str, boundary_columns: str, group: str,
             where: str = "") -> tuple[str, list[Any]]:
    """``WITH b AS (...), x AS (...)``: the rows of an aggregate in range, and the same
    shape computed from the boundary days' events (``b``) when there are bounds."""
    boundary, args = span.boundary_events(
        "secret", f"e.session_id, e.ts, e.path, {SECRET_JSON.replace('data', 'e.data')} j"
    )
    x = f"SELECT {columns} FROM {table}{span.agg_where()}"
    if not boundary:
        return f"WITH x AS MATERIALIZED ({x}) ", list(span.agg_args)
    x += f" UNION ALL SELECT {boundary_columns}, COUNT(*) FROM b{where} GROUP BY {group}"
    return f"WITH b AS MATERIALIZED ({boundary}), x AS MATERIALIZED ({x}) ", [*args, *span.agg_args]


# Over 60 lines: the report's sections, each one query over the aggregates in the
# caller's read transaction, in the order the answer lists them; apart, each would take
# the span and the WITH clause it shares with the next.
def findings_report(
    conn: apsw.Connection, since_ts: str | None, sessions_limit: int | None = None
) -> dict[str, Any]:
    """Counts by type, session and project; sensitive reads; reads outside the project
    whose content carried a secret. Ties in a count are ordered by their key.
    ``sessions``: how many sessions have a finding; ``by_session`` lists the first
    ``sessions_limit`` of them (all when None: at 10 million events, 5,153 sessions and
    1.1 MB of JSON, which a page that shows their number does not need)."""
    span = Span(since_ts, None)
    with_values, args = _in_span(
        span, "agg_secret_values", f"NULLIF(type, {NONE}) type, NULLIF(hash, {NONE}) hash, n",
        f"{SECRET_TYPE}, {SECRET_HASH}", "1, 2")
    values = list(conn.execute(
        with_values + "SELECT type, SUM(n), COUNT(DISTINCT hash) FROM x GROUP BY type ORDER BY 2 DESC, 1",
        args,
    ))
    with_sessions, args = _in_span(
        span, "agg_secret_sessions", f"session_id, NULLIF(type, {NONE}) type, n",
        f"session_id, {SECRET_TYPE}", "1, 2")
    sessions = dict(conn.execute(
        with_sessions + "SELECT type, COUNT(DISTINCT session_id) FROM x GROUP BY type", args
    ))
    by_type = {t: {"findings": n, "distinct_values": d, "sessions": sessions[t]} for t, n, d in values}
    by_session = [
        {"session_id": sid, "agent": agent, "cwd": cwd, "project_root": root,
         "findings": n, "types": _types(types)}
        for sid, agent, cwd, root, n, types in conn.execute(
            with_sessions + "SELECT x.session_id, s.agent, s.cwd, s.project_root, SUM(n),"
            " group_concat(DISTINCT type) FROM x LEFT JOIN sessions s INDEXED BY sessions_report"
            " ON s.id = x.session_id GROUP BY x.session_id ORDER BY 5 DESC, 1 LIMIT ?",
            [*args, -1 if sessions_limit is None else sessions_limit],
        )
    ] if sessions_limit != 0 else []
    # By project in SQL, not from by_session: that list is often cut.
    by_project: dict[str, int] = {}
    sessions_with = 0
    for project, n, in_sessions in conn.execute(
        with_sessions + ", per_session AS (SELECT session_id, SUM(n) n FROM x GROUP BY"
        " session_id) SELECT COALESCE(NULLIF(s.project_root, ''), NULLIF(s.cwd, ''),"
        " '(unknown)') p, SUM(y.n) n, COUNT(*) FROM per_session y"
        " LEFT JOIN sessions s INDEXED BY sessions_report ON s.id = y.session_id"
        " GROUP BY p ORDER BY n DESC, p",
        args,
    ):
        by_project[project] = int(n)
        sessions_with += int(in_sessions)
    external = _external_reads_with_secrets(conn, span)
    sensitive = _sensitive_reads(conn, span)
    return {
        "findings": sum(v["findings"] for v in by_type.values()),
        "by_type": by_type,
        "sessions": sessions_with,
        "by_session": by_session,
        "by_project": by_project,
        "sensitive_reads": sensitive,
        "external_reads_with_secrets": external,
    }


def _external_reads_with_secrets(conn: apsw.Connection, span: Span) -> list[dict[str, Any]]:
    """Reads outside the project whose content carried a secret, per (path, session)."""
    with_files, args = _in_span(
        span, "agg_secret_files", f"path, session_id, NULLIF(type, {NONE}) type, n",
        f"path, session_id, {SECRET_TYPE}", "1, 2, 3", " WHERE path IS NOT NULL")
    return [
        {"path": p, "session_id": sid, "findings": n, "types": _types(types)}
        for p, sid, n, types in conn.execute(
            with_files + "SELECT path, session_id, SUM(n), group_concat(DISTINCT type) FROM x"
            " WHERE EXISTS (SELECT 1 FROM agg_external_reads r"
            " WHERE r.session_id = x.session_id AND r.path = x.path)"
            " GROUP BY path, session_id ORDER BY 3 DESC, 1, 2",
            args,
        )
    ]


def _sensitive_reads(conn: apsw.Connection, span: Span) -> list[dict[str, Any]]:
    """Sensitive reads in range, per path, with the findings naming the path (whatever
    their time)."""
    reads = (
        f"SELECT NULLIF(path, {NONE}) path, session_id, n, max_ts FROM agg_sensitive"
        f"{span.agg_where()}"
    )
    args = list(span.agg_args)
    boundary, boundary_args = span.boundary_events("sensitive_read", "e.path, e.session_id, e.ts")
    with_boundary = ""
    if boundary:
        with_boundary = f"b AS MATERIALIZED ({boundary}), "
        reads += " UNION ALL SELECT path, session_id, COUNT(*), MAX(ts) FROM b GROUP BY 1, 2"
        args = boundary_args + args
    return [
        {"path": p, "reads": n, "sessions": ns, "last_ts": last, "findings": nf}
        for p, n, ns, last, nf in conn.execute(
            f"WITH {with_boundary}r AS MATERIALIZED ({reads}) SELECT path, SUM(n), COUNT(DISTINCT session_id),"
            " MAX(max_ts), COALESCE((SELECT n FROM agg_secret_paths WHERE p = r.path), 0)"
            " FROM r GROUP BY path ORDER BY 2 DESC, 1",
            args,
        )
    ]


_USAGE_GROUPS = ("model", "project", "day", "agent")
# What a usage row sums: the token counts, then the costs (store/costs.py).
SUMMED = (*USAGE_FIELDS, *COST_FIELDS)


def sums_of(table: str) -> str:
    return ", ".join(f"SUM({table}.{f})" for f in SUMMED)


def usage_rows(
    conn: apsw.Connection,
    *,
    since_ts: str | None,
    until_ts: str | None,
    project: str | None,
    agent: str | None,
) -> tuple[str, list[Any]]:
    """``WITH usage_keys, src, per_session``: the usage aggregate's rows in range and
    scope (``src``: session_id, model, day, adapter, eproj, responses and SUMMED), and
    their sums per session (``per_session``), with the statement's values. The days
    wholly in range come from agg_usage; the boundary days' rows are computed once
    from their events (with their costs) and given as JSON."""
    span = Span(since_ts, until_ts)
    columns = (
        f"session_id, NULLIF(model, {NONE}) model, NULLIF(day, {NONE}) day, adapter,"
        f" NULLIF(project, {NONE}) eproj"
    )
    width = 6 + len(SUMMED)  # the columns, responses and the sums
    x = (
        f"SELECT {columns}, responses, {', '.join(SUMMED)} FROM agg_usage"
        f"{span.agg_where(*(['adapter = ?'] if agent else []))}"
    )
    x_args: list[Any] = [*span.agg_args, *([agent] if agent else [])]
    boundary, boundary_args = span.boundary_events(
        "usage",
        f"e.session_id, e.ts, e.adapter, {USAGE_JSON.replace('data', 'e.data')} j, {COST_SELECT}",
        ("e.adapter = ?", agent) if agent else None,
        COST_JOIN,
    )
    if boundary:
        rows = list(conn.execute(
            f"WITH b AS MATERIALIZED ({boundary}) SELECT session_id, {USAGE_MODEL},"
            f" substr(ts, 1, 10), adapter, {USAGE_PROJECT}, COUNT(*),"
            f" {', '.join([*USAGE_SUM_TERMS, *COST_SUM_TERMS])} FROM b GROUP BY 1, 2, 3, 4, 5",
            boundary_args,
        ))
        if rows:
            x += " UNION ALL SELECT " + ", ".join(
                f"j.value ->> {i}" for i in range(width)
            ) + " FROM json_each(?) j"
            x_args.append(orjson.dumps([list(r) for r in rows]).decode())
    scope = ""
    if project:
        scope = (
            " WHERE (usage_keys.eproj = ? OR usage_keys.session_id IN"
            " (SELECT id FROM sessions WHERE project_root = ? OR cwd = ?))"
        )
        x_args += [project, project, project]
    # The usage rows in range, scoped; and per session (their sums, for the counts of
    # distinct sessions by total and by project: a session has one project).
    with_rows = (
        f"WITH usage_keys AS ({x}), src AS (SELECT * FROM usage_keys{scope}),"
        " per_session AS (SELECT session_id, SUM(responses) responses,"
        f" {', '.join(f'SUM({f}) {f}' for f in SUMMED)} FROM src GROUP BY session_id) "
    )
    return with_rows, x_args


def session_join(table: str) -> str:
    return f"LEFT JOIN sessions ss INDEXED BY sessions_report ON ss.id = {table}.session_id"


# Per grouping over usage_rows' ``src`` and ``per_session``: (key, sessions, responses,
# *SUMMED). A usage event without a model counts under its session's model; its project
# is its session's project root (else cwd).
GROUPINGS = {
    "total": f"SELECT NULL, COUNT(*), SUM(responses), {sums_of('per_session')} FROM per_session",
    "day": f"SELECT day, COUNT(DISTINCT session_id), SUM(responses), {sums_of('src')}"
           " FROM src GROUP BY 1",
    "agent": f"SELECT adapter, COUNT(DISTINCT session_id), SUM(responses), {sums_of('src')}"
             " FROM src GROUP BY 1",
    "model": "SELECT COALESCE(src.model, ss.model), COUNT(DISTINCT src.session_id),"
             f" SUM(src.responses), {sums_of('src')} FROM src {session_join('src')} GROUP BY 1",
    "project": "SELECT COALESCE(ss.project_root, ss.cwd), COUNT(*), SUM(per_session.responses),"
               f" {sums_of('per_session')} FROM per_session {session_join('per_session')} GROUP BY 1",
}


def usage_summary(
    conn: apsw.Connection,
    *,
    since_ts: str | None,
    until_ts: str | None,
    project: str | None,
    agent: str | None,
) -> dict[str, Any]:
    """Token counts and costs of the usage events, in total and by model, project, day
    (UTC) and agent, each with the number of sessions and model responses counted.

    One lean query per grouping over the aggregate's rows in range (a grouping of its
    own reads the rows in the order it needs; one statement materializing them for all
    five took twice as long at 10 million events)."""
    if not (since_ts or until_ts or project or agent):  # an empty filter is none, as below
        return _usage_answer(since_ts, until_ts, usage_groups.summary_rows(conn))
    with_rows, args = usage_rows(conn, since_ts=since_ts, until_ts=until_ts, project=project,
                                 agent=agent)
    return _usage_answer(since_ts, until_ts, {
        group: list(conn.execute(with_rows + sql, args)) for group, sql in GROUPINGS.items()
    })


def _usage_answer(
    since_ts: str | None, until_ts: str | None, rows: dict[str, list[tuple[Any, ...]]]
) -> dict[str, Any]:
    """The summary from each grouping's (key, sessions, responses, *SUMMED) rows."""
    total = usage_row({})
    groups: dict[str, list[dict[str, Any]]] = {g: [] for g in _USAGE_GROUPS}
    for group, group_rows in rows.items():
        for key, sessions, responses, *counts in group_rows:
            if group == "total":
                if sessions:
                    total = usage_row({}, sessions, responses, counts)
                continue
            groups[group].append(usage_row({group: key}, sessions, responses, counts,
                                           model_known=key is not None if group == "model" else None))

    def ordered(key: str) -> list[dict[str, Any]]:
        out = groups[key]
        if key == "day":  # newest day first; others by tokens, most first
            return sorted(out, key=lambda r: r["day"] or "", reverse=True)
        return sorted(out, key=lambda r: (-r["total_tokens"], r[key] or ""))

    return {
        "since": since_ts,
        "until": until_ts,
        "totals": total,
        "by_model": ordered("model"),
        "by_project": ordered("project"),
        "by_day": ordered("day"),
        "by_agent": ordered("agent"),
    }


def usage_row(
    label: dict[str, Any],
    sessions: int = 0,
    responses: Any = 0,
    counts: list[Any] | None = None,
    *,
    model_known: bool | None = None,
) -> dict[str, Any]:
    """One row of a usage report: its label, sessions, responses, token counts and
    ``cost`` (store/costs.cost_json) from (SUMMED) sums."""
    values = counts or [0] * len(SUMMED)
    tokens = values[: len(USAGE_FIELDS)]
    spent = dict(zip(COST_FIELDS, values[len(USAGE_FIELDS):], strict=True))
    return {
        **label,
        "sessions": int(sessions),
        "responses": int(responses or 0),
        **{f: int(n or 0) for f, n in zip(USAGE_FIELDS, tokens, strict=True)},
        "cost": cost_json(spent, int(responses or 0), model_known),
    }
