"""One ingest round on real files, without the daemon: adapter crashes are counted as
the file's ``adapter_error`` skips (not drift), and document files get adapter state
kept across their versions like JSONL files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from agentsrc_daemon.adapters import ADAPTERS, claude
from agentsrc_daemon.events import AGENTS, Event, Record, SessionFacts
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.round import ADAPTER_ERROR, Ingestor
from agentsrc_daemon.store import Batch, Reader, Store, packing

SID = "0b8a6a2e-0000-4000-8000-000000000001"
SECRET_WORDS = "the user's own words"


def claude_line(uuid: str, kind: str) -> bytes:
    message: dict[str, Any] = (
        {"role": "user", "content": SECRET_WORDS}
        if kind == "user"
        else {"id": f"msg_{uuid}", "role": "assistant", "model": "m", "content": "hi"}
    )
    return orjson.dumps(
        {
            "type": kind,
            "sessionId": SID,
            "uuid": uuid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/work/proj",
            "version": "2.1.0",
            "message": message,
        }
    ) + b"\n"


def test_the_registry_has_every_agent() -> None:
    assert sorted(ADAPTERS) == sorted(AGENTS)
    assert all(name == adapter.name for name, adapter in ADAPTERS.items())


def test_adapter_crash_is_counted_per_line_not_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(line: Any) -> list[Record]:
        raise ValueError(SECRET_WORDS)  # a message quoting content is never logged

    monkeypatch.setattr(claude, "_user", boom)
    path = tmp_path / "proj" / f"{SID}.jsonl"
    path.parent.mkdir()
    lines = [claude_line("u1", "user"), claude_line("a1", "assistant"), claude_line("u2", "user")]
    path.write_bytes(b"".join(lines))
    spec = sources.SourceSpec(str(path), "claude-code", sources.JSONL, str(tmp_path))
    ingestor = Ingestor(max_line_bytes=1 << 20)
    batch = Batch()
    with capture_logs() as logs:
        rnd = ingestor.ingest(spec, batch, 1 << 20)
    cursor = ingestor.cursors[str(path)]
    assert cursor.skipped == {ADAPTER_ERROR: 2}
    assert cursor.offset == path.stat().st_size and cursor.lines == 3  # the file goes on
    assert rnd.bytes == path.stat().st_size and not rnd.more
    assert batch.drift == []
    assert [(e.kind, e.key) for e in batch.events] == [("message", "claude-code:message:msg_a1")]
    assert logs == [
        {"event": "adapter_error", "path": str(path), "offset": 0, "error": "ValueError",
         "log_level": "warning"},
        {"event": "adapter_error", "path": str(path), "offset": len(lines[0]) + len(lines[1]),
         "error": "ValueError", "log_level": "warning"},
    ]
    # As status shows it (status.skipped is the sum over files).
    store = Store(tmp_path / "db.sqlite")
    store.commit(batch)
    store.close()
    reader = Reader(tmp_path / "db.sqlite")
    assert reader.skipped_totals() == {ADAPTER_ERROR: 2}
    assert reader.drift() == []
    reader.close()


class CountingDocuments:
    """A document adapter that keeps a count of versions seen in its state, and
    crashes on documents saying so."""

    name = "muse"

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return {"versions": 0}

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        return []

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        if obj.get("crash"):
            raise KeyError("crash")
        state["versions"] += 1
        return [SessionFacts(f"muse:{obj['id']}", "muse", obj["id"], model=f"v{state['versions']}")]


def test_document_state_persists_across_versions_and_crashes_are_counted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a" / "sessions" / "sessions.json"
    path.parent.mkdir(parents=True)
    spec = sources.SourceSpec(str(path), "muse", sources.DOCUMENT, str(tmp_path))
    ingestor = Ingestor(max_line_bytes=1 << 20, adapters={"muse": CountingDocuments()})
    store = Store(tmp_path / "db.sqlite")
    models = []
    for version in ({"id": "s1"}, {"id": "s1", "crash": True}, {"id": "s1", "n": 2}):
        path.write_bytes(orjson.dumps(version))
        batch = Batch()
        ingestor.ingest(spec, batch, 1 << 20)
        store.commit(batch)
        models += [r.model for r in batch.sessions]
        # What a restart sees: the state comes back from the store.
        ingestor.cursors = store.cursors.load()
    store.close()
    cursor = ingestor.cursors[str(path)]
    assert models == ["v1", "v2"]
    assert cursor.load_state() == {"versions": 2}
    assert cursor.skipped == {ADAPTER_ERROR: 1}


def test_real_adapters_get_a_document_state_and_leave_it(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "sessions" / "sessions.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(orjson.dumps({"session_id": "s1", "context_window_usage": {"model_id": "m"}}))
    spec = sources.SourceSpec(str(path), "muse", sources.DOCUMENT, str(tmp_path))
    ingestor = Ingestor(max_line_bytes=1 << 20)
    batch = Batch()
    ingestor.ingest(spec, batch, 1 << 20)
    cursor = ingestor.cursors[str(path)]
    assert cursor.state == ADAPTERS["muse"].initial_state(str(path))
    assert [(s.session_id, s.model) for s in batch.sessions] == [("muse:s1", "m")]
    assert cursor.skipped == {}
    assert not [r for r in batch.events if isinstance(r, Event)]


def test_a_restart_reads_no_state_until_a_file_is_read_sidecars_included(tmp_path: Path) -> None:
    """The daemon's start leaves every adapter state in the store (CursorStore.load with
    states=False). A Copilot transcript's sidecar signature lives in its state: the
    reconcile's check fetches it, finds nothing new, and sees a sidecar edit."""
    import shutil

    fixture = Path(__file__).parent / "fixtures" / "copilot" / "session-state"
    root = tmp_path / ".copilot"
    shutil.copytree(fixture, root / "session-state")
    (events,) = sorted((root / "session-state").glob("*/events.jsonl"))
    spec = sources.classify(str(events), {"copilot": root})
    assert spec is not None and sources.sidecar_of(spec) is not None
    store = Store(tmp_path / "db.sqlite")
    ingestor = Ingestor(max_line_bytes=1 << 20)
    batch = Batch()
    ingestor.ingest(spec, batch, 1 << 20)
    store.commit(batch)
    stored = store.cursors.state(ingestor.cursors[spec.path].source_id or 0)
    assert stored is not None and b"sig" in stored
    # Stored packed (store/packing.py): the start's SQL unpacks it to find the signature.
    (raw,) = store.conn.execute("SELECT state FROM sources").fetchone()
    assert raw[:1] == packing.PACKED_V1 and packing.unpack(raw) == stored

    again = Ingestor(max_line_bytes=1 << 20, cursor_store=store.cursors)
    again.cursors = store.cursors.load(states=False, sidecar_adapters=sources.SIDECAR_ADAPTERS)
    cursor = again.cursors[spec.path]
    assert (cursor.state, cursor.state_json, cursor.state_in_store) == (None, None, True)
    held = orjson.loads(stored)["~sidecar"]["sig"]
    assert cursor.sidecar_sig == held and len(held) == 4  # the signature alone, by SQLite
    assert again.needs_read(spec, events.stat()) is False
    assert cursor.state_in_store is True  # the check did not need the state
    # A round on the restarted ingestor reads nothing new and keeps the state.
    b2 = Batch()
    again.ingest(spec, b2, 1 << 20)
    assert b2.events == []
    # The sidecar edited: news.
    sidecar = Path(sources.sidecar_of(spec) or "")
    sidecar.write_text(sidecar.read_text() + "summary: renamed\n")
    third = Ingestor(max_line_bytes=1 << 20, cursor_store=store.cursors)
    third.cursors = store.cursors.load(states=False, sidecar_adapters=sources.SIDECAR_ADAPTERS)
    assert third.needs_read(spec, events.stat()) is True
    store.close()


