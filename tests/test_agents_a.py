"""Cursor, Cline (with Roo Code, Kilo Code and the Cline SDK's sessions) and Continue:
every corpus file and every fixture counted exactly against an independent count of its
raw records (tests/raw_counts_agents.py); rewrites cost what changed; a retried request
counts once; Drift for what is not understood, never for what is ignored on purpose;
mutated records never crash an adapter (Hypothesis); Cursor's chat database and the
lookup of its cwd-named folders.

The fixtures (tests/fixtures/agents/home) are made up, in the shapes of the agents'
sources (docs/formats.md names each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.adapters import ADAPTERS
from agentsrc_daemon.adapters import cline as cline_adapter
from agentsrc_daemon.events import (
    COMPACTION,
    ERROR,
    MESSAGE,
    PROMPT,
    TOOL_CALL,
    TOOL_RESULT,
    USAGE,
    Drift,
    Event,
    SessionFacts,
)
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.cursor_db import CursorChatDB
from agentsrc_daemon.ingest.folders import encode, resolve_encoded

from agents_a_runner import counts_of, events_of, parse_file, same, with_derived
from corpus import corpus_home
from raw_counts_agents import (
    cline_counts,
    cline_session_counts,
    continue_counts,
    cursor_counts,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents" / "home"
EXTENSIONS = {
    "saoudrizwan.claude-dev": "cline",
    "rooveterinaryinc.roo-cline": "roo-code",
    "kilocode.kilo-code": "kilo-code",
}


# --------------------------------------------------------------------------- the units


def units(home: Path) -> dict[str, tuple[str, list[Path], Any]]:
    """Each session's files (what one count covers), its agent and its raw counter:
    a Cursor transcript, a task folder, a Cline SDK session, a Continue session."""
    out: dict[str, tuple[str, list[Path], Any]] = {}
    for path in sorted(home.glob(".cursor/projects/*/agent-transcripts/**/*.*")):
        out[f"cursor:{path.name}"] = ("cursor", [path], lambda p=path: cursor_counts(p))
    for task in sorted(home.glob(".config/*/User/globalStorage/*/tasks/*")):
        agent = EXTENSIONS[task.parent.parent.name]
        out[f"{agent}:{task.name}"] = (agent, sorted(task.glob("*.json")),
                                       lambda t=task, a=agent: cline_counts(t, a))
    for session in sorted(home.glob(".cline/data/sessions/*")):
        out[f"cline:{session.name}"] = ("cline", sorted(session.glob("*.json")),
                                        lambda s=session: cline_session_counts(s))
    for path in sorted(home.glob(".continue/sessions/*.json")):
        if path.name != "sessions.json":
            out[f"continue:{path.name}"] = ("continue", [path], lambda p=path: continue_counts(p))
    return out


def run(agent: str, files: list[Path]) -> list[Any]:
    records: list[Any] = []
    for path in files:
        records += parse_file(agent, path)[0]
    return with_derived(records)


# (prompts, briefs, messages, tool calls, commands' exit codes, edits by operation,
#  input, output, cache read, cache write tokens, reported dollars, usage records with a
#  cost), worked out from the files by hand and held equal to the independent count.
# fmt: off
CORPUS = {
    "cursor:116e3986-3c9d-4b74-a980-0be5d477812d.jsonl": (1, 0, 1, 0, {}, {}, (0, 0, 0, 0), 0.0, 0),
    "cursor:d3317164-4108-415c-af8e-98529c77ab11.jsonl": (2, 0, 11, 23, {None: 1}, {"update": 7, "write": 1}, (0, 0, 0, 0), 0.0, 0),
    "cursor:11e80ae8-1c35-4e59-89f6-de4cd3e47ffa.jsonl": (1, 0, 34, 89, {None: 27}, {"update": 13, "write": 3}, (0, 0, 0, 0), 0.0, 0),
    "cursor:4b7645b1-0a23-4409-9d05-3284d79a5ad7.jsonl": (0, 1, 3, 54, {None: 4}, {}, (0, 0, 0, 0), 0.0, 0),
    "cursor:937ab067-7f13-4dd2-a5d0-f04f64ef6218.txt": (30, 0, 56, 77, {None: 9}, {"update": 24}, (0, 0, 0, 0), 0.0, 0),
    # 31 requests, 7 failed before anything was billed; the 33 retry notices count nothing.
    "cline:1767644899093": (15, 0, 9, 15, {}, {}, (144404, 4086, 632838, 0), 0.477713, 24),
    "continue:02044b99-f94b-4df0-a981-3b26d054b6b0.json": (2, 0, 1, 20, {0: 3, 1: 3}, {}, (0, 0, 0, 0), 0.0, 0),
}
FIXTURE = {
    "cursor:5e0a2900-0000-4000-8000-00000000d001.txt": (2, 0, 3, 5, {None: 1}, {"update": 1, "write": 1}, (0, 0, 0, 0), 0.0, 0),
    "cursor:5e0a2900-0000-4000-8000-00000000d002.jsonl": (2, 0, 2, 3, {None: 1}, {"delete": 1}, (0, 0, 0, 0), 0.0, 0),
    "cursor:5e0a2900-0000-4000-8000-00000000d003.jsonl": (0, 1, 1, 2, {}, {}, (0, 0, 0, 0), 0.0, 0),
    # 7 requests billed (one retried, counted once), one failed, and the totals of the
    # requests a checkpoint restore removed.
    "cline:1770000000000": (2, 0, 3, 5, {0: 1, 1: 1}, {"update": 1, "write": 1}, (2510, 895, 19020, 3120), 0.0495, 8),
    "roo-code:0195f0a2-1111-7000-8000-00000000a001": (1, 0, 2, 3, {2: 1}, {"update": 1}, (1700, 340, 25000, 8100), 0.0453, 4),
    "kilo-code:0195f0a2-2222-7000-8000-00000000b002": (1, 0, 1, 1, {1: 1}, {}, (100, 160, 10100, 0), 0.0058, 2),
    "cline:1784094124598_rruoq": (2, 1, 2, 5, {None: 3}, {"update": 1}, (6500, 545, 9600, 900), 0.0478, 3),
    "continue:7c0a5e11-0000-4000-8000-00000000c001.json": (1, 0, 1, 4, {2: 1}, {"write": 1, "update": 1}, (7700, 240, 6600, 0), 0.0, 0),
    "continue:7c0a5e11-0000-4000-8000-00000000c002.json": (1, 0, 1, 0, {}, {}, (3000, 200, 1000, 0), 0.0123, 1),
}
# fmt: on


def summary(c: Any) -> tuple[Any, ...]:
    commands: dict[int | None, int] = {}
    for code in c.commands:
        commands[code] = commands.get(code, 0) + 1
    edits: dict[str, int] = {}
    for _, op in c.edits:
        edits[op] = edits.get(op, 0) + 1
    usage = tuple(c.usage[k] for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                       "cache_creation_tokens"))
    return (c.prompts, c.briefs, c.messages, c.tool_calls, commands, edits, usage,
            round(c.cost, 6), c.costs)


def _check(home: Path, expected: dict[str, tuple[Any, ...]], key: str) -> None:
    agent, files, raw = units(home)[key]
    ours = counts_of([e for e in run(agent, files) if isinstance(e, Event)])
    theirs = raw()
    got, want = same(ours, theirs)
    assert got == want  # the adapters' events, as the raw records count them
    assert summary(theirs) == expected[key]


def test_every_corpus_and_fixture_session_is_counted() -> None:
    assert sorted(units(corpus_home())) == sorted(CORPUS)
    assert sorted(units(FIXTURES)) == sorted(FIXTURE)


@pytest.mark.parametrize("key", sorted(CORPUS))
def test_corpus_counts(key: str) -> None:
    _check(corpus_home(), CORPUS, key)


@pytest.mark.parametrize("key", sorted(FIXTURE))
def test_fixture_counts(key: str) -> None:
    _check(FIXTURES, FIXTURE, key)


def test_sources_of_the_fixtures_and_the_corpus() -> None:
    """Every file above is a source of its agent's root, in its mode; nothing else under
    those roots is."""
    for home in (corpus_home(), FIXTURES):
        from agentsrc_daemon.config import load_config

        cfg = load_config(env={"HOME": str(home)})
        found: dict[str, str] = {}
        for root in cfg.roots().values():
            if root.is_dir():
                for spec, _ in sources.walk_sources(root, cfg.roots()):
                    found[spec.path] = f"{spec.adapter}/{spec.mode}"
        listed = {str(p) for _, files, _ in units(home).values() for p in files}
        listed |= {str(p) for p in home.glob(".continue/sessions/sessions.json")}
        mine = {p: m for p, m in found.items() if m.split("/")[0] in
                ("cursor", "cline", "roo-code", "kilo-code", "continue")}
        assert set(mine) == listed
        for path, mode in mine.items():
            want = "jsonl" if path.endswith(".jsonl") else "document"
            assert mode.endswith(want), path


# --------------------------------------------------------------------------- drift


def test_drift_only_for_what_is_not_understood() -> None:
    drifts: dict[str, list[str]] = {}
    for home in (corpus_home(), FIXTURES):
        for key, (agent, files, _) in units(home).items():
            found = [r.record_type for r in run(agent, files) if isinstance(r, Drift)]
            if found:
                drifts[key] = found
    assert drifts == {
        # The fixtures' own strange records: a role Cursor's JSONL has not, a block type
        # it has not, a row kind Cline has not.
        "cursor:5e0a2900-0000-4000-8000-00000000d002.jsonl": ["role/system", "user/image"],
        "cline:1770000000000": ["say/a_new_kind_of_row"],
    }


def test_ignored_and_handled_row_kinds_do_not_overlap() -> None:
    handled = cline_adapter.MESSAGE_ROWS | cline_adapter.ERROR_ROWS | cline_adapter.COMPACTION_ROWS
    assert not handled & cline_adapter.IGNORED


# --------------------------------------------------------------------------- rewrites


def _rows(n: int, extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    t = 1770000000000
    rows: list[dict[str, Any]] = [{"ts": t, "type": "say", "say": "task", "text": "Do it"}]
    for i in range(1, n):
        rows.append({"ts": t + i * 10, "type": "say", "say": "text", "text": f"step {i}"})
    return rows + (extra or [])


def _ui(tmp_path: Path, rows: list[dict[str, Any]], state: dict[str, Any] | None) -> tuple[list[Any], dict[str, Any]]:
    path = tmp_path / "tasks" / "1770000000000" / "ui_messages.json"
    return parse_file("cline", path, state, orjson.dumps(rows))


def test_a_rewrite_emits_only_what_changed(tmp_path: Path) -> None:
    records, state = _ui(tmp_path, _rows(200), None)
    assert sum(isinstance(r, Event) and r.kind == MESSAGE for r in records) == 199
    again, state = _ui(tmp_path, _rows(200), state)
    assert events_of(again) == []  # nothing new: a digest per row, no event
    grown, state = _ui(tmp_path, _rows(201), state)
    assert [(e.kind, e.data.get("text"), e.revision) for e in events_of(grown)] == [
        (MESSAGE, "step 200", 0)
    ]
    rows = _rows(201)
    rows[5]["text"] = "step 5, corrected"
    changed, state = _ui(tmp_path, rows, state)
    assert [(e.kind, e.key.rsplit(":", 2)[-2], e.revision) for e in events_of(changed)] == [
        (MESSAGE, "1770000000050", 1)
    ]


def test_a_retried_request_counts_once(tmp_path: Path) -> None:
    """The request's row is written when it starts, marked failed, and written again
    by the retry that goes through: one request, its last counts, a higher revision."""
    started = {"ts": 1770000001000, "type": "say", "say": "api_req_started",
               "text": json.dumps({"request": "go"})}
    failed = {**started, "text": json.dumps({"request": "go", "tokensIn": 0, "tokensOut": 0,
                                             "cacheReads": 0, "cacheWrites": 0, "cost": 0,
                                             "cancelReason": "streaming_failed"})}
    notices = [{"ts": 1770000002000, "type": "say", "say": "error_retry", "text": "{}"},
               {"ts": 1770000003000, "type": "say", "say": "api_req_retried"}]
    done = {**started, "text": json.dumps({"request": "go", "tokensIn": 10, "tokensOut": 20,
                                           "cacheReads": 30, "cacheWrites": 0, "cost": 0.5})}
    usage: list[Event] = []
    state = None
    for version in ([started], [failed, *notices], [done, *notices], [done, *notices]):
        records, state = _ui(tmp_path, _rows(1, version), state)
        usage += [e for e in events_of(records) if e.kind == USAGE]
    assert [(e.key, e.revision, e.data["input_tokens"], e.data["cost"]) for e in usage] == [
        ("cline:1770000000000:1770000001000:usage", 2, 10, 0.5)
    ]


def test_requests_a_checkpoint_restore_removed_count_once(tmp_path: Path) -> None:
    """Seen before the restore, they were counted from their rows: the deleted_api_reqs
    row adds only what those rows did not hold."""
    req = {"ts": 1770000001000, "type": "say", "say": "api_req_started",
           "text": json.dumps({"request": "a", "tokensIn": 100, "tokensOut": 10, "cost": 0.25})}
    records, state = _ui(tmp_path, _rows(1, [req]), None)
    deleted = {"ts": 1770000009000, "type": "say", "say": "deleted_api_reqs",
               "text": json.dumps({"tokensIn": 130, "tokensOut": 10, "cacheReads": 0,
                                   "cacheWrites": 0, "cost": 0.3})}
    after, _ = _ui(tmp_path, _rows(1, [deleted]), state)
    fresh, _ = _ui(tmp_path / "other", _rows(1, [deleted]), None)
    seen = [e for e in events_of(records + after) if e.kind == USAGE]
    assert sum(e.data["input_tokens"] for e in seen) == 130
    assert round(sum(e.data["cost"] for e in seen), 6) == 0.3
    assert [(e.data["input_tokens"], e.data["cost"]) for e in events_of(fresh) if e.kind == USAGE] == [
        (130, 0.3)
    ]


def test_a_cursor_text_transcript_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "projects" / "x" / "agent-transcripts" / "c1.txt"
    first = "user:\n<user_query>\nhi\n</user_query>\n\nassistant:\nWorking"
    records, state = parse_file("cursor", path, None, first.encode())
    assert [e.kind for e in events_of(records)] == ["turn_start", "prompt", "message"]
    grown = first + " on it.\n[Tool call] Shell\n  command: make\n\n[Tool result] Shell\n"
    records, state = parse_file("cursor", path, state, grown.encode())
    got = [(e.kind, e.revision) for e in events_of(records)]
    assert got == [("tool_call", 1), ("tool_result", 1), ("message", 1)]
    assert events_of(parse_file("cursor", path, state, grown.encode())[0]) == []


def test_continue_session_usage_grows_by_revision(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "s1.json"
    doc = {"sessionId": "s1", "title": "New Session", "workspaceDirectory": "/w", "history": [],
           "usage": {"totalCost": 0.1, "promptTokens": 100, "completionTokens": 10}}
    records, state = parse_file("continue", path, None, orjson.dumps(doc))
    doc["usage"] = {"totalCost": 0.25, "promptTokens": 300, "completionTokens": 30}
    more, state = parse_file("continue", path, state, orjson.dumps(doc))
    usage = [(e.key, e.revision, e.data["input_tokens"], e.data["cost"], e.data["aggregate"])
             for e in events_of(records + more) if e.kind == USAGE]
    assert usage == [("continue:s1:usage", 0, 100, 0.1, True), ("continue:s1:usage", 1, 300, 0.25, True)]


# --------------------------------------------------------------------------- facts, times


def test_times_are_the_files_and_the_session_says_so() -> None:
    path = next(corpus_home().glob(".cursor/projects/*/agent-transcripts/*.txt"))
    records = run("cursor", [path])
    assert {e.ts for e in events_of(records)} == {"2026-02-02T03:00:00.000Z"}
    facts = [r for r in records if isinstance(r, SessionFacts) and r.source]
    assert facts[0].source == {"times": "file", "project_folder": "home-ubuntu-backend"}
    assert facts[0].cwd is None  # no /home/ubuntu/backend on this machine: not guessed


def test_cline_facts_from_the_three_files() -> None:
    task = next(FIXTURES.glob(".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/*"))
    facts = [r for r in run("cline", sorted(task.glob("*.json"))) if isinstance(r, SessionFacts)]
    merged = {k: v for f in facts for k, v in vars_of(f).items() if v is not None}
    assert merged["cwd"] == "/home/dev/shop"
    assert merged["version"] == "3.57.1"
    assert merged["model"] == "claude-sonnet-4-5"
    assert merged["title"] == "Fix the failing total in src/app.py"


def vars_of(f: SessionFacts) -> dict[str, Any]:
    return {name: getattr(f, name) for name in f.__slots__ if name not in ("weak",)}


def test_continue_index_titles_and_dates() -> None:
    index = FIXTURES / ".continue" / "sessions" / "sessions.json"
    facts = [r for r in parse_file("continue", index)[0] if isinstance(r, SessionFacts)]
    assert [(f.native_id, f.title, f.started_at, f.cwd) for f in facts] == [
        ("7c0a5e11-0000-4000-8000-00000000c001", "Rename getUser", "2026-02-02T02:48:20.000Z",
         "/home/dev/api"),
        ("7c0a5e11-0000-4000-8000-00000000c002", None, "2026-02-02T02:50:00.000Z", "/home/dev/api"),
    ]


def test_what_the_model_saw_reaches_the_secret_scan() -> None:
    """Contents (never stored) ride on the events the scan stage reads: a file read's
    result, a command's output, a written file, an @-mentioned file."""
    labels: dict[str, set[str]] = {}
    for home in (FIXTURES,):
        for key, (agent, files, _) in units(home).items():
            for e in events_of(run(agent, files)):
                for label, _text in e.contents:
                    labels.setdefault(key.split(":")[0], set()).add(f"{e.kind}/{label.split(':')[0]}")
    assert labels == {
        "cursor": {"tool_call/write", "tool_call/new_string"},
        "cline": {"tool_result/request", "tool_result/output", "tool_call/diff", "tool_call/content",
                  "prompt/file", "tool_call/new_text"},
        "roo-code": {"tool_result/output", "tool_call/diff"},
        "kilo-code": {"tool_result/output"},
        "continue": {"prompt/context", "tool_result/output", "tool_call/new_string",
                     "tool_call/contents"},
    }


