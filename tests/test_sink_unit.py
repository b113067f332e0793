"""The sink's pieces without a daemon: its configuration, its feeds in the store (the
position, revised events, changed sessions, levels, limits), the client's errors, the
back-off, and the versioned schema on the real server."""

from __future__ import annotations

import base64
import http.server
import shutil
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsrc_daemon import events as E
from agentsrc_daemon.config import ConfigError, SinkConfig, load_config
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.sink import schema
from agentsrc_daemon.sink.http import ClickHouse, ClickHouseError, Unreachable, redact_url
from agentsrc_daemon.sink.pusher import Pusher
from agentsrc_daemon.store import Batch, Store
from agentsrc_daemon.store import sink as feed

from clickhouse import ClickHouseServer

# ---- configuration ----------------------------------------------------------------------


def _cfg(tmp_path: Path, body: str, **env: str) -> Any:
    f = tmp_path / "config.toml"
    f.write_text(body)
    return load_config(env={"HOME": str(tmp_path), **env}, config_file=f)


def test_sink_config_defaults_and_password_sources(tmp_path: Path) -> None:
    assert _cfg(tmp_path, "").sink is None
    cfg = _cfg(tmp_path, '[sink.clickhouse]\nurl = "http://127.0.0.1:8123"\n',
               AGENTSRC_CLICKHOUSE_PASSWORD="from-env")
    sc = cfg.sink
    assert sc is not None and sc.level == "metadata" and sc.database == "agentsrc"
    assert sc.host_label and sc.user_label  # from the machine
    assert sc.password({"AGENTSRC_CLICKHOUSE_PASSWORD": "from-env"}) == "from-env"
    (tmp_path / "pw").write_text("from-file\n")
    sc = _cfg(tmp_path, '[sink.clickhouse]\nurl = "https://ch:8443"\npassword_file = "~/pw"\n'
              'level = "text"\nhost_label = "h"\nuser_label = "u"\n').sink
    assert sc.password({}) == "from-file" and sc.level == "text"
    assert sc.target() == "https://ch:8443|agentsrc|h|u|text"
    assert _cfg(tmp_path, '[sink.clickhouse]\nurl = "http://x"\n', AGENTSRC_SINK="0").sink is None
    assert _cfg(tmp_path, '[sink.clickhouse]\nurl = "http://x"\nenabled = false\n').sink is None


@pytest.mark.parametrize("body, message", [
    ('url = "http://x"\npassword = "p"', "not kept in the config file"),
    ('url = "http://u:p@x:8123"', "must not hold credentials"),
    ('url = "ftp://x"', "http:// or https://"),
    ('url = "http://x"\nlevel = "everything"', "level must be one of"),
    ('url = "http://x"\ndatabase = "a; DROP"', "not a plain identifier"),
    ('url = "http://x"\nbatch_rows = 0', "batch_rows"),
])
def test_sink_config_refuses(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _cfg(tmp_path, "[sink.clickhouse]\n" + body + "\n")


def test_client_errors_and_urls() -> None:
    e = ClickHouseError(404, "Code: 60, e.displayText() = DB::Exception: Table x doesn't exist")
    assert e.code == 60 and "HTTP 404" in str(e)
    assert ClickHouseError(502, "Bad Gateway").code == 0
    assert redact_url("https://ch.example:8443/prefix?x=1") == "https://ch.example:8443/prefix"
    with pytest.raises(ValueError):
        ClickHouse("ftp://x")


# ---- the store's feeds ---------------------------------------------------------------------


def ev(key: str, kind: str, data: dict[str, Any], **kw: Any) -> E.Event:
    return E.Event(key=key, session_id="claude-code:s1", kind=kind, ts="2026-01-02T03:04:05.678Z",
                   adapter="claude-code", source_path="/x/a.jsonl", offset=0, data=data, **kw)


def commit(store: Store, *events: E.Event, title: str | None = None) -> None:
    b = Batch(events=list(events))
    b.sessions.append(E.SessionFacts("claude-code:s1", "claude-code", "s1", cwd="/w", title=title))
    b.cursors["/x/a.jsonl"] = Cursor("/x/a.jsonl", "claude-code", "jsonl", offset=1)
    store.commit(b)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "db.sqlite")
    yield s
    s.close()


def work(db: Path, pos: feed.Position, *, text: bool = False, max_rows: int = 1000,
         max_bytes: int = 1 << 20, clock: int = 7) -> feed.Work:
    f = feed.SinkFeed(db)
    try:
        return f.next_work(pos, host="h", user="u", text=text, max_rows=max_rows,
                           max_bytes=max_bytes, clock=clock)
    finally:
        f.close()


