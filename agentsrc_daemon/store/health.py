"""What ``agentsrc doctor`` asks of the store file itself (system/doctor.py words the
checks): its integrity, its largest sessions, and how faithfully it read the agents'
records. Each on a read-only connection of its
own, opened and closed here, while the daemon may be writing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw


def quick_check(db: Path, busy_ms: int) -> list[str]:
    """``PRAGMA quick_check``: ``["ok"]``, or the problems it found. Raises apsw.Error
    when the file cannot be read."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(busy_ms)
        return [str(row[0]) for row in conn.execute("PRAGMA quick_check")]
    finally:
        conn.close()


def largest_sessions(db: Path, limit: int, busy_ms: int) -> tuple[list[tuple[Any, ...]], int]:
    """The ``limit`` sessions with the most records, by their maintained counters (one
    read of the sessions table, never a scan of events): (id, records, prompts,
    messages, tool calls, total tokens) each; and how many sessions there are. Raises
    apsw.Error when the file cannot be read."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(busy_ms)
        rows = list(conn.execute(
            "SELECT id, prompts + messages + tool_calls AS n, prompts, messages, tool_calls,"
            " total_tokens FROM sessions ORDER BY n DESC, id LIMIT ?", (limit,)
        ))
        total = conn.execute("SELECT count(*) FROM sessions").fetchall()[0][0]
    finally:
        conn.close()
    assert isinstance(total, int)  # COUNT(*)
    return rows, total


def fidelity(db: Path, busy_ms: int) -> list[dict[str, Any]]:
    """The fidelity table's rows (store/queries/fidelity.py); [] on a store from before
    it (schema 19). Raises apsw.Error when the file cannot be read."""
    from .queries import fidelity as queries

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(busy_ms)
        if not conn.execute(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'fidelity'"
        ).fetchall():
            return []
        return queries.rows(conn)
    finally:
        conn.close()
