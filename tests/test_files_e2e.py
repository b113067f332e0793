"""Reads, edits and commands end to end through the CLI on the corpus: the daemon as a
subprocess, the corpus in a temporary home. Expected sets are computed here straight
from the raw transcript lines, independently of the adapters and the derive stage."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from corpus import corpus_home
from harness import DaemonProcess, copy_tree

pytestmark = pytest.mark.slow

CLAUDE_EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
                     "NotebookEdit": "notebook_path"}
PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    home = tmp_path_factory.mktemp("files") / "home"
    copy_tree(corpus_home(), home)
    d = DaemonProcess(home).start()
    d.wait_live()
    yield d
    d.cleanup()


def cli_json(d: DaemonProcess, *args: str) -> Any:
    return orjson.loads(d.cli(*args, "--json").stdout)


def claude_expected(home: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """session id -> files named by edit tools; session id -> files named by Read."""
    edits: dict[str, set[str]] = defaultdict(set)
    reads: dict[str, set[str]] = defaultdict(set)
    for f in (home / ".claude" / "projects").rglob("*.jsonl"):
        for line in f.read_bytes().splitlines():
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            msg = rec.get("message")
            if rec.get("type") != "assistant" or not isinstance(msg, dict):
                continue
            for block in msg.get("content") or []:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                inp = block.get("input") or {}
                sid = f"claude-code:{rec['sessionId']}"
                if block.get("name") in CLAUDE_EDIT_TOOLS:
                    p = inp.get(CLAUDE_EDIT_TOOLS[block["name"]])
                    if isinstance(p, str) and p:
                        edits[sid].add(p)
                elif block.get("name") == "Read" and isinstance(inp.get("file_path"), str):
                    reads[sid].add(inp["file_path"])
    return edits, reads


def norm(p: str) -> str:
    return p.replace("\\", "/").lower()


def test_claude_edit_sets_equal_edit_tool_files_and_reads_include_read_paths(daemon) -> None:  # type: ignore[no-untyped-def]
    edits, reads = claude_expected(daemon.home)
    assert sum(len(v) for v in edits.values()) > 20  # the corpus really has edits
    for sid in set(edits) | set(reads):
        evs = cli_json(daemon, "events", "--session", sid, "--kind", "edit", "--limit", "10000")
        tool_edits = {norm(e["path"]) for e in evs if e["tool"] in CLAUDE_EDIT_TOOLS}
        assert tool_edits == {norm(p) for p in edits[sid]}, sid
        files = cli_json(daemon, "files", sid)
        read_paths = {norm(f["path"]) for f in files["files"] if f["reads"]}
        assert {norm(p) for p in reads[sid]} <= read_paths, sid
        for e in evs:
            assert e["op"] in ("add", "update", "delete", "move", "write")
            assert e["path"] and ("project_root" in e) and ("rel_path" in e)


def test_claude_reads_query_by_path_finds_the_session(daemon) -> None:  # type: ignore[no-untyped-def]
    _, reads = claude_expected(daemon.home)
    sid, paths = max(reads.items(), key=lambda kv: len(kv[1]))
    path = sorted(paths)[0]
    hits = cli_json(daemon, "reads", path)
    assert sid in {h["session_id"] for h in hits}
    assert all(norm(h["path"]) == norm(path) for h in hits)


def codex_patch_headers(home: Path) -> dict[str, set[str]]:
    """session id -> header paths of every apply_patch (custom tool, function call,
    or a heredoc in a shell command), as written in the patch."""
    out: dict[str, set[str]] = defaultdict(set)
    for f in (home / ".codex" / "sessions").rglob("*.jsonl"):
        sid = None
        if f.read_bytes().count(b'"type":"session_meta"') > 1:
            # A resumed rollout replays its parent's history, which the adapter leaves to
            # the parent's own file (tests/test_adapter_codex.py covers that case).
            continue
        for line in f.read_bytes().splitlines():
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            p = rec.get("payload")
            if rec.get("type") == "session_meta" and sid is None and isinstance(p, dict):
                sid = f"codex:{p['id']}"
            if rec.get("type") != "response_item" or not isinstance(p, dict):
                continue
            if p.get("type") in ("custom_tool_call", "function_call"):
                text = p.get("input") if p.get("type") == "custom_tool_call" else p.get("arguments")
                if isinstance(text, str) and "*** Begin Patch" in text:
                    if p.get("type") == "function_call":
                        text = text.replace("\\n", "\n")
                    out[sid or "?"].update(m.strip() for m in PATCH_HEADER.findall(text))
    return out


def test_codex_every_patch_header_is_an_edit(daemon) -> None:  # type: ignore[no-untyped-def]
    expected = codex_patch_headers(daemon.home)
    assert sum(len(v) for v in expected.values()) > 20
    for sid, headers in expected.items():
        evs = cli_json(daemon, "events", "--session", sid, "--kind", "edit", "--limit", "10000")
        paths = [norm(e["path"]) for e in evs]
        for h in headers:
            h = norm(h).removeprefix("./")
            assert any(p == h or p.endswith("/" + h) for p in paths), (sid, "missing header")
        patched = [norm(e["path"]) for e in evs if e["tool"] == "apply_patch"]
        for p in patched:
            assert any(p == norm(h) or p.endswith("/" + norm(h).removeprefix("./")) for h in headers)


def test_codex_commands_have_exit_codes_and_cwd(daemon) -> None:  # type: ignore[no-untyped-def]
    sessions = cli_json(daemon, "sessions", "--agent", "codex", "--limit", "100")
    with_cmds = 0
    for s in sessions:
        cmds = cli_json(daemon, "commands", "--session", s["id"], "--limit", "10000")
        if not cmds:
            continue
        with_cmds += 1
        # A Codex 0.144 code-mode script that ran commands in a loop recorded their exit
        # codes, not their lines (docs/formats.md): those say so.
        assert all(c["command"] or c.get("command_unknown") for c in cmds)
        assert any(c["exit_code"] is not None for c in cmds), s["id"]
        failed = cli_json(daemon, "commands", "--session", s["id"], "--failed", "--limit", "10000")
        assert all(
            (c["exit_code"] or 0) != 0 or c.get("interrupted") or c.get("is_error") for c in failed
        )
        assert {c["id"] for c in failed} <= {c["id"] for c in cmds}
    assert with_cmds >= 10


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_muse_sessions_edits_reads_and_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    copy_tree(FIXTURES / "muse" / "agents", home / "muse-agents")
    d = DaemonProcess(home, env={"MUSE_AGENTS_DIR": str(home / "muse-agents")}).start()
    try:
        d.wait_live()
        sessions = {s["native_id"]: s for s in cli_json(d, "sessions", "--agent", "muse")}
        assert set(sessions) == {"sess-scout-1", "sess-helper-7"}
        scout = sessions["sess-scout-1"]
        assert scout["model"] == "muse-pro-1"  # from sessions.json, best effort
        edits = cli_json(d, "events", "--session", scout["id"], "--kind", "edit")
        assert sorted((e["tool"], e["path"], e["op"]) for e in edits) == [
            ("Edit", "src/config.py", "update"),
            ("Write", "src/alias.py", "write"),
        ]
        reads = cli_json(d, "events", "--session", scout["id"], "--kind", "read")
        assert [(e["tool"], e["path"]) for e in reads] == [("Read", "src/config.py")]
        cmds = cli_json(d, "commands", "--session", scout["id"])
        # Muse reports success, not an exit code: it is kept as is_error.
        assert [(c["command"], c["exit_code"], c["is_error"]) for c in cmds] == [
            ("pytest -q", None, False)
        ]
        # Directives from dotted runtime.* / scheduler.cron sources are not prompts, nor
        # is a delegating agent's "[Subagent Context]" brief (adapters/injected.py).
        directives = cli_json(d, "events", "--kind", "directive")
        assert directives and all(
            e["source"] != "runtime" or e["text"].startswith("[Subagent Context]")
            for e in directives
        )
        assert [e["session_id"] for e in directives if e["source"] == "runtime"] == ["muse:sess-helper-7"]
    finally:
        d.cleanup()
