"""The tail-reader: reads what is new in one file since its cursor, line by line.

* Only newline-terminated lines are consumed; a trailing partial line waits for its
  newline (the offset never moves past it, so a crash cannot lose it). For a writer
  that puts each newline before the next line instead of after its own (Cursor:
  ``final_line``), a last line without one is consumed when it decodes whole as a JSON
  object (a line cut short mid-write never does), and the blank line its successor's
  newline then starts with is not counted as an empty line.
* The file's identity is checked before every read (see fingerprint.py): a different
  (device, inode), a size below the offset (truncation) or a changed first bytes (a
  rewritten prefix, or a new file that reused a deleted file's inode) resets the cursor
  to 0. Re-reading does not duplicate: event keys are deterministic.
* A live append (what is left fits one read within every bound) is read in one piece
  and framed from that buffer (``_read_appended``); anything else goes through the
  reader's window (``_LineReader``). Both end at the size the file's stat gave.
* Memory is bounded: the file is read in chunks; a line longer than ``max_line_bytes``
  is skipped (and counted) without ever being held whole, even across restarts.
  A line over BIG_LINE_BYTES is parsed with its giant ASCII strings held once
  (bigline.py), else read once into a buffer of its size and parsed whole.
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
from dataclasses import dataclass, field

import orjson

from .. import framing
from ..cursor import Cursor
from ..system.memory import trim_heap
from . import bigline
from .fingerprint import HeadCache, identity_change, refresh_head, reset_cursor
from .open_files import NOT_REGULAR, OpenFiles, open_file

CHUNK_BYTES = 1 << 20
APPENDS_IN_ONE_READ = True  # _read_appended's shortcut (the tests turn it off to compare)
BIG_LINE_BYTES = 4 << 20  # lines over this are released from the buffer before parsing
GIANT_STRING_BYTES = bigline.GIANT_STRING_BYTES  # a big line's strings held once (bigline.py)

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
    cursor.count_skip(reason)


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


def read_new_lines(  # (no keyword-only parameters: a live append's round calls it by position)
    path: str,
    cursor: Cursor,
    on_line: Callable[[Line], None],
    budget_bytes: int,
    max_line_bytes: int,
    defer_big_lines: bool = False,
    stop: Callable[[], bool] | None = None,
    final_line: bool = False,
    heads: HeadCache | None = None,
    files: OpenFiles | None = None,
) -> ReadResult:
    """Read complete lines after ``cursor.offset``, call ``on_line`` for each decoded
    object, and advance the cursor (in memory; the caller commits it with the events).
    Reads at most about ``budget_bytes`` (always finishing at least one line), and no
    further than the file's size when it was stat'ed (bytes written since are the next
    read's); ends early, after a line, once ``stop()`` says so (an append waits: see
    daemon._work). ``heads``: the files' heads kept between reads
    (fingerprint.HeadCache); ``files``: the files kept open between reads (open_files)."""
    result = ReadResult()
    try:
        fd, st, owned = _open(path, files)
    except FileNotFoundError:
        result.gone = True
        return result
    try:
        if fd == NOT_REGULAR or not stat_mod.S_ISREG(st.st_mode):
            result.gone = True
            return result
        reason = identity_change(cursor, st, fd, heads)
        if reason is not None:
            reset_cursor(cursor)
            result.reset = reason
            result.changed = True
        cursor.dev, cursor.ino = st.st_dev, st.st_ino
        cursor.mtime_ns = st.st_mtime_ns
        cursor.size = st.st_size
        if st.st_size == cursor.offset:
            return result
        if APPENDS_IN_ONE_READ and _read_appended(
            fd, cursor, on_line, result, st.st_size, budget_bytes, max_line_bytes, stop,
            final_line,
        ):
            refresh_head(fd, cursor, heads)
            return result
        _LineReader(
            fd,
            cursor,
            on_line,
            result,
            size=st.st_size,
            budget=budget_bytes,
            max_line=max_line_bytes,
            defer_big=defer_big_lines,
            stop=stop,
            final_line=final_line,
        ).run()
        refresh_head(fd, cursor, heads)
    finally:
        if owned:
            os.close(fd)
    return result


def _open(path: str, files: OpenFiles | None) -> tuple[int, os.stat_result, bool]:
    """The file open for reading, its stat, and whether the caller closes it."""
    if files is not None:
        fd, st = files.open(path)
        return fd, st, False
    fd, st = open_file(path)
    return fd, st, True


def _read_appended(
    fd: int,
    cursor: Cursor,
    on_line: Callable[[Line], None],
    result: ReadResult,
    size: int,
    budget: int,
    max_line: int,
    stop: Callable[[], bool] | None,
    final_line: bool,
) -> bool:
    """A live append's read: what is left since the cursor fits one read within every
    bound (the budget, a chunk, the cap, BIG_LINE_BYTES), so no line can be over the cap
    or big, and its lines are taken from that one buffer without the reader's window.
    The same lines, counts, cursor and result as ``_LineReader`` (tests/test_tail.py
    compares the two on any file); False, nothing consumed, when it does not apply."""
    start = cursor.offset
    left = size - start
    if cursor.skipping or left > min(max_line, BIG_LINE_BYTES, CHUNK_BYTES, max(budget, 1)):
        return False
    data = os.pread(fd, left, start)
    if len(data) != left:
        return False  # shorter than its stat: the general reader sorts out what it is
    pos = 0
    consumed = False  # a line was taken (the budget ends a read only after one)
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        if final_line and nl == pos == 0:
            # The newline that follows a last line taken at EOF: no line of its own.
            cursor.offset = start + 1
            result.changed = True
        else:
            raw = data[pos:nl]
            obj = decode_line(raw, cursor)
            cursor.lines += 1
            consumed = True
            cursor.offset = start + nl + 1
            result.changed = True
            if obj is not None:
                on_line(Line(start + pos, obj, zlib.crc32(raw)))
        pos = nl + 1
        if stop is not None and stop():
            result.more = True
            return True
    if consumed and left >= budget:
        result.more = pos < left  # the general reader's stop at its budget
    elif final_line and pos < left:
        _take_final(data[pos:], start + pos, size, cursor, result, on_line)
    return True


def _take_final(
    raw: bytes, offset: int, end: int, cursor: Cursor, result: ReadResult,
    on_line: Callable[[Line], None],
) -> bool:
    """At EOF, the bytes ``raw`` after the last newline (from file ``offset`` to
    ``end``), when they are a whole JSON object (``final_line``): consumed as a line.
    Anything else waits, uncounted. True when taken."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False  # being written
    if not isinstance(obj, dict):
        return False
    cursor.lines += 1
    cursor.offset = end
    result.changed = True
    on_line(Line(offset, obj, zlib.crc32(raw)))
    return True


