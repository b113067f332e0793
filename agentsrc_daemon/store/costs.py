"""The requests' costs (issue 27; docs/usage.md): one row per usage event in
``usage_costs``, written in the commit that stores the event, summed by the usage
aggregates (store/aggregates.py, store/usage_groups.py), and priced again without
reading any transcript when the prices change (the re-price).

The store does not price: a usage event comes with its cost (``Row.cost``, priced by
the ingest's pricing stage, in a backfill worker or on the ingest thread), and the
writer is handed a function that prices a stored usage event (``CostOf``) for the rest:
an event rewritten by a claim or a revision, an event that came without one, and the
re-price. A cost is ``CostRow``: (nano-dollars shown or None, kind, our estimate in
nano-dollars or None, tokens no price covers).

The re-price. ``usage_pricing`` holds the fingerprint of the prices the stored costs
were computed with (pricing/overrides.fingerprint: the table, the overrides, the pricing
code's version) and how far a re-price got. When the daemon starts (or reloads) with
another fingerprint, ``begin_reprice`` records it with a mark at 0: the events stored
until then (ids up to ``target``) were priced with the old prices; events stored from
then on are priced with the new ones at ingest. ``reprice_step`` then prices a chunk of
usage events above the mark (through the usage events' partial index), writes the costs
that changed, moves the aggregates by the difference and advances the mark, in one
transaction: a kill -9 leaves each chunk done or not, and the next start (same
fingerprint) goes on from the mark."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import apsw
import orjson

from ..pricing.cost import (
    ESTIMATED,
    MIXED,
    NO_MODEL,
    REPORTED,
    UNKNOWN_MODEL,
    UNPRICED,
    from_nano,
    usd_float,
)
from .batch import Row
from .vocabulary import COST_FIELDS

# (nano-dollars shown, kind, our estimate in nano-dollars, tokens no price covers).
CostRow = tuple[int | None, str, int | None, int]
# Prices a stored usage event: (adapter, its data as JSON, its time) -> its cost.
CostOf = Callable[[str, bytes | str, str | None], CostRow]

TABLES = """
CREATE TABLE IF NOT EXISTS usage_costs (
    event_id INTEGER PRIMARY KEY,        -- the usage event (events.id)
    nusd INTEGER,                        -- the cost shown, nano-dollars; NULL: unpriced
    kind TEXT NOT NULL,                  -- estimated | reported | unpriced
    est_nusd INTEGER,                    -- our estimate (beside a reported cost); NULL: none
    unpriced_tokens INTEGER NOT NULL DEFAULT 0  -- tokens the shown figure leaves out
);
CREATE TABLE IF NOT EXISTS usage_pricing (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint TEXT NOT NULL,           -- the prices of the stored costs
    mark INTEGER NOT NULL DEFAULT 0,     -- re-priced up to this usage event id
    target INTEGER,                      -- ... of the events stored before (NULL: not known yet)
    done INTEGER NOT NULL DEFAULT 0,     -- usage events re-priced
    total INTEGER                        -- usage events to re-price (NULL: not counted yet)
);
"""

# The usage events a re-price reads, in id order above the mark (the partial index
# events_usage, schema 9), with their stored costs.
_CHUNK = (
    "SELECT e.id, e.adapter, e.data, e.ts, e.session_id, c.event_id, c.nusd, c.kind,"
    " c.est_nusd, c.unpriced_tokens FROM events e LEFT JOIN usage_costs c ON c.event_id = e.id"
    " WHERE e.kind = 'usage' AND e.id > ? AND e.id <= ? ORDER BY e.id LIMIT ?"
)
_UPSERT = (
    "INSERT INTO usage_costs(event_id, nusd, kind, est_nusd, unpriced_tokens) VALUES(?,?,?,?,?)"
    " ON CONFLICT DO UPDATE SET nusd = excluded.nusd, kind = excluded.kind,"
    " est_nusd = excluded.est_nusd, unpriced_tokens = excluded.unpriced_tokens"
)
# The aggregates moved by the difference of the changed costs (``:new``: a JSON array of
# [id, nusd, kind, est_nusd, unpriced_tokens], the old costs still stored): per key of
# agg_usage, computed by the expressions aggregates._UPSERT_USAGE groups by (an event
# not priced before counted as unpriced with its total tokens, as there). The groupings
# follow by agg_usage's triggers.
_MOVE_AGGREGATES = (
    "WITH n AS MATERIALIZED (SELECT value ->> 0 id, value ->> 1 nusd, value ->> 2 kind,"
    " value ->> 3 est, value ->> 4 ut FROM json_each(:new)),"
    " d AS MATERIALIZED (SELECT e.session_id s, e.ts, e.adapter a,"
    " json_extract(e.data, '$.model', '$.project_root', '$.total_tokens') j,"
    " COALESCE(n.nusd, 0) - COALESCE(o.nusd, 0) dn, COALESCE(n.est, 0) - COALESCE(o.est_nusd, 0) de,"
    " n.ut - CASE WHEN o.event_id IS NULL THEN 0 ELSE o.unpriced_tokens END du,"
    " o.event_id IS NULL pending,"
    " (n.kind IS 'estimated') - (o.kind IS 'estimated') dk1,"
    " (n.kind IS 'reported') - (o.kind IS 'reported') dk2"
    " FROM n JOIN events e ON e.id = n.id LEFT JOIN usage_costs o ON o.event_id = n.id),"
    " x AS (SELECT s, IFNULL(json_extract(j, '$[0]'), X'') m, IFNULL(substr(ts, 1, 10), X'') dy,"
    " a, IFNULL(json_extract(j, '$[1]'), X'') p, SUM(dn) dn, SUM(de) de,"
    " SUM(du - CASE WHEN pending THEN COALESCE(json_extract(j, '$[2]'), 0) ELSE 0 END) du,"
    " SUM(dk1) dk1, SUM(dk2) dk2 FROM d GROUP BY 1, 2, 3, 4, 5)"
    " UPDATE agg_usage SET cost_nusd = cost_nusd + x.dn, est_nusd = est_nusd + x.de,"
    " unpriced_tokens = unpriced_tokens + x.du, cost_estimated = cost_estimated + x.dk1,"
    " cost_reported = cost_reported + x.dk2 FROM x WHERE agg_usage.session_id = x.s"
    " AND agg_usage.model = x.m AND agg_usage.day = x.dy AND agg_usage.adapter = x.a"
    " AND agg_usage.project = x.p AND (x.dn OR x.de OR x.du OR x.dk1 OR x.dk2)"
)
# A sink configured: events it already sent whose cost changed are sent again, and
# their sessions (whose totals moved).
_SINK_REVISED = (
    "WITH c(id) AS (SELECT value FROM json_each(:ids))"
    " DELETE FROM sink_revised WHERE event_id IN (SELECT id FROM c);"
    " WITH c(id) AS (SELECT value FROM json_each(:ids))"
    " INSERT INTO sink_revised(event_id) SELECT id FROM c"
    " WHERE id <= (SELECT MAX(hwm) FROM sink_state);"
    " WITH c(s) AS (SELECT value FROM json_each(:sessions))"
    " DELETE FROM sink_sessions WHERE session_id IN (SELECT s FROM c);"
    " WITH c(s) AS (SELECT value FROM json_each(:sessions))"
    " INSERT INTO sink_sessions(session_id) SELECT s FROM c"
)


# What a rewritten usage event's cost becomes when neither its data nor its time changed.
KEEP = None


class CommitCosts:
    """The costs of one commit's usage events, kept by the writer (store/writer.py): a
    new event's (the one it came with, else priced with ``cost_of``) waits until the
    commit's claims are done, then all are written before the aggregates take the
    commit's events; a stored event a claim or a revision rewrote is priced again as it
    now stands. ``cost_of`` is the daemon's (None: no prices given; an event without a
    cost then waits for the re-price)."""

    def __init__(self) -> None:
        self.cost_of: CostOf | None = None
        self.pending: dict[int, CostRow] = {}

    def new(self, eid: int, r: Row) -> None:
        cost = r.cost
        if cost is None and self.cost_of is not None:
            cost = self.cost_of(r.adapter, r.data, r.ts)
        if cost is not None:
            self.pending[eid] = cost

    def after(self, r: Row, data: bytes | str, ts: str | None, stored_ts: str | None) -> CostRow | None:
        """A rewritten usage event's cost, now that its data is ``data`` and its time
        ``ts``: the one ``r`` came with when both are its own, the stored one (KEEP)
        when neither changed, else priced again."""
        if data is r.data and ts == r.ts and r.cost is not None:
            return r.cost
        if data is not r.data and ts == stored_ts:
            return KEEP
        return None if self.cost_of is None else self.cost_of(r.adapter, data, ts)

    def rewritten(self, conn: apsw.Connection, eid: int, cost: CostRow | None, aggregated: bool) -> None:
        """A rewritten event's new cost: written now when the aggregates count it (its
        share is out, to be added back), else waiting with the commit's new ones."""
        if cost is KEEP:
            return
        if aggregated:
            write(conn, [(eid, cost)])
        else:
            self.pending[eid] = cost

    def flush(self, conn: apsw.Connection) -> None:
        if self.pending:
            write(conn, sorted(self.pending.items()))
            self.pending = {}


