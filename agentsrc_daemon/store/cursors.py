"""The files' cursors as the store keeps them (``sources``): loaded at start (without
their adapter states, and without the files marked gone), a gone file's fetched by its
path when it comes back, a state fetched when its file is read, and each saved in the
transaction of the events it covers. ``CursorStore`` is held by the ``Store`` (its
commit saves the cursors) and handed to the ``Ingestor`` (which fetches what the start
left in the store)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import apsw
import orjson

from ..cursor import NO_SKIPS, SIDECAR_KEY, Cursor
from . import packing
from .batch import utc_now
from .packing import pack

# A state saved by a live append is stored as its JSON, and packed once its file has
# been quiet this long (CursorStore.pack_quiet_states): deflating a real session's state
# at every append cost more than the rest of its commit (a Claude Code file's state is
# 4.3 KB of JSON at the median, 43 KB at most: a mean of 92 us to pack, 1.4 ms for the
# largest, against 2.3 us to dump; docs/performance.md, "A live file's state").
STATE_QUIET_S = 60.0

# A cursor's row (CursorStore._cursor_of); the state and the sidecar signature are chosen by
# the query.
_CURSOR_COLUMNS = (
    "id, path, adapter, mode, dev, ino, size, mtime_ns, offset, head_len, head_hash,"
    " skipping, {state}, generation, lines, skipped, gone_at, {sig}"
)


class CursorStore:
    """The cursors' rows in ``sources``, on the writer's connection, and the source id
    of each path met (``source_ids``: the commit keys events by them)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.source_ids: dict[str, int] = {}
        # One object per distinct value of the columns every cursor repeats (the
        # adapter's name, the mode, the device): SQLite returns a new object per row,
        # and with 20,000 files held those copies were 2.8 MB of the live daemon's RSS.
        self._shared: dict[Any, Any] = {}
        # Source id -> when its state was last saved as JSON (by a live append), until
        # pack_quiet_states packs it. A state packed meanwhile (a backfill's save) is
        # packed again harmlessly (``pack`` leaves a packed value as it is).
        self.unpacked: dict[int, float] = {}

    def load(
        self, *, states: bool = True, sidecar_adapters: Iterable[str] = (), gone: bool = True
    ) -> dict[str, Cursor]:
        """Every file's cursor, by path (``iter_load``'s)."""
        return {c.path: c for c in self.iter_load(
            states=states, sidecar_adapters=sidecar_adapters, gone=gone)}

    def iter_load(
        self, *, states: bool = True, sidecar_adapters: Iterable[str] = (), gone: bool = True
    ) -> Iterator[Cursor]:
        """Every file's cursor, one at a time (the daemon's start packs each as it comes:
        cursor_table.py). With ``states`` False (the daemon's start) the adapter
        states are not read: a large home holds about 100 MB of them (as JSON; under
        half that packed), and most files are never read again; ``state`` fetches
        one when its file is read. Only the sidecar signature of the present sources of
        ``sidecar_adapters`` is taken from them (by SQLite, which unpacks each: see
        docs/performance.md, "Store size and migration"). With ``states`` True each
        state is unpacked here (the cursor holds JSON) and decoded when its file is
        read. With ``gone`` False (the start too) the files marked gone are
        left out: a large home has more of them than files on disk (24,203 of 44,203),
        and one is needed only if its path comes back (``gone_cursor``)."""
        sidecar_adapters = tuple(sidecar_adapters)  # bound below: an iterator is read once
        adapters = ",".join("?" * len(sidecar_adapters)) or "NULL"
        sig_column = (
            f"CASE WHEN gone_at IS NULL AND adapter IN ({adapters}) THEN"
            f" json_extract(CAST(unpack(state) AS TEXT), '$.\"{SIDECAR_KEY}\".sig') END"
            if not states else "NULL"
        )
        columns = _CURSOR_COLUMNS.format(
            state="state" if states else "NULL", sig=sig_column
        )
        where = "" if gone else " WHERE gone_at IS NULL"
        rows = self.conn.execute(
            f"SELECT {columns} FROM sources{where}", sidecar_adapters if not states else ()
        )
        for row in rows:
            yield self._cursor_of(row, states)

    def gone_cursor(self, path: str) -> Cursor | None:
        """The cursor of a file marked gone, by its path (one lookup in the path's
        unique index), its state left in the store as at start; None if the path has
        no cursor or a live one. For a path seen again that the start did not load
        (``load(gone=False)``): it carries on from where the file was (same
        file moved back) or starts a new generation (another file there)."""
        row = self.conn.execute(
            "SELECT " + _CURSOR_COLUMNS.format(state="NULL", sig="NULL")
            + " FROM sources WHERE path = ? AND gone_at IS NOT NULL",
            (path,),
        ).fetchone()
        return self._cursor_of(row, False) if row is not None else None

    def gone_count(self) -> int:
        """How many files are marked gone (from their partial index)."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM sources INDEXED BY sources_gone WHERE gone_at IS NOT NULL"
        ).fetchone()
        return int(row[0]) if row else 0

    def _cursor_of(self, row: tuple[Any, ...], states: bool) -> Cursor:
        (sid, path, adapter, mode, dev, ino, size, mtime_ns, offset, head_len, head_hash,
         skipping, state, generation, lines, skipped, gone_at, sig) = row
        self.source_ids[path] = sid
        shared = self._shared
        return Cursor(
            path=path,
            adapter=shared.setdefault(adapter, adapter),
            mode=shared.setdefault(mode, mode),
            source_id=sid,
            dev=shared.setdefault(dev, dev),
            ino=ino,
            size=size,
            mtime_ns=mtime_ns,
            offset=offset,
            head_len=head_len,
            head_hash=head_hash,
            skipping=bool(skipping),
            state_json=packing.unpack(state) or None,  # decoded when the file is read
            state_in_store=not states,
            sidecar_sig=orjson.loads(sig) if sig else None,
            generation=generation,
            lines=lines,
            skipped=orjson.loads(skipped) if skipped and skipped != "{}" else NO_SKIPS,
            gone_at=gone_at,
        )

    def committed(self, paths: Iterable[str]) -> dict[str, Cursor]:
        """After a commit that failed (rolled back): the cursors of ``paths`` as the
        database has them (a file absent has none committed). The source ids are
        re-read too: the failed transaction may have made some that no longer exist."""
        self.source_ids.clear()
        committed = self.load()
        return {p: committed[p] for p in paths if p in committed}

    def quiet_at(self, quiet_s: float = STATE_QUIET_S) -> float | None:
        """When the earliest state stored as JSON is due to be packed (monotonic), or
        None when there is none."""
        return min(self.unpacked.values()) + quiet_s if self.unpacked else None

    def pack_quiet_states(self, quiet_s: float = STATE_QUIET_S) -> int:
        """The states stored as JSON whose files have been quiet for ``quiet_s`` packed,
        in one transaction of their own: how many. (0 packs them all: at a stop.)"""
        now = time.monotonic()
        quiet = [sid for sid, at in self.unpacked.items() if now - at >= quiet_s]
        if not quiet:
            return 0
        with self.conn:
            self.conn.executemany("UPDATE sources SET state = pack(state) WHERE id = ?",
                                  [(sid,) for sid in quiet])
        for sid in quiet:
            del self.unpacked[sid]
        return len(quiet)

    def state(self, source_id: int) -> bytes | str | None:
        """One file's adapter state (JSON, unpacked), for a cursor loaded without it."""
        row = self.conn.execute("SELECT state FROM sources WHERE id=?", (source_id,)).fetchone()
        return (packing.unpack(row[0]) or None) if row is not None else None

    def source_id(self, cursor: Cursor) -> int:
        """The source id of a cursor's file, its row made if it has none yet (in the
        caller's transaction)."""
        sid = cursor.source_id or self.source_ids.get(cursor.path)
        if sid is None:
            row = self.conn.execute(
                "INSERT INTO sources(path, adapter, mode) VALUES(?,?,?)"
                " ON CONFLICT(path) DO UPDATE SET adapter=excluded.adapter RETURNING id",
                (cursor.path, cursor.adapter, cursor.mode),
            ).fetchone()
            assert row is not None
            sid = int(row[0])
        self.source_ids[cursor.path] = sid
        cursor.source_id = sid
        return sid

    def save(self, c: Cursor, *, live: bool = False) -> None:
        """A cursor saved into its file's row (in the commit's transaction). ``live``:
        the commit of an append, whose file is likely to be appended again soon: its
        state is stored as JSON, and packed once the file is quiet (STATE_QUIET_S)."""
        sid = self.source_id(c)
        # A state that never left the store (a file marked gone, say) is kept as it is;
        # any other is stored packed (store/packing.py: 0.43 of its JSON, measured).
        state = "" if c.state_in_store else " state=?,"
        values: tuple[Any, ...] = ()
        if not c.state_in_store:
            if live and c.state is not None:
                values = (orjson.dumps(c.state),)
                self.unpacked[sid] = time.monotonic()
            else:
                values = (pack(orjson.dumps(c.state)) if c.state is not None
                          else packing.repack(c.state_json) if c.state_json else None,)
        self.conn.execute(
            "UPDATE sources SET adapter=?, mode=?, dev=?, ino=?, size=?, mtime_ns=?, offset=?,"
            f" head_len=?, head_hash=?, skipping=?,{state} generation=?, lines=?, skipped=?,"
            " gone_at=?, updated_at=? WHERE id=?",
            (c.adapter, c.mode, c.dev, c.ino, c.size, c.mtime_ns, c.offset, c.head_len,
             c.head_hash, int(c.skipping), *values, c.generation, c.lines,
             orjson.dumps(dict(c.skipped)).decode(), c.gone_at, utc_now(), sid),
        )