@dataclass(slots=True)
class _Window:
    """The bytes read from the file and not yet released: ``data[0]`` is at file offset
    ``base`` and ``data[:start]`` is consumed. Consumed bytes are released once per
    chunk (or at once after a very long line), not after every line."""

    base: int
    data: bytearray = field(default_factory=bytearray)
    start: int = 0

    def at(self, index: int) -> int:
        """The file offset of ``data[index]``."""
        return self.base + index

    @property
    def end(self) -> int:
        """The file offset just past what has been read."""
        return self.base + len(self.data)

    @property
    def pending(self) -> bool:
        """Read but not consumed: the start of a partial line."""
        return len(self.data) > self.start

    def consume_to(self, offset: int) -> None:
        if offset >= self.end:
            # Past everything read (a skipped or exactly read line): nothing is kept.
            self.data.clear()
            self.base, self.start = offset, 0
        else:
            self.start = offset - self.base

    def release(self) -> None:
        del self.data[: self.start]
        self.base += self.start
        self.start = 0


class _LineReader:
    """One read of one file: frames its bytes into lines (framing.py), hands each
    decoded line on, and moves the cursor over what it consumed. ``_consume_to`` is the
    one place the offset moves."""

    def __init__(
        self,
        fd: int,
        cursor: Cursor,
        on_line: Callable[[Line], None],
        result: ReadResult,
        *,
        size: int,
        budget: int,
        max_line: int,
        defer_big: bool,
        stop: Callable[[], bool] | None = None,
        final_line: bool = False,
    ) -> None:
        self.fd = fd
        self.final_line = final_line
        self.first_offset = cursor.offset
        self.stop = stop
        self.cursor = cursor
        self.on_line = on_line
        self.result = result
        self.size = size
        self.budget = budget
        self.max_line = max_line
        self.defer_big = defer_big
        self.window = _Window(cursor.offset)
        self.read_total = 0
        # The budget ends a read only once a line was consumed, so every read makes
        # progress however long the line.
        self.line_consumed = False

    def run(self) -> None:
        # A budget under a chunk reads in pieces of its size: a small round (while
        # appends wait, see ingest/priority.py) parses about that much, not a chunk.
        want = min(CHUNK_BYTES, max(self.budget, 1))
        while not (self.line_consumed and self.read_total >= self.budget):
            # No more than the stat said is left: a 1 MiB buffer cut down to a 300-byte
            # append cost 14 us (its pages unmapped), and the stat's size is the end
            # (one read and no second one to find it: what was written since is the
            # next round's, its write has woken the loop again).
            left = self.size - self.window.end
            chunk = os.pread(self.fd, min(want, left), self.window.end) if left > 0 else b""
            if not chunk:
                if self.final_line and not self.cursor.skipping:
                    self._take_final_line()
                return  # EOF: a partial line stays in the file for later
            self.read_total += len(chunk)
            self.window.data += chunk
            if self.cursor.skipping and not self._skip_rest_of_long_line():
                continue
            if not self._consume_lines():
                return
        self.result.more = self.window.pending or self.window.end < self.size

    def _consume_to(self, offset: int) -> None:
        """Everything before file ``offset`` is consumed: the cursor moves there."""
        self.window.consume_to(offset)
        self.cursor.offset = offset
        self.result.changed = True

    def _skip_rest_of_long_line(self) -> bool:
        """Discard what was read of a line over the cap, up to its newline. True once
        the line is passed (the bytes after it are framed as usual)."""
        after = framing.skip_past_newline(self.window.data, self.window.start)
        if after is None:
            self._consume_to(self.window.end)
            return False
        self.cursor.skipping = False
        self._consume_to(self.window.at(after))
        return True

    def _consume_lines(self) -> bool:
        """Consume every complete line in the window, then deal with the partial line
        left. False when this read ends here."""
        window = self.window
        # A whole line within the cap (and not one to defer) is taken without the
        # framing's result object and match: the case of nearly every line.
        take_up_to = min(self.max_line, BIG_LINE_BYTES) if self.defer_big else self.max_line
        while True:
            nl = window.data.find(framing.NEWLINE, window.start)
            if nl >= 0 and nl - window.start <= take_up_to:
                self._take_line(window.start, nl, over_cap=False)
                if self.stop is not None and self.stop():
                    self.result.more = True
                    return False
                continue
            if nl < 0 and len(window.data) - window.start <= self.max_line:
                break  # framing's NeedMore: a partial line (or nothing) is left
            framed = framing.next_line(window.data, window.start, self.max_line)
            match framed:
                case framing.Line():
                    # Whole and within the cap, yet not taken above: over BIG_LINE_BYTES
                    # while big lines are deferred. It arrived whole: deferred as well.
                    self.result.deferred = True
                    return False
                case framing.TooLong(start, int() as end):
                    self._take_line(start, end, over_cap=True)
                case framing.TooLong(_, None):
                    self._start_skipping()
                    return True
                case framing.NeedMore():
                    break
        self.window.release()
        if len(self.window.data) > BIG_LINE_BYTES:
            return self._read_big_line()
        return True

    def _take_final_line(self) -> None:
        """At EOF, the bytes after the last newline, when they are a whole JSON object
        (``final_line``): consumed as a line. Anything else waits, uncounted."""
        window = self.window
        if not window.pending or len(window.data) - window.start > min(self.max_line, BIG_LINE_BYTES):
            return
        raw = bytes(window.data[window.start :])
        end = window.end
        if _take_final(raw, window.at(window.start), end, self.cursor, self.result, self.on_line):
            self.line_consumed = True
            self.window.consume_to(end)

    def _take_line(self, start: int, end: int, *, over_cap: bool) -> None:
        """The line ``window.data[start:end]``: decoded (or counted) and consumed."""
        line_offset = self.window.base + start
        obj = None
        crc = 0
        if self.final_line and start == end and line_offset == self.first_offset:
            # The newline that follows a last line taken at EOF: no line of its own.
            self._consume_to(self.window.at(end + 1))
            return
        if over_cap:
            _count(self.cursor, OVERSIZE)
        else:
            raw = memoryview(self.window.data)[start:end]
            obj = decode_line(raw, self.cursor)
            crc = zlib.crc32(raw) if obj is not None else 0
            raw.release()  # the window cannot be resized while a view of it exists
        self.cursor.lines += 1
        self.line_consumed = True
        self._consume_to(line_offset - start + end + 1)
        if self.window.start > BIG_LINE_BYTES:
            # A very long line: drop its bytes before the adapter sees the decoded
            # object, so the two are never held at once (the memory bound).
            self.window.release()
        if obj is not None:
            self.on_line(Line(line_offset, obj, crc))

    def _start_skipping(self) -> None:
        """A line over the cap: never hold it whole. Count it, drop what was read of it
        and skip to its newline, even across reads and restarts (cursor.skipping is
        persisted)."""
        _count(self.cursor, OVERSIZE)
        self._consume_to(self.window.end)
        self.cursor.skipping = True
        self.line_consumed = True

    def _read_big_line(self) -> bool:
        """The window holds only the start of a line over BIG_LINE_BYTES, within the cap
        so far. Find its end by scanning ahead without keeping what is scanned; then
        read it once into a buffer of exactly its size (growing a buffer chunk by chunk
        would hold up to twice the line). False when this read ends here."""
        line_offset = self.window.base
        line_len = _find_line_end(self.fd, line_offset, len(self.window.data), self.max_line)
        if line_len is None:
            return False  # not complete yet: wait for its newline
        if line_len > self.max_line:
            self._start_skipping()
            return True
        if self.defer_big:
            # The caller wants big lines later (while another process is parsing, two
            # big working sets would add up): stop before it, offset untouched.
            self.result.deferred = True
            return False
        self.read_total += line_len
        self.cursor.lines += 1
        self.line_consumed = True
        self._consume_to(line_offset + line_len + 1)  # releases the window's copy
        # The window's start of the line and the chunks that found its end are freed,
        # but after a backfill glibc keeps such blocks in its heap (its mmap threshold
        # has risen to the largest block freed), resident: handed back before the line
        # is held, 9-12 MB off the daemon's peak on a 50 MB line (docs/performance.md).
        trim_heap()
        obj, crc = self._parse_big_line(line_offset, line_len)
        if obj is not None:
            self.on_line(Line(line_offset, obj, crc))
        return True

    def _parse_big_line(self, line_offset: int, line_len: int) -> tuple[dict | None, int]:  # type: ignore[type-arg]
        """The big line's object (None when counted as bad) and crc: its giant strings
        held once when bigline.py can (see there), else the line read whole."""
        parsed = bigline.parse(self.fd, line_offset, line_len, chunk=CHUNK_BYTES, giant=GIANT_STRING_BYTES)
        if parsed is None:
            line = _read_exact(self.fd, line_offset, line_len, bytearray())
            crc = zlib.crc32(line)
            obj = decode_big_line(line, self.cursor)
            del line  # released before the adapter sees the decoded object
            return obj, crc
        if parsed.crlf:
            _count(self.cursor, CRLF)
        if parsed.error is not None:
            _count(self.cursor, INVALID_UTF8 if parsed.error == bigline.INVALID_UTF8 else MALFORMED)
            return None, parsed.crc
        if not isinstance(parsed.obj, dict):
            _count(self.cursor, NON_OBJECT)
            return None, parsed.crc
        return parsed.obj, parsed.crc


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
