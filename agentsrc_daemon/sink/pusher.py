"""The sink's thread: what the store committed goes to ClickHouse, in batches, in order,
and the position advances only once the server has answered.

The local store is the buffer. The thread reads with its own read-only connection
(``store.sink.SinkFeed``: rows after the acknowledged event id, revised events, changed
sessions, shaped into JSONEachRow by SQLite) and holds at most one batch (``batch_rows``
events or ``batch_bytes`` of JSON). It never writes the store: an acknowledged position
is handed to the daemon (``take_ack``), whose ingest thread, the store's one writer,
saves it in a short transaction of its own. A crash before that save sends the batch
again after the restart; the rows' keys make that harmless (docs/team.md).

When live it pushes at most once per ``flush_interval`` (one insert per table: the
server likes few, large inserts), at once while a backlog fills whole batches. While the
server is down it waits, with exponential back-off and jitter, up to ``max_backoff``.
Ingest only ever calls ``notify`` (an Event set) and ``take_ack`` (a lock and a swap).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from ..config import SinkConfig
from ..store import sink as feed_sql
from . import schema
from .http import PARSE_ERRORS, ClickHouse, ClickHouseError, Unreachable, redact_url

log = structlog.get_logger("agentsrc.sink")

# While the daemon catches up (a backfill), the sink works at most a quarter of the
# time: after each push it pauses three times as long as the push took. Ingest keeps
# the cores; the backlog goes out once the daemon is live, at full speed.
BACKFILL_YIELD = 3.0
HEARTBEAT_S = 30.0  # idle: look at the server this often (status says whether it answers)
BACKOFF_FIRST_S = 0.5
TABLES = ("events", "findings", "sessions")


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Pusher:
    def __init__(
        self,
        cfg: SinkConfig,
        db_path: Path,
        position: feed_sql.Position,
        *,
        on_ack: Callable[[], None] = lambda: None,
        client_factory: Callable[[SinkConfig], ClickHouse] | None = None,
        busy: Callable[[], bool] = lambda: False,
    ) -> None:
        self.cfg = cfg
        self.db_path = db_path
        self._pos = position  # acknowledged (in memory; the daemon persists it)
        self._on_ack = on_ack
        self._client_factory = client_factory or _client
        self._busy = busy  # is ingest catching up?
        self._pause_until = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._ack: feed_sql.Position | None = None
        self._pending_since: float | None = time.time()  # unknown backlog at start
        self._inflight_since: float | None = None
        self._thread: threading.Thread | None = None
        self._client: ClickHouse | None = None
        self._schema: int | None = None  # the server's schema version, once checked
        self._failures = 0
        self._retry_at = 0.0
        self._last_push = 0.0
        self._last_full = True
        # For status (read by the server's threads: plain values).
        self.connected = False
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.last_push_at: float | None = None
        self.sent = dict.fromkeys(TABLES, 0)
        self.pushes = 0
        self.refused_batches = 0  # batches sent again with unparseable rows skipped

    # ---- the daemon's side --------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentsrc-sink", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def notify(self) -> None:
        """Ingest committed something: wake up (cheap, never blocks)."""
        if self._pending_since is None:
            self._pending_since = time.time()
        self._wake.set()

    def take_ack(self) -> feed_sql.Position | None:
        """The last acknowledged position not yet saved, for the store's writer."""
        if self._ack is None:
            return None
        with self._lock:
            ack, self._ack = self._ack, None
        return ack

    @property
    def events_upto(self) -> int:
        return self._pos.events_upto

    def status(self, lag: dict[str, int]) -> dict[str, Any]:
        now = time.time()
        since = [t for t in (self._pending_since, self._inflight_since) if t is not None]
        behind = lag["events"] or lag["sessions"] or lag["revised"]
        if not self.connected:
            state = "down" if self.last_error else "connecting"
        else:
            state = "pushing" if behind else "live"
        return {
            "enabled": True,
            "state": state,
            "url": redact_url(self.cfg.url),
            "database": self.cfg.database,
            "level": self.cfg.level,
            "host_label": self.cfg.host_label,
            "user_label": self.cfg.user_label,
            "connected": self.connected,
            "hwm": self._pos.hwm,
            "lag_events": lag["events"],
            "lag_sessions": lag["sessions"],
            "lag_revised": lag["revised"],
            "lag_seconds": round(now - min(since), 3) if behind and since else 0.0,
            "last_push_at": _iso(self.last_push_at),
            "last_error": self.last_error,
            "last_error_at": _iso(self.last_error_at),
            "retry_in_s": round(max(0.0, self._retry_at - time.monotonic()), 1)
            if not self.connected and self.last_error else 0.0,
            "schema_version": self._schema,
            "pushes": self.pushes,
            "refused_batches": self.refused_batches,
            "sent": dict(self.sent),
        }

    # ---- the thread -------------------------------------------------------------------

    def _run(self) -> None:
        feed = feed_sql.SinkFeed(self.db_path)
        try:
            while not self._stop.is_set():
                self._wait()
                if self._stop.is_set():
                    break
                self._cycle(feed)
        finally:
            feed.close()
            if self._client is not None:
                self._client.close()

    def _wait(self) -> None:
        """Until the next cycle may run: news (or the heartbeat) after a push that
        emptied the backlog; the rest of the flush interval after a push that did not
        fill a batch; the back-off while the server is down."""
        now = time.monotonic()
        if now < self._retry_at:
            self._stop.wait(self._retry_at - now)
            return
        if now < self._pause_until:
            self._stop.wait(self._pause_until - now)
            return
        if not self._last_full:
            self._wake.wait(HEARTBEAT_S)
            rest = self._last_push + self.cfg.flush_interval - time.monotonic()
            if rest > 0:
                self._stop.wait(rest)  # coalesce what commits meanwhile into one insert

    def _cycle(self, feed: feed_sql.SinkFeed) -> None:
        started = time.monotonic()
        with self._lock:
            self._wake.clear()
            taken, self._pending_since = self._pending_since, None
        if self._inflight_since is None:
            self._inflight_since = taken
        try:
            client = self._ready()
            # Row versions: milliseconds since the epoch, always above the last sent (a
            # clock stepped back, a rebuilt store, still send rows that win).
            clock = max(int(time.time() * 1000), self._pos.clock + 1)
            work = feed.next_work(
                self._pos,
                host=self.cfg.host_label,
                user=self.cfg.user_label,
                text=self.cfg.level == "text",
                max_rows=self.cfg.batch_rows,
                max_bytes=self.cfg.batch_bytes,
                clock=clock,
            )
            idle = time.monotonic() - self._last_push >= HEARTBEAT_S
            if work.empty() and (idle or not self.connected):
                client.query("SELECT 1")  # nothing to send: is the server there?
                self._last_push = time.monotonic()
            for table in TABLES:
                rows: list[str] = getattr(work, table)
                if rows:
                    self._insert(client, table, rows)
        except (Unreachable, ClickHouseError) as exc:
            self._failed(exc, taken)
            return
        except Exception as exc:  # a bad password file, an SQLite error...: retried too
            log.exception("sink_cycle_failed")
            self._failed(exc, taken)
            return
        self._succeeded(work)
        if not work.empty() and self._busy():
            now = time.monotonic()
            self._pause_until = now + BACKFILL_YIELD * (now - started)

    def _insert(self, client: ClickHouse, table: str, rows: list[str]) -> None:
        body = ("\n".join(rows) + "\n").encode()
        try:
            client.insert(self.cfg.database, table, body)
        except ClickHouseError as exc:
            if exc.code not in PARSE_ERRORS:
                raise
            # A row the server cannot parse (values are clamped to the columns' ranges:
            # it should not happen) must not hold back everything after it: the batch
            # goes again with the rows the server cannot read skipped, and says so.
            client.insert(self.cfg.database, table, body, allow_errors=len(rows))
            self.refused_batches += 1
            self.last_error = f"rows skipped in {table}: {exc}"[:500]
            self.last_error_at = time.time()
            log.error("sink_rows_refused", table=table, error=str(exc)[:500])

    def _ready(self) -> ClickHouse:
        if self._client is None:
            self._client = self._client_factory(self.cfg)
        if self._schema is None:
            found = schema.server_version(self._client, self.cfg.database)
            if found < schema.SCHEMA_VERSION and self.cfg.auto_init:
                _, found = schema.init(self._client, self.cfg.database)
            if found < schema.SCHEMA_VERSION:
                raise ClickHouseError(
                    0, f"database {self.cfg.database} has schema version {found}, this agentsrc "
                    f"needs {schema.SCHEMA_VERSION}: run `agentsrc sink init`"
                )
            self._schema = found
        return self._client

    def _failed(self, exc: Exception, taken: float | None) -> None:
        if taken is not None and (self._pending_since is None or taken < self._pending_since):
            self._pending_since = taken  # still waiting, since then
        if isinstance(exc, ClickHouseError) and exc.code in (
            schema.UNKNOWN_TABLE, schema.UNKNOWN_DATABASE
        ):
            self._schema = None  # dropped behind our back: check (and init) again
        self._failures += 1
        delay = min(self.cfg.max_backoff, BACKOFF_FIRST_S * 2 ** min(self._failures - 1, 20))
        delay *= random.uniform(0.5, 1.0)
        self._retry_at = time.monotonic() + delay
        message = f"{type(exc).__name__}: {exc}"[:500]
        if self.connected or message != self.last_error:
            log.warning("sink_push_failed", error=message, retry_in_s=round(delay, 2),
                        url=redact_url(self.cfg.url))
        self.connected = False
        self.last_error = message
        self.last_error_at = time.time()

    def _succeeded(self, work: feed_sql.Work) -> None:
        if not self.connected:
            log.info("sink_connected", url=redact_url(self.cfg.url), database=self.cfg.database,
                     hwm=self._pos.hwm)
        self.connected = True
        self._failures = 0
        self._retry_at = 0.0
        upto = work.upto
        if upto is not None and upto != self._pos:
            self._pos = replace(upto)
            with self._lock:
                self._ack = replace(upto)
            self._on_ack()
        if not work.empty():
            self._last_push = time.monotonic()
            self.last_push_at = time.time()
            self.pushes += 1
            for table in TABLES:
                self.sent[table] += len(getattr(work, table))
        self._last_full = work.full
        if not work.full:
            self._inflight_since = None


def _client(cfg: SinkConfig) -> ClickHouse:
    return ClickHouse(
        cfg.url, user=cfg.user, password=cfg.password(), timeout=cfg.timeout, ca_file=cfg.ca_file
    )


def start_sink(
    cfg: SinkConfig, store: Any, on_ack: Callable[[], None], busy: Callable[[], bool]
) -> Pusher:
    """The sink's thread started from the position saved for ``cfg``'s target (a new
    target starts from the beginning); ``store`` is the daemon's writer (a
    store.Store), used here only to read and reset that position."""
    position = feed_sql.open_target(store.conn, cfg.target())
    pusher = Pusher(cfg, store.db_path, position, on_ack=on_ack, busy=busy)
    pusher.start()
    return pusher
