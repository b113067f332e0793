"""The Crush adapter and the database reader on Crush's schema: the corpus databases
(copies, with their -wal and -shm) against tests/raw_counts.py's independent count, and
made-up rows for what the corpus does not show (a result before its call, a sub-agent's
cost, a summary, a bang-mode command, parts of unknown types, times in milliseconds).
Reading never writes the database (tests/test_opencode_db.py shows the same for
OpenCode's)."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from crush_fixture import T0, Writer, call, finish, part, result, text

from agentsrc_daemon.adapters.crush import ADAPTER, project_dir
from agentsrc_daemon.derive.derive import Deriver
from agentsrc_daemon.events import Drift, Event, Record, SessionFacts
from agentsrc_daemon.ingest.agent_db import AgentDB
from agentsrc_daemon.ingest.db_schemas import CRUSH

from corpus import corpus_home
from raw_counts import CRUSH_EDITS, Counts, crush_counts

CORPUS_DBS = ("code/swift-kdl/.crush/crush.db", "code/mcpfier/.crush/crush.db")


def copy_db(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if Path(str(src) + suffix).exists():
            shutil.copyfile(str(src) + suffix, str(dest / "crush.db") + suffix)
    return dest / "crush.db"


def read_all(path: Path, max_rows: int = 500, clock: int | None = None) -> tuple[list[Record], dict[str, Any]]:
    """Every row through the reader (in pages of ``max_rows``) and the adapter, the
    state persisted as JSON between pages, as ingest keeps it."""
    reader = AgentDB(str(path), CRUSH, max_rows=max_rows,
                     clock_ms=(lambda: clock) if clock is not None else None)
    state = ADAPTER.initial_state(str(path))
    cursor: dict[str, Any] | None = None
    out: list[Record] = []
    for _ in range(10_000):
        got = reader.poll(cursor)
        assert not got.busy and not got.errors, got.errors
        for page in got.pages:
            out += ADAPTER.parse_rows(page.table, page.rows, str(path), state)
        state = orjson.loads(orjson.dumps(state))
        cursor = got.cursor
        if not got.more:
            break
    reader.close()
    return out, state


def final_events(records: list[Record]) -> dict[str, Event]:
    """Each key's highest revision, as the store keeps it."""
    out: dict[str, Event] = {}
    for r in records:
        if isinstance(r, Event) and (r.key not in out or r.revision > out[r.key].revision):
            out[r.key] = r
    return out


def counts_of(events: dict[str, Event]) -> dict[str, Counts]:
    """The adapter's events counted the way raw_counts counts the rows."""
    deriver = Deriver(project_root_for=lambda cwd: cwd)
    by: dict[str, Counts] = {}
    for ev in events.values():
        c = by.setdefault(ev.session_id.split(":", 1)[1], Counts())
        if ev.kind == "prompt":
            c.prompts += 1
        elif ev.kind == "message":
            c.messages += 1
        elif ev.kind == "tool_call":
            c.tool_calls += 1
            if ev.tool in CRUSH_EDITS:
                c.edits += [(d.data["path"].rsplit("/", 1)[-1], d.data["op"])
                            for d in deriver(ev) if d.kind == "edit"]
        elif ev.kind == "tool_result":
            c.commands += [d.data["exit_code"] for d in deriver(ev) if d.kind == "command"]
        elif ev.kind == "usage":
            for k in ("input_tokens", "output_tokens", "total_tokens"):
                c.usage[k] += ev.data[k]
            c.reported_cost += ev.data.get("cost") or 0.0
    return {sid: c.normalized() for sid, c in by.items()}


def fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the corpus ----------------------------------------------------------------------------


