"""Reads an agent's SQLite database (OpenCode's ``opencode.db``, Crush's ``crush.db``)
while the agent runs, without ever blocking or writing it, from a persisted cursor, in
bounded pages.

It knows no agent: the tables it reads, their columns, the time column each is ordered
by and what a row carries of its neighbours come in a ``DbSchema`` (ingest/db_schemas.py
has OpenCode's and Crush's). It knows nothing of the agentsrc store either:
:meth:`AgentDB.poll` returns rows (columns by name, the JSON column decoded) and the new
cursor; the caller turns rows into records (the agent's adapter, ``parse_rows``) and
commits the cursor with them.

Never blocking, never writing:

* The connection is opened ``SQLITE_OPEN_READONLY`` (no create), with ``query_only`` on
  and no checkpoint on close; the only pragmas run are reads (``data_version``,
  ``schema_version``, ``table_info``). A read-only connection cannot checkpoint, so the
  database file and its ``-wal`` are never written. In WAL mode SQLite still maps the
  ``-shm`` index and sets a read mark in it (that is how readers and the writer agree on
  a snapshot), and it creates an empty ``-wal``/``-shm`` pair when the agent has removed
  them, as any SQLite reader does.
* Each poll is one short read transaction (``BEGIN`` ... ``COMMIT``): one snapshot for
  every query of the poll, nothing held between polls, so the agent's checkpoints are
  never held back for long. A busy or locked database (a rollback-journal writer, a WAL
  recovery) waits at most ``busy_timeout_ms`` and the poll returns ``busy``: retry later.

Noticing changes (:meth:`AgentDB.changed`): ``PRAGMA data_version`` on the kept-open
connection, which changes exactly when another connection committed, in WAL and
rollback-journal mode alike; and the (device, inode, size, mtime) of the database and
its ``-wal``, which is what a file watcher sees, costs one ``stat`` each, and tells a
replaced file (a new inode resets the cursor). The ``-wal`` stat alone is not enough: a
WAL restarted after a checkpoint is rewritten at the same size, mtime granularity can
hide two commits, and a database in rollback mode has no ``-wal`` at all.

The cursor (a JSON dict, committed by the caller with what it derived from the rows)::

    {"v": 1, "dev": int, "ino": int,
     "tables": {<table>: {
         "t": int | None,      # keyset: the largest (time, id) delivered...
         "id": str,            # ...ties broken by id, so a restart re-reads nothing
         "rowid": int | None,  # the largest rowid the late-insert check has covered
         "floor": int,         # the recent window never reaches below this
         "seen": {id: [time, fingerprint]}}}}  # rows of the window

The time is each table's update time (``TableSpec.time``: OpenCode's ``time_updated``,
Crush's ``updated_at``) in the unit the agent writes it: milliseconds for OpenCode;
seconds for Crush, whose schema comment says milliseconds (the unit is told from the
values, ``TableSpec.unit_ms``). The fingerprint is the length of the JSON column, or of
the other columns that change (``TableSpec.fingerprint``) for a table without one.

Which rows a poll returns, per table, in one snapshot (the agents upsert rows and bump
their time on every write; there is no index on it, so (b) and (c) scan the table,
which is why a poll should follow a change, not a timer):

(a) late inserts: rows whose rowid is above ``rowid`` but whose time is below
    the window and the watermark (a writer's clock stepped back): rowid order;
(b) the recent window: rows at or below the watermark updated in the last ``lag_ms``
    (by the wall clock) whose (time, fingerprint) differ from what was delivered: a
    second agent process committing a row stamped before our watermark (it waited up
    to its busy timeout), or a row rewritten within the same millisecond (Crush: the
    same second);
(c) the keyset: rows above the watermark, in (time, id) order, up to the budget.

Each row version is delivered once; a row updated later is delivered again (its new
version). Rows, bytes (the JSON column's length) and single rows are bounded; a missing
table or column (an older or newer schema) is a counted error and that table is
skipped, never a crash.

Long on purpose (over 600 lines): one reader of a database another process writes, whose
keyset walk, lag window, change detection and bounds must agree with one another.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw
import orjson

CURSOR_VERSION = 1

# Columns a row carries of its neighbours (OpenCode: a part's message context) are added
# by a table's ``context``: the extra SELECT expressions and joins, given the columns
# each table of the schema has, and the decoder that puts their values into the row.
ContextSql = Callable[[dict[str, "tuple[str, ...] | None"], str], tuple[list[str], str]]
ContextDecode = Callable[[dict[str, Any], list[Any]], None]


@dataclass(frozen=True, slots=True)
class TableSpec:
    """One table a reader polls."""

    name: str
    required: tuple[str, ...]  # without one of these the table is skipped (counted)
    wanted: tuple[str, ...]  # returned when present (large or sensitive ones are never)
    time: str  # the update time the keyset orders by (an integer column)
    json: str | None = None  # the JSON column decoded (its length bounded)
    json_type: type = dict  # what it must decode to (OpenCode: an object, Crush: a list)
    # For a table without a JSON column: the columns whose joined length tells a row
    # rewritten within one tick of its time (a title, a cost).
    fingerprint: tuple[str, ...] = ()
    row_bytes: int = 256  # what a row without a JSON column counts against the budget
    # Milliseconds per unit of ``time``; None: told from the values (under 1e11:
    # seconds, else milliseconds), for an agent whose schema says one and writes another.
    unit_ms: int | None = 1
    context_sql: ContextSql | None = None
    context_decode: ContextDecode | None = None


@dataclass(frozen=True, slots=True)
class DbSchema:
    """The tables of one agent's database, and the order a poll reads them in."""

    tables: tuple[TableSpec, ...]
    poll_order: tuple[str, ...]

    def table(self, name: str) -> TableSpec:
        return next(t for t in self.tables if t.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)


