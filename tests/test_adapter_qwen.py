"""The Qwen Code adapter: the corpus's 0.5.0 chat and the fixtures (a 0.9 chat with the
records the corpus lacks, a /branch copy, a first-version document), each counted
exactly against tests/raw_counts_qwen_amp_pi.py's independent count of its raw
records, and the figures pinned; then what each record becomes, and properties.

The fixtures are made up, in the shapes of Qwen Code's chatRecordingService.ts
(docs/formats.md, Qwen Code). Nothing of the corpus is printed or asserted verbatim."""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
from adapter_counts import adapter_counts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_counts_qwen_amp_pi import qwen_counts, qwen_document_counts

from agentsrc_daemon.adapters.injected import first_person_text, title_from
from agentsrc_daemon.adapters.qwen import ADAPTER, RULES
from agentsrc_daemon.adapters.qwen_documents import shell_exit_code
from agentsrc_daemon.events import (
    CLAIM_COPY,
    CLAIM_OWN,
    COMPACTION,
    DIRECTIVE,
    ERROR,
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
)

from adapter_lines import parse_lines_with, read_lines
from corpus import corpus_home
from raw_counts import USAGE_KEYS, Counts
from raw_texts import qwen as raw_user_texts

FIXTURES = Path(__file__).parent / "fixtures" / "qwen"
CHATS = FIXTURES / "projects" / "-home-dev-shop" / "chats"
MAIN = CHATS / "5e5a1a00-0000-4000-8000-000000000001.jsonl"
BRANCH = CHATS / "5e5a1a00-0000-4000-8000-000000000002.jsonl"
LEGACY_ROOT = "/home/dev/legacy"
LEGACY = (FIXTURES / "tmp" / hashlib.sha256(LEGACY_ROOT.encode()).hexdigest() / "chats"
          / "session-2025-09-10T08-00-5e5a1ad0.json")
CORPUS_CHAT = ".qwen/projects/D--Hackathon-Book/chats/c85afb93-5dc4-4bb5-be6e-0f2771b8e976.jsonl"


class S(NamedTuple):
    prompts: int
    briefs: int
    messages: int
    tool_calls: int
    commands: dict[int | None, int]  # exit code -> commands
    edits: dict[str, int]  # operation -> edits
    usage: tuple[int, ...]  # USAGE_KEYS in order


def summary(c: Counts) -> S:
    return S(c.prompts, c.briefs, c.messages, c.tool_calls, dict(Counter(c.commands)),
             dict(Counter(op for _, op in c.edits)), tuple(c.usage[k] for k in USAGE_KEYS))


# The corpus figures were checked against greps of the file: 9 user records, 113
# assistant records with text, 115 functionCall parts, 41 run_shell_command results
# (their "Exit Code:" lines), 27 edit and 20 write_file calls, 126 api_response records.
# fmt: off
EXPECTED: dict[str, S] = {
    "corpus": S(9, 0, 113, 115, {0: 34, 1: 5, 255: 1, 3221225786: 1}, {"update": 27, "write": 20},
                (8459744, 51874, 7895501, 0, 0, 8511618)),
    "main": S(4, 2, 3, 5, {1: 1}, {"update": 1, "write": 1}, (23100, 980, 19200, 0, 300, 24080)),
    "branch": S(2, 0, 2, 1, {}, {}, (9000, 480, 7800, 0, 300, 9480)),
    "legacy": S(2, 0, 2, 2, {0: 1}, {"update": 1}, (6200, 46, 4000, 0, 12, 6246)),
}
# fmt: on


def path_of(name: str) -> Path:
    return {"corpus": corpus_home() / CORPUS_CHAT, "main": MAIN, "branch": BRANCH, "legacy": LEGACY}[name]


def parse(path: Path) -> tuple[list[Record], dict[str, Any]]:
    if path.suffix == ".json":
        state = ADAPTER.initial_state(str(path))
        return ADAPTER.parse_document(orjson.loads(path.read_bytes()), str(path), state), state
    return parse_lines_with(ADAPTER, path, read_lines(path))


