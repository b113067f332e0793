"""What usage cost, the ways a person asks (``usage.report``, ``agentsrc usage --by``),
and what the status line asks (``usage.statusline``): one session's cost, today's and
the current 5-hour block's.

``usage.report`` groups the usage aggregate's rows in range (store/reports.usage_rows)
by day, week (its Monday), month, session, project, model or agent, each row with its
token counts and its ``cost``. The status line is asked every few hundred
milliseconds, so it reads no event's JSON: the session's sums from the usage groupings,
today's from the per-day groupings (whole UTC days) and the boundary day's costs from
usage_costs by the report-day index, the block from the last day's usage costs by hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import apsw

from .breakdowns import block_of, chain, hourly_costs
from .costs import cost_json
from .reports import GROUPINGS, SUMMED, sums_of, usage_row, usage_rows, usage_summary
from .reports import session_join as _join
from .vocabulary import COST_FIELDS

BYS = ("day", "week", "month", "session", "project", "model", "agent")
TIME_GROUPS = ("day", "week", "month")  # listed newest first; the others by cost
# The groupings usage.summary has not: a week is named by its Monday (UTC days).
_MORE = {
    "week": "SELECT date(day, '-6 days', 'weekday 1'), COUNT(DISTINCT session_id),"
            f" SUM(responses), {sums_of('src')} FROM src GROUP BY 1",
    "month": "SELECT substr(day, 1, 7), COUNT(DISTINCT session_id), SUM(responses),"
             f" {sums_of('src')} FROM src GROUP BY 1",
    # The top sessions first, then their facts: one lookup per row listed, not per
    # session in range.
    # (a CTE after usage_rows' own)
    "session": ", top AS (SELECT * FROM per_session ORDER BY cost_nusd DESC, total_tokens DESC,"
               " session_id LIMIT ?) SELECT top.session_id, 1, top.responses,"
               f" {', '.join(f'top.{f}' for f in SUMMED)}, ss.agent, ss.model,"
               " COALESCE(ss.project_root, ss.cwd), ss.title, ss.started_at, ss.last_event_at"
               f" FROM top {_join('top')}",
}
# A session row's facts after its sums (in _MORE["session"]'s order).
_SESSION_FACTS = ("agent", "model", "project", "title", "started_at", "last_event_at")


def usage_report(
    conn: apsw.Connection,
    *,
    by: str,
    since_ts: str | None,
    until_ts: str | None,
    project: str | None,
    agent: str | None,
    limit: int,
) -> dict[str, Any]:
    """The usage in range, by ``by`` (BYS): ``{by, since, until, totals, rows}``, each
    row its key (named ``by``), sessions, responses, token counts and ``cost``; time
    groups newest first, the others by cost, most first (then tokens), at most
    ``limit`` rows."""
    if by not in _MORE:
        summary = usage_summary(conn, since_ts=since_ts, until_ts=until_ts, project=project,
                                agent=agent)
        totals, rows = summary["totals"], summary[f"by_{by}"]
    else:
        with_rows, args = usage_rows(conn, since_ts=since_ts, until_ts=until_ts,
                                     project=project, agent=agent)
        (total,) = list(conn.execute(with_rows + GROUPINGS["total"], args)) or [(None, 0, 0)]
        totals = usage_row({}, total[1], total[2], list(total[3:])) if total[1] else usage_row({})
        more_args = [*args, limit] if by == "session" else args
        rows = [_row(by, r) for r in conn.execute(with_rows + _MORE[by], more_args)]
    if by in TIME_GROUPS:
        rows = sorted(rows, key=lambda r: r[by] or "", reverse=True)
    else:
        rows = sorted(rows, key=lambda r: (-(r["cost"]["usd"] or 0), -r["total_tokens"],
                                           str(r[by] or "")))
    return {"by": by, "since": since_ts, "until": until_ts, "totals": totals,
            "rows": rows[:limit]}


def _row(by: str, r: tuple[Any, ...]) -> dict[str, Any]:
    key, sessions, responses = r[0], r[1], r[2]
    sums = list(r[3:3 + len(SUMMED)])
    if by != "session":
        return usage_row({by: key}, sessions, responses, sums)
    facts = dict(zip(_SESSION_FACTS, r[3 + len(SUMMED):], strict=True))
    row = usage_row({by: key}, sessions, responses, sums,
                    model_known=facts["model"] is not None)
    return {**row, **facts}


# ---- the status line -------------------------------------------------------------


def statusline(
    conn: apsw.Connection, session_id: str | None, day_start: str, now: datetime
) -> dict[str, Any]:
    """``usage.statusline``: the session's cost and tokens (None when it has no usage
    yet), the cost since ``day_start`` (an ISO time, UTC: the start of the user's day),
    and the current 5-hour block (None when none is active)."""
    return {
        "session": _session(conn, session_id) if session_id else None,
        "today": {"cost": _since(conn, day_start)},
        "block": _block(conn, now),
    }


def _session(conn: apsw.Connection, session_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        f"SELECT b.responses, b.total_tokens, s.model, {', '.join(f'b.{f}' for f in COST_FIELDS)}"
        " FROM agg_usage_by b LEFT JOIN sessions s ON s.id = b.session_id"
        " WHERE b.dim = 'session' AND b.value = X'' AND b.session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    responses, tokens, model, *sums = row
    return {"cost": cost_json(dict(zip(COST_FIELDS, sums, strict=True)), responses,
                              model_known=model is not None),
            "tokens": int(tokens)}


def _since(conn: apsw.Connection, since: str) -> dict[str, Any]:
    """The cost of every request at or after ``since``: the whole UTC days after its
    own from the per-day groupings, its own day's requests from their costs."""
    day = since[:10]
    whole = conn.execute(
        f"SELECT COALESCE(SUM(responses), 0), {', '.join(f'COALESCE(SUM({f}), 0)' for f in COST_FIELDS)}"
        " FROM agg_usage_group WHERE dim = 'day' AND value > ? AND value < X''",
        (day,),
    ).fetchone()
    part = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(c.nusd), 0), COALESCE(SUM(c.est_nusd), 0),"
        " COALESCE(SUM(c.unpriced_tokens), 0), COALESCE(SUM(c.kind IS 'estimated'), 0),"
        " COALESCE(SUM(c.kind IS 'reported'), 0) FROM events e"
        " LEFT JOIN usage_costs c ON c.event_id = e.id"
        " WHERE e.kind IN ('usage', 'secret', 'sensitive_read') AND e.kind = 'usage'"
        " AND substr(e.ts, 1, 10) = ? AND e.ts >= ?",
        (day, since),
    ).fetchone()
    assert whole is not None and part is not None  # aggregates always give a row
    responses = int(whole[0]) + int(part[0])
    sums = {f: int(a) + int(b) for f, a, b in zip(COST_FIELDS, whole[1:], part[1:], strict=True)}
    return cost_json(sums, responses)


def _block(conn: apsw.Connection, now: datetime) -> dict[str, Any] | None:
    """The active 5-hour block at ``now``, from the last day's usage by hour (a block
    that began more than a day ago is not looked for: it would have ended)."""
    since = (now - timedelta(hours=24)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    blocks = chain(hourly_costs(conn, since, None, tokens=False))
    if not blocks:
        return None
    block = block_of(*blocks[-1], now=now)
    return block if block["active"] else None
