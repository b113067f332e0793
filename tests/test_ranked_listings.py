"""A ranked listing's later pages read the candidates its first page scored
(store/listings.py): no scoring statement runs for them, they are the pages scoring
again gives, and the set of listings kept is bounded, least recently used out first."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.rpc.methods import search_query
from agentsrc_daemon.store import Batch, Reader, Store
from agentsrc_daemon.store.listings import RankedListing, RankedListings

_n = 0


def ev(text: str, ts: str) -> E.Event:
    global _n
    _n += 1
    return E.Event(key=f"k{_n}", session_id="codex:s1", kind="prompt", ts=ts, adapter="codex",
                   source_path="/x/a.jsonl", offset=_n, data={"text": text})


@pytest.fixture()
def db(tmp_path: Path) -> Iterator[Path]:
    """30 prompts with 'needle' one to three times among other words, on days 1..30."""
    store = Store(tmp_path / "db")
    events = [ev(" ".join(["needle"] * (1 + i % 3) + ["hay"] * (i % 7)),
                 f"2026-01-{i + 1:02d}T00:00:00.000Z") for i in range(30)]
    b = Batch(events=events)
    b.cursors["/x/a.jsonl"] = Cursor("/x/a.jsonl", "codex", "jsonl", offset=_n)
    store.commit(b)
    store.close()
    yield tmp_path / "db"


@pytest.fixture()
def fresh_listings(monkeypatch: pytest.MonkeyPatch) -> RankedListings:
    """A set of listings of this test's own, so no other test's listing is met."""
    listings = RankedListings()
    monkeypatch.setattr(Reader, "ranked_listings", listings)
    return listings


def reader(db: Path, candidates: int) -> Reader:
    r = Reader(db)
    r.search_candidates = candidates
    return r


def scoring_statements(r: Reader) -> list[str]:
    """The statements of ``r`` that score hits, as they run."""
    seen: list[str] = []

    def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
        if "bm25(" in sql or "agentsrc_rank(" in sql:
            seen.append(sql)
        return True

    r.conn.exec_trace = trace
    return seen


def pages(r: Reader, q: str, limit: int) -> list[list[tuple[int, float]]]:
    out, cursor = [], None
    while True:
        page = search_query(r, {"q": q, "limit": limit, **({"cursor": cursor} if cursor else {})})
        out.append([(h["event_id"], h["rank"]) for h in page["hits"]])
        cursor = page["next_cursor"]
        if cursor is None:
            return out


@pytest.mark.parametrize("candidates", [10, 1000])  # a capped listing, one ranking every hit
def test_later_pages_score_nothing_and_are_the_pages_scoring_again_gives(
    db: Path, fresh_listings: RankedListings, candidates: int
) -> None:
    r = reader(db, candidates)
    scored = scoring_statements(r)
    first = search_query(r, {"q": "needle", "limit": 4})
    assert first["capped"] is (candidates == 10)
    assert first["ranked_over"] == min(30, candidates)
    at_first = len(scored)
    assert at_first >= 1 and len(fresh_listings) == 1
    second = search_query(r, {"q": "needle", "limit": 4, "cursor": first["next_cursor"]})
    assert len(scored) == at_first  # read from the listing: nothing scored
    assert second["ranked_over"] == first["ranked_over"]
    cached = pages(r, "needle", 4)
    # The same pages, every one scored again: a Reader whose listings hold nothing.
    fresh_listings.capacity = 0
    fresh_listings.put(("evict",), RankedListing.of([], 0))
    again = reader(db, candidates)
    again_scored = scoring_statements(again)
    scored_again = pages(again, "needle", 4)
    assert cached == scored_again
    assert len(again_scored) >= len(scored_again)  # each page scored its candidates
    hits = [h for page in cached for h in page]
    assert len(hits) == min(30, candidates) and len({i for i, _ in hits}) == len(hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_another_listing_is_another_key(db: Path, fresh_listings: RankedListings) -> None:
    r = reader(db, 10)
    search_query(r, {"q": "needle", "limit": 4})
    search_query(r, {"q": "needle", "limit": 4, "kinds": ["prompt"]})
    search_query(r, {"q": "hay", "limit": 4})
    # And another cap is another listing (a Reader's caps can be set apart).
    search_query(reader(db, 5), {"q": "needle", "limit": 4})
    assert len(fresh_listings) == 4


def test_the_listings_are_bounded_newest_kept() -> None:
    listings = RankedListings(capacity=3)
    for i in range(5):
        listings.put(i, RankedListing.of([(i, 1.0)], 1))
    assert len(listings) == 3 and listings.get(0) is None and listings.get(1) is None
    assert listings.get(2) is not None  # used: now the newest
    listings.put(5, RankedListing.of([], 0))
    assert listings.get(3) is None and listings.get(2) is not None
    assert listings.get(4) is not None and listings.get(5) is not None


def test_a_candidate_costs_sixteen_bytes() -> None:
    listing = RankedListing.of([(i, float(i)) for i in range(1000)], 1000)
    assert isinstance(listing.rowids, array) and listing.rowids.itemsize == 8
    assert isinstance(listing.scores, array) and listing.scores.itemsize == 8


# Best first with ties: score descending, then rowid ascending, as the pages follow.
candidates_st = st.lists(
    st.tuples(st.integers(-50, 50), st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.25])),
    unique_by=lambda c: c[0], max_size=40,
).map(lambda cs: sorted(cs, key=lambda c: (-c[1], c[0])))


@given(candidates_st, st.integers(1, 12), st.data())
def test_a_page_is_the_candidates_after_the_last_hit(
    candidates: list[tuple[int, float]], limit: int, data: st.DataObject
) -> None:
    listing = RankedListing.of(candidates, len(candidates))
    after = data.draw(st.none() | st.sampled_from(candidates) if candidates else st.none())
    # The filter every page ran over the sorted candidates before the listing was kept.
    want = candidates if after is None else [
        c for c in candidates if c[1] < after[1] or (c[1] == after[1] and c[0] > after[0])]
    got = listing.page(None if after is None else (after[1], after[0]), limit)
    assert got == want[:limit]