def events(records: list[Record], kind: str | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


def facts(records: list[Record]) -> list[SessionFacts]:
    return [r for r in records if isinstance(r, SessionFacts)]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- exact counts


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_counts_against_the_raw_records(name: str) -> None:
    path = path_of(name)
    raw = qwen_document_counts(path) if path.suffix == ".json" else qwen_counts(path)
    assert summary(raw) == EXPECTED[name]
    records, state = parse(path)
    counts, cost = adapter_counts(records)
    assert counts == raw
    assert cost == 0  # Qwen Code records no cost
    assert not [r for r in records if isinstance(r, Drift)]
    keys = [e.key for e in events(records)]
    assert len(keys) == len(set(keys))
    assert len(orjson.dumps(state)) < 16 * 1024


def test_corpus_session_facts_turns_and_title() -> None:
    path = corpus_home() / CORPUS_CHAT
    records, _ = parse(path)
    evs = events(records)
    kinds = Counter(e.kind for e in evs)
    assert {f.session_id for f in facts(records)} == {"qwen:c85afb93-5dc4-4bb5-be6e-0f2771b8e976"}
    assert {e.session_id for e in evs} == {"qwen:c85afb93-5dc4-4bb5-be6e-0f2771b8e976"}
    assert {f.version for f in facts(records) if f.version} == {"0.5.0"}
    assert [f.model for f in facts(records) if f.model] == ["coder-model"]
    assert {digest(f.cwd) for f in facts(records) if f.cwd} == {digest("D:\\Hackathon Book")}
    # Every prompt opens a turn, closed by the next; all events but the first prompt's
    # turn start carry a turn.
    assert kinds[TURN_START] == 9 and kinds[TURN_END] == 8
    assert all(e.turn_id for e in evs)
    # One usage event per api_response record (126), none from the assistant records'
    # own usageMetadata, which repeats them (122 of them).
    assert kinds[USAGE] == 126
    assert {e.data["model"] for e in events(records, USAGE)} == {"coder-model"}
    # Tool calls pair with their results, by id.
    calls = {e.call_id for e in events(records, TOOL_CALL)}
    assert calls == {e.call_id for e in events(records, TOOL_RESULT)} and len(calls) == 115
    results = events(records, TOOL_RESULT)
    assert Counter((e.data["is_error"], e.data["interrupted"]) for e in results) == {
        (False, False): 110, (True, False): 4, (True, True): 1}
    # The title: the first text a person typed, by the injected-context rule.
    titles = [f.title for f in facts(records) if f.title]
    want = first_person_text(raw_user_texts(path))
    assert want is not None and titles == [title_from(want, 120)]


def test_corpus_line_by_line_equals_in_one_go() -> None:
    path = corpus_home() / CORPUS_CHAT
    lines = read_lines(path)
    whole, _ = parse_lines_with(ADAPTER, path, lines)
    state = ADAPTER.initial_state(str(path))
    pieces: list[Record] = []
    for i in range(0, len(lines), 37):  # resumed from a JSON round trip of the state
        state = orjson.loads(orjson.dumps(state))
        more, state = parse_lines_with(ADAPTER, path, lines[i : i + 37], state)
        pieces += more
    assert pieces == whole


# --------------------------------------------------------------------------- the fixtures


def test_main_fixture_records() -> None:
    records, _ = parse(MAIN)
    evs = events(records)
    prompts = events(records, PROMPT)
    assert [(e.data["text"], e.subagent_id) for e in prompts] == [
        ("Refactor the parser to use a tokenizer", None),
        ("also keep the old API", None),  # typed while the turn ran: in that turn
        ("summarize @NOTES.md", None),  # what was typed, not what the @-mention sent
        ("Who calls parse()?", None),
        ("Find every caller of parse() under src/", "explore-1a2b"),  # a sub-agent's brief
    ]
    assert prompts[1].turn_id == prompts[0].turn_id == prompts[0].key
    assert prompts[2].contents and prompts[2].contents[0][0] == "context"
    assert prompts[4].turn_id == prompts[3].key  # inside the parent's turn
    assert [e.data for e in events(records, DIRECTIVE)] == [
        {"text": "Background task b7 finished", "source": "notification"}]
    # turn_result "cancelled" ends the third turn, aborted, at its own time.
    ends = [(e.turn_id, e.data["status"], e.ts) for e in events(records, TURN_END)]
    assert ends == [(prompts[0].key, "complete", "2026-03-02T10:00:16.000Z"),
                    (prompts[2].key, "aborted", "2026-03-02T10:00:23.000Z")]
    assert [e.data for e in events(records, COMPACTION)] == [{"trigger": None, "pre_tokens": 9000}]
    assert [(e.data["error_type"], e.data["status_code"]) for e in events(records, ERROR)] == [
        ("RESOURCE_EXHAUSTED", 429)]
    assert [e.data["chars"] for e in events(records, REASONING)] == [len("Planning the tokenizer.")]
    # Titles: the first prompt, then Qwen's generated title, then the person's /rename.
    assert [f.title for f in facts(records) if f.title] == [
        "Refactor the parser to use a tokenizer", "Parser tokenizer refactor", "Parser work"]
    # Gemini auth: the thoughts are apart from the output; they are added to it.
    first = events(records, USAGE)[0].data
    assert (first["output_tokens"], first["reasoning_tokens"], first["total_tokens"]) == (420, 300, 5420)
    assert {e.subagent_id for e in evs if e.subagent_id} == {"explore-1a2b"}
    # Each turn's model: the first learns it from its answer, the later ones open with it.
    turn_models = {t.turn_id: t.model for t in records if isinstance(t, TurnFacts) and t.model}
    assert turn_models == {p.key: "gemini-2.5-pro" for p in (prompts[0], prompts[2], prompts[3])}


def test_a_branch_copy_is_held_as_a_copy_under_the_parents_keys() -> None:
    main, _ = parse(MAIN)
    branch, _ = parse(BRANCH)
    copied = [e for e in events(branch) if e.claim == CLAIM_COPY]
    assert copied and all(e.session_id == "qwen:5e5a1a00-0000-4000-8000-000000000002" for e in copied)
    own = {e.key: e for e in events(main)}
    # Every copied record's events have the parent's keys; the parent's own claim wins.
    assert all(e.key in own and own[e.key].claim == CLAIM_OWN for e in copied)
    assert {e.kind for e in copied} == {TURN_START, PROMPT, USAGE, REASONING, "message", TOOL_CALL, TOOL_RESULT}
    assert [e.data["text"] for e in events(branch, PROMPT) if e.claim != CLAIM_COPY] == [
        "Try a regex tokenizer instead"]


def test_legacy_document_records_and_rewrites() -> None:
    records, state = parse(LEGACY)
    # The project root, from the environment context's directory (its hash is the folder's).
    assert {f.cwd for f in facts(records) if f.cwd} == {LEGACY_ROOT}
    assert {t.cwd for t in records if isinstance(t, TurnFacts) and t.status == "open"} == {LEGACY_ROOT}
    assert [e.data["text"] for e in events(records, PROMPT)] == [
        "List the files and fix the typo in README", "thanks"]
    assert [f.title for f in facts(records) if f.title] == ["List the files and fix the typo in README"]
    assert [e.data["pre_tokens"] for e in events(records, COMPACTION)] == [3200]
    assert len(events(records, ERROR)) == 1
    doc = orjson.loads(LEGACY.read_bytes())
    path = str(LEGACY)
    # Unchanged: nothing but the facts. One message more: only its records.
    assert events(ADAPTER.parse_document(copy.deepcopy(doc), path, state)) == []
    doc["messages"].append({"id": "m8", "timestamp": "2025-09-10T08:00:50.000Z", "type": "user", "content": "bye"})
    more = events(ADAPTER.parse_document(copy.deepcopy(doc), path, state))
    assert [(e.kind, e.key) for e in more] == [
        (TURN_END, f"qwen:{doc['sessionId']}:m5:end"),
        (TURN_START, f"qwen:{doc['sessionId']}:m8:start"),
        (PROMPT, f"qwen:{doc['sessionId']}:m8"),
    ]
    # A lost state re-emits under the very same keys.
    again, _ = parse(LEGACY)
    assert [e.key for e in events(again)] == [e.key for e in events(records)]


def test_drift_for_what_is_not_understood() -> None:
    path = str(MAIN)
    state = ADAPTER.initial_state(path)
    base = {"uuid": "u", "sessionId": "s", "timestamp": "2026-03-02T10:00:00Z", "cwd": "/a", "version": "0.9.9"}
    lines = [
        dict(base, type="progress"),
        dict(base, type="system", subtype="brand_new"),
        dict(base, type="system", subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "qwen-code.new"}}),
        dict(base, type="user", subtype="odd", message={"parts": [{"text": "x"}]}),
        dict(base, type="system", subtype="file_history_snapshot"),  # ignored on purpose
        {"no": "type"},
    ]
    drift = [r for obj in lines for r in ADAPTER.parse(obj, 0, path, state) if isinstance(r, Drift)]
    assert [(d.version, d.record_type) for d in drift] == [
        ("0.9.9", "progress"), ("0.9.9", "system/brand_new"), ("0.9.9", "ui_telemetry/qwen-code.new"),
        ("0.9.9", "user/odd"), ("0.9.9", "<no type>")]


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("Command: ls\nOutput: a\nError: (none)\nExit Code: 0\nSignal: (none)", 0),
        ("Command: x\nOutput: (empty)\nExit Code: 255\nSignal: (none)\nBackground PIDs: (none)", 255),
        ("Command: x\nOutput: killed\nExit Code: (none)\nSignal: 9", None),
        ("plain output, no trailer", None),
    ],
)
def test_shell_exit_codes(output: str, code: int | None) -> None:
    assert shell_exit_code(output) == code


