"""Reads an OpenCode SQLite database (``opencode.db``) while OpenCode runs, without ever
blocking or writing it, from a persisted cursor, in bounded pages.

It knows OpenCode's tables (``session``, ``message``, ``part``) and nothing of the
agentsrc store: :meth:`OpenCodeDB.poll` returns rows (columns by name, ``data`` decoded)
and the new cursor; the caller turns rows into records (adapters/opencode.py) and
commits the cursor with them.

Never blocking, never writing:

* The connection is opened ``SQLITE_OPEN_READONLY`` (no create), with ``query_only`` on
  and no checkpoint on close; the only pragmas run are reads (``data_version``,
  ``schema_version``, ``table_info``). A read-only connection cannot checkpoint, so the
  database file and its ``-wal`` are never written. In WAL mode SQLite still maps the
  ``-shm`` index and sets a read mark in it (that is how readers and the writer agree on
  a snapshot), and it creates an empty ``-wal``/``-shm`` pair when OpenCode has removed
  them, as any SQLite reader does.
* Each poll is one short read transaction (``BEGIN`` ... ``COMMIT``): one snapshot for
  every query of the poll, nothing held between polls, so OpenCode's checkpoints are
  never held back for long. A busy or locked database (a rollback-journal writer, a WAL
  recovery) waits at most ``busy_timeout_ms`` and the poll returns ``busy``: retry later.

Noticing changes (:meth:`OpenCodeDB.changed`): ``PRAGMA data_version`` on the kept-open
connection, which changes exactly when another connection committed, in WAL and
rollback-journal mode alike; and the (device, inode, size, mtime) of the database and
its ``-wal``, which is what a file watcher sees, costs one ``stat`` each, and tells a
replaced file (a new inode resets the cursor). The ``-wal`` stat alone is not enough: a
WAL restarted after a checkpoint is rewritten at the same size, mtime granularity can
hide two commits, and a database in rollback mode has no ``-wal`` at all.

The cursor (a JSON dict, committed by the caller with what it derived from the rows)::

    {"v": 1, "dev": int, "ino": int,
     "tables": {"session"|"message"|"part": {
         "t": int | None,      # keyset: the largest (time_updated, id) delivered...
         "id": str,            # ...ties broken by id, so a restart re-reads nothing
         "rowid": int | None,  # the largest rowid the late-insert check has covered
         "floor": int,         # the recent window never reaches below this (ms)
         "seen": {id: [time_updated, octet_length(data)]}}}}  # rows of the window

Which rows a poll returns, per table, in one snapshot (OpenCode upserts rows and bumps
``time_updated`` in milliseconds on every write; there is no index on it, so (b) and (c)
scan the table, which is why a poll should follow a change, not a timer):

(a) late inserts: rows whose rowid is above ``rowid`` but whose ``time_updated`` is below
    the window and the watermark (a writer's clock stepped back): rowid order;
(b) the recent window: rows at or below the watermark updated in the last ``lag_ms``
    (by the wall clock) whose (time_updated, length) differ from what was delivered: a
    second OpenCode process committing a row stamped before our watermark (it waited up
    to its 5 s busy timeout), or a row rewritten within the same millisecond;
(c) the keyset: rows above the watermark, in (time_updated, id) order, up to the budget.

Each row version is delivered once; a row updated later is delivered again (its new
version). Rows, bytes (``octet_length(data)``) and single rows are bounded; a missing
table or column (an older or newer schema) is a counted error and that table is
skipped, never a crash.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw
import orjson

TABLES = ("session", "message", "part")
# The order a poll reads them in: sessions first (a prompt titles a session only once its
# placeholder title is known), parts before messages (a compaction request's part says
# whether it was automatic; the summary message that answers it has the same key).
POLL_ORDER = ("session", "part", "message")
CURSOR_VERSION = 1

REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "session": ("id", "time_updated"),
    "message": ("id", "session_id", "time_updated", "data"),
    "part": ("id", "message_id", "session_id", "time_updated", "data"),
}
# Columns returned when present (large or sensitive ones, such as summary_diffs, share
# and permission, are never read).
WANTED_COLUMNS: dict[str, tuple[str, ...]] = {
    "session": (
        "id",
        "project_id",
        "workspace_id",
        "parent_id",
        "slug",
        "directory",
        "title",
        "version",
        "time_created",
        "time_updated",
        "time_compacting",
        "time_archived",
    ),
    "message": ("id", "session_id", "time_created", "time_updated", "data"),
    "part": ("id", "message_id", "session_id", "time_created", "time_updated", "data"),
}
# What a part row carries of its message (the adapter needs the role, turn, model, cwd).
MESSAGE_CONTEXT_PATHS = (
    "$.role",
    "$.parentID",
    "$.modelID",
    "$.providerID",
    "$.path.cwd",
    "$.time.created",
    "$.time.completed",
    "$.summary",
)

DEFAULT_MAX_ROWS = 500
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_ROW_BYTES = 64 * 1024 * 1024
DEFAULT_BUSY_TIMEOUT_MS = 50
DEFAULT_LAG_MS = 10_000
DEFAULT_WINDOW_ROWS = 200
DEFAULT_SEEN_CAP = 2000
FETCH_CHUNK = 100
SESSION_ROW_BYTES = 256  # what a session row counts against the byte budget

# Error counters (PollResult.errors keys are "<reason>:<table>")
MISSING_TABLE = "missing_table"
MISSING_COLUMN = "missing_column"
BAD_JSON = "bad_json"
OVERSIZE = "oversize"
ROWID_REGRESSED = "rowid_regressed"
SQL_ERROR = "sql_error"

_MIN_T = -(2**62)


@dataclass(slots=True)
class Page:
    table: str
    rows: list[dict[str, Any]]


@dataclass(slots=True)
class PollResult:
    pages: list[Page] = field(default_factory=list)
    cursor: dict[str, Any] = field(default_factory=dict)  # commit with the records
    more: bool = False  # the budget ran out: poll again soon
    busy: bool = False  # locked or busy: nothing read, cursor unchanged, retry later
    gone: bool = False  # no database file
    reset: str | None = None  # why the cursor restarted from nothing ("replaced")
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(len(p.rows) for p in self.pages)


def empty_cursor() -> dict[str, Any]:
    return {"v": CURSOR_VERSION, "dev": None, "ino": None, "tables": {}}


def _signature(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(slots=True)
class _Key:
    rowid: int
    t: int
    id: str


@dataclass(slots=True)
class _Budget:
    rows: int
    bytes: int

    def spent(self) -> bool:
        return self.rows <= 0 or self.bytes <= 0


class OpenCodeDB:
    """One OpenCode database, read incrementally. Not thread-safe; one per file."""

    def __init__(
        self,
        path: str,
        *,
        max_rows: int = DEFAULT_MAX_ROWS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_row_bytes: int = DEFAULT_MAX_ROW_BYTES,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        lag_ms: int = DEFAULT_LAG_MS,
        window_rows: int = DEFAULT_WINDOW_ROWS,
        seen_cap: int = DEFAULT_SEEN_CAP,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.path = path
        self.max_rows = max(1, max_rows)
        self.max_bytes = max(1, max_bytes)
        self.max_row_bytes = max_row_bytes
        self.busy_timeout_ms = busy_timeout_ms
        self.lag_ms = lag_ms
        self.window_rows = max(1, window_rows)
        self.seen_cap = max(1, seen_cap)
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._conn: apsw.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._data_version: int | None = None
        self._schema_version: int | None = None
        self._columns: dict[str, tuple[str, ...] | None] = {}
        self._stats: tuple[Any, Any] | None = None

    # -- connection -------------------------------------------------------------------

    def _open(self) -> apsw.Connection:
        conn = apsw.Connection(self.path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            conn.setbusytimeout(self.busy_timeout_ms)
            no_ckpt = getattr(apsw, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE", None)
            if no_ckpt is not None:
                conn.config(no_ckpt, 1)
            conn.execute("PRAGMA query_only = 1")  # a connection flag, not a write
        except Exception:
            conn.close()
            raise
        return conn

    def _connection(self) -> apsw.Connection | None:
        """The open connection, reopened when the file was replaced; None when there
        is no database file."""
        sig = _signature(self.path)
        if sig is None:
            self.close()
            return None
        if self._conn is not None and self._identity != sig[:2]:
            self.close()
        if self._conn is None:
            self._conn = self._open()
            self._identity = (sig[0], sig[1])
            self._data_version = None
            self._schema_version = None
            self._columns = {}
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
                self._identity = None

    def __enter__(self) -> OpenCodeDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- change detection -------------------------------------------------------------

    def changed(self) -> bool:
        """Whether a poll may find something new: the files' stat signature or the
        connection's ``data_version`` moved since the last poll (True before the first
        poll, and when unsure). Cheap: two stats and one pragma, no table read."""
        stats = (_signature(self.path), _signature(self.path + "-wal"))
        if stats[0] is None:
            return self._stats is not None and self._stats[0] is not None
        if self._conn is None or self._data_version is None or stats != self._stats:
            return True
        try:
            return self._read_data_version(self._conn) != self._data_version
        except apsw.Error:
            return True

    @staticmethod
    def _read_data_version(conn: apsw.Connection) -> int:
        row = conn.execute("PRAGMA data_version").fetchone()
        return int(row[0]) if row else 0

    # -- schema -----------------------------------------------------------------------

    def _inspect(self, conn: apsw.Connection, errors: dict[str, int]) -> None:
        """Which of the wanted columns each table has; a missing table or required
        column is counted (once per schema version) and the table skipped."""
        version = int(_scalar(conn, "PRAGMA schema_version") or 0)
        if version == self._schema_version and self._columns:
            return
        self._schema_version = version
        self._columns = {}
        for table in TABLES:
            present = {row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")}
            if not present:
                errors[f"{MISSING_TABLE}:{table}"] = errors.get(f"{MISSING_TABLE}:{table}", 0) + 1
                self._columns[table] = None
                continue
            missing = [c for c in REQUIRED_COLUMNS[table] if c not in present]
            if missing:
                for c in missing:
                    key = f"{MISSING_COLUMN}:{table}.{c}"
                    errors[key] = errors.get(key, 0) + 1
                self._columns[table] = None
                continue
            self._columns[table] = tuple(c for c in WANTED_COLUMNS[table] if c in present)

    def schema(self) -> dict[str, tuple[str, ...] | None]:
        """The columns read per table as of the last poll (None: the table is skipped)."""
        return dict(self._columns)

    # -- polling ----------------------------------------------------------------------

    def poll(self, cursor: dict[str, Any] | None) -> PollResult:
        """What changed since ``cursor``: at most ``max_rows`` rows and about
        ``max_bytes`` of data (at least one row), in one read transaction. The
        returned cursor covers exactly the rows returned."""
        result = PollResult()
        cur = _load_cursor(cursor)
        try:
            conn = self._connection()
        except apsw.Error as exc:
            result.errors[f"{SQL_ERROR}:{type(exc).__name__}"] = 1
            result.busy = isinstance(exc, apsw.BusyError | apsw.LockedError)
            result.cursor = cur
            return result
        if conn is None:
            result.gone = True
            result.cursor = cur
            self._stats = (None, None)
            return result
        assert self._identity is not None
        if cur["ino"] is not None and (cur["dev"], cur["ino"]) != self._identity:
            cur = empty_cursor()
            result.reset = "replaced"
        cur["dev"], cur["ino"] = self._identity
        stats = (_signature(self.path), _signature(self.path + "-wal"))
        work = orjson.loads(orjson.dumps(cur))  # the input cursor stays untouched
        try:
            data_version = self._read_data_version(conn)
            conn.execute("BEGIN")
            try:
                self._inspect(conn, result.errors)
                self._poll_tables(conn, work, result)
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT")
        except (apsw.BusyError, apsw.LockedError) as exc:
            result.busy = True
            result.pages = []
            result.more = False
            result.errors[f"{SQL_ERROR}:{type(exc).__name__}"] = 1
            result.cursor = cur
            return result
        except (apsw.Error, ValueError, TypeError) as exc:
            # The schema changed under us, the file is damaged, a row holds what OpenCode
            # never writes: count, keep the cursor, read nothing.
            result.pages = []
            result.more = False
            result.errors[f"{SQL_ERROR}:{type(exc).__name__}"] = 1
            self._schema_version = None
            result.cursor = cur
            return result
        self._data_version = data_version
        self._stats = stats
        result.cursor = work
        return result

    def _poll_tables(self, conn: apsw.Connection, cur: dict[str, Any], result: PollResult) -> None:
        budget = _Budget(self.max_rows, self.max_bytes)
        now = self._clock_ms()
        tables = cur["tables"]
        for table in POLL_ORDER:
            columns = self._columns.get(table)
            if columns is None:
                continue
            tc = _load_table_cursor(tables.get(table))
            rows, caught_up = self._poll_table(conn, table, columns, tc, budget, now, result.errors)
            tables[table] = tc
            if rows:
                result.pages.append(Page(table, rows))
            if not caught_up:
                result.more = True
                return

    def _poll_table(
        self,
        conn: apsw.Connection,
        table: str,
        columns: tuple[str, ...],
        tc: dict[str, Any],
        budget: _Budget,
        now: int,
        errors: dict[str, int],
    ) -> tuple[list[dict[str, Any]], bool]:
        q = _quote(table)
        fp = _fingerprint_sql(table, columns)
        t_prev: int | None = tc["t"]
        t = _MIN_T if t_prev is None else t_prev
        last_id: str = tc["id"]
        seen: dict[str, list[int]] = tc["seen"]
        low = max(now - self.lag_ms, tc["floor"])
        # A time that is not a number (never written by OpenCode) is never read: it
        # could not be ordered against the watermark.
        numeric = (
            "(typeof(time_updated) = 'integer' OR (typeof(time_updated) = 'real'"
            " AND time_updated = CAST(time_updated AS INTEGER)))"
        )
        upto = f"({numeric} AND (time_updated < :t OR (time_updated = :t AND id <= :i)))"
        after = f"({numeric} AND (time_updated > :t OR (time_updated = :t AND id > :i)))"
        args = {"t": t, "i": last_id, "low": low}
        out: list[dict[str, Any]] = []
        delivered: list[tuple[_Key, int]] = []  # (key, fingerprint) of every row returned

        # (a) late inserts, below the window and the watermark.
        late_truncated = False
        max_rowid = _scalar(conn, f"SELECT max(rowid) FROM {q}")
        max_rowid = int(max_rowid) if max_rowid is not None else 0
        rowid_prev: int | None = tc["rowid"]
        if rowid_prev is not None and max_rowid < rowid_prev:
            errors[f"{ROWID_REGRESSED}:{table}"] = errors.get(f"{ROWID_REGRESSED}:{table}", 0) + 1
            rowid_prev = max_rowid  # a VACUUM renumbered the rows
        if rowid_prev is not None and t_prev is not None:
            keys = [
                _Key(int(r[0]), _ms(r[1]), str(r[2]))
                for r in conn.execute(
                    f"SELECT rowid, time_updated, id FROM {q} WHERE rowid > :r"
                    f" AND time_updated < :low AND {upto} ORDER BY rowid LIMIT :n",
                    dict(args, r=rowid_prev, n=budget.rows),
                )
            ]
            late_truncated = len(keys) >= budget.rows
            got = self._fetch(conn, table, columns, keys, budget, errors, out, delivered,
                              partial=True)
            if got < len(keys):
                late_truncated = True
            if late_truncated:
                tc["rowid"] = delivered[-1][0].rowid if delivered else rowid_prev
                self._remember(tc, delivered, low)
                return out, False

        # (b) the recent window: rows at or below the watermark written lately.
        if t_prev is not None and t_prev >= low:
            window = [
                (_Key(int(r[0]), _ms(r[1]), str(r[2])), int(r[3] or 0))
                for r in conn.execute(
                    f"SELECT rowid, time_updated, id, {fp} FROM {q}"
                    f" WHERE time_updated >= :low AND {upto}"
                    " ORDER BY time_updated DESC, id DESC LIMIT :n",
                    dict(args, n=self.window_rows),
                )
            ]
            changed = [k for k, f in reversed(window) if seen.get(k.id) != [k.t, f]]
            self._fetch(conn, table, columns, changed, budget, errors, out, delivered,
                        partial=False)

        # (c) the keyset, above the watermark. One key more than the budget tells
        # whether the table is caught up without another scan.
        if budget.spent():
            caught_up = False  # not known without a scan: the next poll will tell
        else:
            want = budget.rows
            keys = [
                _Key(int(r[0]), _ms(r[1]), str(r[2]))
                for r in conn.execute(
                    f"SELECT rowid, time_updated, id FROM {q} WHERE {after}"
                    " ORDER BY time_updated, id LIMIT :n",
                    dict(args, n=want + 1),
                )
            ]
            wanted = keys[:want]
            before = len(delivered)
            got = self._fetch(conn, table, columns, wanted, budget, errors, out, delivered,
                              partial=True)
            if got:
                last = delivered[before + got - 1][0]
                tc["t"], tc["id"] = last.t, last.id
            caught_up = len(keys) <= want and got == len(wanted)
        tc["rowid"] = max_rowid
        self._remember(tc, delivered, low)
        return out, caught_up

    def _remember(self, tc: dict[str, Any], delivered: list[tuple[_Key, int]], low: int) -> None:
        """Keep the fingerprints of the rows in the recent window (bounded): the next
        poll's window check skips them; raise the floor past what the bound drops."""
        seen: dict[str, list[int]] = tc["seen"]
        for key, fp in delivered:
            if key.t >= low:
                seen[key.id] = [key.t, fp]
        floor = max(tc["floor"], low)
        if len(seen) > self.seen_cap:
            ordered = sorted(seen.items(), key=lambda kv: (kv[1][0], kv[0]))
            cut = ordered[len(ordered) - self.seen_cap - 1][1][0]
            floor = max(floor, cut + 1)
        tc["seen"] = {k: v for k, v in seen.items() if v[0] >= floor}
        tc["floor"] = floor

    def _fetch(
        self,
        conn: apsw.Connection,
        table: str,
        columns: tuple[str, ...],
        keys: list[_Key],
        budget: _Budget,
        errors: dict[str, int],
        out: list[dict[str, Any]],
        delivered: list[tuple[_Key, int]],
        *,
        partial: bool,
    ) -> int:
        """Read the rows of ``keys`` in order into ``out``. With ``partial`` stop once
        the budget is spent (after at least one row overall); returns how many of
        ``keys`` were taken (a row skipped as bad or oversize counts as taken)."""
        taken = 0
        sql = _fetch_sql(table, columns, self._columns)
        cap = [self.max_row_bytes] if "data" in columns else []
        for start in range(0, len(keys), FETCH_CHUNK):
            chunk = keys[start : start + FETCH_CHUNK]
            marks = ",".join("?" for _ in chunk)
            by_rowid = {
                int(r[0]): r
                for r in conn.execute(sql.format(marks=marks), [*cap, *[k.rowid for k in chunk]])
            }
            for key in chunk:
                if partial and budget.spent() and (out or delivered):
                    return taken
                taken += 1
                raw = by_rowid.get(key.rowid)
                if raw is None:
                    continue  # gone between the two queries of one snapshot: cannot happen
                row, size = _decode(table, columns, raw, errors)
                delivered.append((key, size))
                budget.rows -= 1
                budget.bytes -= size if table != "session" else SESSION_ROW_BYTES
                if row is not None:
                    out.append(row)
        return taken