# --------------------------------------------------------------------------- store.db


def make_chat_db(path: Path, meta: dict[str, Any]) -> None:
    """A chat database as cursor-agent leaves it: ``meta`` (hex JSON) and ``blobs``
    (content-addressed, not read)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    conn.execute("INSERT INTO meta VALUES ('0', ?)", (orjson.dumps(meta).hex(),))
    conn.execute("INSERT INTO blobs VALUES ('ab12', x'0a0568656c6c6f')")
    conn.close()


def test_cursor_chat_database_meta(tmp_path: Path) -> None:
    agent_id = "8f1e0c2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
    db = tmp_path / "chats" / "d41d8cd98f00b204e9800998ecf8427e" / agent_id / "store.db"
    meta = {"agentId": agent_id, "latestRootBlobId": "ab12", "name": "Fix the flaky login test",
            "mode": "agent", "createdAt": 1770000000000, "lastUsedModel": "gpt-5.2"}
    make_chat_db(db, meta)
    adapter: Any = ADAPTERS["cursor"]
    reader = CursorChatDB(str(db))
    polled = reader.poll(None)
    assert [p.table for p in polled.pages] == ["meta"]
    state = adapter.initial_state(str(db))
    facts = adapter.parse_rows("meta", polled.pages[0].rows, str(db), state)
    assert [(f.session_id, f.title, f.model, f.started_at, f.source) for f in facts] == [
        (f"cursor:{agent_id}", "Fix the flaky login test", "gpt-5.2", "2026-02-02T02:40:00.000Z",
         None)
    ]
    again = reader.poll(polled.cursor)
    assert again.pages == [] and not reader.changed()  # nothing new, nothing read
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE meta SET value = ?", (orjson.dumps({**meta, "name": "Renamed"}).hex(),))
    conn.close()
    assert reader.changed()
    renamed = reader.poll(again.cursor)
    assert [f.title for f in adapter.parse_rows("meta", renamed.pages[0].rows, str(db), state)] == [
        "Renamed"
    ]
    reader.close()
    assert adapter.parse_rows("meta", [{"key": "0", "value": "zz"}], str(db), state)[0] == Drift(
        "cursor", "unknown", "meta/<not hex JSON>"
    )


def test_chat_database_path_is_a_sqlite_source() -> None:
    roots = {"cursor": Path("/h/.cursor")}
    spec = sources.classify("/h/.cursor/chats/" + "a" * 32 + "/agent-1/store.db", roots)
    assert spec is not None and (spec.adapter, spec.mode) == ("cursor", "sqlite")
    assert sources.classify("/h/.cursor/chats/" + "a" * 32 + "/agent-1/store.db-wal", roots) is None


# --------------------------------------------------------------------------- folders


def test_folder_names_resolved_against_the_filesystem(tmp_path: Path) -> None:
    (tmp_path / "Users" / "ana-b" / ".dotfiles").mkdir(parents=True)
    (tmp_path / "Users" / "ana" / "b-c").mkdir(parents=True)
    (tmp_path / "Users" / "ana-b" / "c").mkdir(parents=True)
    root = str(tmp_path)
    assert encode("/Users/ana-b/.dotfiles") == "Users-ana-b-dotfiles"
    assert resolve_encoded("Users-ana-b-dotfiles", root) == f"{root}/Users/ana-b/.dotfiles"
    # Two directories encode alike: which one it was cannot be told.
    assert resolve_encoded("Users-ana-b-c", root) is None
    assert resolve_encoded("Users-nobody-x", root) is None
    assert resolve_encoded("", root) is None


# --------------------------------------------------------------------------- robustness

# What orjson decodes a document to: no NaN and no infinity (it refuses both, so an
# adapter never meets them).
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2**40),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_json = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
_KINDS = sorted({k.split("/", 1)[1] for k in cline_adapter.IGNORED | cline_adapter.MESSAGE_ROWS
                 | cline_adapter.ERROR_ROWS}
                | {"task", "text", "tool", "command", "command_output", "api_req_started",
                   "deleted_api_reqs", "user_feedback", "use_mcp_server", "unheard_of"})


@st.composite
def _ui_row(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["say", "ask", "other"]))
    row: dict[str, Any] = {"ts": draw(st.one_of(st.integers(0, 2**41), _scalars)), "type": kind}
    row[kind] = draw(st.sampled_from(_KINDS))
    row["text"] = draw(st.one_of(st.text(max_size=30), _json.map(json.dumps), _scalars))
    if draw(st.booleans()):
        row[draw(st.text(max_size=6))] = draw(_json)
    return row


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ui_row(), max_size=12), st.sampled_from(["cline", "roo-code", "kilo-code"]))
def test_mutated_task_rows_never_crash(rows: list[dict[str, Any]], agent: str) -> None:
    path = Path("/h/tasks/1/ui_messages.json")
    adapter: Any = ADAPTERS[agent]
    state = adapter.initial_state(str(path))
    records = adapter.parse_document(rows, str(path), state)
    orjson.dumps(state)  # the state stays storable
    unknown = sum(1 for r in rows if cline_adapter._row_kind(r) not in _known(r))
    assert sum(isinstance(r, Drift) for r in records) == unknown
    # A second read of the same rows emits no event.
    assert not events_of(adapter.parse_document(rows, str(path), state))


def _known(row: dict[str, Any]) -> set[str]:
    """Every row kind the adapter handles or ignores (what is not among them is drift)."""
    names = {"say/task", "say/user_feedback", "say/text", "say/reasoning", "say/api_req_started",
             "say/deleted_api_reqs", "say/api_req_deleted", "say/subagent_usage", "say/tool",
             "ask/tool", "say/command", "ask/command", "say/command_output",
             "ask/command_output", "say/use_mcp_server", "ask/use_mcp_server",
             "say/mcp_server_response", "say/browser_action_result",
             "say/browser_action_launch", "ask/browser_action_launch", "say/browser_action",
             "ask/new_task", "ask/use_subagents", "say/use_subagents"}
    return (names | cline_adapter.IGNORED | cline_adapter.MESSAGE_ROWS | cline_adapter.ERROR_ROWS
            | cline_adapter.COMPACTION_ROWS)


@st.composite
def _cursor_line(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "system", 3]))
    blocks = draw(st.lists(st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.one_of(st.text(max_size=40), _scalars)}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "name": st.one_of(st.sampled_from(
            ["Shell", "Read", "StrReplace", "Write", "Delete", "Grep"]), _scalars),
            "input": _json}),
        _json), max_size=4))
    return {"role": role, "message": draw(st.one_of(st.just({"content": blocks}), _json))}


@settings(max_examples=150, deadline=None)
@given(st.lists(_cursor_line(), max_size=8))
def test_mutated_cursor_lines_never_crash(lines: list[dict[str, Any]]) -> None:
    path = "/h/.cursor/projects/p/agent-transcripts/c/subagents/s.jsonl"
    adapter: Any = ADAPTERS["cursor"]
    state = adapter.initial_state(path)
    for i, line in enumerate(lines):
        records = with_derived(adapter.parse(line, i * 100, path, state))
        known_role = line["role"] in ("user", "assistant")
        if not known_role:
            assert [r for r in records if isinstance(r, Drift)] != []
        orjson.dumps(state)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("user:assitn\n[Tool cal]rest<think>/ Shel:x")), max_size=300))
def test_any_cursor_text_parses(text: str) -> None:
    path = "/h/.cursor/projects/p/agent-transcripts/t.txt"
    adapter: Any = ADAPTERS["cursor"]
    state = adapter.initial_state(path)
    first = adapter.parse_text(text, path, state)
    orjson.dumps(state)
    assert events_of(adapter.parse_text(text, path, state)) == []
    assert all(e.kind in (MESSAGE, PROMPT, TOOL_CALL, TOOL_RESULT, "reasoning", "turn_start",
                          "turn_end") for e in events_of(first))


@settings(max_examples=100, deadline=None)
@given(st.lists(_json, max_size=6), st.one_of(_json, st.just(None)))
def test_mutated_continue_and_sdk_documents_never_crash(history: list[Any], usage: Any) -> None:
    doc = {"sessionId": "s", "title": "t", "workspaceDirectory": "file:///w", "history":
           [{"message": h} if isinstance(h, dict) else h for h in history], "usage": usage}
    adapter: Any = ADAPTERS["continue"]
    state = adapter.initial_state("/h/.continue/sessions/s.json")
    records = adapter.parse_document(doc, "/h/.continue/sessions/s.json", state)
    assert all(e.kind in (MESSAGE, PROMPT, TOOL_CALL, TOOL_RESULT, USAGE, ERROR, COMPACTION,
                          "reasoning", "turn_start", "turn_end") for e in events_of(records))
    sdk: Any = ADAPTERS["cline"]
    path = "/h/.cline/data/sessions/s/s.messages.json"
    state = sdk.initial_state(path)
    sdk.parse_document({"messages": history}, path, state)
    orjson.dumps(state)



# --------------------------------------------------------------------------- titles


def test_titles_follow_the_injected_context_rule() -> None:
    """Each corpus session's title from its prompts is the first text a person typed
    (tests/raw_texts.py's raw user-role texts through the rule), never injected context;
    the agent's own title (Continue's) is kept beside it, as the stronger fact."""
    from agentsrc_daemon.adapters.injected import first_person_text, is_injected, title_from

    from raw_texts import sessions

    texts = {(s.agent, s.name): s.texts for s in sessions(corpus_home())}
    checked = 0
    for key, (agent, files, _) in units(corpus_home()).items():
        facts = [r for r in run(agent, files) if isinstance(r, SessionFacts) and r.title]
        name = files[0].parent.name if agent == "cline" else files[0].name
        typed = first_person_text(texts[(agent, name)])
        from_prompts = [f.title for f in facts if f.weak or agent == "cline"]
        if key.endswith("4b7645b1-0a23-4409-9d05-3284d79a5ad7.jsonl"):
            assert from_prompts == []  # a sub-agent's brief never titles the session
            continue
        assert typed is not None
        assert from_prompts == [title_from(typed, 120)], key
        assert not any(is_injected(t) for t in from_prompts)
        checked += 1
    assert checked == 6


# --------------------------------------------------------------------------- fidelity


def _tally(home: Path) -> dict[tuple[str, str, str], list[int]]:
    """Every source of these agents under ``home`` read to its end by one Ingestor (the
    daemon's ingest path), and the batch's fidelity tally."""
    from agentsrc_daemon.config import load_config
    from agentsrc_daemon.ingest.round import Ingestor
    from agentsrc_daemon.store import Batch

    agents = ("cursor", "cline", "roo-code", "kilo-code", "continue")
    roots = {name: root for name, root in load_config(env={"HOME": str(home)}).roots().items()
             if root.is_dir() and name.split("@")[0] in agents}
    ingestor = Ingestor(max_line_bytes=1 << 24)
    batch = Batch()
    for root in roots.values():
        for spec, _ in sources.walk_sources(root, roots):
            while ingestor.ingest(spec, batch, 1 << 30).more:
                pass
    return {key: list(counts) for key, counts in batch.fidelity.items()}


def _records_on_disk(home: Path) -> dict[str, int]:
    """Per agent, the records in the files, counted from them: JSONL lines that hold a
    JSON object, one per document (JSON or text)."""
    out: dict[str, int] = {}
    for _key, (agent, files, _) in units(home).items():
        for path in files:
            n = sum(1 for raw in path.read_bytes().splitlines() if raw.lstrip().startswith(b"{")) \
                if path.suffix == ".jsonl" else 1
            out[agent] = out.get(agent, 0) + n
    if (home / ".continue" / "sessions" / "sessions.json").is_file():
        out["continue"] = out.get("continue", 0) + 1  # the index
    return out


def test_the_fidelity_tally_names_every_record() -> None:
    """Each record read once, by what became of it (events, ignored, folded, not
    understood): the corpus is understood whole; in the fixtures, exactly the records
    made strange on purpose are not (test_drift_only_for_what_is_not_understood)."""
    corpus = _tally(corpus_home())
    assert corpus == {
        ("cline", "unknown", "ui_messages"): [1, 0, 0, 0],
        ("continue", "unknown", "session"): [1, 0, 0, 0],
        ("cursor", "unknown", "role/assistant"): [102, 0, 0, 0],
        ("cursor", "unknown", "role/user"): [5, 0, 0, 0],  # 4 prompts' lines and a brief
        ("cursor", "unknown", "text"): [1, 0, 0, 0],
    }
    fixtures = _tally(FIXTURES)
    assert fixtures == {
        # Cline's model messages give the session's model and cwd, no event (its UI
        # rows hold the requests and results): folded.
        ("cline", "unknown", "api_conversation_history"): [0, 0, 1, 0],
        ("cline", "unknown", "session/manifest"): [0, 0, 1, 0],
        ("cline", "unknown", "session/messages"): [2, 0, 0, 0],
        ("cline", "unknown", "task_metadata"): [0, 0, 1, 0],
        ("cline", "unknown", "ui_messages"): [0, 0, 0, 1],  # say/a_new_kind_of_row
        ("continue", "unknown", "index"): [0, 0, 1, 0],
        ("continue", "unknown", "session"): [2, 0, 0, 0],
        ("cursor", "unknown", "role/assistant"): [5, 0, 0, 0],
        ("cursor", "unknown", "role/system"): [0, 0, 0, 1],
        ("cursor", "unknown", "role/user"): [2, 0, 0, 1],  # the image block
        ("cursor", "unknown", "text"): [1, 0, 0, 0],
        ("kilo-code", "unknown", "api_conversation_history"): [1, 0, 0, 0],
        ("kilo-code", "unknown", "ui_messages"): [1, 0, 0, 0],
        ("roo-code", "unknown", "api_conversation_history"): [1, 0, 0, 0],
        ("roo-code", "unknown", "task_metadata"): [0, 0, 1, 0],
        ("roo-code", "unknown", "ui_messages"): [1, 0, 0, 0],
    }
    for home, tally in ((corpus_home(), corpus), (FIXTURES, fixtures)):
        read: dict[str, int] = {}
        for (agent, _, _), counts in tally.items():
            read[agent] = read.get(agent, 0) + sum(counts)
        assert read == _records_on_disk(home)


# --------------------------------------------------------------------------- cost


def test_the_agents_own_costs_are_shown_as_reported() -> None:
    """Every usage event that carries the agent's cost is priced as ``reported`` at
    exactly that cost (the raw records' sum, in nano-dollars), with our estimate beside
    it where the model is known; Continue's requests without a cost are estimated."""
    from agentsrc_daemon.pricing import export, table
    from agentsrc_daemon.pricing.stage import PriceStage

    stage = PriceStage(table.loads(export.bundled_table()))
    got: dict[str, tuple[dict[str, int], int, bool]] = {}
    for home in (corpus_home(), FIXTURES):
        for key, (agent, files, raw) in units(home).items():
            usage = [e for e in run(agent, files) if isinstance(e, Event) and e.kind == USAGE]
            if not usage:
                continue
            rows = [stage.price(e.adapter, e.data, e.ts) for e in usage]
            kinds: dict[str, int] = {}
            for row in rows:
                kinds[row[1]] = kinds.get(row[1], 0) + 1
            shown = sum(row[0] or 0 for row in rows if row[1] == "reported")
            assert shown == round(raw().cost * 1e9), key  # the agent's own figures
            got[key] = (kinds, shown, all(row[2] is not None for row in rows))
    assert got == {
        # The estimates exist where a request names its model (Roo Code's and Kilo
        # Code's rows name none: unpriced by us, reported by them).
        "cline:1767644899093": ({"reported": 24}, 477_712_650, True),
        "cline:1770000000000": ({"reported": 8}, 49_500_000, True),
        "cline:1784094124598_rruoq": ({"reported": 3}, 47_800_000, True),
        "roo-code:0195f0a2-1111-7000-8000-00000000a001": ({"reported": 4}, 45_300_000, False),
        "kilo-code:0195f0a2-2222-7000-8000-00000000b002": ({"reported": 2}, 5_800_000, False),
        "continue:7c0a5e11-0000-4000-8000-00000000c001.json": ({"estimated": 3}, 0, True),
        "continue:7c0a5e11-0000-4000-8000-00000000c002.json": ({"reported": 1}, 12_300_000, False),
    }
