"""Cursor, Cline (Roo Code, Kilo Code) and Continue end to end, through a real daemon:
exactly-once across kill -9 in the middle of a backfill of each (the events and the
sessions' counters equal an uninterrupted run's), and live changes (an append to a
Cursor transcript whose last line has no newline, a text transcript and task and
session documents rewritten whole, a task folder under an editor root that did not exist
when the daemon started, a chat database renamed) arriving on subscribe.

The transcripts are made up here, in the shapes docs/formats.md describes; the corpus is
counted by tests/test_agents_a.py and tests/test_daemon.py."""

from __future__ import annotations

import json
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

pytestmark = pytest.mark.slow

T0 = 1770000000000
EDITOR_TASKS = ".config/Code/User/globalStorage/{ext}/tasks"


# ---- writers --------------------------------------------------------------------------------


def cursor_jsonl(home: Path, conv: str, turns: int, project: str = "home-dev-demo") -> Path:
    """A conversation in the newer layout: its last line without a newline, as Cursor
    leaves every one."""
    d = home / ".cursor" / "projects" / project / "agent-transcripts" / conv
    d.mkdir(parents=True, exist_ok=True)
    lines = []
    for t in range(turns):
        lines.append({"role": "user", "message": {"content": [
            {"type": "text", "text": f"<user_query>\nquestion {t}\n</user_query>"}]}})
        lines.append({"role": "assistant", "message": {"content": [
            {"type": "text", "text": f"answer {t}"},
            {"type": "tool_use", "name": "Shell", "input": {"command": f"make t{t}"}},
            {"type": "tool_use", "name": "Read", "input": {"path": f"/home/dev/demo/f{t}.py"}}]}})
    path = d / f"{conv}.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    return path


def cursor_text(home: Path, conv: str, turns: int) -> Path:
    d = home / ".cursor" / "projects" / "home-dev-demo" / "agent-transcripts"
    d.mkdir(parents=True, exist_ok=True)
    blocks = []
    for t in range(turns):
        blocks.append(f"user:\n<user_query>\nask {t}\n</user_query>\n")
        blocks.append(f"assistant:\n<think>thinking {t}</think>Looking.\n[Tool call] StrReplace\n"
                      f"  path: /home/dev/demo/a{t}.py\n  old_string: x\n  new_string: y\n\n"
                      "[Tool result] StrReplace\n")
    path = d / f"{conv}.txt"
    path.write_text("\n".join(blocks))
    return path


def cline_rows(turns: int, t0: int = T0) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    ts = t0
    for t in range(turns):
        say = "task" if t == 0 else "user_feedback"
        rows.append({"ts": ts, "type": "say", "say": say, "text": f"cline prompt {t}"})
        rows.append({"ts": ts + 1, "type": "say", "say": "api_req_started", "text": json.dumps(
            {"request": "r", "tokensIn": 10, "tokensOut": 5, "cacheReads": 100, "cacheWrites": 0,
             "cost": 0.001})})
        rows.append({"ts": ts + 2, "type": "say", "say": "tool", "text": json.dumps(
            {"tool": "readFile", "path": f"src/m{t}.py", "content": f"/home/dev/demo/src/m{t}.py"})})
        rows.append({"ts": ts + 3, "type": "ask", "ask": "command", "text": f"pytest tests/t{t}.py"})
        rows.append({"ts": ts + 4, "type": "say", "say": "api_req_started", "text": json.dumps(
            {"request": f"[execute_command for 'pytest tests/t{t}.py'] Result:\nCommand executed "
                        "successfully (exit code 0).", "tokensIn": 3, "tokensOut": 2,
             "cacheReads": 0, "cacheWrites": 0, "cost": 0.0005})})
        rows.append({"ts": ts + 5, "type": "say", "say": "completion_result", "text": f"done {t}"})
        ts += 1000
    return rows


def cline_task(home: Path, task: str, turns: int, ext: str = "saoudrizwan.claude-dev") -> Path:
    d = home / EDITOR_TASKS.format(ext=ext) / task
    d.mkdir(parents=True, exist_ok=True)
    path = d / "ui_messages.json"
    path.write_bytes(orjson.dumps(cline_rows(turns, int(task) if task.isdigit() else T0)))
    return path


