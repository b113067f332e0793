"""The Pi adapter. No clean public Pi session exists: the fixtures are made up, in the
shapes of pi-mono's docs/session.md and session-manager.ts (docs/formats.md, Pi): a
version-3 session with every entry type, a version-1 session (no ids, the bash tool's
older failure text), and a fork of the first. Each is counted exactly against
tests/raw_counts_qwen_amp_pi.py's independent count of its raw records."""

from __future__ import annotations

import copy
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
from adapter_counts import adapter_counts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_counts_qwen_amp_pi import pi_counts

from agentsrc_daemon.adapters.pi import ADAPTER, RULES, content_key, exit_code
from agentsrc_daemon.events import (
    CLAIM_COPY,
    CLAIM_OWN,
    COMPACTION,
    DIRECTIVE,
    ERROR,
    PROMPT,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    USAGE,
    Drift,
    Event,
    Record,
    SessionFacts,
    TurnFacts,
)

from adapter_lines import parse_lines_with, read_lines
from raw_counts import USAGE_KEYS, Counts

SESSIONS = Path(__file__).parent / "fixtures" / "pi" / "sessions" / "--home-dev-shop--"
V3 = SESSIONS / "2026-01-01T10-00-00-000Z_5e551011-0000-4000-8000-000000000001.jsonl"
V1 = SESSIONS / "2025-11-20T08-00-00-000Z_5e551011-0000-4000-8000-000000000002.jsonl"
FORK = SESSIONS / "2026-01-02T09-00-00-000Z_5e551011-0000-4000-8000-000000000003.jsonl"


class S(NamedTuple):
    prompts: int
    briefs: int
    messages: int
    tool_calls: int
    commands: dict[int | None, int]
    edits: dict[str, int]
    usage: tuple[int, ...]
    cost: Decimal


def summary(c: Counts, cost: Decimal) -> S:
    return S(c.prompts, c.briefs, c.messages, c.tool_calls, dict(Counter(c.commands)),
             dict(Counter(op for _, op in c.edits)), tuple(c.usage[k] for k in USAGE_KEYS), cost)


# fmt: off
EXPECTED = {
    V3: S(2, 1, 3, 6, {0: 2, 1: 1, 2: 1, None: 1}, {"update": 1, "write": 1},
          (3538, 212, 12820, 3330, 0, 19900), Decimal("0.023155")),
    V1: S(1, 0, 1, 1, {2: 1}, {}, (15, 29, 1500, 1560, 0, 3104), Decimal("0.0067625")),
    FORK: S(2, 0, 3, 6, {0: 1, 1: 1}, {"update": 2, "write": 1},
            (51, 270, 19620, 3450, 0, 23391), Decimal("0.02218")),
}
# fmt: on


def parse(path: Path) -> list[Record]:
    return parse_lines_with(ADAPTER, path, read_lines(path))[0]


