"""The scan stage's switches, on hand-built events with the real engine: excluded
sessions and paths, no stored text, a custom sensitive-path list, spilled files only
where the layout puts them, and redaction of stored tool inputs."""

from __future__ import annotations

from pathlib import Path

from agentsrc_daemon import events as E
from agentsrc_daemon.config import ScanConfig
from agentsrc_daemon.secrets.engine import SecretScanner
from agentsrc_daemon.secrets.stage import SecretStage

# A fake key assembled at run time (see tests/test_scan.py for why).
FAKE_AWS = "AK" + "IA" + "Q7RZ3KX9" + "PLM2VNBX"
SCANNER = SecretScanner(None, {}, b"k" * 32)


def ev(kind: str, key: str = "k1", session: str = "codex:s1", **kw) -> E.Event:  # type: ignore[no-untyped-def]
    return E.Event(key=key, session_id=session, kind=kind, ts="2026-01-01T00:00:00.000Z",
                   adapter="codex", source_path="/x/rollout.jsonl", offset=0, **kw)


def stage(**cfg) -> SecretStage:  # type: ignore[no-untyped-def]
    return SecretStage(SCANNER, ScanConfig(**cfg))


def test_tool_output_finding_and_file_attribution() -> None:
    read = ev(E.READ, "r1", call_id="c1", data={"path": "/w/creds.ini", "op": "read"})
    result = ev(E.TOOL_RESULT, "t1", call_id="c1", contents=[("output", f"key={FAKE_AWS}\n")])
    out = stage().process([read, result])
    secrets = [e for e in out if e.kind == E.SECRET]
    assert [(s.data["type"], s.data["path"], s.data["line"], s.call_id) for s in secrets] == [
        ("AWS Access Key", "/w/creds.ini", 1, "c1")
    ]
    assert secrets[0].data["hash"] == SCANNER.value_hash(FAKE_AWS)
    assert FAKE_AWS not in repr(secrets[0].data)


def test_excluded_sessions_and_paths_are_not_scanned() -> None:
    result = ev(E.TOOL_RESULT, "t1", session="codex:skip-me", contents=[("output", FAKE_AWS)])
    assert stage(exclude_sessions=["codex:skip-*"]).process([result]) == []
    read = ev(E.READ, "r1", call_id="c1", data={"path": "/w/fixtures/keys.txt"})
    result = ev(E.TOOL_RESULT, "t2", call_id="c1", contents=[("output", FAKE_AWS)])
    out = stage(exclude_paths=["**/fixtures/**"]).process([read, result])
    assert [e.kind for e in out] == []


def test_prompt_text_is_redacted_or_not_stored_at_all() -> None:
    p = ev(E.PROMPT, data={"text": f"use {FAKE_AWS} now"})
    out = stage().process([p])
    assert p.data["text"] == "use [REDACTED:AWS Access Key] now"
    assert [e.data["label"] for e in out] == ["text"]
    p2 = ev(E.PROMPT, data={"text": f"use {FAKE_AWS} now"})
    out2 = stage(store_text=False).process([p2])
    assert p2.data == {"text_omitted": True, "text_chars": len(f"use {FAKE_AWS} now")}
    assert [e.data["type"] for e in out2] == ["AWS Access Key"]
    assert stage(store_text=False).redact_title("a title") is None


def test_stored_command_input_is_redacted() -> None:
    call = ev(E.TOOL_CALL, tool="shell", call_id="c9",
              data={"input": {"command": ["bash", "-lc", f"export K={FAKE_AWS}"]}})
    out = stage().process([call])
    assert call.data["input"]["command"][2] == "export K=[REDACTED:AWS Access Key]"
    assert [(e.data["label"], e.data["type"]) for e in out] == [
        ("input.command[2]", "AWS Access Key")
    ]


