"""A line over BIG_LINE_BYTES parsed while holding its giant strings once.

Parsing a whole line holds it twice at least: its bytes (or its text) and the parsed
object's strings (a 50 MB line is 100 MB at the parse). Here the line is read from the
file several times instead, in chunks, keeping none of them: a first pass finds its
giant string values (over ``giant`` bytes raw); for each, a measuring pass decodes it in
pieces cut between escapes and counts its characters, and the fill writes them into a
string allocated at its final size; the rest of the line is read into a small skeleton,
each giant string a placeholder, and parsed. That holds as long as a giant string is
ASCII once decoded (base64 images, output with its newlines and quotes escaped). At the
peak the process holds the giant strings once, a piece and the skeleton.

Python has no way to build a ``str`` piece by piece without holding the pieces and the
result at once (a join, or ``+=`` that is not resized in place), so the string is
allocated with CPython's ``PyUnicode_New`` (through ctypes) and its bytes written before
anything else can see it: that is what C code creating a string does. A self-check at
first use makes sure the layout is the expected one; elsewhere (another Python, an
unexpected layout) and for any line this does not cover (a giant string beyond ASCII, a
line of many strings, a placeholder's text in the line, a giant string as a key),
``parse`` returns None and the caller parses the line whole as before.

The result is the object ``json.loads`` makes of the whole line: the same parser reads
the skeleton and each piece (a piece ends at an escape's end, and an escape decoding to
ASCII is never half of a surrogate pair).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

GIANT_STRING_BYTES = 1 << 20
MAX_STRINGS = 100_000  # more strings than this: a line of many values, parsed whole

_NOT_IN_A_PLAIN_STRING = bytes(range(0x20)) + b'"\\'  # with anything over 0x7f
_MARK = "agentsrc-giant-string-"  # placeholders: "\u0000agentsrc-giant-string-<n>"


@dataclass(slots=True)
class Span:
    """A giant string's content in the file: from just after its opening quote to its
    closing quote."""

    start: int
    end: int


@dataclass(slots=True)
class BigLine:
    obj: Any  # None when the line is not UTF-8 or not JSON (``error`` says which)
    crc: int  # crc32 of the line's bytes, as read by the second pass
    crlf: bool  # the line ended in \r (stripped before parsing)
    error: str | None = None  # INVALID_UTF8 or MALFORMED


INVALID_UTF8 = "utf8"
MALFORMED = "json"


@cache
def _string_layout() -> tuple[Any, int] | None:
    """(PyUnicode_New, offset of a compact ASCII string's data from its address), or
    None when this is not a CPython whose layout checks out."""
    if sys.implementation.name != "cpython":
        return None
    try:
        new = ctypes.pythonapi.PyUnicode_New
    except AttributeError:
        return None
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_ssize_t, ctypes.c_uint32]
    offset = sys.getsizeof("") - 1  # the header; the data (and its NUL) follow it
    probe = new(16, 127)
    ctypes.memmove(id(probe) + offset, b"0123456789abcdef", 16)
    if probe != "0123456789abcdef" or hash(probe) != hash("0123456789abcdef"):
        return None
    return new, offset


def find_giant_strings(fd: int, start: int, length: int, *, chunk: int, giant: int) -> list[Span] | None:
    """The strings of at least ``giant`` bytes (raw) in the line at ``start``, in file
    order (whether they decode to ASCII is checked as they are measured); None when the
    line has more than MAX_STRINGS strings. Reads the line in chunks and keeps none of
    it; ``bytes.find`` looks for the quotes, and only the backslashes just before a
    quote are counted (an odd run escapes it)."""
    spans: list[Span] = []
    strings = 0
    in_string = False
    begin = 0  # file offset of the current string's content
    skip = 0  # 1 when the last chunk ended inside a string with an odd backslash run
    at = start
    end_of_line = start + length
    while at < end_of_line:
        data = os.pread(fd, min(chunk, end_of_line - at), at)
        if not data:
            raise OSError("file shrank while reading a line")
        pos = floor = skip  # backslash runs are counted back to ``floor`` only
        skip = 0
        while True:
            quote = data.find(b'"', pos)
            if not in_string:
                if quote < 0:
                    break
                in_string, begin = True, at + quote + 1
                strings += 1
                if strings > MAX_STRINGS:
                    return None
                pos = floor = quote + 1
                continue
            if quote < 0:
                skip = _backslashes_before(data, len(data), floor) % 2
                break
            if _backslashes_before(data, quote, floor) % 2:
                pos = quote + 1  # an escaped quote
                continue
            in_string = False
            if at + quote - begin >= giant:
                spans.append(Span(begin, at + quote))
            pos = quote + 1
        at += len(data)
    return spans


def _backslashes_before(data: bytes, index: int, floor: int) -> int:
    i = index
    while i > floor and data[i - 1] == 0x5C:
        i -= 1
    return index - i


def parse(fd: int, start: int, length: int, *, chunk: int, giant: int) -> BigLine | None:
    """The line of ``length`` bytes at ``start`` (without its newline), parsed holding
    its giant strings once; None when this path does not apply (the caller parses the
    line whole). A line that is not UTF-8 or not JSON comes back with its ``error``,
    found in the order parsing it whole finds them."""
    layout = _string_layout()
    if layout is None:
        return None
    spans = find_giant_strings(fd, start, length, chunk=chunk, giant=giant)
    if not spans:
        return None
    new, data_offset = layout
    crc = 0
    skeleton = bytearray()
    values: list[str] = []
    at = start
    for span in spans:
        crc = _read_into(fd, at, span.start, skeleton, crc, chunk)
        skeleton += f"\\u0000{_MARK}{len(values)}".encode()
        size = _decoded_size(fd, span, chunk)
        if size is None:
            return None  # not ASCII once decoded (or not a JSON string): parse it whole
        value = new(size, 127)
        filled = _fill(fd, span, id(value) + data_offset, size, crc, chunk)
        if filled is None:
            return None  # the file changed between the passes: parse it whole
        crc = filled
        values.append(value)
        at = span.end
    crc = _read_into(fd, at, start + length, skeleton, crc, chunk)
    if skeleton.count(_MARK.encode()) != len(values):
        return None  # the line itself holds a placeholder's text: parse it whole
    crlf = skeleton[-1:] == b"\r"
    if crlf:
        del skeleton[-1:]
    try:
        text = skeleton.decode("utf-8")
    except UnicodeDecodeError:
        return BigLine(None, crc, crlf, INVALID_UTF8)
    del skeleton
    try:
        obj = json.loads(text)
    except ValueError:
        return BigLine(None, crc, crlf, MALFORMED)
    placed = _place(obj, values) if isinstance(obj, (dict, list)) else 0
    if placed != len(values):
        return None  # a giant string was a key, or a duplicate key dropped it
    return BigLine(obj, crc, crlf)


def _read_into(fd: int, at: int, end: int, out: bytearray, crc: int, chunk: int) -> int:
    while at < end:
        data = os.pread(fd, min(chunk, end - at), at)
        if not data:
            raise OSError("file shrank while reading a line")
        out += data
        crc = zlib.crc32(data, crc)
        at += len(data)
    return crc


def _pieces(fd: int, span: Span, chunk: int) -> Iterator[bytes]:
    """The raw bytes of a string's content in pieces of about ``chunk`` bytes, none
    ending inside an escape (each piece decodes on its own to what it is in the whole)."""
    at, carry = span.start, b""
    while at < span.end:
        data = os.pread(fd, min(chunk, span.end - at), at)
        if not data:
            raise OSError("file shrank while reading a line")
        at += len(data)
        if carry:
            data = carry + data
        cut = len(data) if at >= span.end else _escape_boundary(data)
        carry = data[cut:]
        if cut:
            yield data[:cut]
    if carry:
        yield carry  # only when the string itself ends inside an escape (not JSON)


def _escape_boundary(data: bytes) -> int:
    """The end of ``data``, or the start of the escape it ends inside. An escape is at
    most 6 bytes (``\\uXXXX``) and holds no backslash after its first byte, so only
    the last backslash can start one that is cut."""
    last = data.rfind(b"\\", max(0, len(data) - 6))
    if last < 0:
        return len(data)
    first = last
    while first > 0 and data[first - 1] == 0x5C:
        first -= 1
    if (last - first) % 2 == 1:
        return len(data)  # the last backslash is the second of an escaped backslash
    size = 6 if data[last + 1 : last + 2] == b"u" else 2
    return last if last + size > len(data) else len(data)


def _decode(piece: bytes) -> bytes | None:
    """A piece of a string's content decoded, as ASCII bytes; None when it is not ASCII
    once decoded or not valid in a JSON string (a control character, a bad escape)."""
    if b"\\" not in piece:
        return piece if _plain(piece) else None
    try:
        text = json.loads(b'"' + piece + b'"')
    except ValueError:
        return None
    return text.encode("ascii") if isinstance(text, str) and text.isascii() else None


def _decoded_size(fd: int, span: Span, chunk: int) -> int | None:
    size = 0
    for piece in _pieces(fd, span, chunk):
        decoded = _decode(piece)
        if decoded is None:
            return None
        size += len(decoded)
    return size


def _fill(fd: int, span: Span, address: int, size: int, crc: int, chunk: int) -> int | None:
    """The string's content decoded and written at ``address`` (a new string's data of
    ``size`` characters); the crc carried over its raw bytes. None if it does not decode
    to ``size`` ASCII characters any more."""
    written = 0
    for piece in _pieces(fd, span, chunk):
        decoded = _decode(piece)
        if decoded is None or written + len(decoded) > size:
            return None
        ctypes.memmove(address + written, decoded, len(decoded))
        written += len(decoded)
        crc = zlib.crc32(piece, crc)
    return crc if written == size else None


def _plain(data: bytes) -> bool:
    """ASCII, without a control character, a quote or a backslash: the string's bytes
    are its characters."""
    return data.isascii() and len(data.translate(None, _NOT_IN_A_PLAIN_STRING)) == len(data)


def _place(root: Any, values: list[str]) -> int:
    """Replace every placeholder among the values in ``root`` by its giant string; how
    many were replaced. Iterative: a deep line json.loads accepted must not hit the
    recursion limit here."""
    placed = 0
    stack = [root]
    while stack:
        node = stack.pop()
        items: Any = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in list(items):
            if isinstance(v, str):
                if v.startswith("\x00" + _MARK):
                    node[k] = values[int(v[len(_MARK) + 1 :])]
                    placed += 1
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return placed
