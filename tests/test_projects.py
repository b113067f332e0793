"""The files agents keep in projects (Aider, Crush): the project scan's bounds
(ingest/project_scan.py), and the real daemon on copies of the corpus's project
folders named with --projects-root: every Aider run and Crush session with exact
counts against tests/raw_counts.py, status listing what was searched and found, live
appends and inserts on subscribe, and kill -9 during the backfill."""

from __future__ import annotations

import os
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from aider_fixture import CHAT, AiderSession
from crush_fixture import T0 as CRUSH_T0
from crush_fixture import Writer

from agentsrc_daemon.adapters.aider import native_id
from agentsrc_daemon.ingest.project_scan import MAX_DEPTH, ProjectScan, walk

from corpus import corpus_home
from fake_secrets import fragments
from harness import (
    DaemonFactory,
    DaemonProcess,
    all_events,
    killed_mid_backfill_ends_as,
    signature,
    wait_for,
)
from raw_counts import aider_counts, crush_counts

CORPUS_PROJECTS = ("Simple-Calulator", "mcpfier", "swift-kdl")


def _aider(folder: Path) -> None:
    s = AiderSession(folder)
    s.start()
    s.typed("hello")
    s.save()


# -- the scan ------------------------------------------------------------------------------------


def test_the_scan_is_bounded_skips_heavy_folders_and_follows_no_symlink(tmp_path: Path) -> None:
    code, outside = tmp_path / "code", tmp_path / "outside"
    _aider(code / "a")  # depth 1
    _aider(code / "team" / "b" / "c")  # depth 3: the deepest looked in
    _aider(code / "team" / "b" / "c" / "d")  # depth 4: not
    _aider(code / "node_modules" / "pkg")
    _aider(code / ".cache" / "p")
    _aider(code / "env1")
    (code / "env1" / "pyvenv.cfg").write_text("home = /usr\n")
    Writer(code / "svc" / ".crush" / "crush.db").close()
    _aider(outside / "secret-project")
    (code / "link").symlink_to(outside)  # a symlink out of the folder: not followed
    (code / "x").mkdir()
    (code / "x" / ".crush").symlink_to(outside)
    found, listed = walk(code)
    assert MAX_DEPTH == 3
    assert sorted(os.path.relpath(p, code) for p in found) == [
        f"a/{CHAT}", "svc/.crush/crush.db", f"team/b/c/{CHAT}"]
    assert {s.adapter for s in found.values()} == {"aider", "crush"}
    # Listed: code, a, team, b, c, env1 (then left: a virtual environment), svc, x.
    assert listed == 8


def test_a_pass_reports_what_it_found_and_paces_itself(tmp_path: Path) -> None:
    code, known = tmp_path / "code", tmp_path / "elsewhere" / "app"
    _aider(code / "a")
    _aider(known)  # a project root of a known session, outside every named folder
    scan = ProjectScan(lambda: [code, tmp_path / "missing"], lambda: [str(known)],
                       clock=lambda: 1000.0)
    added, removed = scan.run()
    assert sorted(added) == sorted([str(code / "a" / CHAT), str(known / CHAT)]) and not removed
    assert scan.watch_dirs() == {str(code / "a"), str(known)}
    st = scan.status()
    assert st["folders"] == [{"path": str(code), "exists": True},
                             {"path": str(tmp_path / "missing"), "exists": False}]
    assert st["known_roots"] == 1 and st["scan"]["files"] == 2 and st["scan"]["dirs"] == 2
    assert scan.due == 1000.0 + st["scan"]["interval_s"] and st["scan"]["interval_s"] >= 60
    shutil.rmtree(code / "a")
    added, removed = scan.run()
    assert not added and removed == {str(code / "a" / CHAT)}


# -- the daemon ------------------------------------------------------------------------------------


def _copy_projects(code: Path) -> None:
    for name in CORPUS_PROJECTS:
        shutil.copytree(corpus_home() / "code" / name, code / name,
                        copy_function=shutil.copyfile)


def _expected(code: Path) -> dict[str, dict[str, Any]]:
    """Per session id: prompts, tool calls, messages, edits, commands and tokens, from
    tests/raw_counts.py's reading of the files."""
    out: dict[str, dict[str, Any]] = {}
    chat = code / "Simple-Calulator" / CHAT
    for start, c in aider_counts(chat).items():
        out["aider:" + native_id(start, str(chat.parent))] = _row(c)
    for name in ("mcpfier", "swift-kdl"):
        for sid, c in crush_counts(code / name / ".crush" / "crush.db").items():
            out[f"crush:{sid}"] = _row(c)
    return out


def _row(c: Any) -> dict[str, Any]:
    return {"prompts": c.prompts, "tool_calls": c.tool_calls, "messages": c.messages,
            "edits": len(c.edits), "commands": len(c.commands),
            "input_tokens": c.usage["input_tokens"], "output_tokens": c.usage["output_tokens"]}


