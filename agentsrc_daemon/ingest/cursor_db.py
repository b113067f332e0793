"""Reads a Cursor CLI chat database (``~/.cursor/chats/<md5 of cwd>/<agent id>/store.db``)
while ``cursor-agent`` runs: its ``meta`` table only, read-only, never blocking it.

The database holds two tables (docs/formats.md, "Cursor"): ``meta`` (``key``, ``value``:
the hex encoding of a JSON object, one row with key "0" that names the chat, its
model, its mode and when it was made) and ``blobs`` (``id``, ``data``: the content of
the conversation, addressed by hash, partly in a binary encoding of Cursor's own; not
read). A poll reads the ``meta`` rows in one short read transaction and returns them
when they differ from what the cursor says was delivered (a digest of the rows), so a
chat renamed or switched to another model is read again and nothing else is.

The connection, change detection and what happens to a busy or replaced file are
the agent database reader's (``agent_db``): read-only, ``query_only``, no checkpoint on
close, ``PRAGMA data_version`` plus the stats of the file and its ``-wal``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import apsw

from .agent_db import (
    DEFAULT_BUSY_TIMEOUT_MS,
    MISSING_TABLE,
    SQL_ERROR,
    AgentDB,
    DbSchema,
    Page,
    PollResult,
    _rollback,
    _signature,
)

TABLE = "meta"
MAX_ROWS = 64  # meta is a handful of rows; more are not read
MAX_VALUE_BYTES = 1 << 20  # a value larger than this is not Cursor's metadata
CURSOR_VERSION = 1


# No table is read through AgentDB's keyset polls: ``poll`` below reads ``meta`` itself.
_NO_KEYSET_TABLES = DbSchema(tables=(), poll_order=())


class CursorChatDB(AgentDB):
    """One chat database; only the connection handling of AgentDB is shared."""

    def __init__(self, path: str, *, max_bytes: int = MAX_VALUE_BYTES,
                 busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        super().__init__(path, _NO_KEYSET_TABLES, max_bytes=max_bytes,
                         busy_timeout_ms=busy_timeout_ms)

    def poll(self, cursor: dict[str, Any] | None) -> PollResult:
        """The ``meta`` rows (key, value) when they changed since ``cursor``."""
        result = PollResult()
        held: dict[str, Any] = (
            dict(cursor) if isinstance(cursor, dict) and cursor.get("v") == CURSOR_VERSION
            else _empty()
        )
        opened = self._open_for_poll(result, held, _empty)
        if opened is None:
            return result
        conn, cur = opened
        stats = (_signature(self.path), _signature(self.path + "-wal"))
        try:
            data_version = self._read_data_version(conn)
            conn.execute("BEGIN")
            try:
                rows = self._meta_rows(conn, result.errors)
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT")
        except (apsw.BusyError, apsw.LockedError) as exc:
            result.busy = True
            result.errors[f"{SQL_ERROR}:{type(exc).__name__}"] = 1
            result.cursor = cur
            return result
        except apsw.Error as exc:
            result.errors[f"{SQL_ERROR}:{type(exc).__name__}"] = 1
            result.cursor = cur
            return result
        self._data_version = data_version
        self._stats = stats
        digest = _digest(rows)
        if rows and digest != cur.get("digest"):
            result.pages.append(Page(TABLE, rows))
        cur["digest"] = digest
        result.cursor = cur
        return result

    def _meta_rows(self, conn: apsw.Connection, errors: dict[str, int]) -> list[dict[str, Any]]:
        present = {row[1] for row in conn.execute("PRAGMA table_info(meta)")}
        if not {"key", "value"} <= present:
            errors[f"{MISSING_TABLE}:{TABLE}"] = errors.get(f"{MISSING_TABLE}:{TABLE}", 0) + 1
            return []
        rows: list[dict[str, Any]] = []
        for key, value in conn.execute(
            "SELECT key, value FROM meta WHERE length(value) <= ? ORDER BY key LIMIT ?",
            (self.max_bytes, MAX_ROWS),
        ):
            if isinstance(value, bytes):
                value = value.decode("ascii", "replace")
            rows.append({"key": str(key), "value": value})
        return rows


def _empty() -> dict[str, Any]:
    return {"v": CURSOR_VERSION, "dev": None, "ino": None, "digest": None}


def _digest(rows: list[dict[str, Any]]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for row in rows:
        h.update(f"{row['key']}\0{row['value']}\0".encode("utf-8", "surrogatepass"))
    return h.hexdigest()
