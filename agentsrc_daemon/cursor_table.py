"""Every file's cursor, held packed while its file is not being read.

A daemon tracks every transcript it ever saw (20,000 files on a large home) and reads a
few of them at a time. As ``Cursor`` objects, the ones loaded at start were about 700
bytes a file (the object, its path, a dozen integers): 14 MB of a 64 MB live daemon at
20,000 files. ``CursorTable`` holds a file's cursor as one ``bytes`` of about 110
bytes beside its path until the file is read: ``table[path]`` (or ``get``) makes the
``Cursor`` and keeps it, so what ingest changes lands in the one object the table holds.
``peek`` and ``peek_items`` answer a look that changes nothing (the reconcile's stat
comparison, the sum of the bytes left) without keeping one. ``cool`` packs a cursor
again once its file's state is back in the store (Ingestor._release_state).

Only a plain cursor is packed: no adapter state in memory, nothing skipped, not gone,
no sidecar signature; any other stays a ``Cursor``."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, MutableMapping

from .cursor import NO_SKIPS, Cursor

# source_id, dev, ino, size, mtime_ns, offset, head_len, generation, lines (each a
# signed 64-bit integer; None as 0 with its bit in the flags), then the flags, the
# adapter's and the mode's index among the names met; the head hash follows.
_FIXED = struct.Struct("<9qBHH")
_OPTIONAL = ("source_id", "dev", "ino", "size", "mtime_ns")
_SKIPPING = 1 << 5
_STATE_IN_STORE = 1 << 6
_HEAD_HASH = 1 << 7
_INT64 = range(-(2**63), 2**63)
_NONES = (1 << len(_OPTIONAL)) - 1
_FIXED_SIZE = _FIXED.size


class CursorTable(MutableMapping[str, Cursor]):
    def __init__(self, cursors: dict[str, Cursor] | None = None) -> None:
        self._hot: dict[str, Cursor] = dict(cursors or {})
        self._cold: dict[str, bytes] = {}
        self._names: list[str] = []
        self._index: dict[str, int] = {}

    @classmethod
    def packed(cls, cursors: Iterable[Cursor]) -> CursorTable:
        """A table of ``cursors`` (as the store loads them at start), each packed as it
        comes: the whole set is never held as objects."""
        table = cls()
        for c in cursors:
            table._hot.pop(c.path, None)
            packed = table._pack(c)
            if packed is None:
                table._cold.pop(c.path, None)
                table._hot[c.path] = c
            else:
                table._cold[c.path] = packed
        return table

    # ---- the mapping: a cursor taken is kept as an object --------------------------

    def __getitem__(self, path: str) -> Cursor:
        c = self._hot.get(path)
        if c is not None:
            return c
        packed = self._cold.pop(path)  # KeyError: no cursor
        c = self._hot[path] = self._unpack(path, packed)
        return c

    def __setitem__(self, path: str, cursor: Cursor) -> None:
        self._cold.pop(path, None)
        self._hot[path] = cursor

    def __delitem__(self, path: str) -> None:
        if self._hot.pop(path, None) is None:
            del self._cold[path]

    def __contains__(self, path: object) -> bool:
        return path in self._hot or path in self._cold

    def __iter__(self) -> Iterator[str]:
        yield from list(self._hot)
        yield from list(self._cold)

    def __len__(self) -> int:
        return len(self._hot) + len(self._cold)

    # ---- looks that change nothing -----------------------------------------------

    def peek(self, path: str) -> Cursor | None:
        """The path's cursor to read, not to change: a packed one is unpacked for the
        caller and stays packed (a change to it would be lost)."""
        c = self._hot.get(path)
        if c is not None:
            return c
        packed = self._cold.get(path)
        return self._unpack(path, packed) if packed is not None else None

    def peek_items(self) -> Iterator[tuple[str, Cursor]]:
        """Every path and cursor to read, not to change (as ``peek``)."""
        yield from list(self._hot.items())
        for path, packed in list(self._cold.items()):
            yield path, self._unpack(path, packed)

    def cool(self, path: str) -> bool:
        """Pack the path's cursor if it is plain (see the module's note): the caller
        holds no reference to it that it will change. Returns whether it was packed."""
        c = self._hot.get(path)
        packed = self._pack(c) if c is not None else None
        if packed is None:
            return False
        del self._hot[path]
        self._cold[path] = packed
        return True

    def packed_count(self) -> int:
        return len(self._cold)

    # ---- packing -----------------------------------------------------------------

    def _name(self, name: str) -> int:
        i = self._index.get(name)
        if i is None:
            i = self._index[name] = len(self._names)
            self._names.append(name)
        return i

    def _pack(self, c: Cursor) -> bytes | None:
        if (c.state is not None or c.state_json is not None or c.skipped
                or c.gone_at is not None or c.sidecar_sig is not None):
            return None
        flags = 0
        values: list[int] = []
        for bit, name in enumerate(_OPTIONAL):
            v = getattr(c, name)
            if v is None:
                flags |= 1 << bit
                v = 0
            values.append(v)
        values += (c.offset, c.head_len, c.generation, c.lines)
        if not all(type(v) is int and v in _INT64 for v in values):
            return None
        if c.skipping:
            flags |= _SKIPPING
        if c.state_in_store:
            flags |= _STATE_IN_STORE
        if c.head_hash is not None:
            flags |= _HEAD_HASH
        head = _FIXED.pack(*values, flags, self._name(c.adapter), self._name(c.mode))
        return head + c.head_hash if c.head_hash is not None else head

    def _unpack(self, path: str, packed: bytes) -> Cursor:
        # Positional, in Cursor's field order (a reconcile scan unpacks every file's:
        # keywords took twice as long); tests/test_cursor_table.py checks every field.
        sid, dev, ino, size, mtime_ns, offset, head_len, generation, lines, flags, a, m = (
            _FIXED.unpack_from(packed))
        if flags & _NONES:
            sid = None if flags & 1 else sid
            dev = None if flags & 2 else dev
            ino = None if flags & 4 else ino
            size = None if flags & 8 else size
            mtime_ns = None if flags & 16 else mtime_ns
        names = self._names
        return Cursor(
            path, names[a], names[m], sid, dev, ino, size, mtime_ns, offset, head_len,
            packed[_FIXED_SIZE:] if flags & _HEAD_HASH else None, bool(flags & _SKIPPING),
            None, generation, lines, NO_SKIPS, None, None, bool(flags & _STATE_IN_STORE),
        )

def peek(cursors: MutableMapping[str, Cursor], path: str) -> Cursor | None:
    """``CursorTable.peek`` on a table, ``get`` on a plain dict (a test's, a worker's)."""
    return cursors.peek(path) if isinstance(cursors, CursorTable) else cursors.get(path)


def peek_items(cursors: MutableMapping[str, Cursor]) -> Iterator[tuple[str, Cursor]]:
    return cursors.peek_items() if isinstance(cursors, CursorTable) else iter(cursors.items())
