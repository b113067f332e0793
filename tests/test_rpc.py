"""The socket methods and the transport in one process: a real Server on a temporary
store, spoken to over its real socket. subscribe checks its params by the same rules as
events.list (one validation in rpc/methods.py), and every list pages the same way."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentsrc_daemon import events as E
from agentsrc_daemon.cli import app
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.rpc import methods
from agentsrc_daemon.rpc.transport import IDLE_READERS, INVALID_PARAMS, Hub, Server
from agentsrc_daemon.store import Batch, Reader, Store

from harness import wait_for

SESSION = "codex:s1"


def prompt(n: int) -> E.Event:
    return E.Event(
        key=f"p{n}",
        session_id=SESSION,
        kind=E.PROMPT,
        ts=f"2025-01-01T00:00:0{n}.000Z",
        adapter="codex",
        source_path="/x/a.jsonl",
        offset=n * 10,
        data={"text": f"prompt {n}"},
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    batch = Batch(
        events=[prompt(n) for n in range(3)],
        sessions=[E.SessionFacts(SESSION, "codex", "s1", cwd="/w")],
    )
    yield from serve(tmp_path, batch)


def serve(tmp_path: Path, batch: Batch) -> Iterator[Server]:
    db = tmp_path / "agentsrc.db"
    store = Store(db)
    batch.cursors["/x/a.jsonl"] = Cursor("/x/a.jsonl", "codex", "jsonl", offset=1000)
    store.commit(batch)
    store.close()
    # A short directory: AF_UNIX paths are limited to about 104 bytes.
    run_dir = Path(tempfile.mkdtemp(prefix="asrc-rpc-", dir="/tmp"))
    srv = Server(
        run_dir / "s" / "agentsrc.sock",
        db,
        methods.build_methods(lambda reader: {"state": "live"}),
        Hub(),
        methods.subscribe_backlog,
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


def request(srv: Server, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The first reply to one request, on a connection of its own (a subscription keeps
    its connection: it is closed here after the first message)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(str(srv.socket_path))
        line = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        conn.sendall(orjson.dumps(line) + b"\n")
        data = b""
        while b"\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    reply: dict[str, Any] = orjson.loads(data.split(b"\n", 1)[0])
    return reply


UNKNOWN_KIND = {
    "code": INVALID_PARAMS,
    "message": "unknown kind 'bogus'",
    "data": {"kinds": list(E.EVENT_KINDS)},
}
BAD_PARAMS = [
    ({"kinds": ["prompt", "bogus"]}, UNKNOWN_KIND),
    ({"kind": "bogus"}, UNKNOWN_KIND),
    (
        {"kinds": "prompt"},
        {"code": INVALID_PARAMS, "message": "kind must be a string or kinds a list of strings"},
    ),
    ({"since_id": "7"}, {"code": INVALID_PARAMS, "message": "since_id must be an integer"}),
    (
        {"since_id": -1},
        {"code": INVALID_PARAMS, "message": "since_id must be between 0 and 4611686018427387904"},
    ),
    (
        {"session_id": 5},
        {"code": INVALID_PARAMS, "message": "session_id must be a non-empty string"},
    ),
]


@pytest.mark.parametrize(("params", "error"), BAD_PARAMS)
def test_subscribe_refuses_what_events_list_refuses(
    server: Server, params: dict[str, Any], error: dict[str, Any]
) -> None:
    listed = request(server, "events.list", params)
    subscribed = request(server, "subscribe", params)
    assert listed == {"jsonrpc": "2.0", "id": 1, "error": error}
    assert subscribed == listed


def test_subscribe_takes_kind_like_events_list(server: Server) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(str(server.socket_path))
        params = {"kind": "prompt", "since_id": 1}
        line = {"jsonrpc": "2.0", "id": 1, "method": "subscribe", "params": params}
        conn.sendall(orjson.dumps(line) + b"\n")
        data = b""
        while data.count(b"\n") < 3:
            chunk = conn.recv(65536)
            assert chunk, data
            data += chunk
    first, *replayed = [orjson.loads(x) for x in data.splitlines()[:3]]
    assert first == {"jsonrpc": "2.0", "id": 1, "result": {"subscribed": True, "last_id": 3}}
    assert [(m["method"], m["params"]["id"], m["params"]["text"]) for m in replayed] == [
        ("event", 2, "prompt 1"),
        ("event", 3, "prompt 2"),
    ]


def test_subscribe_params_tell_no_replay_from_a_replay_from_the_start(server: Server) -> None:
    reader = Reader(server.db_path)
    try:
        checked = methods.subscribe_params(reader, {"kinds": ["prompt"], "session_id": SESSION})
        assert (checked.since_id, checked.kinds, checked.session_id) == (None, ["prompt"], SESSION)
        assert methods.subscribe_params(reader, {"since_id": 0}).since_id == 0
    finally:
        reader.close()


def test_lists_page_with_next_since_id(server: Server) -> None:
    first = request(server, "events.list", {"limit": 2})["result"]
    assert [e["id"] for e in first["events"]] == [1, 2]
    assert first["next_since_id"] == 2
    last = request(server, "events.list", {"limit": 2, "since_id": 2})["result"]
    assert [e["id"] for e in last["events"]] == [3]
    assert last["next_since_id"] is None
    # A full last page still says where to go on: the next page is empty.
    full = request(server, "events.list", {"limit": 3})["result"]
    assert full["next_since_id"] == 3
    assert request(server, "events.list", {"since_id": 3})["result"] == {
        "events": [],
        "next_since_id": None,
    }
    for method in ("files.reads", "files.edits", "commands.list"):
        assert request(server, method, {"limit": 2})["result"] == {
            "events": [],
            "next_since_id": None,
        }
    assert request(server, "findings.list", {"limit": 2})["result"] == {
        "findings": [],
        "next_since_id": None,
    }


def test_tail_with_an_unknown_kind_fails_like_events(server: Server, tmp_path: Path) -> None:
    """`agentsrc tail --kind bogus` used to wait forever for events of no kind."""
    runner = CliRunner()
    no_config = {"AGENTSRC_CONFIG": None, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    for command in ("events", "tail"):
        result = runner.invoke(
            app,
            ["--socket", str(server.socket_path), command, "--kind", "bogus"],
            env=no_config,
        )
        assert (result.exit_code, result.output) == (2, "agentsrc: unknown kind 'bogus'\n")


def event(n: int, kind: str, session: str, ts: str, **data: Any) -> E.Event:
    return E.Event(key=f"{kind}{n}", session_id=session, kind=kind, ts=ts, adapter=session.split(":")[0],
                   source_path="/x/a.jsonl", offset=n * 10, data=data)


@pytest.fixture
def busy_server(tmp_path: Path) -> Iterator[Server]:
    """Two sessions in two projects: five commands, and usage on two days and models."""
    commands = [
        event(n, E.COMMAND, SESSION, f"2025-01-01T00:00:0{n}.000Z", command=f"make {n}",
              exit_code=n % 2)
        for n in range(1, 6)
    ] + [  # committed last, happened first: newest first puts it last
        event(6, E.COMMAND, SESSION, "2024-12-31T00:00:00.000Z", command="make 0", exit_code=0)
    ]
    usage = [
        event(10, E.USAGE, SESSION, "2025-01-01T10:00:00.000Z", model="gpt-a",
              input_tokens=10, output_tokens=5, total_tokens=15),
        event(11, E.USAGE, SESSION, "2025-01-02T10:00:00.000Z", input_tokens=1,
              output_tokens=2, total_tokens=3),  # no model: the session's
        event(12, E.USAGE, "claude-code:c1", "2025-01-02T11:00:00.000Z", model="claude-b",
              input_tokens=100, output_tokens=50, cache_read_tokens=7, total_tokens=157),
    ]
    batch = Batch(
        events=commands + usage,
        sessions=[
            E.SessionFacts(SESSION, "codex", "s1", cwd="/w", model="gpt-s"),
            E.SessionFacts("claude-code:c1", "claude-code", "c1", cwd="/other"),
        ],
    )
    yield from serve(tmp_path, batch)


def test_event_lists_page_newest_first_with_before_id(busy_server: Server) -> None:
    first = request(busy_server, "commands.list", {"order": "desc", "limit": 2})["result"]
    assert [e["command"] for e in first["events"]] == ["make 5", "make 4"]
    assert set(first) == {"events", "next_before_id"}
    rest = request(busy_server, "commands.list", {"order": "desc", "limit": 5,
                                                  "before_id": first["next_before_id"]})
    assert [e["command"] for e in rest["result"]["events"]] == [
        "make 3", "make 2", "make 1", "make 0"]
    assert rest["result"]["next_before_id"] is None
    last = request(busy_server, "commands.list", {"order": "desc", "limit": 1,
                                                  "before_id": rest["result"]["events"][2]["id"]})
    assert [e["command"] for e in last["result"]["events"]] == ["make 0"]
    failed = request(busy_server, "commands.list", {"order": "desc", "failed": True})["result"]
    assert [e["command"] for e in failed["events"]] == ["make 5", "make 3", "make 1"]
    # Oldest first (the default) stops before before_id too.
    older = request(busy_server, "commands.list", {"before_id": 3})["result"]
    assert [e["command"] for e in older["events"]] == ["make 1", "make 2"]
    assert request(busy_server, "findings.list", {"order": "desc"})["result"] == {
        "findings": [], "next_before_id": None}
    assert request(busy_server, "files.reads", {"order": "up"})["error"]["message"] == (
        "order must be 'asc' or 'desc'"
    )


def test_usage_summary_by_model_project_day_and_agent(busy_server: Server) -> None:
    r = request(busy_server, "usage.summary", {})["result"]
    assert {k: r["totals"][k] for k in ("sessions", "responses", "total_tokens",
                                         "cache_read_tokens")} == {
        "sessions": 2, "responses": 3, "total_tokens": 175, "cache_read_tokens": 7}
    assert [(m["model"], m["total_tokens"], m["responses"]) for m in r["by_model"]] == [
        ("claude-b", 157, 1), ("gpt-a", 15, 1), ("gpt-s", 3, 1)]
    assert [(p["project"], p["total_tokens"]) for p in r["by_project"]] == [
        ("/other", 157), ("/w", 18)]
    assert [(d["day"], d["total_tokens"], d["sessions"]) for d in r["by_day"]] == [
        ("2025-01-02", 160, 2), ("2025-01-01", 15, 1)]
    assert [(a["agent"], a["total_tokens"]) for a in r["by_agent"]] == [
        ("claude-code", 157), ("codex", 18)]
    scoped = request(busy_server, "usage.summary", {
        "project": "/w", "since": "2025-01-01T12:00:00Z", "until": "2025-01-03"})["result"]
    assert scoped["totals"]["total_tokens"] == 3
    assert scoped["since"] == "2025-01-01T12:00:00.000Z"
    assert scoped["until"] == "2025-01-03T00:00:00.000Z"
    assert request(busy_server, "usage.summary", {"agent": "codex"})["result"]["totals"][
        "total_tokens"] == 18
    bad = request(busy_server, "usage.summary", {"until": "soon"})["error"]
    assert bad["message"] == "until must be a duration like 7d, 12h, 30m or an ISO timestamp"


def test_usage_command_prints_a_table_by_the_group_asked(busy_server: Server, tmp_path: Path) -> None:
    runner = CliRunner()
    no_config = {"XDG_CONFIG_HOME": str(tmp_path / "none"), "AGENTSRC_CONFIG": ""}
    base = ["--socket", str(busy_server.socket_path), "usage"]
    by_day = runner.invoke(app, [*base, "--by", "day"], env=no_config)
    assert by_day.exit_code == 0, by_day.output
    lines = [line.split() for line in by_day.output.splitlines()]
    assert lines[0][:3] == ["DAY", "SESSIONS", "RESPONSES"] and lines[0][-2:] == ["TOTAL", "COST"]
    # The columns: key, sessions, responses, five token counts, total, cost.
    assert [(row[0], row[8], " ".join(row[9:])) for row in lines[1:]] == [
        ("2025-01-02", "160", "unpriced"), ("2025-01-01", "15", "unpriced"),
        ("(total)", "175", "unpriced")]  # a store given no prices: nothing priced yet
    as_json = runner.invoke(app, [*base, "--agent", "codex", "--json"], env=no_config)
    assert orjson.loads(as_json.output)["totals"]["total_tokens"] == 18
    bad = runner.invoke(app, [*base, "--by", "year"], env=no_config)
    assert (bad.exit_code, bad.output) == (1, "agentsrc: --by must be day, week, month, session,"
                                              " project, model, agent or block\n")


# ---- the connections' Readers ---------------------------------------------------------


def test_a_finished_connection_s_reader_serves_the_next_and_sees_later_commits(
    server: Server,
) -> None:
    """A connection's Reader is kept for the next connection (opening one cost 0.8 ms of a
    status's 1.5 ms), and holds no snapshot: it reads what was committed meanwhile."""
    assert len(request(server, "events.list", {"session_id": SESSION})["result"]["events"]) == 3
    wait_for(lambda: len(server._idle_readers) == 1)
    (kept,) = server._idle_readers
    store = Store(server.db_path)
    store.commit(Batch(events=[prompt(4)],
                       cursors={"/x/a.jsonl": Cursor("/x/a.jsonl", "codex", "jsonl", offset=2000)}))
    store.close()
    assert len(request(server, "events.list", {"session_id": SESSION})["result"]["events"]) == 4
    wait_for(lambda: len(server._idle_readers) == 1)
    assert server._idle_readers == [kept]


def test_at_most_a_few_readers_wait_and_none_in_a_read(server: Server) -> None:
    """Connections at once each have a Reader; once they end, IDLE_READERS of them wait
    for the next connections and the others are closed. A Reader in the middle of a
    statement (a read transaction open: it would hold the WAL's checkpoints back) is not
    kept, and one whose statements are done is."""
    conns = []
    for _ in range(IDLE_READERS + 2):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(10)
        conn.connect(str(server.socket_path))
        conn.sendall(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "sessions.list"}) + b"\n")
        assert b'"result"' in conn.recv(65536)
        conns.append(conn)
    assert server._idle_readers == []  # each connection still holds its own
    for conn in conns:
        conn.close()
    wait_for(lambda: len(server._idle_readers) == IDLE_READERS)
    assert len({id(r) for r in server._idle_readers}) == IDLE_READERS
    reader = Reader(server.db_path)
    rows = reader.conn.execute("SELECT id FROM events")
    next(rows)
    assert not reader.ready_for_reuse()
    rows.close()
    assert reader.ready_for_reuse()
    reader.close()
