"""Issue 9: a record is kept once and owned by one session whatever the order the files
are read in. Codex: a resumed rollout's replay of its parent's history is the parent's
(kept when the parent's own rollout is absent, adding nothing when it is read too)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsrc_daemon.derive.derive import Deriver
from agentsrc_daemon.derive.projects import ProjectRoots
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.round import Ingestor
from agentsrc_daemon.store import Batch, Reader, Store

from corpus import corpus_home

RESUMED = (
    ".codex/sessions/2025/09/16/"
    "rollout-2025-09-16T14-12-31-613a9a68-8816-40b2-a2d4-041ade599da6.jsonl"
)
CHILD = "613a9a68-8816-40b2-a2d4-041ade599da6"
PARENT = "9cd28a74-da7e-4458-a91a-fffec2be9d7a"

COUNTERS = ("prompts", "messages", "tool_calls", "compactions", "errors")


def ingest(db: Path, files: list[tuple[str, Path]], home: Path) -> None:
    """Read the files one after the other, each whole, one commit per file."""
    roots = ProjectRoots()
    ingestor = Ingestor(
        max_line_bytes=1 << 22, derive=Deriver(roots.root_for, home=str(home))
    )
    store = Store(db)
    ingestor.cursors.update(store.cursors.load())
    for adapter, path in files:
        spec = sources.SourceSpec(str(path), adapter, sources.JSONL, str(home))
        while True:
            batch = Batch()
            rnd = ingestor.ingest(spec, batch, 1 << 22)
            store.commit(batch)
            if not rnd.more:
                break
    store.close()


def snapshot(db: Path) -> dict[str, Any]:
    """Every session's counters and tokens, and the events by (session, kind)."""
    reader = Reader(db)
    try:
        out: dict[str, Any] = {}
        for s in reader.sessions(limit=1000):
            full = reader.session(s["id"])
            assert full is not None
            out[s["id"]] = (
                {c: s[c] for c in COUNTERS},
                s["tokens"],
                full["kinds"],
                s["title"],
                s["parent_session_id"],
            )
        return out
    finally:
        reader.close()


def session(db: Path, sid: str) -> dict[str, Any]:
    reader = Reader(db)
    try:
        got = reader.session(sid)
        assert got is not None
        return got
    finally:
        reader.close()


# --------------------------------------------------------------------------- the corpus


def test_corpus_resumed_rollout_keeps_the_replayed_history(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = home / RESUMED
    path.parent.mkdir(parents=True)
    shutil.copyfile(corpus_home() / RESUMED, path)
    calls = sum(
        1
        for raw in path.read_bytes().splitlines()
        if orjson.loads(raw).get("payload", {}).get("type") == "function_call"
    )
    db = tmp_path / "db.sqlite"
    ingest(db, [("codex", path)], home)
    child, parent = session(db, f"codex:{CHILD}"), session(db, f"codex:{PARENT}")
    assert child["tool_calls"] + parent["tool_calls"] == calls == 58
    assert parent["known_from_replay"] == f"codex:{CHILD}"
    assert child["known_from_replay"] is None
    assert child["parent_session_id"] == f"codex:{PARENT}"
    assert parent["children"] == [f"codex:{CHILD}"]
    assert child["title"] and parent["title"]
    assert parent["kinds"].get("edit", 0) + child["kinds"].get("edit", 0) >= 2
    # Reading it again adds nothing.
    before = snapshot(db)
    ingest(db, [("codex", path)], home)
    assert snapshot(db) == before


# --------------------------------------------------------------------------- fixtures


def _rec(ts: str, kind: str, payload: dict[str, Any]) -> bytes:
    return orjson.dumps({"timestamp": ts, "type": kind, "payload": payload}) + b"\n"


def _meta(sid: str, ts: str, source: Any = "cli") -> dict[str, Any]:
    return {"id": sid, "timestamp": ts, "cwd": "/w/p", "originator": "codex_cli_rs",
            "cli_version": "0.36.0", "source": source}


P_ID = "11111111-1111-4111-8111-111111111111"
C_ID = "22222222-2222-4222-8222-222222222222"


def _history() -> list[tuple[str, dict[str, Any]]]:
    """The parent's records (without its session_meta)."""
    return [
        ("turn_context", {"cwd": "/w/p", "model": "gpt-5"}),
        ("response_item", {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "<environment_context>x"
                                        "</environment_context>"}]}),
        ("response_item", {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "fix the build"}]}),
        ("event_msg", {"type": "user_message", "message": "fix the build"}),
        ("response_item", {"type": "reasoning", "summary": []}),
        ("response_item", {"type": "function_call", "name": "shell", "call_id": "call_a",
                           "arguments": orjson.dumps({"command": ["cat", "Makefile"]}).decode()}),
        ("response_item", {"type": "function_call_output", "call_id": "call_a",
                           "output": orjson.dumps({"output": "all:", "metadata":
                                                   {"exit_code": 0}}).decode()}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": 100, "output_tokens": 10, "total_tokens": 110}}}),
        ("event_msg", {"type": "agent_message", "message": "done"}),
        ("response_item", {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "done"}]}),
    ]


