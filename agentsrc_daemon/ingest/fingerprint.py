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

from ..cursor import Cursor

HEAD_BYTES = 4096  # how much of the file's start identifies it

# Why a cursor went back to 0 (ReadResult.reset, logged as source_reset).
REPLACED = "replaced"  # another (device, inode) at the path
TRUNCATED = "truncated"  # smaller than what was read
REWRITTEN = "rewritten"  # the first bytes differ (rewritten in place, or a reused inode)


def content_hash(data: bytes) -> bytes:
    """The 16-byte digest a file's head (or a whole document) is compared by."""
    return hashlib.blake2b(data, digest_size=16).digest()


def identity_change(cursor: Cursor, st: os.stat_result, fd: int) -> str | None:
    """Why the file open as ``fd`` is no longer the file the cursor describes."""
    if cursor.ino is not None and (st.st_dev, st.st_ino) != (cursor.dev, cursor.ino):
        return REPLACED
    if st.st_size < cursor.offset:
        return TRUNCATED
    if cursor.head_len and cursor.head_hash is not None:
        head = os.pread(fd, cursor.head_len, 0)
        if len(head) < cursor.head_len or content_hash(head) != cursor.head_hash:
            return REWRITTEN
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


def refresh_head(fd: int, cursor: Cursor) -> None:
    """Hash the file's first bytes, but only those already consumed (complete lines),
    so a partial line still being written never looks like a rewrite."""
    want = min(HEAD_BYTES, cursor.offset)
    if want > cursor.head_len:
        head = os.pread(fd, want, 0)
        if len(head) == want:
            cursor.head_len = want
            cursor.head_hash = content_hash(head)
