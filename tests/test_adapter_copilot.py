"""The Copilot CLI adapter against the real corpus (exact counts computed once from the
data; usage totals equal to the sessions' own shutdown totals), a hand-written fixture
for what the corpus lacks (compaction, truncation, sub-agents, resume with a second
shutdown, directives, str_replace_editor, user-requested tools), and property tests.

Nothing of a transcript is printed or asserted verbatim: counts, ids, models, kinds,
digests of titles and paths only.
"""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.adapters import copilot
from agentsrc_daemon.adapters.common import MAX_COUNT
from agentsrc_daemon.adapters.copilot import ADAPTER
from agentsrc_daemon.derive.derive import derive
from agentsrc_daemon.events import (
    COMMAND,
    COMPACTION,
    DIRECTIVE,
    EDIT,
    ERROR,
    MESSAGE,
    PROMPT,
    READ,
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
)

from adapter_lines import parse_lines_with, read_lines
from corpus import corpus_home

SID = "c0ffee00-1111-4222-8333-444455556666"
FIXTURE_DIR = Path(__file__).parent / "fixtures" / "copilot" / "session-state" / SID
FIXTURE = FIXTURE_DIR / "events.jsonl"
WORKSPACE = FIXTURE_DIR / "workspace.yaml"
SENTINEL = "SUMMARY-SENTINEL-c0p1"
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
)


# -- helpers --------------------------------------------------------------------------


