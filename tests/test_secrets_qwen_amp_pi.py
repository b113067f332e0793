"""Secret scanning of what Qwen Code, Amp and Pi sent to a model: each adapter's records,
with the events derive makes of them, through the real scan stage and engine. A key
typed in a prompt is redacted there; a key in a file the model read is a finding on that
file's path and line; the text a model never saw (a Pi ``!!`` command's output) is not
scanned. The transcripts are synthetic, in the shapes docs/formats.md describes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentsrc_daemon import events as E
from agentsrc_daemon.adapters import ADAPTERS
from agentsrc_daemon.config import ScanConfig
from agentsrc_daemon.derive.derive import Deriver
from agentsrc_daemon.secrets.engine import SecretScanner
from agentsrc_daemon.secrets.stage import SecretStage

from fake_secrets import fragments

# Fake keys assembled at run time (tests/fake_secrets.py says why).
KEY_TYPED = fragments("AK", "IA", "Q7RZ3KX9", "PLM2VNBX")
KEY_READ = fragments("AK", "IA", "ZW4HT6QE", "N8YB3JDC")
KEY_UNSEEN = fragments("AK", "IA", "M5CV7RPL", "X2KD9TQS")
ENV = "/home/dev/demo/.env"
FILE = f"# settings\nREGION=eu\nAWS_ACCESS_KEY_ID={KEY_READ}\n"
TS = "2026-01-15T10:00:00.000Z"
SCANNER = SecretScanner(None, {}, b"k" * 32)


def qwen_lines() -> list[dict[str, Any]]:
    base = {"sessionId": "5ec0", "cwd": "/home/dev/demo", "version": "0.9.1", "timestamp": TS}
    return [
        dict(base, uuid="u1", type="user",
             message={"role": "user", "parts": [{"text": f"deploy with {KEY_TYPED}"}]}),
        dict(base, uuid="a1", type="assistant", model="qwen3-coder-plus",
             message={"role": "model", "parts": [{"functionCall": {
                 "id": "c1", "name": "read_file", "args": {"absolute_path": ENV}}}]}),
        dict(base, uuid="r1", type="tool_result",
             message={"role": "user", "parts": [{"functionResponse": {
                 "id": "c1", "name": "read_file", "response": {"output": FILE}}}]},
             toolCallResult={"callId": "c1", "status": "success"}),
    ]


def amp_thread() -> dict[str, Any]:
    return {
        "v": 3, "id": "T-5ec0", "created": 1768471200000,
        "env": {"initial": {"trees": [{"uri": "file:///home/dev/demo"}]}},
        "messages": [
            {"role": "user", "messageId": 0, "meta": {"sentAt": 1768471200000},
             "content": [{"type": "text", "text": f"deploy with {KEY_TYPED}"}]},
            {"role": "assistant", "messageId": 1, "state": {"type": "complete", "stopReason": "tool_use"},
             "content": [{"type": "tool_use", "id": "c1", "name": "Read", "input": {"path": ENV}}]},
            {"role": "user", "messageId": 2, "content": [
                {"type": "tool_result", "toolUseID": "c1", "run": {"status": "done", "result": FILE}}]},
        ],
    }


def pi_lines() -> list[dict[str, Any]]:
    def message(n: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "message", "id": f"e{n}", "parentId": None, "timestamp": TS, "message": body}

    return [
        {"type": "session", "version": 3, "id": "5ec0", "timestamp": TS, "cwd": "/home/dev/demo"},
        message(1, {"role": "user", "content": f"deploy with {KEY_TYPED}"}),
        message(2, {"role": "assistant", "model": "claude-sonnet-4-5", "stopReason": "toolUse",
                    "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": ENV}}]}),
        message(3, {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                    "content": [{"type": "text", "text": FILE}], "isError": False}),
        message(4, {"role": "bashExecution", "command": "cat other.env", "output": f"K={KEY_UNSEEN}\n",
                    "exitCode": 0, "cancelled": False, "excludeFromContext": True}),
    ]


def records(agent: str) -> list[E.Record]:
    adapter: Any = ADAPTERS[agent]
    if agent == "amp":
        path = "/h/.local/share/amp/threads/T-5ec0.json"
        doc = orjson.loads(orjson.dumps(amp_thread()))
        return list(adapter.parse_document(doc, path, adapter.initial_state(path)))
    path = {"qwen": "/h/.qwen/projects/-home-dev-demo/chats/5ec0.jsonl",
            "pi": "/h/.pi/agent/sessions/--home-dev-demo--/2026-01-15T10-00-00-000Z_5ec0.jsonl"}[agent]
    state = adapter.initial_state(path)
    out: list[E.Record] = []
    for offset, obj in enumerate(qwen_lines() if agent == "qwen" else pi_lines()):
        out += adapter.parse(obj, offset * 1000, path, state)
    return out


@pytest.mark.parametrize("agent", ["qwen", "amp", "pi"])
def test_what_the_model_saw_is_scanned_and_nothing_is_kept(agent: str) -> None:
    events = [r for r in records(agent) if isinstance(r, E.Event)]
    deriver = Deriver(lambda cwd: cwd)
    events += [d for e in list(events) for d in deriver(e)]
    assert [(e.data["path"], e.data["op"]) for e in events if e.kind == E.READ] == [(ENV, "read")]
    found = SecretStage(SCANNER, ScanConfig()).process(events)
    secrets = sorted((s.data["label"], s.data["type"], s.data.get("path") or "", s.data["line"])
                     for s in found if s.kind == E.SECRET)
    assert secrets == [("output", "AWS Access Key", ENV, 3), ("text", "AWS Access Key", "", 1)]
    assert {s.data["hash"] for s in found if s.kind == E.SECRET} == {
        SCANNER.value_hash(KEY_READ), SCANNER.value_hash(KEY_TYPED)}
    [prompt] = [e for e in events if e.kind == E.PROMPT]
    assert prompt.data["text"] == "deploy with [REDACTED:AWS Access Key]"
    stored = repr([e.data for e in events] + [s.data for s in found])
    assert not [k for k in (KEY_TYPED, KEY_READ, KEY_UNSEEN) if k in stored]
