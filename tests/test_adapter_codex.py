"""The Codex adapter: hand-made fixtures for each rollout variant, the real corpus
(exact counts computed once from the data), restart equivalence and robustness.

Corpus transcripts are real people's logs: these tests assert counts, ids, versions and
models, and identify a working directory by its last component plus a hash, so no
user name or transcript text ends up in this file or in a failure message.
"""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.adapters.codex import (
    ADAPTER,
    IGNORED_EVENT_MSG_TYPES,
    MAX_PENDING_CALLS,
    parse_tool_output,
)
from agentsrc_daemon.events import (
    CLAIM_COPY,
    COMPACTION,
    ERROR,
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USAGE,
    Drift,
    Event,
    Record,
    SessionFacts,
    TurnFacts,
    line_key,
)

from adapter_lines import parse_document_with
from corpus import corpus_home

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "codex"


# --------------------------------------------------------------------------- helpers


def read_lines(path: Path) -> list[tuple[int, bytes]]:
    """(byte offset, line) for every non-blank line, as the tail-reader sees them."""
    lines = []
    offset = 0
    with path.open("rb") as f:
        for raw in f:
            if raw.strip():
                lines.append((offset, raw))
            offset += len(raw)
    return lines


def parse_lines(
    path: Path, lines: list[tuple[int, bytes]], state: dict[str, Any] | None = None
) -> tuple[list[Record], dict[str, Any]]:
    if state is None:
        state = ADAPTER.initial_state(str(path))
    records: list[Record] = []
    for offset, raw in lines:
        obj = orjson.loads(raw)
        if isinstance(obj, dict):
            records.extend(ADAPTER.parse(obj, offset, str(path), state))
    return records, state


def parse_file(path: Path) -> tuple[list[Record], dict[str, Any]]:
    return parse_lines(path, read_lines(path))


def events(records: list[Record], kind: str) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and r.kind == kind]


def fixture(session_uuid_prefix: str) -> Path:
    (path,) = FIXTURES.glob(f"rollout-*-{session_uuid_prefix}*")
    return path


def session_facts(records: list[Record]) -> list[SessionFacts]:
    return [r for r in records if isinstance(r, SessionFacts)]


def turn_facts(records: list[Record]) -> list[TurnFacts]:
    return [r for r in records if isinstance(r, TurnFacts)]


def drifts(records: list[Record]) -> list[str]:
    return [r.record_type for r in records if isinstance(r, Drift)]


def parse_dicts(dicts: list[dict[str, Any]], path: str = "/x/rollout.jsonl") -> list[Record]:
    state = ADAPTER.initial_state(path)
    records: list[Record] = []
    for i, obj in enumerate(dicts):
        records.extend(ADAPTER.parse(obj, i * 100, path, state))
    return records


def envelope(ts: str, record_type: str, payload: Any) -> dict[str, Any]:
    return {"timestamp": ts, "type": record_type, "payload": payload}


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


# --------------------------------------------------------------------------- fixtures


def test_pre_envelope_rollout() -> None:
    path = fixture("11111111")
    records, state = parse_file(path)
    sid = "codex:11111111-1111-4111-8111-111111111111"
    facts = session_facts(records)
    assert facts[0].native_id == "11111111-1111-4111-8111-111111111111"
    assert facts[0].started_at == "2025-08-01T10:00:00.000Z"
    assert facts[0].version is None
    assert [e.data["text"] for e in events(records, PROMPT)] == [
        "list the files",
        "now run the tests",
    ]
    assert [e.turn_id for e in events(records, TURN_START)] == [
        "11111111-1111-4111-8111-111111111111:t1",
        "11111111-1111-4111-8111-111111111111:t2",
    ]
    assert [e.data for e in events(records, TURN_END)] == [
        {"status": "complete", "reason": "superseded"}
    ]
    # Bare items carry their own ids (rs_*, msg_*), used as keys.
    assert [e.key for e in events(records, REASONING)] == [f"{sid}:item:rs_1"]
    assert [e.key for e in events(records, MESSAGE)] == [f"{sid}:item:msg_1"]
    calls = events(records, TOOL_CALL)
    assert [(c.tool, c.call_id, c.key) for c in calls] == [
        ("shell", "call_a1", "codex:11111111-1111-4111-8111-111111111111:call:call_a1"),
        ("shell", "call_a2", "codex:11111111-1111-4111-8111-111111111111:call:call_a2"),
        ("update_plan", "call_a3", "codex:11111111-1111-4111-8111-111111111111:call:call_a3"),
    ]
    assert calls[0].input == {"command": ["bash", "-lc", "ls"], "workdir": "/home/dev/proj"}
    assert calls[2].input == {"raw": "{not json"}  # arguments that are not JSON
    results = events(records, TOOL_RESULT)
    assert [r.data for r in results] == [
        {
            "is_error": False,
            "exit_code": 0,
            "duration_ms": 250,
            "output_chars": 14,
            "interrupted": False,
        },
        {
            "is_error": True,
            "exit_code": None,
            "duration_ms": None,
            "output_chars": 60,
            "interrupted": False,
        },
        {
            "is_error": True,
            "exit_code": None,
            "duration_ms": None,
            "output_chars": 34,
            "interrupted": False,
        },
    ]
    assert results[0].contents == [("output", "README.md\nsrc\n")]
    assert results[0].tool == "shell"
    assert results[0].input == calls[0].input
    assert all(e.ts is None and e.session_id == sid for e in events(records, TOOL_CALL))
    assert drifts(records) == []
    assert state["pending"] == {}