# --------------------------------------------------------------------------- properties

json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
parts = st.lists(
    st.fixed_dictionaries({}, optional={
        "text": json_values, "thought": json_values,
        "functionCall": st.fixed_dictionaries({"id": st.sampled_from(["c1", "c2"]) | json_values,
                                               "name": st.sampled_from(["run_shell_command", "edit"]) | json_values,
                                               "args": json_values}),
        "functionResponse": st.fixed_dictionaries({"id": st.sampled_from(["c1", "c2"]) | json_values,
                                                   "response": json_values}),
    }),
    max_size=3,
)
records = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(RULES.record_types or ())) | json_values},
    optional={
        "uuid": st.sampled_from(["u1", "u2"]) | json_values,
        "sessionId": st.just("s1") | json_values,
        "timestamp": st.just("2026-01-01T00:00:00Z") | json_values,
        "subtype": st.sampled_from(["ui_telemetry", "custom_title", "turn_result", "mid_turn_user_message",
                                    "notification", "chat_compression"]) | json_values,
        "cwd": json_values, "version": json_values, "model": json_values,
        "isSidechain": json_values, "agentId": json_values, "forkedFrom": json_values,
        "message": st.fixed_dictionaries({"parts": parts | json_values}) | json_values,
        "usageMetadata": json_values,
        "toolCallResult": json_values,
        "systemPayload": json_values | st.fixed_dictionaries({"uiEvent": json_values}),
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, min_size=1, max_size=6))
def test_parse_never_raises_and_is_deterministic(objs: list[dict[str, Any]]) -> None:
    def run(lines: list[dict[str, Any]]) -> tuple[list[Record], dict[str, Any]]:
        state = ADAPTER.initial_state(str(MAIN))
        out: list[Record] = []
        for i, obj in enumerate(lines):
            out += ADAPTER.parse(obj, i * 10, str(MAIN), state)
        return out, state

    first, state = run(objs)
    assert run(copy.deepcopy(objs))[0] == first
    orjson.dumps(state)  # stays storable
    assert all(isinstance(r, Event | SessionFacts | TurnFacts | Drift) for r in first)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({"sessionId": st.just("s1") | json_values},
                                      optional={"projectHash": json_values,
                                                "messages": st.lists(json_values, max_size=4) | json_values})
                | json_values, min_size=1, max_size=3))