@pytest.mark.parametrize("rel", CORPUS_DBS, ids=lambda r: r.split("/")[1])
def test_corpus_database_counts_exactly(rel: str, tmp_path: Path) -> None:
    db = copy_db(corpus_home() / rel, tmp_path / ".crush")
    wal = Path(str(db) + "-wal")
    before = (fingerprint(db), fingerprint(wal))
    expected = crush_counts(db)
    for max_rows in (500, 7):  # one page, and many
        records, _ = read_all(db, max_rows=max_rows)
        assert [r for r in records if isinstance(r, Drift)] == []
        got = counts_of(final_events(records))
        # A session with no event (its only message was Crush's initialize prompt and
        # an error) has no counts: compare what each says.
        assert {sid: got.get(sid, Counts().normalized()) for sid in expected} == expected
    # Read-only: the database and its WAL (where most rows are) are untouched.
    assert (fingerprint(db), fingerprint(wal)) == before


def test_corpus_titles_follow_the_injected_context_rule(tmp_path: Path) -> None:
    """Crush's own title when it generated one, else the first prompt a person typed
    (the initialize prompt is Crush's, never a title)."""
    titles: dict[str, str | None] = {}
    for rel in CORPUS_DBS:
        db = copy_db(corpus_home() / rel, tmp_path / rel.split("/")[1] / ".crush")
        records, _ = read_all(db)
        for r in records:
            if isinstance(r, SessionFacts):
                titles.setdefault(r.native_id, None)
                if r.title:
                    titles[r.native_id] = r.title
    assert sorted((sid[:8], bool(t)) for sid, t in titles.items()) == [
        ("536e738f", True), ("5ab22793", True), ("87c36ae3", False), ("9685e101", True)]
    assert not any(t and t.startswith(("`Please analyze", "Please analyze")) for t in titles.values())


# -- made-up rows -----------------------------------------------------------------------------


def test_turns_usage_commands_and_the_unit_of_times(tmp_path: Path) -> None:
    db = tmp_path / "p" / ".crush" / "crush.db"
    w = Writer(db)
    w.session("s1", T0)
    for n in (1, 2):
        w.turn("s1", n, T0 + n)
    w.close()
    records, _ = read_all(db, clock=(T0 + 100) * 1000)
    events = final_events(records)
    kinds = Counter(e.kind for e in events.values())
    assert kinds == {"turn_start": 2, "turn_end": 2, "prompt": 2, "tool_call": 2,
                     "tool_result": 2, "message": 2, "usage": 1}
    usage = events["crush:usage:s1"]
    assert usage.data["input_tokens"] == 200 and usage.data["output_tokens"] == 20
    assert usage.data["cost"] == pytest.approx(0.02) and usage.data["model"] == "gpt-4o"
    assert usage.ts == "2026-01-15T10:00:02.000Z"  # seconds, read as seconds
    prompt = events["crush:prompt:s1-u1"]
    assert (prompt.ts, prompt.turn_id, prompt.cwd) == (
        "2026-01-15T10:00:01.000Z", "s1-u1", str(tmp_path / "p"))
    assert project_dir(str(db)) == str(tmp_path / "p")
    res = events["crush:tool_result:s1-c1"]
    derived = Deriver(project_root_for=lambda c: c)(res)
    assert [(d.kind, d.data["command"], d.data["exit_code"], d.data["duration_ms"]) for d in derived] == [
        ("command", "echo 1", 0, 5)]
    assert {e.turn_id for e in events.values() if e.key.startswith("crush:turn:")} == {"s1-u1", "s1-u2"}


def test_a_result_read_before_its_call_gets_its_command(tmp_path: Path) -> None:
    """Rows of one second come in id order: a tool result can come before the call
    that asked for it. Its result is emitted again, with the call's command, once the
    call is read."""
    state = ADAPTER.initial_state("/p/.crush/crush.db")
    res_row = {"rowid": 2, "id": "m2", "session_id": "s", "role": "tool", "created_at": T0,
               "updated_at": T0, "parts": [result("c1", "Exit code 2", {
                   "start_time": 1, "end_time": 3, "output": "boom\nExit code 2"})]}
    call_row = {"rowid": 1, "id": "m1", "session_id": "s", "role": "assistant",
                "created_at": T0, "updated_at": T0, "finished_at": T0,
                "parts": [call("c1", "bash", {"command": "make"}), finish("tool_use", T0)]}
    first = ADAPTER.parse_rows("messages", [res_row], "/p/.crush/crush.db", state)
    second = ADAPTER.parse_rows("messages", [call_row], "/p/.crush/crush.db", state)
    derive = Deriver(project_root_for=lambda c: c)
    early = [e for e in first if isinstance(e, Event)]
    assert [d.kind for e in early for d in derive(e)] == []  # no command known yet
    late = [e for e in second if isinstance(e, Event) and e.kind == "tool_result"]
    assert len(late) == 1 and late[0].key == early[0].key and late[0].revision > early[0].revision
    assert [(d.data["command"], d.data["exit_code"]) for d in derive(late[0])] == [("make", 2)]