def test_envelope_036_turns_usage_and_prompt_dedupe() -> None:
    path = fixture("22222222")
    records, _ = parse_file(path)
    # Each prompt is written twice (response_item + event_msg/user_message), the second
    # time with different whitespace; the last one exists only as an event_msg.
    assert [e.data["text"] for e in events(records, PROMPT)] == [
        "fix the bug",
        "  and  the  docs\n",
        "thanks",
    ]
    assert [e.data["text"] for e in events(records, MESSAGE)] == ["Found it."]
    ends = events(records, TURN_END)
    assert [(e.turn_id, e.data["status"], e.data["reason"], e.ts) for e in ends] == [
        (
            "22222222-2222-4222-8222-222222222222:t1",
            "complete",
            "superseded",
            "2025-09-16T06:00:06.002Z",  # the last record of the turn, not the next prompt
        ),
        (
            "22222222-2222-4222-8222-222222222222:t2",
            "aborted",
            "interrupted",
            "2025-09-16T06:00:13.000Z",
        ),
    ]
    assert len(events(records, TURN_START)) == 3
    usage = events(records, USAGE)
    assert [u.data for u in usage] == [
        {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_read_tokens": 40,
            "cache_creation_tokens": 0,
            "reasoning_tokens": 5,
            "total_tokens": 110,
            "model": "gpt-5-codex",
        },
        {
            "input_tokens": 150,
            "output_tokens": 20,
            "cache_read_tokens": 60,
            "cache_creation_tokens": 0,
            "reasoning_tokens": 5,
            "total_tokens": 170,
            "model": "gpt-5",
        },
    ]
    assert sum(u.data["total_tokens"] for u in usage) == 280  # the last cumulative total
    # turn_context changed the cwd and model for the second turn.
    assert [(t.turn_id[-2:], t.cwd, t.model) for t in turn_facts(records) if t.cwd] == [
        ("t1", "/home/dev/proj", None),
        ("t1", "/home/dev/proj", "gpt-5-codex"),
        ("t2", "/home/dev/proj", "gpt-5-codex"),
        ("t2", "/home/dev/proj/docs", "gpt-5"),
        ("t3", "/home/dev/proj/docs", "gpt-5"),
    ]
    assert [s.model for s in session_facts(records) if s.model] == ["gpt-5-codex", "gpt-5"]
    meta = session_facts(records)[0]
    assert (meta.cwd, meta.version, meta.originator) == ("/home/dev/proj", "0.36.0", "codex_cli_rs")
    result = events(records, TOOL_RESULT)[0]
    assert result.data == {
        "is_error": True,
        "exit_code": 1,
        "duration_ms": 1500,
        "output_chars": 0,
        "interrupted": False,
    }
    assert result.cwd == "/home/dev/proj"


def test_prompt_dedupe_when_event_msg_comes_first() -> None:
    records = parse_dicts(
        [
            envelope(
                "2025-10-01T00:00:00Z", "event_msg", {"type": "user_message", "message": "a b"}
            ),
            envelope("2025-10-01T00:00:01Z", "response_item", user_item("a\nb")),
            envelope(
                "2025-10-01T00:00:02Z", "event_msg", {"type": "agent_message", "message": "ok"}
            ),
            envelope(
                "2025-10-01T00:00:03Z",
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "ok"}],
                },
            ),
            # The same prompt again is a new prompt, not a duplicate.
            envelope("2025-10-01T00:00:04Z", "response_item", user_item("a b")),
            envelope(
                "2025-10-01T00:00:05Z", "event_msg", {"type": "user_message", "message": "a b"}
            ),
        ]
    )
    assert [
        (e.kind, e.ts) for e in records if isinstance(e, Event) and e.kind in (PROMPT, MESSAGE)
    ] == [
        (PROMPT, "2025-10-01T00:00:00.000Z"),
        (MESSAGE, "2025-10-01T00:00:02.000Z"),
        (PROMPT, "2025-10-01T00:00:04.000Z"),
    ]
    assert len(events(records, TURN_START)) == 2


