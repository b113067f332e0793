"""What one commit is given: a ``Batch`` of normalized records and the cursors of the
files they came from, and the plain rows ``prepare`` turns its events into."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ..events import MESSAGE, Drift, Event, SessionFacts, TurnFacts, key_digest
from ..ingest.cursor import Cursor
from .schema import SESSION_FACT_FIELDS


def _part_id(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


key_hash = key_digest


def utc_now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(slots=True)
class DocumentFacts:
    path: str
    agent: str
    project: str | None
    size: int
    sha256: str
    mtime_ns: int | None


@dataclass(slots=True)
class Batch:
    """Everything one transaction commits."""

    events: list[Event] = field(default_factory=list)
    sessions: list[SessionFacts] = field(default_factory=list)
    turns: list[TurnFacts] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    cursors: dict[str, Cursor] = field(default_factory=dict)  # by path
    documents: list[DocumentFacts] = field(default_factory=list)
    gone_documents: list[str] = field(default_factory=list)
    session_sources: set[tuple[str, str]] = field(default_factory=set)  # (session_id, path)
    project_roots: dict[str, str] = field(default_factory=dict)  # session_id -> root
    rows: list[Row] = field(default_factory=list)  # prepared events (see prepare())

    def empty(self) -> bool:
        return not (
            self.events
            or self.rows
            or self.sessions
            or self.turns
            or self.drift
            or self.cursors
            or self.documents
            or self.gone_documents
        )


# A prepared event row: plain values, cheap to pickle (workers send them) and to bind.
# (key_hash, session_id, kind, ts, turn_id, tool, call_id, subagent_id, adapter,
#  source_path, offset, path, data_json)
Row = tuple[
    bytes, str, str, str | None, str | None, str | None, str | None, str | None, str, str,
    int, str | None, bytes,
]
R_KEY: Final = 0
R_SESSION: Final = 1
R_KIND: Final = 2
R_TS: Final = 3
R_SUBAGENT: Final = 7
R_ADAPTER: Final = 8
R_SOURCE: Final = 9
R_DATA: Final = 12


def prepare(batch: Batch) -> None:
    """The pure-Python half of a commit (hashing keys, encoding JSON) into plain rows,
    done before the transaction opens (by a backfill worker, when one has the file).
    The events themselves, with their transient fields (full inputs, contents), are
    dropped: nothing of those is stored."""
    rows = batch.rows
    for ev in batch.events:
        data = ev.data
        if ev.kind == MESSAGE and "part" in data:
            data = {k: v for k, v in data.items() if k != "part"}
            data["parts"] = [_part_id(data.get("text") or "")]
        path = data.get("path")
        rows.append(
            (key_hash(ev.key), ev.session_id, ev.kind, ev.ts, ev.turn_id, ev.tool, ev.call_id,
             ev.subagent_id, ev.adapter, ev.source_path, ev.offset,
             path if isinstance(path, str) else None, orjson.dumps(data))
        )
    batch.events = []


@dataclass(slots=True)
class Inserted:
    """What a commit inserted, in id order: (id, row)."""

    events: list[tuple[int, Row]]

    def __len__(self) -> int:
        return len(self.events)

    def rows(self) -> list[dict[str, Any]]:
        """JSON-ready events, for subscribers (built only when someone listens)."""
        return [
            event_row_to_json((eid, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
                               r[10], r[12]))
            for eid, r in self.events
        ]


def coalesce_facts(facts: list[SessionFacts]) -> list[SessionFacts]:
    """The facts of a batch, one per session, merged with the same rules the database
    applies (first wins, earliest wins, latest wins): one UPDATE per session, not one
    per line that mentioned it."""
    merged: dict[str, SessionFacts] = {}
    for f in facts:
        m = merged.get(f.session_id)
        if m is None:
            merged[f.session_id] = SessionFacts(f.session_id, f.agent, f.native_id)
            m = merged[f.session_id]
        for name in SESSION_FACT_FIELDS:
            value = getattr(f, name)
            if value is None:
                continue
            current = getattr(m, name)
            if current is None:
                setattr(m, name, value)
            elif name in SessionFacts.FIRST_WINS:
                continue
            elif name in SessionFacts.EARLIEST_WINS:
                setattr(m, name, min(current, value))
            elif name == "last_event_at":
                setattr(m, name, max(current, value))
            else:
                setattr(m, name, value)
    return list(merged.values())


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
            if k not in out and k != "parts":
                out[k] = v
    return out
