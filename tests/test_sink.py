"""The ClickHouse sink against a real server (tests/clickhouse.py): the corpus arrives
complete; an outage and a kill -9 mid-push lose nothing and, read as docs/team.md
reads, double nothing; two daemons share one database; what each level sends, and no
secret value at any level."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from clickhouse import PASSWORD, ClickHouseServer, Proxy
from corpus import corpus_home
from harness import DaemonFactory, DaemonProcess, claude_line, claude_session, copy_tree, wait_for
from replicate import replicate
from test_secrets_e2e import SID, needles, write_home

pytestmark = pytest.mark.slow


@pytest.fixture()
def db(clickhouse: ClickHouseServer) -> Iterator[str]:
    name = "t_" + uuid.uuid4().hex[:12]
    yield name
    clickhouse.drop(name)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return orjson.dumps(str(value)).decode()


def configure_sink(d: DaemonProcess, url: str, database: str, **opts: Any) -> None:
    """Write the daemon's config file: [sink.clickhouse] with quick test timings."""
    table = {"url": url, "database": database, "user": "writer", "password_file": "",
             "flush_interval": 0.2, "max_backoff": 0.5, "host_label": "h1", **opts}
    pw = d.run_dir / "ch.password"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    table["password_file"] = str(pw)
    path = d.run_dir / "config" / "agentsrc" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[sink.clickhouse]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in table.items()))


def sink_status(d: DaemonProcess) -> dict[str, Any]:
    st = d.call("status")
    assert st["sink"]["enabled"], st["sink"]
    return {**st["sink"], "daemon_state": st["state"]}


def synced(d: DaemonProcess) -> dict[str, Any] | None:
    s = sink_status(d)
    done = (s["daemon_state"] == "live" and s["connected"] and s["lag_events"] == 0
            and s["lag_sessions"] == 0 and s["lag_revised"] == 0)
    return s if done else None


def wait_synced(d: DaemonProcess, timeout: float = 120) -> dict[str, Any]:
    return wait_for(lambda: synced(d), timeout=timeout, interval=0.1)


def local(d: DaemonProcess) -> apsw.Connection:
    return apsw.Connection(str(d.data_dir / "agentsrc.db"), flags=apsw.SQLITE_OPEN_READONLY)


def local_per_session(d: DaemonProcess) -> dict[str, tuple[int, int, int]]:
    """session -> (events, sum of ids, xor of the keys' first 8 bytes)."""
    out: dict[str, list[int]] = {}
    conn = local(d)
    for sid, eid, key in conn.execute("SELECT session_id, id, key_hash FROM events"):
        s = out.setdefault(sid, [0, 0, 0])
        s[0] += 1
        s[1] += eid
        s[2] ^= int.from_bytes(key[:8], "big")
    conn.close()
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def server_per_session(ch: ClickHouseServer, db: str, host: str) -> dict[str, tuple[int, int, int]]:
    rows = ch.rows(
        "SELECT session_id, count() AS n, sum(id) AS ids,"
        " groupBitXor(reinterpretAsUInt64(reverse(unhex(substring(key, 1, 16))))) AS x"
        f" FROM {db}.events FINAL WHERE host = '{host}' GROUP BY session_id"
    )
    return {r["session_id"]: (int(r["n"]), int(r["ids"]), int(r["x"])) for r in rows}


def counts(ch: ClickHouseServer, db: str, table: str, host: str | None = None) -> tuple[int, int]:
    """(rows as stored, rows read FINAL): duplicates not yet merged away show as a gap."""
    where = f" WHERE host = '{host}'" if host else ""
    raw = int(ch.scalar(f"SELECT count() FROM {db}.{table}{where}"))
    final = int(ch.scalar(f"SELECT count() FROM {db}.{table} FINAL{where}"))
    return raw, final


