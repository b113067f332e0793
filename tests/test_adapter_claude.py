"""The Claude Code adapter against the real corpus (exact counts computed once from the
data), a hand-written fixture for the cases the corpus lacks, and property tests.

Nothing of a transcript is printed or asserted verbatim: only counts, ids, kinds, paths.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.adapters import claude
from agentsrc_daemon.adapters.claude import ADAPTER
from agentsrc_daemon.events import (
    COMPACTION,
    DIRECTIVE,
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

from adapter_lines import parse_document_with, parse_lines_with, read_lines
from corpus import corpus_home, is_read

FIXTURES = Path(__file__).parent / "fixtures" / "claude" / "projects"
FIXTURE_SID = "11111111-2222-4333-8444-555555555555"
FIXTURE = FIXTURES / "-home-dev-demo" / f"{FIXTURE_SID}.jsonl"


# -- helpers --------------------------------------------------------------------------


def parse_lines(
    path: Path, lines: list[tuple[int, Any]], state: dict[str, Any] | None = None
) -> tuple[list[Record], dict[str, Any]]:
    return parse_lines_with(ADAPTER, path, lines, state)


def parse_file(path: Path) -> list[Record]:
    return parse_lines(path, read_lines(path))[0]


def events(records: list[Record], kind: str | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


def projects() -> Path:
    return corpus_home() / ".claude" / "projects"


CWD_DIGEST_F84B640B = "05676a5d5b8c"


def corpus_file(rel: str) -> Path:
    """A corpus transcript by its path below its project directory. The project
    directories encode real people's home paths, so the tests name files by session and
    subagent ids only."""
    matches = [p for p in projects().glob(f"*/{rel}") if p.is_file()]
    assert len(matches) == 1, rel
    return matches[0]


def under_project(path: Path) -> str:
    return path.relative_to(projects()).as_posix().split("/", 1)[1]


# -- the corpus -----------------------------------------------------------------------

# Computed once from the data. prompts: real prompts (a subagent's task prompt included);
# messages: distinct message ids with text; usage_ids: distinct message ids with usage;
# calls/results: events emitted (a conversation replayed into f84b640b repeats 13 calls
# and results under their same tool ids, hence the distinct counts).
CORPUS: dict[str, dict[str, Any]] = {
    "d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl": {
        "session": "d3ad4cdc-5657-435d-98fa-0035d53e383d",
        "prompts": 5,
        "messages": 14,
        "calls": 59,
        "distinct_calls": 59,
        "results": 58,
        "usage_ids": 62,
        "usage_events": 67,
        "compactions": 0,
        "errors": 0,
        "turns": 5,
        "subagents": set(),
    },
    "ff71dbed-a4f2-4284-a4fc-fe2fb90de929.jsonl": {
        "session": None,
        "prompts": 0,
        "messages": 0,
        "calls": 0,
        "distinct_calls": 0,
        "results": 0,
        "usage_ids": 0,
        "usage_events": 0,
        "compactions": 0,
        "errors": 0,
        "turns": 0,
        "subagents": set(),
    },
    "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06.jsonl": {
        "session": "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06",
        "prompts": 3,
        "messages": 25,
        "calls": 56,
        "distinct_calls": 56,
        "results": 56,
        "usage_ids": 51,
        "usage_events": 73,
        "compactions": 0,
        "errors": 2,
        "turns": 5,  # 3 prompts + 2 custom slash commands the model answered
        "subagents": set(),
    },
    "8c880a68-969b-4b92-8733-a4927179d072.jsonl": {
        "session": "8c880a68-969b-4b92-8733-a4927179d072",
        "prompts": 5,
        "messages": 4,
        "calls": 6,
        "distinct_calls": 6,
        "results": 6,
        "usage_ids": 8,
        "usage_events": 8,
        "compactions": 0,
        "errors": 0,
        "turns": 5,
        "subagents": set(),
    },
    "8c880a68-969b-4b92-8733-a4927179d072/subagents/agent-a2df51c9276581f81.jsonl": {
        "session": "8c880a68-969b-4b92-8733-a4927179d072",
        "prompts": 0,  # the sub-agent's brief from its parent is a directive
        "directives": 1,
        "messages": 11,
        "calls": 10,
        "distinct_calls": 10,
        "results": 10,
        "usage_ids": 11,
        "usage_events": 20,
        "compactions": 0,
        "errors": 0,
        "turns": 0,
        "subagents": {"a2df51c9276581f81"},
    },
    "f84b640b-c091-44bf-9464-71a557d19a1d.jsonl": {
        "session": "f84b640b-c091-44bf-9464-71a557d19a1d",
        "prompts": 32,
        "messages": 154,
        "calls": 197,
        "distinct_calls": 184,
        "results": 197,
        "usage_ids": 155,
        "usage_events": 155,
        "compactions": 1,
        "errors": 1,
        "turns": 32,
        "subagents": set(),
    },
    "agent-f75bd872.jsonl": {
        "session": "f84b640b-c091-44bf-9464-71a557d19a1d",
        "prompts": 0,
        "directives": 1,
        "messages": 4,
        "calls": 8,
        "distinct_calls": 8,
        "results": 8,
        "usage_ids": 4,
        "usage_events": 4,
        "compactions": 0,
        "errors": 0,
        "turns": 0,
        "subagents": {"f75bd872"},
    },
    "agent-24c92a25.jsonl": {
        # The "Warmup" stub names a session that is not in the corpus: it still makes one.
        "session": "68e984d7-ed9c-45c4-8864-c6d2123ce91a",
        "prompts": 0,
        "directives": 1,
        "messages": 1,
        "calls": 0,
        "distinct_calls": 0,
        "results": 0,
        "usage_ids": 1,
        "usage_events": 1,
        "compactions": 0,
        "errors": 0,
        "turns": 0,
        "subagents": {"24c92a25"},
    },
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": {
        "session": "fe5e1c67-53e7-4862-81ae-d0e013e3270b",
        "prompts": 1,  # the user's; the 5 Task briefs of inline subagents are directives
        "directives": 5,
        "messages": 95,
        "calls": 167,
        "distinct_calls": 167,
        "results": 167,
        "usage_ids": 170,
        "usage_events": 174,
        "compactions": 0,
        "errors": 0,
        "turns": 2,  # the /init-style command the session opens with, then one prompt
        "subagents": {
            # pre-2.0 inline sidechains: the uuid of each sidechain's root record
            "6690d10e-f521-4ac0-800d-e5eb7a2d8072",
            "60dade70-20bb-4edb-9dad-9f08267e0cc2",
            "f4546a51-ea10-47e0-b4e0-76802974f8a9",
            "0d692b0f-17cb-4fd0-94fb-215dabcef803",
            "f4ab2bf6-d642-431a-85cb-66691f24c404",
        },
    },
    # 2.1.145, a background copy (sessionKind "bg", issue 26) opening with a
    # compaction summary: no prompt a person typed, so no turn.
    "5078d34e-e23c-45ab-899e-92ae7a71561b.jsonl": {
        "session": "5078d34e-e23c-45ab-899e-92ae7a71561b",
        "prompts": 0,
        "messages": 5,
        "calls": 12,
        "distinct_calls": 12,
        "results": 12,
        "usage_ids": 5,
        "usage_events": 5,
        "compactions": 0,
        "errors": 0,
        "turns": 0,
        "subagents": set(),
    },
    # 2.1.172, a sub-agent whose parent transcript is not in the corpus: its brief (the
    # sidechain's root) is a directive; usage streamed over 27 lines of 14 messages.
    "a40d33bf-19ab-407b-b281-8395d3c17198/subagents/agent-a19d108b63f57ce63.jsonl": {
        "session": "a40d33bf-19ab-407b-b281-8395d3c17198",
        "prompts": 0,
        "directives": 1,
        "messages": 8,
        "calls": 40,
        "distinct_calls": 40,
        "results": 40,
        "usage_ids": 14,
        "usage_events": 27,
        "compactions": 0,
        "errors": 0,
        "turns": 0,
        "subagents": {"a19d108b63f57ce63"},
    },
}


class Parsed(dict[str, list[Record]]):
    """Records per corpus file, with a repr that shows no transcript content (pytest
    prints a failing test's arguments)."""

    def __repr__(self) -> str:
        return f"<records of {len(self)} corpus files>"


@pytest.fixture(scope="module")
def corpus_records() -> Parsed:
    found = {under_project(p) for p in projects().rglob("*.jsonl") if is_read(p)}
    assert found == set(CORPUS)
    return Parsed({rel: parse_file(corpus_file(rel)) for rel in CORPUS})


@pytest.mark.parametrize("rel", sorted(CORPUS))
def test_corpus_counts(rel: str, corpus_records: dict[str, list[Record]]) -> None:
    want = CORPUS[rel]
    records = corpus_records[rel]
    evs = events(records)
    assert len(events(records, PROMPT)) == want["prompts"]
    assert len(events(records, DIRECTIVE)) == want.get("directives", 0)
    assert len({e.key for e in events(records, MESSAGE)}) == want["messages"]
    calls = events(records, TOOL_CALL)
    assert len(calls) == want["calls"]
    assert len({e.key for e in calls}) == want["distinct_calls"]
    assert len(events(records, TOOL_RESULT)) == want["results"]
    usage = events(records, USAGE)
    assert len(usage) == want["usage_events"]
    assert len({e.key.split(":")[2] for e in usage}) == want["usage_ids"]
    assert len(events(records, COMPACTION)) == want["compactions"]
    assert len(events(records, ERROR)) == want["errors"]
    assert len(events(records, TURN_START)) == want["turns"]
    assert {e.subagent_id for e in evs if e.subagent_id} == want["subagents"]
    sessions = {e.session_id for e in evs}
    assert sessions == ({f"claude-code:{want['session']}"} if want["session"] else set())
    assert all(e.adapter == "claude-code" and e.source_path.endswith(rel) for e in evs)


def test_corpus_has_no_drift(corpus_records: dict[str, list[Record]]) -> None:
    drift = [r for records in corpus_records.values() for r in records if isinstance(r, Drift)]
    assert drift == []


def test_every_corpus_record_type_is_handled_or_ignored() -> None:
    seen: set[tuple[str, str | None]] = set()
    for path in projects().rglob("*.jsonl"):
        if not is_read(path):
            continue
        for _, obj in read_lines(path):
            seen.add((obj["type"], obj.get("subtype") if obj["type"] == "system" else None))
    known = claude.HANDLED_RECORD_TYPES | claude.IGNORED_RECORD_TYPES
    assert {t for t, _ in seen} <= known
    subtypes = {s for t, s in seen if t == "system"}
    assert subtypes <= claude.HANDLED_SYSTEM_SUBTYPES | claude.IGNORED_SYSTEM_SUBTYPES
    # The corpus exercises these (so the lists above are not vacuous).
    assert subtypes == {
        "compact_boundary",
        "api_error",
        "stop_hook_summary",
        "turn_duration",
        "away_summary",
    }
    assert len({t for t, _ in seen}) == 12


@pytest.mark.parametrize("rel", sorted(CORPUS))
def test_every_tool_use_pairs_with_its_result(
    rel: str, corpus_records: dict[str, list[Record]]
) -> None:
    records = corpus_records[rel]
    calls = {e.call_id: e for e in events(records, TOOL_CALL)}
    results = events(records, TOOL_RESULT)
    for result in results:
        call = calls[result.call_id]  # every result in the corpus has its call in the file
        same = (result.tool, result.input, result.subagent_id) == (
            call.tool,
            call.input,
            call.subagent_id,
        )
        assert same, result.call_id  # (bools, not records: transcripts are never printed)
        assert result.data["output_chars"] >= 0
        assert isinstance(result.data["interrupted"], bool)
    unanswered = set(calls) - {r.call_id for r in results}
    # d3ad4cdc ends on a call whose result was never written.
    assert len(unanswered) == (
        1 if rel.endswith("d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl") else 0
    )


def test_subagent_layouts_land_in_the_parent_session(
    corpus_records: dict[str, list[Record]],
) -> None:
    # (2) agent-<id>.jsonl beside the session, 2.0.x
    beside = events(corpus_records["agent-f75bd872.jsonl"])
    assert {(e.session_id, e.subagent_id) for e in beside} == {
        ("claude-code:f84b640b-c091-44bf-9464-71a557d19a1d", "f75bd872")
    }
    # The parent's Task result names the same agent (toolUseResult.agentId).
    parent = corpus_records[
        "f84b640b-c091-44bf-9464-71a557d19a1d.jsonl"
    ]
    assert Counter(e.tool for e in events(parent, TOOL_CALL))["Task"] == 3
    # (3) <session>/subagents/agent-<id>.jsonl, 2.1.x: events join the parent's turn
    # through the promptId the subagent's records carry.
    nested = events(
        corpus_records[
            "8c880a68-969b-4b92-8733-a4927179d072/subagents/agent-a2df51c9276581f81.jsonl"
        ]
    )
    assert {(e.session_id, e.subagent_id) for e in nested} == {
        ("claude-code:8c880a68-969b-4b92-8733-a4927179d072", "a2df51c9276581f81")
    }
    parent_turns = {
        e.turn_id
        for e in events(
            corpus_records["8c880a68-969b-4b92-8733-a4927179d072.jsonl"],
            TURN_START,
        )
    }
    assert {e.turn_id for e in nested} == {"f097e4ec-3965-45ae-a7cb-5eb9aecf7b00"}
    assert "f097e4ec-3965-45ae-a7cb-5eb9aecf7b00" in parent_turns
    # (1) inline sidechains, pre-2.0: each sidechain's events, Task brief included,
    # carry the root record's uuid; the main conversation's carry none.
    inline = corpus_records["fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"]
    assert Counter(e.subagent_id for e in events(inline, PROMPT)) == {None: 1}
    per_subagent = Counter(e.subagent_id for e in events(inline, DIRECTIVE))
    assert per_subagent == {
        "6690d10e-f521-4ac0-800d-e5eb7a2d8072": 1,
        "60dade70-20bb-4edb-9dad-9f08267e0cc2": 1,
        "f4546a51-ea10-47e0-b4e0-76802974f8a9": 1,
        "0d692b0f-17cb-4fd0-94fb-215dabcef803": 1,
        "f4ab2bf6-d642-431a-85cb-66691f24c404": 1,
    }
    assert Counter(e.subagent_id is None for e in events(inline)) == {True: 46, False: 566}
    # Inline subagents run inside the parent's open turn.
    assert all(e.turn_id is not None for e in events(inline))


def test_subagent_facts_never_set_model_or_title(
    corpus_records: dict[str, list[Record]],
) -> None:
    for rel in (
        "agent-f75bd872.jsonl",
        "agent-24c92a25.jsonl",
        "8c880a68-969b-4b92-8733-a4927179d072/subagents/agent-a2df51c9276581f81.jsonl",
    ):
        facts = [r for r in corpus_records[rel] if isinstance(r, SessionFacts)]
        ok = bool(facts) and all(f.model is None and f.title is None for f in facts)
        assert ok, rel
        turn_facts = sum(1 for r in corpus_records[rel] if isinstance(r, TurnFacts))
        assert turn_facts == 0


def test_session_facts_from_the_corpus(corpus_records: dict[str, list[Record]]) -> None:
    records = corpus_records[
        "f84b640b-c091-44bf-9464-71a557d19a1d.jsonl"
    ]
    facts = [r for r in records if isinstance(r, SessionFacts)]
    assert {f.model for f in facts if f.model} == {"claude-sonnet-4-5-20250929"}
    assert {f.version for f in facts if f.version} == {"2.0.29"}
    # The cwd as written (a Windows path, lower-case drive), compared by a digest so the
    # test does not spell out a real person's path.
    cwds = {f.cwd for f in facts if f.cwd}
    assert len(cwds) == 1
    (cwd,) = cwds
    assert cwd.startswith("c:\\") and "/" not in cwd
    assert hashlib.sha256(cwd.encode()).hexdigest()[:12] == CWD_DIGEST_F84B640B
    started = [f.started_at for f in facts if f.started_at]
    first_started = started[0]
    assert first_started == "2025-10-30T09:17:47.233Z"
    title_lengths = [len(f.title) for f in facts if f.title]
    assert len(title_lengths) == 1 and title_lengths[0] <= 120
    compaction = events(records, COMPACTION)[0]
    assert compaction.data == {"trigger": "manual", "pre_tokens": 100227}
    error_type = events(records, ERROR)[0].data["error_type"]
    assert error_type == "api_error_message"


def test_interruptions_and_turn_ends(corpus_records: dict[str, list[Record]]) -> None:
    ends = events(
        corpus_records[
            "f84b640b-c091-44bf-9464-71a557d19a1d.jsonl"
        ],
        TURN_END,
    )
    assert Counter((e.data["status"], e.data["reason"]) for e in ends) == {
        ("complete", None): 28,
        ("aborted", "interrupted"): 4,
    }
    # 2.1.x writes system/turn_duration: turns end there, not at the next prompt.
    recent = corpus_records[
        "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06.jsonl"
    ]
    assert len(events(recent, TURN_END)) == 5
    assert sum(1 for r in recent if isinstance(r, TurnFacts) and r.model == "claude-opus-4-6") == 5


def test_spill_paths_point_into_the_session_tool_results(
    corpus_records: dict[str, list[Record]],
) -> None:
    rel = "8c880a68-969b-4b92-8733-a4927179d072/subagents/agent-a2df51c9276581f81.jsonl"
    spilled = [e for e in events(corpus_records[rel], TOOL_RESULT) if e.spill_path]
    tool_results_dir = corpus_file(rel).parent.parent / "tool-results"
    assert [Path(e.spill_path) for e in spilled if e.spill_path] == [
        tool_results_dir / f"{e.call_id}.txt" for e in spilled
    ]
    assert len(spilled) == 3
    # The corpus kept one of the three spill files.
    assert [e.call_id for e in spilled if Path(str(e.spill_path)).is_file()] == [
        "toolu_017fP86AX62HwZ71WujGKwVh"
    ]


def test_tool_result_contents_come_from_the_result_and_tool_use_result(
    corpus_records: dict[str, list[Record]],
) -> None:
    results = events(
        corpus_records[
            "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06.jsonl"
        ],
        TOOL_RESULT,
    )
    labels = Counter(tuple(label for label, _ in e.contents) for e in results)
    by_tool = Counter((e.tool, tuple(label for label, _ in e.contents)) for e in results)
    assert by_tool[("Read", ("output", "file"))] == 12
    assert sum(n for (tool, _), n in by_tool.items() if tool == "Bash") == 19
    assert all(("output" in ls) or ls == () for ls in labels)
    assert sum(1 for e in results if e.data["is_error"]) == 1


def test_meta_json_sidecar_yields_nothing() -> None:
    meta = next(projects().rglob("*.meta.json"))
    assert parse_document_with(ADAPTER, orjson.loads(meta.read_bytes()), str(meta)) == []
    assert parse_document_with(ADAPTER, [1, 2], str(meta)) == []


def test_corpus_parse_is_deterministic() -> None:
    path = corpus_file("fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    same = parse_file(path) == parse_file(path)
    assert same


@pytest.mark.parametrize(
    "rel",
    [
        "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06.jsonl",
        "8c880a68-969b-4b92-8733-a4927179d072/subagents/agent-a2df51c9276581f81.jsonl",
    ],
)
def test_restart_resumes_exactly(rel: str) -> None:
    path = corpus_file(rel)
    lines = read_lines(path)
    one_pass, _ = parse_lines(path, lines)
    for k in sorted({1, len(lines) // 3, len(lines) // 2, len(lines) - 1}):
        first, state = parse_lines(path, lines[:k])
        state = orjson.loads(orjson.dumps(state))
        rest, _ = parse_lines(path, lines[k:], state)
        same = first + rest == one_pass
        assert same, f"split at line {k}"


# -- the hand-written fixture ---------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_records() -> list[Record]:
    return parse_file(FIXTURE)


def test_fixture_event_sequence(fixture_records: list[Record]) -> None:
    got = [(e.kind, e.key, e.turn_id) for e in events(fixture_records)]
    assert got == [
        (TURN_START, "claude-code:turn:p-1:start", "p-1"),
        (PROMPT, "u-prompt-1", "p-1"),
        (REASONING, got[2][1], "p-1"),
        (USAGE, "claude-code:usage:msg_A1", "p-1"),
        (MESSAGE, "claude-code:message:msg_A1", "p-1"),
        (USAGE, "claude-code:usage:msg_A1:10.30.100.50", "p-1"),
        (TOOL_CALL, "claude-code:tool_use:toolu_A1", "p-1"),
        (USAGE, "claude-code:usage:msg_A1:10.80.100.50", "p-1"),
        (TOOL_RESULT, "claude-code:tool_result:toolu_A1", "p-1"),
        (TOOL_CALL, "claude-code:tool_use:toolu_A2", "p-1"),
        (USAGE, "claude-code:usage:msg_A2", "p-1"),
        (TOOL_RESULT, "claude-code:tool_result:toolu_A2", "p-1"),
        (ERROR, "s-apierr", "p-1"),
        (MESSAGE, "claude-code:message:msg_A3", "p-1"),
        (USAGE, "claude-code:usage:msg_A3", "p-1"),
        (TURN_END, "claude-code:turn:p-1:end", "p-1"),
        (TURN_START, "claude-code:turn:u-cmd:start", "u-cmd"),
        (MESSAGE, "claude-code:message:msg_B1", "u-cmd"),
        (USAGE, "claude-code:usage:msg_B1", "u-cmd"),
        (TURN_END, "claude-code:turn:u-cmd:end", "u-cmd"),
        (TURN_START, "claude-code:turn:p-2:start", "p-2"),
        (PROMPT, "u-prompt-2", "p-2"),
        (ERROR, "a-api-err", "p-2"),
        (TURN_END, "claude-code:turn:p-2:end", "p-2"),
        (COMPACTION, "s-compact", "p-2"),
        (MESSAGE, "claude-code:message:msg_C1", "p-2"),
        (USAGE, "claude-code:usage:msg_C1", "p-2"),
    ]
    assert got[2][1].startswith("claude-code:reasoning:msg_A1:")


def _assistant_line(uuid: str, message_id: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "uuid": uuid, "sessionId": "s1",
            "timestamp": "2026-05-01T10:00:00.000Z",
            "message": {"id": message_id, "role": "assistant", "content": list(blocks)}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


MULTI_LINE_MESSAGE = [
    (0, _assistant_line("a1", "msg_M", {"type": "thinking", "thinking": "hmm"})),
    (100, _assistant_line("a2", "msg_M", _text("one"))),
    (200, _assistant_line("a3", "msg_M", {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                          "input": {"command": "ls"}})),
    (300, _assistant_line("a4", "msg_M", _text("two"))),
    (400, _assistant_line("a4-copy", "msg_M", _text("two"))),  # a block given again: nothing
    (500, _assistant_line("a5", "msg_M", _text("three"), _text("four"))),  # two on one line
    (600, _assistant_line("b1", "msg_N", _text("next"))),
]


def test_a_message_written_as_several_lines_is_emitted_whole_as_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    records, state = parse_lines(path, MULTI_LINE_MESSAGE)
    messages = [(e.key, e.revision, e.data, e.offset, e.contents) for e in events(records, MESSAGE)]
    assert messages == [
        ("claude-code:message:msg_M", 0, {"text": "one"}, 100, []),
        ("claude-code:message:msg_M", 1, {"text": "one\n\ntwo"}, 300, []),
        ("claude-code:message:msg_M", 2, {"text": "one\n\ntwo\n\nthree\nfour"}, 500, []),
        ("claude-code:message:msg_N", 0, {"text": "next"}, 600, []),
    ]
    assert state["message"] == {"id": "msg_N", "revision": 0, "chars": 4, "data": {"text": "next"}}
    # The open message is in the state: a restart at any line gives the same events.
    for k in range(1, len(MULTI_LINE_MESSAGE)):
        first, mid = parse_lines(path, MULTI_LINE_MESSAGE[:k])
        rest, _ = parse_lines(path, MULTI_LINE_MESSAGE[k:], orjson.loads(orjson.dumps(mid)))
        same = first + rest == records
        assert same, f"split at line {k}"


def test_a_growing_message_keeps_only_what_is_stored(tmp_path: Path) -> None:
    """The open message holds the event's own data, which ingest edits in place before it
    is stored (redacts, cuts, drops text): what the state keeps is what the store has. A
    part after a cut or omitted text is scanned as content; the stored text stays."""
    path = tmp_path / "s1.jsonl"
    one, two, three_four = (MULTI_LINE_MESSAGE[i] for i in (1, 3, 5))
    state = ADAPTER.initial_state(str(path))

    def message(line: tuple[int, dict[str, Any]]) -> Event:
        (event,) = events(ADAPTER.parse(line[1], line[0], str(path), state), MESSAGE)
        return event

    message(one).data["text"] = "[REDACTED:Secret Keyword]"  # as the scanner redacts
    redacted = message(two)
    assert (redacted.data, redacted.contents) == ({"text": "[REDACTED:Secret Keyword]\n\ntwo"}, [])

    state = ADAPTER.initial_state(str(path))
    message(one)
    message(two).data.update(text="one\n", text_chars=8, text_truncated=True)  # as if cut at 4
    after_cut = message(three_four)
    assert (after_cut.revision, after_cut.data, after_cut.contents) == (
        2,
        {"text_chars": 8 + 2 + len("three\nfour"), "text": "one\n", "text_truncated": True},
        [("text", "three\nfour")],
    )
    assert state["message"]["data"] is after_cut.data

    state = ADAPTER.initial_state(str(path))
    omitted = message(one).data  # scan.store_text = false: no text stored, none kept
    omitted.pop("text")
    omitted.update(text_omitted=True, text_chars=3)
    after_omitted = message(two)
    assert (after_omitted.data, after_omitted.contents) == ({"text_chars": 8}, [("text", "two")])


def test_fixture_prompt_drops_ide_context(fixture_records: list[Record]) -> None:
    prompts = events(fixture_records, PROMPT)
    assert [p.data for p in prompts] == [
        {"text": "Fix the flaky test\nin tests/test_io.py"},
        {"text": "Now ship it"},
    ]
    assert prompts[0].cwd == "/home/dev/demo"
    assert prompts[0].ts == "2026-05-01T10:00:00.000Z"


def test_fixture_usage_counts_each_message_once(fixture_records: list[Record]) -> None:
    usage = events(fixture_records, USAGE)
    per_message: Counter[str] = Counter()
    for e in usage:
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"):
            per_message[f"{e.key.split(':')[2]}.{name}"] += e.data[name]
    # msg_A1's three lines report output 2, 30, 80: the total is the final 80, not 112.
    assert per_message["msg_A1.output_tokens"] == 80
    assert per_message["msg_A1.input_tokens"] == 10
    assert per_message["msg_A1.cache_read_tokens"] == 100
    assert per_message["msg_A1.cache_creation_tokens"] == 50
    # The replayed msg_A3 line adds nothing; synthetic messages count no usage.
    assert per_message["msg_A3.output_tokens"] == 12
    assert not any(k.startswith("msg_S") for k in per_message)
    assert usage[0].data == {
        "input_tokens": 10,
        "output_tokens": 2,
        "cache_read_tokens": 100,
        "cache_creation_tokens": 50,
        "cache_creation_1h_tokens": 0,
        "reasoning_tokens": 0,
        "total_tokens": 162,
        "model": "claude-opus-4-7",
    }


def test_one_hour_cache_writes_are_kept_apart_and_keys_unchanged(tmp_path: Path) -> None:
    """usage.cache_creation.ephemeral_1h_input_tokens (a part of the cache writes, priced
    at its own rate) is kept as cache_creation_1h_tokens; an increase is keyed by the
    four counters as before, so a copy read by an older agentsrc dedupes with it, and
    carries its request's whole input, by which the request's price tier is judged."""

    def line(uuid: str, output: int, one_hour: int) -> dict[str, Any]:
        usage = {"input_tokens": 4, "output_tokens": output, "cache_read_input_tokens": 10,
                 "cache_creation_input_tokens": 300,
                 "cache_creation": {"ephemeral_5m_input_tokens": 300 - one_hour,
                                    "ephemeral_1h_input_tokens": one_hour}}
        obj = _assistant_line(uuid, "msg_H", _text(uuid))
        obj["message"].update(model="claude-opus-4-6", usage=usage)
        return obj

    records, _ = parse_lines(tmp_path / "s1.jsonl", [(0, line("h1", 5, 200)), (90, line("h2", 9, 200))])
    usage = events(records, USAGE)
    assert [(e.key, e.data) for e in usage] == [
        ("claude-code:usage:msg_H", {
            "input_tokens": 4, "output_tokens": 5, "cache_read_tokens": 10,
            "cache_creation_tokens": 300, "cache_creation_1h_tokens": 200,
            "reasoning_tokens": 0, "total_tokens": 319, "model": "claude-opus-4-6"}),
        ("claude-code:usage:msg_H:4.9.10.300", {
            "input_tokens": 0, "output_tokens": 4, "cache_read_tokens": 0,
            "cache_creation_tokens": 0, "cache_creation_1h_tokens": 0,
            "reasoning_tokens": 0, "total_tokens": 4, "model": "claude-opus-4-6",
            "request_input_tokens": 314}),
    ]


def test_fixture_tool_results(fixture_records: list[Record]) -> None:
    bash, read = events(fixture_records, TOOL_RESULT)
    assert bash.tool == "Bash" and bash.input == {
        "command": "pytest -q",
        "description": "Run tests",
    }
    assert [label for label, _ in bash.contents] == ["output", "stdout", "stderr"]
    assert bash.data == {
        "is_error": False,
        "exit_code": None,
        "duration_ms": None,
        "output_chars": len(bash.contents[0][1]),
        "interrupted": False,
    }
    # Spilled: the path is computed from the session file, not the one in the preview.
    assert bash.spill_path == str(FIXTURE.parent / FIXTURE_SID / "tool-results" / "toolu_A1.txt")
    assert read.tool == "Read" and read.spill_path is None
    assert [label for label, _ in read.contents] == ["output", "file"]
    assert read.data["is_error"] is None
    call = events(fixture_records, TOOL_CALL)[0]
    assert call.data == {"input": {"command": "pytest -q", "description": "Run tests"}}
    assert call.cwd == "/home/dev/demo"


def test_fixture_titles_prefer_rename_over_ai_title(fixture_records: list[Record]) -> None:
    titles = [r.title for r in fixture_records if isinstance(r, SessionFacts) and r.title]
    assert titles == ["Fix the flaky test", "Flaky test fix"]


def test_fixture_errors_compaction_and_drift(fixture_records: list[Record]) -> None:
    assert [e.data for e in events(fixture_records, ERROR)] == [
        {"message": "Overloaded", "error_type": "overloaded_error"},
        {"message": "API Error: 529 Overloaded", "error_type": "api_error_message"},
    ]
    assert events(fixture_records, COMPACTION)[0].data == {"trigger": "auto", "pre_tokens": 150000}
    assert [r.record_type for r in fixture_records if isinstance(r, Drift)] == [
        "x-future-record",
        "system/future_subtype",
        "assistant/future_block",
    ]
    models = [r.model for r in fixture_records if isinstance(r, SessionFacts) and r.model]
    assert models == ["claude-opus-4-7", "claude-sonnet-5"]


def test_fixture_summary_text_never_leaves_the_adapter(fixture_records: list[Record]) -> None:
    assert "SUMMARY-MUST-NOT-LEAK" not in repr(fixture_records)


def test_spill_path_rejects_unsafe_ids() -> None:
    base = "/h/.claude/projects/p/s1.jsonl"
    assert (
        claude.spill_path(base, "s1", "toolu_1")
        == "/h/.claude/projects/p/s1/tool-results/toolu_1.txt"
    )
    assert claude.spill_path(base, "s1", "../../etc/passwd") is None
    assert claude.spill_path(base, "../x", "toolu_1") is None
    nested = "/h/.claude/projects/p/s1/subagents/agent-a1.jsonl"
    assert (
        claude.spill_path(nested, "s1", "toolu_1")
        == "/h/.claude/projects/p/s1/tool-results/toolu_1.txt"
    )
    # Subagents of subagents still spill into the session's directory.
    for deeper in (
        "/h/.claude/projects/p/s1/subagents/agent-a1/subagents/agent-b2.jsonl",
        "/h/.claude/projects/p/s1/subagents/x/agent-b2.jsonl",
    ):
        assert (
            claude.spill_path(deeper, "s1", "toolu_1")
            == "/h/.claude/projects/p/s1/tool-results/toolu_1.txt"
        )


def test_session_id_falls_back_to_the_path() -> None:
    record = {"type": "user", "uuid": "u1", "message": {"content": "hi"}}
    nested = "/h/p/sess-9/subagents/agent-a1/subagents/agent-b2.jsonl"
    (prompt,) = events(ADAPTER.parse(record, 0, nested, ADAPTER.initial_state(nested)))
    assert (prompt.kind, prompt.session_id, prompt.subagent_id) == (
        PROMPT,  # no sidechain root: not a brief
        "claude-code:sess-9",
        "b2",
    )
    record = {"type": "custom-title", "customTitle": "T"}
    main = "/h/p/sess-3.jsonl"
    (facts,) = ADAPTER.parse(dict(record), 0, main, ADAPTER.initial_state(main))
    assert isinstance(facts, SessionFacts) and facts.native_id == "sess-3" and facts.title == "T"


def test_record_without_uuid_uses_its_line_key() -> None:
    path = "/h/p/s.jsonl"
    state = ADAPTER.initial_state(path)
    out = ADAPTER.parse(
        {"type": "user", "sessionId": "s", "message": {"content": "hello"}}, 77, path, state
    )
    prompt = events(out, PROMPT)[0]
    assert prompt.key == line_key(path, 77) and prompt.turn_id == line_key(path, 77)


@pytest.mark.parametrize(
    ("odd", "ts"),
    [
        ("²", "²"),  # what cannot be read is kept as written
        ("9" * 5000, "9" * 5000),
        (1e300, None),
        (-1, "1969-12-31T23:59:59.000Z"),
        ("", None),
        (True, None),
    ],
)
def test_odd_timestamps_never_stop_a_line(odd: Any, ts: str | None) -> None:
    path = "/h/p/s.jsonl"
    record = {"type": "user", "uuid": "u", "timestamp": odd, "message": {"content": "hi"}}
    out = ADAPTER.parse(record, 0, path, ADAPTER.initial_state(path))
    assert [e.kind for e in events(out)] == [TURN_START, PROMPT]
    assert events(out, PROMPT)[0].ts == ts


def test_fixture_restart_at_every_line() -> None:
    lines = read_lines(FIXTURE)
    one_pass, _ = parse_lines(FIXTURE, lines)
    for k in range(len(lines) + 1):
        first, state = parse_lines(FIXTURE, lines[:k])
        rest, _ = parse_lines(FIXTURE, lines[k:], orjson.loads(orjson.dumps(state)))
        assert first + rest == one_pass, k


# -- properties -----------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELD_NAMES = [
    "type", "subtype", "uuid", "parentUuid", "sessionId", "timestamp", "cwd", "version",
    "isSidechain", "isMeta", "isCompactSummary", "agentId", "promptId", "message",
    "toolUseResult", "compactMetadata", "customTitle", "aiTitle", "error", "cause",
    "isApiErrorMessage",
]  # fmt: skip
message_values = st.fixed_dictionaries(
    {},
    optional={
        "id": json_scalars,
        "model": st.sampled_from(["m", "<synthetic>"]) | json_scalars,
        "content": json_values
        | st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(
                        ["text", "thinking", "tool_use", "tool_result", "image", "odd"]
                    )
                },
                optional={
                    "text": json_values,
                    "id": json_scalars,
                    "tool_use_id": json_scalars,
                    "name": json_scalars,
                    "input": json_values,
                    "content": json_values,
                    "is_error": json_values,
                },
            ),
            max_size=3,
        ),
        "usage": json_values
        | st.dictionaries(st.sampled_from(["input_tokens", "output_tokens"]), json_values),
    },
)
claude_dicts = st.dictionaries(
    st.sampled_from(FIELD_NAMES) | st.text(max_size=6), json_values, max_size=8
).flatmap(
    lambda d: st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                sorted(claude.HANDLED_RECORD_TYPES | claude.IGNORED_RECORD_TYPES)
            )
            | json_values,
            "subtype": st.sampled_from(["compact_boundary", "api_error", "turn_duration", "x"])
            | json_values,
            "message": message_values | json_values,
        }
    ).map(lambda extra: {**d, **extra})
)


