"""Cursor end to end, through a real daemon:
exactly-once across kill -9 in the middle of a backfill of each (the events and the
sessions' counters equal an uninterrupted run's), and live changes (an append to a
Cursor transcript whose last line has no newline, a text transcript rewritten whole, a
chat database renamed) arriving on subscribe.

The transcripts are made up here, in the shapes docs/formats.md describes; the corpus is
counted by tests/test_agents_a.py and tests/test_daemon.py."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from harness import DaemonFactory, DaemonProcess, all_events, signature, wait_for

pytestmark = pytest.mark.slow

T0 = 1770000000000


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


@pytest.mark.parametrize(
    "make, agents",
    [(_cursor_home, {"cursor"})],
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
    d.start()
    wait_for(lambda: d.call("status")["events"] > 200, timeout=120, interval=0.005)
    stored = d.call("status")["events"]
    d.stop(signal.SIGKILL)
    assert stored < sum(expected.values())  # killed mid-way through the backfill
    d.start()
    d.wait_live(timeout=300)
    assert signature(all_events(d)) == expected
    sessions = {s["id"]: s for s in d.call("sessions.list", {"limit": 1000})["sessions"]}
    assert sessions.keys() == ref_sessions.keys()
    for sid, s in sessions.items():
        r = ref_sessions[sid]
        keys = ("prompts", "tool_calls", "messages", "title", "model", "cwd", "started_at")
        assert {k: s[k] for k in keys} == {k: r[k] for k in keys}, sid
        assert s["tokens"] == r["tokens"], sid


# ---- live ----------------------------------------------------------------------------------


def _subscribe(d: DaemonProcess, until: int) -> tuple[threading.Thread, list[dict[str, Any]]]:
    received: list[dict[str, Any]] = []
    ready = threading.Event()

    def listen() -> None:
        with d.client() as c:
            c.connect().settimeout(30)
            for msg in c.subscribe({}):
                if msg["method"] == "subscribed":
                    ready.set()
                    continue
                if msg["method"] == "event":
                    received.append(msg["params"])
                    if sum(1 for e in received if e["kind"] == "prompt") >= until:
                        return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert ready.wait(10)
    return t, received


def test_live_changes_arrive_on_subscribe(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    home = d.home
    conv = "0000c0de-0000-4000-8000-000000000001"
    jsonl = cursor_jsonl(home, conv, 1)
    text = cursor_text(home, "0000c0de-0000-4000-8000-000000000002", 1)
    db = chat_db(home, conv, "first name")
    d.start()
    d.wait_live()
    before = d.call("status")["events"]
    t, received = _subscribe(d, until=2)
    # Cursor JSONL: the next line, its newline written first (the last line again has none).
    with jsonl.open("ab") as fh:
        fh.write(b"\n" + orjson.dumps({"role": "user", "message": {"content": [
            {"type": "text", "text": "<user_query>\nlive cursor\n</user_query>"}]}}))
    # Cursor text: rewritten whole with one more exchange.
    text.write_text(text.read_text() + "\nuser:\n<user_query>\nlive text\n</user_query>\n")
    t.join(30)
    prompts = sorted((e["adapter"], e.get("text", e.get("data", {}).get("text")))
                     for e in received if e["kind"] == "prompt")
    assert prompts == [("cursor", "live cursor"), ("cursor", "live text")]
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