def test_shell_command_text_output() -> None:
    records, _ = parse_file(fixture("33333333"))
    results = events(records, TOOL_RESULT)
    assert [
        (r.tool, r.data["exit_code"], r.data["duration_ms"], r.data["is_error"]) for r in results
    ] == [
        ("shell_command", 0, 200, False),
        ("shell_command", 2, 1000, True),
    ]
    assert results[0].contents == [("output", "app.py\nutil.py\n")]
    assert results[0].data["output_chars"] == len("app.py\nutil.py\n")
    assert events(records, TOOL_CALL)[0].input == {"command": "ls src", "workdir": "/home/dev/proj"}
    assert drifts(records) == []  # ghost_snapshot is ignored on purpose


def test_exec_command_text_output_and_exec_command_end() -> None:
    records, state = parse_file(fixture("44444444"))
    turn = "019d0000-0000-7000-8000-000000000001"
    assert [e.turn_id for e in events(records, TURN_START)] == [turn]
    assert [e.data for e in events(records, TURN_END)] == [{"status": "complete", "reason": None}]
    assert [e.data["text"] for e in events(records, PROMPT)] == ["start the server"]
    results = {r.call_id: r for r in events(records, TOOL_RESULT)}
    # The output's own "Process exited with code" and "Wall time" win over exec_command_end.
    assert results["call_d1"].data == {
        "is_error": False,
        "exit_code": 0,
        "duration_ms": 10,
        "output_chars": 23,
        "interrupted": False,
    }
    assert results["call_d1"].contents == [("output", "package.json\nserver.js\n")]
    # Still running: no exit code. Its exec_command_end came after the output: nothing new.
    assert results["call_d2"].data["exit_code"] is None
    assert results["call_d2"].data["is_error"] is None
    assert results["call_d3"].tool == "write_stdin"
    assert results["call_d3"].data["exit_code"] == 0
    # The output says only "aborted": exit code and duration come from exec_command_end.
    assert results["call_d4"].data == {
        "is_error": True,
        "exit_code": 130,
        "duration_ms": 2000,
        "output_chars": 7,
        "interrupted": True,
    }
    assert len(events(records, TOOL_RESULT)) == 4
    stdin_call = [c for c in events(records, TOOL_CALL) if c.tool == "write_stdin"][0]
    assert stdin_call.contents == [("stdin", "q\n")]
    assert stdin_call.data == {"input": {"session_id": 7, "chars": {"omitted_chars": 2}}}
    meta = session_facts(records)[0]
    assert (meta.originator, meta.version, meta.source, meta.model_provider) == (
        "codex-tui",
        "0.118.0",
        "cli",
        "openai",
    )
    assert state["pending"] == {}
    assert drifts(records) == []


def test_custom_tool_call_apply_patch() -> None:
    records, _ = parse_file(fixture("55555555"))
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
    call = events(records, TOOL_CALL)[0]
    assert (call.tool, call.call_id) == ("apply_patch", "call_e1")
    assert call.input == {"input": patch}
    assert call.data == {"input": {"input": {"omitted_chars": len(patch)}}}
    assert call.contents == [("patch", patch)]
    result = events(records, TOOL_RESULT)[0]
    assert (result.tool, result.data["exit_code"], result.data["duration_ms"]) == (
        "apply_patch",
        0,
        0,
    )
    assert result.input == {"input": patch}
    # AGENTS.md text, environment context and a tool's image are not prompts.
    assert [e.data["text"] for e in events(records, PROMPT)] == ["add a hello file"]


def test_compaction_context_and_plan_mode() -> None:
    records, _ = parse_file(fixture("66666666"))
    compactions = events(records, COMPACTION)
    # compacted + context_compacted describe one compaction; pre_tokens is the context
    # size reported by the last token_count.
    assert [c.data for c in compactions] == [{"trigger": None, "pre_tokens": 9500}]
    assert compactions[0].turn_id == "019d0000-0000-7000-8000-000000000062"
    # Developer messages, AGENTS.md and environment context (re-injected after the
    # compaction) are not prompts.
    assert [e.data["text"] for e in events(records, PROMPT)] == ["plan the refactor", "go ahead"]
    # The plan-mode assistant item holds a <proposed_plan> block its event_msg twin lacks.
    assert [e.data["text"] for e in events(records, MESSAGE)] == ["Here is the plan."]
    search = [c for c in events(records, TOOL_CALL) if c.tool == "web_search"]
    assert [s.input for s in search] == [
        {"type": "search", "query": "python dataclass slots", "queries": ["python dataclass slots"]}
    ]
    errors = events(records, ERROR)
    assert [(len(e.data["message"]), e.data["error_type"]) for e in errors] == [(500, "error")]
    assert [e.data["status"] for e in events(records, TURN_END)] == ["complete", "complete"]
    assert drifts(records) == []  # item_completed/Plan is known


