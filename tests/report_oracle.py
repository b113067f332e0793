"""The reports as they were computed before the maintained aggregates (schema 9): over
every event of their kinds. Kept as the oracle the aggregates must agree with
(tests/test_reports.py); not used by the daemon."""

from __future__ import annotations

from typing import Any

import apsw

from agentsrc_daemon.store.costs import cost_json
from agentsrc_daemon.store.vocabulary import COST_FIELDS, USAGE_FIELDS
from agentsrc_daemon.store.where import Where


def _usage_bucket(label: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**(label or {}), "sessions": set(), "responses": 0, **dict.fromkeys(USAGE_FIELDS, 0),
            **dict.fromkeys(COST_FIELDS, 0)}


def _usage_row(bucket: dict[str, Any], model_known: bool | None = None) -> dict[str, Any]:
    row = {k: v for k, v in bucket.items() if k not in COST_FIELDS}
    row["sessions"] = len(bucket["sessions"])
    row["cost"] = cost_json(bucket, bucket["responses"], model_known)
    return row


def findings_report(conn: apsw.Connection, *, since_ts: str | None = None) -> dict[str, Any]:
    """Counts by type, session and project; sensitive reads; reads outside the
    project whose content carried a secret."""
    since = "AND e.ts >= ?" if since_ts else ""
    args: tuple[Any, ...] = (since_ts,) if since_ts else ()
    with conn:
        by_type = {
            t: {"findings": n, "distinct_values": d, "sessions": ns}
            for t, n, d, ns in conn.execute(
                "SELECT json_extract(e.data, '$.type') t, COUNT(*),"
                " COUNT(DISTINCT json_extract(e.data, '$.hash')), COUNT(DISTINCT e.session_id)"
                f" FROM events e WHERE e.kind = 'secret' {since} GROUP BY t ORDER BY 2 DESC",
                args,
            )
        }
        by_session = [
            {"session_id": sid, "agent": agent, "cwd": cwd, "project_root": root,
             "findings": n, "types": sorted(set((types or "").split(",")))}
            for sid, agent, cwd, root, n, types in conn.execute(
                "SELECT e.session_id, s.agent, s.cwd, s.project_root, COUNT(*),"
                " group_concat(DISTINCT json_extract(e.data, '$.type'))"
                " FROM events e LEFT JOIN sessions s ON s.id = e.session_id"
                f" WHERE e.kind = 'secret' {since} GROUP BY e.session_id ORDER BY 5 DESC",
                args,
            )
        ]
        by_project: dict[str, int] = {}
        for entry in by_session:
            key = entry["project_root"] or entry["cwd"] or "(unknown)"
            by_project[key] = by_project.get(key, 0) + entry["findings"]
        # A sensitive read and the findings in what it read, whether the finding names
        # the path alone or among the candidates of a call that read several files.
        sensitive = [
            {"path": p, "reads": n, "sessions": ns, "last_ts": last, "findings": nf}
            for p, n, ns, last, nf in conn.execute(
                # The findings per path counted once, not once per sensitive path (that
                # was every finding read for each one: quadratic in a long history).
                "WITH fp(id, p) AS (SELECT id, path FROM events WHERE kind = 'secret'"
                " AND path IS NOT NULL UNION SELECT f.id, j.value FROM events f,"
                " json_each(f.data, '$.paths') j WHERE f.kind = 'secret'),"
                " per_path AS MATERIALIZED (SELECT p, COUNT(*) n FROM fp GROUP BY p)"
                " SELECT e.path, COUNT(*), COUNT(DISTINCT e.session_id), MAX(e.ts),"
                " COALESCE((SELECT n FROM per_path WHERE per_path.p = e.path), 0) FROM events e"
                f" WHERE e.kind = 'sensitive_read' {since} GROUP BY e.path ORDER BY 2 DESC",
                args,
            )
        ]
        external = [
            {"path": p, "session_id": sid, "findings": n,
             "types": sorted(set((types or "").split(",")))}
            for p, sid, n, types in conn.execute(
                "SELECT e.path, e.session_id, COUNT(*),"
                " group_concat(DISTINCT json_extract(e.data, '$.type')) FROM events e"
                " WHERE e.kind = 'secret' AND e.path IS NOT NULL"
                f" {since} AND EXISTS (SELECT 1 FROM events r WHERE r.kind = 'read'"
                " AND r.session_id = e.session_id AND r.path = e.path"
                " AND json_extract(r.data, '$.external') = 1)"
                " GROUP BY e.path, e.session_id ORDER BY 3 DESC",
                args,
            )
        ]
        total = sum(v["findings"] for v in by_type.values())
    return {
        "findings": total,
        "by_type": by_type,
        "sessions": len(by_session),
        "by_session": by_session,
        "by_project": dict(sorted(by_project.items(), key=lambda kv: -kv[1])),
        "sensitive_reads": sensitive,
        "external_reads_with_secrets": external,
    }