def test_sub_agent_cost_counts_once_and_placeholders_are_no_titles(tmp_path: Path) -> None:
    db = tmp_path / ".crush" / "crush.db"
    w = Writer(db)
    w.session("parent", T0, title="New Session", prompt=10, completion=1, cost=0.30)
    w.session("child", T0, title="New Agent Session", parent="parent", prompt=5, completion=1,
              cost=0.10)
    w.message("u", "parent", "user", T0, [text("Fix the build\nplease"), finish("stop", T0)])
    w.close()
    records, _ = read_all(db, clock=(T0 + 100) * 1000)
    events = final_events(records)
    assert events["crush:usage:parent"].data["cost"] == pytest.approx(0.30)
    child = events["crush:usage:child"].data
    assert child["cost"] == 0.0 and child["cost_in_parent"] == pytest.approx(0.10)
    titles = [r.title for r in records if isinstance(r, SessionFacts) and r.title]
    assert titles == ["Fix the build"]
    parents = {r.native_id: r.parent_session_id for r in records if isinstance(r, SessionFacts)}
    assert parents["child"] == "crush:parent"


def test_streaming_summary_shell_and_unknown_parts(tmp_path: Path) -> None:
    db = tmp_path / ".crush" / "crush.db"
    w = Writer(db)
    w.session("s", T0, title="Own title")
    w.message("u", "s", "user", T0, [text("!ls"), part("shell_command", command="ls",
                                                         output="a\n", exit_code=0)])
    w.message("a", "s", "assistant", T0, [text("half an ans")], model="m")  # streaming
    w.message("sum", "s", "assistant", T0 + 1, [text("the summary"), finish("end_turn", T0 + 1)],
              model="m", summary=True)
    w.message("odd", "s", "assistant", T0 + 2, [part("hologram", x=1), finish("end_turn", T0 + 2)],
              model="m")
    w.close()
    records, _ = read_all(db, clock=(T0 + 100) * 1000)
    events = final_events(records)
    kinds = Counter(e.kind for e in events.values())
    assert kinds["message"] == 0 and kinds["compaction"] == 1  # streaming: not yet; summary
    derive = Deriver(project_root_for=lambda c: c)
    commands = [d.data for e in events.values() for d in derive(e) if d.kind == "command"]
    assert [(c["command"], c["exit_code"]) for c in commands] == [("ls", 0)]
    assert [r.record_type for r in records if isinstance(r, Drift)] == ["part/hologram"]
    # The streaming message, once Crush finishes it: read again, emitted once.
    w = Writer(db, create=False)
    w.message("a", "s", "assistant", T0 + 5, [text("half an answer"), finish("end_turn", T0 + 5)],
              model="m", finished=T0 + 5)
    w.close()
    again, _ = read_all(db, clock=(T0 + 100) * 1000)
    texts = [e.data["text"] for e in final_events(again).values() if e.kind == "message"]
    assert texts == ["half an answer"]


def test_times_in_milliseconds_are_read_as_such(tmp_path: Path) -> None:
    """The schema says milliseconds: a Crush that writes them is read right too."""
    db = tmp_path / ".crush" / "crush.db"
    w = Writer(db)
    ms = T0 * 1000 + 250
    w.session("s", ms)
    w.message("u", "s", "user", ms, [text("hello")])
    w.close()
    records, _ = read_all(db, clock=ms + 100_000)
    prompt = final_events(records)["crush:prompt:u"]
    assert prompt.ts == "2026-01-15T10:00:00.250Z"