def test_turn_aborted() -> None:
    records, state = parse_file(fixture("77777777"))
    assert [(e.turn_id, e.data) for e in events(records, TURN_END)] == [
        ("019d0000-0000-7000-8000-000000000071", {"status": "aborted", "reason": "interrupted"}),
        ("019d0000-0000-7000-8000-000000000072", {"status": "complete", "reason": None}),
    ]
    aborted = [t for t in turn_facts(records) if t.status == "aborted"]
    assert [(t.turn_id, t.ended_at) for t in aborted] == [
        ("019d0000-0000-7000-8000-000000000071", "2026-03-18T19:00:09.001Z")
    ]
    # The <turn_aborted> notice in the user role is not a prompt.
    assert [e.data["text"] for e in events(records, PROMPT)] == ["run the slow job", "never mind"]
    assert list(state["pending"]) == ["call_f1"]  # the interrupted call never got an output


def test_forked_rollout_keeps_copied_history_as_the_parents() -> None:
    records, _ = parse_file(fixture("88888888"))
    sid = "codex:88888888-8888-4888-8888-888888888888"
    parent = "codex:99999999-9999-4999-8999-999999999999"
    assert {r.session_id for r in records if isinstance(r, Event | SessionFacts)} == {sid, parent}
    assert [s.parent_session_id for s in session_facts(records) if s.parent_session_id] == [
        parent
    ]
    own = [r for r in records if isinstance(r, Event) and r.session_id == sid]
    copied = [r for r in records if isinstance(r, Event) and r.session_id == parent]
    assert [e.data["text"] for e in own if e.kind == PROMPT] == ["new prompt"]
    assert [c.call_id for c in own if c.kind == TOOL_CALL] == ["call_new"]
    assert [e for e in own if e.kind == MESSAGE] == []
    # The copy is the parent's (its session, its keys), held by the fork.
    assert copied and {(e.claim, e.holder) for e in copied} == {(CLAIM_COPY, sid)}
    assert all(e.key.startswith("codex:99999999-") for e in copied)
    assert {s.weak for s in session_facts(records) if s.session_id == parent} == {True}
    assert [s.replayed_in for s in session_facts(records) if s.replayed_in] == [sid]
    # The copied token_count is the parent's; the fork is given only its own tokens.
    assert [u.data["total_tokens"] for u in own if u.kind == USAGE] == [750]
    assert [s.model for s in session_facts(records) if s.model and s.session_id == sid] == [
        "gpt-5-codex"
    ]


def test_format_drift_is_reported_never_raised() -> None:
    records, _ = parse_file(fixture("aaaaaaaa"))
    assert drifts(records) == [
        "event_msg/item_completed/TeleportItem",
        "event_msg/item_completed/HologramItem",
        "event_msg/brand_new_event",
        "response_item/tool_teleport_call",
        "thread_item",
        "event_msg/<invalid payload>",
        "response_item/<no type>",
        "<no type>",
    ]
    assert {r.version for r in records if isinstance(r, Drift)} == {"0.148.0"}
    assert [r for r in records if isinstance(r, Event)] == []
    assert "agent_reasoning" in IGNORED_EVENT_MSG_TYPES


def test_legacy_document_fixture() -> None:
    path = FIXTURES / "rollout-2025-08-23-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb.json"
    records = parse_document_with(ADAPTER, orjson.loads(path.read_bytes()), str(path))
    sid = "codex:bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
    assert session_facts(records)[0].started_at == "2025-08-23T11:11:20.791Z"
    assert [e.data["text"] for e in events(records, PROMPT)] == ["show the readme", "thanks"]
    call = events(records, TOOL_CALL)[0]
    assert (call.tool, call.call_id, call.input) == (
        "shell",
        "call_g1",
        {"command": ["cat", "README.md"]},
    )
    result = events(records, TOOL_RESULT)[0]
    assert (result.tool, result.data["exit_code"], result.data["duration_ms"]) == ("shell", 0, 400)
    assert [e.data["text"] for e in events(records, MESSAGE)] == ["It has a title."]
    assert len(events(records, REASONING)) == 1  # the empty reasoning string is nothing
    # Keys come from the item index: item 2 holds a reasoning and a call.
    assert [e.key for e in events(records, REASONING) + [call, result]] == [
        line_key(str(path), 0, 2),
        line_key(str(path), 0, 2) + ".1",
        line_key(str(path), 0, 3),
    ]
    assert {e.session_id for e in records if isinstance(e, Event)} == {sid}
    assert drifts(records) == ["document/critic"]
    assert parse_document_with(ADAPTER, orjson.loads(path.read_bytes()), str(path)) == records


def test_session_id_falls_back_to_the_file_name() -> None:
    uuid = "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
    path = f"/home/dev/.codex/sessions/2025/10/01/rollout-2025-10-01T00-00-00-{uuid}.jsonl"
    records = parse_dicts(
        [envelope("2025-10-01T00:00:00Z", "response_item", user_item("hi"))], path
    )
    assert {e.session_id for e in records if isinstance(e, Event)} == {f"codex:{uuid}"}
    assert ADAPTER.initial_state("/tmp/notes.jsonl")["native_id"] == "notes"