def _fixture(root: Path) -> tuple[Path, Path]:
    day = root / ".codex" / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    parent = day / f"rollout-2026-01-01T10-00-00-{P_ID}.jsonl"
    child = day / f"rollout-2026-01-01T11-00-00-{C_ID}.jsonl"
    lines = [_rec("2026-01-01T10:00:00.000Z", "session_meta", _meta(P_ID, "2026-01-01T10:00:00Z"))]
    lines += [_rec(f"2026-01-01T10:00:{i + 1:02d}.000Z", t, p) for i, (t, p) in enumerate(_history())]
    parent.write_bytes(b"".join(lines))
    lines = [
        _rec("2026-01-01T11:00:00.000Z", "session_meta", _meta(C_ID, "2026-01-01T11:00:00Z")),
        _rec("2026-01-01T11:00:05.000Z", "session_meta", _meta(P_ID, "2026-01-01T10:00:00Z")),
    ]
    lines += [_rec(f"2026-01-01T11:00:05.{i + 1:03d}Z", t, p) for i, (t, p) in enumerate(_history())]
    lines += [
        _rec("2026-01-01T11:01:00.000Z", "response_item", {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "and the tests"}]}),
        _rec("2026-01-01T11:01:01.000Z", "response_item", {
            "type": "function_call", "name": "shell", "call_id": "call_b",
            "arguments": orjson.dumps({"command": ["cat", "test.py"]}).decode()}),
        _rec("2026-01-01T11:01:02.000Z", "event_msg", {
            "type": "token_count", "info": {"total_token_usage": {
                "input_tokens": 150, "output_tokens": 15, "total_tokens": 165}}}),
    ]
    child.write_bytes(b"".join(lines))
    return parent, child


@pytest.mark.parametrize("order", ["child-only", "parent-first", "child-first"])
def test_replay_is_the_parents_whatever_the_order(tmp_path: Path, order: str) -> None:
    home = tmp_path / "home"
    parent, child = _fixture(home)
    db = tmp_path / "db.sqlite"
    files = {"child-only": [child], "parent-first": [parent, child],
             "child-first": [child, parent]}[order]
    ingest(db, [("codex", f) for f in files], home)
    p, c = session(db, f"codex:{P_ID}"), session(db, f"codex:{C_ID}")
    assert (p["prompts"], p["tool_calls"], p["messages"]) == (1, 1, 1)
    assert (c["prompts"], c["tool_calls"], c["messages"]) == (1, 1, 0)
    assert p["tokens"]["total_tokens"] == 110
    assert c["tokens"]["total_tokens"] == 55  # only its own
    assert p["kinds"].get("read") == 1 and c["kinds"].get("read") == 1
    assert p["title"] == "fix the build" and c["title"] == "and the tests"
    assert c["parent_session_id"] == f"codex:{P_ID}" and p["children"] == [f"codex:{C_ID}"]
    assert p["known_from_replay"] == (f"codex:{C_ID}" if order == "child-only" else None)
    assert [t["turn_id"] for t in p["turns"]] == [f"{P_ID}:t1"]


def test_replay_orders_give_the_same_store(tmp_path: Path) -> None:
    snaps = []
    for name, order in (("a", (0, 1)), ("b", (1, 0))):
        home = tmp_path / name / "home"
        files = _fixture(home)
        db = tmp_path / name / "db.sqlite"
        ingest(db, [("codex", files[i]) for i in order], home)
        snaps.append(snapshot(db))
    assert snaps[0] == snaps[1]


# --------------------------------------------------------------------------- Claude copies

CP = "aaaaaaaa-0000-4000-8000-00000000000a"  # the original session
CR = "bbbbbbbb-0000-4000-8000-00000000000b"  # a resumed session starting with copies


