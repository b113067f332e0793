"""The formats of July–October 2026 (docs/formats.md): the adapters' output on the
fixtures and on the new corpus files equals, exactly, what tests/raw_counts.py counts in
their raw records; titles, sub-agent links, copies and rewinds follow the decisions
written there. tests/test_formats_e2e.py runs the same fixtures through the daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsrc_daemon.adapters import ADAPTERS
from agentsrc_daemon.adapters.injected import is_injected, person_text
from agentsrc_daemon.events import (
    CLAIM_COPY,
    DIRECTIVE,
    TOOL_RESULT,
    Drift,
    Event,
    Record,
    SessionFacts,
    TurnFacts,
)

from adapter_lines import parse_lines_with, read_lines
from corpus import corpus_home
from formats_check import summarize
from raw_counts import claude_counts, codex_counts, gemini_counts

FIXTURE_HOME = Path(__file__).resolve().parent / "fixtures" / "formats" / "home"
CODEX = ADAPTERS["codex"]
CLAUDE = ADAPTERS["claude-code"]
GEMINI = ADAPTERS["gemini"]

# The corpus files of these formats (SOURCES.md, "Newer versions"), relative to its home.
CORPUS_CODEX = [
    ".codex/sessions/2026/07/11/rollout-2026-07-11T10-23-56-019f4efd-0137-7790-9622-c175e1415048.jsonl",
    ".codex/sessions/2026/07/11/rollout-2026-07-11T10-24-10-019f4efd-37a3-7730-acde-568b9592cea0.jsonl",
]
CORPUS_CLAUDE_SESSIONS = ["5078d34e-e23c-45ab-899e-92ae7a71561b", "a40d33bf-19ab-407b-b281-8395d3c17198"]
CORPUS_GEMINI = ".gemini/tmp/ticketing-vc/chats/session-2026-04-25T08-46-c737eb36.jsonl"

C147 = ".codex/sessions/2026/08/06/rollout-2026-08-06T09-00-00-01a00147-5e55-7147-8147-000000000147.jsonl"
C148 = ".codex/sessions/2026/08/22/rollout-2026-08-22T08-30-00-01a00148-5e55-7148-8148-000000000148.jsonl"
C149 = ".codex/sessions/2026/08/28/rollout-2026-08-28T11-00-00-01a00149-5e55-7149-8149-000000000149.jsonl"
C149_CHILD = ".codex/sessions/2026/08/28/rollout-2026-08-28T11-00-20-01a00149-c41d-7149-8149-00000000c41d.jsonl"
C153 = ".codex/sessions/2026/09/20/rollout-2026-09-20T10-00-00-01a08153-5e55-7153-8153-000000000153.jsonl"
C153_CHILD = ".codex/sessions/2026/09/20/rollout-2026-09-20T10-00-12-01a08153-c41d-7153-8153-00000000c41d.jsonl"
C153_GUARDIAN = ".codex/sessions/2026/09/20/rollout-2026-09-20T10-00-30-01a08153-9a4d-7153-8153-000000009a4d.jsonl"
C153_SEGMENT = (
    ".codex/sessions/2026/09/21/rollout-2026-09-21T09-00-00-"
    "01a08153-5e55-7153-8153-000000000153_01a0815a-5e55-7153-8153-0000000005e6.jsonl"
)
PARTS = ".codex/session_parts/01a08157-5e55-7157-8157-000000000157"
VENDOR = ".codex/sessions/2026/10/09/rollout-2026-10-09T09-38-28-01a11f62-5e55-7119-8119-000000011192.jsonl"
NONSEMVER = ".codex/sessions/2026/09/30/rollout-2026-09-30T17-00-00-01a0a020-5e55-7020-8020-0000000a0202.jsonl"
CLAUDE_A = "5e0a2200-0000-4000-8000-00000000000a"
CLAUDE_B = "5e0a2200-0000-4000-8000-00000000000b"
CLAUDE_C = "5e0a2200-0000-4000-8000-00000000000c"
GEMINI_FILE = ".gemini/tmp/shop/chats/session-2026-09-22T08-00-7c1e9a52.jsonl"
GEMINI_SESSION = "gemini:7c1e9a52-3b4d-4e5f-8a6b-7c8d9e0f1a2b"


def codex_fixtures() -> list[str]:
    return sorted(str(p.relative_to(FIXTURE_HOME)) for p in (FIXTURE_HOME / ".codex").rglob("*.jsonl"))


def parse(adapter: Any, path: Path, state: dict[str, Any] | None = None) -> list[Record]:
    records, _ = parse_lines_with(adapter, path, read_lines(path), state)
    return records


def codex_session(path: Path) -> str:
    first = orjson.loads(path.read_bytes().split(b"\n", 1)[0])
    return "codex:" + first["payload"]["id"]


def drift(records: list[Record]) -> list[str]:
    return [r.record_type for r in records if isinstance(r, Drift)]


def title(records: list[Record], session: str) -> str | None:
    titles = [r.title for r in records if isinstance(r, SessionFacts) and r.session_id == session and r.title]
    return titles[-1] if titles else None


def parse_claude(projects: Path) -> list[Record]:
    return [r for p in sorted(projects.rglob("*.jsonl")) for r in parse(CLAUDE, p)]


def parse_gemini(path: Path, project_root: str | None = None) -> list[Record]:
    state = GEMINI.initial_state(str(path))
    if project_root is not None:
        from agentsrc_daemon.adapters.gemini import seed_cwd

        seed_cwd(state, project_root)
    return parse(GEMINI, path, state)


# --------------------------------------------------------------------------- exact counts


@pytest.mark.parametrize("rel", codex_fixtures(), ids=lambda r: r.rsplit("/", 1)[-1][-24:])
def test_codex_fixture_counts_equal_the_raw_records(rel: str) -> None:
    path = FIXTURE_HOME / rel
    records = parse(CODEX, path)
    assert drift(records) == []
    assert summarize(records, codex_session(path)) == codex_counts(path)


@pytest.mark.parametrize("rel", CORPUS_CODEX, ids=lambda r: r[-20:-6])
def test_codex_corpus_counts_equal_the_raw_records(rel: str) -> None:
    path = corpus_home() / rel
    records = parse(CODEX, path)
    assert drift(records) == []
    assert summarize(records, codex_session(path)) == codex_counts(path)


def test_claude_counts_equal_the_raw_records() -> None:
    projects = FIXTURE_HOME / ".claude" / "projects"
    records = parse_claude(projects)
    assert drift(records) == []
    raw = claude_counts(projects)
    assert sorted(raw) == sorted([CLAUDE_A, CLAUDE_B, CLAUDE_C])
    for session, counts in raw.items():
        assert summarize(records, f"claude-code:{session}") == counts, session


def test_claude_corpus_counts_equal_the_raw_records() -> None:
    projects = corpus_home() / ".claude" / "projects"
    records = parse_claude(projects)
    assert drift(records) == []
    raw = claude_counts(projects)
    for session in CORPUS_CLAUDE_SESSIONS:
        assert summarize(records, f"claude-code:{session}") == raw[session], session


@pytest.mark.parametrize("home", ["fixture", "corpus"])
def test_gemini_counts_equal_the_raw_records(home: str) -> None:
    path = FIXTURE_HOME / GEMINI_FILE if home == "fixture" else corpus_home() / CORPUS_GEMINI
    records = parse_gemini(path, "/home/dev/shop" if home == "fixture" else None)
    assert drift(records) == []
    session = next(r.session_id for r in records if isinstance(r, Event))
    assert summarize(records, session) == gemini_counts(path)[0]


# --------------------------------------------------------------------------- decisions


def test_titles_are_the_agents_own_else_what_was_typed() -> None:
    titles = {rel: title(parse(CODEX, FIXTURE_HOME / rel), codex_session(FIXTURE_HOME / rel)) for rel in codex_fixtures()}
    assert titles == {
        C147: "Add a --dry-run flag to the sync command",  # not the AGENTS.md block before it
        C148: "Rename the settings page to Preferences",  # typed beside injected blocks
        C149: "Cart total rounding",  # thread_name_updated
        C149_CHILD: "Hume /root/rounding",  # a sub-agent's own name, never its brief
        C153: "Ship the release checklist as a script",  # not the referenced conversation
        C153_CHILD: "Noor /root/release_notes",
        C153_GUARDIAN: "guardian review",
        C153_SEGMENT: None,  # a resumed segment: its thread was titled by its first rollout
        f"{PARTS}/part-0001.jsonl": "Count the TODO comments in src",
        f"{PARTS}/part-0002.jsonl": None,
        VENDOR: "Make the README install steps shorter",
        NONSEMVER: "List the largest files in the repo",
    }
    claude = parse_claude(FIXTURE_HOME / ".claude" / "projects")
    assert title(claude, f"claude-code:{CLAUDE_A}") == "Sync dry-run"  # custom-title wins
    assert title(claude, f"claude-code:{CLAUDE_B}") == "Dry-run flag, review and test"
    assert title(claude, f"claude-code:{CLAUDE_C}") == "Q3 sales summary"
    prompts = [e.data["text"] for e in claude if isinstance(e, Event) and e.kind == "prompt"
               and e.session_id == f"claude-code:{CLAUDE_C}"]
    assert prompts == ["Summarize the attached sales report in three bullets"]  # no <uploaded_files>
    gemini = parse_gemini(FIXTURE_HOME / GEMINI_FILE, "/home/dev/shop")
    assert title(gemini, GEMINI_SESSION) == "Add a health check endpoint"  # the CLI's summary


def test_codex_session_index_lines_name_their_threads(tmp_path: Path) -> None:
    index = tmp_path / ".codex" / "session_index.jsonl"
    index.parent.mkdir()
    index.write_text(
        '{"id": "01a00147-5e55-7147-8147-000000000147", "thread_name": "  Dry run\\n for sync ", "updated_at": "2026-08-06T10:00:00Z"}\n'
        '{"id": "01a00148-5e55-7148-8148-000000000148", "updated_at": "2026-08-06T10:00:00Z"}\n'
    )
    records = parse(CODEX, index)
    facts = [r for r in records if isinstance(r, SessionFacts)]
    assert [(f.session_id, f.title, f.weak) for f in facts] == [
        ("codex:01a00147-5e55-7147-8147-000000000147", "Dry run for sync", False)
    ]
    assert drift(records) == ["session_index/<invalid>"]
    # The first prompt's title is weak: it fills an unknown title, never replaces a name.
    rollout = FIXTURE_HOME / C147
    titled = [r for r in parse(CODEX, rollout) if isinstance(r, SessionFacts) and r.title]
    assert [(f.title, f.weak) for f in titled] == [("Add a --dry-run flag to the sync command", True)]


def test_subagents_link_to_their_parent_thread() -> None:
    def parent(rel: str) -> set[str | None]:
        records = parse(CODEX, FIXTURE_HOME / rel)
        own = codex_session(FIXTURE_HOME / rel)
        return {r.parent_session_id for r in records
                if isinstance(r, SessionFacts) and r.session_id == own and r.parent_session_id}

    assert parent(C149_CHILD) == {"codex:01a00149-5e55-7149-8149-000000000149"}
    assert parent(C153_CHILD) == parent(C153_GUARDIAN) == {"codex:01a08153-5e55-7153-8153-000000000153"}
    for rel in CORPUS_CODEX:
        records = parse(CODEX, corpus_home() / rel)
        own = codex_session(corpus_home() / rel)
        assert {r.parent_session_id for r in records if isinstance(r, SessionFacts)
                and r.session_id == own and r.parent_session_id} == {"codex:019f4efb-ae76-7e30-b44e-3fa464c16193"}
    # Claude Code: the Agent call's result names the sub-agent it started, at every level.
    claude = parse_claude(FIXTURE_HOME / ".claude" / "projects")
    started = {(e.subagent_id, e.data.get("agent_id")) for e in claude
               if isinstance(e, Event) and e.kind == TOOL_RESULT and e.data.get("agent_id")}
    assert started == {
        (None, "a5e0a1000000000a1"),
        ("a5e0a1000000000a1", "a5e0a2000000000a2"),
        ("a5e0a2000000000a2", "a5e0a3000000000a3"),
    }


@pytest.mark.parametrize(("source", "copy"), [(C149, C149_CHILD), (C153, C153_CHILD)])
def test_a_sub_agents_copy_of_its_parents_history_adds_nothing(source: str, copy: str) -> None:
    source_records = parse(CODEX, FIXTURE_HOME / source)
    copy_records = parse(CODEX, FIXTURE_HOME / copy)
    parent = codex_session(FIXTURE_HOME / source)
    copied = [r for r in copy_records if isinstance(r, Event) and r.session_id == parent]
    assert copied and {(e.claim, e.holder) for e in copied} == {(CLAIM_COPY, codex_session(FIXTURE_HOME / copy))}
    own_keys = {r.key for r in source_records if isinstance(r, Event)}
    assert {e.key for e in copied} <= own_keys  # the same keys: nothing new for the parent
    for order in (source_records + copy_records, copy_records + source_records):
        assert summarize(order, parent) == codex_counts(FIXTURE_HOME / source)


def test_a_background_copy_never_owns_the_originals_records() -> None:
    projects = FIXTURE_HOME / ".claude" / "projects"
    shop = projects / "-home-dev-shop"
    original = parse(CLAUDE, shop / f"{CLAUDE_A}.jsonl")
    background = parse(CLAUDE, shop / f"{CLAUDE_B}.jsonl")
    replayed = {e.key for e in background if isinstance(e, Event)} & {e.key for e in original if isinstance(e, Event)}
    assert replayed and {e.claim for e in background if isinstance(e, Event)} == {CLAIM_COPY}
    raw = claude_counts(projects)
    subagents = [r for p in sorted((shop / CLAUDE_A).rglob("*.jsonl")) for r in parse(CLAUDE, p)]
    for order in (original + background, background + original):
        assert summarize(order + subagents, f"claude-code:{CLAUDE_A}") == raw[CLAUDE_A]
        assert summarize(order + subagents, f"claude-code:{CLAUDE_B}") == raw[CLAUDE_B]


def test_a_gemini_rewind_keeps_what_happened_and_marks_its_turns() -> None:
    records = parse_gemini(FIXTURE_HOME / GEMINI_FILE, "/home/dev/shop")
    rewound = [(t.turn_id, t.status) for t in records if isinstance(t, TurnFacts) and t.status == "rewound"]
    assert rewound == [(f"{GEMINI_SESSION}:u4", "rewound")]
    ends = [e.data for e in records if isinstance(e, Event) and e.kind == "turn_end" and e.turn_id.endswith(":u4")]
    assert ends == [{"status": "rewound", "reason": "rewind"}]
    # u4's prompt and g4's edit, rewound, are counted: gemini_counts says so too
    counts, gone = gemini_counts(FIXTURE_HOME / GEMINI_FILE)
    assert gone == {"u4", "g4"} and counts.prompts == 3


def test_directives_are_never_prompts() -> None:
    guardian = parse(CODEX, FIXTURE_HOME / C153_GUARDIAN)
    kinds = [e.kind for e in guardian if isinstance(e, Event) and e.kind in ("prompt", DIRECTIVE)]
    assert kinds == [DIRECTIVE, DIRECTIVE]  # two reviews, each written twice (item, event)
    child = parse(CODEX, FIXTURE_HOME / C153_CHILD)
    own = codex_session(FIXTURE_HOME / C153_CHILD)
    briefs = [e.data for e in child if isinstance(e, Event) and e.session_id == own and e.kind == DIRECTIVE]
    assert briefs == [{"text": "Draft the release notes from the merged pull requests", "source": "agent:/root"}]


# --------------------------------------------------------------------------- robustness


def jsonl_fixtures() -> list[str]:
    return sorted(str(p.relative_to(FIXTURE_HOME)) for p in FIXTURE_HOME.rglob("*.jsonl"))


@pytest.mark.parametrize("rel", jsonl_fixtures(), ids=lambda r: r.rsplit("/", 1)[-1][-24:])
def test_restart_at_every_line_gives_the_same_records(rel: str) -> None:
    path = FIXTURE_HOME / rel
    adapter = CODEX if rel.startswith(".codex") else CLAUDE if rel.startswith(".claude") else GEMINI
    lines = read_lines(path)
    whole, _ = parse_lines_with(adapter, path, lines)
    for cut in range(1, len(lines)):
        first, state = parse_lines_with(adapter, path, lines[:cut])
        restored = orjson.loads(orjson.dumps(state))  # what the tail-reader persists
        second, _ = parse_lines_with(adapter, path, lines[cut:], restored)
        assert first + second == whole, f"restart at line {cut}"


def test_every_corpus_title_passes_the_injected_context_rule() -> None:
    """What the adapters make of every corpus session's title: never injected context."""
    home = corpus_home()
    records: list[Record] = []
    for path in sorted((home / ".codex").rglob("*.jsonl")):
        records += parse(CODEX, path)
    records += parse_claude(home / ".claude" / "projects")
    for path in sorted((home / ".gemini" / "tmp").glob("*/chats/**/*.jsonl")):
        records += parse_gemini(path)
    titles: dict[str, str] = {}
    for r in records:
        if isinstance(r, SessionFacts) and r.title:
            titles[r.session_id] = r.title
    assert len(titles) >= 20
    for session, text in titles.items():
        assert not is_injected(text), session
        assert person_text(text) == text.strip(), session


def test_codex_sources_of_the_2026_layouts(tmp_path: Path) -> None:
    from agentsrc_daemon.ingest import sources

    root = tmp_path / ".codex"
    roots = {"codex": root}

    def mode(rel: str) -> str | None:
        spec = sources.classify(str(root / rel), roots)
        return spec.mode if spec is not None else None

    assert mode("sessions/2026/09/21/rollout-2026-09-21T09-00-00-a_b.jsonl") == "jsonl"  # a segment
    assert mode("session_parts/01a08157-5e55-7157-8157-000000000157/part-0002.jsonl") == "jsonl"
    assert mode("session_index.jsonl") == "jsonl"  # the threads' names
    # Never read: the typed-input history, the state databases, credentials.
    for rel in ("history.jsonl", "state_5.sqlite", "thread_history_1.sqlite", "auth.json",
                "session_parts/x/notes.jsonl", "sessions/session_index.jsonl"):
        assert mode(rel) is None, rel