def events(records: list[Record], kind: str | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


def facts(records: list[Record]) -> list[SessionFacts]:
    return [r for r in records if isinstance(r, SessionFacts)]


def parse_file(path: Path) -> list[Record]:
    if path.suffix == ".json":
        return ADAPTER.parse_document(
            orjson.loads(path.read_bytes()), str(path), ADAPTER.initial_state(str(path))
        )
    return parse_lines_with(ADAPTER, path, read_lines(path))[0]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def usage_totals(records: list[Record]) -> tuple[int, ...]:
    usage = events(records, USAGE)
    return tuple(sum(u.data[k] for u in usage) for k in USAGE_KEYS)


def derived(records: list[Record]) -> list[Event]:
    out: list[Event] = []
    for ev in events(records):
        out += derive(ev, lambda cwd: "/home/dev/shop" if cwd.startswith("/home/dev/shop") else cwd)
    return out


# -- the corpus -----------------------------------------------------------------------

# Computed once from the data. usage: (events, input, output, cache read, cache write,
# reasoning); where the session has a shutdown, the totals are exactly its modelMetrics
# totals (per-message output counted once); otherwise the sum of per-message outputTokens.
CORPUS: dict[str, dict[str, Any]] = {
    "session-state/27d7ef99-f7c7-43eb-8599-cb469623c8f7.jsonl": {
        "session": "27d7ef99-f7c7-43eb-8599-cb469623c8f7",
        "version": None,  # the flat layout's first builds report "unknown"
        "kinds": {
            TURN_START: 5,
            PROMPT: 5,
            MESSAGE: 3,
            TOOL_CALL: 28,
            TOOL_RESULT: 27,
            TURN_END: 4,
            ERROR: 13,
        },
        "usage": (0, 0, 0, 0, 0, 0),
        "model": None,
        "cwd": None,
        "title": ("d4f239834fe4", 69),
        "started": "2025-12-02T08:26:25.611Z",
        "exit_codes": {0: 9, None: 1},
        "errors": {"model_call": 12, "query": 1},
    },
    "session-state/3cc3555e-5462-44f9-95de-c67b1cb220b9/events.jsonl": {
        "session": "3cc3555e-5462-44f9-95de-c67b1cb220b9",
        "version": "1.0.60",
        "kinds": {
            TURN_START: 2,
            PROMPT: 2,
            REASONING: 7,
            TOOL_CALL: 53,
            USAGE: 17,
            TOOL_RESULT: 52,
            MESSAGE: 3,
            TURN_END: 2,
        },
        "usage": (17, 596075, 6315, 536945, 56757, 603),
        "model": "claude-sonnet-4.6",
        "cwd": "467585a3db6e",
        "title": ("d058b63e076b", 5),
        "started": "2026-06-08T02:32:49.813Z",
        "exit_codes": {},  # its shell tools ran under report_intent/view only
        "errors": {},
        "turn_ends": {"aborted": 1, "complete": 1},
    },
    "session-state/9a493a94-a307-489e-8bc7-d16f4afcd992/events.jsonl": {
        "session": "9a493a94-a307-489e-8bc7-d16f4afcd992",
        "version": "1.0.59",
        "kinds": {ERROR: 4, TURN_START: 1, PROMPT: 1, MESSAGE: 1, USAGE: 2, TURN_END: 1},
        "usage": (2, 19771, 12, 0, 19768, 0),
        "model": "claude-sonnet-4.6",
        "cwd": "b147114b66aa",
        "title": ("8f434346648f", 2),
        "started": "2026-06-08T01:48:57.913Z",
        "exit_codes": {},
        "errors": {"mcp": 3, "model": 1},
    },
    "session-state/d5b1506c-19d6-4e6a-818c-89a50c48bb34/events.jsonl": {
        "session": "d5b1506c-19d6-4e6a-818c-89a50c48bb34",
        "version": "1.0.10",
        "kinds": {
            TURN_START: 7,
            PROMPT: 7,
            REASONING: 23,
            TOOL_CALL: 59,
            USAGE: 60,
            TOOL_RESULT: 59,
            MESSAGE: 7,
            TURN_END: 6,
        },
        "usage": (60, 0, 24788, 0, 0, 0),  # no shutdown: output from the messages only
        "model": "gpt-5-mini",
        "cwd": "85a33bf8fdaa",
        "title": ("2a7d9a54e5d1", 120),
        "started": "2026-03-21T12:58:56.629Z",
        "exit_codes": {0: 7, 255: 1},
        "errors": {},
    },
    "session-state/feeb765c-b05d-456f-bb55-ff2504dad88b/events.jsonl": {
        "session": "feeb765c-b05d-456f-bb55-ff2504dad88b",
        "version": "1.0.60",
        "kinds": {
            TURN_START: 1,
            PROMPT: 1,
            REASONING: 3,
            TOOL_CALL: 36,
            USAGE: 14,
            TOOL_RESULT: 36,
            MESSAGE: 2,
            TURN_END: 1,
        },
        "usage": (14, 441514, 4199, 400526, 40074, 499),
        "model": "claude-sonnet-4.6",
        "cwd": "67161a4f7910",
        "title": ("d058b63e076b", 5),
        "started": "2026-06-08T02:44:54.308Z",
        "exit_codes": {0: 1},
        "errors": {},
    },
    "history-session-state/session_e02997e2-e7e7-46ae-8027-b1a73e0cb908_1761492781060.json": {
        "session": "e02997e2-e7e7-46ae-8027-b1a73e0cb908",
        "version": None,
        "kinds": {
            TURN_START: 4,
            PROMPT: 4,
            TOOL_CALL: 17,
            TOOL_RESULT: 17,
            MESSAGE: 4,
            TURN_END: 3,
        },
        "usage": (0, 0, 0, 0, 0, 0),
        "model": None,
        "cwd": None,
        "title": ("757c7c586df6", 65),
        "started": "2025-10-26T15:33:01.060Z",
        "exit_codes": {None: 1},
        "errors": {},
    },
}
WORKSPACE_TITLES = {"d5b1506c-19d6-4e6a-818c-89a50c48bb34": ("1ce60d40d5eb", 37)}


def copilot_home() -> Path:
    return corpus_home() / ".copilot"


def test_corpus_is_covered() -> None:
    home = copilot_home()
    found = sorted(
        p.relative_to(home).as_posix()
        for p in list(home.glob("session-state/**/*.jsonl"))
        + list(home.glob("history-session-state/*.json"))
    )
    assert found == sorted(CORPUS)


@pytest.mark.parametrize("rel", sorted(CORPUS))
def test_corpus_exact_counts(rel: str) -> None:
    want = CORPUS[rel]
    records = parse_file(copilot_home() / rel)
    evs = events(records)
    assert {f.native_id for f in facts(records)} == {want["session"]}
    assert {e.session_id for e in evs} == {f"copilot:{want['session']}"}
    assert dict(Counter(e.kind for e in evs)) == want["kinds"]
    usage = events(records, USAGE)
    assert (len(usage), *usage_totals(records)) == want["usage"]
    versions = {f.version for f in facts(records) if f.version}
    assert versions == ({want["version"]} if want["version"] else set())
    models = [f.model for f in facts(records) if f.model]
    assert (models[-1] if models else None) == want["model"]
    cwds = {f.cwd for f in facts(records) if f.cwd}
    assert [digest(c) for c in cwds] == ([want["cwd"]] if want["cwd"] else [])
    titles = [f.title for f in facts(records) if f.title]
    assert [(digest(t), len(t)) for t in titles] == [want["title"]]
    assert min(f.started_at for f in facts(records) if f.started_at) == want["started"]
    shell = [r for r in events(records, TOOL_RESULT) if r.tool in ("bash", "powershell")]
    assert dict(Counter(r.data["exit_code"] for r in shell)) == want["exit_codes"]
    assert dict(Counter(e.data["error_type"] for e in events(records, ERROR))) == want["errors"]
    if "turn_ends" in want:
        assert (
            dict(Counter(e.data["status"] for e in events(records, TURN_END))) == want["turn_ends"]
        )
    assert not [r for r in records if isinstance(r, Drift)]
    keys = [e.key for e in evs]
    assert len(keys) == len(set(keys))
    calls = {c.call_id for c in events(records, TOOL_CALL)}
    assert {r.call_id for r in events(records, TOOL_RESULT)} <= calls
    assert all(r.input is not None for r in events(records, TOOL_RESULT))
    assert all("text" not in e.data for e in evs if e.kind == REASONING)


def test_corpus_workspace_yaml() -> None:
    for path in sorted(copilot_home().glob("session-state/*/workspace.yaml")):
        (record,) = copilot.workspace_records(path.read_text(), str(path))
        assert isinstance(record, SessionFacts)
        assert record.native_id == path.parent.name
        want = CORPUS[f"session-state/{path.parent.name}/events.jsonl"]
        assert record.cwd is not None and digest(record.cwd) == want["cwd"]
        assert record.started_at is not None and record.last_event_at is not None
        title = WORKSPACE_TITLES.get(record.native_id)
        assert (record.title and (digest(record.title), len(record.title))) == (title or None)


def test_corpus_history_document_re_read_adds_nothing() -> None:
    rel = next(r for r in CORPUS if r.endswith(".json"))
    path = copilot_home() / rel
    obj = orjson.loads(path.read_bytes())
    state = ADAPTER.initial_state(str(path))
    first = ADAPTER.parse_document(obj, str(path), state)
    assert events(ADAPTER.parse_document(obj, str(path), state)) == []
    again = ADAPTER.parse_document(obj, str(path), ADAPTER.initial_state(str(path)))
    assert [e.key for e in events(again)] == [e.key for e in events(first)]
    failed = [r for r in events(first, TOOL_RESULT) if r.data["is_error"]]
    assert len(failed) == 2


# -- the fixture ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def records() -> list[Record]:
    return parse_file(FIXTURE)


def test_fixture_sequence(records: list[Record]) -> None:
    assert dict(Counter(e.kind for e in events(records))) == {
        TURN_START: 3,
        PROMPT: 4,
        REASONING: 1,
        MESSAGE: 4,
        TOOL_CALL: 11,
        USAGE: 10,
        TOOL_RESULT: 11,
        COMPACTION: 2,
        DIRECTIVE: 1,
        TURN_END: 3,
        ERROR: 1,
    }
    assert [r.record_type for r in records if isinstance(r, Drift)] == ["session.frobnicated"]
    assert SENTINEL not in orjson.dumps([e.data for e in events(records)], default=str).decode()
    (start,) = [f for f in facts(records) if f.started_at]
    assert (start.cwd, start.version, start.originator, start.started_at) == (
        "/home/dev/shop",
        "1.0.70",
        "copilot-agent",
        "2026-07-01T10:00:00.000Z",
    )
    assert [f.model for f in facts(records) if f.model] == ["claude-sonnet-4.6", "gpt-5.2"]
    assert [f.title for f in facts(records) if f.title] == ["Fix the failing price test"]


def test_fixture_turns(records: list[Record]) -> None:
    prompts = [p for p in events(records, PROMPT) if p.subagent_id is None]
    turns = [p.key for p in prompts]
    assert turns[0] == f"copilot:{SID}:e00030000-0000-4000-8000-000000000000"  # the event id
    ends = [
        (e.turn_id, e.data["status"], e.data["reason"], e.ts) for e in events(records, TURN_END)
    ]
    assert ends == [
        (turns[0], "complete", None, "2026-07-01T10:00:19.000Z"),  # the next prompt closes it
        (turns[1], "aborted", "user_initiated", "2026-07-01T10:00:30.000Z"),
        (turns[2], "complete", None, "2026-07-01T10:05:06.000Z"),  # the shutdown closes it
    ]
    (directive,) = events(records, DIRECTIVE)
    assert (directive.turn_id, directive.data["source"]) == (turns[0], "skill-pricing")
    assert [p.data["text"] for p in prompts][0] == "Fix the failing price test"
    assert [label for label, _ in prompts[0].contents] == ["context"]
    models = [(t.turn_id, t.model) for t in records if isinstance(t, TurnFacts) and t.model]
    assert models == [
        (turns[0], "claude-sonnet-4.6"),  # the model at the turn's start
        (turns[0], "gpt-5.2"),  # switched within it
        (turns[1], "gpt-5.2"),
        (turns[2], "gpt-5.2"),
    ]


def test_fixture_calls_pair_with_results(records: list[Record]) -> None:
    calls = events(records, TOOL_CALL)
    results = {r.call_id: r for r in events(records, TOOL_RESULT)}
    assert [c.call_id for c in calls] == [
        "toolu_01",
        "toolu_02",
        "call_03",
        "call_04",
        "call_05",
        "call_06",
        "toolu_07",
        "toolu_08",
        "user_09",  # user-requested: emitted once, not again at its execution start
        "call_10",
        "call_11",
    ]
    for call in calls:
        result = results[call.call_id]
        assert (result.tool, result.input) == (call.tool, call.input)
        assert call.key == f"copilot:{SID}:call:{call.call_id}"
        assert result.key == f"copilot:{SID}:result:{call.call_id}"
        assert all(label == "output" for label, _ in result.contents)
    create = next(c for c in calls if c.call_id == "call_04")
    assert create.data["input"]["file_text"] == {"omitted_chars": 12}
    assert [label for label, _ in create.contents] == ["write"]
    assert (results["call_04"].data["is_error"], results["call_04"].data["output_chars"]) == (
        True,
        33,
    )
    codes = {k: r.data["exit_code"] for k, r in results.items() if r.tool in ("bash", "powershell")}
    assert codes == {"toolu_02": 0, "call_05": 1, "user_09": 0, "call_11": 0}
    sub = [e for e in events(records) if e.subagent_id]
    assert {e.subagent_id for e in sub} == {"agent-explore-1"}
    assert Counter(e.kind for e in sub) == {
        PROMPT: 1,
        MESSAGE: 1,
        TOOL_CALL: 2,
        TOOL_RESULT: 2,
        USAGE: 1,
    }


def test_fixture_usage_counts_each_token_once(records: list[Record]) -> None:
    # The second shutdown's totals, summed over the three models: messages' output as
    # it came, the compaction call's tokens, then what each shutdown adds beyond them.
    assert usage_totals(records) == (175800, 2270, 13000, 900, 55)
    per_model: dict[str, Counter[str]] = {}
    for u in events(records, USAGE):
        per_model.setdefault(u.data["model"], Counter()).update({k: u.data[k] for k in USAGE_KEYS})
    assert {m: c["output_tokens"] for m, c in per_model.items()} == {
        "claude-sonnet-4.6": 100,
        "gpt-5.2": 2150,
        "claude-haiku-4.5": 20,
    }
    assert {m: c["input_tokens"] for m, c in per_model.items()} == {
        "claude-sonnet-4.6": 5000,
        "gpt-5.2": 170000,
        "claude-haiku-4.5": 800,
    }


def test_usage_after_a_restarted_counter() -> None:
    """A second shutdown whose totals went down covers its own lifetime only."""
    lines = read_lines(FIXTURE)
    restarted = copy.deepcopy(lines)
    _, last = restarted[-1]
    last["data"]["modelMetrics"] = {
        "gpt-5.2": {
            "usage": {
                "inputTokens": 9000,
                "outputTokens": 50,
                "cacheReadTokens": 6000,
                "cacheWriteTokens": 0,
                "reasoningTokens": 5,
            }
        }
    }
    out, _ = parse_lines_with(ADAPTER, FIXTURE, restarted)
    assert usage_totals(out) == (165800 + 9000, 2220 + 50, 7000 + 6000, 900, 50 + 5)


def test_fixture_compaction_and_truncation(records: list[Record]) -> None:
    assert [e.data for e in events(records, COMPACTION)] == [
        {"trigger": "auto", "pre_tokens": 150000},
        {"trigger": "truncation", "pre_tokens": 90000},
    ]
    (error,) = events(records, ERROR)
    assert error.data == {"message": "Rate limit exceeded, retrying", "error_type": "rate_limit"}


def test_fixture_derived_reads_edits_commands(records: list[Record]) -> None:
    out = derived(records)
    reads = [(e.tool, e.data["path"], e.data["op"]) for e in out if e.kind == READ]
    assert reads == [
        ("view", "/home/dev/shop/tests/test_price.py", "read"),
        ("bash", "/home/dev/shop/src/price.py", "read"),
        ("grep", "/home/dev/shop/src", "grep"),  # content mode; files_with_matches reads nothing
    ]
    edits = [
        (e.tool, e.data["path"], e.data["op"], e.data["rel_path"]) for e in out if e.kind == EDIT
    ]
    assert edits == [
        ("str_replace_editor", "/home/dev/shop/src/price.py", "update", "src/price.py"),
        ("create", "/home/dev/shop/CHANGES.md", "write", "CHANGES.md"),
        ("edit", "/home/dev/shop/docs/CHANGES.md", "update", "docs/CHANGES.md"),  # after /cd
    ]
    commands = [
        (c.data["command"], c.data["cwd"], c.data["exit_code"], c.data["is_error"])
        for c in out
        if c.kind == COMMAND
    ]
    assert commands == [
        ("cd src && cat price.py", "/home/dev/shop", 0, False),
        ("python -m pytest -q", "/home/dev/shop", 1, False),
        ("git status --short", "/home/dev/shop", 0, False),
        ("Get-Content CHANGES.md", "/home/dev/shop/docs", 0, False),  # PowerShell: not parsed
    ]


def test_fixture_state_survives_a_json_round_trip(records: list[Record]) -> None:
    state = ADAPTER.initial_state(str(FIXTURE))
    out: list[Record] = []
    for offset, obj in read_lines(FIXTURE):
        state = orjson.loads(orjson.dumps(state))
        out += ADAPTER.parse(obj, offset, str(FIXTURE), state)
    assert out == records


def test_workspace_yaml_parser() -> None:
    fields = copilot.parse_workspace_yaml(WORKSPACE.read_text())
    assert fields["id"] == SID
    assert fields["name"] == "Price fix: doubled, not tripled"
    assert fields["summary"] == 'Fix the price "multiplier"'
    assert fields["user_named"] == "true"
    assert fields["tags"] is None and fields["notes"] is None
    assert "  - pricing" not in fields and "multi" not in fields
    (record,) = copilot.workspace_records(WORKSPACE.read_text(), str(WORKSPACE))
    assert isinstance(record, SessionFacts)
    assert (record.native_id, record.cwd, record.title) == (
        SID,
        "/home/dev/shop",
        "Price fix: doubled, not tripled",
    )
    assert record.started_at == "2026-07-01T10:00:00.004Z"
    assert copilot.parse_workspace_yaml("a: 'it''s'\nb: c # note\nc:d\nd: ~\n") == {
        "a": "it's",
        "b": "c",
        "d": None,
    }
    unnamed = copilot.workspace_records(
        "cwd: /x\nname: auto name\n", "/h/session-state/abc/workspace.yaml"
    )
    assert [(r.native_id, r.title) for r in unnamed if isinstance(r, SessionFacts)] == [
        ("abc", None)
    ]


def test_seed_cwd_until_the_log_names_one() -> None:
    state = ADAPTER.initial_state("/h/.copilot/session-state/abc.jsonl")
    copilot.seed_cwd(state, "/seeded")
    out = ADAPTER.parse(
        {"type": "user.message", "id": "u1", "data": {"content": "hi"}},
        0,
        "/h/.copilot/session-state/abc.jsonl",
        state,
    )
    assert {e.cwd for e in events(out)} == {"/seeded"}
    assert {e.session_id for e in events(out)} == {"copilot:abc"}


# -- properties -------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
TYPES = [
    "session.start",
    "session.resume",
    "session.model_change",
    "session.context_changed",
    "user.message",
    "assistant.message",
    "assistant.reasoning",
    "tool.execution_start",
    "tool.execution_complete",
    "tool.user_requested",
    "abort",
    "session.error",
    "session.compaction_complete",
    "session.truncation",
    "session.shutdown",
    "hook.start",
    "odd.type",
]
datas = st.fixed_dictionaries(
    {},
    optional={
        "sessionId": json_values,
        "content": json_values,
        "source": json_values,
        "messageId": st.sampled_from(["m1", "m2"]) | json_values,
        "model": st.sampled_from(["a", "b"]) | json_values,
        "outputTokens": json_values,
        "toolCallId": st.sampled_from(["c1", "c2"]) | json_values,
        "toolName": st.sampled_from(["bash", "view", "create"]) | json_values,
        "arguments": json_values | st.just({"command": "cat a", "file_text": "x"}),
        "toolRequests": json_values
        | st.lists(
            st.fixed_dictionaries(
                {"toolCallId": st.sampled_from(["c1", "c2"]), "name": json_values}
            ),
            max_size=2,
        ),
        "result": json_values | st.fixed_dictionaries({"content": json_values}),
        "success": json_values,
        "context": json_values,
        "modelMetrics": json_values
        | st.dictionaries(
            st.sampled_from(["a", "b"]), st.fixed_dictionaries({"usage": json_values}), max_size=2
        ),
        "compactionTokensUsed": json_values,
    },
)
lines = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES) | json_values},
    optional={
        "data": datas | json_values,
        "id": st.sampled_from(["e1", "e2", "e3"]) | json_values,
        "timestamp": st.sampled_from(["2026-01-01T00:00:00Z"]) | json_values,
        "agentId": json_values,
        "ephemeral": json_values,
    },
)