def continue_doc(sid: str, turns: int) -> bytes:
    history = []
    for t in range(turns):
        history.append({"message": {"role": "user", "id": f"{sid}-u{t}",
                                    "content": [{"type": "text", "text": f"continue ask {t}"}]},
                        "contextItems": []})
        call = f"call-{sid[:6]}-{t}"
        history.append({
            "message": {"role": "assistant", "id": f"{sid}-a{t}", "content": f"reply {t}",
                        "toolCalls": [{"id": call, "type": "function", "function": {
                            "name": "run_terminal_command", "arguments": "{}"}}],
                        "usage": {"promptTokens": 50, "completionTokens": 5}},
            "contextItems": [],
            "toolCallStates": [{"toolCallId": call, "status": "done", "parsedArgs": {
                "command": f"ls d{t}"}, "output": [{"name": "Terminal", "content": "a",
                                                     "status": "Command completed"}]}]})
    return orjson.dumps({"sessionId": sid, "title": "New Session",
                         "workspaceDirectory": "file:///home/dev/demo", "history": history})


def continue_session(home: Path, sid: str, turns: int) -> Path:
    d = home / ".continue" / "sessions"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{sid}.json"
    path.write_bytes(continue_doc(sid, turns))
    return path


def chat_db(home: Path, agent_id: str, name: str) -> Path:
    path = home / ".cursor" / "chats" / ("c" * 32) / agent_id / "store.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, data BLOB)")
    meta = {"agentId": agent_id, "name": name, "mode": "agent", "createdAt": T0,
            "lastUsedModel": "gpt-5.2", "latestRootBlobId": "00"}
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('0', ?)", (orjson.dumps(meta).hex(),))
    conn.close()
    return path


# ---- kill -9 mid-backfill, per agent ---------------------------------------------------------


def _cursor_home(home: Path) -> None:
    for n in range(60):
        cursor_jsonl(home, f"{n:08x}-0000-4000-8000-00000000c0de", 15)
        cursor_text(home, f"{n:08x}-0000-4000-8000-0000000071e7", 15)
    for n in range(5):
        chat_db(home, f"{n:08x}-0000-4000-8000-00000000c0de", f"chat {n}")


def _cline_home(home: Path) -> None:
    for n in range(120):
        cline_task(home, str(T0 + n * 10_000_000), 12)
    for n in range(20):
        cline_task(home, f"{n:08x}-0000-7000-8000-0000000000e0", 6, "rooveterinaryinc.roo-cline")


def _continue_home(home: Path) -> None:
    for n in range(150):
        continue_session(home, f"{n:08x}-0000-4000-8000-00000000c0c0", 15)


