"""What one commit is given: a ``Batch`` of normalized records and the cursors of the
files they came from, and the plain rows ``prepare`` turns its events into."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, NamedTuple

import orjson

from ..cursor import Cursor
from ..events import Drift, Event, SessionFacts, SpawnPoint, TurnFacts, key_digest, merged_fact
from .packing import pack
from .vocabulary import SESSION_FACT_FIELDS

key_hash = key_digest


def utc_now() -> str:
    """Now in UTC to the millisecond, as the store writes its own times (a commit writes
    one for each file's cursor: the second's text is made once)."""
    now = time.time()
    second = int(now)
    return f"{_utc_second(second)}.{int((now - second) * 1000):03d}Z"


@functools.lru_cache(maxsize=1)
def _utc_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


@dataclass(slots=True)
class DocumentFacts:
    path: str
    agent: str
    project: str | None
    size: int
    sha256: str
    mtime_ns: int | None


class Row(NamedTuple):
    """A prepared event: plain values, cheap to pickle (backfill workers send them to the
    daemon, see ``Batch.__getstate__``) and to bind. The fields are the ``events``
    columns in the order the INSERT binds them, then the stored form of ``data`` and the
    source's path: the writer binds the first in place of ``data`` and swaps the path
    for the source's id (``bind``)."""

    key_hash: bytes
    session_id: str
    kind: str
    ts: str | None
    turn_id: str | None
    tool: str | None
    call_id: str | None
    subagent_id: str | None
    adapter: str
    offset: int
    path: str | None  # read/edit/secret events: the file path the event is about
    data: bytes  # JSON
    revision: int  # see Event.revision
    claim: int  # see Event.claim
    claim_since: str | None
    holder: str | None  # the session whose file holds it, when not session_id
    packed: bytes  # data as stored (store/packing.py)
    source_path: str  # the transcript the event came from
    # A usage event's cost, priced at ingest (store/costs.CostRow); None: not priced.
    cost: tuple[int | None, str, int | None, int] | None = None

    def bind(
        self, source_id: int, session_key: int, turn_key: int | None, adapter_key: int
    ) -> tuple[Any, ...]:
        """The INSERT's values (store/writer.py): the session's and the turn's text ids
        and the adapter's name left empty, their keys at the end (schema 16); the packed
        data in place of the JSON; the source's id in place of its path."""
        return (
            (self[0], "", self[2], self[3], None) + self[5:8] + ("",) + self[9:11]
            + (self.packed,) + self[12:16] + (source_id, session_key, turn_key, adapter_key)
        )


# Rows cross the process boundary as plain tuples: pickle handles a NamedTuple with a
# Python call per row each way, several times slower than a tuple.
_row_of_tuple = partial(tuple.__new__, Row)


# What became of a record an adapter read (the fidelity table's columns, docs/formats.md,
# "Fidelity"): events (or facts), ignored on purpose, folded (read into the file's state,
# or a twin already counted), not understood (drift, or the adapter failed on it).
OUTCOMES = ("events", "ignored", "folded", "not_understood")
# (adapter, agent version, record type) -> counts per outcome, in OUTCOMES' order.
FidelityTally = dict[tuple[str, str, str], list[int]]


def tally_record(tally: FidelityTally, adapter: str, version: str, record_type: str, outcome: int) -> None:
    """Count one record read, by what became of it (an index into OUTCOMES)."""
    counts = tally.get((adapter, version, record_type))
    if counts is None:
        counts = tally[(adapter, version, record_type)] = [0, 0, 0, 0]
    counts[outcome] += 1