def _run(objs: list[dict[str, Any]]) -> tuple[list[Record], dict[str, Any]]:
    state = ADAPTER.initial_state(str(FIXTURE))
    out: list[Record] = []
    for i, obj in enumerate(objs):
        out += ADAPTER.parse(obj, i * 10, str(FIXTURE), state)
    return out, state


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, min_size=1, max_size=8))
def test_parse_never_raises_and_is_deterministic(objs: list[dict[str, Any]]) -> None:
    first, state = _run(objs)
    second, _ = _run(copy.deepcopy(objs))
    assert first == second
    orjson.dumps(state)
    assert all(isinstance(r, Event | SessionFacts | TurnFacts | Drift) for r in first)
    assert all(u.data[k] >= 0 for u in events(first, USAGE) for k in USAGE_KEYS)


documents = st.fixed_dictionaries(
    {},
    optional={
        "sessionId": json_values,
        "startTime": json_values,
        "chatMessages": json_values,
        "timeline": json_values
        | st.lists(
            st.fixed_dictionaries(
                {"id": st.sampled_from(["t1", "t2", "t3"]) | json_values},
                optional={
                    "type": st.sampled_from(["user", "copilot", "tool_call_completed", "info", "x"])
                    | json_values,
                    "text": json_values,
                    "callId": json_values,
                    "arguments": json_values,
                    "result": json_values,
                    "timestamp": json_values,
                },
            ),
            max_size=4,
        ),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents | json_values, min_size=1, max_size=3))
