"""What ``status`` reports of the store: its sizes, skipped lines, drift, the search
index's build, and the sources' list. By indexes and counters: never a scan of the
sources' rows, each of which holds its file's adapter state (schema 18)."""

from __future__ import annotations

from typing import Any

import apsw
import orjson


def counts(conn: apsw.Connection) -> dict[str, int]:
    """The store's sizes for ``status``: by indexes and counters, never the sources'
    rows (each holds its file's adapter state: schema 18)."""
    files = conn.execute(
        "SELECT COUNT(*) FROM sources INDEXED BY sources_present WHERE gone_at IS NULL"
    ).fetchone()
    sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
    events = conn.execute("SELECT value FROM counters WHERE name = 'events'").fetchone()
    gone = conn.execute(
        "SELECT COUNT(*) FROM sources INDEXED BY sources_gone WHERE gone_at IS NOT NULL"
    ).fetchone()
    return {
        "files": int(files[0]) if files else 0,
        "files_gone": int(gone[0]) if gone else 0,
        "sessions": int(sessions[0]) if sessions else 0,
        "events": int(events[0]) if events else 0,
    }


def last_event_id(conn: apsw.Connection) -> int:
    """The newest event id (ids increase but have gaps: not a count)."""
    row = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
    return int(row[0]) if row else 0


def skipped_totals(conn: apsw.Connection) -> dict[str, int]:
    totals: dict[str, int] = {}
    for (skipped,) in conn.execute(
        "SELECT skipped FROM sources INDEXED BY sources_skipping WHERE skipped != '{}'"
    ):
        for k, v in orjson.loads(skipped).items():
            totals[k] = totals.get(k, 0) + int(v)
    return totals


def drift(conn: apsw.Connection) -> list[dict[str, Any]]:
    return [
        {"adapter": a, "version": v, "record_type": t, "count": n, "last_seen": ls}
        for a, v, t, n, ls in conn.execute(
            "SELECT adapter, version, record_type, count, last_seen FROM drift"
            " ORDER BY count DESC, adapter, record_type"
        )
    ]


def sources(conn: apsw.Connection, path_like: str | None = None) -> list[dict[str, Any]]:
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
        for p, a, m, s, o, n, sk, g, gone in conn.execute(sql + " ORDER BY path", args)
    ]


def search_progress(conn: apsw.Connection) -> dict[str, Any]:
    """The search index's build over the events stored before it (store/writer.py)."""
    values = dict(
        conn.execute(
            "SELECT name, value FROM counters WHERE name IN ('search_done', 'search_target')"
        )
    )
    done, target = int(values.get("search_done", 0)), int(values.get("search_target", 0))
    return {
        "state": "ready" if done >= target else "building",
        "indexed_upto": done,
        "target": target,
    }