def test_pending_calls_stay_bounded() -> None:
    calls = [
        envelope(
            "2025-10-01T00:00:00Z",
            "response_item",
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{i}"},
        )
        for i in range(MAX_PENDING_CALLS + 5)
    ]
    big = {
        "type": "custom_tool_call",
        "name": "apply_patch",
        "call_id": "big",
        "input": "x" * 100_000,
    }
    state = ADAPTER.initial_state("/x/rollout.jsonl")
    for obj in [*calls, envelope("2025-10-01T00:00:01Z", "response_item", big)]:
        ADAPTER.parse(obj, 0, "/x/rollout.jsonl", state)
    pending = state["pending"]
    assert len(pending) == MAX_PENDING_CALLS
    assert "c0" not in pending and "c5" not in pending and "c6" in pending
    assert pending["big"]["input"] == {"input": {"omitted_chars": 100_000}}


def test_deeply_nested_input_is_not_stored() -> None:
    # orjson reads JSON nested 1024 deep but writes only 254 levels: such an input must
    # reach neither the stored data nor the persisted state.
    action: dict[str, Any] = {"type": "exec"}
    for _ in range(300):
        action = {"a": action}
    state = ADAPTER.initial_state("/x/rollout.jsonl")
    item = {"type": "local_shell_call", "call_id": "deep", "status": "completed", "action": action}
    records = ADAPTER.parse(
        envelope("2025-10-01T00:00:00Z", "response_item", item), 0, "/x/rollout.jsonl", state
    )
    (call,) = events(records, TOOL_CALL)
    assert (call.tool, call.data) == ("local_shell", {"input": {"omitted": "not storable as JSON"}})
    assert call.input is action
    assert state["pending"]["deep"]["input"] == {"omitted": "not storable as JSON"}
    orjson.dumps(state)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            '{"output":"hi\\n","metadata":{"exit_code":3,"duration_seconds":1.25}}',
            ("hi\n", 3, 1250),
        ),
        ("Exit code: 0\nWall time: 0.5 seconds\nOutput:\nok\n", ("ok\n", 0, 500)),
        (
            "Chunk ID: 9f\nWall time: 2.0000 seconds\nProcess exited with code 1\n"
            "Original token count: 1\nOutput:\nno\n",
            ("no\n", 1, 2000),
        ),
        (
            "Command: /bin/bash -lc 'echo a\nb'\nChunk ID: 1\nWall time: 0.0010 seconds\n"
            "Process running with session ID 4\nOriginal token count: 0\nOutput:\n",
            ("", None, 1),
        ),
        ("Plan updated", ("Plan updated", None, None)),
        ("Exit code: 0 but no output header", ("Exit code: 0 but no output header", None, None)),
        ('{"answers": {"q": "yes"}}', ('{"answers": {"q": "yes"}}', None, None)),
        ([{"type": "input_text", "text": "a"}, {"type": "input_image"}], ("a", None, None)),
        (None, ("", None, None)),
    ],
)
def test_parse_tool_output_formats(raw: Any, expected: tuple[str, int | None, int | None]) -> None:
    out = parse_tool_output(raw)
    assert (out.text, out.exit_code, out.duration_ms) == expected


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class Expected:
    path: str
    native: str
    prompts: int
    messages: int
    tool_calls: int
    tool_results: int
    turns: int
    aborted: int
    usage_total: int
    cwd: str | None  # "<last path component>#<sha256 of the full cwd, 12 hex>"
    version: str | None
    model: str | None  # the last model the session reported
    parent: str | None


