"""The Aider adapter and the ``text`` mode's reading (ingest/text_tail.py): the corpus's
chat history (a copy, with its input and LLM histories) against tests/raw_counts.py's
independent count, read whole and in small rounds; made-up histories
(tests/aider_fixture.py) for what the corpus does not show; and a Hypothesis property:
however the writes are cut into appends, and whenever the file looks quiet, the events
kept (each key at its highest revision, as the store keeps them) are the whole read's."""

from __future__ import annotations

import hashlib
import shutil
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from aider_fixture import CHAT, INPUT, LLM, T0, AiderSession
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.adapters.aider import ADAPTER, blocks, native_id
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.derive.derive import Deriver
from agentsrc_daemon.events import REQUEST, Drift, Event, Record, SessionFacts
from agentsrc_daemon.ingest import sources, text_tail

from corpus import corpus_home
from raw_counts import Counts, aider_counts

CORPUS_FOLDER = "code/Simple-Calulator"
MAX_LINE = 1 << 24


def copy_folder(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in (CHAT, INPUT, LLM):
        if (src / name).exists():
            shutil.copyfile(src / name, dest / name)
    return dest / CHAT


def rounds(chat: Path, cursor: Cursor | None = None, budget: int = 1 << 30,
           quiet: bool = True) -> tuple[list[Record], Cursor]:
    """Rounds of the text mode until nothing is left, the cursor's state persisted as
    JSON between them, as ingest keeps it. ``quiet``: the file has been quiet (read an
    hour later), else it was written just now."""
    spec = sources.project_file(str(chat))
    assert spec is not None and spec.mode == sources.TEXT
    cursor = cursor or Cursor(str(chat), "aider", sources.TEXT)
    out: list[Record] = []
    for _ in range(10_000):
        now = chat.stat().st_mtime + (3600 if quiet else 0)
        got = text_tail.read_source(spec, cursor, ADAPTER, ADAPTER, budget, MAX_LINE, now=now)
        assert got is not None
        out += got.records
        cursor.state = orjson.loads(orjson.dumps(cursor.state))
        if not got.more:
            return out, cursor
    raise AssertionError("no end")


def final_events(records: list[Record]) -> dict[str, Event]:
    """Each key's highest revision, as the store keeps it."""
    out: dict[str, Event] = {}
    for r in records:
        if isinstance(r, Event) and (r.key not in out or r.revision >= out[r.key].revision):
            out[r.key] = r
    return out


def counts_of(events: dict[str, Event]) -> dict[str, Counts]:
    deriver = Deriver(project_root_for=lambda cwd: cwd)
    by: dict[str, Counts] = {}
    for ev in events.values():
        c = by.setdefault(ev.session_id, Counts())
        if ev.kind == "prompt":
            c.prompts += 1
        elif ev.kind == "message":
            c.messages += 1
        elif ev.kind == "tool_call":
            c.tool_calls += 1
            c.edits += [(d.data["path"].rsplit("/", 1)[-1], d.data["op"])
                        for d in deriver(ev) if d.kind == "edit"]
        elif ev.kind == "tool_result":
            c.commands += [d.data["exit_code"] for d in deriver(ev) if d.kind == "command"]
        elif ev.kind == "usage":
            for k in c.usage:
                c.usage[k] += ev.data.get(k) or 0
            c.reported_cost += ev.data.get("cost") or 0.0
    return {sid: c.normalized() for sid, c in by.items()}


def local(dt: datetime) -> str:
    """A local time Aider wrote, as the adapter reads it (this machine's zone), in UTC."""
    utc = dt.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


# -- the corpus ----------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [1 << 30, 4096], ids=["whole", "rounds-of-4k"])
def test_corpus_history_counts_exactly(tmp_path: Path, budget: int) -> None:
    src = corpus_home() / CORPUS_FOLDER
    chat = copy_folder(src, tmp_path / "Simple-Calulator")
    expected = aider_counts(chat)
    assert list(expected) == ["2025-05-04 17:02:36"]  # one run (with /model switches)
    records, cursor = rounds(chat, budget=budget)
    assert [r for r in records if isinstance(r, Drift)] == []
    events = final_events(records)
    sid = "aider:" + native_id("2025-05-04 17:02:36", str(chat.parent))
    assert counts_of({k: e for k, e in events.items() if e.kind != REQUEST}) == {
        sid: expected["2025-05-04 17:02:36"]}
    # Every request of the LLM history goes to the scan, once per key.
    requests = [e for e in events.values() if e.kind == REQUEST]
    assert len(requests) == 34 and all(e.contents and e.session_id == sid for e in requests)
    assert cursor.offset == chat.stat().st_size
    # The prompts' times come from the input history, in order.
    prompts = sorted((e.offset, e.ts) for e in events.values() if e.kind == "prompt")
    times = [ts for _, ts in prompts]
    assert len(times) == 16 and times == sorted(times) and None not in times


def test_corpus_read_twice_emits_nothing_new(tmp_path: Path) -> None:
    chat = copy_folder(corpus_home() / CORPUS_FOLDER, tmp_path / "p")
    first, cursor = rounds(chat)
    again, _ = rounds(chat, cursor)
    kept = final_events(first)
    # Read again with nothing appended: only the last turn's requests and its last
    # record, under the same keys and revisions (the store keeps one of each).
    for ev in final_events(again).values():
        assert (ev.key in kept and kept[ev.key].revision == ev.revision), ev.key


# -- made-up histories --------------------------------------------------------------------------


def _session(folder: Path) -> AiderSession:
    s = AiderSession(folder)
    s.start(fmt="diff")
    s.typed("Make the API key configurable")
    change = ("Here is the change.\n\napp.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\n"
              "x = 2\n>>>>>>> REPLACE\n```")
    s.request("Make the API key configurable", change)
    s.answer(change)
    s.tokens("2,345", "120", cost="0.0123")
    s.note("Applied edit to app.py")
    s.note("Commit 1a2b3c4 feat: configurable key")
    s.typed("!pytest -q")
    s.typed("/ask what does main do?")
    s.typed("what does main do?", history=False)  # Aider's own copy of the argument
    s.request("what does main do?", "It starts the server.")
    s.answer("It starts the server.")
    s.tokens("3.2k", "1k", cost="0.0200", cache=("10", "1,000"))
    s.typed("/add notes.md")
    s.typed("Create notes.md")
    s.request("Create notes.md", "notes.md")
    s.answer("notes.md\n```\nhello\n```")
    s.note("notes.md")
    s.note("Create new file? (Y)es/(N)o [Yes]: y")
    s.note("Applied edit to notes.md")
    s.note("Running python -m http.server")
    return s


def test_a_run_read_from_the_three_files(tmp_path: Path) -> None:
    s = _session(tmp_path / "p")
    s.save()
    records, _ = rounds(tmp_path / "p" / CHAT)
    events = final_events(records)
    sid = "aider:" + native_id(f"{T0:%Y-%m-%d %H:%M:%S}", str(tmp_path / "p"))
    assert {e.session_id for e in events.values()} == {sid}
    kinds = Counter(e.kind for e in events.values())
    assert kinds == {"prompt": 3, "message": 3, "tool_call": 5, "tool_result": 2, "usage": 2,
                     "request": 3, "turn_start": 3, "turn_end": 2}
    prompts = sorted((e.offset, e.data["text"], e.ts) for e in events.values()
                     if e.kind == "prompt")
    # The input history's times (Aider wrote them local, with microseconds).
    assert [(t, ts) for _, t, ts in prompts] == [
        ("Make the API key configurable", local(datetime(2026, 1, 15, 10, 0, 0, 500000))),
        ("what does main do?", local(datetime(2026, 1, 15, 10, 0, 4, 500000))),
        ("Create notes.md", local(datetime(2026, 1, 15, 10, 0, 8, 500000))),
    ]
    answers = sorted((e.offset, e.ts) for e in events.values() if e.kind == "message")
    assert answers[0][1] == local(datetime(2026, 1, 15, 10, 0, 3))  # its LLM RESPONSE
    usage = sorted((e.offset, e.data["input_tokens"], e.data["output_tokens"],
                    e.data["cache_read_tokens"], e.data["cache_creation_tokens"], e.data["cost"])
                   for e in events.values() if e.kind == "usage")
    assert [u[1:] for u in usage] == [(2345, 120, 0, 0, 0.0123), (3200, 1000, 1000, 10, 0.02)]
    derive = Deriver(project_root_for=lambda c: c)
    derived = [d for e in events.values() for d in derive(e)]
    assert sorted((d.data["path"].rsplit("/", 1)[-1], d.data["op"]) for d in derived
                  if d.kind == "edit") == [("app.py", "update"), ("notes.md", "write")]
    assert sorted(d.data["command"] for d in derived if d.kind == "command") == [
        "pytest -q", "python -m http.server"]
    titles = [r.title for r in records if isinstance(r, SessionFacts) and r.title]
    assert titles == ["Make the API key configurable"]
    facts = [r for r in records if isinstance(r, SessionFacts)]
    assert {f.model for f in facts if f.model} == {"anthropic/claude-sonnet-4"}
    assert {f.version for f in facts if f.version} == {"0.86.1"}


def test_session_ids_are_the_runs_start_and_the_folder(tmp_path: Path) -> None:
    digest = hashlib.blake2b(b"/home/dev/app", digest_size=4).hexdigest()
    assert native_id("2026-01-15 10:00:00", "/home/dev/app") == f"20260115T100000-{digest}"
    assert native_id("2026-01-15 10:00:00", "/home/dev/app", 2) == f"20260115T100000-{digest}-2"
    s = AiderSession(tmp_path / "p")
    s.start()
    s.typed("first run")
    s.start()  # restarted within the same second
    s.typed("second run")
    s.save()
    events = final_events(rounds(tmp_path / "p" / CHAT)[0])
    by_session = sorted((e.session_id.split(":", 1)[1], e.data["text"])
                        for e in events.values() if e.kind == "prompt")
    base = native_id(f"{T0:%Y-%m-%d %H:%M:%S}", str(tmp_path / "p"))
    assert by_session == [(base, "first run"), (base + "-2", "second run")]


def test_the_last_record_waits_for_quiet_and_is_never_counted_twice(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    s = AiderSession(folder)
    s.start()
    s.typed("Explain the code")
    s.request("Explain the code", "It adds.")
    s.save()
    chat = folder / CHAT
    with chat.open("ab") as fh:
        fh.write(b"\nIt adds\n")  # the answer, half written
    busy, cursor = rounds(chat, quiet=False)
    assert [e.kind for e in busy if isinstance(e, Event) and e.kind == "message"] == []
    quiet, cursor = rounds(chat, cursor)
    msg = [e for e in quiet if isinstance(e, Event) and e.kind == "message"]
    assert [m.data["text"] for m in msg] == ["It adds"]
    with chat.open("ab") as fh:
        fh.write(b"two numbers.\n\n> Tokens: 10 sent, 5 received. Cost: $0.01 message, "
                 b"$0.01 session.  \n")
    more, cursor = rounds(chat, cursor)
    again = [e for e in more if isinstance(e, Event) and e.kind == "message"]
    assert [(m.key, m.data["text"]) for m in again] == [(msg[0].key, "It adds\ntwo numbers.")]
    assert again[0].revision > msg[0].revision
    kept = final_events(busy + quiet + more)
    assert Counter(e.kind for e in kept.values())["message"] == 1
    assert [e.data["cost"] for e in kept.values() if e.kind == "usage"] == [0.01]
    assert cursor.offset == chat.stat().st_size


def test_blocks_frame_a_note_of_several_lines() -> None:
    lines = ["# aider chat started at 2026-01-15 10:00:00", "", "> Tokens: 1 sent, 1 received.",
             "Cost: $0.01 message, $0.01 session.  ", "", "#### hi  ", "", "answer", "",
             "> Applied edit to a.py  "]
    at, offsets = 0, []
    for line in lines:
        offsets.append((at, line))
        at += len(line) + 1
    got = [(b.kind, len(b.lines), b.complete) for b in blocks(offsets, at)]
    assert got == [("run", 1, True), ("note", 2, True), ("input", 1, True),
                   ("answer", 2, True), ("note", 1, True)]


# -- Hypothesis ----------------------------------------------------------------------------------


def _writes(tmp: Path) -> list[tuple[str, bytes]]:
    s = _session(tmp)
    s.start()
    s.typed("second run prompt")
    s.request("second run prompt", "Sure.")
    s.answer("Sure.")
    s.tokens("100", "10", cost="0.0010")
    return s.writes


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_appends_in_any_pieces_give_the_whole_reads_events(tmp_path_factory: Any, data: Any) -> None:
    folder = tmp_path_factory.mktemp("aider")
    writes = _writes(folder)
    AiderSession(folder, writes=list(writes)).save()
    expected = {k: (e.kind, e.revision, e.data) for k, e in
                final_events(rounds(folder / CHAT)[0]).items()}
    # The same writes, each maybe cut in two, appended in steps to the same files (ids
    # hold the folder) made empty again; a round after each step, the file quiet or not.
    for name in (CHAT, INPUT, LLM):
        (folder / name).unlink()
        (folder / name).write_bytes(b"")
    pieces: list[tuple[str, bytes]] = []
    for name, blob in writes:
        cut = data.draw(st.integers(0, len(blob)))
        pieces += [(name, blob[:cut]), (name, blob[cut:])]
    steps = data.draw(st.lists(st.integers(1, len(pieces)), min_size=1, max_size=6))
    cursor: Cursor | None = None
    got: list[Record] = []
    done = 0
    for stop in sorted(steps) + [len(pieces)]:
        for name, blob in pieces[done:stop]:
            with (folder / name).open("ab") as fh:
                fh.write(blob)
        done = max(done, stop)
        records, cursor = rounds(folder / CHAT, cursor, budget=data.draw(st.sampled_from(
            [64, 1024, 1 << 30])), quiet=data.draw(st.booleans()))
        got += records
    records, cursor = rounds(folder / CHAT, cursor)  # and once it is quiet
    got += records
    kept = final_events(got)
    assert {k: (e.kind, e.revision, e.data) for k, e in kept.items()} == expected
    # Never counted twice: a key emitted again carries a higher revision or the same
    # event (the store keeps the highest).
    seen: dict[str, tuple[int, Any]] = {}
    for r in got:
        if isinstance(r, Event) and r.kind != REQUEST:
            if r.key in seen and seen[r.key][0] == r.revision:
                assert seen[r.key][1] == r.data, r.key
            seen[r.key] = (r.revision, r.data)
    shutil.rmtree(folder)


def test_a_quiet_file_is_decided_by_its_mtime(tmp_path: Path) -> None:
    s = AiderSession(tmp_path / "p")
    s.start()
    s.typed("hello there")
    s.save()
    chat = tmp_path / "p" / CHAT
    with chat.open("ab") as fh:
        fh.write(b"\nan answer\n")
    spec = sources.project_file(str(chat))
    assert spec is not None
    cursor = Cursor(str(chat), "aider", sources.TEXT)
    got = text_tail.read_source(spec, cursor, ADAPTER, ADAPTER, 1 << 20, MAX_LINE,
                                now=time.time())
    assert got is not None and got.retry_after is not None
    assert 0 < got.retry_after <= text_tail.QUIET_S


def test_requests_of_the_last_turn_hold_its_last_record_until_quiet(tmp_path: Path) -> None:
    """Requests are placed in a turn by the time of the record after them: with no
    later record, the last one waits (the offset before it) for the quiet read, so a
    daemon stopped before the file went quiet reads it again on start."""
    s = AiderSession(tmp_path / "p")
    s.start()
    s.typed("Explain")
    s.request("Explain", "It adds.")
    s.answer("It adds.")
    s.tokens("10", "5", cost="0.01")
    s.save()
    chat = tmp_path / "p" / CHAT
    busy, cursor = rounds(chat, quiet=False)
    assert [e.kind for e in busy if isinstance(e, Event) and e.kind in (REQUEST, "usage")] == []
    assert cursor.offset < chat.stat().st_size
    quiet, cursor = rounds(chat, cursor)
    assert Counter(e.kind for e in quiet if isinstance(e, Event))[REQUEST] == 1
    assert cursor.offset == chat.stat().st_size


def test_older_cache_reports_and_the_records_named_for_fidelity(tmp_path: Path) -> None:
    s = AiderSession(tmp_path / "p")
    s.start()
    s.typed("hello")
    s.answer("Hi.")
    s.note("Tokens: 1,200 sent, 800 cached, 30 received. Cost: $0.0050 message, $0.0050 session.")
    s.note("Added notes.md to the chat.")
    s.save()
    chat = tmp_path / "p" / CHAT
    spec = sources.project_file(str(chat))
    assert spec is not None
    cursor = Cursor(str(chat), "aider", sources.TEXT)
    got = text_tail.read_source(spec, cursor, ADAPTER, ADAPTER, 1 << 20, MAX_LINE,
                                now=chat.stat().st_mtime + 60)
    assert got is not None
    usage = [e for e in got.records if isinstance(e, Event) and e.kind == "usage"]
    assert [(u.data["input_tokens"], u.data["cache_read_tokens"], u.data["cost"])
            for u in usage] == [(1200, 800, 0.005)]
    assert cursor.state is not None
    named = [ADAPTER.record_kind(obj, cursor.state["adapter"]) + (obj["events"],)
             for obj in got.read]
    assert named == [
        ("0.86.1", "run", False, False), ("0.86.1", "note/version", False, False),
        ("0.86.1", "note/model", False, False), ("0.86.1", "note/output", True, False),
        ("0.86.1", "input", False, True), ("0.86.1", "answer", False, True),
        ("0.86.1", "note/tokens", False, True), ("0.86.1", "note/output", True, False)]