def usage_summary(
    conn: apsw.Connection,
    *,
    since_ts: str | None = None,
    until_ts: str | None = None,
    project: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """Token counts of the usage events, in total and by model, project, day (UTC) and
    agent, each with the number of sessions and model responses counted. A usage
    event without a model counts under its session's model; its project is its
    session's project root (else cwd)."""
    where = Where()
    where.kind_in(["usage"])
    where.scope(agent=agent, project=project, since_ts=since_ts)
    if until_ts:
        where.add("e.ts < ?", until_ts)
    sums = ", ".join(
        f"SUM(COALESCE(json_extract(e.data, '$.{f}'), 0))" for f in USAGE_FIELDS
    )
    # Each request's cost as stored (usage_costs); one not priced yet counts as
    # unpriced with its total tokens.
    costs = (
        "SUM(COALESCE(c.nusd, 0)), SUM(COALESCE(c.est_nusd, 0)),"
        " SUM(CASE WHEN c.event_id IS NULL THEN COALESCE(json_extract(e.data, '$.total_tokens'), 0)"
        " ELSE c.unpriced_tokens END), SUM(c.kind IS 'estimated'), SUM(c.kind IS 'reported')"
    )
    sql = (
        "SELECT COALESCE(json_extract(e.data, '$.model'), ss.model),"
        " COALESCE(ss.project_root, ss.cwd), substr(e.ts, 1, 10), e.adapter, e.session_id,"
        f" COUNT(*), {sums}, {costs}"
        " FROM events e LEFT JOIN sessions ss ON ss.id = e.session_id"
        f" LEFT JOIN usage_costs c ON c.event_id = e.id{where.sql()} GROUP BY 1, 2, 3, 4, 5"
    )
    keys = ("model", "project", "day", "agent")
    groups: dict[str, dict[Any, dict[str, Any]]] = {k: {} for k in keys}
    total = _usage_bucket()
    with conn:
        for row in conn.execute(sql, where.args):
            sid, responses, counts = row[4], int(row[5]), [int(n or 0) for n in row[6:]]
            for bucket in [total] + [
                groups[k].setdefault(row[i], _usage_bucket({k: row[i]}))
                for i, k in enumerate(keys)
            ]:
                bucket["sessions"].add(sid)
                bucket["responses"] += responses
                for f, n in zip((*USAGE_FIELDS, *COST_FIELDS), counts, strict=True):
                    bucket[f] += n

    def rows(key: str) -> list[dict[str, Any]]:
        out = [_usage_row(b, b[key] is not None if key == "model" else None)
               for b in groups[key].values()]
        if key == "day":  # newest day first; others by tokens, most first
            return sorted(out, key=lambda r: r["day"] or "", reverse=True)
        return sorted(out, key=lambda r: (-r["total_tokens"], r[key] or ""))

    return {
        "since": since_ts,
        "until": until_ts,
        "totals": _usage_row(total),
        "by_model": rows("model"),
        "by_project": rows("project"),
        "by_day": rows("day"),
        "by_agent": rows("agent"),
    }

