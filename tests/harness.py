"""Run the real daemon as a subprocess against a temporary home, and talk to it over
its real socket. Used by the integration tests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import orjson

from agentsrc_daemon.errors import DaemonNotRunning
from agentsrc_daemon.rpc.client import Client
from agentsrc_daemon.store.connection import connect
from agentsrc_daemon.store.migrations.runner import run_migration
from agentsrc_daemon.store.migrations.versions import MIGRATIONS

REPO = Path(__file__).resolve().parents[1]

_PRICE_TABLE: list[bytes] = []


def price_table() -> bytes:
    """The price table the daemon exports at its first start (pricing/export.py's, of
    the installed genai-prices), made once per test run: each daemon started here
    finds it in its data directory, as a second start of a real daemon does, instead
    of spending half a second of a core in the export's child process
    (tests/test_prices_daemon.py starts one without it)."""
    if not _PRICE_TABLE:
        from agentsrc_daemon.pricing import export

        _PRICE_TABLE.append(export.bundled_table())
    return _PRICE_TABLE[0]


def seed_price_table(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = data_dir / "prices.json"
    if not target.exists():
        target.write_bytes(price_table())
        target.chmod(0o600)


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception as exc:  # keep polling; report the last failure
            last_exc = exc
            value = None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}; last error: {last_exc!r}")


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a read-only corpus into a writable temporary home."""
    shutil.copytree(src, dst, dirs_exist_ok=True, copy_function=shutil.copyfile)