def _claude(uuid: str, sid: str, kind: str, ts: str, **extra: Any) -> bytes:
    if kind == "user":
        message: dict[str, Any] = {"role": "user", "content": extra.pop("text", "a prompt")}
    elif kind == "tool_result":
        kind = "user"
        message = {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": extra.pop("tool"), "content": "ok"}]}
    else:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "sure"}]
        if "tool" in extra:
            blocks.append({"type": "tool_use", "id": extra.pop("tool"), "name": "Read",
                           "input": {"file_path": "/w/p/README.md"}})
        message = {"id": f"msg_{uuid}", "role": "assistant", "model": "claude-x",
                   "content": blocks, "usage": {"input_tokens": 10, "output_tokens": 5}}
    return orjson.dumps({"type": kind, "sessionId": sid, "uuid": uuid, "timestamp": ts,
                         "cwd": "/w/p", "version": "2.1.0", "message": message, **extra}) + b"\n"


def _claude_fixture(root: Path) -> list[Path]:
    project = root / ".claude" / "projects" / "-w-p"
    project.mkdir(parents=True)
    history = [
        ("u1", "user", "2026-01-01T10:00:00.000Z", {"text": "read the readme"}),
        ("a1", "assistant", "2026-01-01T10:00:01.000Z", {"tool": "toolu_1"}),
        ("r1", "tool_result", "2026-01-01T10:00:02.000Z", {"tool": "toolu_1"}),
        ("a2", "assistant", "2026-01-01T10:00:03.000Z", {}),
    ]
    original = project / f"{CP}.jsonl"
    original.write_bytes(b"".join(_claude(u, CP, k, t, **dict(x)) for u, k, t, x in history))
    resumed = project / f"{CR}.jsonl"
    resumed.write_bytes(
        b"".join(_claude(u, CR, k, t, **dict(x)) for u, k, t, x in history)
        + _claude("u3", CR, "user", "2026-01-02T10:00:00.000Z", text="and now the tests")
        + _claude("a3", CR, "assistant", "2026-01-02T10:00:01.000Z", tool="toolu_3")
    )
    aside = project / "agent-aside_question-1.jsonl"
    aside.write_bytes(
        b"".join(_claude(u, CP, k, t, **dict(x)) for u, k, t, x in history[:2])
        + _claude("q1", CP, "user", "2026-01-01T11:00:00.000Z", text="a side question")
    )
    return [original, resumed, aside]


def _claude_snapshot(db: Path) -> dict[str, Any]:
    snap = snapshot(db)
    reader = Reader(db)
    try:
        for sid in snap:
            full = reader.session(sid)
            assert full is not None
            snap[sid] = (*snap[sid], full["inherited"])
        return snap
    finally:
        reader.close()


def _ingest_with_restarts(
    db: Path, files: list[Path], home: Path, crashes: list[int], adapter: str = "claude-code"
) -> None:
    """Read the files in this order in small rounds; after the rounds numbered in
    ``crashes`` the daemon "dies" (what was committed stays, the rest is lost) and a new
    one starts from the store's cursors."""
    rounds = 0
    pending = list(files)
    while pending:
        roots = ProjectRoots()
        ingestor = Ingestor(max_line_bytes=1 << 20, derive=Deriver(roots.root_for, home=str(home)))
        store = Store(db)
        ingestor.cursors.update(store.cursors.load())
        crashed = False
        while pending and not crashed:
            spec = sources.SourceSpec(str(pending[0]), adapter, sources.JSONL, str(home))
            batch = Batch()
            rnd = ingestor.ingest(spec, batch, 200)
            rounds += 1
            if rounds in crashes:
                crashes.remove(rounds)
                crashed = True  # killed before the commit: this round is lost
            else:
                store.commit(batch)
                if not rnd.more:
                    pending.pop(0)
        store.close()