def test_no_sink_no_feed(store: Store, tmp_path: Path) -> None:
    commit(store, ev("p1", E.PROMPT, {"text": "hi"}))
    assert store.conn.execute("SELECT COUNT(*) FROM sink_sessions").fetchone() == (0,)
    pos = feed.open_target(store.conn, "t")
    assert store.conn.execute("SELECT COUNT(*) FROM sink_sessions").fetchone() == (1,)
    feed.forget(store.conn)
    commit(store, ev("p2", E.PROMPT, {"text": "again"}))
    assert store.conn.execute("SELECT COUNT(*) FROM sink_sessions").fetchone() == (0,)
    assert store.conn.execute("SELECT COUNT(*) FROM sink_state").fetchone() == (0,)
    assert pos.hwm == 0


def test_feed_rows_levels_and_position(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    commit(store, ev("p1", E.PROMPT, {"text": "hello there"}),
           ev("c1", E.COMMAND, {"command": "make", "exit_code": 2, "interrupted": False}),
           ev("u1", E.USAGE, {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7,
                              "model": None}), title="hello there")
    pos = feed.open_target(store.conn, "t")
    w = work(db, pos)
    rows = [orjson.loads(r) for r in w.events]
    assert [r["kind"] for r in rows] == ["prompt", "command", "usage"]
    assert rows[0]["text"] == "" and rows[0]["text_chars"] == len("hello there")
    assert rows[1]["command"] == "make" and rows[1]["failed"] == 1 and rows[1]["exit_code"] == 2
    # A row has the columns of its kind (the server fills the others with zeros).
    assert "exit_code" not in rows[0] and "failed" not in rows[0] and "command" not in rows[2]
    assert rows[2]["total_tokens"] == 7 and rows[2]["model"] == ""
    assert rows[0]["ts"] == 1767323045 and rows[0]["ts_ms"] == 1767323045678
    assert {r["host"] for r in rows} == {"h"} and len(rows[0]["key"]) == 32
    (session,) = [orjson.loads(r) for r in w.sessions]
    assert session["title"] == "" and session["version"] == 7 and session["prompts"] == 1
    texted = work(db, pos, text=True)
    assert orjson.loads(texted.events[0])["text"] == "hello there"
    assert orjson.loads(texted.sessions[0])["title"] == "hello there"
    # The acknowledged position: nothing more to send.
    assert w.upto is not None and w.upto.hwm == 3 and w.upto.clock == 7
    feed.save(store.conn, w.upto)
    assert w.upto.events_upto == 3
    assert feed.lag(store.conn, w.upto.events_upto) == {"events": 0, "sessions": 0, "revised": 0}
    assert work(db, w.upto).empty()
    again = feed.open_target(store.conn, "t")  # after a restart
    assert (again.hwm, again.events_upto) == (3, 3)
    assert feed.open_target(store.conn, "other").hwm == 0  # another target starts over


def test_limits_by_rows_and_bytes(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    commit(store, *[ev(f"p{i}", E.PROMPT, {"text": "x" * 1000}) for i in range(10)])
    pos = feed.open_target(store.conn, "t")
    w = work(db, pos, max_rows=4)
    assert len(w.events) == 4 and w.full and w.upto is not None and w.upto.hwm == 4
    w = work(db, pos, max_bytes=2000, text=True)
    assert len(w.events) == 2 and w.full


def test_changed_session_after_a_read_is_sent_again(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    commit(store, ev("p1", E.PROMPT, {"text": "a"}))
    pos = feed.open_target(store.conn, "t")
    w = work(db, pos)
    assert len(w.sessions) == 1
    commit(store, ev("p2", E.PROMPT, {"text": "b"}))  # while the push is in flight
    assert w.upto is not None
    feed.save(store.conn, w.upto)
    w2 = work(db, w.upto, clock=8)
    (session,) = [orjson.loads(r) for r in w2.sessions]
    assert session["prompts"] == 2 and session["version"] == 8


def test_revised_event_is_sent_again_once_pushed(store: Store, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    commit(store, ev("m1", E.MESSAGE, {"text": "one"}), ev("m2", E.MESSAGE, {"text": "x"}))
    pos = feed.open_target(store.conn, "t")
    w = work(db, pos, text=True, max_rows=1)  # m1 pushed, m2 not yet
    assert w.upto is not None and w.upto.hwm == 1
    feed.save(store.conn, w.upto)
    commit(store, ev("m1", E.MESSAGE, {"text": "one two"}, revision=1),
           ev("m2", E.MESSAGE, {"text": "x y"}, revision=1))
    w2 = work(db, w.upto, text=True)
    rows = [orjson.loads(r) for r in w2.events]
    # m2 goes once, with its latest data; m1 again, with its higher revision.
    assert sorted((r["id"], r["text"], r["revision"]) for r in rows) == [
        (1, "one two", 1), (2, "x y", 1)]
    assert w2.upto is not None
    feed.save(store.conn, w2.upto)
    assert work(db, w2.upto).empty()


def test_event_taken_over_by_another_session_is_sent_again(store: Store, tmp_path: Path) -> None:
    """A record read first as a copy (say, in a resumed session's file), then in the
    file of the session that wrote it: the stored event moves to that session in place
    (same id, same key); its row goes again, with a higher version, so FINAL shows it
    in its owner."""
    db = tmp_path / "db.sqlite"
    copy = ev("u1", E.PROMPT, {"text": "hi"}, claim=E.CLAIM_COPY)
    copy.session_id = "claude-code:copy"
    commit(store, copy)
    pos = feed.open_target(store.conn, "t")
    w = work(db, pos, clock=10)
    (first,) = [orjson.loads(r) for r in w.events]
    assert first["session_id"] == "claude-code:copy"
    assert w.upto is not None
    feed.save(store.conn, w.upto)
    commit(store, ev("u1", E.PROMPT, {"text": "hi"}, claim=E.CLAIM_OWN))
    w2 = work(db, w.upto, clock=11)
    (moved,) = [orjson.loads(r) for r in w2.events]
    assert (moved["key"], moved["id"], moved["session_id"]) == (
        first["key"], first["id"], "claude-code:s1")
    assert moved["version"] > first["version"]


# ---- the back-off ------------------------------------------------------------------------


class DownClient(ClickHouse):
    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9")
        self.calls = 0

    def query(self, sql: str, *, database: str | None = None) -> bytes:
        self.calls += 1
        raise Unreachable("ConnectionRefusedError")


def test_backoff_grows_with_jitter_up_to_the_cap(store: Store, tmp_path: Path) -> None:
    client = DownClient()
    cfg = SinkConfig(url="http://127.0.0.1:9", host_label="h", user_label="u", max_backoff=0.4)
    pos = feed.open_target(store.conn, cfg.target())
    p = Pusher(cfg, tmp_path / "db.sqlite", pos, client_factory=lambda c: client)
    p.start()
    try:
        time.sleep(2.0)
        st = p.status(feed.lag(store.conn, 0))
    finally:
        p.stop()
    assert st["state"] == "down" and not st["connected"]
    assert "ConnectionRefusedError" in st["last_error"] and st["retry_in_s"] <= 0.4
    # 0.5 s doubling capped at 0.4 s, times 0.5-1.0: between 5 and 9 tries in 2 s.
    assert 3 <= client.calls <= 10


class PickyClient(ClickHouse):
    """Answers the schema check; refuses a batch once as unparseable, takes it when
    told to skip what it cannot parse."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9")
        self.inserts: list[tuple[str, int]] = []

    def query(self, sql: str, *, database: str | None = None) -> bytes:
        return b"1\n"

    def insert(self, database: str, table: str, rows: bytes, *, allow_errors: int = 0) -> None:
        self.inserts.append((table, allow_errors))
        if table == "events" and not allow_errors:
            raise ClickHouseError(500, "Code: 27, e.displayText() = DB::Exception: Cannot parse input")


def test_a_batch_the_server_cannot_parse_goes_again_skipping_bad_rows(
    store: Store, tmp_path: Path
) -> None:
    commit(store, ev("p1", E.PROMPT, {"text": "a"}))
    client = PickyClient()
    cfg = SinkConfig(url="http://127.0.0.1:9", host_label="h", user_label="u")
    pos = feed.open_target(store.conn, cfg.target())
    p = Pusher(cfg, tmp_path / "db.sqlite", pos, client_factory=lambda c: client)
    p.start()
    try:
        deadline = time.monotonic() + 10
        while p.take_ack() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        st = p.status({"events": 0, "sessions": 0, "revised": 0})
    finally:
        p.stop()
    assert client.inserts[:3] == [("events", 0), ("events", 1), ("sessions", 0)]
    assert st["refused_batches"] == 1 and st["connected"]
    assert "rows skipped in events" in st["last_error"]


# ---- the schema on the real server -----------------------------------------------------


@pytest.fixture()
def chdb(clickhouse: ClickHouseServer) -> Iterator[str]:
    name = "u_" + uuid.uuid4().hex[:10]
    yield name
    clickhouse.drop(name)


def test_schema_init_is_idempotent_and_versioned(clickhouse: ClickHouseServer, chdb: str) -> None:
    client = ClickHouse(clickhouse.url)
    assert schema.server_version(client, chdb) == 0
    assert schema.init(client, chdb, schema.MIGRATIONS[:1]) == (0, 1)
    assert schema.init(client, chdb, schema.MIGRATIONS[:1]) == (1, 1)
    # Version 2, the costs' columns, on a database of version 1; then a later one.
    assert schema.init(client, chdb) == (1, 2)
    assert schema.init(client, chdb) == (2, 2)
    costs = clickhouse.query(f"SELECT table, name, type FROM system.columns WHERE database = '{chdb}'"
                             " AND name IN ('cost_usd', 'cost_kind', 'estimated_usd', 'unpriced_tokens')"
                             " ORDER BY table, name").splitlines()
    assert costs == [f"{t}\t{n}\t{k}" for t in ("events", "sessions") for n, k in (
        ("cost_kind", "String"), ("cost_usd", "Nullable(Float64)"),
        ("estimated_usd", "Nullable(Float64)"), ("unpriced_tokens", "UInt64"))]
    later = [*schema.MIGRATIONS, [schema.AddColumn("events", "extra", "String DEFAULT ''")]]
    assert schema.init(client, chdb, later) == (2, 3)
    assert schema.init(client, chdb, later) == (3, 3)
    cols = clickhouse.scalar(f"SELECT count() FROM system.columns WHERE database = '{chdb}'"
                             " AND table = 'events' AND name = 'extra'")
    assert cols == "1"
    engines = dict(line.split("\t") for line in clickhouse.query(
        f"SELECT name, engine FROM system.tables WHERE database = '{chdb}'").splitlines())
    assert engines == {"events": "ReplacingMergeTree", "findings": "ReplacingMergeTree",
                       "sessions": "ReplacingMergeTree", "agentsrc_schema": "MergeTree"}
    client.close()


# ---- TLS --------------------------------------------------------------------------------


def test_https_is_verified_against_the_configured_ca(tmp_path: Path) -> None:
    """An https URL: TLS with the server's certificate verified (a private CA file
    trusts it; the system's CAs do not), the credentials in the request."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
         "-out", str(cert)], check=True, capture_output=True, timeout=60)
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"1\n")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{server.server_address[1]}"
    try:
        trusted = ClickHouse(url, user="writer", password="pw", ca_file=cert, timeout=10)
        assert trusted.query("SELECT 1") == b"1\n"
        trusted.close()
        assert seen == ["Basic " + base64.b64encode(b"writer:pw").decode()]
        untrusted = ClickHouse(url, timeout=10)
        with pytest.raises(Unreachable, match="CERTIFICATE_VERIFY_FAILED"):
            untrusted.query("SELECT 1")
    finally:
        server.shutdown()


# ---- doctor ---------------------------------------------------------------------------


def test_doctor_sink_checks(tmp_path: Path) -> None:
    from agentsrc_daemon.system.doctor import check_sink

    pw = tmp_path / "pw"
    pw.write_text("secret-for-test\n")
    pw.chmod(0o644)
    cfg = _cfg(tmp_path, f'[sink.clickhouse]\nurl = "http://127.0.0.1:9"\npassword_file = "{pw}"\n')
    down = {"sink": {"enabled": True, "connected": False, "last_error": "Unreachable: refused",
                     "lag_events": 12, "lag_seconds": 3.5, "level": "metadata"}}
    checks = check_sink(cfg, lambda c: down)
    assert [(c.name, c.ok) for c in checks] == [("sink password", False), ("sink", False)]
    assert "mode 0644, want 0600" in checks[0].detail
    assert "Unreachable: refused" in checks[1].detail and "lag 12 events" in checks[1].detail
    pw.chmod(0o600)
    up = {"sink": {**down["sink"], "connected": True, "last_error": None}}
    assert [c.ok for c in check_sink(cfg, lambda c: up)] == [True, True]

    def no_daemon(c: Any) -> Any:
        raise OSError("no socket")

    checks = check_sink(cfg, no_daemon, ping=lambda c: "18.16.1")
    assert checks[-1].ok and checks[-1].warning and "ClickHouse 18.16.1" in checks[-1].detail
    assert check_sink(_cfg(tmp_path, ""), no_daemon) == []