def test_side_readers_are_optional_methods_of_the_adapter_protocol() -> None:
    """Which adapters read sidecars and database rows is theirs to say: ingest asks
    through the protocol, and no module of ingest imports an adapter by name."""
    import ast

    from agentsrc_daemon.adapters import row_reader, sidecar_reader, text_reader, text_stream_reader

    assert sorted(n for n, a in ADAPTERS.items() if sidecar_reader(a)) == ["copilot", "gemini"]
    assert sorted(n for n, a in ADAPTERS.items() if row_reader(a)) == ["crush", "cursor", "opencode"]
    assert sorted(n for n, a in ADAPTERS.items() if text_reader(a)) == ["cursor"]
    assert sorted(n for n, a in ADAPTERS.items() if text_stream_reader(a)) == ["aider"]
    ingest = Path(__file__).parents[1] / "agentsrc_daemon" / "ingest"
    from_adapters: set[str] = set()
    for module in sorted(ingest.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                "adapters", "agentsrc_daemon"
            ):
                name = (node.module or "").removeprefix("agentsrc_daemon.")
                if name.startswith("adapters"):
                    from_adapters |= {f"{name}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                assert not [a for a in node.names if a.name.startswith("agentsrc_daemon.adapters")]
    assert from_adapters == {
        "adapters.ADAPTERS", "adapters.Adapter", "adapters.ReadsTextStream",
        "adapters.record_kind", "adapters.row_reader", "adapters.sidecar_reader",
        "adapters.text_reader", "adapters.text_stream_reader", "adapters.folder_namer",
        "adapters.times_from_file", "adapters.final_lines", "adapters.FILE_TIME",
        "adapters.FOLDER_CWD", "adapters.common.TextLines",
    }


class SidecarSeeds:
    """A stand-in adapter under Copilot's name (sources.sidecar_of knows Copilot's
    layout), to show that ingest hands a sidecar to whichever adapter says it reads
    one: it seeds the state with the sidecar's first line and titles the session."""

    name = "copilot"

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return {"seed": None}

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        return [SessionFacts("copilot:s", "copilot", "s", cwd=state["seed"], title=obj["t"])]

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        return []

    def read_sidecar(self, text: str, sidecar_path: str, state: dict[str, Any]) -> list[Record]:
        state["seed"] = text.splitlines()[0]
        return [SessionFacts("copilot:s", "copilot", "s", title=f"from {Path(sidecar_path).name}")]


def test_a_sidecar_goes_to_the_adapter_that_reads_one(tmp_path: Path) -> None:
    root = tmp_path / ".copilot"
    events = root / "session-state" / "s" / "events.jsonl"
    events.parent.mkdir(parents=True)
    events.write_bytes(orjson.dumps({"t": "the first prompt"}) + b"\n")
    (events.parent / "workspace.yaml").write_text("/seeded/cwd\nmore\n")
    spec = sources.classify(str(events), {"copilot": root})
    assert spec is not None
    ingestor = Ingestor(max_line_bytes=1 << 20, adapters={"copilot": SidecarSeeds()})
    batch = Batch()
    ingestor.ingest(spec, batch, 1 << 20)
    # The line saw the seeded state; the sidecar's records follow the line's, and its
    # title, kept, comes again after a round whose lines gave a title of their own.
    assert [(s.cwd, s.title) for s in batch.sessions] == [
        ("/seeded/cwd", "the first prompt"),
        (None, "from workspace.yaml"),
    ]
    held = ingestor.cursors[spec.path].load_state()["~sidecar"]
    assert (held["session"], held["title"]) == (["copilot:s", "s"], "from workspace.yaml")
    events.write_bytes(events.read_bytes() + orjson.dumps({"t": "again"}) + b"\n")
    batch = Batch()
    ingestor.ingest(spec, batch, 1 << 20)
    assert [(s.cwd, s.title) for s in batch.sessions] == [
        ("/seeded/cwd", "again"),
        (None, "from workspace.yaml"),
    ]
    # An adapter that says nothing of sidecars gets none: its state stays its own.
    plain = Ingestor(max_line_bytes=1 << 20, adapters={"copilot": CountingDocuments()})
    plain.ingest(spec, Batch(), 1 << 20)
    assert plain.cursors[spec.path].load_state() == {"versions": 0}


def test_a_round_that_moves_nothing_commits_nothing(tmp_path: Path) -> None:
    """A write is noticed twice (its modify, its close): the second round finds the
    file as the store holds it and adds nothing to the batch, so no commit is made for
    it. A partial line (the size moved), the sidecar, or a round of a file whose last
    round is not committed yet are still saved."""
    path = tmp_path / "proj" / f"{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(claude_line("u1", "user"))
    spec = sources.SourceSpec(str(path), "claude-code", sources.JSONL, str(tmp_path))
    store = Store(tmp_path / "db.sqlite")
    ingestor = Ingestor(max_line_bytes=1 << 20, cursor_store=store.cursors)
    first = Batch()
    ingestor.ingest(spec, first, 1 << 20)
    # Not committed yet: a second round of the same file in another batch keeps it.
    pending = Batch()
    assert not ingestor.ingest(spec, pending, 1 << 20).unchanged
    assert list(pending.cursors) == [spec.path] and pending.events == []
    store.commit(first)
    ingestor.committed(first.cursors)
    store.commit(pending)
    ingestor.committed(pending.cursors)

    quiet = Batch()
    rnd = ingestor.ingest(spec, quiet, 1 << 20)
    assert rnd.unchanged and quiet.empty() and quiet.cursors == {}
    assert spec.path not in ingestor.uncommitted

    with path.open("ab") as fh:  # half a line: the size moved, the offset did not
        fh.write(claude_line("u2", "user")[:20])
    partial = Batch()
    assert not ingestor.ingest(spec, partial, 1 << 20).unchanged
    assert list(partial.cursors) == [spec.path] and partial.events == []
    store.commit(partial)
    ingestor.committed(partial.cursors)
    (size,) = store.conn.execute("SELECT size FROM sources").fetchone()
    assert size == path.stat().st_size
    with path.open("ab") as fh:
        fh.write(claude_line("u2", "user")[20:])
    rest = Batch()
    ingestor.ingest(spec, rest, 1 << 20)
    assert [e.kind for e in rest.events if e.kind == "prompt"] == ["prompt"]
    store.close()