def write(conn: apsw.Connection, costs: Iterable[tuple[int, CostRow]]) -> None:
    """The costs of usage events (by id), in the caller's transaction, before the
    aggregates take the events (they sum usage_costs)."""
    conn.executemany(_UPSERT, [(eid, *cost) for eid, cost in costs])


def price_stored(conn: apsw.Connection, event_id: int, cost_of: CostOf) -> None:
    """A stored usage event priced as it now stands (after a claim or a revision
    rewrote it), in the caller's transaction, between the aggregates' taking its share
    back and adding it again."""
    row = conn.execute(
        "SELECT adapter, data, ts FROM events WHERE id = ? AND kind = 'usage'", (event_id,)
    ).fetchone()
    if row is not None:
        write(conn, [(event_id, cost_of(row[0], row[1], row[2]))])


# ---- the re-price --------------------------------------------------------------------


def fingerprint(conn: apsw.Connection) -> str | None:
    row = conn.execute("SELECT fingerprint FROM usage_pricing").fetchone()
    return None if row is None else str(row[0])


def begin_reprice(conn: apsw.Connection, new: str, *, at_start: bool) -> bool:
    """The prices are now ``new``: when the stored costs were computed with others,
    every usage event stored until now is to be priced again. At start the events up
    to the newest are (later ones are priced with ``new`` at ingest); after a reload,
    rounds priced with the old prices may still be committed (a backfill worker's), so
    the target is taken at the re-price's first step, once they are. Whether a
    re-price begins."""
    with conn:
        if fingerprint(conn) == new:
            return False
        conn.execute(
            "INSERT INTO usage_pricing(id, fingerprint, mark, target, done, total)"
            " VALUES (1, ?, 0, ?, 0, NULL) ON CONFLICT DO UPDATE SET fingerprint = excluded.fingerprint,"
            " mark = 0, target = excluded.target, done = 0, total = NULL",
            (new, _newest_usage(conn) if at_start else None),
        )
    return True