@dataclass(slots=True)
class Batch:
    """Everything one transaction commits."""

    events: list[Event] = field(default_factory=list)
    sessions: list[SessionFacts] = field(default_factory=list)
    turns: list[TurnFacts] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    spawns: list[SpawnPoint] = field(default_factory=list)
    cursors: dict[str, Cursor] = field(default_factory=dict)  # by path
    documents: list[DocumentFacts] = field(default_factory=list)
    gone_documents: list[str] = field(default_factory=list)
    session_sources: set[tuple[str, str]] = field(default_factory=set)  # (session_id, path)
    project_roots: dict[str, str] = field(default_factory=dict)  # session_id -> root
    rows: list[Row] = field(default_factory=list)  # prepared events (see prepare())
    fidelity: FidelityTally = field(default_factory=dict)  # the records read (tally_record)

    def empty(self) -> bool:
        return not (
            self.events
            or self.rows
            or self.sessions
            or self.turns
            or self.drift
            or self.spawns
            or self.cursors
            or self.documents
            or self.gone_documents
            or self.fidelity
        )

    def merge(self, later: Batch) -> None:
        """Add a later batch of the same files (a worker's round read in pieces):
        one commit of both is the commit of each in turn, the later cursors winning."""
        self.events += later.events
        self.rows += later.rows
        self.sessions += later.sessions
        self.turns += later.turns
        self.drift += later.drift
        self.spawns += later.spawns
        self.cursors.update(later.cursors)
        self.documents += later.documents
        self.gone_documents += later.gone_documents
        self.session_sources |= later.session_sources
        for key, counts in later.fidelity.items():
            mine = self.fidelity.setdefault(key, [0, 0, 0, 0])
            for i, n in enumerate(counts):
                mine[i] += n
        for sid, root in later.project_roots.items():
            self.project_roots.setdefault(sid, root)  # the first root found wins, as in a round

    def __getstate__(self) -> dict[str, Any]:
        """A backfill worker returns its batch pickled: the rows go as plain tuples."""
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        state["rows"] = list(map(tuple, self.rows))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self.rows = list(map(_row_of_tuple, state["rows"]))


def prepare(batch: Batch) -> None:
    """The pure-Python half of a commit (hashing keys, encoding and packing JSON) into plain rows,
    done before the transaction opens (by a backfill worker, when one has the file).
    The events themselves, with their transient fields (full inputs, contents), are
    dropped: nothing of those is stored."""
    rows = batch.rows
    for ev in batch.events:
        data = ev.data
        path = data.get("path")
        raw = orjson.dumps(data)
        rows.append(
            Row(key_hash(ev.key), ev.session_id, ev.kind, ev.ts, ev.turn_id, ev.tool, ev.call_id,
                ev.subagent_id, ev.adapter, ev.offset, path if isinstance(path, str) else None,
                raw, ev.revision, ev.claim, ev.claim_since,
                ev.holder if ev.holder != ev.session_id else None, pack(raw), ev.source_path,
                ev.cost)
        )
    batch.events = []


@dataclass(slots=True)
class Inserted:
    """What a commit inserted, in id order: (id, row)."""

    events: list[tuple[int, Row]]

    def __len__(self) -> int:
        return len(self.events)

    def rows(self, wanted: Callable[[str, str], bool] | None = None) -> list[dict[str, Any]]:
        """JSON-ready events, for subscribers (built only when someone listens, and with
        ``wanted``, only those it says some subscriber wants: by kind and session)."""
        return [
            event_row_to_json((eid, r.session_id, r.kind, r.ts, r.turn_id, r.tool, r.call_id,
                               r.subagent_id, r.adapter, r.source_path, r.offset, r.data))
            for eid, r in self.events
            if wanted is None or wanted(r.kind, r.session_id)
        ]


def coalesce_facts(facts: list[SessionFacts]) -> list[SessionFacts]:
    """The facts of a batch, one per session (and per weak or not), merged with the same
    rules the database applies (first wins, earliest wins, latest wins; weak facts only
    fill what is unknown): one UPDATE per session, not one per line that mentioned it.
    A session's own facts come before the weak ones."""
    merged: dict[tuple[bool, str], SessionFacts] = {}
    for f in facts:
        m = merged.get((f.weak, f.session_id))
        if m is None:
            m = SessionFacts(f.session_id, f.agent, f.native_id, weak=f.weak)
            merged[(f.weak, f.session_id)] = m
        for name in SESSION_FACT_FIELDS:
            value = getattr(f, name)
            if value is None:
                continue
            setattr(m, name, merged_fact(name, getattr(m, name), value, f.weak))
    return [m for (weak, _), m in sorted(merged.items(), key=lambda kv: kv[0][0])]


def event_row_to_json(row: Sequence[Any]) -> dict[str, Any]:
    (eid, session_id, kind, ts, turn_id, tool, call_id, subagent_id, adapter, source_path,
     offset, data) = row
    out: dict[str, Any] = {
        "id": eid,
        "session_id": session_id,
        "kind": kind,
        "ts": ts,
        "turn_id": turn_id,
        "tool": tool,
        "call_id": call_id,
        "subagent_id": subagent_id,
        "adapter": adapter,
        "source_path": source_path,
        "offset": offset,
    }
    payload = orjson.loads(data) if isinstance(data, bytes | str) else data
    if isinstance(payload, dict):
        for k, v in payload.items():
            if k not in out:
                out[k] = v
    return out
