"""How faithfully the agents' records are read (the fidelity table, schema 19): per
adapter, agent version and record type, the records read and what became of them
(events, ignored on purpose, folded, not understood: store/batch.py's OUTCOMES), and
per adapter and version the share not understood. ``status`` reports the summary,
the ``fidelity`` socket method the rows, ``agentsrc doctor`` the versions past
``WARN_SHARE`` (docs/formats.md, "Fidelity")."""

from __future__ import annotations

from typing import Any

import apsw

# A version whose records are not understood past this share is worth a warning:
# its format changed under the adapter (docs/formats.md, "Fidelity").
WARN_SHARE = 0.01
COUNTS = ("read", "events", "ignored", "folded", "not_understood")


def rows(
    conn: apsw.Connection, adapter: str | None = None, version: str | None = None
) -> list[dict[str, Any]]:
    """The table's rows (every record type of every version read), optionally of one
    adapter and version, most read first."""
    sql = (
        "SELECT adapter, version, record_type, read, events, ignored, folded, not_understood,"
        " last_seen FROM fidelity"
    )
    where: list[str] = []
    args: list[Any] = []
    if adapter is not None:
        where.append("adapter = ?")
        args.append(adapter)
    if version is not None:
        where.append("version = ?")
        args.append(version)
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY adapter, version, read DESC, record_type"
    return [
        {
            "adapter": a,
            "version": v,
            "record_type": t,
            "read": r,
            "events": e,
            "ignored": i,
            "folded": f,
            "not_understood": n,
            "last_seen": seen,
        }
        for a, v, t, r, e, i, f, n, seen in conn.execute(sql, args)
    ]


def summary(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per adapter and version: the counts summed over its record types, the share not
    understood, and the record types not understood (most first). Pure."""
    by_version: dict[tuple[str, str], dict[str, Any]] = {}
    for row in table:
        key = (row["adapter"], row["version"])
        s = by_version.get(key)
        if s is None:
            s = by_version[key] = {
                "adapter": key[0],
                "version": key[1],
                **dict.fromkeys(COUNTS, 0),
                "record_types": 0,
                "not_understood_types": [],
            }
        for name in COUNTS:
            s[name] += row[name]
        s["record_types"] += 1
        if row["not_understood"]:
            s["not_understood_types"].append([row["record_type"], row["not_understood"]])
    out = []
    for s in by_version.values():
        s["not_understood_share"] = s["not_understood"] / s["read"] if s["read"] else 0.0
        s["not_understood_types"].sort(key=lambda t: (-t[1], t[0]))
        out.append(s)
    out.sort(key=lambda s: (s["adapter"], s["version"]))
    return out


def warnings(versions: list[dict[str, Any]], share: float = WARN_SHARE) -> list[dict[str, Any]]:
    """The versions (``summary``'s) whose share of records not understood passes
    ``share``. Pure."""
    return [s for s in versions if s["not_understood_share"] > share]