def _newest_usage(conn: apsw.Connection) -> int:
    row = conn.execute("SELECT MAX(id) FROM events WHERE kind = 'usage'").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def reprice_progress(conn: apsw.Connection) -> dict[str, Any] | None:
    """``{done, total, fraction}`` while a re-price runs, else None."""
    row = conn.execute("SELECT mark, target, done, total FROM usage_pricing").fetchone()
    if row is None:
        return None
    mark, target, done, total = row
    if target is not None and mark >= target:
        return None
    total = max(int(total or 0), int(done))
    return {"done": int(done), "total": total,
            "fraction": round(done / total, 4) if total else 0.0}


class Step(NamedTuple):
    priced: int  # usage events priced again by this step
    more: bool  # whether more is left


def reprice_step(conn: apsw.Connection, cost_of: CostOf, chunk: int) -> Step:
    """Price up to ``chunk`` usage events above the mark again, in one transaction:
    the costs that changed written, the aggregates moved by the difference, the mark
    advanced. How many were priced, and whether more is left."""
    with conn:
        step = _reprice_chunk(conn, cost_of, chunk)
    return step


def _reprice_chunk(conn: apsw.Connection, cost_of: CostOf, chunk: int) -> Step:
    row = conn.execute("SELECT mark, target, done, total FROM usage_pricing").fetchone()
    if row is None:
        return Step(0, False)
    mark, target, done, total = row
    if target is None:
        target = _newest_usage(conn)
    if mark >= target:
        conn.execute("UPDATE usage_pricing SET target = ? WHERE id = 1", (target,))
        return Step(0, False)
    if total is None:
        counted = conn.execute(
            "SELECT COUNT(*) FROM events WHERE kind = 'usage' AND id > ? AND id <= ?",
            (mark, target),
        ).fetchone()
        total = int(counted[0]) if counted else 0
    rows = list(conn.execute(_CHUNK, (mark, target, chunk)))
    changed, sessions = _changed(rows, cost_of)
    if changed:
        conn.execute(_MOVE_AGGREGATES, {"new": orjson.dumps(changed).decode()})
        write(conn, [(c[0], (c[1], c[2], c[3], c[4])) for c in changed])
        if conn.execute("SELECT 1 FROM sink_state LIMIT 1").fetchone():
            conn.execute(_SINK_REVISED, {"ids": orjson.dumps([c[0] for c in changed]).decode(),
                                         "sessions": orjson.dumps(sorted(sessions)).decode()})
    mark = rows[-1][0] if len(rows) == chunk else target
    conn.execute(
        "UPDATE usage_pricing SET mark = ?, target = ?, done = ?, total = ? WHERE id = 1",
        (mark, target, int(done) + len(rows), total),
    )
    return Step(len(rows), bool(mark < target))


