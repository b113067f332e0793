"""Newline framing with a length cap, for any byte stream read in pieces.

Pure: no I/O, no state. The caller owns the buffer and where the unconsumed bytes
start; ``next_line`` says what those bytes hold next. The tail-reader frames
transcript files with it, the socket server frames JSON-RPC requests.

A line over the cap is reported as soon as that is known (before its newline has
arrived, when the buffer already holds more than the cap without one), so no caller
ever has to hold a line longer than the cap plus one read. The caller then discards
it up to its newline with ``skip_past_newline``, carrying "I am discarding" across
reads itself (as the tail-reader does across restarts).

(The shape follows Vector's ``read_until_with_max_size``, which keeps the discarding
flag inside the reader; here it stays with the caller so the function is pure.)
"""

from __future__ import annotations

from dataclasses import dataclass

NEWLINE = b"\n"

Bytes = bytes | bytearray


@dataclass(frozen=True, slots=True)
class Line:
    """A complete line within the cap: ``buf[start:end]``, its newline at ``end``."""

    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def next_start(self) -> int:
        return self.end + 1


@dataclass(frozen=True, slots=True)
class TooLong:
    """The line starting at ``start`` is longer than the cap. ``end`` is its newline
    when the buffer holds it; None when it does not yet: the caller drops the whole
    buffer and goes on discarding up to the next newline."""

    start: int
    end: int | None


@dataclass(frozen=True, slots=True)
class NeedMore:
    """``buf[start:]`` holds no newline and is within the cap: a partial line."""

    start: int


Framed = Line | TooLong | NeedMore


def next_line(buf: Bytes, start: int, max_len: int) -> Framed:
    """What ``buf[start:]`` begins with: a line of at most ``max_len`` bytes (newline
    excluded), a line over ``max_len``, or not enough bytes to tell."""
    nl = buf.find(NEWLINE, start)
    if nl < 0:
        if len(buf) - start > max_len:
            return TooLong(start, None)
        return NeedMore(start)
    if nl - start > max_len:
        return TooLong(start, nl)
    return Line(start, nl)


def skip_past_newline(buf: Bytes, start: int) -> int | None:
    """Where the bytes after the next newline at or after ``start`` begin, or None
    when ``buf`` holds no newline there (everything from ``start`` is discardable)."""
    nl = buf.find(NEWLINE, start)
    return None if nl < 0 else nl + 1