def assert_well_behaved(records: list[Record], state: dict[str, Any]) -> None:
    """What ``parse`` returned on odd input (that it returned at all is the first check:
    adapters do not catch their own bugs, ingest counts them as ``adapter_error``)."""
    assert orjson.loads(orjson.dumps(state)) == state  # stays plain JSON
    for r in records:
        assert isinstance(r, Event | SessionFacts | TurnFacts | Drift)
        if isinstance(r, Event):
            orjson.dumps(r.data)  # storable


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(claude_dicts, min_size=1, max_size=6))
def test_never_raises_on_odd_dicts(objs: list[dict[str, Any]]) -> None:
    path = "/h/.claude/projects/p/s.jsonl"
    state = ADAPTER.initial_state(path)
    for i, obj in enumerate(objs):
        assert_well_behaved(ADAPTER.parse(obj, i * 10, path, state), state)


def _sample_corpus_lines() -> list[dict[str, Any]]:
    picked: list[dict[str, Any]] = []
    for path in sorted(projects().rglob("*.jsonl")):
        lines = [obj for _, obj in read_lines(path) if len(orjson.dumps(obj)) < 20_000]
        picked += lines[:: max(1, len(lines) // 12)]
    return picked


def _mutate(draw: Callable[..., Any], value: Any, depth: int = 0) -> Any:
    """Replace, drop or keep one spot of a JSON value, recursively."""
    if isinstance(value, dict) and value and depth < 4:
        key = draw(st.sampled_from(sorted(value)))
        action = draw(st.sampled_from(["replace", "delete", "descend"]))
        out = dict(value)
        if action == "delete":
            del out[key]
        elif action == "replace":
            out[key] = draw(json_values)
        else:
            out[key] = _mutate(draw, value[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 4:
        i = draw(st.integers(0, len(value) - 1))
        out_list = list(value)
        out_list[i] = _mutate(draw, value[i], depth + 1)
        return out_list
    return draw(json_values)


class Sample(list[dict[str, Any]]):
    def __repr__(self) -> str:
        return f"<{len(self)} corpus lines>"


@pytest.fixture(scope="module")
def corpus_sample() -> Sample:
    return Sample(_sample_corpus_lines())


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_never_raises_on_mutated_real_lines(
    data: st.DataObject, corpus_sample: list[dict[str, Any]]
) -> None:
    path = "/h/.claude/projects/p/s/subagents/agent-a1.jsonl"
    state = ADAPTER.initial_state(path)
    for i in range(3):
        # Draw an index, not the line: a failing example then prints no transcript text.
        original = corpus_sample[data.draw(st.integers(0, len(corpus_sample) - 1))]
        mutated = _mutate(data.draw, original)
        if not isinstance(mutated, dict):
            continue
        first = ADAPTER.parse(mutated, i, path, state)
        assert_well_behaved(first, state)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(claude_dicts, min_size=1, max_size=5), st.integers(0, 5))
def test_same_lines_same_records_and_restart(objs: list[dict[str, Any]], k: int) -> None:
    path = "/h/.claude/projects/p/s.jsonl"
    lines = list(enumerate(objs))
    a, _ = parse_lines(Path(path), lines)
    b, _ = parse_lines(Path(path), lines)
    assert a == b
    k = min(k, len(lines))
    first, state = parse_lines(Path(path), lines[:k])
    rest, _ = parse_lines(Path(path), lines[k:], orjson.loads(orjson.dumps(state)))
    assert [dataclasses.asdict(r) for r in first + rest] == [dataclasses.asdict(r) for r in a]
