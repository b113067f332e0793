"""The Muse adapter against hand-written fixtures (no real Muse transcript is public) and
property tests. The fixtures cover the odd cases the provider notes describe: epoch-second
timestamps, message_parts, success false, dotted runtime sources, "[Subagent Context]"
prompts, developer messages, a compaction summary that must never come out, a missing
seq, unknown item and record types."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.adapters import muse
from agentsrc_daemon.adapters.muse import ADAPTER
from agentsrc_daemon.events import (
    COMPACTION,
    DIRECTIVE,
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Drift,
    Event,
    Record,
    SessionFacts,
    TurnFacts,
    line_key,
)

from adapter_lines import parse_document_with, parse_lines_with, read_lines

AGENTS = Path(__file__).parent / "fixtures" / "muse" / "agents"
SCOUT = AGENTS / "scout" / "sessions" / "scout.jsonl"
HELPER = AGENTS / "helper" / "sessions" / "helper.jsonl"
SENTINEL = "SUMMARY-SENTINEL-7f3a"


def parse_lines(
    path: Path, lines: list[tuple[int, Any]], state: dict[str, Any] | None = None
) -> tuple[list[Record], dict[str, Any]]:
    return parse_lines_with(ADAPTER, path, lines, state)


def events(records: list[Record], kind: str | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


@pytest.fixture(scope="module")
def scout() -> list[Record]:
    return parse_lines(SCOUT, read_lines(SCOUT))[0]


@pytest.fixture(scope="module")
def helper() -> list[Record]:
    return parse_lines(HELPER, read_lines(HELPER))[0]


def k(seq: int | str) -> str:
    return f"muse:sess-scout-1:{seq}"


def test_scout_event_sequence(scout: list[Record]) -> None:
    missing_seq = line_key(str(SCOUT), read_lines(SCOUT)[12][0])
    turn1, turn2 = k(2), k(19)
    assert [(e.kind, e.key, e.turn_id) for e in events(scout)] == [
        (TURN_START, f"{turn1}:start", turn1),
        (PROMPT, k(2), turn1),
        (REASONING, k(3), turn1),
        (MESSAGE, k(4), turn1),
        (TOOL_CALL, k(5), turn1),
        (TOOL_RESULT, k(6), turn1),
        (TOOL_CALL, k(7), turn1),
        (TOOL_RESULT, k(8), turn1),
        (TOOL_CALL, k(9), turn1),
        (TOOL_RESULT, k(10), turn1),
        (TOOL_CALL, k(11), turn1),
        (TOOL_RESULT, missing_seq, turn1),
        (TOOL_CALL, k(13), turn1),
        (TOOL_CALL, k(14), turn1),
        (MESSAGE, k(15), turn1),
        (TURN_END, f"{turn1}:end", turn1),
        (DIRECTIVE, k(16), None),
        (DIRECTIVE, k(17), None),
        (COMPACTION, k(18), None),
        (TURN_START, f"{turn2}:start", turn2),
        (PROMPT, k(19), turn2),
        (MESSAGE, k(20), turn2),
        (TOOL_RESULT, k(23), turn2),
        (COMPACTION, "muse:sess-scout-1:compaction:2", turn2),
    ]
    assert {e.session_id for e in events(scout)} == {"muse:sess-scout-1"}
    assert {e.adapter for e in events(scout)} == {"muse"}


def test_developer_messages_are_skipped(scout: list[Record]) -> None:
    assert all(e.offset != read_lines(SCOUT)[1][0] for e in events(scout))


def test_prompts_directives_and_sources(scout: list[Record]) -> None:
    assert [e.data for e in events(scout, PROMPT)] == [
        {
            "text": "Rename the config loader\nand keep the old name as an alias.",
            "source": "runtime",
        },
        {"text": "Now update the docs\nin README.md too", "source": "runtime"},
    ]
    assert [e.data for e in events(scout, DIRECTIVE)] == [
        {"text": "Feed digest: 3 new items", "source": "runtime.feed"},
        {"text": "Nightly check: run the linters", "source": "scheduler.cron"},
    ]
    assert {e.data.get("source") for e in events(scout) if e.kind not in (TURN_START, TURN_END)} - {
        None
    } == {"runtime", "runtime.feed", "scheduler.cron"}
    assert [e.data for e in events(scout, MESSAGE)] == [
        {"text": "Reading the loader.", "source": "runtime"},  # commentary_text
        {"text": "Renamed; the alias lives in src/alias.py.", "source": "runtime"},
        {"text": "Docs updated.", "source": "runtime"},  # message_parts
    ]
    assert events(scout, REASONING)[0].data == {"chars": 25, "source": "runtime"}


def test_title_is_the_first_real_prompt(scout: list[Record]) -> None:
    titles = [r.title for r in scout if isinstance(r, SessionFacts) and r.title]
    assert titles == ["Rename the config loader"]


def test_tool_calls_are_normalized(scout: list[Record]) -> None:
    calls = events(scout, TOOL_CALL)
    assert [(c.tool, c.call_id, c.input) for c in calls] == [
        ("Read", "call_read_1", {"file_path": "src/config.py"}),
        (
            "Edit",
            "call_edit_1",
            {
                "file_path": "src/config.py",
                "old_string": "def load():",
                "new_string": "def load_config():",
            },
        ),
        ("Bash", "call_exec_1", {"command": "pytest -q", "timeout": 120}),
        (
            "Write",
            "call_write_1",
            {"file_path": "src/alias.py", "content": "from config import load_config as load\n"},
        ),
        ("memory_search", "call_mem_1", {"query": "config loader"}),
        ("subagent.spawn", "call_spawn_1", {"raw": "{not json"}),
    ]
    # What is stored: content fields reduced to their size.
    assert calls[1].data == {
        "input": {
            "file_path": "src/config.py",
            "old_string": {"omitted_chars": 11},
            "new_string": {"omitted_chars": 18},
        },
        "source": "runtime",
    }


def test_tool_results_pair_with_their_calls(scout: list[Record]) -> None:
    results = events(scout, TOOL_RESULT)
    assert [(r.tool, r.call_id, r.data["is_error"], r.data["output_chars"]) for r in results] == [
        ("Read", "call_read_1", False, 26),
        ("Edit", "call_edit_1", True, 35),  # success: false
        ("Bash", "call_exec_1", False, 17),
        ("Write", "call_write_1", False, 12),
        (None, "call_ghost", False, 11),  # a result for a call never seen
    ]
    calls = {c.call_id: c for c in events(scout, TOOL_CALL)}
    for r in results[:4]:
        assert r.input == calls[r.call_id].input
        assert r.contents[0][0] == "output"
    assert results[4].input is None
    assert results[4].contents == [("output", '{"ok":true}')]
    assert set(results[0].data) == {
        "is_error",
        "exit_code",
        "duration_ms",
        "output_chars",
        "interrupted",
        "source",
    }


def test_timestamps_epoch_seconds_and_iso(scout: list[Record]) -> None:
    compactions = events(scout, COMPACTION)
    assert [c.ts for c in compactions] == ["2026-03-02T09:30:00.000Z", "2026-03-02T09:32:00.500Z"]
    assert events(scout, PROMPT)[1].ts == "2026-03-02T09:31:00.000Z"  # "1772443860"
    assert events(scout, PROMPT)[0].ts == "2026-03-02T09:00:02.000Z"
    assert [c.data for c in compactions] == [
        {"trigger": "auto", "pre_tokens": None},
        {"trigger": "manual", "pre_tokens": None},
    ]


def test_turns(scout: list[Record]) -> None:
    turns = [r for r in scout if isinstance(r, TurnFacts)]
    assert turns == [
        TurnFacts("muse:sess-scout-1", k(2), started_at="2026-03-02T09:00:02.000Z", status="open"),
        # The first turn ends with its last event, before the feed directive.
        TurnFacts("muse:sess-scout-1", k(2), ended_at="2026-03-02T09:00:15.000Z", status="complete"),
        TurnFacts("muse:sess-scout-1", k(19), started_at="2026-03-02T09:31:00.000Z", status="open"),
    ]
    assert events(scout, TURN_END)[0].data == {"status": "complete", "reason": None}


def test_unknown_types_are_drift(scout: list[Record]) -> None:
    assert [r for r in scout if isinstance(r, Drift)] == [
        Drift("muse", "unknown", "item/image_generation"),
        Drift("muse", "unknown", "runtime_state"),
    ]


def test_session_facts(scout: list[Record]) -> None:
    facts = [r for r in scout if isinstance(r, SessionFacts)]
    assert facts[0].started_at == "2026-03-02T09:00:00.000Z"  # the header
    assert {f.native_id for f in facts} == {"sess-scout-1"}
    assert facts[-1].last_event_at == "2026-03-02T09:32:00.500Z"
    assert all(f.model is None for f in facts)  # the model comes from sessions.json


def test_compaction_summary_never_comes_out(scout: list[Record]) -> None:
    assert SENTINEL not in repr(scout)
    state = parse_lines(SCOUT, read_lines(SCOUT))[1]
    assert SENTINEL not in orjson.dumps(state).decode()


def test_subagent_context_is_a_directive_never_a_prompt_nor_a_title(helper: list[Record]) -> None:
    # The brief a delegating agent sends ("[Subagent Context]") was typed by no person
    # (adapters/injected.py): a directive, outside any turn.
    assert events(helper, PROMPT) == []
    (brief,) = events(helper, DIRECTIVE)
    assert brief.data["text"].startswith("[Subagent Context]")
    assert [r.title for r in helper if isinstance(r, SessionFacts) and r.title] == []
    assert len(events(helper, TURN_START)) == 0
    # "+02:00" offsets become UTC.
    facts = [r for r in helper if isinstance(r, SessionFacts)]
    assert facts[0].started_at == "2026-03-02T09:00:00.000Z"
    assert {e.session_id for e in events(helper)} == {"muse:sess-helper-7"}


def test_headerless_file_uses_the_agent_id() -> None:
    path = "/agents/solo/sessions/solo.jsonl"
    state = ADAPTER.initial_state(path)
    out = ADAPTER.parse(
        {"type": "item", "seq": 4, "item": {"type": "message", "role": "user", "text": "hi"}},
        0,
        path,
        state,
    )
    assert [(e.kind, e.key, e.session_id) for e in events(out)] == [
        (TURN_START, "muse:solo:4:start", "muse:solo"),
        (PROMPT, "muse:solo:4", "muse:solo"),
    ]
    assert events(out, PROMPT)[0].data == {"text": "hi", "source": None}


def test_sessions_json_documents() -> None:
    scout_index = SCOUT.parent / "sessions.json"
    assert parse_document_with(ADAPTER, orjson.loads(scout_index.read_bytes()), str(scout_index)) == [
        SessionFacts("muse:sess-scout-1", "muse", "sess-scout-1", model="muse-pro-1")
    ]
    helper_index = HELPER.parent / "sessions.json"
    assert parse_document_with(ADAPTER, orjson.loads(helper_index.read_bytes()), str(helper_index)) == [
        SessionFacts("muse:sess-helper-7", "muse", "sess-helper-7", model="muse-mini-1")
    ]
    path = "/agents/solo/sessions/sessions.json"
    # Top level without a session id: the agent of the directory.
    assert parse_document_with(ADAPTER, {"context_window_usage": {"model_id": "m1"}}, path) == [
        SessionFacts("muse:solo", "muse", "solo", model="m1")
    ]
    # Keyed by session id, at the top level or under "sessions".
    keyed = {"s-1": {"context_window_usage": {"model_id": "m1"}}}
    assert parse_document_with(ADAPTER, keyed, path) == [
        SessionFacts("muse:s-1", "muse", "s-1", model="m1")
    ]
    assert parse_document_with(ADAPTER, {"sessions": keyed}, path) == [
        SessionFacts("muse:s-1", "muse", "s-1", model="m1")
    ]
    for odd in (None, [], [1, 2], "x", 3, {"sessions": "x"}, {"context_window_usage": 5}):
        assert parse_document_with(ADAPTER, odd, path) == []


def test_tool_mapping_helpers() -> None:
    assert muse.map_tool("edit", {"path": "a", "old_text": "x", "new_text": "y", "n": 1}) == (
        "Edit",
        {"file_path": "a", "old_string": "x", "new_string": "y", "n": 1},
    )
    assert muse.map_tool("exec", {"command": "ls", "path": "kept"}) == (
        "Bash",
        {"command": "ls", "path": "kept"},
    )
    assert muse.map_tool("memory.search", {"path": "p"}) == ("memory.search", {"path": "p"})
    assert muse.parse_arguments('["a"]') == {"raw": '["a"]'}
    assert muse.parse_arguments({"a": 1}) == {"a": 1}
    assert muse.parse_arguments(None) == {}
    assert muse.is_directive_source("runtime.self_improvement")
    assert not muse.is_directive_source("runtime")
    assert not muse.is_directive_source(None)


def test_message_parts_keep_only_text_parts() -> None:
    path = "/agents/a/sessions/a.jsonl"
    parts = [
        {"type": "text", "text": "first"},
        {"type": "image", "text": "alt text, not words of the message"},
        {"text": "untyped"},
        "bare",
    ]
    record = {
        "type": "item",
        "seq": 1,
        "item": {"type": "message_parts", "role": "assistant", "parts": parts},
    }
    (message,) = events(ADAPTER.parse(record, 0, path, ADAPTER.initial_state(path)))
    assert message.data == {"text": "first\nuntyped\nbare", "source": None}


@pytest.mark.parametrize(
    ("odd", "ts"),
    [
        ("²", "²"),  # what cannot be read is kept as written
        ("9" * 5000, None),  # read as epoch seconds: far out of range
        ("1" * 25, None),
        (1e300, None),
        (True, None),
    ],
)
def test_odd_seq_and_timestamps(odd: Any, ts: str | None) -> None:
    path = "/agents/a/sessions/a.jsonl"
    record = {"type": "item", "seq": odd, "created_at": odd, "item": {"type": "thinking"}}
    (event,) = events(ADAPTER.parse(record, 5, path, ADAPTER.initial_state(path)))
    assert (event.key, event.ts) == (line_key(path, 5), ts)


@pytest.mark.parametrize("path", [SCOUT, HELPER])
def test_restart_at_every_line(path: Path) -> None:
    lines = read_lines(path)
    one_pass, _ = parse_lines(path, lines)
    assert parse_lines(path, lines)[0] == one_pass  # same lines -> same records
    for split in range(len(lines) + 1):
        first, state = parse_lines(path, lines[:split])
        rest, _ = parse_lines(path, lines[split:], orjson.loads(orjson.dumps(state)))
        assert first + rest == one_pass, split


# -- properties -----------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
items = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(muse.HANDLED_ITEM_TYPES) + ["odd"]) | json_values},
    optional={
        "role": st.sampled_from(["user", "assistant", "developer", "x"]) | json_values,
        "text": json_values,
        "parts": json_values | st.lists(st.fixed_dictionaries({"text": json_values}), max_size=3),
        "thinking": json_values,
        "call_id": st.sampled_from(["c1", "c2"]) | json_values,
        "name": st.sampled_from(["exec", "edit", "read", "write", "x.y"]) | json_values,
        "arguments": json_values | st.just('{"path": "a", "old_text": 1}'),
        "output": json_values,
        "success": json_values,
    },
)
muse_dicts = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["session_header", "item", "compaction_checkpoint", "x"])
        | json_values
    },
    optional={
        "seq": st.integers(-3, 50) | json_values,
        "source": st.sampled_from(["runtime", "runtime.feed", "scheduler.cron"]) | json_values,
        "created_at": json_values
        | st.sampled_from(["2026-01-01T00:00:00Z", "1772443860", "1772443860.25"]),
        "item": items | json_values,
        "session_id": json_values,
        "agent_id": json_values,
        "compaction_id": json_values,
        "trigger": json_values,
        "summary": st.just(SENTINEL),
        "pre_tokens": json_values,
    },
)


def _mutate(draw: Callable[..., Any], value: Any, depth: int = 0) -> Any:
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
    return draw(json_values)


def assert_well_behaved(records: list[Record], state: dict[str, Any]) -> None:
    """What ``parse`` returned on odd input (that it returned at all is the first check:
    adapters do not catch their own bugs, ingest counts them as ``adapter_error``)."""
    assert orjson.loads(orjson.dumps(state)) == state
    assert SENTINEL not in repr(records)
    for r in records:
        assert isinstance(r, Event | SessionFacts | TurnFacts | Drift)
        if isinstance(r, Event):
            orjson.dumps(r.data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(muse_dicts, min_size=1, max_size=6))
def test_never_raises_on_odd_dicts(objs: list[dict[str, Any]]) -> None:
    path = "/agents/a/sessions/a.jsonl"
    state = ADAPTER.initial_state(path)
    for i, obj in enumerate(objs):
        assert_well_behaved(ADAPTER.parse(obj, i, path, state), state)


FIXTURE_LINES = [obj for _, obj in read_lines(SCOUT) + read_lines(HELPER) if isinstance(obj, dict)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_never_raises_on_mutated_fixture_lines(data: st.DataObject) -> None:
    path = "/agents/a/sessions/a.jsonl"
    state = ADAPTER.initial_state(path)
    for i in range(4):
        mutated = _mutate(data.draw, data.draw(st.sampled_from(FIXTURE_LINES)))
        if isinstance(mutated, dict):
            assert_well_behaved(ADAPTER.parse(mutated, i, path, state), state)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(muse_dicts, min_size=1, max_size=5), st.integers(0, 5))
def test_same_lines_same_records_and_restart(objs: list[dict[str, Any]], split: int) -> None:
    path = Path("/agents/a/sessions/a.jsonl")
    lines = list(enumerate(objs))
    one_pass, _ = parse_lines(path, lines)
    assert parse_lines(path, lines)[0] == one_pass
    split = min(split, len(lines))
    first, state = parse_lines(path, lines[:split])
    rest, _ = parse_lines(path, lines[split:], orjson.loads(orjson.dumps(state)))
    assert [dataclasses.asdict(r) for r in first + rest] == [
        dataclasses.asdict(r) for r in one_pass
    ]