def assert_complete(ch: ClickHouseServer, db: str, d: DaemonProcess, host: str = "h1") -> None:
    assert server_per_session(ch, db, host) == local_per_session(d)
    conn = local(d)
    (n_events,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()
    (n_findings,) = conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'secret'").fetchone()
    sessions = {
        sid: (prompts, messages, tool_calls, total)
        for sid, prompts, messages, tool_calls, total in conn.execute(
            "SELECT id, prompts, messages, tool_calls, total_tokens FROM sessions")
    }
    conn.close()
    assert counts(ch, db, "events", host)[1] == n_events
    assert counts(ch, db, "findings", host)[1] == n_findings
    got = {
        r["session_id"]: (int(r["prompts"]), int(r["messages"]), int(r["tool_calls"]),
                          int(r["total_tokens"]))
        for r in ch.rows(f"SELECT session_id, prompts, messages, tool_calls, total_tokens"
                         f" FROM {db}.sessions FINAL WHERE host = '{host}'")
    }
    assert got == sessions
    assert_costs(ch, db, d, host)


def assert_costs(ch: ClickHouseServer, db: str, d: DaemonProcess, host: str = "h1") -> None:
    """Each session's cost on the server is the daemon's (its kind, dollars, estimate
    beside reported costs, unpriced tokens), and the usage events' dollars add up to
    them (to the micro-dollar a row)."""
    local_costs = {r["session"]: r["cost"] for r in d.call(
        "usage.report", {"by": "session", "limit": 10_000})["rows"]}
    rows = ch.rows(f"SELECT session_id, cost_usd, cost_kind, estimated_usd, unpriced_tokens"
                   f" FROM {db}.sessions FINAL WHERE host = '{host}'")
    server = {r["session_id"]: r for r in rows}
    assert set(local_costs) <= set(server)
    for sid in set(server) - set(local_costs):  # no usage recorded: unpriced, not $0
        assert (server[sid]["cost_usd"], server[sid]["cost_kind"]) == (None, "unpriced"), sid
    for sid, cost in local_costs.items():
        r = server[sid]
        assert r["cost_kind"] == cost["kind"], sid
        # Float64 on the server: equal to the micro-dollar the socket rounds to.
        if cost["usd"] is None:
            assert r["cost_usd"] is None, sid
        else:
            assert float(r["cost_usd"]) == pytest.approx(cost["usd"], abs=1e-9), sid
        assert int(r["unpriced_tokens"]) == cost.get("unpriced_tokens", 0), sid
        if "estimated_usd" in cost:
            assert float(r["estimated_usd"]) == pytest.approx(cost["estimated_usd"], abs=1e-9), sid
    for r in ch.rows(f"SELECT session_id, sum(cost_usd) AS usd, count() AS n,"
                     f" sum(unpriced_tokens) AS unpriced FROM {db}.events FINAL"
                     f" WHERE host = '{host}' AND kind = 'usage' GROUP BY session_id"):
        cost = local_costs[r["session_id"]]
        assert abs(float(r["usd"] or 0) - (cost["usd"] or 0)) <= 1e-6 * int(r["n"]), r
        assert int(r["unpriced"]) == cost.get("unpriced_tokens", 0), r


def test_corpus_backfill_arrives_complete(
    tmp_path: Path, daemon_factory: DaemonFactory, clickhouse: ClickHouseServer, db: str
) -> None:
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    d = daemon_factory(home)
    configure_sink(d, clickhouse.url, db, level="text")
    d.start()
    s = wait_synced(d)
    assert s["schema_version"] == 2 and s["last_error"] is None and s["lag_seconds"] == 0
    assert_complete(clickhouse, db, d)
    raw, final = counts(clickhouse, db, "events")
    assert raw == final  # nothing was sent twice
    # The status command shows it.
    out = d.cli("sink", "status").stdout
    assert "connected:  yes" in out and "lag:        0 events" in out
    assert f"sink:      live -> {clickhouse.url} ({db}), lag 0 events" in d.cli("status").stdout
    # Restarted: nothing is sent again (the position was saved).
    d.stop()
    d.start()
    wait_synced(d)
    assert counts(clickhouse, db, "events") == (raw, final)


def test_server_down_for_part_of_the_backfill_then_up(
    tmp_path: Path, daemon_factory: DaemonFactory, clickhouse: ClickHouseServer, db: str
) -> None:
    home = tmp_path / "home"
    replicate(corpus_home(), home, 3)
    proxy = Proxy(clickhouse.http_port).up()
    try:
        d = daemon_factory(home)
        configure_sink(d, proxy.url, db, batch_rows=200)
        d.start()
        # Some batches arrive, then the line is cut in the middle of the backfill.
        wait_for(lambda: int(clickhouse.scalar(f"SELECT count() FROM {db}.events")) > 0
                 if clickhouse.scalar(f"EXISTS TABLE {db}.events") == "1" else None, timeout=60,
                 interval=0.02)
        proxy.down()
        # Something new to send, in case the backfill's pushes were already all done.
        f = claude_session(home)
        f.write_bytes(claude_line("during-outage", text="sent once the server is back"))
        down = wait_for(lambda: (s := sink_status(d))["last_error"] and not s["connected"] and s,
                        timeout=30)
        assert down["state"] == "down" and down["lag_events"] > 0
        d.wait_live()  # ingest goes on: the local store is the buffer
        stalled = sink_status(d)
        assert stalled["lag_events"] > 0 and stalled["lag_seconds"] > 0
        assert d.cli("sink", "status").stdout.count("last error:") == 1
        doctor = d.cli("doctor", check=False).stdout
        assert "[FAIL] sink: not connected to" in doctor
        proxy.up()
        wait_synced(d)
    finally:
        proxy.close()
    assert_complete(clickhouse, db, d)
    raw, final = counts(clickhouse, db, "events")
    # A batch cut mid-request may have been written once more: FINAL shows it once.
    assert final == int(clickhouse.scalar(f"SELECT uniqExact(host, user, key) FROM {db}.events"))
    assert raw >= final


def test_kill_9_in_the_middle_of_a_push_loses_and_doubles_nothing(
    tmp_path: Path, daemon_factory: DaemonFactory, clickhouse: ClickHouseServer, db: str
) -> None:
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    proxy = Proxy(clickhouse.http_port).up()
    try:
        d = daemon_factory(home)
        configure_sink(d, proxy.url, db, batch_rows=1000, timeout=120)
        out = d.cli("sink", "init").stdout
        assert f"database {db}: schema migrated from 0 to version 2" in out
        assert "already at version 2" in d.cli("sink", "init").stdout  # idempotent
        # The server's answers to INSERTs are dropped: the first batch is written on the
        # server, and the daemon never hears so. It is killed while it waits.
        proxy.swallow_inserts.set()
        d.start()
        wait_for(lambda: int(clickhouse.scalar(f"SELECT count() FROM {db}.events")) > 0,
                 timeout=60, interval=0.02)
        stuck = sink_status(d)
        assert stuck["hwm"] == 0 and stuck["lag_events"] > 0
        on_server = int(clickhouse.scalar(f"SELECT count() FROM {db}.events"))
        d.stop(signal.SIGKILL)
        proxy.swallow_inserts.clear()
        d.start()
        after = wait_synced(d)
    finally:
        proxy.close()
    assert_complete(clickhouse, db, d)
    raw, final = counts(clickhouse, db, "events")
    # The restarted daemon sent everything from its saved position (0): the batch the
    # server already had went again; merges may already have collapsed the copies.
    assert on_server > 0 and after["sent"]["events"] == final and raw >= final
    # Counted as docs/team.md counts: once (FINAL, or argMax per key).
    once = clickhouse.scalar(
        f"SELECT count() FROM (SELECT host, user, key, argMax(kind, version) FROM {db}.events"
        " GROUP BY host, user, key)")
    assert int(once) == final


def test_two_daemons_into_one_database(
    tmp_path: Path, daemon_factory: DaemonFactory, clickhouse: ClickHouseServer, db: str
) -> None:
    daemons = []
    for label in ("alpha", "beta"):
        home = tmp_path / label
        copy_tree(corpus_home(), home)
        d = daemon_factory(home)
        configure_sink(d, clickhouse.url, db, host_label=label, user_label=f"dev-{label}")
        daemons.append((label, d.start()))
    for label, d in daemons:
        wait_synced(d)
        assert_complete(clickhouse, db, d, host=label)
    per_host = {
        r["host"]: (r["user"], int(r["n"]))
        for r in clickhouse.rows(f"SELECT host, user, count() AS n FROM {db}.events FINAL"
                                 " GROUP BY host, user")
    }
    n = sum(local_per_session(daemons[0][1])[s][0] for s in local_per_session(daemons[0][1]))
    assert per_host == {"alpha": ("dev-alpha", n), "beta": ("dev-beta", n)}
    sessions = clickhouse.rows(f"SELECT host, count() AS n FROM {db}.sessions FINAL GROUP BY host")
    assert {r["host"]: int(r["n"]) for r in sessions}["alpha"] == {
        r["host"]: int(r["n"]) for r in sessions}["beta"] > 0


def dump(ch: ClickHouseServer, db: str) -> bytes:
    """Every row of every table, as the server returns them."""
    return b"".join(
        ch.query(f"SELECT * FROM {db}.{t} FORMAT JSONEachRow").encode()
        for t in ("events", "findings", "sessions")
    )


@pytest.mark.parametrize("level", ["metadata", "text"])
def test_what_each_level_sends_and_no_secret_value_at_any(
    tmp_path: Path, daemon_factory: DaemonFactory, clickhouse: ClickHouseServer, db: str,
    level: str,
) -> None:
    home = tmp_path / "home"
    write_home(home)
    claude = home / ".claude" / "projects" / "-work-proj" / f"{SID}.jsonl"
    whole = claude.read_bytes()
    cut = whole.rindex(b"\n", 0, len(whole) - 1) + 1  # the message's second line, held back
    claude.write_bytes(whole[:cut])
    d = daemon_factory(home, MUSE_AGENTS_DIR=str(home / "agents"))
    configure_sink(d, clickhouse.url, db, level=level)
    d.start()
    wait_synced(d)
    # The message's second line: the stored message is replaced by a higher revision,
    # after its first version was pushed. The server ends with the whole message.
    with claude.open("ab") as fh:
        fh.write(whole[cut:])
    wait_for(lambda: local(d).execute(
        "SELECT revision FROM events WHERE kind = 'message' AND adapter = 'claude-code'"
    ).fetchone() == (1,), timeout=20)
    wait_synced(d)
    assert_complete(clickhouse, db, d)
    message = clickhouse.rows(
        f"SELECT text, text_chars, revision FROM {db}.events FINAL WHERE kind = 'message'"
        " AND agent = 'claude-code'")
    whole_text = ("Your bot token looks like [REDACTED:Discord Bot Token]; rotate it.\n\n"
                  "Then restart the bot.")
    assert [int(m["revision"]) for m in message] == [1]
    assert int(message[0]["text_chars"]) > len("Your bot token looks like ")
    findings = clickhouse.rows(f"SELECT secret_type, hash, path FROM {db}.findings FINAL")
    assert len(findings) >= 21 and all(len(f["hash"]) == 64 for f in findings)
    assert {"AWS Access Key", "GitHub Token", "Private Key"} <= {f["secret_type"] for f in findings}
    commands = clickhouse.rows(f"SELECT command FROM {db}.events FINAL WHERE kind = 'command'")
    assert "cat /work/proj/notes.txt" in {c["command"] for c in commands}
    blob = dump(clickhouse, db)
    for needle in needles():
        assert needle not in blob, "a planted value (or its encoding) reached the server"
    texts = clickhouse.rows(f"SELECT kind, text FROM {db}.events FINAL WHERE text != ''")
    titles = clickhouse.rows(f"SELECT title FROM {db}.sessions FINAL WHERE title != ''")
    if level == "metadata":
        assert texts == [] and titles == []
        for fragment in (b"deploy with key", b"rotate it", b"restart the bot", b"telegram token"):
            assert fragment not in blob
    else:
        assert message[0]["text"] == whole_text
        assert "deploy with key [REDACTED:AWS Access Key] please" in {t["text"] for t in texts}
        assert {t["kind"] for t in texts} >= {"prompt", "message"}


def test_a_reprice_reaches_the_server(
    tmp_path: Path, daemon_factory: DaemonFactory, clickhouse: ClickHouseServer, db: str
) -> None:
    """Prices changed on reload: the stored costs priced again reach the server, the
    events already sent sent again with their new cost, and their sessions' totals."""
    home = tmp_path / "home"
    copy_tree(corpus_home() / ".claude", home / ".claude")
    d = daemon_factory(home)
    configure_sink(d, clickhouse.url, db)
    d.start()
    wait_synced(d)
    e2e4 = "claude-code:e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06"

    def server_cost() -> tuple[Any, str]:
        (r,) = clickhouse.rows(f"SELECT cost_usd, cost_kind FROM {db}.sessions FINAL"
                               f" WHERE session_id = '{e2e4}'")
        return (None if r["cost_usd"] is None else round(float(r["cost_usd"]), 6), r["cost_kind"])

    assert server_cost() == (4.086012, "estimated")
    config = d.run_dir / "config" / "agentsrc" / "config.toml"
    config.write_text(config.read_text() + '[prices.models."claude-*"]\ninput = 0\noutput = 0\n')
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: d.call("status")["reprice"] is None and d.call("status")["prices"]
             ["fingerprint"] != "" and synced(d) and server_cost() == (0.0, "estimated"),
             timeout=60, interval=0.2)
    (usage,) = clickhouse.rows(f"SELECT sum(cost_usd) AS usd, count() AS n FROM {db}.events FINAL"
                               f" WHERE session_id = '{e2e4}' AND kind = 'usage'")
    assert (float(usage["usd"]), int(usage["n"])) == (0.0, 73)
    assert_costs(clickhouse, db, d)
