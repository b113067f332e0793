"""The scored candidates of recent ranked search listings, kept so that a listing's later
pages read them instead of scoring them again.

A ranked listing is fixed by its first page: the index rows it ranks (up to ``upto``,
within a capped listing's ``Cut``), its filters, and the moment recency is measured
from (``now``), all carried in the page cursor. So every page of a listing scores the
same candidates to the same values, and a later page only needs the first page's sorted
candidates to find its own. Scoring them again costs what the candidates cost (about 12
ms for 1,000 at 10 million events, docs/performance.md "Ranked search at 10 million events");
reading them from here costs a binary search.

Bounded: the newest ``LISTINGS`` listings, each at most the candidates of a capped
listing (or every hit of an uncapped one, which has at most as many), held as two flat
arrays (16 bytes a candidate). A listing no longer here is scored again, to the same
values: this is a cache, never the only copy of anything.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

# Listings kept. A user pages through one or two listings at a time; each connection's
# Reader shares this process-wide set, so a few agents paging at once still hit it.
LISTINGS = 16


@dataclass(frozen=True, slots=True)
class RankedListing:
    """A listing's candidates best first (score descending, then index rowid ascending,
    the order the pages follow), and how many candidates were ranked."""

    rowids: array  # array('q')
    scores: array  # array('d')
    ranked_over: int

    @classmethod
    def of(cls, candidates: list[tuple[int, float]], ranked_over: int) -> RankedListing:
        """From candidates already sorted best first."""
        return cls(
            array("q", [rid for rid, _ in candidates]),
            array("d", [score for _, score in candidates]),
            ranked_over,
        )

    def page(self, after: tuple[float, int] | None, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` candidates after the hit ``after`` (its score and rowid), or the
        first ones."""
        start = 0
        if after is not None:
            score, rowid = after
            rowids, scores = self.rowids, self.scores
            start = bisect_right(
                range(len(rowids)), (-score, rowid), key=lambda j: (-scores[j], rowids[j]))
        end = min(start + limit, len(self.rowids))
        return [(self.rowids[j], self.scores[j]) for j in range(start, end)]


class RankedListings:
    """The newest listings by key (what fixes a listing: the store, the query, its
    filters, upto, now and the cut), least recently used out first. Thread-safe: each
    socket connection's thread reads through its own Reader."""

    def __init__(self, capacity: int = LISTINGS) -> None:
        self.capacity = capacity
        self._listings: OrderedDict[Hashable, RankedListing] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> RankedListing | None:
        with self._lock:
            listing = self._listings.get(key)
            if listing is not None:
                self._listings.move_to_end(key)
            return listing

    def put(self, key: Hashable, listing: RankedListing) -> None:
        with self._lock:
            self._listings[key] = listing
            self._listings.move_to_end(key)
            while len(self._listings) > self.capacity:
                self._listings.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._listings)