class DaemonProcess:
    def __init__(
        self,
        home: Path,
        *,
        env: dict[str, str] | None = None,
        fakes: list[str] | None = None,
        seed_prices: bool = True,
    ) -> None:
        self.home = home
        # tests/daemon_with_fakes.py's options (a stalled loop, a full disk, ...): the
        # daemon is started through it when any is given.
        self.fakes = list(fakes or [])
        # Short paths: a Unix socket path must stay under ~104 bytes.
        self.run_dir = Path(tempfile.mkdtemp(prefix="asrc-", dir="/tmp"))
        self.data_dir = self.run_dir / "data"
        self.socket_path = self.run_dir / "s" / "agentsrc.sock"
        self.log_path = self.run_dir / "daemon.log"
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "AGENTSRC_DATA_DIR": str(self.data_dir),
            "AGENTSRC_SOCKET": str(self.socket_path),
            "AGENTSRC_RECONCILE_INTERVAL": "2",
            "XDG_CONFIG_HOME": str(self.run_dir / "config"),
            "PYTHONUNBUFFERED": "1",
        }
        if env:
            self.env.update(env)
        self.seed_prices = seed_prices
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *args: str, wait: bool = True) -> DaemonProcess:
        if self.seed_prices:
            seed_price_table(self.data_dir)
        log = self.log_path.open("ab")
        launcher = ([str(REPO / "tests" / "daemon_with_fakes.py"), *self.fakes] if self.fakes
                    else ["-m", "agentsrc_daemon.cli"])
        self.proc = subprocess.Popen(
            [sys.executable, *launcher, "run", "--json-logs", *args],
            env=self.env,
            stdout=log,
            stderr=log,
            cwd=str(REPO),
            start_new_session=True,  # its own process group, as under a service manager
        )
        if wait:
            wait_for(self.ping, timeout=30)
        return self

    def ping(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {self.proc.returncode}: {self.log()[-2000:]}")
        try:
            with Client(self.socket_path, timeout=5) as c:
                c.call("status")
            return True
        except DaemonNotRunning:
            return False

    def client(self) -> Client:
        return Client(self.socket_path, timeout=30)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with self.client() as c:
            return c.call(method, params or {})

    def wait_live(self, timeout: float = 120.0) -> dict[str, Any]:
        return wait_for(
            lambda: (st := self.call("status"))["state"] == "live" and st, timeout=timeout
        )

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def send_signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def children(self) -> list[int]:
        assert self.proc is not None
        try:
            text = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        except OSError:
            return []
        return [int(x) for x in text.split()]

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "agentsrc_daemon.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            cwd=str(REPO),
            timeout=120,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"agentsrc {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result

    def cleanup(self) -> None:
        self.stop(signal.SIGKILL)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def subscribe_until_prompts(
    d: DaemonProcess, prompts: int, timeout: float = 20.0
) -> tuple[threading.Thread, list[dict[str, Any]]]:
    """A subscriber on its own thread, subscribed before this returns, collecting every
    event until ``prompts`` prompts came (or ``timeout`` seconds of silence)."""
    received: list[dict[str, Any]] = []
    ready = threading.Event()

    def listen() -> None:
        with d.client() as c:
            c.connect().settimeout(timeout)
            for msg in c.subscribe({}):
                if msg["method"] == "subscribed":
                    ready.set()
                    continue
                if msg["method"] == "event":
                    received.append(msg["params"])
                    if sum(1 for e in received if e["kind"] == "prompt") >= prompts:
                        return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert ready.wait(10)
    return t, received


def all_events(d: DaemonProcess, **params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    since = 0
    with d.client() as c:
        while True:
            page = c.call("events.list", {"since_id": since, "limit": 5000, **params})
            out.extend(page["events"])
            if not page["next_since_id"]:
                return out
            since = page["next_since_id"]


class DaemonFactory(Protocol):
    """The ``daemon_factory`` fixture: a daemon (not started) on a home, stopped and
    removed at the end of the test."""

    def __call__(self, home: Path | None = None, **env: str) -> DaemonProcess: ...


# ---- small Claude Code transcripts for live-tailing tests ----------------------------------

SID = "11111111-2222-3333-4444-555555555555"


def claude_line(uuid: str, kind: str = "user", text: str = "hello", **extra: Any) -> bytes:
    rec: dict[str, Any] = {
        "type": kind,
        "sessionId": SID,
        "uuid": uuid,
        "parentUuid": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/work/proj",
        "version": "2.1.0",
        "isSidechain": False,
    }
    if kind == "user":
        rec["message"] = {"role": "user", "content": text}
    else:
        rec["message"] = {
            "id": f"msg_{uuid}",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }
    rec.update(extra)
    return orjson.dumps(rec) + b"\n"


def claude_session(home: Path) -> Path:
    d = home / ".claude" / "projects" / "-work-proj"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{SID}.jsonl"


def signature(events: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """What identifies an event independent of its id (ids depend on commit order)."""
    return Counter(
        (
            e["session_id"],
            e["kind"],
            e["source_path"],
            e["offset"],
            e["tool"],
            e["call_id"],
            e["ts"],
            e.get("subagent_id"),
            e.get("text"),
        )
        for e in events
    )


def killed_mid_backfill_ends_as(
    d: DaemonProcess, expected: Counter[tuple[Any, ...]], *args: str
) -> None:
    """Start ``d`` (with ``args``), kill -9 it once part of its backfill is stored, start
    it again and wait for live: its events are then ``expected`` (a reference run's
    ``signature``), none lost and none twice."""
    d.start(*args)
    wait_for(lambda: d.call("status")["events"] > 200, timeout=120, interval=0.005)
    stored = d.call("status")["events"]
    d.stop(signal.SIGKILL)
    assert stored < sum(expected.values())  # killed mid-way through the backfill
    d.start(*args)
    d.wait_live(timeout=300)
    assert signature(all_events(d)) == expected


def insert_event_row(
    conn: Any, session_id: str, adapter: str, turn_id: str | None = None, **columns: Any
) -> None:
    """One event written straight into a store at the current schema, as the writer
    writes it: into ``event_rows``, its session, turn and adapter by their integer keys
    (the ``events`` view joins the texts back in; schema 16)."""
    for table, text in (("session_keys", session_id), ("turn_keys", turn_id),
                        ("adapter_keys", adapter)):
        if text is not None:
            conn.execute(f"INSERT OR IGNORE INTO {table}(id) VALUES (?)", (text,))
    names = ", ".join(columns)
    marks = ", ".join("?" * len(columns))
    conn.execute(
        "INSERT INTO event_rows(session_id, adapter, session_key, turn_key, adapter_key,"
        f" {names}) VALUES ('', '', (SELECT key FROM session_keys WHERE id = ?),"
        " (SELECT key FROM turn_keys WHERE id = ?), (SELECT key FROM adapter_keys WHERE id = ?),"
        f" {marks})",
        (session_id, turn_id, adapter, *columns.values()),
    )


# The tables schema_copy does not copy: sqlite_sequence on its own, the FTS5 table
# through its shadow tables.
SCHEMA_COPY_SKIPPED = {"sqlite_sequence", "search_index"}


def schema_copy(fresh_db: Path, out_db: Path, version: int) -> None:
    """A store of schema ``version`` holding what ``fresh_db`` holds: the old migrations
    up to it (the old code's schema, exactly), then every table's rows copied in (the
    events from the ``events`` view, which gives the old columns: the text ids, and at
    schema 7 the data as the JSON the old code stored; before 17 the sources' states
    too, as JSON). Triggers are left out while the rows go in (the aggregates' would
    count them twice) and put back after."""
    conn = connect(out_db)
    for v in range(version):
        run_migration(conn, MIGRATIONS[v])
    assert conn.execute("PRAGMA user_version").fetchone() == (version,)
    conn.execute("ATTACH DATABASE ? AS fresh", (str(fresh_db),))
    with conn:
        triggers = list(conn.execute(
            "SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger'"))
        for name, _ in triggers:
            conn.execute(f'DROP TRIGGER main."{name}"')
        tables = [
            name for (name,) in conn.execute(
                "SELECT name FROM main.sqlite_schema WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%'"
            )
            if name not in SCHEMA_COPY_SKIPPED
        ]
        for table in tables:
            cols = [r[1] for r in conn.execute(f"PRAGMA main.table_info({table})")]
            names = ", ".join(cols)
            conn.execute(f"DELETE FROM main.{table}")
            conn.execute(f"INSERT INTO main.{table}({names}) SELECT {names} FROM fresh.{table}")
        conn.execute("DELETE FROM main.sqlite_sequence")
        # The rows' table is event_rows since schema 16; before, it is events.
        conn.execute(
            "INSERT INTO main.sqlite_sequence SELECT CASE name WHEN 'event_rows' THEN 'events'"
            " ELSE name END, seq FROM fresh.sqlite_sequence"
        )
        if version < 17:  # states stored packed since 17
            conn.execute("UPDATE main.sources SET state = unpack(state)")
        for _, sql in triggers:
            conn.execute(sql)
    conn.execute("DETACH DATABASE fresh")
    conn.close()