# -- SQL and decoding -------------------------------------------------------------------


def _ms(value: Any) -> int:
    """A ``time_updated`` as stored (an integer; a whole REAL is accepted as one)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    raise ValueError(f"time_updated {value!r} is not a whole number")


def _rollback(conn: apsw.Connection) -> None:
    """End the read transaction, if one is open, ignoring errors (it read nothing to undo)."""
    try:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
    except apsw.Error:
        pass


def _scalar(conn: apsw.Connection, sql: str, args: Any = None) -> Any:
    row = conn.execute(sql, args).fetchone() if args is not None else conn.execute(sql).fetchone()
    return row[0] if row else None


def _fingerprint_sql(table: str, columns: tuple[str, ...]) -> str:
    if "data" in columns:
        return "octet_length(data)"
    parts = [f"coalesce({c}, '')" for c in ("title", "directory", "version", "parent_id")
             if c in columns]
    return "octet_length(" + " || '|' || ".join(parts) + ")" if parts else "0"


def _fetch_sql(
    table: str, columns: tuple[str, ...], schema: dict[str, tuple[str, ...] | None]
) -> str:
    """The rows of some rowids (``{marks}``); for a table with ``data``, parameter 1 is
    the largest data length read: a larger ``data`` comes back NULL (counted oversize)."""
    t = "x"
    cols = [f"{t}.{c}" if c != "data" else f"CASE WHEN octet_length({t}.data) <= ?1 THEN {t}.data END"
            for c in columns]
    fp = _fingerprint_sql(table, columns)
    if "data" in columns:
        fp = fp.replace("data", f"{t}.data")
    select = [f"{t}.rowid", *cols, fp]
    joins = ""
    session_cols = schema.get("session") or ()
    if table in ("message", "part") and session_cols:
        select += [
            "s.directory" if "directory" in session_cols else "NULL",
            "s.version" if "version" in session_cols else "NULL",
        ]
        joins += f" LEFT JOIN session s ON s.id = {t}.session_id"
    else:
        select += ["NULL", "NULL"]
    if table == "part" and schema.get("message") and "data" in (schema.get("message") or ()):
        paths = ", ".join(f"'{p}'" for p in MESSAGE_CONTEXT_PATHS)
        select.append(f"CASE WHEN json_valid(m.data) THEN json_extract(m.data, {paths}) END")
        joins += f" LEFT JOIN message m ON m.id = {t}.message_id"
    else:
        select.append("NULL")
    # ?1 (in the select list, so numbered first) is the size cap; the rowids follow.
    return f"SELECT {', '.join(select)} FROM {_quote(table)} {t}{joins} WHERE {t}.rowid IN ({{marks}})"


def _decode(
    table: str, columns: tuple[str, ...], raw: Any, errors: dict[str, int]
) -> tuple[dict[str, Any] | None, int]:
    """One fetched row as a dict (None when it cannot be used), and its fingerprint."""
    values = list(raw)
    rowid = values[0]
    n = len(columns)
    row: dict[str, Any] = {"rowid": rowid}
    row.update(zip(columns, values[1 : 1 + n], strict=True))
    size = int(values[1 + n] or 0)
    directory, version, context = values[2 + n], values[3 + n], values[4 + n]
    if "data" in columns:
        text = row.get("data")
        if text is None:
            key = f"{OVERSIZE}:{table}"
            errors[key] = errors.get(key, 0) + 1
            return None, size
        try:
            decoded = orjson.loads(text)
        except (orjson.JSONDecodeError, TypeError):
            key = f"{BAD_JSON}:{table}"
            errors[key] = errors.get(key, 0) + 1
            return None, size
        if not isinstance(decoded, dict):
            key = f"{BAD_JSON}:{table}"
            errors[key] = errors.get(key, 0) + 1
            return None, size
        row["data"] = decoded
    if table in ("message", "part"):
        row["session"] = {"directory": directory, "version": version}
    if table == "part" and context is not None:
        row["message"] = _message_context(context)
    return row, size


def _message_context(text: Any) -> dict[str, Any]:
    try:
        values = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return {}
    if not isinstance(values, list) or len(values) != len(MESSAGE_CONTEXT_PATHS):
        return {}
    role, parent, model, provider, cwd, created, completed, summary = values
    return {
        "role": role,
        "parentID": parent,
        "modelID": model,
        "providerID": provider,
        "path": {"cwd": cwd},
        "time": {"created": created, "completed": completed},
        "summary": summary is True or summary == 1,
    }


# -- cursors ----------------------------------------------------------------------------


def _load_cursor(cursor: dict[str, Any] | None) -> dict[str, Any]:
    """A cursor in its full shape (a copy); anything unusable starts from nothing."""
    if not isinstance(cursor, dict) or cursor.get("v") != CURSOR_VERSION:
        return empty_cursor()
    tables = cursor.get("tables")
    out = empty_cursor()
    dev, ino = cursor.get("dev"), cursor.get("ino")
    if isinstance(dev, int) and isinstance(ino, int):
        out["dev"], out["ino"] = dev, ino
    if isinstance(tables, dict):
        out["tables"] = {t: _load_table_cursor(tables.get(t)) for t in TABLES if t in tables}
    return out


def _load_table_cursor(tc: Any) -> dict[str, Any]:
    tc = tc if isinstance(tc, dict) else {}
    t = tc.get("t")
    rowid = tc.get("rowid")
    floor = tc.get("floor")
    seen = tc.get("seen")
    return {
        "t": t if isinstance(t, int) and not isinstance(t, bool) else None,
        "id": tc.get("id") if isinstance(tc.get("id"), str) else "",
        "rowid": rowid if isinstance(rowid, int) and not isinstance(rowid, bool) else None,
        "floor": floor if isinstance(floor, int) and not isinstance(floor, bool) else _MIN_T,
        "seen": {
            k: [int(v[0]), int(v[1])]
            for k, v in (seen.items() if isinstance(seen, dict) else [])
            if isinstance(k, str) and isinstance(v, list) and len(v) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        },
    }
