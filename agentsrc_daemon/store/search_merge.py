"""The search index's merging, paced like FTS5's own and run outside the commits.

FTS5 writes each transaction's postings as a new segment and merges segments in the
commit that crosses a 64-leaf boundary ('automerge'): 64 pages per level of the index at
once, 40-50 ms of CPU inside one live commit at 10 million events. Since schema 15 its
automerge is off and the writer owes the same work instead: ``levels x leaves written``
pages for each transaction that wrote to the index (FTS5's rule), paid by
``SearchIndex.merge_step`` (store/search_index.py) in steps of ``SEARCH_MERGE_PAGES`` when the ingest loop has no
append waiting. Paced, not eager: a store can hold a large merge half done (the 10M
bench store does: tens of thousands of pages), and merging it all at the first quiet
moment would cost seconds of CPU that FTS5 itself spreads over the writes to come.

The leaves and levels come from the index's structure record (its ``%_data`` row 10),
decoded here: the format of fts5_index.c (``fts5StructureDecode``), version 2 when the
table has ``contentless_delete``."""

from __future__ import annotations

from dataclasses import dataclass

STRUCTURE_ROWID = 10  # FTS5_STRUCTURE_ROWID
STRUCTURE_V2_MARKER = b"\xff\x00\x00\x01"  # FTS5_STRUCTURE_V2


@dataclass(frozen=True, slots=True)
class Structure:
    """What the pacing needs of an FTS5 structure record."""

    levels: int
    segments: int
    leaves: int  # leaf pages across every segment (pgnoLast - pgnoFirst + 1)


class StructureError(ValueError):
    """Not a structure record this decoder knows."""


def _varint(b: bytes, i: int) -> tuple[int, int]:
    """SQLite's varint (sqlite3Fts5GetVarint): 7 bits a byte, big-endian, the ninth
    byte whole."""
    v = 0
    for k in range(9):
        if i >= len(b):
            raise StructureError("truncated varint")
        x = b[i]
        i += 1
        if k == 8:
            return (v << 8) | x, i
        v = (v << 7) | (x & 0x7F)
        if not x & 0x80:
            return v, i
    raise AssertionError("unreachable")


def decode_structure(blob: bytes) -> Structure:
    """The levels, segments and leaves of an FTS5 structure record."""
    if len(blob) < 4:
        raise StructureError("shorter than its cookie")
    i = 4  # the cookie
    v2 = blob[4:8] == STRUCTURE_V2_MARKER
    if v2:
        i += 4
    levels, i = _varint(blob, i)
    segments, i = _varint(blob, i)
    _write_counter, i = _varint(blob, i)
    leaves = 0
    seen = 0
    for _ in range(levels):
        _merging, i = _varint(blob, i)
        count, i = _varint(blob, i)
        for _ in range(count):
            _segid, i = _varint(blob, i)
            first, i = _varint(blob, i)
            last, i = _varint(blob, i)
            if v2:
                for _ in range(5):  # origin1, origin2, tombstone pages and entries, entries
                    _, i = _varint(blob, i)
            if last >= first:
                leaves += last - first + 1
        seen += count
    if seen != segments:
        raise StructureError(f"{seen} segments on the levels, {segments} in the header")
    return Structure(levels, segments, leaves)

