"""The ``text`` mode's reading: complete lines of a text file that grows (Aider's
Markdown chat history) and of its companions (its input and LLM histories), from the
offsets its round keeps, decoded, for the adapter's ``parse_text_stream``.

Unlike the JSONL tail-reader, it hands over every complete line of the read at once and
moves nothing itself: the adapter says how far its records are final
(``TextRead.offset``), and where the next read starts when the last record was emitted
before its end was seen (``TextRead.reopen``). The round keeps both, and each
companion's position, in the source's state, committed with the records.

* Only complete lines (newline-terminated) are read; a read takes about ``budget``
  bytes and at least one line, and says whether it reached the end of the file.
* A line over ``max_line`` bytes is never held: it is handed over empty (counted as
  ``oversize`` in the source's skips).
* Invalid UTF-8 is replaced (Aider writes with ``errors="ignore"``): never a crash.
* A companion is known by its (device, inode); replaced, or shorter than its position,
  it is read again from its start (its records' keys are their offsets and first line:
  nothing is counted twice).
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from dataclasses import dataclass, field
from typing import Any

from ..adapters import Adapter, ReadsTextStream
from ..adapters.common import TextLines
from ..cursor import Cursor
from ..events import Record
from . import fingerprint, sources
from .tail import CHUNK_BYTES, OVERSIZE

# A text source's state: {ADAPTER_STATE: <the adapter's>, TEXT_KEY: {"reopen": int | None,
# "companions": {name: [dev, ino, offset]}}}: where its next read starts.
ADAPTER_STATE = "adapter"
TEXT_KEY = "text"
# The last record is emitted once the file has been this long unchanged (Aider writes a
# record in one write: a quiet file holds no half record).
QUIET_S = 1.0
# A companion is read up to this far past its position in one round (its records are
# large: an LLM request holds the whole context), the source up to the round's budget.
COMPANION_BUDGET = 16 << 20


@dataclass(slots=True)
class TextRound:
    records: list[Record] = field(default_factory=list)
    bytes: int = 0
    more: bool = False  # the budget cut the read short
    retry_after: float | None = None  # a record still open: read again after this long
    reset: str | None = None  # why the cursor went back to 0
    read: list[dict[str, Any]] = field(default_factory=list)  # TextRead.read (fidelity)


def read_source(
    spec: sources.SourceSpec, cursor: Cursor, adapter: Adapter, reader: ReadsTextStream,
    budget: int, max_line: int, now: float | None = None,
) -> TextRound | None:
    """One round of a text source: its lines from where the adapter said to start, its
    companions' from their positions, the adapter's records; the cursor moved to what it
    reached (in memory: the caller commits it with the records). None when it is gone."""
    try:
        fd = os.open(spec.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return None
        out = TextRound()
        out.reset = fingerprint.identity_change(cursor, st, fd)
        if out.reset is not None:
            fingerprint.reset_cursor(cursor)
        _read(spec, cursor, fd, st, adapter, reader, budget, max_line, out,
              time.time() if now is None else now)
        cursor.dev, cursor.ino, cursor.size, cursor.mtime_ns = (
            st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        fingerprint.refresh_head(fd, cursor)
        return out
    finally:
        os.close(fd)


# Over 60 lines: where to start, the companions, the quiet rule and the positions to
# keep are one decision over the same values.
def _read(
    spec: sources.SourceSpec, cursor: Cursor, fd: int, st: os.stat_result, adapter: Adapter,
    reader: ReadsTextStream, budget: int, max_line: int, out: TextRound, now: float,
) -> None:
    held = cursor.state if isinstance(cursor.state, dict) else {}
    adapter_state = held.get(ADAPTER_STATE)
    if not isinstance(adapter_state, dict):
        adapter_state = adapter.initial_state(spec.path)
    where = held.get(TEXT_KEY)
    where = where if isinstance(where, dict) else {}
    reopen = where.get("reopen")
    start = reopen if isinstance(reopen, int) and 0 <= reopen < cursor.offset else cursor.offset
    read = read_lines(fd, start, st.st_size, budget, max_line)
    if read.oversize:
        cursor.count_skip(OVERSIZE, read.oversize)
    held_companions = where.get("companions")
    held_companions = held_companions if isinstance(held_companions, dict) else {}
    companions: dict[str, TextLines] = {}
    positions: dict[str, list[int]] = {}
    for name, path in sources.companions_of(spec).items():
        lines, identity = read_companion(path, held_companions.get(name),
                                         max(budget, COMPANION_BUDGET), max_line)
        if lines is not None and identity is not None:
            companions[name], positions[name] = lines, identity
    quiet_for = now - st.st_mtime
    final = read.lines.eof and quiet_for >= QUIET_S
    result = reader.parse_text_stream(read.lines, companions, spec.path, adapter_state, final=final)
    out.records, out.read = result.records, result.read
    cursor.lines += len(read.lines.lines)
    out.bytes = max(0, result.offset - cursor.offset)
    cursor.offset = max(result.offset, start)
    for name, offset in result.companions.items():
        if name in positions:
            positions[name][2] = offset
    cursor.state = {
        ADAPTER_STATE: adapter_state,
        TEXT_KEY: {"reopen": result.reopen, "companions": positions},
    }
    out.more = not read.lines.eof
    if read.lines.eof and not final and result.offset < read.lines.end:
        # A record still open: read again once the file has been quiet.
        out.retry_after = max(0.05, QUIET_S - quiet_for)


@dataclass(slots=True)
class Read:
    lines: TextLines
    oversize: int  # lines over max_line, handed over empty


def read_lines(fd: int, start: int, size: int, budget: int, max_line: int) -> Read:
    """The complete lines from ``start`` (a line's start) of the open file, about
    ``budget`` bytes of them (at least one line); ``eof`` when no complete line is left
    after them in the file's first ``size`` bytes."""
    lines: list[tuple[int, str]] = []
    oversize = 0
    at = start  # where the next line starts
    buf = b""  # bytes from ``at`` on, read but not framed
    while not (lines and at - start >= budget):
        chunk = os.pread(fd, CHUNK_BYTES, at + len(buf))
        if not chunk:
            break
        buf += chunk
        pos = 0
        while (nl := buf.find(b"\n", pos)) >= 0:
            raw = buf[pos:nl]
            if len(raw) > max_line:
                lines.append((at + pos, ""))
                oversize += 1
            else:
                lines.append((at + pos, raw.decode("utf-8", "replace").removesuffix("\r")))
            pos = nl + 1
        at += pos
        buf = buf[pos:]
        if len(buf) > max_line:
            # A line over the cap, its newline not read yet: skipped, never held.
            end = _skip_line(fd, at + len(buf))
            if end is None:
                break
            lines.append((at, ""))
            oversize += 1
            at, buf = end, b""
    return Read(TextLines(lines, start, at, not _has_newline(fd, at, size)), oversize)


def _has_newline(fd: int, at: int, size: int) -> bool:
    """Whether a complete line follows ``at`` (bytes up to ``size``)."""
    while at < size:
        chunk = os.pread(fd, min(CHUNK_BYTES, size - at), at)
        if not chunk:
            return False
        if b"\n" in chunk:
            return True
        at += len(chunk)
    return False


def _skip_line(fd: int, at: int) -> int | None:
    """Just past the newline ending the line that goes on at ``at``; None at EOF."""
    while True:
        chunk = os.pread(fd, CHUNK_BYTES, at)
        if not chunk:
            return None
        nl = chunk.find(b"\n")
        if nl >= 0:
            return at + nl + 1
        at += len(chunk)


def read_companion(
    path: str, held: Any, budget: int, max_line: int
) -> tuple[TextLines | None, list[int] | None]:
    """A companion's complete lines from its position (``held``: [dev, ino, offset]),
    and its identity with the position the lines start at; (None, None) when it does
    not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None, None
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return None, None
        offset = 0
        if (isinstance(held, list) and len(held) == 3 and all(isinstance(v, int) for v in held)
                and (held[0], held[1]) == (st.st_dev, st.st_ino) and held[2] <= st.st_size):
            offset = held[2]
        read = read_lines(fd, offset, st.st_size, budget, max_line)
        return read.lines, [st.st_dev, st.st_ino, offset]
    finally:
        os.close(fd)