def _changed(rows: list[Any], cost_of: CostOf) -> tuple[list[list[Any]], set[str]]:
    """The rows whose cost differs from the stored one (or that have none), each as
    [id, nusd, kind, est_nusd, unpriced_tokens], and their sessions."""
    changed: list[list[Any]] = []
    sessions: set[str] = set()
    for eid, adapter, data, ts, session_id, stored, nusd, kind, est, unpriced in rows:
        new = cost_of(adapter, data, ts)
        if stored is None or new != (nusd, kind, est, unpriced):
            changed.append([eid, *new])
            sessions.add(session_id)
    return changed, sessions


# ---- costs as every surface shows them ---------------------------------------------


def cost_json(sums: dict[str, Any], responses: int, model_known: bool | None = None) -> dict[str, Any]:
    """A total's ``cost`` object (docs/protocol.md) from the aggregates' sums
    (COST_FIELDS) over ``responses`` requests: ``usd`` the priced parts (null when
    nothing could be), ``kind`` one kind or ``mixed``, ``unpriced_tokens`` what the
    figure leaves out, ``estimated_usd`` our estimate where the agents reported costs,
    and for an unpriced total the ``reason`` (``model_known``: False when no model was
    recorded, True when one was; None: not said). The sum of no request is $0,
    estimated."""
    nusd, est, unpriced_tokens, estimated, reported = (int(sums.get(f) or 0) for f in COST_FIELDS)
    unpriced = max(0, int(responses) - estimated - reported)
    kinds = [k for k, n in ((ESTIMATED, estimated), (REPORTED, reported), (UNPRICED, unpriced)) if n]
    kind = kinds[0] if len(kinds) == 1 else (ESTIMATED if not kinds else MIXED)
    out: dict[str, Any] = {"usd": None if kind == UNPRICED else usd(nusd), "kind": kind}
    if reported:
        out["estimated_usd"] = usd(est)
    if unpriced_tokens or kind == UNPRICED:
        out["unpriced_tokens"] = unpriced_tokens
    if kind == UNPRICED and model_known is not None:
        out["reason"] = UNKNOWN_MODEL if model_known else NO_MODEL
    return out


# A session that recorded no usage at all (an agent whose transcripts carry none):
# nothing to price, and not $0 either.
NO_USAGE = "no usage recorded"


def no_usage() -> dict[str, Any]:
    return {"usd": None, "kind": UNPRICED, "unpriced_tokens": 0, "reason": NO_USAGE}


def usd(nusd: int) -> float:
    """Nano-dollars as the JSON's dollars: rounded to the micro-dollar, half to even
    (pricing.cost's rule)."""
    return usd_float(from_nano(int(nusd)))
