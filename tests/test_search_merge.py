"""The search index's merging outside the commits (store/search_merge.py): the FTS5
structure record decoded exactly, FTS5's automerge off from schema 15, the debt each
write owes by FTS5's own rule, and merge steps that pay it, on real SQLite."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.errors import DaemonNotRunning
from agentsrc_daemon.store import Batch, Store
from agentsrc_daemon.store.connection import connect
from agentsrc_daemon.store.search_index import SEARCH_MERGE_PAGES
from agentsrc_daemon.store.search_merge import (
    STRUCTURE_ROWID,
    STRUCTURE_V2_MARKER,
    Structure,
    StructureError,
    decode_structure,
)

from harness import DaemonFactory, claude_line, claude_session, wait_for


def encode_structure(levels: list[list[tuple[int, int, int]]], *, v2: bool = True,
                     cookie: int = 0, write_counter: int = 0) -> bytes:
    """A structure record of these levels, each a list of (segid, first, last) pages:
    the inverse of ``decode_structure`` (fts5_index.c's ``fts5StructureWrite``)."""
    def varint(v: int) -> bytes:
        if v > 0x00FFFFFFFFFFFFFF:
            out = [v & 0xFF]
            v >>= 8
            for _ in range(8):
                out.append((v & 0x7F) | 0x80)
                v >>= 7
            return bytes(reversed(out))
        groups = [v & 0x7F]
        v >>= 7
        while v:
            groups.append((v & 0x7F) | 0x80)
            v >>= 7
        return bytes(reversed(groups))

    out = bytearray(cookie.to_bytes(4, "big"))
    if v2:
        out += STRUCTURE_V2_MARKER
    out += varint(len(levels)) + varint(sum(map(len, levels))) + varint(write_counter)
    for level in levels:
        out += varint(0) + varint(len(level))
        for segid, first, last in level:
            out += varint(segid) + varint(first) + varint(last)
            if v2:
                out += varint(0) * 5
    return bytes(out)


_segment = st.tuples(
    st.integers(1, 2**31 - 1), st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)
)


@given(
    levels=st.lists(st.lists(_segment, max_size=20), max_size=20),
    v2=st.booleans(),
    cookie=st.integers(0, 2**32 - 1),
    write_counter=st.integers(0, 2**64 - 1),
)
def test_structure_records_decode_to_what_they_hold(
    levels: list[list[tuple[int, int, int]]], v2: bool, cookie: int, write_counter: int
) -> None:
    blob = encode_structure(levels, v2=v2, cookie=cookie, write_counter=write_counter)
    leaves = sum(last - first + 1 for level in levels for _, first, last in level if last >= first)
    assert decode_structure(blob) == Structure(len(levels), sum(map(len, levels)), leaves)


@given(st.binary(max_size=64))
def test_any_bytes_decode_or_raise_structure_error(blob: bytes) -> None:
    try:
        got = decode_structure(blob)
    except StructureError:
        return
    assert got.levels >= 0 and got.segments >= 0 and got.leaves >= 0


def test_a_truncated_record_is_refused() -> None:
    blob = encode_structure([[(1, 1, 3)], [(2, 4, 9)]])
    assert decode_structure(blob) == Structure(2, 2, 9)
    for cut in (3, 9, len(blob) - 1):
        with pytest.raises(StructureError):
            decode_structure(blob[:cut])


def _prompts(n: int, start: int, words: int = 0) -> Batch:
    b = Batch()
    for k in range(start, start + n):
        text = " ".join([f"token{k}", "shared", *(f"w{k}x{j}" for j in range(words))])
        b.events.append(E.Event(
            key=f"merge-{k}", session_id="claude-code:s1", kind=E.PROMPT,
            ts="2026-12-02T00:00:00.000Z", adapter="claude-code", source_path="/m.jsonl",
            offset=k, data={"text": text},
        ))
    b.cursors["/m.jsonl"] = Cursor("/m.jsonl", "claude-code", "jsonl", offset=start + n)
    return b


def _structure(store: Store) -> Structure:
    row = store.conn.execute(
        "SELECT block FROM search_index_data WHERE id = ?", (STRUCTURE_ROWID,)
    ).fetchone()
    return decode_structure(bytes(row[0]))


