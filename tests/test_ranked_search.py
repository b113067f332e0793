"""Rank order over a bounded candidate set (store/ranked.py): beyond the caps, the
newest hits that pass the filters are ranked (events by id, titles by their id), by
bm25's formula with estimated idfs fixed by the first page; pages of a capped listing
neither repeat nor skip while events are added; sessions.list's search the same. The
caps are made small on the Reader (its own attributes) so a test store exceeds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.errors import RpcError
from agentsrc_daemon.rpc.methods import _decode_cursor, _encode_cursor, search_query, sessions_list
from agentsrc_daemon.store import Batch, Reader, Store
from agentsrc_daemon.store.ranked import SEARCH_CANDIDATES, Cut, phrases
from agentsrc_daemon.store.search import compile_query

NOW = "2026-03-01T00:00:00.000Z"
_n = 0


def ev(kind: str, text: str, session: str = "codex:s1", ts: str = "2026-02-01T00:00:00.000Z") -> E.Event:
    global _n
    _n += 1
    data: dict[str, Any] = {"command": text} if kind == "command" else {"text": text}
    return E.Event(key=f"k{_n}", session_id=session, kind=kind, ts=ts, adapter="codex",
                   source_path="/x/a.jsonl", offset=_n, data=data)


def commit(store: Store, *events: E.Event, facts: list[E.SessionFacts] | None = None) -> None:
    b = Batch(events=list(events), sessions=facts or [])
    b.cursors["/x/a.jsonl"] = Cursor("/x/a.jsonl", "codex", "jsonl", offset=_n)
    store.commit(b)


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = Store(tmp_path / "db")
    yield s
    s.close()


def reader(path: Path, events: int, titles: int = 2) -> Reader:
    r = Reader(path / "db")
    r.search_candidates, r.search_title_candidates = events, titles
    return r


def listing(r: Reader, q: str, limit: int = 1000, **kw: Any) -> dict[str, Any]:
    return r.search(q, now=NOW, limit=limit, **kw)


def ranked(r: Reader, q: str, **kw: Any) -> list[tuple[int | None, float]]:
    return [(h["event_id"], h["rank"]) for h in listing(r, q, **kw)["hits"]]


def _twelve(store: Store) -> None:
    """Event ids 1..12: 'needle' once, twice or three times in texts of other lengths,
    on days 1..12 of February; one other word."""
    commit(store, *[ev("prompt" if i % 3 else "command",
                       " ".join(["needle"] * (1 + i % 3) + ["hay"] * (i % 5)),
                       ts=f"2026-02-{i + 1:02d}T00:00:00.000Z") for i in range(12)],
           ev("prompt", "unrelated"))


def test_the_real_caps() -> None:
    assert SEARCH_CANDIDATES == 1000 and Reader.search_candidates == SEARCH_CANDIDATES
    assert Reader.search_title_candidates == 100


def test_few_hits_are_all_ranked_by_bm25(store: Store, tmp_path: Path) -> None:
    _twelve(store)
    every = listing(reader(tmp_path, 1000), "needle")
    assert (every["ranked_over"], every["capped"], every["cut"]) == (12, False, None)
    assert sorted(h["event_id"] for h in every["hits"]) == list(range(1, 13))
    # At the cap exactly: still every hit, by bm25.
    assert ranked(reader(tmp_path, 12), "needle") == [(h["event_id"], h["rank"]) for h in every["hits"]]


def test_the_cap_ranks_the_newest_hits_in_bm25_order(store: Store, tmp_path: Path) -> None:
    _twelve(store)
    exact = ranked(reader(tmp_path, 1000), "needle")
    capped = listing(reader(tmp_path, 5), "needle")
    assert (capped["ranked_over"], capped["capped"]) == (5, True)
    got = [(h["event_id"], h["rank"]) for h in capped["hits"]]
    # The newest five (ids 8..12), in the order bm25 ranks them among all (one word: the
    # idf is a factor common to every hit, so the order is bm25's exactly).
    assert [i for i, _ in got] == [i for i, _ in exact if i is not None and i >= 8]
    assert sorted(i for i, _ in got) == [8, 9, 10, 11, 12]
    # The rank values are bm25's times the estimated idf over the counted one.
    ratios = {round(g / e, 9) for (_, g), (i, e) in zip(got, [x for x in exact if x[0] >= 8], strict=True)}
    assert len({round(r, 4) for r in ratios}) == 1
    cut = capped["cut"]
    assert isinstance(cut, Cut) and (cut.event_floor, cut.title_lo, cut.title_hi, cut.capped) == (8, 0, -1, True)
    assert len(cut.weights) == 2  # the average document length, one idf


def test_filters_apply_before_the_cap(store: Store, tmp_path: Path) -> None:
    _twelve(store)
    commands = [i for i in range(1, 13) if (i - 1) % 3 == 0]  # 1, 4, 7, 10
    got = listing(reader(tmp_path, 3), "needle", kinds=["command"])
    assert (got["ranked_over"], got["capped"]) == (3, True)
    assert sorted(h["event_id"] for h in got["hits"]) == commands[-3:]
    since = listing(reader(tmp_path, 5), "needle", since_ts="2026-02-10T00:00:00.000Z")
    assert (since["ranked_over"], since["capped"]) == (3, False)  # ids 10..12 only
    assert sorted(h["event_id"] for h in since["hits"]) == [10, 11, 12]


def test_two_words_rank_by_estimated_idfs(store: Store, tmp_path: Path) -> None:
    _twelve(store)
    q = "needle OR hay"
    assert phrases(compile_query(q)) == ['"needle"', '"hay"']
    got = listing(reader(tmp_path, 4), q)
    assert (got["ranked_over"], got["capped"]) == (4, True)
    assert sorted(h["event_id"] for h in got["hits"]) == [9, 10, 11, 12]
    assert len(got["cut"].weights) == 3


def test_pages_of_a_capped_listing_neither_repeat_nor_skip_while_events_are_added(
    store: Store, tmp_path: Path
) -> None:
    commit(store, *[ev("prompt", "needle " + "x " * (i % 7), ts=f"2026-01-{1 + i % 28:02d}T00:00:00.000Z")
                    for i in range(40)])
    r = reader(tmp_path, 25, titles=1)
    first_set = {h["event_id"] for h in listing(r, "needle")["hits"]}
    assert first_set == set(range(16, 41))
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"q": "needle", "limit": 4}
        if cursor:
            params["cursor"] = cursor
        page = search_query(r, params)
        assert (page["ranked_over"], page["capped"]) == (25, True)
        seen.extend(h["event_id"] for h in page["hits"])
        pages += 1
        if pages == 1:
            token = _decode_cursor(page["next_cursor"])
        # New hits, newer and longer than any: they would move the cap and the idf.
        commit(store, *[ev("prompt", "needle needle new") for _ in range(30)])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert pages == 7
    # The first page's order, every candidate once: the whole listing in one page, by the
    # first page's cut, upto and now.
    whole = r.search("needle", limit=1000, upto=token["u"], now=token["n"], cut=Cut.from_json(token["k"]))
    assert seen == [h["event_id"] for h in whole["hits"]]
    assert sorted(seen) == sorted(first_set)


def test_titles_have_their_own_cap(store: Store, tmp_path: Path) -> None:
    for i in range(5):
        commit(store, ev("prompt", "needle", session=f"codex:t{i}"),
               facts=[E.SessionFacts(f"codex:t{i}", "codex", f"t{i}", title=f"needle title {i}")])
    got = listing(reader(tmp_path, 1000, titles=2), "needle")
    titles = [h["session_id"] for h in got["hits"] if h["kind"] == "title"]
    # The newest two titles (search_titles ids 4 and 5: index rows -4, -5).
    assert sorted(titles) == ["codex:t3", "codex:t4"]
    assert (got["ranked_over"], got["capped"]) == (7, True)
    assert (got["cut"].title_lo, got["cut"].title_hi, got["cut"].event_floor) == (-5, -4, 1)
    only = listing(reader(tmp_path, 1000, titles=2), "needle", kinds=["title"])
    assert sorted(h["session_id"] for h in only["hits"]) == ["codex:t3", "codex:t4"]


def test_a_cursor_cut_is_checked(store: Store, tmp_path: Path) -> None:
    _twelve(store)
    r = reader(tmp_path, 5)
    page = search_query(r, {"q": "needle", "limit": 2})
    token = _decode_cursor(page["next_cursor"])
    assert token["k"][:3] == [8, 0, -1]
    token["k"] = [8, 0, -1, "x", True]
    with pytest.raises(RpcError, match="cursor"):
        search_query(r, {"q": "needle", "limit": 2, "cursor": _encode_cursor(token)})


def test_sessions_search_lists_the_sessions_of_the_newest_hits(store: Store, tmp_path: Path) -> None:
    for i in range(6):
        commit(store, ev("prompt", "zebra", session=f"codex:z{i}", ts=f"2026-02-0{i + 1}T00:00:00.000Z"),
               ev("prompt", "yak", session=f"codex:z{i}", ts=f"2026-02-0{i + 1}T00:00:00.000Z"))
    r = reader(tmp_path, 1000)

    def listed(r: Reader, **p: Any) -> tuple[list[str], Any, Any]:
        page = sessions_list(r, {"limit": 100, **p})
        return [s["id"] for s in page["sessions"]], page["searched_over"], page["capped"]

    assert listed(r, search="zebra") == ([f"codex:z{i}" for i in range(5, -1, -1)], 6, False)
    small = reader(tmp_path, 4)
    assert listed(small, search="zebra") == (["codex:z5", "codex:z4", "codex:z3", "codex:z2"], 4, True)
    assert listed(small, search="zebra", sort="tools")[2] is True
    assert "searched_over" not in sessions_list(small, {})
    # Pages of a capped listing: the first page's candidates, while new hits come in.
    seen: list[str] = []
    cursor = None
    while True:
        page = sessions_list(small, {"search": "zebra", "limit": 1, **({"cursor": cursor} if cursor else {})})
        assert (page["searched_over"], page["capped"]) == (4, True)
        seen.extend(s["id"] for s in page["sessions"])
        commit(store, ev("prompt", "zebra", session="codex:late", ts="2026-02-09T00:00:00.000Z"))
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == ["codex:z5", "codex:z4", "codex:z3", "codex:z2"]


def test_recent_order_tells_the_rank_a_ranked_listing_gives(store: Store, tmp_path: Path) -> None:
    """Newest first needs no score, but each hit tells one: bm25's under the cap, the
    capped listing's estimate beyond it (bm25()'s idf pass counts every hit), the same
    value the rank order gives that hit either way."""
    _twelve(store)
    # Other documents, so that needle's idf is not clamped (under half the rows).
    commit(store, *[ev("prompt", f"other words {i}") for i in range(40)])
    for cap in (1000, 5):
        r = reader(tmp_path, cap)
        recent = listing(r, "needle", order="recent")
        assert [h["event_id"] for h in recent["hits"]] == list(range(12, 0, -1))
        assert (recent["ranked_over"], recent["capped"]) == (None, False)
        by_rank = dict(ranked(r, "needle"))
        assert len(by_rank) == (12 if cap == 1000 else 5)
        shared = {h["event_id"]: h["rank"] for h in recent["hits"] if h["event_id"] in by_rank}
        assert shared == by_rank
        if cap == 5:
            # The estimate, not bm25: the values of the two scorings differ.
            exact = dict(ranked(reader(tmp_path, 1000), "needle"))
            assert all(shared[i] != exact[i] for i in shared)
