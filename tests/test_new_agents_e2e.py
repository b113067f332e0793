"""Gemini CLI, Copilot CLI and OpenCode end to end, through a real daemon: exactly-once
across kill -9 for each source mode (Gemini .json documents, Copilot JSONL, an OpenCode
database), and live appends, rewrites and database inserts arriving on subscribe.

The transcripts are synthetic (written here, in the shapes docs/formats.md describes);
the corpus is covered by test_daemon.test_every_corpus_file_is_ingested."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from harness import (
    DaemonFactory,
    all_events,
    killed_mid_backfill_ends_as,
    signature,
    subscribe_until_prompts,
    wait_for,
)
from opencode_fixture import SCHEMA_SQL

T0 = 1768471200000  # 2026-01-15T10:00:00Z


def _iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# ---- writers --------------------------------------------------------------------------------


def gemini_doc(session: str, messages: int) -> bytes:
    root = "/home/dev/demo"
    msgs: list[dict[str, Any]] = []
    for i in range(messages):
        ts = _iso(T0 + i * 1000)
        if i % 2 == 0:
            msgs.append({"id": f"{session}-m{i}", "timestamp": ts, "type": "user", "content": f"question {i}"})
        else:
            msgs.append(
                {
                    "id": f"{session}-m{i}",
                    "timestamp": ts,
                    "type": "gemini",
                    "content": f"answer {i}",
                    "model": "gemini-2.5-pro",
                    "tokens": {"input": 10, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 15},
                }
            )
    return orjson.dumps(
        {
            "sessionId": session,
            "projectHash": hashlib.sha256(root.encode()).hexdigest(),
            "startTime": _iso(T0),
            "lastUpdated": _iso(T0 + messages * 1000),
            "messages": msgs,
        }
    )


def gemini_path(home: Path, n: int) -> Path:
    d = home / ".gemini" / "tmp" / "demo-app" / "chats"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"session-2026-01-15T10-00-{n:08x}.json"


def copilot_line(kind: str, n: int, data: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": kind, "data": data, "id": f"ev-{n}", "timestamp": _iso(T0 + n * 10)}) + b"\n"


def copilot_session(home: Path, sid: str, turns: int) -> Path:
    d = home / ".copilot" / "session-state" / sid
    d.mkdir(parents=True, exist_ok=True)
    lines = [
        copilot_line(
            "session.start",
            0,
            {"sessionId": sid, "copilotVersion": "1.0.60", "context": {"cwd": "/home/dev/demo"}},
        )
    ]
    for t in range(turns):
        n = 1 + t * 3
        lines.append(copilot_line("user.message", n, {"content": f"do thing {t}"}))
        call = f"call-{sid[:4]}-{t}"
        lines.append(
            copilot_line(
                "assistant.message",
                n + 1,
                {
                    "messageId": f"m-{t}",
                    "content": f"doing {t}",
                    "toolRequests": [{"toolCallId": call, "name": "bash", "arguments": {"command": "ls"}}],
                    "outputTokens": 3,
                },
            )
        )
        lines.append(
            copilot_line(
                "tool.execution_complete",
                n + 2,
                {"toolCallId": call, "success": True, "result": {"content": "a\n<exited with exit code 0>"}},
            )
        )
    (d / "events.jsonl").write_bytes(b"".join(lines))
    return d / "events.jsonl"


def opencode_db(home: Path, sessions: int, turns: int) -> Path:
    root = home / ".local" / "share" / "opencode"
    root.mkdir(parents=True, exist_ok=True)
    path = root / "opencode.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(SCHEMA_SQL.read_text())
    with conn:
        conn.execute(
            "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes)"
            " VALUES ('p1', '/home/dev/demo', ?, ?, '[]')",
            (T0, T0),
        )
        for s in range(sessions):
            sid = f"ses_e2e{s:04d}"
            conn.execute(
                "INSERT INTO session (id, project_id, slug, directory, title, version,"
                " time_created, time_updated) VALUES (?, 'p1', 's', '/home/dev/demo', ?, '1.2.25', ?, ?)",
                (sid, f"session {s}", T0, T0),
            )
            for t in range(turns):
                add_opencode_turn(conn, sid, t, T0 + t * 100)
    conn.close()
    return path


def add_opencode_turn(conn: apsw.Connection, sid: str, t: int, ms: int) -> None:
    user, asst = f"msg_{sid}u{t}", f"msg_{sid}a{t}"
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
        (user, sid, ms, ms, orjson.dumps({"role": "user", "time": {"created": ms}}).decode()),
    )
    conn.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
        (f"prt_{sid}u{t}", user, sid, ms, ms, orjson.dumps({"type": "text", "text": f"prompt {t}"}).decode()),
    )
    data = {
        "role": "assistant",
        "time": {"created": ms + 1, "completed": ms + 50},
        "parentID": user,
        "modelID": "m",
        "providerID": "p",
        "path": {"cwd": "/home/dev/demo", "root": "/home/dev/demo"},
        "finish": "stop",
    }
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
        (asst, sid, ms + 1, ms + 50, orjson.dumps(data).decode()),
    )
    tool = {
        "type": "tool",
        "tool": "bash",
        "callID": f"c{t}",
        "state": {
            "status": "completed",
            "input": {"command": "ls"},
            "output": "a",
            "metadata": {"exit": 0},
            "time": {"start": ms + 2, "end": ms + 3},
        },
    }
    conn.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
        (f"prt_{sid}a{t}", asst, sid, ms + 2, ms + 3, orjson.dumps(tool).decode()),
    )


# ---- kill -9 mid-backfill, per mode ---------------------------------------------------------


def _gemini_home(home: Path) -> None:
    for n in range(150):
        gemini_path(home, n).write_bytes(gemini_doc(f"g{n:05d}-0000-4000-8000-000000000000", 40))


def _copilot_home(home: Path) -> None:
    for n in range(150):
        copilot_session(home, f"{n:08x}-0000-4000-8000-000000000000", 20)


def _opencode_home(home: Path) -> None:
    opencode_db(home, 40, 40)


@pytest.mark.parametrize(
    "make, agent",
    [(_gemini_home, "gemini"), (_copilot_home, "copilot"), (_opencode_home, "opencode")],
)
def test_kill9_mid_backfill_gives_exact_events(
    tmp_path: Path, daemon_factory: DaemonFactory, make: Any, agent: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    make(home)
    ref = daemon_factory(home, AGENTSRC_WORKERS="0").start()
    ref.wait_live(timeout=300)
    expected = signature(all_events(ref))
    ref_sessions = {s["id"]: s for s in ref.call("sessions.list", {"limit": 1000})["sessions"]}
    assert ref_sessions and all(s["agent"] == agent for s in ref_sessions.values())
    ref.stop()

    d = daemon_factory(home, AGENTSRC_WORKERS="1", AGENTSRC_WORKER_MIN_BACKLOG="1")
    killed_mid_backfill_ends_as(d, expected)
    sessions = {s["id"]: s for s in d.call("sessions.list", {"limit": 1000})["sessions"]}
    assert sessions.keys() == ref_sessions.keys()
    for sid, s in sessions.items():
        r = ref_sessions[sid]
        assert (s["prompts"], s["tool_calls"], s["messages"]) == (
            r["prompts"], r["tool_calls"], r["messages"]
        ), sid


# ---- live ----------------------------------------------------------------------------------



def test_live_copilot_gemini_opencode_arrive_on_subscribe(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    home = d.home
    cop = copilot_session(home, "0000c0de-0000-4000-8000-000000000000", 1)
    gem = gemini_path(home, 1)
    gem.write_bytes(gemini_doc("g0000001-0000-4000-8000-000000000000", 2))
    db = opencode_db(home, 1, 1)
    d.start()
    d.wait_live()
    before = d.call("status")["events"]
    t, received = subscribe_until_prompts(d, 3)
    # Copilot: one appended line.
    with cop.open("ab") as fh:
        fh.write(copilot_line("user.message", 100, {"content": "live copilot"}))
    # Gemini: the document rewritten whole with two more messages.
    gem.write_bytes(gemini_doc("g0000001-0000-4000-8000-000000000000", 4))
    # OpenCode: a turn inserted by another connection, in WAL mode, while we read.
    writer = apsw.Connection(str(db))
    writer.setbusytimeout(5000)
    with writer:
        add_opencode_turn(writer, "ses_e2e0000", 1, T0 + 10_000)
    writer.close()
    t.join(20)
    prompts = sorted(
        (e["adapter"], e.get("text", e.get("data", {}).get("text")))
        for e in received
        if e["kind"] == "prompt"
    )
    assert prompts == [("copilot", "live copilot"), ("gemini", "question 2"), ("opencode", "prompt 1")]
    # Exactly the new events: nothing re-emitted from what was stored before.
    keys = [e["id"] for e in received]
    assert len(keys) == len(set(keys))
    wait_for(lambda: d.call("status")["events"] >= before + len(received), timeout=10)
