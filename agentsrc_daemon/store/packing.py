"""How an event's ``data`` (JSON) is stored: deflated against a fixed dictionary when that
is smaller, as it was written otherwise. A file's adapter state (``sources.state``,
JSON) is stored in the same format (``pack``/``unpack``): measured on a store of 10
copies of the corpus (docs/performance.md, "Store size and migration"), the events'
dictionary and 8 KiB window packed the states to 0.43 of their JSON, smaller than
deflate with a full window and no dictionary (0.45), and a dictionary of the states'
own keys (derived from those states) packed them 1.5% smaller: not worth a second
format.

The physical column is ``events.packed``; ``events.data`` is a VIRTUAL generated column,
``unpack(packed)``, so every query reads (and ``json_extract``s) the JSON exactly as
before. The format is self-describing: a packed value starts with ``PACKED_V1``, a JSON
object with ``{``; so a store whose rows are only partly packed (during the schema 7 -> 8
migration, or the states' during migrations/chunked.PACK_STATES) reads the same as a fully packed one.

``DICTIONARY`` is part of the stored format: never edit it. A better one gets a new
leading byte and both stay readable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import apsw

PACKED_V1 = b"\x01"

# Fragments that recur in the events' data (keys of every kind, tool inputs, common
# values): deflate finds them here even in a record of 60 bytes. Most frequent last
# (deflate reaches the end of the dictionary with the shortest distances).
DICTIONARY = (
    b'"view_range":[,"replace_all":false,"subagent_type":"general-purpose",'
    b'"output_mode":"content","url":"https://","query":"","offset":,"limit":,'
    b'"prompt":"","file_text":"","intent":"","pattern":"**/","timeout":120000,'
    b'"plan":[{"step":"","status":"completed"},{"step":"","status":"in_progress"},'
    b'"todos":[{"content":"","status":"pending","activeForm":""},'
    b'"justification":"","with_escalated_permissions":true,"sandbox_permissions":'
    b'"session_id":,"chars":"","content":"","input":"'
    b'"old_string":"","new_string":"","file_path":"/home/","description":"",'
    b'"timeout_ms":,"yield_time_ms":10000,"max_output_tokens":6000,'
    b'"cmd":"","workdir":"/home/","path":"/home/",'
    b'{"op":"read","external":false,"rel_path":"src/","project_root":"/home/",'
    b'"path":"/home/","op":"edit","external":true,'
    b'{"type":"","label":"","line":,"hash":"","of":"","of_kind":"tool_result",'
    b'"error_type":"","message":"","pre_tokens":,"trigger":"auto",'
    b'{"status":"complete","reason":"","chars":'
    b'"model":"claude-sonnet-4-5-20250929","model":"claude-opus-4-1-20250805",'
    b'"model":"gemini-2.5-pro","model":"gpt-5-codex","model":"gpt-5.1-codex",'
    b'"cost":,"total_tokens":,"reasoning_tokens":0,"cache_creation_tokens":0,'
    b'"cache_read_tokens":,"input_tokens":,"output_tokens":,'
    b'{"text":"","text_chars":,'
    b'"interrupted":false,"output_chars":,"duration_ms":,"is_error":false,'
    b'"exit_code":0,"exit_code":1,{"command":"cd /home/ && git status","cwd":"/home/",'
    b'{"input":{"command":"cat ","description":"","cwd":"/home/",'
    b'{"input":{"command":["bash","-lc","sed -n \'1,200p\' "],"workdir":"/home/",'
    b'"timeout_ms":120000}}'
)

# Values shorter than this are stored as written: the header costs more than it saves.
MIN_PACK_BYTES = 48
# A 8 KiB window and a small hash table: most values are far smaller, and setting up
# zlib's full-size state cost more than the compression itself (measured: 30 us a row
# against 60).
_LEVEL = 6
_WBITS = -13
_MEMLEVEL = 6


def _compressor() -> Any:
    return zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEMLEVEL, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)


# A compressor with the dictionary set, copied for each value: setting the dictionary
# hashes all of it, a third of a small value's packing (measured: 3.4-3.6 us a value
# against 4.9-5.0). A copy is the same deflate state, so the bytes are the same.
_PRIMED = _compressor()


def pack(data: bytes) -> bytes:
    """The stored form of a JSON value (an event's data, a file's state): deflated when
    that is shorter."""
    if len(data) < MIN_PACK_BYTES:
        return data
    c = _PRIMED.copy()
    packed = PACKED_V1 + c.compress(data) + c.flush()
    return packed if len(packed) < len(data) else data


def unpack(stored: bytes | None) -> bytes | None:
    """The JSON of a stored value (either form)."""
    if stored is None or stored[:1] != PACKED_V1:
        return stored
    d = zlib.decompressobj(-15, DICTIONARY)
    return d.decompress(stored[1:]) + d.flush()


def repack(value: bytes | str) -> bytes:
    """``pack`` of a value as a column may hold it: JSON text is encoded first, and a
    value already packed is left as it is (idempotent)."""
    if isinstance(value, str):
        value = value.encode()
    return value if value[:1] == PACKED_V1 else pack(value)


def _sql_pack(*args: Any) -> Any:
    """Idempotent (a resumed migration may meet packed values): only JSON is packed."""
    (value,) = args
    if not isinstance(value, (bytes, str)):
        return value
    return repack(value)


# The last value unpacked is kept (per connection) when it is at most this long: a query
# that takes several fields of a row (json_extract of `data` each) unpacks it once, not
# once per field (findings.list takes six; the failed-command test three). Bounded, so a
# huge event is not held after its query.
MEMO_MAX_BYTES = 64 * 1024


# Packed values whose JSON is at hand (see ``known``): packed -> JSON, read by every
# connection's unpack. What it holds is exactly what unpacking would give (pack is
# lossless), so a reader on another thread that meets an entry reads the same bytes.
_KNOWN: dict[bytes, bytes] = {}


@contextmanager
def known(pairs: Iterable[tuple[bytes, bytes]]) -> Iterator[None]:
    """While a commit inserts its rows, SQLite evaluates the events' indexes on
    json_extract(data, ...) (and the aggregates read the new rows' data): each an
    unpack of a value just packed. ``pairs`` (packed, JSON) serve those from the JSON
    the writer holds instead of inflating it again (a decompressor per row)."""
    _KNOWN.update(pairs)
    try:
        yield
    finally:
        _KNOWN.clear()


def _memo_unpack() -> Any:
    last: list[tuple[bytes, bytes | None]] = []

    def sql_unpack(*args: Any) -> Any:
        (stored,) = args
        if not isinstance(stored, bytes) or stored[:1] != PACKED_V1:
            return stored
        if _KNOWN:
            data = _KNOWN.get(stored)
            if data is not None:
                return data
        if last and last[0][0] == stored:
            return last[0][1]
        out = unpack(stored)
        if len(stored) <= MEMO_MAX_BYTES:
            last[:] = [(stored, out)]
        else:
            last.clear()
        return out

    return sql_unpack


def register(conn: apsw.Connection) -> None:
    """``events.data`` is ``unpack(packed)``: every connection that reads or writes the
    events table needs the function (connection.connect registers it), and the SQL that reads
    a file's state (``unpack(state)``); ``pack`` is the migrations'."""
    conn.create_scalar_function("unpack", _memo_unpack(), 1, deterministic=True)
    conn.create_scalar_function("pack", _sql_pack, 1, deterministic=True)
