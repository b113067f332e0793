"""The search index's upkeep (store/search_index.py, SearchIndex) in-process on a real
store in a temporary directory: a commit's events and titles written with it (a title
that changes replaces its entry, a later revision its event's text), nothing owed for
a transaction rolled back, a deferred backfill's events left to the build and built in
resumable steps, and merge steps paid from what the writes owe. (Merging against FTS5's
own structure: tests/test_search_merge.py; ranking: tests/test_ranked_search.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.store import Batch, Store
from agentsrc_daemon.store.search_index import SearchIndex
from agentsrc_daemon.store.search_merge import STRUCTURE_ROWID

SID = "codex:s1"


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "db.sqlite")
    yield s
    s.close()


def _batch(*events: E.Event, title: str | None = None) -> Batch:
    b = Batch(events=list(events))
    if title is not None:
        b.sessions.append(E.SessionFacts(session_id=SID, agent="codex", native_id="s1",
                                         title=title))
    b.cursors["/h/a.jsonl"] = Cursor("/h/a.jsonl", "codex", "jsonl", offset=len(events))
    return b


def _prompt(key: str, text: str, revision: int = 0) -> E.Event:
    return E.Event(key=key, session_id=SID, kind=E.PROMPT, ts="2026-12-01T00:00:00.000Z",
                   adapter="codex", source_path="/h/a.jsonl", offset=0, data={"text": text},
                   revision=revision)


def _hits(store: Store, word: str) -> list[int]:
    return sorted(r for (r,) in store.conn.execute(
        "SELECT rowid FROM search_index WHERE search_index MATCH ?", (word,)))


def test_a_commit_indexes_its_events_and_its_sessions_title(store: Store) -> None:
    idx = store.search_index
    assert isinstance(idx, SearchIndex) and not idx.backlog()
    store.commit(_batch(_prompt("p1", "alpha beta"), title="first title"))
    ((eid,),) = store.conn.execute("SELECT id FROM events")
    ((tid,),) = store.conn.execute("SELECT id FROM search_titles")
    assert _hits(store, "alpha") == [eid] and _hits(store, "first") == [-tid]
    # A changed title replaces its entry; the same title again writes nothing.
    store.commit(_batch(title="second title"))
    assert _hits(store, "first") == [] and _hits(store, "second") == [-tid]
    owed = idx.merge_owed
    store.commit(_batch(title="second title"))
    assert idx.merge_owed == owed
    # A later revision of the event: its text follows.
    store.commit(_batch(_prompt("p1", "alpha gamma", revision=1)))
    assert _hits(store, "beta") == [] and _hits(store, "gamma") == [eid]


def test_a_rolled_back_transaction_owes_no_merging(store: Store) -> None:
    """What a transaction wrote is owed after it commits; one rolled back wrote nothing.
    Seen with a structure record this code cannot read, where every write owes a step."""
    idx = store.search_index
    idx.measure_every_s = 0  # read after each commit (see search_index.MEASURE_EVERY_S)
    store.commit(_batch(_prompt("p1", "one")))
    assert idx.merge_owed == 1  # one level x one leaf
    store.conn.execute(
        "UPDATE search_index_data SET block = x'00000001ff' WHERE id = ?", (STRUCTURE_ROWID,))
    assert idx.structure() is None
    with pytest.raises(ZeroDivisionError), store.conn:
        idx.index_title(SID)  # no title yet: its search_titles row, no text
        1 / 0  # noqa: B018 - the commit fails here
    idx.rolled_back()
    idx.owe_merge()
    assert idx.merge_owed == 1
    assert store.conn.execute("SELECT COUNT(*) FROM search_titles").fetchone() == (0,)
    with store.conn:  # the same write, committed
        idx.index_title(SID)
    idx.owe_merge()
    assert idx.merge_owed == 1 + idx.merge_pages and idx.merge_due


def test_a_deferred_backfill_is_built_in_resumable_steps(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    idx = store.search_index
    assert idx.defer() is True and idx.defer() is True  # already deferred: still so
    for k in range(5):
        store.commit(_batch(_prompt(f"p{k}", f"word{k} shared")))
    assert _hits(store, "shared") == [] and idx.backlog()
    (last,) = store.conn.execute("SELECT MAX(id) FROM events").fetchone()
    counters = dict(store.conn.execute("SELECT name, value FROM counters WHERE name LIKE 'search%'"))
    assert (counters["search_done"], counters["search_target"]) == (0, last)
    idx.end_deferral()
    store.commit(_batch(_prompt("live", "shared live")))  # indexed by its commit again
    assert len(_hits(store, "live")) == 1
    assert idx.build_step(chunk=2) is True  # ids 1..2
    assert len(_hits(store, "shared")) == 3
    store.close()
    # A restart resumes at the high-water mark.
    again = Store(tmp_path / "db.sqlite")
    assert again.search_index.backlog()
    steps = 0
    while again.search_index.build_step(chunk=2):
        steps += 1
    assert steps == 1 and not again.search_index.backlog()
    assert len(_hits(again, "shared")) == 6
    assert again.search_index.defer() is True  # nothing pending: a backfill may defer again
    again.close()


def test_merge_steps_pay_what_the_writes_owe(store: Store) -> None:
    idx = store.search_index
    idx.measure_every_s = 0
    assert (idx.merge_owed, idx.merge_due, idx.merges) == (0, False, 0)
    for k in range(6):
        store.commit(_batch(_prompt(f"p{k}", f"w{k} shared")))
    assert idx.merge_owed == 6 and not idx.merge_due  # one leaf a commit, one level
    assert idx.merge_step(pages=4) is True  # FTS5 merges a level of 4 or more segments
    assert (idx.merges, idx.merge_owed) == (1, 2)
    assert idx.merge_step() is False  # nothing left to merge: the debt is cleared
    assert (idx.merges, idx.merge_owed) == (1, 0)
    assert len(_hits(store, "shared")) == 6