def test_documents_never_raise_and_re_reading_adds_nothing(docs: list[Any]) -> None:
    state = ADAPTER.initial_state(str(LEGACY))
    for doc in docs:
        ADAPTER.parse_document(doc, str(LEGACY), state)
        orjson.dumps(state)
    for doc in docs:
        assert events(ADAPTER.parse_document(copy.deepcopy(doc), str(LEGACY), state)) == []


def test_record_kinds_for_the_fidelity_tally() -> None:
    # The corpus chat's 497 records by kind, counted from the raw lines here: telemetry
    # by its event name, system records by subtype; the CLI's own tool-call telemetry and
    # slash-command records are ignored on purpose.
    path = corpus_home() / CORPUS_CHAT
    raw = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    state = ADAPTER.initial_state(str(path))
    kinds: Counter[tuple[str, str, bool]] = Counter()
    for offset, obj in enumerate(raw):
        ADAPTER.parse(obj, offset, str(path), state)
        kinds[ADAPTER.record_kind(obj, state)] += 1
    telemetry = Counter(o["systemPayload"]["uiEvent"]["event.name"] for o in raw if o.get("subtype") == "ui_telemetry")
    assert telemetry == {"qwen-code.api_response": 126, "qwen-code.tool_call": 115}
    assert kinds == {
        ("0.5.0", "user", False): 9,
        ("0.5.0", "assistant", False): 122,
        ("0.5.0", "tool_result", False): 115,
        ("0.5.0", "system/ui_telemetry/qwen-code.api_response", False): 126,
        ("0.5.0", "system/ui_telemetry/qwen-code.tool_call", True): 115,
        ("0.5.0", "system/slash_command", True): 10,
    }
    assert sum(kinds.values()) == len(raw) == 497
    _, main = parse(MAIN)
    notice = {"type": "user", "subtype": "notification", "version": "0.9.1"}
    assert ADAPTER.record_kind(notice, main) == ("0.9.1", "user/notification", False)
    # A first version's whole document.
    doc = orjson.loads(LEGACY.read_bytes())
    _, legacy = parse(LEGACY)
    assert ADAPTER.record_kind(doc, legacy)[1:] == ("conversation", False)
