"""End to end: the real daemon as a subprocess on a temporary home, real files
appended, real SQLite, the real socket."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from corpus import copy_read_corpus, corpus_home, project_files, source_files
from harness import (
    SID,
    DaemonFactory,
    all_events,
    claude_line,
    claude_session,
    signature,
    wait_for,
)
from replicate import replicate

pytestmark = pytest.mark.slow

# ---- the corpus ---------------------------------------------------------------------------


def _agent_of(path: str, home: Path) -> str:
    for agent, root in (
        ("codex", ".codex"),
        ("claude-code", ".claude/projects"),
        ("gemini", ".gemini"),
        ("copilot", ".copilot"),
        ("opencode", ".local/share/opencode"),
        ("muse", "agents"),
        ("qwen", ".qwen"),
        ("amp", ".local/share/amp"),
        ("pi", ".pi/agent"),
        ("cursor", ".cursor"),
        ("cline", ".cline"),
        ("continue", ".continue"),
    ):
        if path.startswith(f"{home}/{root}/"):
            return agent
    for agent, ext in (("cline", "saoudrizwan.claude-dev"), ("roo-code", "rooveterinaryinc.roo-cline"),
                       ("kilo-code", "kilocode.kilo-code")):
        if f"/globalStorage/{ext}/tasks/" in path:
            return agent
    if path.startswith(f"{home}/code/"):  # the projects' files (--projects-root)
        return "aider" if path.endswith(".aider.chat.history.md") else "crush"
    return "?"


def test_every_corpus_file_is_ingested(tmp_path: Path, daemon_factory: DaemonFactory) -> None:
    # Every file today's adapters read (tests/corpus.py lists those they cannot yet).
    home = copy_read_corpus(tmp_path / "home")
    d = daemon_factory(home).start("--projects-root", str(home / "code"))
    d.wait_live()
    # Aider's history is read to its end once it has been quiet for a second.
    def read_to_the_end() -> list[dict[str, Any]] | None:
        got = d.call("sources.list")["sources"]
        return got if all(s["offset"] == s["size"] for s in got if s["mode"] == "text") else None

    srcs = wait_for(read_to_the_end)
    # Its records' commit can owe the search index a merge past the point where status
    # says indexing (ingest/committer.py, deferred_work) for a moment: live again after.
    st = d.wait_live()
    expected = source_files(home) | project_files(home)
    by_root: dict[str, list[str]] = {}
    for s in srcs:
        by_root.setdefault(_agent_of(s["path"], home), []).append(s["path"])
    # Each agent's sources under its own root, and nothing else (no credentials, no
    # -wal/-shm, no .project_root or workspace.yaml as sources of their own).
    assert {k: sorted(v) for k, v in by_root.items()} == {k: v for k, v in expected.items() if v}
    assert {k: len(v) for k, v in expected.items()} == {
        "codex": 15,
        "claude-code": 12,
        "gemini": 16,
        "copilot": 6,
        "opencode": 10,
        "qwen": 1,
        "amp": 1,
        "pi": 0,
        "cursor": 5,
        "cline": 1,
        "roo-code": 0,
        "kilo-code": 0,
        "continue": 1,
        "aider": 1,
        "crush": 2,
    }
    for s in srcs:
        if s["mode"] != "sqlite":
            assert s["offset"] == s["size"] == os.path.getsize(s["path"]), s["path"]
        assert s["gone_at"] is None
    assert st["files"] == sum(len(v) for v in expected.values())
    # Every session of the corpus, each under its own id.
    sessions = d.call("sessions.list", {"limit": 1000})["sessions"]
    by_agent = Counter(s["agent"] for s in sessions)
    # 15 Codex rollouts, plus 9cd28a74, known only through 613a9a68's replay of its
    # history, and 019f4efb, the parent thread of the two 0.144 sub-agents, known only
    # through their copies of its open turn (the first sub-agent's file to be read).
    assert by_agent["codex"] == 17
    replayed = [s for s in sessions if s["known_from_replay"]]
    assert sorted((s["native_id"][:8], s["known_from_replay"][-36:-28]) for s in replayed) == [
        ("019f4efb", "019f4efd"),
        ("9cd28a74", "613a9a68"),
    ]
    # 5 Claude main sessions, plus the Warmup stub's parent (68e984d7); the
    # summary-only file has no session of its own; plus 5078d34e (a background copy
    # whose original is not in the corpus) and a40d33bf, known through its sub-agent.
    assert by_agent["claude-code"] == 8
    # Cursor: four conversations (the fifth transcript is a sub-agent's).
    others = ("gemini", "copilot", "opencode", "qwen", "amp", "cursor", "cline", "continue")
    assert {a: by_agent[a] for a in (*others, "aider", "crush")} == {
        "gemini": 10,
        "copilot": 6,
        "opencode": 6,
        "qwen": 1,
        "amp": 1,
        "cursor": 4,
        "cline": 1,
        "continue": 1,
        "aider": 1,  # one run, with /model switches (tests/test_projects.py counts it)
        "crush": 4,
    }
    counts: Counter[str] = Counter()
    for sess in sessions:
        if sess["agent"] not in others:
            continue
        for kind in ("prompt", "tool_call"):
            got = d.call("events.list", {"session_id": sess["id"], "kind": kind, "limit": 10000})
            counts[f"{sess['agent']}/{kind}"] += len(got["events"])
    # Gemini's tool calls are all in the 0.39+ JSONL chat (docs/formats.md).
    assert dict(counts) == {
        "gemini/prompt": 95,
        "gemini/tool_call": 95,
        "copilot/prompt": 20,
        "copilot/tool_call": 193,
        "opencode/prompt": 18,
        "opencode/tool_call": 77,
        "qwen/prompt": 9,
        "qwen/tool_call": 115,
        "amp/prompt": 3,
        "amp/tool_call": 2,
        # tests/test_agents_a.py counts them exactly, file by file.
        "cursor/prompt": 34 + 1,  # and the sub-agent's brief
        "cursor/tool_call": 243,
        "cline/prompt": 15,
        "cline/tool_call": 15,
        "continue/prompt": 2,
        "continue/tool_call": 20,
    }
    assert st["events"] > 5_000
    assert st["pending_bytes"] == 0 and st["state"] == "live"


# ---- live tailing ---------------------------------------------------------------------------


def test_appended_line_arrives_on_subscribe(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    f.write_bytes(claude_line("u1", text="first"))
    d.start()
    d.wait_live()
    received: list[dict[str, Any]] = []
    ready = threading.Event()

    def listen() -> None:
        with d.client() as c:
            c.connect().settimeout(20)
            for msg in c.subscribe({}):
                if msg["method"] == "subscribed":
                    ready.set()
                    continue
                if msg["method"] == "event":
                    received.append(msg["params"])
                    if msg["params"]["kind"] == "prompt":
                        return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert ready.wait(10)
    with f.open("ab") as fh:
        fh.write(claude_line("u2", text="second"))
    t.join(15)
    prompts = [e for e in received if e["kind"] == "prompt"]
    assert len(prompts) == 1
    assert prompts[0]["source_path"] == str(f)
    assert prompts[0]["offset"] == len(claude_line("u1", text="first"))
    assert prompts[0]["session_id"] == f"claude-code:{SID}"


def test_subscribe_since_id_replays_without_gap(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    f.write_bytes(b"".join(claude_line(f"u{i}", text=f"p{i}") for i in range(5)))
    d.start()
    d.wait_live()
    evs = all_events(d)
    assert len(evs) >= 5
    start_id = evs[1]["id"]
    got: list[int] = []
    with d.client() as c:
        c.connect().settimeout(10)
        for msg in c.subscribe({"since_id": start_id}):
            if msg["method"] == "event":
                got.append(msg["params"]["id"])
                if len(got) == len(evs) - 2:
                    break
    assert got == [e["id"] for e in evs[2:]]


def test_partial_line_ingested_once_completed(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    full = claude_line("u1", text="whole")
    f.write_bytes(full[:20])
    d.start()
    d.wait_live()
    time.sleep(0.5)
    assert d.call("status")["events"] == 0
    with f.open("ab") as fh:
        fh.write(full[20:])
    wait_for(lambda: d.call("status")["events"] > 0, timeout=10)
    time.sleep(0.5)
    prompts = all_events(d, kinds=["prompt"])
    assert [(p["offset"], p["text"]) for p in prompts] == [(0, "whole")]


def test_truncated_and_replaced_files_are_reread_without_duplicates(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    lines = [claude_line("u1", text="one"), claude_line("a1", "assistant", "reply")]
    f.write_bytes(b"".join(lines))
    d.start()
    d.wait_live()
    before = signature(all_events(d))
    assert sum(before.values()) >= 3  # prompt, message, usage (+ turn start)
    # Replace by atomic rename with the same content plus one line.
    tmp = f.with_suffix(".tmp")
    tmp.write_bytes(b"".join(lines) + claude_line("u2", text="two"))
    os.replace(tmp, f)
    wait_for(lambda: len(all_events(d, kinds=["prompt"])) == 2, timeout=10)
    after_replace = signature(all_events(d))
    assert sum((after_replace - before).values()) == sum(
        1 for e in all_events(d) if e["offset"] == len(lines[0]) + len(lines[1])
    )
    assert all(n == 1 for n in after_replace.values())
    # Truncate in place and write the first line again: nothing new, nothing doubled.
    f.write_bytes(lines[0])
    time.sleep(1.0)
    wait_for(lambda: d.call("status")["pending_bytes"] == 0, timeout=10)
    assert signature(all_events(d)) == after_replace
    srcs = {s["path"]: s for s in d.call("sources.list")["sources"]}
    assert srcs[str(f)]["generation"] == 2


def test_root_created_after_start_is_picked_up(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    d.start()
    st = d.wait_live()
    assert st["roots"]["claude-code"]["watch"] == "missing"
    f = claude_session(d.home)
    f.write_bytes(claude_line("u1", text="late"))
    wait_for(lambda: d.call("status")["sessions"] == 1, timeout=15)
    # Watched at the next root check (daemon.ROOT_CHECK_INTERVAL_S, 10 s).
    wait_for(lambda: d.call("status")["roots"]["claude-code"]["watch"] == "inotify", timeout=15)
    assert [e["text"] for e in all_events(d, kinds=["prompt"])] == ["late"]


def test_deleted_source_keeps_events_and_shows_gone(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    f.write_bytes(claude_line("u1", text="kept"))
    d.start()
    d.wait_live()
    n = d.call("status")["events"]
    f.unlink()
    wait_for(
        lambda: d.call("sessions.get", {"id": SID})["session"]["source_state"] == "gone", timeout=15
    )
    assert d.call("status")["events"] == n
    s = d.call("sessions.get", {"id": SID})["session"]
    assert s["sources"][0]["gone"] is True and s["prompts"] == 1


def test_bad_lines_and_huge_line_are_counted_not_fatal(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory(AGENTSRC_MAX_LINE_BYTES="65536")
    f = claude_session(d.home)
    f.write_bytes(
        claude_line("u1", text="a")
        + b"{broken\n"
        + b"[1]\n"
        + b"\xff\xfe\n"
        + claude_line("u2", text="x" * 200_000)
        + claude_line("u3", text="b")
    )
    d.start()
    st = d.wait_live()
    assert st["skipped"] == {"malformed_json": 1, "non_object": 1, "invalid_utf8": 1, "oversize": 1}
    assert [e["text"] for e in all_events(d, kinds=["prompt"])] == ["a", "b"]


# ---- crash safety ---------------------------------------------------------------------------


def _replicated_home(tmp_path: Path, copies: int) -> Path:
    home = tmp_path / f"rep{copies}"
    if not home.exists():
        replicate(corpus_home(), home, copies)
    return home


@pytest.mark.parametrize("worker", ["no-worker", "worker"])
def test_kill9_mid_backfill_then_restart_gives_exact_events(
    tmp_path: Path, daemon_factory: DaemonFactory, worker: str
) -> None:
    home = _replicated_home(tmp_path, 3)
    # The reference run is single-process; the killed run uses a backfill worker when
    # asked to (forced on for this small backlog), so both paths are checked against it.
    ref = daemon_factory(home, AGENTSRC_WORKERS="0").start()
    ref.wait_live(timeout=300)
    expected = signature(all_events(ref))
    ref_sessions = {s["id"]: s for s in ref.call("sessions.list", {"limit": 1000})["sessions"]}
    ref.stop()

    env = (
        {"AGENTSRC_WORKERS": "1", "AGENTSRC_WORKER_MIN_BACKLOG": "1"}
        if worker == "worker"
        else {"AGENTSRC_WORKERS": "0"}
    )
    d = daemon_factory(home, **env)
    d.start()
    wait_for(lambda: d.call("status")["events"] > 2000, timeout=120, interval=0.01)
    assert d.call("status")["state"] == "catching_up"
    children = d.children()
    assert len(children) == (1 if worker == "worker" else 0)  # the worker, nothing beside it
    d.stop(signal.SIGKILL)
    # Workers do not outlive a daemon killed with SIGKILL.
    wait_for(lambda: not any(Path(f"/proc/{c}").exists() for c in children), timeout=10)
    d.start()
    d.wait_live(timeout=300)
    got = signature(all_events(d))
    assert got == expected
    sessions = {s["id"]: s for s in d.call("sessions.list", {"limit": 1000})["sessions"]}
    assert sessions.keys() == ref_sessions.keys()
    for sid, s in sessions.items():
        r = ref_sessions[sid]
        assert (s["prompts"], s["tool_calls"], s["messages"], s["tokens"]) == (
            r["prompts"], r["tool_calls"], r["messages"], r["tokens"]
        ), sid


# ---- the socket ---------------------------------------------------------------------------


def _raw(sock_path: Path, payload: bytes) -> list[dict[str, Any]]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(sock_path))
    s.sendall(payload)
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def test_bad_requests_get_errors_and_the_daemon_keeps_serving(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    d.start()
    d.wait_live()
    replies = _raw(
        d.socket_path,
        b"{not json\n"
        + b'{"jsonrpc":"2.0","id":1,"method":"nope"}\n'
        + b'{"jsonrpc":"2.0","id":2,"method":"events.list","params":{"limit":"x"}}\n'
        + b'{"jsonrpc":"2.0","id":3,"method":"sessions.get","params":{"id":"missing"}}\n'
        + b'{"jsonrpc":"2.0","id":4,"method":"events.list","params":{"kind":"bogus"}}\n'
        + b'{"id":5,"method":"status"}\n'
        + b'{"jsonrpc":"2.0","id":6,"method":"status","params":[1]}\n'
        + b'{"jsonrpc":"2.0","id":7,"method":"status"}\n',
    )
    assert [(r.get("id"), r.get("error", {}).get("code")) for r in replies] == [
        (None, -32700),
        (1, -32601),
        (2, -32602),
        (3, -32602),
        (4, -32602),
        (5, -32600),
        (6, -32602),
        (7, None),
    ]
    assert replies[-1]["result"]["state"] == "live"
    big = b'{"jsonrpc":"2.0","id":8,"method":"status","params":{"x":"' + b"a" * (1 << 20) + b'"}}\n'
    replies = _raw(d.socket_path, big + b'{"jsonrpc":"2.0","id":9,"method":"status"}\n')
    assert replies[0]["error"]["code"] == -32600 and "1 MiB" in replies[0]["error"]["message"]
    assert replies[-1]["id"] == 9 and replies[-1]["result"]["state"] == "live"


def test_socket_and_database_are_private(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    d.start()
    d.wait_live()
    assert os.stat(d.socket_path).st_mode & 0o777 == 0o600
    assert os.stat(d.socket_path.parent).st_mode & 0o777 == 0o700
    assert os.stat(d.data_dir).st_mode & 0o777 == 0o700
    assert os.stat(d.data_dir / "agentsrc.db").st_mode & 0o777 == 0o600


def test_second_daemon_refuses_and_stale_socket_is_replaced(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    d.start()
    d.wait_live()
    second = d.cli("run", check=False)
    assert second.returncode == 1
    assert "another agentsrc daemon" in second.stderr and str(d.data_dir) in second.stderr
    d.stop(signal.SIGKILL)  # leaves a stale socket behind
    assert d.socket_path.exists()
    d.start()
    assert d.wait_live()["state"] == "live"


def test_cli_json_contract(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    f.write_bytes(claude_line("u1", text="hello") + claude_line("a1", "assistant", "hi"))
    d.start()
    d.wait_live()
    st = orjson.loads(d.cli("status", "--json").stdout)
    assert {"state", "files", "sessions", "events", "pending_bytes"} <= st.keys()
    sessions = orjson.loads(d.cli("sessions", "--json").stdout)
    assert len(sessions) == 1
    assert {
        "id", "agent", "native_id", "cwd", "model", "started_at", "last_event_at", "prompts",
        "tool_calls", "subagents", "source_state",
    } <= sessions[0].keys()
    assert (sessions[0]["agent"], sessions[0]["native_id"], sessions[0]["cwd"]) == (
        "claude-code", SID, "/work/proj"
    )
    evs = orjson.loads(d.cli("events", "--session", SID, "--json").stdout)
    assert {"id", "session_id", "kind", "ts", "tool", "call_id", "source_path", "offset"} <= evs[0].keys()
    shown = orjson.loads(d.cli("show", SID[:8], "--json").stdout)
    assert shown["id"] == f"claude-code:{SID}" and shown["prompts"] == 1
    tailed = d.cli("tail", "--since-id", "0", "--count", "2", "--json").stdout.splitlines()
    assert [orjson.loads(x)["id"] for x in tailed] == [evs[0]["id"], evs[1]["id"]]


def test_cli_says_when_daemon_is_not_running(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    r = d.cli("status", check=False)
    assert r.returncode == 3
    assert "not running" in r.stderr


def test_memory_files_are_tracked_as_documents_without_content(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    codex = d.home / ".codex"
    (codex / "memories").mkdir(parents=True)
    (codex / "AGENTS.md").write_text("be terse\n")
    (codex / "memories" / "notes.md").write_text("remember the build flag\n")
    mem = d.home / ".claude" / "projects" / "-work-proj" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("the user prefers pytest\n")
    d.start()
    d.wait_live()
    docs = {x["path"]: x for x in d.call("documents.list")["documents"]}
    assert sorted(docs) == sorted(
        str(p) for p in (codex / "AGENTS.md", codex / "memories" / "notes.md", mem / "MEMORY.md")
    )
    import hashlib

    claude_doc = docs[str(mem / "MEMORY.md")]
    assert (claude_doc["agent"], claude_doc["project"], claude_doc["size"]) == (
        "claude-code", "-work-proj", len("the user prefers pytest\n")
    )
    assert claude_doc["sha256"] == hashlib.sha256(b"the user prefers pytest\n").hexdigest()
    # A change is picked up; the content itself is never stored.
    (codex / "AGENTS.md").write_text("be terse and careful\n")
    wait_for(
        lambda: {x["path"]: x for x in d.call("documents.list")["documents"]}[
            str(codex / "AGENTS.md")
        ]["size"] == len("be terse and careful\n"),
        timeout=10,
    )
    db = (d.data_dir / "agentsrc.db").read_bytes() + (d.data_dir / "agentsrc.db-wal").read_bytes()
    assert b"prefers pytest" not in db and b"careful" not in db


def test_slow_subscriber_is_dropped_with_a_notice_and_ingest_goes_on(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    f.write_bytes(claude_line("u0", text="start"))
    d.start()
    d.wait_live()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(str(d.socket_path))
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{}}\n')
    # A subscriber that never reads while 30,000 events arrive.
    n = 30_000
    with f.open("ab") as fh:
        fh.write(b"".join(claude_line(f"p{i}", text=f"prompt {i}") for i in range(n)))
    wait_for(lambda: len(all_events(d, kinds=["prompt"])) == n + 1, timeout=60)
    st = d.call("status")  # ingest was never stalled, and the daemon still answers
    assert st["state"] == "live"
    s.settimeout(10)
    buf = b""
    while b'"method":"dropped"' not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    s.close()
    dropped = [
        orjson.loads(line) for line in buf.splitlines() if b'"method":"dropped"' in line
    ]
    assert dropped and dropped[0]["params"]["last_id"] > 0
    received = buf.count(b'"method":"event"')
    assert received < n  # it really fell behind


def test_big_line_deferred_by_the_backfill_worker_is_read_at_the_end(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory(AGENTSRC_WORKERS="1", AGENTSRC_WORKER_MIN_BACKLOG="1")
    f = claude_session(d.home)
    big_text = "y" * (6 << 20)  # over the 4 MiB big-line mark, under the 64 MiB cap
    f.write_bytes(
        claude_line("u1", text="small first")
        + claude_line("u2", text=big_text)
        + claude_line("u3", text="small last")
    )
    for i in range(5):  # other files for the worker
        other = f.parent / f"{i:08d}-0000-4000-8000-000000000000.jsonl"
        other.write_bytes(b"".join(claude_line(f"o{i}-{n}", text=f"p{n}") for n in range(50)))
    d.start()
    d.wait_live()
    prompts = [e for e in all_events(d, kinds=["prompt"]) if e["source_path"] == str(f)]
    assert [(p["offset"], p.get("text_chars"), p.get("text_truncated")) for p in prompts] == [
        (0, None, None),
        (len(claude_line("u1", text="small first")), len(big_text), True),
        (len(claude_line("u1", text="small first")) + len(claude_line("u2", text=big_text)), None, None),
    ]
    assert len(prompts[1]["text"]) == 256 * 1024
    assert '"backfill_workers"' in d.log()