S = ".codex/sessions/"
# fmt: off
CORPUS = [
    Expected(S + "2025/08/25/rollout-2025-08-25T08-13-30-fce98fd7-e6b5-4f01-ade5-271721b00f9c.jsonl", native="fce98fd7-e6b5-4f01-ade5-271721b00f9c", prompts=7, messages=12, tool_calls=43, tool_results=43, turns=7, aborted=0, usage_total=0, cwd=None, version=None, model=None, parent=None),
    Expected(S + "2025/09/16/rollout-2025-09-16T14-12-31-613a9a68-8816-40b2-a2d4-041ade599da6.jsonl", native="613a9a68-8816-40b2-a2d4-041ade599da6", prompts=8, messages=11, tool_calls=7, tool_results=7, turns=8, aborted=2, usage_total=902751, cwd="CpolarAutoUpdater#a0148e85de5a", version="0.36.0", model="gpt-5-codex", parent="9cd28a74-da7e-4458-a91a-fffec2be9d7a"),
    Expected(S + "2025/10/25/rollout-2025-10-25T01-25-22-019a17ae-caf0-76a3-8372-3b0a8116c06e.jsonl", native="019a17ae-caf0-76a3-8372-3b0a8116c06e", prompts=9, messages=14, tool_calls=95, tool_results=95, turns=9, aborted=0, usage_total=4450322, cwd="mail-agent#49f23392fcbf", version="0.48.0", model="gpt-5", parent=None),
    Expected(S + "2025/10/31/rollout-2025-10-31T18-36-16-fa1ac8bf-348e-4b9a-a06d-767050fa1e10.jsonl", native="fa1ac8bf-348e-4b9a-a06d-767050fa1e10", prompts=0, messages=0, tool_calls=0, tool_results=0, turns=0, aborted=0, usage_total=0, cwd="OpenPrintKit#83556efb41de", version="0.34.0", model=None, parent=None),
    Expected(S + "2025/11/01/rollout-2025-11-01T11-34-37-97b66f6c-a160-40e0-bd0f-1fdcbbb9498b.jsonl", native="97b66f6c-a160-40e0-bd0f-1fdcbbb9498b", prompts=52, messages=55, tool_calls=329, tool_results=329, turns=52, aborted=0, usage_total=53077637, cwd="OpenPrintKit#83556efb41de", version="0.34.0", model=None, parent=None),
    Expected(S + "2025/11/07/rollout-2025-11-07T08-44-25-019a5b8e-a2f2-7f42-bb90-f248b42e3415.jsonl", native="019a5b8e-a2f2-7f42-bb90-f248b42e3415", prompts=8, messages=8, tool_calls=127, tool_results=127, turns=8, aborted=0, usage_total=5624904, cwd="Lotto645#8220e8404ed2", version="0.55.0", model="gpt-5-codex", parent=None),
    Expected(S + "2025/11/09/rollout-2025-11-09T07-35-10-019a6753-671b-7133-89f2-da5ce1449704.jsonl", native="019a6753-671b-7133-89f2-da5ce1449704", prompts=4, messages=4, tool_calls=124, tool_results=124, turns=4, aborted=0, usage_total=7478597, cwd="node1#1aa6c77bb674", version="0.39.0", model="gpt-5-codex", parent=None),
    Expected(S + "2025/12/15/rollout-2025-12-15T12-00-35-019b21ab-55b8-7932-8d73-e85426fd3cad.jsonl", native="019b21ab-55b8-7932-8d73-e85426fd3cad", prompts=2, messages=2, tool_calls=27, tool_results=27, turns=2, aborted=0, usage_total=309902, cwd="useReq#a7b108e64507", version="0.72.0", model="gpt-5.1-codex-max", parent=None),
    Expected(S + "2025/12/15/rollout-2025-12-15T14-44-44-019b2241-a0a9-7740-a0c0-33c010d4f7e6.jsonl", native="019b2241-a0a9-7740-a0c0-33c010d4f7e6", prompts=2, messages=2, tool_calls=35, tool_results=35, turns=2, aborted=0, usage_total=635999, cwd="useReq#a7b108e64507", version="0.70.0-alpha.4", model="gpt-5.1-codex", parent=None),
    Expected(S + "2026/02/10/rollout-2026-02-10T04-57-33-019c45b2-846a-7fa1-9ed7-42354e9982fd.jsonl", native="019c45b2-846a-7fa1-9ed7-42354e9982fd", prompts=1, messages=9, tool_calls=22, tool_results=22, turns=1, aborted=0, usage_total=516470, cwd="backoffice#e24e3b48ae35", version="0.0.0", model="gpt-5.3-codex", parent=None),
    Expected(S + "2026/03/18/rollout-2026-03-18T11-04-43-019d021f-1244-77d2-b5aa-ba1d70f11e87.jsonl", native="019d021f-1244-77d2-b5aa-ba1d70f11e87", prompts=71, messages=118, tool_calls=222, tool_results=219, turns=71, aborted=7, usage_total=22035494, cwd="shell-ws#66779cc2116a", version="0.105.0", model="gpt-5.4", parent=None),
    Expected(S + "2026/04/08/rollout-2026-04-08T22-02-46-019d6d67-1952-7e83-93ef-94497e3c15b6.jsonl", native="019d6d67-1952-7e83-93ef-94497e3c15b6", prompts=3, messages=17, tool_calls=34, tool_results=34, turns=3, aborted=1, usage_total=872028, cwd="volcano#a962b4a9070f", version="0.118.0", model="gpt-5.4", parent=None),
]
# fmt: on


def cwd_tag(cwd: str | None) -> str | None:
    if cwd is None:
        return None
    last = cwd.replace("\\", "/").rsplit("/", 1)[-1]
    return f"{last}#{hashlib.sha256(cwd.encode()).hexdigest()[:12]}"


def last_cumulative_total(path: Path) -> int:
    """The last total_token_usage.total_tokens written in the file, read directly."""
    total = 0
    for _, raw in read_lines(path):
        obj = orjson.loads(raw)
        payload = obj.get("payload") if isinstance(obj, dict) else None
        if isinstance(payload, dict) and payload.get("type") == "token_count":
            info = payload.get("info") or {}
            total = info.get("total_token_usage", {}).get("total_tokens", total)
    return total


@cache
def parsed_corpus_file(relative: str) -> tuple[list[Record], dict[str, Any]]:
    return parse_file(corpus_home() / relative)


