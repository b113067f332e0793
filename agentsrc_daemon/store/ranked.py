"""Ranked search over a bounded candidate set (docs/performance.md, "Ranked search at 10
million events").

Ranking every hit of a common word costs time in proportion to its hits (at 10 million
events "error" has about 110,000): FTS5's ``bm25`` counts every hit of each phrase for
its idf before the first score, and each hit's time is a lookup in the events table. So
when the index holds more than ``SEARCH_CANDIDATES`` event hits of a query (or more than
``SEARCH_TITLE_CANDIDATES`` title hits), rank order ranks only the newest of them: the
newest ``SEARCH_CANDIDATES`` event hits (by event id, the order they were recorded) that
pass the filters, and the newest ``SEARCH_TITLE_CANDIDATES`` session titles that do (by
their search_titles id). With fewer hits, every hit is ranked by ``bm25`` as before.

A capped listing is ranked by ``agentsrc_rank``, bm25's own formula with the idf of
each phrase estimated from the density of its newest hits instead of counted over all
of them (``estimate_weights``), so ranking costs what the candidates cost, whatever the
size of the store. For a query of one word or phrase the order is bm25's exactly (an
idf is then a factor common to every hit); the rank values differ by the estimate's
error. The weights (average document length, idfs) and the candidate set's bounds are
fixed by the first page and carried in the page cursor (``Cut``), so every page of a
listing ranks the same candidates with the same scores.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import apsw

# The candidates of a capped listing: event hits, and title hits (one per session at
# most). Chosen by measurement at 10 million events (docs/performance.md): an event
# candidate costs its score (4.7 us) and a lookup of its event's time (4.4 us), so 1,000
# take 9-12 ms of a 20 ms page (2,000: 22-29 ms); a title's costs more (its session's
# row: about 12 us).
SEARCH_CANDIDATES = 1000
SEARCH_TITLE_CANDIDATES = 100

# bm25's constants, as FTS5's bm25() has them.
_K1 = 1.2
_B = 0.75

_PHRASE = re.compile(r'"[^"]*"(?: \*)?')


@dataclass(frozen=True, slots=True)
class Cut:
    """The candidate set of a capped listing and how it is scored, fixed by its first
    page. Events: index rows ``event_floor..upto`` (the listing's upto); titles: index
    rows ``title_lo..title_hi`` (negative: minus the search_titles id; an empty range
    when ``title_lo > title_hi``). ``weights``: average document length, then one idf
    per phrase of the query. ``capped``: older hits exist beyond these."""

    event_floor: int
    title_lo: int
    title_hi: int
    weights: tuple[float, ...]
    capped: bool

    def to_json(self) -> list[Any]:
        return [self.event_floor, self.title_lo, self.title_hi, list(self.weights), self.capped]

    @classmethod
    def from_json(cls, value: Any) -> Cut:
        """The cursor's form back, or ValueError."""
        if not isinstance(value, list) or len(value) != 5:
            raise ValueError("bad cut")
        floor, lo, hi, weights, capped = value
        ints = (floor, lo, hi)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            raise ValueError("bad cut")
        if not isinstance(weights, list) or len(weights) < 2 or not all(
            isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights
        ):
            raise ValueError("bad cut")
        if not isinstance(capped, bool):
            raise ValueError("bad cut")
        return cls(floor, lo, hi, tuple(float(w) for w in weights), capped)


def phrases(match: str) -> list[str]:
    """The phrases of a compiled MATCH expression (store/search.py quotes every one), in
    the order FTS5 numbers them."""
    return _PHRASE.findall(match)


def _rank(api: apsw.FTS5ExtensionApi, *args: Any) -> float:
    """``agentsrc_rank(search_index, avgdl, idf...)``: bm25 of the current row with the
    given average document length and idfs, by FTS5's formula (one column, weight 1),
    negated as bm25() is (lower is better)."""
    avgdl, idf = float(args[0]), args[1:]
    norm = _K1 * (1.0 - _B + _B * api.column_size(0) / avgdl)
    if len(idf) == 1:
        tf = api.inst_count
        return -idf[0] * tf * (_K1 + 1.0) / (tf + norm) if tf else 0.0
    score = 0.0
    for i, w in enumerate(idf):
        located = api.phrase_locations(i)
        tf = len(located[0]) if located else 0
        if tf:
            score += w * tf * (_K1 + 1.0) / (tf + norm)
    return -score


def _index_stats(api: apsw.FTS5ExtensionApi, *_args: Any) -> str:
    """``agentsrc_index_stats(search_index)``: "rows tokens" of the whole index."""
    return f"{api.row_count} {api.column_total_size(0)}"


def register(conn: apsw.Connection) -> None:
    conn.register_fts5_function("agentsrc_rank", _rank)
    conn.register_fts5_function("agentsrc_index_stats", _index_stats)


def estimate_weights(
    conn: apsw.Connection, match: str, upto: int, sample: int, nth: int | None = None
) -> tuple[float, ...]:
    """(average document length, idf of each phrase). A phrase's hits are counted when
    it has at most ``sample`` event hits; otherwise estimated from its newest ``sample``
    (ids up to ``upto``): that many hits in the span of ids they cover, extrapolated to
    all ids. Each costs a walk of at most ``sample`` + 1 index rows, not of every hit.
    ``nth``: the rowid of the query's ``sample``-th newest event hit when the caller
    has it (a query of one phrase is that phrase)."""
    row = conn.execute(
        "SELECT agentsrc_index_stats(search_index) FROM search_index"
        " WHERE search_index MATCH ? LIMIT 1",
        (match,),
    ).fetchone()
    if row is None:
        return (1.0,)
    n_rows, total = (int(x) for x in str(row[0]).split())
    weights = [total / max(n_rows, 1) or 1.0]
    every = phrases(match)
    for phrase in every:
        if nth is not None and every == [match]:
            found: Any = (nth,)
        else:
            found = conn.execute(
                "SELECT rowid FROM search_index WHERE search_index MATCH ?"
                " AND rowid BETWEEN 1 AND ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (phrase, upto, sample - 1),
            ).fetchone()
        if found is None:
            (hits,) = conn.execute(
                "SELECT COUNT(*) FROM search_index WHERE search_index MATCH ?", (phrase,)
            ).fetchone() or (0,)
            n_hit = float(hits)
        else:
            n_hit = min(float(n_rows), sample * upto / max(upto - int(found[0]) + 1, 1))
        idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        weights.append(idf if idf > 0 else 1e-6)  # bm25's floor for a phrase in most rows
    return tuple(weights)