def test_parse_document_never_raises_and_re_reading_adds_nothing(docs: list[Any]) -> None:
    path = "/h/.copilot/history-session-state/session_x_1.json"
    state = ADAPTER.initial_state(path)
    for doc in docs:
        ADAPTER.parse_document(doc, path, state)
        orjson.dumps(state)
    for doc in docs:
        assert events(ADAPTER.parse_document(copy.deepcopy(doc), path, state)) == []


def test_counts_past_max_count_are_unreadable_and_running_sums_stay_writable() -> None:
    """Found by the property test above: two compactions of 2**64 - 1 tokens each (a
    count orjson can write) summed into the file's state past 64 bits, and the state
    could no longer be saved. A count past MAX_COUNT now reads as 0, and the running sum
    is held at MAX_COUNT."""
    def compaction(n: int) -> dict[str, Any]:
        return {"type": "session.compaction_complete", "data": {"compactionTokensUsed": {
            "model": "m", "inputTokens": n, "outputTokens": n}}}

    out, state = _run([compaction(2**64 - 1), compaction(MAX_COUNT), compaction(MAX_COUNT)])
    orjson.dumps(state)
    assert state["usage_counted"]["m"] == [MAX_COUNT, MAX_COUNT, 0, 0, 0]
    assert [(u.data["input_tokens"], u.data["total_tokens"]) for u in events(out, USAGE)] == [
        (MAX_COUNT, 2 * MAX_COUNT)] * 2