def events(records: list[Record], kind: str | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


def facts(records: list[Record]) -> list[SessionFacts]:
    return [r for r in records if isinstance(r, SessionFacts)]


@pytest.mark.parametrize("path", sorted(EXPECTED), ids=lambda p: p.name[-12:])
def test_exact_counts_against_the_raw_records(path: Path) -> None:
    raw, raw_cost = pi_counts(path)
    assert summary(raw, raw_cost) == EXPECTED[path]
    records = parse(path)
    assert adapter_counts(records) == (raw, raw_cost)
    assert not [r for r in records if isinstance(r, Drift)]
    keys = [e.key for e in events(records)]
    assert len(keys) == len(set(keys))


def test_v3_session() -> None:
    records = parse(V3)
    sid = "pi:5e551011-0000-4000-8000-000000000001"
    assert {e.session_id for e in events(records)} == {sid}
    assert facts(records)[0].cwd == "/home/dev/shop" and facts(records)[0].version == "session-v3"
    assert [f.model for f in facts(records) if f.model] == ["claude-sonnet-4-5", "gpt-5"]
    assert [f.title for f in facts(records) if f.title] == ["Fix the failing test in cart.py", "Cart total fix"]
    results = {e.call_id: (e.tool, e.data["exit_code"], e.data["is_error"], e.data["interrupted"])
               for e in events(records, TOOL_RESULT) if e.call_id}
    assert results == {
        "toolu_p1": ("read", None, False, False), "toolu_p2": ("bash", 1, True, False),
        "toolu_p3": ("edit", None, False, False), "toolu_p4": ("bash", 0, False, False),
        "toolu_p5": ("write", None, False, False), "call_p6": ("bash", None, True, True),
    }
    typed = [e for e in events(records, TOOL_RESULT) if e.tool == "user_bash"]
    assert [(e.data["exit_code"], e.data["in_context"], bool(e.contents)) for e in typed] == [
        (0, True, True), (2, False, False)]  # !! keeps the output from the model: not scanned
    assert len(events(records, TOOL_CALL)) == 6  # a person's ! command is no tool call
    assert [e.data for e in events(records, COMPACTION)] == [{"trigger": None, "pre_tokens": 3400}]
    assert [e.data["source"] for e in events(records, DIRECTIVE)] == ["reminder-ext"]
    assert [e.data["message"] for e in events(records, ERROR)] == ["429 Too Many Requests"]
    # The aborted answer ends the second turn, aborted.
    assert [(e.data["status"], e.data["reason"]) for e in events(records, TURN_END)] == [
        ("complete", None), ("aborted", "interrupted")]
    assert {e.data["provider"] for e in events(records, USAGE)} == {"anthropic", "openai"}
    assert [(t.turn_id, t.model) for t in records if isinstance(t, TurnFacts) and t.model] == [
        (events(records, PROMPT)[0].key, "claude-sonnet-4-5"), (events(records, PROMPT)[1].key, "gpt-5")]


def test_keys_survive_a_migration_rewrite() -> None:
    """Pi rewrites a version-1 file when it migrates it: new ids on every entry, the
    header's version. The keys are the entries' content keys: the same."""
    lines = [orjson.loads(raw) for raw in V1.read_bytes().splitlines()]
    migrated = copy.deepcopy(lines)
    migrated[0]["version"] = 3
    previous = None
    for i, entry in enumerate(migrated[1:]):
        entry["id"], entry["parentId"] = f"{i:08x}", previous
        previous = entry["id"]
    path = str(V1)
    state = ADAPTER.initial_state(path)
    after = [r for i, obj in enumerate(migrated) for r in ADAPTER.parse(obj, i * 100, path, state)]
    assert [e.key for e in events(after)] == [e.key for e in events(parse(V1))]
    assert [content_key(a) for a in lines[1:]] == [content_key(b) for b in migrated[1:]]


def test_a_fork_holds_its_parents_entries_as_copies() -> None:
    parent = {e.key: e for e in events(parse(V3))}
    fork = parse(FORK)
    copies = [e for e in events(fork) if e.claim == CLAIM_COPY]
    own = [e for e in events(fork) if e.claim == CLAIM_OWN]
    assert copies and all(e.key in parent and parent[e.key].claim == CLAIM_OWN for e in copies)
    assert all(e.key not in parent for e in own)
    assert [e.data["text"] for e in own if e.kind == PROMPT] == ["Also add a test for an empty cart"]
    assert facts(fork)[0].parent_session_id == "pi:5e551011-0000-4000-8000-000000000001"


def test_drift_and_ignored_types() -> None:
    path = str(V3)
    state = ADAPTER.initial_state(path)
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/a"},
        {"type": "label", "timestamp": "2026-01-01T00:00:01Z", "targetId": "x", "label": "l"},
        {"type": "brand_new", "timestamp": "2026-01-01T00:00:02Z"},
        {"type": "message", "timestamp": "2026-01-01T00:00:03Z", "message": {"role": "narrator"}},
        {"type": "message", "timestamp": "2026-01-01T00:00:04Z",
         "message": {"role": "assistant", "content": [{"type": "audio"}]}},
    ]
    drift = [r for i, obj in enumerate(lines) for r in ADAPTER.parse(obj, i, path, state) if isinstance(r, Drift)]
    assert [(d.version, d.record_type) for d in drift] == [
        ("session-v3", "brand_new"), ("session-v3", "message/narrator"), ("session-v3", "assistant/audio")]


