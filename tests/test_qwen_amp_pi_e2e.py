"""Qwen Code, Amp and Pi end to end, through a real daemon: exactly-once across kill -9
in the middle of a backfill (the tail-reader's JSONL for Qwen Code and Pi, the
document mode for Amp's threads), live appends and a thread's rewrite arriving on
subscribe, a root that appears after the start picked up, the --agent filter, and Amp's
and Pi's own costs shown as reported.

The transcripts are synthetic (written here, in the shapes docs/formats.md describes);
the corpus is covered by test_daemon.test_every_corpus_file_is_ingested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

T0 = 1768471200000  # 2026-01-15T10:00:00Z


def _iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


# ---- writers --------------------------------------------------------------------------------


def qwen_turn(sid: str, n: int, text: str | None = None) -> list[dict[str, Any]]:
    base = {"sessionId": sid, "cwd": "/home/dev/demo", "version": "0.9.1", "gitBranch": "main"}
    ts = _iso(T0 + n * 1000)
    call = f"call_{sid[:4]}_{n}"
    output = "Command: ls\nDirectory: (root)\nOutput: a\nError: (none)\nExit Code: 0\nSignal: (none)"
    return [
        dict(base, uuid=f"{sid}-u{n}", timestamp=ts, type="user",
             message={"role": "user", "parts": [{"text": text or f"question {n}"}]}),
        dict(base, uuid=f"{sid}-t{n}", timestamp=ts, type="system", subtype="ui_telemetry",
             systemPayload={"uiEvent": {"event.name": "qwen-code.api_response", "model": "qwen3-coder-plus",
                                        "input_token_count": 100, "output_token_count": 5,
                                        "cached_content_token_count": 50, "thoughts_token_count": 0,
                                        "tool_token_count": 0, "total_token_count": 105, "auth_type": "openai"}}),
        dict(base, uuid=f"{sid}-a{n}", timestamp=ts, type="assistant", model="qwen3-coder-plus",
             message={"role": "model", "parts": [{"text": f"answer {n}"},
                                                  {"functionCall": {"id": call, "name": "run_shell_command",
                                                                    "args": {"command": "ls"}}}]}),
        dict(base, uuid=f"{sid}-r{n}", timestamp=ts, type="tool_result",
             message={"role": "user", "parts": [{"functionResponse": {"id": call, "name": "run_shell_command",
                                                                       "response": {"output": output}}}]},
             toolCallResult={"callId": call, "status": "success"}),
    ]


def qwen_chat(home: Path, sid: str, turns: int) -> Path:
    path = home / ".qwen" / "projects" / "-home-dev-demo" / "chats" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_jsonl([line for n in range(turns) for line in qwen_turn(sid, n)]))
    return path


def amp_thread(sid: str, turns: int) -> bytes:
    messages: list[dict[str, Any]] = []
    ledger: list[dict[str, Any]] = []
    for n in range(turns):
        ask, answer, result, done = 4 * n, 4 * n + 1, 4 * n + 2, 4 * n + 3
        call = f"toolu_{sid[2:6]}_{n}"
        messages += [
            {"role": "user", "messageId": ask, "content": [{"type": "text", "text": f"question {n}"}],
             "meta": {"sentAt": T0 + n * 1000}},
            {"role": "assistant", "messageId": answer, "state": {"type": "complete", "stopReason": "tool_use"},
             "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {"cmd": "ls"}}],
             "usage": {"model": "claude-sonnet-4-5-20250929", "inputTokens": 10, "outputTokens": 5,
                       "cacheCreationInputTokens": 0, "cacheReadInputTokens": 100, "credits": 0.1}},
            {"role": "user", "messageId": result,
             "content": [{"type": "tool_result", "toolUseID": call, "run": {"status": "done",
                                                                             "result": {"output": "a", "exitCode": 0}}}]},
            {"role": "assistant", "messageId": done, "state": {"type": "complete", "stopReason": "end_turn"},
             "content": [{"type": "text", "text": f"answer {n}"}]},
        ]
        ledger.append({"id": f"{sid}-l{n}", "timestamp": _iso(T0 + n * 1000 + 500), "model": "claude-sonnet-4-5-20250929",
                       "credits": 0.1, "tokens": {"input": 10, "output": 5}, "operationType": "inference",
                       "fromMessageId": ask, "toMessageId": answer})
    return orjson.dumps({"v": turns, "id": sid, "created": T0, "messages": messages,
                         "env": {"initial": {"trees": [{"uri": "file:///home/dev/demo"}],
                                             "platform": {"client": "CLI", "clientVersion": "0.0.1"}}},
                         "usageLedger": {"events": ledger}})


def amp_path(home: Path, sid: str) -> Path:
    path = home / ".local" / "share" / "amp" / "threads" / f"{sid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def pi_turn(sid: str, n: int, text: str | None = None) -> list[dict[str, Any]]:
    ts = T0 + n * 1000
    call = f"toolu_{sid[:8]}_{n}"  # as unique as a model's tool call ids
    usage = {"input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 0, "totalTokens": 115,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.0001}}
    return [
        {"type": "message", "id": f"{n:06x}u", "parentId": None, "timestamp": _iso(ts),
         "message": {"role": "user", "content": text or f"question {n} ({sid[:8]})", "timestamp": ts}},
        {"type": "message", "id": f"{n:06x}a", "parentId": None, "timestamp": _iso(ts + 1),
         "message": {"role": "assistant", "content": [{"type": "toolCall", "id": call, "name": "bash",
                                                        "arguments": {"command": "ls"}}],
                     "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage,
                     "stopReason": "toolUse", "timestamp": ts + 1}},
        {"type": "message", "id": f"{n:06x}r", "parentId": None, "timestamp": _iso(ts + 2),
         "message": {"role": "toolResult", "toolCallId": call, "toolName": "bash",
                     "content": [{"type": "text", "text": "a"}], "isError": False, "timestamp": ts + 2}},
    ]


def pi_session(home: Path, sid: str, turns: int) -> Path:
    path = home / ".pi" / "agent" / "sessions" / "--home-dev-demo--" / f"2026-01-15T10-00-00-000Z_{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 3, "id": sid, "timestamp": _iso(T0), "cwd": "/home/dev/demo"}
    path.write_bytes(_jsonl([header] + [line for n in range(turns) for line in pi_turn(sid, n)]))
    return path


# ---- kill -9 mid-backfill, per agent --------------------------------------------------------


def _qwen_home(home: Path) -> None:
    for n in range(150):
        qwen_chat(home, f"{n:08x}-0000-4000-8000-000000000000", 20)


def _amp_home(home: Path) -> None:
    for n in range(150):
        sid = f"T-{n:08x}-0000-4000-8000-000000000000"
        amp_path(home, sid).write_bytes(amp_thread(sid, 20))


def _pi_home(home: Path) -> None:
    for n in range(150):
        pi_session(home, f"{n:08x}-0000-4000-8000-000000000000", 25)


@pytest.mark.parametrize("make, agent", [(_qwen_home, "qwen"), (_amp_home, "amp"), (_pi_home, "pi")])
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
    assert len(ref_sessions) == 150 and all(s["agent"] == agent for s in ref_sessions.values())
    ref.stop()

    d = daemon_factory(home, AGENTSRC_WORKERS="1", AGENTSRC_WORKER_MIN_BACKLOG="1")
    killed_mid_backfill_ends_as(d, expected)
    sessions = {s["id"]: s for s in d.call("sessions.list", {"limit": 1000})["sessions"]}
    assert sessions.keys() == ref_sessions.keys()
    for sid, s in sessions.items():
        r = ref_sessions[sid]
        assert (s["prompts"], s["tool_calls"], s["messages"]) == (r["prompts"], r["tool_calls"], r["messages"]), sid
    # Every turn's command with its exit code, once.
    commands: list[dict[str, Any]] = []
    page: dict[str, Any] = {"limit": 1000}
    while True:
        got = d.call("commands.list", page)
        commands += got["events"]
        if not got.get("next_since_id"):
            break
        page["since_id"] = got["next_since_id"]
    turns = {"qwen": 20, "amp": 20, "pi": 25}[agent]
    assert len(commands) == 150 * turns
    assert {c["exit_code"] for c in commands} == {0}


# ---- live ----------------------------------------------------------------------------------



def test_live_appends_a_rewrite_and_a_late_root_arrive_on_subscribe(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    home = d.home
    qwen = qwen_chat(home, "0000a0e0-0000-4000-8000-000000000000", 1)
    sid = "T-0000a0e0-0000-4000-8000-000000000000"
    amp = amp_path(home, sid)
    amp.write_bytes(amp_thread(sid, 1))
    # Pi's root does not exist yet: it is watched for, and read once it appears.
    d.start()
    d.wait_live()
    before = d.call("status")["events"]
    t, received = subscribe_until_prompts(d, 3)
    with qwen.open("ab") as fh:  # Qwen Code: one turn appended
        fh.write(_jsonl(qwen_turn("0000a0e0-0000-4000-8000-000000000000", 1, "live qwen")))
    amp.write_bytes(amp_thread(sid, 2))  # Amp: the thread rewritten whole, one turn more
    pi = pi_session(home, "0000a0e0-0000-4000-8000-000000000000", 0)  # Pi: its root appears
    with pi.open("ab") as fh:
        fh.write(_jsonl(pi_turn("0000a0e0", 0, "live pi")))
    t.join(30)
    prompts = sorted((e["adapter"], e.get("text", e.get("data", {}).get("text"))) for e in received
                     if e["kind"] == "prompt")
    assert prompts == [("amp", "question 1"), ("pi", "live pi"), ("qwen", "live qwen")]
    # Exactly the new events: nothing re-emitted from what was stored before.
    keys = [e["id"] for e in received]
    assert len(keys) == len(set(keys))
    wait_for(lambda: d.call("status")["events"] >= before + len(received), timeout=10)
    # status lists every root; --agent filters sessions by each.
    roots = d.call("status")["roots"]
    assert {"qwen", "amp", "pi"} <= set(roots)
    for agent in ("qwen", "amp", "pi"):
        listed = d.call("sessions.list", {"agent": agent, "limit": 10})["sessions"]
        assert [s["agent"] for s in listed] == [agent]
    # Amp's and Pi's own costs are shown as reported, ours beside them: Amp's two
    # requests 0.1 credits each (a cent a credit), Pi's one $0.0001; each of them 10
    # input, 5 output and 100 cache-read tokens of Claude Sonnet 4.5 at $3, $15 and
    # $0.30 a million = $0.000135 a request.
    by_agent = {r["agent"]: r["cost"] for r in d.call("usage.summary", {})["by_agent"]}
    assert by_agent["amp"] == {"usd": 0.002, "kind": "reported", "estimated_usd": 0.00027}
    assert by_agent["pi"] == {"usd": 0.0001, "kind": "reported", "estimated_usd": 0.000135}
    (pi_session_row,) = d.call("sessions.list", {"agent": "pi", "limit": 10})["sessions"]
    assert pi_session_row["cost"] == by_agent["pi"]