@pytest.mark.parametrize(
    "make, agents",
    [(_cursor_home, {"cursor"}), (_cline_home, {"cline", "roo-code"}), (_continue_home, {"continue"})],
)
def test_kill9_mid_backfill_gives_exact_events(
    tmp_path: Path, daemon_factory: DaemonFactory, make: Any, agents: set[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    make(home)
    ref = daemon_factory(home, AGENTSRC_WORKERS="0").start()
    ref.wait_live(timeout=300)
    expected = signature(all_events(ref))
    ref_sessions = {s["id"]: s for s in ref.call("sessions.list", {"limit": 1000})["sessions"]}
    assert {s["agent"] for s in ref_sessions.values()} == agents
    ref.stop()

    d = daemon_factory(home, AGENTSRC_WORKERS="1", AGENTSRC_WORKER_MIN_BACKLOG="1")
    killed_mid_backfill_ends_as(d, expected)
    sessions = {s["id"]: s for s in d.call("sessions.list", {"limit": 1000})["sessions"]}
    assert sessions.keys() == ref_sessions.keys()
    for sid, s in sessions.items():
        r = ref_sessions[sid]
        keys = ("prompts", "tool_calls", "messages", "title", "model", "cwd", "started_at")
        assert {k: s[k] for k in keys} == {k: r[k] for k in keys}, sid
        assert s["tokens"] == r["tokens"], sid


# ---- live ----------------------------------------------------------------------------------



def test_live_changes_arrive_on_subscribe(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    home = d.home
    conv = "0000c0de-0000-4000-8000-000000000001"
    jsonl = cursor_jsonl(home, conv, 1)
    text = cursor_text(home, "0000c0de-0000-4000-8000-000000000002", 1)
    task = cline_task(home, str(T0), 1)
    cont = continue_session(home, "0000c0de-0000-4000-8000-000000000003", 1)
    db = chat_db(home, conv, "first name")
    d.start()
    d.wait_live()
    before = d.call("status")["events"]
    t, received = subscribe_until_prompts(d, 5, timeout=30)
    # Cursor JSONL: the next line, its newline written first (the last line again has none).
    with jsonl.open("ab") as fh:
        fh.write(b"\n" + orjson.dumps({"role": "user", "message": {"content": [
            {"type": "text", "text": "<user_query>\nlive cursor\n</user_query>"}]}}))
    # Cursor text: rewritten whole with one more exchange.
    text.write_text(text.read_text() + "\nuser:\n<user_query>\nlive text\n</user_query>\n")
    # Cline: the task document rewritten whole with a second turn.
    task.write_bytes(orjson.dumps(cline_rows(2)))
    # Continue: the session document rewritten whole with a second turn.
    cont.write_bytes(continue_doc("0000c0de-0000-4000-8000-000000000003", 2))
    # Roo Code: its tasks folder did not exist when the daemon started.
    cline_task(home, "0000feed-0000-7000-8000-000000000004", 1, "rooveterinaryinc.roo-cline")
    t.join(30)
    prompts = sorted((e["adapter"], e.get("text", e.get("data", {}).get("text")))
                     for e in received if e["kind"] == "prompt")
    assert prompts == [("cline", "cline prompt 1"), ("continue", "continue ask 1"),
                       ("cursor", "live cursor"), ("cursor", "live text"),
                       ("roo-code", "cline prompt 0")]
    keys = [e["id"] for e in received]
    assert len(keys) == len(set(keys))  # nothing re-emitted from what was stored before
    wait_for(lambda: d.call("status")["events"] >= before + len(received), timeout=10)
    # The chat database renamed: the session's title follows it.
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE meta SET value = ?", (orjson.dumps(
        {"agentId": conv, "name": "renamed chat", "createdAt": T0}).hex(),))
    conn.close()
    wait_for(lambda: d.call("sessions.get", {"id": f"cursor:{conv}"})["session"]["title"]
             == "renamed chat", timeout=20)
    session = d.call("sessions.get", {"id": f"cursor:{conv}"})["session"]
    assert session["source"] == {"times": "file", "project_folder": "home-dev-demo"}
    assert session["model"] == "gpt-5.2" and session["prompts"] == 2
    shown = d.cli("show", f"cursor:{conv}").stdout
    assert "times:         from the transcript file (cursor writes no times" in shown
    # The roots status lists: the editors' (the harness sets $XDG_CONFIG_HOME, so the
    # home's ~/.config/Code is the second "Code": "Code-2"), each with how it is watched.
    roo = str(home / EDITOR_TASKS.format(ext="rooveterinaryinc.roo-cline"))[: -len("/tasks")]

    def roo_root() -> tuple[str, str]:
        roots = d.call("status")["roots"]
        return {r["path"]: (name, r["watch"]) for name, r in roots.items()}[roo]

    # Watched once it appeared: at the next root check (daemon.ROOT_CHECK_INTERVAL_S).
    assert wait_for(lambda: roo_root() == ("roo-code@Code-2", "inotify"), timeout=15)
    roots = d.call("status")["roots"]
    assert roots["kilo-code@Code-2"]["watch"] == "missing"
    assert (roots["continue"]["path"], roots["continue"]["watch"]) == (
        str(home / ".continue"), "inotify")
