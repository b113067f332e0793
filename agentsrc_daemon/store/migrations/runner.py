"""Running the migrations: a store brought from the version it is at
(``PRAGMA user_version``) to SCHEMA_VERSION, one migration after another, a chunked
one in chunks of their own transactions (resumed where a kill left it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import apsw

from ...errors import SchemaTooNew
from ..connection import BUSY_TIMEOUT_MS
from ..wal import restart_checkpoint
from . import current
from .registry import ChunkedMigration, Migration
from .versions import MIGRATIONS, SCHEMA_VERSION

Progress = Callable[[str, int, int], None]  # (migration name, ids done, ids in all)

# Event ids per transaction of a chunked migration (AGENTSRC_MIGRATE_CHUNK overrides):
# a chunk rewrites about 5 MiB of table pages, well within the WAL's bound.
MIGRATE_CHUNK_IDS = 10_000


def pending_chunked(conn: apsw.Connection) -> ChunkedMigration | None:
    """The first chunked migration this store still has to run, if any (none for a new
    database: it is created at the current schema)."""
    (found,) = conn.execute("PRAGMA user_version").fetchone() or (0,)
    if found == 0 and current.is_new(conn):
        return None
    for m in list(MIGRATIONS)[found:]:
        if isinstance(m.body, ChunkedMigration):
            return m.body
    return None


def chunked_pending(db_path: Path) -> ChunkedMigration | None:
    """The chunked migration an existing store at ``db_path`` will run when opened."""
    if not db_path.is_file():
        return None
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
        return pending_chunked(conn)
    finally:
        conn.close()


def run_migration(
    conn: apsw.Connection, migration: Migration, progress: Progress | None = None,
    chunk: int = 0,
) -> None:
    """Migrate from ``migration.version - 1`` to ``migration.version``."""
    m = migration.body
    if isinstance(m, str):
        with conn:
            conn.execute(m)
            conn.execute(f"PRAGMA user_version={migration.version}")
        return
    # The migration's own chunk, else the caller's (config.Tuning.migrate_chunk_ids).
    chunk = m.chunk or chunk or MIGRATE_CHUNK_IDS
    with conn:
        m.begin(conn)
    # A begin that builds indexes writes tens of MB at 10 million events: out of the
    # WAL before the first chunk adds its own.
    restart_checkpoint(conn)
    first = True
    while True:
        with conn:
            values = dict(
                conn.execute(
                    "SELECT name, value FROM counters WHERE name IN (?, ?)",
                    (f"{m.name}_done", f"{m.name}_target"),
                )
            )
            done, target = values[f"{m.name}_done"], values[f"{m.name}_target"]
            if first and progress is not None:
                progress(m.name, done, target)  # where a resumed migration starts
            first = False
            if done >= target:
                m.finish(conn)
                conn.execute(f"PRAGMA user_version={migration.version}")
                return
            upto = min(done + chunk, target)
            m.step(conn, done, upto)
            conn.execute("UPDATE counters SET value=? WHERE name=?", (upto, f"{m.name}_done"))
        if progress is not None:
            progress(m.name, upto, target)
        # Each chunk rewrites its rows: keep the WAL bounded while the migration runs.
        restart_checkpoint(conn)


def migrate(conn: apsw.Connection, progress: Progress | None = None, chunk: int = 0) -> int:
    """Bring the schema to SCHEMA_VERSION. Returns the version found before (0 for a new
    database, which is created at the current schema in one transaction instead: the
    migrations are for stores that exist)."""
    (found,) = conn.execute("PRAGMA user_version").fetchone() or (0,)
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema version {found} is newer than this agentsrc ({SCHEMA_VERSION})"
        )
    start = found
    if found == 0 and current.is_new(conn):
        current.create(conn)
        start = current.VERSION
    for version in range(start, SCHEMA_VERSION):
        run_migration(conn, MIGRATIONS[version], progress, chunk)
    return int(found)
