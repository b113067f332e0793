"""The OpenCode fixtures: a database built at test time from tests/fixtures/opencode/
(schema.sql, rows.sql), the JSON tree beside them, and reading either the way the daemon
will (the reader's pages, or one document per file) into records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import orjson

from agentsrc_daemon.adapters.opencode import ADAPTER, records_from_rows
from agentsrc_daemon.events import Record
from agentsrc_daemon.ingest.agent_db import AgentDB
from agentsrc_daemon.ingest.db_schemas import OPENCODE

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
SCHEMA_SQL = FIXTURES / "schema.sql"
ROWS_SQL = FIXTURES / "rows.sql"
DATA = FIXTURES / "data"  # an OpenCode data dir holding the JSON tree (0.5 and 1.1 layouts)

# 2026-01-15T10:00:00Z, the database fixture's time zero (rows.sql counts from it).
T0 = 1768471200000


def build_db(path: Path, *, rows: bool = True, wal: bool = True, schema: str | None = None) -> None:
    """An OpenCode database at ``path``, as OpenCode creates it (WAL mode)."""
    conn = apsw.Connection(str(path))
    try:
        if wal:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(schema if schema is not None else SCHEMA_SQL.read_text())
        if rows:
            with conn:
                conn.execute(ROWS_SQL.read_text())
    finally:
        conn.close()


def read_db(
    path: Path, state: dict[str, Any] | None = None, **reader_options: Any
) -> tuple[list[Record], dict[str, Any], dict[str, Any]]:
    """Every row of the database through the reader, page by page, into records:
    (records, adapter state, reader cursor)."""
    state = ADAPTER.initial_state(str(path)) if state is None else state
    records: list[Record] = []
    cursor: dict[str, Any] | None = None
    with AgentDB(str(path), OPENCODE, **reader_options) as db:
        for _ in range(10_000):
            result = db.poll(cursor)
            assert not result.busy and not result.errors, result.errors
            for page in result.pages:
                records += records_from_rows(page.table, page.rows, str(path), state)
            cursor = result.cursor
            if not result.more:
                break
    assert cursor is not None
    return records, state, cursor


def tree_files(root: Path = DATA) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if p.is_file())


def read_tree(root: Path = DATA) -> list[Record]:
    """Every JSON document of the tree, each with its own fresh state (one source per
    file, as the document reader keeps them)."""
    records: list[Record] = []
    for path in tree_files(root):
        obj = orjson.loads(path.read_bytes())
        records += ADAPTER.parse_document(obj, str(path), ADAPTER.initial_state(str(path)))
    return records


def load_tree_into_db(root: Path, db_path: Path) -> None:
    """The 1.1-layout JSON tree copied into a database the way OpenCode's own JSON-to-SQLite
    migration does (ids from file names, ``data`` without the ids)."""
    build_db(db_path, rows=False)
    conn = apsw.Connection(str(db_path))
    storage = root / "storage"
    with conn:
        for project in sorted((storage / "project").glob("*.json")):
            data = orjson.loads(project.read_bytes())
            conn.execute(
                "INSERT INTO project(id, worktree, vcs, time_created, time_updated, sandboxes)"
                " VALUES(?,?,?,?,?,?)",
                (project.stem, data["worktree"], data.get("vcs"), data["time"]["created"],
                 data["time"]["created"], "[]"),
            )
        for session in sorted((storage / "session").glob("*/*.json")):
            data = orjson.loads(session.read_bytes())
            conn.execute(
                "INSERT INTO session(id, project_id, parent_id, slug, directory, title, version,"
                " time_created, time_updated) VALUES(?,?,?,?,?,?,?,?,?)",
                (session.stem, session.parent.name, data.get("parentID"), data.get("slug", ""),
                 data.get("directory", ""), data.get("title", ""), data.get("version", ""),
                 data["time"]["created"], data["time"]["updated"]),
            )
        messages: dict[str, str] = {}
        for message in sorted((storage / "message").glob("*/*.json")):
            data = orjson.loads(message.read_bytes())
            sid = message.parent.name
            messages[message.stem] = sid
            body = {k: v for k, v in data.items() if k not in ("id", "sessionID")}
            created = data["time"]["created"]
            conn.execute(
                "INSERT INTO message(id, session_id, time_created, time_updated, data)"
                " VALUES(?,?,?,?,?)",
                (message.stem, sid, created, created, orjson.dumps(body).decode()),
            )
        for part in sorted((storage / "part").glob("*/*.json")):
            data = orjson.loads(part.read_bytes())
            mid = part.parent.name
            body = {k: v for k, v in data.items() if k not in ("id", "sessionID", "messageID")}
            conn.execute(
                "INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)"
                " VALUES(?,?,?,?,?,?)",
                (part.stem, mid, messages[mid], T0, T0, orjson.dumps(body).decode()),
            )
    conn.close()