@pytest.mark.parametrize(
    ("text", "is_error", "code"),
    [
        ("F\n\nCommand exited with code 1", True, 1),
        ("Command exited with code 2\nls: cannot access", True, 2),  # before December 2025
        ("ok", False, 0),
        ("Command aborted", True, None),
        ("partial\n\nCommand timed out after 5 seconds", True, None),
    ],
)
def test_bash_exit_codes(text: str, is_error: bool, code: int | None) -> None:
    assert exit_code(text, is_error) == code


json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "toolResult", "bashExecution", "custom"]) | json_values},
    optional={"content": json_values | st.lists(st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "thinking", "toolCall"]) | json_values},
        optional={"text": json_values, "id": st.sampled_from(["c1", "c2"]) | json_values,
                  "name": st.sampled_from(["bash", "edit"]) | json_values, "arguments": json_values}), max_size=3),
              "usage": json_values, "toolCallId": st.sampled_from(["c1", "c2"]) | json_values,
              "toolName": json_values, "isError": json_values, "command": json_values, "exitCode": json_values,
              "model": json_values, "stopReason": json_values})
entries = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted((RULES.record_types or frozenset()) | RULES.ignored_types)) | json_values},
    optional={"timestamp": st.sampled_from(["2025-12-31T00:00:00Z", "2026-01-02T00:00:00Z"]) | json_values,
              "id": json_values, "version": json_values, "cwd": json_values, "parentSession": json_values,
              "message": messages | json_values, "modelId": json_values, "name": json_values,
              "tokensBefore": json_values, "content": json_values})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entries, min_size=1, max_size=6))
def test_parse_never_raises_and_is_deterministic(objs: list[dict[str, Any]]) -> None:
    def run(lines: list[dict[str, Any]]) -> tuple[list[Record], dict[str, Any]]:
        state = ADAPTER.initial_state(str(FORK))
        out: list[Record] = []
        for i, obj in enumerate(lines):
            out += ADAPTER.parse(obj, i * 10, str(FORK), state)
        return out, state

    first, state = run(objs)
    assert run(copy.deepcopy(objs))[0] == first
    orjson.dumps(state)
    assert all(isinstance(r, Event | SessionFacts | TurnFacts | Drift) for r in first)


@pytest.mark.parametrize("path", sorted(EXPECTED), ids=lambda p: p.name[-12:])
def test_record_kinds_for_the_fidelity_tally(path: Path) -> None:
    # Every line named once: its entry type, a message by its role (counted from the raw
    # lines here); the version is the session format's.
    raw = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    want = Counter(o["type"] if o["type"] != "message" else f"message/{o['message']['role']}" for o in raw)
    state = ADAPTER.initial_state(str(path))
    kinds = []
    for offset, obj in enumerate(raw):
        ADAPTER.parse(obj, offset, str(path), state)
        kinds.append(ADAPTER.record_kind(obj, state))
    assert Counter(t for _, t, _ in kinds) == want
    assert {v for v, _, _ in kinds} == {"session-v1" if path == V1 else "session-v3"}
    assert {t for _, t, ignored in kinds if ignored} == (
        {"custom", "label", "thinking_level_change"} if path == V3
        else {"thinking_level_change"} if path == FORK else set()
    )
    assert ADAPTER.record_kind([], state) == ("session-v3" if path != V1 else "session-v1", "<not an object>", False)