def test_sensitive_reads_use_the_configured_list() -> None:
    read = ev(E.READ, "r1", data={"path": "/home/u/.ssh/id_ed25519", "op": "read"})
    assert [e.kind for e in stage().process([read])] == [E.SENSITIVE_READ]
    custom = ev(E.READ, "r2", data={"path": "/w/vault.yml", "op": "read"})
    assert [e.kind for e in stage(sensitive_paths=["vault.yml"]).process([custom])] == [
        E.SENSITIVE_READ
    ]
    assert stage(sensitive_paths=["vault.yml"]).process([read]) == []


def test_spilled_output_is_read_only_inside_the_session_layout(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "-w"
    sid = "abc"
    (proj / sid / "tool-results").mkdir(parents=True)
    (proj / sid / "tool-results" / "toolu_1.txt").write_text(f"token {FAKE_AWS}\n")
    outside = tmp_path / "elsewhere" / "tool-results"
    outside.mkdir(parents=True)
    (outside / "toolu_1.txt").write_text(f"token {FAKE_AWS}\n")
    good = ev(E.TOOL_RESULT, "t1", contents=[], spill_path=str(proj / sid / "tool-results" / "toolu_1.txt"))
    good.source_path = str(proj / f"{sid}.jsonl")
    bad = ev(E.TOOL_RESULT, "t2", contents=[], spill_path=str(outside / "toolu_1.txt"))
    bad.source_path = str(proj / f"{sid}.jsonl")
    assert [e.data["label"] for e in stage().process([good])] == ["spilled"]
    assert stage().process([bad]) == []


def test_a_spilled_output_is_read_into_a_buffer_of_its_size(tmp_path: Path) -> None:
    """A spilled file of 75 KB costs about its size while it is scanned, not the 16 MiB
    cap (os.read allocates what it is asked for: Claude's subagents' spills were the
    backfill worker's largest allocation)."""
    import tracemalloc

    proj = tmp_path / "projects" / "-w"
    (proj / "abc" / "tool-results").mkdir(parents=True)
    spill = proj / "abc" / "tool-results" / "toolu_1.txt"
    spill.write_text("x" * 75_000 + f"\ntoken {FAKE_AWS}\n")
    result = ev(E.TOOL_RESULT, "t1", contents=[], spill_path=str(spill))
    result.source_path = str(proj / "abc.jsonl")
    scan = stage()
    tracemalloc.start()
    try:
        found = scan.process([result])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(e.data["label"], e.data["line"]) for e in found] == [("spilled", 2)]
    assert peak < 1 << 20


def test_output_of_a_call_that_read_several_files_keeps_the_candidate_paths(
    tmp_path: Path,
) -> None:
    from agentsrc_daemon.store import Batch, Reader, Store

    reads = [
        ev(E.READ, "r1", call_id="c1", data={"path": "/w/.npmrc", "op": "read"}),
        ev(E.READ, "r2", call_id="c1", data={"path": "/w/keys/id_rsa", "op": "read"}),
    ]
    result = ev(E.TOOL_RESULT, "t1", call_id="c1", contents=[("output", f"k={FAKE_AWS}\n")])
    out = stage().process([*reads, result])
    secrets = [e for e in out if e.kind == E.SECRET]
    assert [(s.data["path"], s.data["paths"]) for s in secrets] == [
        (None, ["/w/.npmrc", "/w/keys/id_rsa"])
    ]
    # In the store: findings --path finds it by either candidate, relative or absolute,
    # and the report ties the sensitive read of keys/id_rsa to it.
    db = tmp_path / "db.sqlite"
    store = Store(db)
    store.commit(Batch(events=[*reads, result, *out]))
    store.close()
    reader = Reader(db)
    try:
        for path in ("keys/id_rsa", "/w/keys/id_rsa", ".npmrc", "**/id_rsa"):
            found = reader.findings(path=path)
            assert [f["paths"] for f in found] == [["/w/.npmrc", "/w/keys/id_rsa"]], path
        assert reader.findings(path="other.txt") == []
        sensitive = {r["path"]: r["findings"] for r in reader.findings_report()["sensitive_reads"]}
        assert sensitive["/w/keys/id_rsa"] == 1
    finally:
        reader.close()
