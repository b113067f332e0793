"""Leaving the gone files' cursors in the store at start changes nothing that is stored:
a Hypothesis property drives a few transcripts through appends, deletions, moves back,
replacements, truncations and restarts, and ingests them with two ingestors on two
stores, one loading every cursor at each restart (as before) and one loading the live
ones only and fetching a gone one by path (the daemon's start now). Both stores must
hold the same cursors and the same events after every step."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.round import Ingestor
from agentsrc_daemon.store import Batch, Store

PATHS = 2  # few, so operations meet on the same path
SID = "0b8a6a2e-0000-4000-8000-00000000000"  # + the path's index


def _line(session: int, n: int) -> bytes:
    return orjson.dumps({
        "type": "user", "sessionId": f"{SID}{session}", "uuid": f"u{n}",
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/proj", "version": "2.1.0",
        "message": {"role": "user", "content": f"prompt {n}"},
    }) + b"\n"


@dataclass
class Side:
    """One store and the ingestor that feeds it."""

    store: Store
    lazy: bool
    ingestor: Ingestor = field(default_factory=lambda: Ingestor(max_line_bytes=1 << 20))

    def restart(self) -> None:
        self.ingestor = Ingestor(max_line_bytes=1 << 20)
        if self.lazy:
            self.ingestor.cursors = self.store.cursors.load(
                states=False, sidecar_adapters=sources.SIDECAR_ADAPTERS, gone=False
            )
            self.ingestor.cursor_store = self.store.cursors
        else:
            self.ingestor.cursors = self.store.cursors.load()

    def reconcile(self, specs: list[sources.SourceSpec]) -> None:
        """Daemon._reconcile's queue, read to the end: the files on disk with news, and
        the known files no longer there (so they are marked gone)."""
        ing = self.ingestor
        on_disk = {s.path: s for s in specs if os.path.exists(s.path)}
        queue = [s for s in on_disk.values() if ing.needs_read(s, os.stat(s.path))]
        queue += [s for s in specs if s.path not in on_disk
                  and (c := ing.cursors.get(s.path)) is not None and c.gone_at is None]
        for spec in queue:
            more = True
            while more:
                batch = Batch()
                more = ing.ingest(spec, batch, 1 << 20).more
                self.store.commit(batch)

    def contents(self) -> tuple[list[Any], list[Any]]:
        conn = self.store.conn
        cursors = [
            (p, a, m, dev, ino, size, mt, off, hl, hh, sk,
             orjson.loads(state) if state else None, gen, lines, skipped, gone is None)
            for p, a, m, dev, ino, size, mt, off, hl, hh, sk, state, gen, lines, skipped, gone
            in conn.execute(
                "SELECT path, adapter, mode, dev, ino, size, mtime_ns, offset, head_len,"
                " head_hash, skipping, unpack(state), generation, lines, skipped, gone_at"
                " FROM sources ORDER BY path"
            )
        ]
        events = list(conn.execute(
            "SELECT e.key_hash, e.session_id, e.kind, e.offset, s.path FROM events e"
            " JOIN sources s ON s.id = e.source_id ORDER BY e.key_hash"
        ))
        return cursors, events


OPS = st.lists(
    st.tuples(
        st.sampled_from(["append", "park", "back", "replace", "truncate", "restart"]),
        st.integers(0, PATHS - 1),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
# Gone across a restart, then another file at the path: a new generation, its line
# counter carried on (a cursor made afresh would say generation 0 and count from 0).
@example(ops=[("append", 0, 2), ("park", 0, 1), ("restart", 0, 1), ("replace", 0, 1)])
# Gone across a restart, then the same file moved back and appended to.
@example(ops=[("append", 1, 2), ("park", 1, 1), ("restart", 0, 1), ("back", 1, 1),
              ("append", 1, 1), ("restart", 0, 1), ("truncate", 1, 1)])
def test_lazy_gone_cursors_store_what_loading_them_all_stores(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "projects"
        project = root / "-work-proj"
        project.mkdir(parents=True)
        paths = [project / f"{SID}{i}.jsonl" for i in range(PATHS)]
        parked = [Path(tmp) / f"parked{i}.jsonl" for i in range(PATHS)]
        specs = [sources.SourceSpec(str(p), "claude-code", sources.JSONL, str(root)) for p in paths]
        sides = [Side(Store(Path(tmp) / f"{name}.db"), lazy=name == "lazy")
                 for name in ("eager", "lazy")]
        for side in sides:
            side.restart()
        n = 0
        for op, i, k in ops:
            f = paths[i]
            if op == "append":
                with f.open("ab") as fh:
                    for _ in range(k):
                        n += 1
                        fh.write(_line(i, n))
            elif op == "park" and f.exists():
                os.replace(f, parked[i])
            elif op == "back" and parked[i].exists() and not f.exists():
                os.replace(parked[i], f)
            elif op == "replace":
                n += 1
                tmp_file = f.with_suffix(".tmp")
                tmp_file.write_bytes(b"".join(_line(i, n + j) for j in range(k)))
                n += k
                os.replace(tmp_file, f)
            elif op == "truncate" and f.exists():
                data = f.read_bytes().splitlines(keepends=True)
                f.write_bytes(b"".join(data[: max(0, len(data) - k)]))
            elif op == "restart":
                for side in sides:
                    side.restart()
            for side in sides:
                side.reconcile(specs)
            eager, lazy = (side.contents() for side in sides)
            assert lazy == eager, (op, i, k)
        # A start loads the cursors of the files not marked gone, and only those.
        for side in sides:
            side.restart()
        live = {p for (p,) in sides[1].store.conn.execute(
            "SELECT path FROM sources WHERE gone_at IS NULL")}
        every = {p for (p,) in sides[0].store.conn.execute("SELECT path FROM sources")}
        assert set(sides[1].ingestor.cursors) == live
        assert set(sides[0].ingestor.cursors) == every
        for side in sides:
            side.store.close()
