"""File identity: is the file at a cursor's path still the file the cursor describes?

A file is known by its (device, inode), its size never dropping below what was read,
and a hash of its first bytes (only bytes already consumed, so a line still being
written never looks like a rewrite). Any change means the cursor restarts at 0; event
keys are deterministic, so re-reading does not duplicate. Whole-file documents are
known by the hash of all their bytes instead (see ingest/round.py).
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from typing import Any

from ..cursor import Cursor

HEAD_BYTES = 4096  # how much of the file's start identifies it

# Why a cursor went back to 0 (ReadResult.reset, logged as source_reset).
REPLACED = "replaced"  # another (device, inode) at the path
TRUNCATED = "truncated"  # smaller than what was read
REWRITTEN = "rewritten"  # the first bytes differ (rewritten in place, or a reused inode)


def content_hash(data: bytes) -> bytes:
    """The 16-byte digest a file's head (or a whole document) is compared by."""
    return hashlib.blake2b(data, digest_size=16).digest()


class HeadCache:
    """The head bytes last hashed for the most recently read files, so the check before
    each read compares bytes (0.1 us for 4 KiB) instead of hashing them again (7-8 us),
    and a head that grows hashes only its new bytes. An entry serves only while the
    cursor still holds the digest it was made with (same length, same digest): the
    answer is the one the hash gives, and a cursor loaded, reset or moved on elsewhere
    (a backfill worker) finds no entry and hashes as before. Not persisted; bounded
    to ``size`` files (4 KiB and a hasher each)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._heads: OrderedDict[str, tuple[bytes, bytes, Any]] = OrderedDict()

    def get(self, cursor: Cursor) -> tuple[bytes, Any] | None:
        """(head bytes, the hasher fed with them) for the cursor's current head."""
        entry = self._heads.get(cursor.path)
        if entry is None:
            return None
        head, digest, hasher = entry
        if len(head) != cursor.head_len or digest != cursor.head_hash:
            return None
        return head, hasher

    def put(self, cursor: Cursor, head: bytes, hasher: Any) -> None:
        """Keep ``head``, whose digest (``hasher``'s) the cursor now holds."""
        heads = self._heads
        heads[cursor.path] = (head, cursor.head_hash or b"", hasher)
        heads.move_to_end(cursor.path)
        if len(heads) > self.size:
            heads.popitem(last=False)


def _hasher(data: bytes) -> Any:
    return hashlib.blake2b(data, digest_size=16)


def identity_change(
    cursor: Cursor, st: os.stat_result, fd: int, heads: HeadCache | None = None
) -> str | None:
    """Why the file open as ``fd`` is no longer the file the cursor describes."""
    if cursor.ino is not None and (st.st_dev, st.st_ino) != (cursor.dev, cursor.ino):
        return REPLACED
    if st.st_size < cursor.offset:
        return TRUNCATED
    if cursor.head_len and cursor.head_hash is not None:
        head = os.pread(fd, cursor.head_len, 0)
        if len(head) < cursor.head_len:
            return REWRITTEN
        known = heads.get(cursor) if heads is not None else None
        if known is not None and known[0] == head:
            return None  # the very bytes whose digest the cursor holds
        hasher = _hasher(head)
        if hasher.digest() != cursor.head_hash:
            return REWRITTEN
        if heads is not None:
            heads.put(cursor, head, hasher)
    return None


def reset_cursor(cursor: Cursor) -> None:
    """Back to the start of a file seen for the first time (a new generation)."""
    cursor.offset = 0
    cursor.head_len = 0
    cursor.head_hash = None
    cursor.skipping = False
    cursor.state = None
    cursor.state_json = None
    cursor.state_in_store = False
    cursor.generation += 1


def refresh_head(fd: int, cursor: Cursor, heads: HeadCache | None = None) -> None:
    """Hash the file's first bytes, but only those already consumed (complete lines),
    so a partial line still being written never looks like a rewrite."""
    want = min(HEAD_BYTES, cursor.offset)
    if want > cursor.head_len:
        head = os.pread(fd, want, 0)
        if len(head) == want:
            known = heads.get(cursor) if heads is not None else None
            if known is not None and head.startswith(known[0]):
                hasher = known[1].copy()  # the same digest, from the bytes it lacks
                hasher.update(memoryview(head)[len(known[0]):])
            else:
                hasher = _hasher(head)
            cursor.head_len = want
            cursor.head_hash = hasher.digest()
            if heads is not None:
                heads.put(cursor, head, hasher)