def test_claude_copies_are_owned_by_the_data_not_the_order(tmp_path: Path) -> None:
    from itertools import permutations

    snaps = []
    for i, order in enumerate(permutations(range(3))):
        home = tmp_path / str(i)
        files = _claude_fixture(home)
        db = tmp_path / f"{i}.sqlite"
        ingest(db, [("claude-code", files[j]) for j in order], home)
        snaps.append(_claude_snapshot(db))
    assert all(s == snaps[0] for s in snaps)
    original, resumed = snaps[0][f"claude-code:{CP}"], snaps[0][f"claude-code:{CR}"]
    # The original owns its four records; the resumed session owns only its own, and
    # shows the copies as inherited.
    assert original[0]["prompts"] == 2 and original[0]["tool_calls"] == 1  # + the aside
    assert resumed[0]["prompts"] == 1 and resumed[0]["tool_calls"] == 1
    assert resumed[5].get("prompt") == 1 and resumed[5].get("tool_call") == 1
    shown = session(tmp_path / "0.sqlite", f"claude-code:{CR}")["inherited_turns"]
    assert [(t["turn_id"], t["owner"]) for t in shown] == [("u1", f"claude-code:{CP}")]
    # Linked by the data: the resumed session's parent is the session it holds copies of.
    got = session(tmp_path / "0.sqlite", f"claude-code:{CR}")
    assert (got["parent_session_id"], got["copied_from"]) == (f"claude-code:{CP}", [f"claude-code:{CP}"])
    got = session(tmp_path / "0.sqlite", f"claude-code:{CP}")
    assert got["children"] == got["copied_into"] == [f"claude-code:{CR}"]


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@hypothesis.settings(max_examples=20, deadline=None)
@hypothesis.given(
    order=st.permutations([0, 1, 2]),
    crashes=st.lists(st.integers(min_value=1, max_value=12), max_size=4, unique=True),
)
def test_claude_copies_any_order_any_crash(order: list[int], crashes: list[int]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        ref_home, home = Path(tmp) / "ref", Path(tmp) / "run"
        ref_files, files = _claude_fixture(ref_home), _claude_fixture(home)
        ingest(Path(tmp) / "ref.sqlite", [("claude-code", f) for f in ref_files], ref_home)
        _ingest_with_restarts(Path(tmp) / "run.sqlite", [files[i] for i in order], home,
                              sorted(crashes))
        assert _claude_snapshot(Path(tmp) / "run.sqlite") == _claude_snapshot(
            Path(tmp) / "ref.sqlite"
        )


# --------------------------------------------------------------------------- review sub-agent

R_PARENT = "33333333-3333-4333-8333-333333333333"
R_CHILD = "44444444-4444-4444-8444-444444444444"
R_OTHER = "55555555-5555-4555-8555-555555555555"


def _review_fixture(root: Path) -> list[Path]:
    day = root / ".codex" / "sessions" / "2026" / "02" / "01"
    day.mkdir(parents=True)
    parent = day / f"rollout-2026-02-01T10-00-00-{R_PARENT}.jsonl"
    parent.write_bytes(
        _rec("2026-02-01T10:00:00.000Z", "session_meta", _meta(R_PARENT, "2026-02-01T10:00:00Z"))
        + _rec("2026-02-01T10:05:00.000Z", "event_msg", {"type": "entered_review_mode"})
        + _rec("2026-02-01T10:09:00.000Z", "event_msg", {"type": "exited_review_mode"})
    )
    # Another session in another cwd that entered review mode at the same time.
    other = day / f"rollout-2026-02-01T10-00-01-{R_OTHER}.jsonl"
    meta = _meta(R_OTHER, "2026-02-01T10:00:01Z")
    meta["cwd"] = "/elsewhere"
    other.write_bytes(
        _rec("2026-02-01T10:00:01.000Z", "session_meta", meta)
        + _rec("2026-02-01T10:05:00.100Z", "event_msg", {"type": "entered_review_mode"})
    )
    child = day / f"rollout-2026-02-01T10-05-00-{R_CHILD}.jsonl"
    child.write_bytes(
        _rec("2026-02-01T10:05:00.400Z", "session_meta",
             _meta(R_CHILD, "2026-02-01T10:05:00.400Z", source={"subagent": "review"}))
    )
    return [parent, other, child]


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_review_subagent_is_linked_to_the_session_that_entered_review(
    tmp_path: Path, order: tuple[int, ...]
) -> None:
    home = tmp_path / "home"
    files = _review_fixture(home)
    db = tmp_path / "db.sqlite"
    ingest(db, [("codex", files[i]) for i in order], home)
    child, parent = session(db, f"codex:{R_CHILD}"), session(db, f"codex:{R_PARENT}")
    assert child["source"] == {"subagent": "review"}  # stored as what it is
    assert child["parent_session_id"] == f"codex:{R_PARENT}"
    assert parent["children"] == [f"codex:{R_CHILD}"]
    assert session(db, f"codex:{R_OTHER}")["children"] == []


@hypothesis.settings(max_examples=15, deadline=None)
@hypothesis.given(
    order=st.permutations([0, 1]),
    crashes=st.lists(st.integers(min_value=1, max_value=16), max_size=4, unique=True),
)
def test_codex_replay_any_order_any_crash(order: list[int], crashes: list[int]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        ref_home, home = Path(tmp) / "ref", Path(tmp) / "run"
        ref_files, files = _fixture(ref_home), _fixture(home)
        ingest(Path(tmp) / "ref.sqlite", [("codex", f) for f in ref_files], ref_home)
        _ingest_with_restarts(Path(tmp) / "run.sqlite", [files[i] for i in order], home,
                              sorted(crashes), adapter="codex")
        assert _claude_snapshot(Path(tmp) / "run.sqlite") == _claude_snapshot(
            Path(tmp) / "ref.sqlite"
        )
