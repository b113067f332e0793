"""The database file: a connection opened with the store's pragmas (WAL, page size,
busy timeout, the writer's page cache and the WAL's bound), owner-only permissions,
and the VACUUM that compacts it with the daemon stopped."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

import apsw

from . import packing

# What a write can fail with and succeed on a later try: the disk (or the user's quota)
# full, or an I/O error (SQLite reports a -shm it cannot grow as one).
STORE_WRITE_ERRORS = (apsw.FullError, apsw.IOError)

BUSY_TIMEOUT_MS = 5000
WRITER_CACHE_KIB = 8 * 1024
PAGE_SIZE = 16384
# The WAL never grows past WAL_LIMIT_BYTES: a checkpoint runs once it holds a quarter
# of that, which leaves room for the largest commits (a backfill batch, a migration
# chunk) and for a checkpoint or two that readers made wait (measured: at half, a
# backfill with a reader always busy peaked at 59 MiB). Set here as the connection's
# journal_size_limit and wal_autocheckpoint; the rest of the WAL's policy (when the
# writer and the checkpointer thread checkpoint) is store/wal.py's.
WAL_LIMIT_BYTES = 64 * 1024 * 1024
WAL_CHECKPOINT_PAGES = WAL_LIMIT_BYTES // 4 // PAGE_SIZE


def secure_file(path: Path) -> None:
    """Owner-only: the database holds what agents read and wrote."""
    with suppress(FileNotFoundError):
        os.chmod(path, 0o600)


def connect(db_path: Path, *, readonly: bool = False) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else (
        apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    )
    conn = apsw.Connection(str(db_path), flags=flags)
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    if not readonly:
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect on a new database only
        conn.execute("PRAGMA journal_mode=WAL")
        # The writer's page cache holds the hot parts of the indexes (the key-hash index
        # is random-access by nature); bounded, so it counts toward the memory budget.
        conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        # Checkpoints every WAL_CHECKPOINT_PAGES (until the Store's WalBound takes over);
        # journal_size_limit truncates the WAL back to the bound when it restarts, and
        # the daemon truncates it when idle (Store.truncate_wal).
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    packing.register(conn)
    return conn


def compact(db_path: Path) -> tuple[int, int]:
    """VACUUM the store (the daemon stopped: the caller holds its lock): what packing
    freed inside the pages of a migrated store goes back to the file system. Run with a
    rollback journal, not the WAL: a VACUUM rewrites the whole database, which in WAL
    mode would all go through the WAL. Needs this module's functions (``unpack``): the
    sqlite3 shell cannot VACUUM the store. Returns the file's size before and after."""
    before = db_path.stat().st_size
    conn = connect(db_path)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()
    return before, db_path.stat().st_size
