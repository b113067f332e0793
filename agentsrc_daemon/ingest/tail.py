"""The tail-reader: reads what is new in one file since its cursor, line by line.

* Only newline-terminated lines are consumed; a trailing partial line waits for its
  newline (the offset never moves past it, so a crash cannot lose it).
* The file's identity is checked before every read (see fingerprint.py): a different
  (device, inode), a size below the offset (truncation) or a changed first bytes (a
  rewritten prefix, or a new file that reused a deleted file's inode) resets the cursor
  to 0. Re-reading does not duplicate: event keys are deterministic.
* Memory is bounded: the file is read in chunks; a line longer than ``max_line_bytes``
  is skipped (and counted) without ever being held whole, even across restarts.
* Bad lines are counted per reason and skipped: empty, malformed JSON, invalid UTF-8,
  non-object JSON. CRLF endings are accepted and counted.

This module does no parsing beyond JSON decoding and knows nothing of agents.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat as stat_mod
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from .cursor import Cursor
from .fingerprint import identity_change, refresh_head, reset_cursor

CHUNK_BYTES = 1 << 20
BIG_LINE_BYTES = 4 << 20  # lines over this are released from the buffer before parsing

# Skip reasons (keys of Cursor.skipped)
EMPTY = "empty"
MALFORMED = "malformed_json"
INVALID_UTF8 = "invalid_utf8"
NON_OBJECT = "non_object"
OVERSIZE = "oversize"
CRLF = "crlf"  # counted, not skipped


@dataclass(slots=True)
class Line:
    offset: int
    obj: dict  # type: ignore[type-arg]
    crc: int  # crc32 of the line bytes: makes offset-based keys content-aware


@dataclass(slots=True)
class ReadResult:
    reset: str | None = None  # why the cursor went back to 0 (fingerprint.REPLACED...)
    more: bool = False  # the budget ran out before EOF
    gone: bool = False
    changed: bool = False  # anything consumed or counted
    deferred: bool = False  # stopped before a line over BIG_LINE_BYTES (defer_big_lines)


def _count(cursor: Cursor, reason: str) -> None:
    cursor.skipped[reason] = cursor.skipped.get(reason, 0) + 1


def decode_line(raw: bytes | bytearray | memoryview, cursor: Cursor) -> dict | None:  # type: ignore[type-arg]
    """One line without its newline -> a dict, or None (counted in cursor.skipped)."""
    if raw[-1:] == b"\r":
        raw = raw[:-1]
        _count(cursor, CRLF)
    if not raw or (len(raw) <= 64 and not bytes(raw).strip()):
        _count(cursor, EMPTY)
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            _count(cursor, INVALID_UTF8)
        else:
            _count(cursor, MALFORMED)
        return None
    if not isinstance(obj, dict):
        _count(cursor, NON_OBJECT)
        return None
    return obj


def decode_big_line(line: bytearray, cursor: Cursor) -> dict | None:  # type: ignore[type-arg]
    """A line over BIG_LINE_BYTES. orjson would hold the bytes, its own copy of the
    strings and the result at once (three times the line); here the bytes become text,
    are freed, and the stdlib parser holds the text and the result (twice)."""
    if line[-1:] == b"\r":
        del line[-1:]
        _count(cursor, CRLF)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        _count(cursor, INVALID_UTF8)
        return None
    line.clear()
    try:
        obj = json.loads(text)
    except ValueError:
        _count(cursor, MALFORMED)
        return None
    finally:
        del text
    if not isinstance(obj, dict):
        _count(cursor, NON_OBJECT)
        return None
    return obj


def read_new_lines(
    path: str,
    cursor: Cursor,
    on_line: Callable[[Line], None],
    *,
    budget_bytes: int,
    max_line_bytes: int,
    defer_big_lines: bool = False,
) -> ReadResult:
    """Read complete lines after ``cursor.offset``, call ``on_line`` for each decoded
    object, and advance the cursor (in memory; the caller commits it with the events).
    Reads at most about ``budget_bytes`` (always finishing at least one line)."""
    result = ReadResult()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        result.gone = True
        return result
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            result.gone = True
            return result
        reason = identity_change(cursor, st, fd)
        if reason is not None:
            reset_cursor(cursor)
            result.reset = reason
            result.changed = True
        cursor.dev, cursor.ino = st.st_dev, st.st_ino
        cursor.mtime_ns = st.st_mtime_ns
        cursor.size = st.st_size
        if st.st_size == cursor.offset:
            return result
        _read_loop(
            fd, cursor, on_line, result, st.st_size, budget_bytes, max_line_bytes, defer_big_lines
        )
        refresh_head(fd, cursor)
    finally:
        os.close(fd)
    return result


def _read_loop(
    fd: int,
    cursor: Cursor,
    on_line: Callable[[Line], None],
    result: ReadResult,
    size: int,
    budget: int,
    max_line: int,
    defer_big: bool,
) -> None:
    pos = cursor.offset  # file position of buf[0]
    buf = bytearray()
    read_total = 0
    consumed_any = False
    while True:
        if read_total >= budget and consumed_any:
            result.more = pos + len(buf) < size or bool(buf)
            return
        chunk = os.pread(fd, CHUNK_BYTES, pos + len(buf))
        if not chunk:
            return  # EOF: a partial line stays in the file for later
        read_total += len(chunk)
        if cursor.skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                pos += len(chunk)
                cursor.offset = pos  # skip the rest of an over-long line
                result.changed = True
                continue
            pos += nl + 1
            cursor.offset = pos
            cursor.skipping = False
            chunk = chunk[nl + 1 :]
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            if defer_big and BIG_LINE_BYTES < nl - start <= max_line:
                # A big line that arrived whole in the buffer: deferred as well.
                pos += start
                cursor.offset = pos
                result.changed = result.changed or start > 0
                result.deferred = True
                return
            line_offset = pos + start
            raw = memoryview(buf)[start:nl]
            obj = None
            crc = 0
            if nl - start > max_line:
                _count(cursor, OVERSIZE)
            else:
                obj = decode_line(raw, cursor)
                crc = zlib.crc32(raw) if obj is not None else 0
            raw.release()
            cursor.lines += 1
            start = nl + 1
            consumed_any = True
            if start > BIG_LINE_BYTES:
                # A very long line: drop its bytes before the adapter sees the decoded
                # object, so the two are never held at once (the memory bound).
                del buf[:start]
                pos += start
                start = 0
                cursor.offset = pos
                result.changed = True
            if obj is not None:
                on_line(Line(line_offset, obj, crc))
        if start:
            del buf[:start]
            pos += start
            cursor.offset = pos
            result.changed = True
        if len(buf) > min(BIG_LINE_BYTES, max_line):
            # A long partial line. Find its end by scanning ahead without keeping what
            # is scanned; then read it once into a buffer of exactly its size (growing
            # a buffer chunk by chunk would hold up to twice the line).
            line_len = _find_line_end(fd, pos, len(buf), max_line)
            if line_len is None:
                return  # not complete yet: wait for its newline
            if line_len > max_line:
                # Over the cap: never hold it whole. Skip to its newline, even across
                # reads and restarts (cursor.skipping is persisted).
                _count(cursor, OVERSIZE)
                pos += len(buf)
                buf.clear()
                cursor.offset = pos
                cursor.skipping = True
                consumed_any = True
                result.changed = True
                continue
            if defer_big:
                # The caller wants big lines later (while another process is parsing,
                # two big working sets would add up): stop before it, offset untouched.
                result.deferred = True
                return
            line = _read_exact(fd, pos, line_len, buf)
            buf.clear()
            line_offset = pos
            pos += line_len + 1
            read_total += line_len
            cursor.offset = pos
            cursor.lines += 1
            consumed_any = True
            result.changed = True
            crc = zlib.crc32(line)
            obj = decode_big_line(line, cursor)
            del line  # released before the adapter sees the decoded object
            if obj is not None:
                on_line(Line(line_offset, obj, crc))


def _find_line_end(fd: int, start: int, known: int, max_line: int) -> int | None:
    """Length of the line starting at ``start`` (whose first ``known`` bytes hold no
    newline); ``max_line + 1`` once it is known to be longer than the cap; None at
    EOF before its newline."""
    if known > max_line:
        return max_line + 1
    at = start + known
    while True:
        chunk = os.pread(fd, CHUNK_BYTES, at)
        if not chunk:
            return None
        nl = chunk.find(b"\n")
        if nl >= 0:
            return at + nl - start
        at += len(chunk)
        if at - start > max_line:
            return max_line + 1


def _read_exact(fd: int, start: int, length: int, head: bytearray) -> bytearray:
    line = bytearray(length)
    line[: len(head)] = head
    at = len(head)
    while at < length:
        chunk = os.pread(fd, min(CHUNK_BYTES, length - at), start + at)
        if not chunk:
            raise OSError("file shrank while reading a line")
        line[at : at + len(chunk)] = chunk
        at += len(chunk)
    return line


def read_document(path: str, max_bytes: int) -> tuple[bytes | None, os.stat_result | None]:
    """A whole small file, or (None, stat) when it is larger than ``max_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, None
    try:
        st = os.fstat(fd)
        if st.st_size > max_bytes:
            return None, st
        chunks = []
        while True:
            b = os.read(fd, CHUNK_BYTES)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def hash_file(path: str) -> tuple[int, str, int] | None:
    """(size, sha256 hex, mtime_ns) of a file, streamed; None when it vanished."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            while True:
                b = fh.read(CHUNK_BYTES)
                if not b:
                    break
                h.update(b)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return None
    return st.st_size, h.hexdigest(), st.st_mtime_ns
