"""The fidelity tally (docs/formats.md, "Fidelity"): every record read is counted once,
per adapter, agent version and record type, by what became of it (events, ignored on
purpose, folded, not understood); on the fixtures of the July–October 2026 formats and
the corpus no record is not understood, every record type issue 26 names among them.
Through the real ingest path into a real store (store/queries/fidelity.py reads it),
then over the socket (``status``, ``fidelity``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsrc_daemon.adapters import ADAPTERS, NamesRecords, record_kind
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.round import Ingestor
from agentsrc_daemon.store import Batch, Reader, Store
from agentsrc_daemon.store.batch import OUTCOMES, tally_record
from agentsrc_daemon.store.queries import fidelity

from corpus import copy_read_corpus
from harness import DaemonFactory, copy_tree

FIXTURE_HOME = Path(__file__).resolve().parent / "fixtures" / "formats" / "home"
ROOTS = {
    "codex": ".codex",
    "claude-code": ".claude/projects",
    "gemini": ".gemini",
    "copilot": ".copilot",
    "muse": "agents",
    "opencode": ".local/share/opencode",
    "qwen": ".qwen",
    "amp": ".local/share/amp",
    "pi": ".pi/agent",
}
# Issue 29's fixtures, each agent's tree as it sits under its root.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
AGENT_FIXTURES = {"qwen": FIXTURES / "qwen", "amp": FIXTURES / "amp", "pi": FIXTURES / "pi"}

# The record types issue 26 names, as the adapters name them; each must be read from the
# fixtures (or the corpus) and understood.
NAMED: dict[str, set[str]] = {
    "codex": {
        "session_meta",
        "turn_context",
        "token_usage_record",
        "world_state",
        "inter_agent_communication_metadata",
        "response_item/tool_search_call",
        "response_item/tool_search_output",
        "response_item/agent_message",
        "event_msg/sub_agent_activity",
        "event_msg/thread_settings_applied",
        "event_msg/thread_rolled_back",
        "event_msg/thread_name_updated",
        *(
            f"event_msg/item_completed/{t}"
            for t in (
                "UserMessage",
                "AgentMessage",
                "Reasoning",
                "CommandExecution",
                "FileChange",
                "Plan",
                "SubAgentActivity",
                "CollabAgentToolCall",
                "McpToolCall",
                "mcpToolCall",
                "WebSearch",
                "ContextCompaction",
                "Extension/web.search",
            )
        ),
    },
    "claude-code": {
        "mode",
        "user",
        "assistant",
        "ai-title",
        "custom-title",
        "system/away_summary",
        "attachment/date_change",
        "attachment/mcp_instructions_delta",
        "attachment/agent_listing_delta",
        "attachment/hook_success",
    },
    "gemini": {"metadata", "message/user", "message/gemini", "$set", "$rewindTo"},
}


def read_home(home: Path, db: Path) -> Batch:
    """Every source under the home's roots read to its end by one Ingestor (the daemon's
    ingest path, without the daemon), committed into a store at ``db``; the batch."""
    roots = {agent: home / rel for agent, rel in ROOTS.items() if (home / rel).is_dir()}
    ingestor = Ingestor(max_line_bytes=1 << 24)
    batch = Batch()
    for root in roots.values():
        for spec, _ in sources.walk_sources(root, roots):
            if spec.mode == sources.MEMORY:
                continue
            while ingestor.ingest(spec, batch, 1 << 30).more:
                pass
    tally = {key: list(counts) for key, counts in batch.fidelity.items()}
    store = Store(db)
    store.commit(batch)
    store.close()
    batch.fidelity = tally
    return batch


def lines_read(home: Path) -> Counter[str]:
    """Per adapter, the records in the home's transcripts, counted from the files: JSONL
    lines that hold a JSON object, plus one per JSON document."""
    roots = {agent: home / rel for agent, rel in ROOTS.items() if (home / rel).is_dir()}
    out: Counter[str] = Counter()
    for root in roots.values():
        for spec, _ in sources.walk_sources(root, roots):
            if spec.mode == sources.JSONL:
                out[spec.adapter] += sum(
                    1 for raw in Path(spec.path).read_bytes().splitlines()
                    if raw.strip() and raw.lstrip().startswith(b"{")
                )
            elif spec.mode == sources.DOCUMENT:
                out[spec.adapter] += 1
    return out


def table(db: Path) -> list[dict[str, Any]]:
    reader = Reader(db)
    try:
        with reader.snapshot():
            return reader.fidelity()
    finally:
        reader.close()


def test_the_store_adds_up_the_tallies_of_its_commits(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    for _ in range(2):
        batch = Batch()
        for outcome in (0, 0, 1, 2, 3):
            tally_record(batch.fidelity, "codex", "0.160.0", "event_msg/x", outcome)
        tally_record(batch.fidelity, "codex", "0.159.0", "session_meta", 2)
        later = Batch()
        tally_record(later.fidelity, "codex", "0.160.0", "event_msg/x", 0)
        batch.merge(later)  # a worker's round read in pieces: one commit of both
        assert not batch.empty()
        store.commit(batch)
    store.close()
    reader = Reader(tmp_path / "db.sqlite")
    try:
        with reader.snapshot():
            rows = reader.fidelity()
            assert reader.fidelity("codex", "0.159.0") == [rows[0]]
    finally:
        reader.close()
    assert OUTCOMES == ("events", "ignored", "folded", "not_understood")
    assert [(r["version"], r["record_type"], r["read"], r["events"], r["ignored"], r["folded"],
             r["not_understood"]) for r in rows] == [
        ("0.159.0", "session_meta", 2, 0, 0, 2, 0),
        ("0.160.0", "event_msg/x", 12, 6, 2, 2, 2),
    ]
    versions = fidelity.summary(rows)
    assert [(v["version"], v["read"], v["not_understood"], v["not_understood_share"],
             v["not_understood_types"]) for v in versions] == [
        ("0.159.0", 2, 0, 0.0, []),
        ("0.160.0", 12, 2, 2 / 12, [["event_msg/x", 2]]),
    ]
    assert fidelity.warnings(versions) == [versions[1]]
    assert fidelity.warnings(versions, share=0.2) == []


def test_every_adapter_names_its_records() -> None:
    assert all(isinstance(a, NamesRecords) for a in ADAPTERS.values())
    # Without the method: the record's type and the state's version.
    class Plain:
        name = "plain"

    assert record_kind(Plain(), {"type": "x"}, {"version": "1"}) == ("1", "x", False)  # type: ignore[arg-type]
    assert record_kind(Plain(), [], None) == ("unknown", "<no type>", False)  # type: ignore[arg-type]


def test_the_fixtures_are_read_whole_and_understood(tmp_path: Path) -> None:
    home = tmp_path / "home"
    copy_tree(FIXTURE_HOME, home)
    batch = read_home(home, tmp_path / "db.sqlite")
    rows = table(tmp_path / "db.sqlite")
    # Every record once: the tally equals the lines and documents on disk, per adapter.
    read: Counter[str] = Counter()
    for row in rows:
        read[row["adapter"]] += row["read"]
        assert row["read"] == row["events"] + row["ignored"] + row["folded"] + row["not_understood"]
    assert read == lines_read(home)
    assert sum(sum(c) for c in batch.fidelity.values()) == sum(read.values())
    # Nothing not understood, and the types issue 26 names among those read.
    assert [r for r in rows if r["not_understood"]] == []
    assert batch.drift == []
    by_adapter: dict[str, set[str]] = {}
    for row in rows:
        by_adapter.setdefault(row["adapter"], set()).add(row["record_type"])
    for adapter, named in NAMED.items():
        missing = named - by_adapter.get(adapter, set())
        # These two are in the corpus (test below): Claude Code 2.1.145, Codex 0.144.
        assert missing <= {"system/away_summary", "event_msg/sub_agent_activity"}, (adapter, missing)
    versions = {(v["adapter"], v["version"]) for v in fidelity.summary(rows)}
    assert {
        ("codex", "0.147.0"), ("codex", "0.148.0"), ("codex", "0.149.1"), ("codex", "0.153.4"),
        ("codex", "0.157.0"), ("codex", "1.19.2"),
        ("codex", "0.2.0-alpha.2-3f9c2e1"), ("claude-code", "2.2.4"), ("gemini", "unknown"),
    } <= versions


def test_what_became_of_the_records_of_one_rollout(tmp_path: Path) -> None:
    # The 0.149 rollout, record type by record type (the raw lines counted by hand).
    home = tmp_path / "home"
    rollout = next((FIXTURE_HOME / ".codex").rglob("rollout-*01a00149-5e55-*.jsonl"))
    target = home / rollout.relative_to(FIXTURE_HOME)
    target.parent.mkdir(parents=True)
    target.write_bytes(rollout.read_bytes())
    read_home(home, tmp_path / "db.sqlite")
    rows = {r["record_type"]: r for r in table(tmp_path / "db.sqlite")}
    types = Counter(
        (lambda o: o["type"] if o["type"] not in ("event_msg", "response_item")
         else f"{o['type']}/{o['payload']['type']}" + (
             f"/{o['payload']['item']['type']}" if o["payload"]["type"] == "item_completed" else ""
         ))(orjson.loads(raw))
        for raw in rollout.read_bytes().splitlines()
    )
    assert {t: r["read"] for t, r in rows.items()} == dict(types)
    # 0.149 writes each assistant message twice: the AgentMessage item gives the message,
    # the assistant response item with its id is folded (counted once).
    assert rows["event_msg/item_completed/AgentMessage"]["events"] == types["event_msg/item_completed/AgentMessage"]
    assert rows["event_msg/item_completed/Plan"]["ignored"] == types["event_msg/item_completed/Plan"]
    assert rows["event_msg/item_completed/SubAgentActivity"]["ignored"] >= 1
    assert all(r["not_understood"] == 0 for r in rows.values())


def test_the_corpus_is_understood(tmp_path: Path) -> None:
    home = copy_read_corpus(tmp_path / "home")
    batch = read_home(home, tmp_path / "db.sqlite")
    rows = table(tmp_path / "db.sqlite")
    assert [r for r in rows if r["not_understood"]] == []
    assert batch.drift == []
    named = {(r["adapter"], r["record_type"]) for r in rows}
    assert ("claude-code", "system/away_summary") in named  # 2.1.145
    assert ("codex", "event_msg/sub_agent_activity") in named  # 0.144 sub-agents
    assert ("codex", "world_state") in named
    assert ("qwen", "system/ui_telemetry/qwen-code.api_response") in named  # 0.5.0
    assert ("amp", "thread") in named
    versions = fidelity.summary(rows)
    assert all(v["not_understood_share"] == 0.0 for v in versions)
    assert fidelity.warnings(versions) == []


def test_the_fixtures_of_qwen_code_amp_and_pi_are_read_whole_and_understood(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for agent, tree in AGENT_FIXTURES.items():
        copy_tree(tree, home / ROOTS[agent])
    read_home(home, tmp_path / "db.sqlite")
    rows = table(tmp_path / "db.sqlite")
    read: Counter[str] = Counter()
    for row in rows:
        read[row["adapter"]] += row["read"]
    assert read == lines_read(home) and set(read) == {"qwen", "amp", "pi"}
    assert [r for r in rows if r["not_understood"]] == []
    types = {(r["adapter"], r["version"], r["record_type"]): r for r in rows}
    # The Pi v3 session's one label entry and its two thinking-level changes (one in its
    # fork) are ignored on purpose; the v1 session's lines sit under session-v1.
    assert types[("pi", "session-v3", "label")]["ignored"] == 1
    assert types[("pi", "session-v3", "thinking_level_change")]["ignored"] == 2
    assert {v for a, v, _ in types if a == "pi"} == {"session-v1", "session-v3"}
    assert types[("amp", "0.0.1768400000-gabc1234", "thread")]["read"] == 1
    assert types[("qwen", "unknown", "conversation")]["read"] == 1  # a first version's document


def test_a_record_not_understood_is_counted_and_warned_of(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = home / ".codex" / "sessions" / "2026" / "11" / "01" / (
        "rollout-2026-11-01T09-00-00-01a0b000-5e55-7000-8000-000000000001.jsonl"
    )
    path.parent.mkdir(parents=True)
    meta = {"timestamp": "2026-11-01T09:00:00.000Z", "type": "session_meta", "payload": {
        "id": "01a0b000-5e55-7000-8000-000000000001", "cli_version": "0.170.0",
        "timestamp": "2026-11-01T09:00:00.000Z", "cwd": "/home/dev/x"}}
    unknown = {"timestamp": "2026-11-01T09:00:01.000Z", "type": "event_msg", "payload": {
        "type": "item_completed", "item": {"type": "TeleportItem", "id": "t1"}}}
    known = {"timestamp": "2026-11-01T09:00:02.000Z", "type": "event_msg", "payload": {
        "type": "agent_reasoning", "text": "..."}}
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in (meta, unknown, known, known)))
    read_home(home, tmp_path / "db.sqlite")
    rows = table(tmp_path / "db.sqlite")
    assert [(r["record_type"], r["read"], r["events"], r["ignored"], r["folded"], r["not_understood"])
            for r in rows] == [
        ("event_msg/agent_reasoning", 2, 0, 2, 0, 0),
        ("event_msg/item_completed/TeleportItem", 1, 0, 0, 0, 1),
        ("session_meta", 1, 0, 0, 1, 0),  # session facts only: folded
    ]
    (v,) = fidelity.summary(rows)
    assert (v["version"], v["read"], v["not_understood"]) == ("0.170.0", 4, 1)
    assert v["not_understood_share"] == 0.25
    assert v["not_understood_types"] == [["event_msg/item_completed/TeleportItem", 1]]
    assert fidelity.warnings([v]) == [v]


@pytest.mark.slow
def test_status_and_the_socket_method(tmp_path: Path, daemon_factory: DaemonFactory) -> None:
    home = tmp_path / "home"
    copy_tree(FIXTURE_HOME, home)
    d = daemon_factory(home).start()
    d.wait_live()
    versions = d.call("status")["fidelity"]
    assert versions and all(v["not_understood"] == 0 for v in versions)
    assert sum(v["read"] for v in versions) == sum(lines_read(home).values())
    answer = d.call("fidelity", {"adapter": "gemini"})
    assert {r["adapter"] for r in answer["rows"]} == {"gemini"}
    assert [v["version"] for v in answer["versions"]] == ["unknown"]
    assert {r["record_type"] for r in answer["rows"]} >= NAMED["gemini"]


def test_status_says_which_versions_are_not_understood() -> None:
    from agentsrc_daemon.cli.render import status_lines

    rows = [
        {"adapter": "codex", "version": "0.170.0", "record_type": "event_msg/item_completed/TeleportItem",
         "read": 1, "events": 0, "ignored": 0, "folded": 0, "not_understood": 1},
        {"adapter": "codex", "version": "0.170.0", "record_type": "session_meta",
         "read": 3, "events": 0, "ignored": 0, "folded": 3, "not_understood": 0},
        {"adapter": "claude-code", "version": "2.2.4", "record_type": "assistant",
         "read": 9, "events": 9, "ignored": 0, "folded": 0, "not_understood": 0},
    ]
    st = {"state": "live", "files": 2, "sessions": 2, "events": 9, "pending_bytes": 0,
          "fidelity": fidelity.summary(rows), "drift": []}
    assert [line for line in status_lines(st) if line.startswith("fidelity:")] == [
        "fidelity:  codex 0.170.0 25.0% of 4 records not understood"
        " (event_msg/item_completed/TeleportItem x1)"
    ]