DEFAULT_MAX_ROWS = 500
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_ROW_BYTES = 64 * 1024 * 1024
DEFAULT_BUSY_TIMEOUT_MS = 50
DEFAULT_LAG_MS = 10_000
DEFAULT_WINDOW_ROWS = 200
DEFAULT_SEEN_CAP = 2000
FETCH_CHUNK = 100

# Error counters (PollResult.errors keys are "<reason>:<table>")
MISSING_TABLE = "missing_table"
MISSING_COLUMN = "missing_column"
BAD_JSON = "bad_json"
OVERSIZE = "oversize"
ROWID_REGRESSED = "rowid_regressed"
SQL_ERROR = "sql_error"

_MIN_T = -(2**62)
SECONDS_BELOW = 10**11  # a time under this (2286 in ms) is in seconds


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


class AgentDB:
    """One agent's database, read incrementally. Not thread-safe; one per file."""

    def __init__(
        self,
        path: str,
        schema: DbSchema,
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
        self.layout = schema
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

    def __enter__(self) -> AgentDB:
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
        for spec in self.layout.tables:
            table = spec.name
            present = {row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")}
            if not present:
                errors[f"{MISSING_TABLE}:{table}"] = errors.get(f"{MISSING_TABLE}:{table}", 0) + 1
                self._columns[table] = None
                continue
            missing = [c for c in spec.required if c not in present]
            if missing:
                for c in missing:
                    key = f"{MISSING_COLUMN}:{table}.{c}"
                    errors[key] = errors.get(key, 0) + 1
                self._columns[table] = None
                continue
            self._columns[table] = tuple(c for c in spec.wanted if c in present)

    def schema(self) -> dict[str, tuple[str, ...] | None]:
        """The columns read per table as of the last poll (None: the table is skipped)."""
        return dict(self._columns)

    # -- polling ----------------------------------------------------------------------

    def _open_for_poll(
        self, result: PollResult, cur: dict[str, Any], fresh: Callable[[], dict[str, Any]]
    ) -> tuple[apsw.Connection, dict[str, Any]] | None:
        """A poll's start, shared by every reader of an agent's database: the connection
        and the cursor to read from, or None with ``result`` saying why (an error, busy,
        gone). A file replaced since the cursor (another inode) starts from ``fresh()``."""
        try:
            conn = self._connection()
        except apsw.Error as exc:
            result.errors[f"{SQL_ERROR}:{type(exc).__name__}"] = 1
            result.busy = isinstance(exc, apsw.BusyError | apsw.LockedError)
            result.cursor = cur
            return None
        if conn is None:
            result.gone = True
            result.cursor = cur
            self._stats = (None, None)
            return None
        assert self._identity is not None
        if cur["ino"] is not None and (cur["dev"], cur["ino"]) != self._identity:
            cur = fresh()
            result.reset = "replaced"
        cur["dev"], cur["ino"] = self._identity
        return conn, cur

    def poll(self, cursor: dict[str, Any] | None) -> PollResult:
        """What changed since ``cursor``: at most ``max_rows`` rows and about
        ``max_bytes`` of data (at least one row), in one read transaction. The
        returned cursor covers exactly the rows returned."""
        result = PollResult()
        opened = self._open_for_poll(result, _load_cursor(cursor, self.layout.names),
                                     empty_cursor)
        if opened is None:
            return result
        conn, cur = opened
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
            # The schema changed under us, the file is damaged, a row holds what the agent
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
        for table in self.layout.poll_order:
            columns = self._columns.get(table)
            if columns is None:
                continue
            tc = _load_table_cursor(tables.get(table))
            spec = self.layout.table(table)
            rows, caught_up = self._poll_table(conn, spec, columns, tc, budget, now, result.errors)
            tables[table] = tc
            if rows:
                result.pages.append(Page(table, rows))
            if not caught_up:
                result.more = True
                return

    def _poll_table(
        self,
        conn: apsw.Connection,
        spec: TableSpec,
        columns: tuple[str, ...],
        tc: dict[str, Any],
        budget: _Budget,
        now: int,
        errors: dict[str, int],
    ) -> tuple[list[dict[str, Any]], bool]:
        """One table's page: (a) late inserts below the window, (b) the recent window's
        rows written or changed lately, (c) the rows past the watermark. Long on purpose: the
        three reads share the page's keyset, watermark, budget and delivered list, in order;
        split, each would take and hand back all of them."""
        table = spec.name
        q = _quote(table)
        tm = _quote(spec.time)
        fp = _fingerprint_sql(spec, columns)
        t_prev: int | None = tc["t"]
        t = _MIN_T if t_prev is None else t_prev
        last_id: str = tc["id"]
        seen: dict[str, list[int]] = tc["seen"]
        unit = spec.unit_ms or _unit_of(t_prev)
        low = max((now - self.lag_ms) // unit, tc["floor"])
        # A time that is not a number (never written by the agent) is never read: it
        # could not be ordered against the watermark.
        numeric = (
            f"(typeof({tm}) = 'integer' OR (typeof({tm}) = 'real'"
            f" AND {tm} = CAST({tm} AS INTEGER)))"
        )
        upto = f"({numeric} AND ({tm} < :t OR ({tm} = :t AND id <= :i)))"
        after = f"({numeric} AND ({tm} > :t OR ({tm} = :t AND id > :i)))"
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
                    f"SELECT rowid, {tm}, id FROM {q} WHERE rowid > :r"
                    f" AND {tm} < :low AND {upto} ORDER BY rowid LIMIT :n",
                    dict(args, r=rowid_prev, n=budget.rows),
                )
            ]
            late_truncated = len(keys) >= budget.rows
            got = self._fetch(conn, spec, columns, keys, budget, errors, out, delivered,
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
                    f"SELECT rowid, {tm}, id, {fp} FROM {q}"
                    f" WHERE {tm} >= :low AND {upto}"
                    f" ORDER BY {tm} DESC, id DESC LIMIT :n",
                    dict(args, n=self.window_rows),
                )
            ]
            changed = [k for k, f in reversed(window) if seen.get(k.id) != [k.t, f]]
            self._fetch(conn, spec, columns, changed, budget, errors, out, delivered,
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
                    f"SELECT rowid, {tm}, id FROM {q} WHERE {after}"
                    f" ORDER BY {tm}, id LIMIT :n",
                    dict(args, n=want + 1),
                )
            ]
            wanted = keys[:want]
            before = len(delivered)
            got = self._fetch(conn, spec, columns, wanted, budget, errors, out, delivered,
                              partial=True)
            if got:
                last = delivered[before + got - 1][0]
                tc["t"], tc["id"] = last.t, last.id
            caught_up = len(keys) <= want and got == len(wanted)
        tc["rowid"] = max_rowid
        if spec.unit_ms is None and t_prev is None and delivered:
            # The first rows of a table whose unit is told from its values.
            unit = _unit_of(max(key.t for key, _ in delivered))
            low = max((now - self.lag_ms) // unit, tc["floor"])
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
        spec: TableSpec,
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
        sql = _fetch_sql(spec, columns, self._columns)
        cap = [self.max_row_bytes] if spec.json in columns else []
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
                row, size = _decode(spec, columns, raw, errors)
                delivered.append((key, size))
                budget.rows -= 1
                budget.bytes -= size if spec.json in columns else spec.row_bytes
                if row is not None:
                    out.append(row)
        return taken


# -- SQL and decoding -------------------------------------------------------------------


def _ms(value: Any) -> int:
    """A row's time as stored (an integer; a whole REAL is accepted as one)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    raise ValueError(f"time {value!r} is not a whole number")


def _unit_of(t: int | None) -> int:
    """Milliseconds per unit of a table's times, told from one of them (seconds when it
    is under SECONDS_BELOW; milliseconds when unknown)."""
    return 1000 if t is not None and abs(t) < SECONDS_BELOW else 1


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


def _fingerprint_sql(spec: TableSpec, columns: tuple[str, ...]) -> str:
    if spec.json in columns:
        return f"octet_length({_quote(spec.json)})"
    parts = [f"coalesce({_quote(c)}, '')" for c in spec.fingerprint if c in columns]
    return "octet_length(" + " || '|' || ".join(parts) + ")" if parts else "0"


def _fetch_sql(
    spec: TableSpec, columns: tuple[str, ...], schema: dict[str, tuple[str, ...] | None]
) -> str:
    """The rows of some rowids (``{marks}``); for a table with a JSON column, parameter 1
    is the largest length read: a larger value comes back NULL (counted oversize)."""
    t = "x"
    cols = [
        f"{t}.{_quote(c)}" if c != spec.json
        else f"CASE WHEN octet_length({t}.{_quote(c)}) <= ?1 THEN {t}.{_quote(c)} END"
        for c in columns
    ]
    fp = _fingerprint_sql(spec, columns).replace("octet_length(", f"octet_length({t}.", 1)
    if spec.json not in columns:
        fp = _fingerprint_sql(spec, columns).replace("coalesce(", f"coalesce({t}.")
    select = [f"{t}.rowid", *cols, fp]
    joins = ""
    if spec.context_sql is not None:
        extra, joins = spec.context_sql(schema, t)
        select += extra
    # ?1 (in the select list, so numbered first) is the size cap; the rowids follow.
    return f"SELECT {', '.join(select)} FROM {_quote(spec.name)} {t}{joins} WHERE {t}.rowid IN ({{marks}})"


def _decode(
    spec: TableSpec, columns: tuple[str, ...], raw: Any, errors: dict[str, int]
) -> tuple[dict[str, Any] | None, int]:
    """One fetched row as a dict (None when it cannot be used), and its fingerprint."""
    values = list(raw)
    rowid = values[0]
    n = len(columns)
    row: dict[str, Any] = {"rowid": rowid}
    row.update(zip(columns, values[1 : 1 + n], strict=True))
    size = int(values[1 + n] or 0)
    table = spec.name
    if spec.json is not None and spec.json in columns:
        text = row.get(spec.json)
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
        if not isinstance(decoded, spec.json_type):
            key = f"{BAD_JSON}:{table}"
            errors[key] = errors.get(key, 0) + 1
            return None, size
        row[spec.json] = decoded
    if spec.context_decode is not None:
        spec.context_decode(row, values[2 + n :])
    return row, size


# -- cursors ----------------------------------------------------------------------------


def _load_cursor(cursor: dict[str, Any] | None, names: tuple[str, ...]) -> dict[str, Any]:
    """A cursor in its full shape (a copy); anything unusable starts from nothing."""
    if not isinstance(cursor, dict) or cursor.get("v") != CURSOR_VERSION:
        return empty_cursor()
    tables = cursor.get("tables")
    out = empty_cursor()
    dev, ino = cursor.get("dev"), cursor.get("ino")
    if isinstance(dev, int) and isinstance(ino, int):
        out["dev"], out["ino"] = dev, ino
    if isinstance(tables, dict):
        out["tables"] = {t: _load_table_cursor(tables.get(t)) for t in names if t in tables}
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