def _got(d: DaemonProcess) -> dict[str, dict[str, Any]]:
    sessions = d.call("sessions.list", {"limit": 1000})["sessions"]
    events = all_events(d)
    # Edits made by the agents' edit tools (a shell command's mkdir is an edit of its
    # own, which tests/raw_counts.py does not count).
    kinds: Counter[tuple[str, str]] = Counter(
        (e["session_id"], e["kind"]) for e in events
        if not (e["kind"] == "edit" and e["tool"] in ("bash", "run")))
    return {s["id"]: {"prompts": s["prompts"], "tool_calls": s["tool_calls"],
                      "messages": s["messages"], "edits": kinds[(s["id"], "edit")],
                      "commands": kinds[(s["id"], "command")],
                      "input_tokens": s["tokens"]["input_tokens"],
                      "output_tokens": s["tokens"]["output_tokens"]}
            for s in sessions}


def test_corpus_projects_are_found_and_counted_exactly(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    code = tmp_path / "code"
    _copy_projects(code)
    expected = _expected(code)
    assert len(expected) == 5 and sum(1 for k in expected if k.startswith("aider:")) == 1
    d = daemon_factory().start("--projects-root", str(code))
    st = d.wait_live()
    # The history's last record (and the requests of its turn) once the file is quiet.
    wait_for(lambda: _got(d) == expected, timeout=20)
    projects = st["projects"]
    assert projects["folders"] == [{"path": str(code), "exists": True}]
    assert sorted((f["agent"], os.path.relpath(f["path"], code)) for f in projects["files"]) == [
        ("aider", f"Simple-Calulator/{CHAT}"), ("crush", "mcpfier/.crush/crush.db"),
        ("crush", "swift-kdl/.crush/crush.db")]
    assert projects["watch"] == "inotify" and projects["watched"] == 3
    # `agentsrc status` and `agentsrc doctor` say the same.
    lines = d.cli("status").stdout.splitlines()
    assert [line.split()[1:] for line in lines if line.startswith("project:")] == [
        ["aider", str(code / "Simple-Calulator" / CHAT)],
        ["crush", str(code / "mcpfier" / ".crush" / "crush.db")],
        ["crush", str(code / "swift-kdl" / ".crush" / "crush.db")]]
    assert [line for line in lines if line.startswith("projects:")][0] == (
        f"projects:  {code} (searched)")
    doctor = d.cli("doctor", check=False).stdout
    assert "3 found (inotify)" in doctor
    # The Aider run's reported cost, summed as Aider reported it.
    aider = next(k for k in expected if k.startswith("aider:"))
    usage = [e for e in all_events(d, session_id=aider) if e["kind"] == "usage"]
    assert round(sum(e.get("cost") or 0 for e in usage), 6) == 0.02702
    # The LLM history was scanned, never stored.
    assert not [e for e in all_events(d) if e["kind"] == "request"]
    # The fidelity report: every record understood; the Aider records the raw count
    # saw, as many (answers, token reports, applied edits, commits).
    rows = d.call("fidelity", {})["rows"]
    ours = [r for r in rows if r["adapter"] in ("aider", "crush")]
    assert ours and not [r for r in ours if r["not_understood"]]
    aider_types = {r["record_type"]: r["read"] for r in ours if r["adapter"] == "aider"}
    assert {t: aider_types[t] for t in ("run", "answer", "note/tokens", "note/applied",
                                        "note/commit")} == {
        "run": 1, "answer": 20, "note/tokens": 20, "note/applied": 18, "note/commit": 3}
    assert {r["record_type"]: r["read"] for r in ours if r["adapter"] == "crush"} == {
        "row/messages": 118, "row/sessions": 4}
    # Costs: Crush's as it recorded them (reported); Aider's reported where it printed
    # a cost, estimated where it did not (a model it had no price for).
    costs = {s["id"]: s["cost"] for s in d.call("sessions.list", {"limit": 100})["sessions"]}
    crush = sorted((sid.split(":")[1][:8], c["kind"], c["usd"]) for sid, c in costs.items()
                   if sid.startswith("crush:") and c["kind"] == "reported")
    assert crush == [("536e738f", "reported", 0.47697), ("5ab22793", "reported", 0.48076),
                     ("9685e101", "reported", 0.0)]
    assert costs[aider]["kind"] == "mixed" and costs[aider]["usd"] > 0.02702


def test_live_aider_append_and_crush_insert_arrive_on_subscribe(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    code = tmp_path / "code"
    aider = AiderSession(code / "app")
    aider.start()
    aider.typed("first question")
    aider.save()
    db = code / "svc" / ".crush" / "crush.db"
    w = Writer(db)
    w.session("s1", CRUSH_T0)
    w.turn("s1", 1, CRUSH_T0 + 1)
    w.close()
    d = daemon_factory(AGENTSRC_PROJECTS=str(code)).start()
    d.wait_live()
    # The history's last record (the typed line) is emitted once the file is quiet.
    wait_for(lambda: sum(e["kind"] == "prompt" for e in all_events(d)) == 2, timeout=20)
    received: list[dict[str, Any]] = []
    ready = threading.Event()

    def listen() -> None:
        with d.client() as c:
            c.connect().settimeout(30)
            for msg in c.subscribe({}):
                if msg["method"] == "subscribed":
                    ready.set()
                elif msg["method"] == "event":
                    received.append(msg["params"])
                    if sum(1 for e in received if e["kind"] == "prompt") >= 2:
                        return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert ready.wait(10)
    more = AiderSession(code / "app", now=aider.now)
    more.typed("second question")
    more.save()
    w = Writer(db, create=False)
    w.turn("s1", 2, CRUSH_T0 + 2)
    w.close()
    t.join(30)
    prompts = sorted((e["adapter"], e.get("text", e.get("data", {}).get("text")))
                     for e in received if e["kind"] == "prompt")
    assert prompts == [("aider", "second question"), ("crush", "question 2")]
    keys = [e["id"] for e in received]
    assert len(keys) == len(set(keys))
    # A project folder that goes away leaves its session gone, as every source does.
    shutil.rmtree(code / "app")

    def states() -> dict[str, str]:
        return {s["agent"]: s["source_state"]
                for s in d.call("sessions.list", {"limit": 10})["sessions"]}

    wait_for(lambda: states() == {"aider": "gone", "crush": "present"}, timeout=20)


def _big_projects(code: Path) -> None:
    """An Aider history of 60 runs and a Crush database of 60 sessions: enough that a
    backfill can be killed mid-way."""
    s = AiderSession(code / "app")
    for n in range(60):
        s.start()
        for k in range(5):
            s.typed(f"question {n}.{k}")
            s.request(f"question {n}.{k}", f"answer {n}.{k}")
            s.answer(f"answer {n}.{k}")
            s.tokens("1,000", "100", cost="0.0010")
            s.note(f"Applied edit to src/f{k}.py")
        s.tick(60)
    s.save()
    w = Writer(code / "svc" / ".crush" / "crush.db")
    for n in range(60):
        sid = f"s{n:03d}"
        w.session(sid, CRUSH_T0 + n)
        for k in range(1, 6):
            w.turn(sid, k, CRUSH_T0 + n)
    w.close()


def test_kill9_during_the_backfill_gives_the_same_events(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    code = tmp_path / "code"
    _big_projects(code)
    ref = daemon_factory(AGENTSRC_WORKERS="0").start("--projects-root", str(code))
    ref.wait_live(timeout=300)
    # The chat was written a moment ago: its last record (the last run's last edit) is
    # emitted once the file has been quiet for text_tail.QUIET_S, which may be after
    # live. The killed run below starts on a file long quiet.
    wait_for(lambda: sum(e["session_id"].startswith("aider:")
                         for e in all_events(ref, kind="edit")) == 60 * 5, timeout=30)
    expected = signature(all_events(ref))
    ref_sessions = _got(ref)
    assert Counter(k.split(":")[0] for k in ref_sessions) == {"aider": 60, "crush": 60}
    ref.stop()
    d = daemon_factory(AGENTSRC_WORKERS="0")
    killed_mid_backfill_ends_as(d, expected, "--projects-root", str(code))
    assert _got(d) == ref_sessions


def test_what_aider_sent_the_model_is_scanned_and_never_stored(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    key = fragments("AK", "IA", "Q7RZ3KX9", "PLM2VNBX")
    s = AiderSession(tmp_path / "code" / "app")
    s.start()
    s.typed("Read the config")
    # The model was sent a file added to the chat; the chat shows only the answer.
    s.request(f"Read the config\nconfig.env\nAWS_ACCESS_KEY_ID={key}", "Done.")
    s.answer("Done.")
    s.tokens("10", "2", cost="0.0001")
    s.save()
    d = daemon_factory().start("--projects-root", str(tmp_path / "code"))
    d.wait_live()
    wait_for(lambda: any(e["kind"] == "secret" for e in all_events(d)), timeout=20)
    events = all_events(d)
    secrets = [e for e in events if e["kind"] == "secret"]
    assert len(secrets) == 1 and secrets[0]["session_id"].startswith("aider:")
    assert secrets[0]["source_path"].endswith(CHAT)  # the source read (its companion beside)
    assert not [e for e in events if e["kind"] == "request"]
    assert key not in str(events)
    db = (d.data_dir / "agentsrc.db").read_bytes()
    assert key.encode() not in db
