"""The Gemini CLI adapter against the real corpus (exact counts computed once from the
data and checked against direct sums of the files), hand-written fixtures for what the
corpus lacks (tool calls in both layouts, re-emitted messages, subagents, errors,
compressions), and property tests.

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

from agentsrc_daemon.adapters import gemini
from agentsrc_daemon.adapters.gemini import ADAPTER
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
from corpus import corpus_home, is_read

FIXTURES = Path(__file__).parent / "fixtures" / "gemini" / "tmp"
DOC_ROOT = "/home/dev/demo"
DOC_DIR = FIXTURES / hashlib.sha256(DOC_ROOT.encode()).hexdigest()
DOC = DOC_DIR / "chats" / "session-2025-10-01T09-00-0d5c6a43.json"
DOC_SID = "0d5c6a43-1b9e-4c2f-9a51-7e3f2b8c4d10"
JSONL_ROOT = "/home/dev/demo-app"
JSONL_SID = "7e2b9c1d-5a3f-4e6b-8c0d-1f2a3b4c5d6e"
JSONL = FIXTURES / "demo-app" / "chats" / "session-2026-05-04T10-00-7e2b9c1d.jsonl"
SUB_ID = "sub-4f1e2d3c-b0a9-4876-9543-210fedcba987"
SUBAGENT = FIXTURES / "demo-app" / "chats" / JSONL_SID / f"{SUB_ID}.jsonl"


# -- helpers --------------------------------------------------------------------------


def events(records: list[Record], kind: str | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


def facts(records: list[Record]) -> list[SessionFacts]:
    return [r for r in records if isinstance(r, SessionFacts)]


def load(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def parse_doc(path: Path, obj: Any = None, state: dict[str, Any] | None = None) -> list[Record]:
    state = ADAPTER.initial_state(str(path)) if state is None else state
    return ADAPTER.parse_document(load(path) if obj is None else obj, str(path), state)


def parse_jsonl(path: Path, state: dict[str, Any] | None = None) -> list[Record]:
    return parse_lines_with(ADAPTER, path, read_lines(path), state)[0]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def root_for(cwd: str) -> str:
    return cwd


def derived(records: list[Record]) -> list[Event]:
    out: list[Event] = []
    for ev in events(records):
        out += derive(ev, root_for)
    return out


def by_call(evs: list[Event], kind: str) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for ev in evs:
        if ev.kind == kind:
            out.setdefault(str(ev.tool), []).append((ev.data["path"], ev.data["op"]))
    return out


# -- the corpus -----------------------------------------------------------------------

# Computed once from the data; the usage sums match summing every message's tokens
# directly (input + tool, output, cached, thoughts, total). The corpus has no tool calls.
CORPUS: dict[str, dict[str, Any]] = {
    "session-2025-09-22T12-41-7bcb6ef1.json": {
        "session": "7bcb6ef1-3820-48ad-aeb7-1000e69dec41",
        "prompts": 14,
        "messages": 20,
        "reasoning": 80,
        "usage": (20, 320685, 5483, 223379, 15334, 341502),
        "model": "gemini-2.5-pro",
        "title": ("f3465525bf01", 19),
        "started": "2025-09-22T12:43:07.076Z",
    },
    "session-2025-09-24T14-11-b269d5ad.json": {
        "session": "b269d5ad-2a6b-4aae-ba2d-2e5feb810110",
        "prompts": 5,
        "messages": 2,
        "reasoning": 8,
        "usage": (2, 13864, 57, 11997, 76, 13997),
        "model": "gemini-2.5-pro",
        "title": ("2f6f1496ba55", 120),
        "started": "2025-09-24T14:13:00.197Z",
    },
    "session-2025-09-24T14-14-101ffc58.json": {
        "session": "101ffc58-02a8-4c87-8ba6-b3ee77c16730",
        "prompts": 8,
        "messages": 34,
        "reasoning": 85,
        "usage": (34, 1037997, 6517, 820614, 12395, 1056909),
        "model": "gemini-2.5-pro",
        "title": ("2fc602f643db", 5),
        "started": "2025-09-24T14:14:45.825Z",
    },
    "session-2025-09-28T10-42-50228c11.json": {
        "session": "50228c11-ecde-41e2-8052-9eeed8221031",
        "prompts": 10,
        "messages": 10,
        "reasoning": 45,
        "usage": (10, 305756, 5720, 56349, 12187, 323663),
        "model": "gemini-2.5-pro",  # the last one: two answers came from gemini-2.5-flash
        "title": ("07794f31665a", 120),
        "started": "2025-09-28T10:46:25.456Z",
    },
    "session-2025-10-02T09-54-572a74be.json": {
        "session": "572a74be-6622-47ef-871c-17b7540107e2",
        "prompts": 7,
        "messages": 12,
        "reasoning": 55,
        "usage": (12, 269989, 7530, 13442, 17070, 294589),
        "model": "gemini-2.5-pro",
        "title": ("c3e6bce91380", 120),
        "started": "2025-10-02T10:02:00.648Z",
    },
    # Two files of one session id (two CLI processes): no message id in common.
    "session-2025-12-02T03-38-99632471.json": {
        "session": "99632471-d1d6-47ee-a4c1-4b206a61d817",
        "prompts": 9,
        "messages": 62,
        "reasoning": 118,
        "usage": (62, 1345316, 8864, 1224527, 14006, 1368186),
        "model": "gemini-2.5-pro",
        "title": ("e256ee8e7aff", 8),
        "started": "2025-12-02T03:38:11.216Z",
    },
    "session-2025-12-02T03-40-99632471.json": {
        "session": "99632471-d1d6-47ee-a4c1-4b206a61d817",
        "prompts": 2,
        "messages": 10,
        "reasoning": 25,
        "usage": (10, 81313, 1682, 64631, 3992, 86987),
        "model": "gemini-2.5-pro",
        "title": ("f6eaf388cb7d", 120),
        "started": "2025-12-02T03:40:03.726Z",
    },
    "session-2025-12-02T04-11-3b2bdb74.json": {
        "session": "3b2bdb74-c503-42dd-8337-48876fe4e202",
        "prompts": 1,
        "messages": 0,
        "reasoning": 0,
        "usage": (0, 0, 0, 0, 0, 0),
        "model": None,
        "title": ("499b54f01ad2", 15),
        "started": "2025-12-02T04:11:59.913Z",
    },
    "session-2025-12-02T04-22-ac24556c.json": {
        "session": "ac24556c-ce8a-4615-8509-17c62b44518a",
        "prompts": 22,
        "messages": 23,
        "reasoning": 163,
        "usage": (23, 1384278, 9363, 1179128, 8515, 1402156),
        "model": "gemini-2.5-pro",
        "title": ("1c2d4d30b896", 30),
        "started": "2025-12-02T04:22:18.983Z",
    },
    # The A2A server records every conversation of a project under the session id
    # "a2a-server"; its only user message is the environment context, not a prompt.
    "session-2026-08-13T04-43-a2a-serv.jsonl": {
        "session": "a2a-server",
        "prompts": 0,
        "messages": 0,
        "reasoning": 0,
        "usage": (0, 0, 0, 0, 0, 0),
        "model": None,
        "title": None,
        "started": "2026-08-13T04:43:57.095Z",
    },
    "session-2026-08-16T07-02-a2a-serv.jsonl": {
        "session": "a2a-server",
        "prompts": 0,
        "messages": 0,
        "reasoning": 0,
        "usage": (0, 0, 0, 0, 0, 0),
        "model": None,
        "title": None,
        "started": "2026-08-16T07:02:01.271Z",
    },
}
A2A_CWD_DIGEST = "23142f308149"


def gemini_tmp() -> Path:
    return corpus_home() / ".gemini" / "tmp"


def corpus_chat(name: str) -> Path:
    matches = [p for p in gemini_tmp().glob(f"*/chats/{name}") if p.is_file()]
    assert len(matches) == 1, name
    return matches[0]


def parse_corpus(name: str) -> list[Record]:
    path = corpus_chat(name)
    return parse_jsonl(path) if name.endswith(".jsonl") else parse_doc(path)


def test_corpus_is_covered() -> None:
    names = sorted(p.name for p in gemini_tmp().glob("*/chats/*") if p.is_file() and is_read(p))
    assert names == sorted([*CORPUS, TICKETING])


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_exact_counts(name: str) -> None:
    want = CORPUS[name]
    records = parse_corpus(name)
    evs = events(records)
    kinds = Counter(e.kind for e in evs)
    assert {f.native_id for f in facts(records)} == {want["session"]}
    assert {e.session_id for e in evs} <= {f"gemini:{want['session']}"}
    assert kinds[PROMPT] == want["prompts"]
    assert kinds[MESSAGE] == want["messages"]
    assert kinds[REASONING] == want["reasoning"]
    assert kinds[TURN_START] == want["prompts"]  # every prompt opens a turn...
    assert kinds[TURN_END] == max(0, want["prompts"] - 1)  # ...closed by the next one
    assert kinds[TOOL_CALL] == kinds[TOOL_RESULT] == kinds[ERROR] == kinds[COMPACTION] == 0
    usage = [e.data for e in events(records, USAGE)]
    totals = tuple(
        sum(u[k] for u in usage)
        for k in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "reasoning_tokens",
            "total_tokens",
        )
    )
    assert (len(usage), *totals) == want["usage"]
    models = [f.model for f in facts(records) if f.model]
    assert (models[-1] if models else None) == want["model"]
    titles = [f.title for f in facts(records) if f.title]
    assert [(digest(t), len(t)) for t in titles] == ([want["title"]] if want["title"] else [])
    assert min(f.started_at for f in facts(records) if f.started_at) == want["started"]
    assert not [r for r in records if isinstance(r, Drift)]
    assert all(not e.data.get("text") or e.kind in (PROMPT, MESSAGE) for e in evs)
    assert all("text" not in e.data for e in evs if e.kind == REASONING)
    keys = [e.key for e in evs]
    assert len(keys) == len(set(keys))


# Gemini CLI 0.39+ (JSONL with "$set" patches and messages re-appended under their id,
# issue 26), with tool calls. Its counts equal tests/raw_counts.py's of the raw records.
TICKETING = "session-2026-04-25T08-46-c737eb36.jsonl"


def test_corpus_jsonl_with_patches_and_tools() -> None:
    records = parse_corpus(TICKETING)
    evs = events(records)
    kinds = Counter(e.kind for e in evs)
    assert {f.native_id for f in facts(records)} == {"c737eb36-0f7f-466b-8044-9cb1f572378f"}
    assert (kinds[PROMPT], kinds[MESSAGE], kinds[REASONING]) == (17, 67, 41)
    assert (kinds[TURN_START], kinds[TURN_END]) == (17, 16)
    assert kinds[TOOL_CALL] == kinds[TOOL_RESULT] == 95
    usage = [e.data for e in events(records, USAGE)]
    totals = tuple(
        sum(u[k] for u in usage)
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens")
    )
    assert (len(usage), *totals) == (68, 2915474, 26554, 2445241, 12376)
    assert [f.model for f in facts(records) if f.model][-1] == "gemini-3.1-pro-preview"
    assert [(digest(f.title), len(f.title)) for f in facts(records) if f.title] == [
        ("ad93046375b0", 73)
    ]
    assert not [r for r in records if isinstance(r, Drift)]
    keys = [e.key for e in evs]
    assert len(keys) == len(set(keys)) == 416


@pytest.mark.parametrize("name", sorted(n for n in CORPUS if n.endswith(".json")))
def test_corpus_documents_cost_nothing_when_unchanged(name: str) -> None:
    path = corpus_chat(name)
    state = ADAPTER.initial_state(str(path))
    first = parse_doc(path, state=state)
    assert parse_doc(path, state=state) == []
    # A lost state re-emits, under the very same keys.
    again = parse_doc(path)
    assert [e.key for e in events(again)] == [e.key for e in events(first)]
    assert len(orjson.dumps(state)) < 16 * 1024


def test_corpus_a2a_cwd_from_session_context_matches_project_root() -> None:
    slug = gemini_tmp() / "code-oss-for-cloud-shell"
    for name in (
        "session-2026-08-13T04-43-a2a-serv.jsonl",
        "session-2026-08-16T07-02-a2a-serv.jsonl",
    ):
        path = slug / "chats" / name
        records = parse_jsonl(path)
        cwds = {f.cwd for f in facts(records) if f.cwd}
        assert [digest(c) for c in cwds] == [A2A_CWD_DIGEST]
        root_file = gemini.project_root_file(str(path))
        assert root_file == str(slug / ".project_root")
        root = gemini.parse_project_root(Path(root_file).read_text())
        assert root in cwds
        header = read_lines(path)[0][1]
        assert gemini.project_hash(root) == header["projectHash"]


def test_corpus_a2a_repeated_headers_do_not_duplicate() -> None:
    path = (
        gemini_tmp()
        / "code-oss-for-cloud-shell"
        / "chats"
        / "session-2026-08-16T07-02-a2a-serv.jsonl"
    )
    lines = read_lines(path)
    assert sum(1 for _, o in lines if "sessionId" in o) == 4
    records, state = parse_lines_with(ADAPTER, path, lines)
    assert events(records) == []  # the only user message is the environment context
    assert len(state["msgs"]) == 1


def test_corpus_memory_documents_yield_nothing() -> None:
    memory = sorted(gemini_tmp().glob("*/logs.json")) + sorted(
        gemini_tmp().glob("*/checkpoint-*.json")
    )
    assert len(memory) == 4
    for path in memory:
        assert parse_doc(path) == []


def test_corpus_checkpoint_names_the_hash_directory_root() -> None:
    (checkpoint,) = sorted(gemini_tmp().glob("*/checkpoint-*.json"))
    project = checkpoint.parent.name
    root = gemini.project_root_from_checkpoint(load(checkpoint), project)
    assert root is not None and gemini.project_hash(root) == project
    assert gemini.project_root_from_checkpoint(load(checkpoint), "0" * 64) is None


# -- the legacy .json document fixture --------------------------------------------------


@pytest.fixture(scope="module")
def doc_records() -> list[Record]:
    return parse_doc(DOC)


def test_doc_sequence(doc_records: list[Record]) -> None:
    kinds = Counter(e.kind for e in events(doc_records))
    assert kinds == {
        TURN_START: 2,
        TURN_END: 1,
        PROMPT: 2,
        MESSAGE: 2,
        REASONING: 3,
        TOOL_CALL: 10,
        TOOL_RESULT: 10,
        USAGE: 4,
        ERROR: 1,
        COMPACTION: 1,
    }
    assert [r.record_type for r in doc_records if isinstance(r, Drift)] == ["message/gemini_draft"]
    prompts = events(doc_records, PROMPT)
    assert [p.key for p in prompts] == [
        f"gemini:{DOC_SID}:a1f0e1c2-0000-4000-8000-000000000001",
        f"gemini:{DOC_SID}:a1f0e1c2-0000-4000-8000-000000000005",
    ]
    assert all(e.session_id == f"gemini:{DOC_SID}" for e in events(doc_records))
    assert [f.title for f in facts(doc_records) if f.title] == ["Fix the typo in README.md"]
    (last,) = [f for f in facts(doc_records) if f.model]
    assert (last.model, last.started_at, last.last_event_at) == (
        "gemini-2.5-flash",
        "2025-10-01T09:00:00.000Z",
        "2025-10-01T09:05:00.000Z",
    )
    assert all(f.cwd is None for f in facts(doc_records))  # a hash directory, no context


def test_doc_turns(doc_records: list[Record]) -> None:
    first, second = (p.key for p in events(doc_records, PROMPT))
    (end,) = events(doc_records, TURN_END)
    assert (end.key, end.turn_id, end.ts) == (f"{first}:end", first, "2025-10-01T09:00:30.000Z")
    calls = events(doc_records, TOOL_CALL)
    assert [c.turn_id for c in calls] == [first] * 4 + [second] * 6
    assert events(doc_records, ERROR)[0].turn_id == second
    turn_models = [
        (t.turn_id, t.model) for t in doc_records if isinstance(t, TurnFacts) and t.model
    ]
    assert turn_models == [(first, "gemini-2.5-pro"), (second, "gemini-2.5-flash")]


def test_doc_tool_calls_pair_with_results(doc_records: list[Record]) -> None:
    calls = events(doc_records, TOOL_CALL)
    results = {r.call_id: r for r in events(doc_records, TOOL_RESULT)}
    assert set(results) == {c.call_id for c in calls}
    for call in calls:
        result = results[call.call_id]
        assert (result.tool, result.input) == (call.tool, call.input)
        assert call.key == f"gemini:{DOC_SID}:call:{call.call_id}"
        assert result.key == f"gemini:{DOC_SID}:result:{call.call_id}"
        assert "output" not in result.data and result.contents  # output only for scanning
    replace = next(c for c in calls if c.tool == "replace")
    assert replace.data["input"]["new_string"] == {"omitted_chars": 8}
    assert replace.input is not None and replace.input["new_string"] == "The demo"
    status = {
        r.tool + ":" + str(r.call_id)[-4:]: (r.data["is_error"], r.data["interrupted"])
        for r in results.values()
    }
    assert status["web_fetch:cc05"] == (True, False)
    assert status["run_shell_command:cc06"] == (False, True)
    exit_codes = {str(r.call_id)[-4:]: r.data["exit_code"] for r in results.values()}
    assert (exit_codes["bb02"], exit_codes["cc01"], exit_codes["cc06"]) == (0, 1, None)


def test_doc_usage_and_reasoning(doc_records: list[Record]) -> None:
    usage = events(doc_records, USAGE)
    assert [u.data["model"] for u in usage] == ["gemini-2.5-pro"] * 3 + ["gemini-2.5-flash"]
    assert usage[0].data == {
        "input_tokens": 1200,
        "output_tokens": 40,
        "cache_read_tokens": 800,
        "cache_creation_tokens": 0,
        "reasoning_tokens": 25,
        "total_tokens": 1265,
        "model": "gemini-2.5-pro",
    }
    assert [r.data for r in events(doc_records, REASONING)] == [
        {"chars": 32},
        {"chars": 18},
        {"chars": 16},
    ]
    compaction = events(doc_records, COMPACTION)[0]
    assert compaction.data == {"trigger": None, "pre_tokens": 12000}


def test_doc_derived_reads_edits_commands(doc_records: list[Record]) -> None:
    out = derived(doc_records)
    assert by_call(out, READ) == {
        "read_file": [("/home/dev/demo/README.md", "read")],
        "run_shell_command": [("/home/dev/demo/setup.py", "read")],
        "search_file_content": [("/home/dev/demo/src", "grep")],
        "read_many_files": [("/home/dev/demo/src/app.py", "read")],
    }
    assert by_call(out, EDIT) == {
        "replace": [("/home/dev/demo/README.md", "update")],
        "write_file": [("/home/dev/demo/NOTES.md", "write")],
        "run_shell_command": [("/home/dev/demo/build", "delete")],
    }
    commands = [
        (c.data["command"], c.data["cwd"], c.data["exit_code"], c.data["interrupted"])
        for c in out
        if c.kind == COMMAND
    ]
    assert commands == [
        ("head -n 5 setup.py", "/home/dev/demo", 0, False),
        ("pytest -q tests", "/home/dev/demo", 1, False),
        ("rm -rf build", "/home/dev/demo", None, True),
    ]


def test_doc_rewritten_with_one_more_message_emits_only_it() -> None:
    whole = load(DOC)
    before = copy.deepcopy(whole)
    before["messages"] = before["messages"][:5]  # up to the second prompt
    state = ADAPTER.initial_state(str(DOC))
    first = parse_doc(DOC, before, state)
    grown = copy.deepcopy(before)
    grown["messages"].append(whole["messages"][5])
    grown["lastUpdated"] = "2025-10-01T09:01:30.000Z"
    added = parse_doc(DOC, grown, state)
    new_id = whole["messages"][5]["id"]
    assert {e.kind for e in events(added)} == {MESSAGE, REASONING, TOOL_CALL, TOOL_RESULT, USAGE}
    assert all(new_id in e.key or e.call_id for e in events(added))
    assert len(events(added, TOOL_CALL)) == 6
    assert not {e.key for e in events(added)} & {e.key for e in events(first)}
    # And the whole document from there adds only the last four messages' records.
    rest = parse_doc(DOC, whole, state)
    assert Counter(e.kind for e in events(rest)) == {ERROR: 1, COMPACTION: 1}


def test_doc_changed_message_emits_only_the_new_part() -> None:
    whole = load(DOC)
    pending = copy.deepcopy(whole)
    call = pending["messages"][1]["toolCalls"][0]
    call["status"], call["result"] = "executing", None
    state = ADAPTER.initial_state(str(DOC))
    parse_doc(DOC, pending, state)
    finished = parse_doc(DOC, whole, state)
    assert [(e.kind, e.call_id) for e in events(finished)] == [(TOOL_RESULT, call["id"])]


def test_doc_fresh_state_yields_the_same_keys(doc_records: list[Record]) -> None:
    keys = [e.key for e in events(doc_records)]
    assert len(keys) == len(set(keys))
    assert [e.key for e in events(parse_doc(DOC))] == keys


def test_doc_seeded_cwd_from_the_checkpoint() -> None:
    root = gemini.project_root_from_checkpoint(load(DOC_DIR / "checkpoint-typo.json"), DOC_DIR.name)
    assert root == DOC_ROOT
    state = ADAPTER.initial_state(str(DOC))
    gemini.seed_cwd(state, root)
    records = parse_doc(DOC, state=state)
    assert {e.cwd for e in events(records)} == {DOC_ROOT}
    assert {f.cwd for f in facts(records) if f.cwd} == {DOC_ROOT}
    assert parse_doc(DOC_DIR / "logs.json") == []


# -- the JSONL fixture ----------------------------------------------------------------


@pytest.fixture(scope="module")
def jsonl_records() -> list[Record]:
    return parse_jsonl(JSONL)


def test_jsonl_sequence(jsonl_records: list[Record]) -> None:
    kinds = Counter(e.kind for e in events(jsonl_records))
    assert kinds == {
        TURN_START: 2,
        TURN_END: 1,
        PROMPT: 2,
        MESSAGE: 2,
        REASONING: 1,
        TOOL_CALL: 8,
        TOOL_RESULT: 8,
        USAGE: 3,
        COMPACTION: 1,
        ERROR: 1,
    }
    assert [r.record_type for r in jsonl_records if isinstance(r, Drift)] == ["line/$frobnicate"]
    assert {e.cwd for e in events(jsonl_records)} == {JSONL_ROOT}  # from the session context
    first = events(jsonl_records, PROMPT)[0]
    assert first.data == {"text": "Add a 1.1 entry to @CHANGELOG.md"}  # what was typed
    assert [label for label, _ in first.contents] == ["context"]  # what the model saw
    titles = [f.title for f in facts(jsonl_records) if f.title]
    assert titles == ["Add a 1.1 entry to @CHANGELOG.md", "Add a 1.1 changelog entry"]
    models = [f.model for f in facts(jsonl_records) if f.model]
    assert models == ["gemini-3-pro-preview", "gemini-3-flash-preview"]


def test_jsonl_re_emitted_messages_yield_their_parts_once(jsonl_records: list[Record]) -> None:
    g1 = "c3d4e5f6-0000-4000-8000-000000000002"
    g2 = "c3d4e5f6-0000-4000-8000-000000000004"
    mine = [e for e in events(jsonl_records) if g1 in e.key or g2 in e.key or e.call_id]
    assert Counter(e.kind for e in mine) == {
        MESSAGE: 1,
        REASONING: 1,
        USAGE: 2,
        TOOL_CALL: 8,
        TOOL_RESULT: 8,
    }
    keys = [e.key for e in events(jsonl_records)]
    assert len(keys) == len(set(keys))
    # The lines re-emitting a message, parsed again on their own, add nothing.
    lines = read_lines(JSONL)
    _, state = parse_lines_with(ADAPTER, JSONL, lines)
    again, _ = parse_lines_with(
        ADAPTER, JSONL, [ln for ln in lines if ln[1].get("id") in (g1, g2)], state
    )
    assert events(again) == []


def test_jsonl_results_and_exit_codes(jsonl_records: list[Record]) -> None:
    results = {str(r.call_id): r for r in events(jsonl_records, TOOL_RESULT)}
    assert {
        k: v.data["exit_code"] for k, v in results.items() if v.tool == "run_shell_command"
    } == {
        "run_shell_command_1777888814000_1": 0,
        "run_shell_command_1777888823000_2": 1,
    }
    assert results["write_file_1777888822000_1"].data["is_error"] is True
    # The tool response the CLI also records in the user role is not a prompt.
    assert len(events(jsonl_records, PROMPT)) == 2


def test_jsonl_derived_reads_edits_commands(jsonl_records: list[Record]) -> None:
    out = derived(jsonl_records)
    assert by_call(out, READ) == {
        "read_file": [("/home/dev/demo-app/CHANGELOG.md", "read")],
        "run_shell_command": [("/home/dev/demo-app/docs/index.md", "read")],
        "grep_search": [("/home/dev/demo-app", "grep")],  # names_only shows no content
        "read_many_files": [("/home/dev/demo-app/src/app.js", "read")],
    }
    assert by_call(out, EDIT) == {
        "replace": [("/home/dev/demo-app/CHANGELOG.md", "update")],
        "write_file": [("/etc/demo.conf", "write")],
    }
    assert [e.data["external"] for e in out if e.kind == EDIT and e.tool == "write_file"] == [True]
    commands = [
        (c.data["command"], c.data["cwd"], c.data["exit_code"]) for c in out if c.kind == COMMAND
    ]
    assert commands == [
        ("cat index.md", "/home/dev/demo-app/docs", 0),
        ("npm test", "/home/dev/demo-app", 1),
    ]


def test_jsonl_state_survives_a_json_round_trip() -> None:
    lines = read_lines(JSONL)
    whole = parse_jsonl(JSONL)
    state = ADAPTER.initial_state(str(JSONL))
    records: list[Record] = []
    for offset, obj in lines:
        state = orjson.loads(orjson.dumps(state))
        records += ADAPTER.parse(obj, offset, str(JSONL), state)
    assert records == whole


def test_jsonl_set_messages_rebuild_adds_nothing_already_seen() -> None:
    lines = read_lines(JSONL)
    _, state = parse_lines_with(ADAPTER, JSONL, lines)
    latest: dict[str, Any] = {}
    for _, obj in lines:
        if isinstance(obj.get("id"), str):
            latest[obj["id"]] = obj
    rebuild = {"$set": {"messages": list(latest.values())}}
    assert events(ADAPTER.parse(rebuild, 99999, str(JSONL), state)) == []
    # A rebuild read from scratch (a lost state) names the same keys.
    fresh = ADAPTER.initial_state(str(JSONL))
    ADAPTER.parse(lines[0][1], 0, str(JSONL), fresh)
    rebuilt = {e.key for e in events(ADAPTER.parse(rebuild, 99999, str(JSONL), fresh))}
    assert rebuilt == {e.key for e in events(parse_jsonl(JSONL))}


def test_subagent_recording() -> None:
    records = parse_jsonl(SUBAGENT)
    evs = events(records)
    assert Counter(e.kind for e in evs) == {
        DIRECTIVE: 1,  # its brief from the parent agent, never a person's prompt
        MESSAGE: 1,
        TOOL_CALL: 1,
        TOOL_RESULT: 1,
        USAGE: 1,
    }
    assert {(e.session_id, e.subagent_id, e.turn_id) for e in evs} == {
        (f"gemini:{JSONL_SID}", SUB_ID, None)
    }
    assert all(e.key.startswith(f"gemini:{JSONL_SID}:{SUB_ID}:") for e in evs)
    assert all(f.title is None and f.model is None for f in facts(records))
    assert {f.cwd for f in facts(records)} == {JSONL_ROOT}  # the directories, hash-checked
    assert by_call(derived(records), READ) == {
        "read_file": [("/home/dev/demo-app/package.json", "read")]
    }


# -- helpers for the ingest layer --------------------------------------------------------


def test_project_root_helpers() -> None:
    assert gemini.parse_project_root("/home/dev/demo-app") == "/home/dev/demo-app"
    assert gemini.parse_project_root("  C:\\work\\app\n") == "C:\\work\\app"
    assert gemini.parse_project_root("relative/path") is None
    assert gemini.parse_project_root("/a\n/b") is None
    assert (
        gemini.project_root_file("/h/.gemini/tmp/slug/chats/s.jsonl")
        == "/h/.gemini/tmp/slug/.project_root"
    )
    assert (
        gemini.project_root_file("/h/.gemini/tmp/slug/chats/p/sub.jsonl")
        == "/h/.gemini/tmp/slug/.project_root"
    )
    assert gemini.project_root_file("/elsewhere/s.json") is None
    text = "I'm currently working in the directory: /srv/x\n"
    assert gemini.project_root_in_text(text) == "/srv/x"
    assert gemini.project_root_in_text(text, gemini.project_hash("/srv/x")) == "/srv/x"
    assert gemini.project_root_in_text(text, gemini.project_hash("/srv/y")) is None


@pytest.mark.parametrize(
    ("output", "status", "code"),
    [
        ("Output: hi\nProcess Group PGID: 1", "success", 0),
        ("Output: hi\nExit Code: 3\nProcess Group PGID: 1", "error", 3),
        ("Output: hi\nSignal: 9\nProcess Group PGID: 1", "success", None),
        ("Output: (empty)\nError: spawn ENOENT\nExit Code: 127", "error", 127),
        (
            "Command: ls\nDirectory: (root)\nOutput: x\nError: (none)\nExit Code: (none)",
            "success",
            None,
        ),
        (
            "Command: ls\nDirectory: (root)\nOutput: x\nError: (none)\nExit Code: 2\nSignal: (none)",
            "success",
            2,
        ),
        ("Command moved to background (PID: 12). Output hidden.", "success", None),
        ("Command was cancelled by user before it could complete.", "cancelled", None),
    ],
)
def test_shell_exit_codes(output: str, status: str, code: int | None) -> None:
    assert gemini._exit_code([output], status) == code


# -- properties -------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
tool_calls = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["c1", "c2"]) | json_values,
        "name": st.sampled_from(["run_shell_command", "read_file", "replace", "x"]) | json_values,
        "args": json_values | st.just({"command": "cat a", "dir_path": "d"}),
        "status": st.sampled_from(["success", "error", "cancelled", "executing"]) | json_values,
        "result": json_values
        | st.just([{"functionResponse": {"id": "c1", "response": {"output": "Output: x"}}}]),
        "timestamp": json_values,
    },
)
messages = st.fixed_dictionaries(
    {"id": st.sampled_from(["m1", "m2", "m3"]) | json_values},
    optional={
        "type": st.sampled_from(sorted(gemini.MESSAGE_TYPES) + ["odd"]) | json_values,
        "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "1767225600000"]) | json_values,
        "content": json_values | st.lists(st.fixed_dictionaries({"text": json_values}), max_size=2),
        "displayContent": json_values,
        "thoughts": json_values
        | st.lists(st.fixed_dictionaries({"subject": json_values}), max_size=2),
        "tokens": json_values | st.fixed_dictionaries({"input": json_values, "total": json_values}),
        "model": json_values,
        "toolCalls": json_values | st.lists(tool_calls, max_size=3),
    },
)
metadata = st.fixed_dictionaries(
    {"sessionId": st.just("s1") | json_values, "projectHash": st.just("h") | json_values},
    optional={
        "startTime": json_values,
        "lastUpdated": json_values,
        "directories": json_values,
        "summary": json_values,
        "kind": json_values,
        "messages": st.lists(messages, max_size=4) | json_values,
    },
)
lines = (
    messages
    | metadata
    | st.fixed_dictionaries({"$set": metadata | json_values})
    | st.fixed_dictionaries({"$rewindTo": json_values})
    | st.dictionaries(st.text(max_size=6), json_values, max_size=3)
)


def _run(objs: list[dict[str, Any]], path: str) -> tuple[list[Record], dict[str, Any]]:
    state = ADAPTER.initial_state(path)
    out: list[Record] = []
    for i, obj in enumerate(objs):
        out += ADAPTER.parse(obj, i * 10, path, state)
    return out, state


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, min_size=1, max_size=6), st.sampled_from([str(JSONL), str(SUBAGENT)]))
def test_parse_never_raises_and_is_deterministic(objs: list[dict[str, Any]], path: str) -> None:
    first, state = _run(objs, path)
    second, _ = _run(copy.deepcopy(objs), path)
    assert first == second
    orjson.dumps(state)  # stays JSON-serializable
    for rec in first:
        assert isinstance(rec, Event | SessionFacts | TurnFacts | Drift)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(metadata | json_values, min_size=1, max_size=3))
def test_parse_document_never_raises_and_re_reading_adds_nothing(docs: list[Any]) -> None:
    state = ADAPTER.initial_state(str(DOC))
    for doc in docs:
        ADAPTER.parse_document(doc, str(DOC), state)
        orjson.dumps(state)
    for doc in docs:
        assert events(ADAPTER.parse_document(copy.deepcopy(doc), str(DOC), state)) == []