@pytest.mark.parametrize("expected", CORPUS, ids=lambda e: e.native[:8])
def test_corpus_file(expected: Expected) -> None:
    path = corpus_home() / expected.path
    everything, state = parsed_corpus_file(expected.path)
    sid = f"codex:{expected.native}"
    # A resumed rollout's replay of its parent's history is the parent's (a copy held
    # here); the counts below are the rollout's own.
    copied = [r for r in everything if isinstance(r, Event) and r.session_id != sid]
    assert {(r.session_id, r.claim, r.holder) for r in copied} <= {
        (f"codex:{expected.parent}", CLAIM_COPY, sid)
    }
    records = [
        r for r in everything
        if not isinstance(r, Event | SessionFacts | TurnFacts) or r.session_id == sid
    ]
    kinds = Counter(r.kind for r in records if isinstance(r, Event))
    first = session_facts(records)[0]
    assert first.native_id == expected.native
    assert (kinds[PROMPT], kinds[MESSAGE]) == (expected.prompts, expected.messages)
    assert (kinds[TOOL_CALL], kinds[TOOL_RESULT]) == (expected.tool_calls, expected.tool_results)
    assert kinds[TURN_START] == expected.turns
    aborted = [e for e in events(records, TURN_END) if e.data["status"] == "aborted"]
    assert len(aborted) == expected.aborted
    usage_total = sum(e.data["total_tokens"] for e in events(records, USAGE))
    assert usage_total == expected.usage_total == last_cumulative_total(path)
    assert (cwd_tag(first.cwd), first.version) == (expected.cwd, expected.version)
    models = [s.model for s in session_facts(records) if s.model]
    assert (models[-1] if models else None) == expected.model
    parents = [s.parent_session_id for s in session_facts(records) if s.parent_session_id]
    assert parents == ([f"codex:{expected.parent}"] if expected.parent else [])
    assert drifts(records) == []
    keys = [r.key for r in everything if isinstance(r, Event)]
    assert len(keys) == len(set(keys))
    # Every turn that started has facts; events inside a turn carry its id.
    started = {e.turn_id for e in events(records, TURN_START)}
    assert {t.turn_id for t in turn_facts(records) if t.status == "open"} == started
    assert {e.turn_id for e in events(records, PROMPT)} <= started
    orjson.dumps(state)  # the state persists as JSON


def test_corpus_legacy_json_document() -> None:
    path = (
        corpus_home()
        / ".codex/sessions/rollout-2025-08-23-1a0dd4c9-4e06-40c6-97f9-066c07c8793b.json"
    )
    records = parse_document_with(ADAPTER, orjson.loads(path.read_bytes()), str(path))
    kinds = Counter(r.kind for r in records if isinstance(r, Event))
    assert session_facts(records)[0].native_id == "1a0dd4c9-4e06-40c6-97f9-066c07c8793b"
    assert (kinds[PROMPT], kinds[MESSAGE], kinds[REASONING]) == (2, 2, 4)
    assert (kinds[TOOL_CALL], kinds[TOOL_RESULT], kinds[TURN_START]) == (3, 2, 2)
    assert [c.tool for c in events(records, TOOL_CALL)] == ["shell", "shell", "container.exec"]
    assert [(r.data["exit_code"], r.data["duration_ms"]) for r in events(records, TOOL_RESULT)] == [
        (0, 4400),
        (0, 900),
    ]
    assert drifts(records) == []


# --------------------------------------------------------------------------- restart


def restart_cases() -> list[Any]:
    cases = [(e, fraction) for e in CORPUS for fraction in (0.3, 0.7)]
    # inside the copied parent history of the forked rollout, and right after it
    cases += [(CORPUS[1], 100 / 451), (CORPUS[1], 323 / 451)]
    return [pytest.param(e.path, f, id=f"{e.native[:8]}@{f:.2f}") for e, f in cases]


def split_parse(path: Path, cut: int) -> list[Record]:
    lines = read_lines(path)
    first, state = parse_lines(path, lines[:cut])
    restored = orjson.loads(orjson.dumps(state))  # what the tail-reader persists
    second, _ = parse_lines(path, lines[cut:], restored)
    return first + second


@pytest.mark.parametrize(("relative", "fraction"), restart_cases())
def test_corpus_restart_gives_the_same_records(relative: str, fraction: float) -> None:
    path = corpus_home() / relative
    one_pass, _ = parsed_corpus_file(relative)
    cut = round(len(read_lines(path)) * fraction)
    same = split_parse(path, cut) == one_pass
    assert same, f"records differ after a restart at line {cut}"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name[-14:-6])
def test_fixture_restart_at_every_line(path: Path) -> None:
    one_pass, _ = parse_file(path)
    for cut in range(len(read_lines(path)) + 1):
        assert split_parse(path, cut) == one_pass, f"restart at line {cut}"


# --------------------------------------------------------------------------- robustness

