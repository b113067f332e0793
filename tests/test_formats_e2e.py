"""The fixtures of the July–October 2026 formats through the real daemon, both ways a
transcript arrives: already on disk when the daemon starts (backfill), and written line by
line while it runs (the live tail path). Each session's counters, commands, edits,
directives, title and parent, read over the socket, equal what tests/raw_counts.py
counts in the raw records (tests/test_formats.py checks the adapters alone)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path, PurePath
from typing import Any

import pytest

from harness import DaemonFactory, DaemonProcess, copy_tree, wait_for
from raw_counts import USAGE_KEYS, Counts, claude_counts, codex_counts, gemini_counts

FIXTURE_HOME = Path(__file__).resolve().parent / "fixtures" / "formats" / "home"
GEMINI_SESSION = "gemini:7c1e9a52-3b4d-4e5f-8a6b-7c8d9e0f1a2b"

TITLES = {
    "codex:01a00147-5e55-7147-8147-000000000147": "Add a --dry-run flag to the sync command",
    "codex:01a00149-5e55-7149-8149-000000000149": "Cart total rounding",
    "codex:01a00149-c41d-7149-8149-00000000c41d": "Hume /root/rounding",
    "codex:01a08153-5e55-7153-8153-000000000153": "Ship the release checklist as a script",
    "codex:01a08153-9a4d-7153-8153-000000009a4d": "guardian review",
    "claude-code:5e0a2200-0000-4000-8000-00000000000a": "Sync dry-run",
    GEMINI_SESSION: "Add a health check endpoint",
}
PARENTS = {
    "codex:01a00149-c41d-7149-8149-00000000c41d": "codex:01a00149-5e55-7149-8149-000000000149",
    "codex:01a08153-c41d-7153-8153-00000000c41d": "codex:01a08153-5e55-7153-8153-000000000153",
    "codex:01a08153-9a4d-7153-8153-000000009a4d": "codex:01a08153-5e55-7153-8153-000000000153",
}


def _add(total: Counts, more: Counts) -> None:
    total.prompts += more.prompts
    total.briefs += more.briefs
    total.messages += more.messages
    total.tool_calls += more.tool_calls
    total.commands += more.commands
    total.edits += more.edits
    for key in USAGE_KEYS:
        total.usage[key] += more.usage[key]


def expected() -> dict[str, Counts]:
    """Per session: the raw counts of its files (a thread written in several segments or
    parts adds them up; a sub-agent's copy of its parent's rows is the parent's, once)."""
    sessions: dict[str, Counts] = {}
    for path in sorted((FIXTURE_HOME / ".codex").rglob("*.jsonl")):
        session = "codex:" + json.loads(path.read_bytes().split(b"\n", 1)[0])["payload"]["id"]
        _add(sessions.setdefault(session, Counts()), codex_counts(path))
    for session, counts in claude_counts(FIXTURE_HOME / ".claude" / "projects").items():
        sessions[f"claude-code:{session}"] = counts
    sessions[GEMINI_SESSION] = gemini_counts(next((FIXTURE_HOME / ".gemini").rglob("*.jsonl")))[0]
    return {k: v.normalized() for k, v in sessions.items()}


def observed(d: DaemonProcess, session: str) -> Counts:
    s = d.call("sessions.get", {"id": session})["session"]
    commands = d.call("commands.list", {"session_id": session, "limit": 1000})["events"]
    edits = d.call("files.edits", {"session_id": session, "limit": 1000})["events"]
    briefs = d.call("events.list", {"session_id": session, "kinds": ["directive"], "limit": 1000})["events"]
    counts = Counts(
        prompts=s["prompts"],
        briefs=len(briefs),
        messages=s["messages"],
        tool_calls=s["tool_calls"],
        commands=[c.get("exit_code") for c in commands],
        edits=[(PurePath(str(e["path"])).name, str(e["op"])) for e in edits],
        usage={key: s["tokens"][key] for key in USAGE_KEYS},
    )
    return counts.normalized()


def check(d: DaemonProcess) -> None:
    want = expected()
    for session, counts in want.items():
        assert observed(d, session) == counts, session
    for session, text in TITLES.items():
        assert d.call("sessions.get", {"id": session})["session"]["title"] == text
    for child, parent in PARENTS.items():
        assert d.call("sessions.get", {"id": child})["session"]["parent_session_id"] == parent
        assert child in d.call("sessions.get", {"id": parent})["session"]["children"]
    versions = {"0.147.0", "0.148.0", "0.149.1", "0.153.4", "0.157.0", "1.19.2", "0.2.0-alpha.2-3f9c2e1", "2.2.4", "unknown"}
    drift = [row for row in d.call("status")["drift"] if row["version"] in versions]
    assert drift == []


def settled(d: DaemonProcess) -> bool:
    want = expected()
    try:
        return all(observed(d, s) == c for s, c in want.items())
    except Exception:
        return False


def test_fixtures_read_by_backfill(tmp_path: Path, daemon_factory: DaemonFactory) -> None:
    home = tmp_path / "home"
    copy_tree(FIXTURE_HOME, home)
    d = daemon_factory(home).start()
    d.wait_live()
    check(d)


def _writes() -> list[tuple[Path, list[bytes]]]:
    """Every fixture file as the agents write it: sidecars and documents whole, first;
    transcripts line by line, parents before the sub-agents that copy them."""
    whole = [p for p in FIXTURE_HOME.rglob("*") if p.is_file() and p.suffix != ".jsonl"]
    lines = sorted(p for p in FIXTURE_HOME.rglob("*.jsonl"))
    out = [(p, [p.read_bytes()]) for p in whole]
    out += [(p, p.read_bytes().splitlines(keepends=True)) for p in lines]
    return out


@pytest.mark.parametrize("chunk", [1, 7])
def test_fixtures_read_by_the_live_tail(tmp_path: Path, daemon_factory: DaemonFactory, chunk: int) -> None:
    home = tmp_path / "home"
    for root in (".codex/sessions", ".claude/projects", ".gemini/tmp"):
        (home / root).mkdir(parents=True)
    d = daemon_factory(home).start()
    d.wait_live()
    assert d.call("status")["events"] == 0
    for source, parts in _writes():
        target = home / source.relative_to(FIXTURE_HOME)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("ab") as fh:
            for i in range(0, len(parts), chunk):
                fh.write(b"".join(parts[i : i + chunk]))
                fh.flush()
                time.sleep(0.01)
    wait_for(lambda: settled(d), timeout=90, interval=0.5)
    check(d)
    # Nothing was read twice: the events equal a fresh backfill's.
    stats = Counter(e["kind"] for e in _all(d))
    fresh = tmp_path / "fresh"
    copy_tree(FIXTURE_HOME, fresh)
    d2 = daemon_factory(fresh).start()
    d2.wait_live()
    assert Counter(e["kind"] for e in _all(d2)) == stats


def _all(d: DaemonProcess) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        page = d.call("events.list", {"since_id": after, "limit": 1000})["events"]
        if not page:
            return out
        out += page
        after = page[-1]["id"]


def _index_line(thread: str, name: str) -> bytes:
    """A line of ~/.codex/session_index.jsonl (codex-rs/rollout/src/session_index.rs)."""
    return json.dumps({"id": thread, "thread_name": name, "updated_at": "2026-08-06T10:00:00Z"}).encode() + b"\n"


@pytest.mark.parametrize("index_first", [True, False])
def test_a_codex_threads_name_wins_over_its_first_prompt(
    tmp_path: Path, daemon_factory: DaemonFactory, index_first: bool
) -> None:
    # The name Codex keeps for a thread (session_index.jsonl, the latest line of a
    # thread winning) is its title whichever file is read first; the first prompt only
    # titles a thread the index does not name.
    thread = "01a00147-5e55-7147-8147-000000000147"
    rollout = next((FIXTURE_HOME / ".codex").rglob(f"rollout-*{thread}.jsonl"))
    home = tmp_path / "home"
    (home / ".codex" / "sessions").mkdir(parents=True)
    index = home / ".codex" / "session_index.jsonl"
    target = home / rollout.relative_to(FIXTURE_HOME)
    target.parent.mkdir(parents=True)
    first, second = (index, target) if index_first else (target, index)
    content = {index: _index_line(thread, "Dry run for sync"), target: rollout.read_bytes()}
    first.write_bytes(content[first])
    d = daemon_factory(home).start()
    d.wait_live()

    def title() -> str | None:
        return d.call("sessions.get", {"id": f"codex:{thread}"})["session"]["title"]

    want_first = "Dry run for sync" if index_first else "Add a --dry-run flag to the sync command"
    assert title() == want_first
    second.write_bytes(content[second])
    wait_for(lambda: title() == "Dry run for sync", timeout=30, interval=0.2)
    with index.open("ab") as fh:  # renamed again: the latest line wins
        fh.write(_index_line(thread, "Sync: --dry-run"))
    wait_for(lambda: title() == "Sync: --dry-run", timeout=30, interval=0.2)
    assert d.call("sessions.get", {"id": f"codex:{thread}"})["session"]["prompts"] == 2