def _segments_in_idx(store: Store) -> int:
    return int(store.conn.execute(
        "SELECT count(DISTINCT segid) FROM search_index_idx"
    ).fetchone()[0])


def _hits(store: Store, term: str) -> int:
    return int(store.conn.execute(
        "SELECT count(*) FROM search_index WHERE search_index MATCH ?", (term,)
    ).fetchone()[0])


def test_commits_leave_merging_to_the_steps_and_owe_fts5s_pages(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.db")
    store.search_index.measure_every_s = 0  # the structure read after every commit
    config = dict(store.conn.execute("SELECT k, v FROM search_index_config"))
    assert config["automerge"] == 0
    assert (store.search_index.merge_owed, store.search_index.merge_step(), store.search_index.merges) == (0, False, 0)
    # Each commit writes one segment of one leaf and merges nothing: 15 segments after
    # 15 commits (FTS5's automerge would have merged every 4).
    for i in range(15):
        store.commit(_prompts(3, 3 * i))
    assert _structure(store) == Structure(1, 15, 15)
    assert _segments_in_idx(store) == 15
    assert store.search_index.merge_owed == 15  # one level x one leaf, per commit
    assert not store.search_index.merge_due
    # The 16th is FTS5's crisis merge (16 on a level), which still runs in the commit.
    store.commit(_prompts(3, 45))
    assert _structure(store).segments == 1
    for i in range(16, 40):
        store.commit(_prompts(3, 3 * i))
    # The 32nd commit was another crisis: level 1 holds two segments, level 0 eight.
    s = _structure(store)
    assert (s.levels, s.segments) == (2, 10)
    # Two levels from the 17th commit on; the crises wrote no new leaves, they merged.
    assert store.search_index.merge_owed == 15 + 2 * 15 + 2 * 8
    assert not store.search_index.merge_due
    store.commit(_prompts(3, 120))
    store.commit(_prompts(3, 123))
    assert store.search_index.merge_owed == 65
    assert store.search_index.merge_due
    # One step pays a step's pages: level 0's ten segments merged, and with them the two
    # small ones of level 1 (FTS5 promotes a merge's output beside segments no larger).
    assert store.search_index.merge_step() is True
    assert (store.search_index.merges, store.search_index.merge_owed) == (1, 65 - SEARCH_MERGE_PAGES)
    assert _structure(store) == Structure(2, 1, 1)
    assert _segments_in_idx(store) == 1
    # No level holds 4 segments: a step finds nothing, writes nothing, clears the debt.
    frames = store.wal_pages
    assert store.search_index.merge_step() is False
    assert (store.search_index.merges, store.search_index.merge_owed, store.wal_pages) == (1, 0, frames)
    # Merged or not, the index answers the same.
    assert _hits(store, "shared") == 126
    assert _hits(store, "token77") == 1


def _fifteen_segments(db: Path) -> Store:
    store = Store(db)
    for i in range(15):
        store.commit(_prompts(200, 200 * i, words=8))  # segments of several leaves each
    assert _structure(store) == Structure(1, 15, 60)
    return store


def test_a_step_does_a_bounded_part_of_a_merge(tmp_path: Path) -> None:
    small = _fifteen_segments(tmp_path / "b.db")
    assert small.search_index.merge_step(pages=1) is True
    # One page of work starts the merge of level 0 and leaves it half done: the inputs
    # are still there (trimmed) beside the output's first leaves.
    assert _structure(small).segments == 16
    steps = 1
    while small.search_index.merge_step(pages=1):
        steps += 1
    assert steps >= 20
    assert _structure(small).segments == 1
    assert _hits(small, "shared") == 3000
    # A step of the daemon's size does the same merge at once.
    whole = _fifteen_segments(tmp_path / "b2.db")
    assert whole.search_index.merge_step() is True
    assert _structure(whole).segments == 1
    assert whole.search_index.merge_step() is False
    assert _hits(whole, "w2999x7") == _hits(small, "w2999x7") == 1


def test_an_unknown_structure_owes_a_step_per_write(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.db")
    store.search_index.measure_every_s = 0
    store.commit(_prompts(3, 0))
    assert store.search_index.merge_owed == 1  # one level x one leaf
    store.conn.execute(
        "UPDATE search_index_data SET block = x'00000001ff' WHERE id = ?", (STRUCTURE_ROWID,)
    )
    assert store.search_index.structure() is None
    # A write (FTS5 itself could not write over that record: the owing alone is shown).
    store.search_index._written = True
    store.search_index.owe_merge()
    assert store.search_index.merge_owed == 1 + SEARCH_MERGE_PAGES
    assert store.search_index.merge_due


def test_the_daemon_merges_the_index_between_live_appends(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    """The real daemon, live: each append its own commit (the next waits for the last
    to reach a subscriber). With automerge off and no merge steps, 26 appends leave 13
    segments (FTS5's crisis merge at 16 merged the first 16); the loop's steps keep them
    to a few, and the index answers the same."""
    home = tmp_path / "home"
    session = claude_session(home)
    session.write_bytes(claude_line("u-0", text="mergetoken0 first"))
    d = daemon_factory(home, AGENTSRC_SEARCH_MERGE_PAGES="1").start()
    d.wait_live()
    seen: list[str] = []
    arrived = threading.Event()
    subscribed = threading.Event()

    def listen() -> None:
        with d.client() as c, contextlib.suppress(DaemonNotRunning):  # the test's end
            for msg in c.subscribe({"kinds": ["prompt"]}):
                if msg["method"] == "subscribed":
                    subscribed.set()
                elif msg["method"] == "event":
                    seen.append(msg["params"]["text"])
                    arrived.set()

    threading.Thread(target=listen, daemon=True).start()
    assert subscribed.wait(30)
    for i in range(1, 27):
        arrived.clear()
        with session.open("ab") as f:
            f.write(claude_line(f"u-{i}", text=f"mergetoken{i} shared"))
        assert arrived.wait(30), i
    assert seen == [f"mergetoken{i} shared" for i in range(1, 27)]

    db = d.data_dir / "agentsrc.db"

    def structure() -> Structure:
        conn = connect(db, readonly=True)
        try:
            row = conn.execute(
                "SELECT block FROM search_index_data WHERE id = ?", (STRUCTURE_ROWID,)
            ).fetchone()
            return decode_structure(bytes(row[0]))
        finally:
            conn.close()

    merged = wait_for(lambda: (s := structure()).segments <= 4 and s, timeout=30)
    assert merged.segments <= 4
    hits = d.call("search.query", {"q": "shared", "order": "recent", "limit": 100})["hits"]
    assert len(hits) == 26
    one = d.call("search.query", {"q": "mergetoken17"})["hits"]
    assert [(h["kind"], h["snippet"]) for h in one] == [("prompt", "mergetoken17 shared")]


def test_commits_in_a_stream_are_measured_together_and_owe_the_same(tmp_path: Path) -> None:
    """Commits closer together than MEASURE_EVERY_S read the structure record once for
    all of them (a live burst pays for it once): what they owe is what they owe read one
    by one, counted when the loop next asks (``measure``) or a step merges."""
    each, together = Store(tmp_path / "each.db"), Store(tmp_path / "together.db")
    each.search_index.measure_every_s = 0
    together.search_index.measure_every_s = 3600
    reads: list[str] = []
    together.conn.exec_trace = lambda _c, sql, _b: (
        reads.append(sql) if "search_index_data WHERE id" in sql else None) or True
    for i in range(10):
        each.commit(_prompts(3, 3 * i))
        together.commit(_prompts(3, 3 * i))
    assert (each.search_index.merge_owed, together.search_index.merge_owed) == (10, 0)
    assert reads == []
    together.search_index.measure()
    assert together.search_index.merge_owed == 10 and len(reads) == 1
    together.conn.exec_trace = None
    for store in (each, together):
        store.commit(_prompts(3, 30))
    assert together.search_index.merge_step(pages=1) is True  # measured first: 11 owed
    assert together.search_index.merge_owed == 11 - 1 == each.search_index.merge_owed - 1