KEYS = [
    "type", "payload", "timestamp", "id", "role", "content", "call_id", "output", "arguments",
    "name", "input", "info", "total_token_usage", "last_token_usage", "message", "item",
    "cli_version", "cwd", "model", "turn_id", "text", "record_type", "action", "duration",
    "exit_code", "metadata", "tool_calls", "function", "reason", "session", "items",
]  # fmt: skip
TYPES = [
    "session_meta", "turn_context", "event_msg", "response_item", "compacted", "message",
    "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "local_shell_call", "web_search_call", "reasoning", "user_message", "agent_message",
    "token_count", "task_started", "task_complete", "turn_aborted", "exec_command_end",
    "item_completed", "context_compacted", "error", "user", "assistant", "developer",
    "input_text", "output_text", "Plan", "2025-01-01T00:00:00Z", "2025-01-01T00:00:00.5Z",
    "Exit code: 1\nWall time: 1 seconds\nOutput:\nx", '{"output":"x","metadata":{}}', "²",
]  # fmt: skip

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(TYPES)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=6,
)
# Records shaped like Codex's, with any field missing, mistyped or odd.
type_values = st.sampled_from(TYPES) | json_scalars
payloads = st.builds(
    lambda kind, rest: {**rest, "type": kind},
    type_values,
    st.dictionaries(st.sampled_from(KEYS[1:]), json_values, max_size=5),
)
codex_like = st.builds(
    lambda kind, ts, payload, rest: {**rest, "type": kind, "timestamp": ts, "payload": payload},
    type_values,
    type_values,
    payloads | json_values,
    st.dictionaries(st.sampled_from(KEYS[3:]), json_values, max_size=3),
)
json_objects = codex_like | st.dictionaries(
    st.sampled_from(KEYS) | st.text(max_size=6), json_values, max_size=5
)


def check_run(dicts: list[dict[str, Any]]) -> list[Record]:
    """Parse a sequence with a fresh state; check what must hold for any input."""
    path = (
        "/x/.codex/sessions/rollout-2025-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl"
    )
    state = ADAPTER.initial_state(path)
    records: list[Record] = []
    for i, obj in enumerate(dicts):
        records.extend(ADAPTER.parse(obj, i * 10, path, state))
        orjson.loads(orjson.dumps(state))  # always persistable
    for record in records:
        assert isinstance(record, Event | SessionFacts | TurnFacts | Drift)
        if isinstance(record, Event):
            orjson.dumps(record.data)  # stored as JSON
            assert isinstance(record.key, str) and record.key
    return records


@settings(max_examples=150, deadline=None)
@given(st.lists(json_objects, min_size=1, max_size=5))
def test_arbitrary_dicts_never_raise_and_are_deterministic(dicts: list[dict[str, Any]]) -> None:
    first = check_run(copy.deepcopy(dicts))
    assert check_run(copy.deepcopy(dicts)) == first


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_arbitrary_documents_never_raise(doc: Any) -> None:
    first = parse_document_with(ADAPTER, copy.deepcopy(doc), "/x/rollout.json")
    assert parse_document_with(ADAPTER, copy.deepcopy(doc), "/x/rollout.json") == first


@pytest.fixture(scope="module")
def corpus_sample() -> list[dict[str, Any]]:
    """Decoded corpus lines under 16 KB (to keep mutations cheap)."""
    sample = []
    for path in sorted((corpus_home() / ".codex").rglob("*.jsonl")):
        for _, raw in read_lines(path):
            if len(raw) < 16_384:
                sample.append(orjson.loads(raw))
    return sample


def mutate(obj: Any, steps: list[int], value: Any, delete: bool) -> Any:
    """Replace (or delete) one value somewhere inside obj, following ``steps``."""
    obj = copy.deepcopy(obj)
    node = obj
    for i, step in enumerate(steps):
        if isinstance(node, dict) and node:
            key = list(node)[step % len(node)]
            last = i == len(steps) - 1 or not isinstance(node[key], dict | list)
            if last:
                if delete:
                    del node[key]
                else:
                    node[key] = value
                return obj
            node = node[key]
        elif isinstance(node, list) and node:
            index = step % len(node)
            if i == len(steps) - 1 or not isinstance(node[index], dict | list):
                node[index] = value
                return obj
            node = node[index]
        else:
            break
    if isinstance(node, dict):
        node["type"] = value
    return obj


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(min_value=0, max_value=10**6),
    steps=st.lists(st.integers(min_value=0, max_value=64), min_size=1, max_size=5),
    value=json_values,
    delete=st.booleans(),
)
def test_mutated_corpus_lines_never_raise_and_are_deterministic(
    corpus_sample: list[dict[str, Any]], index: int, steps: list[int], value: Any, delete: bool
) -> None:
    i = index % len(corpus_sample)
    window = corpus_sample[max(0, i - 3) : i] + [mutate(corpus_sample[i], steps, value, delete)]
    window += corpus_sample[i + 1 : i + 3]
    first = check_run(copy.deepcopy(window))
    same = check_run(copy.deepcopy(window)) == first
    assert same, "records differ between two runs"  # no content in the failure message
