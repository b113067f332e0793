"""The sessions' rows as the writer keeps them: facts merged by their rules, a commit's
counters and event times, the project root, the files a session was read from.

A live append touches a session the last commits touched too. Its row's values are
remembered from those commits (the ones this module read or wrote, for the latest
``REMEMBERED`` sessions), so an append does not read them again, and a session known
to exist, or a (session, file) pair known to be linked, costs no statement at all. That
is safe because the writer is the only one to write these rows and nothing deletes a
session; what SQL decides rather than Python (a value of another type, the spawn
linking's UPDATE) is forgotten, and a commit that rolls back forgets everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import apsw
import orjson

from ..events import SessionFacts, merged_fact
from .vocabulary import SESSION_FACT_FIELDS

# Sessions whose row values are remembered (the oldest forgotten first): the files being
# appended to now, far more than a commit meets. Each entry holds a few short values.
REMEMBERED = 1024
# (session, file) pairs known to be linked in session_sources.
SOURCES_REMEMBERED = 4096


@dataclass(slots=True)
class SessionTally:
    """A commit's share of one session's counters and event times, applied once."""

    counts: dict[str, int] = field(default_factory=dict)
    subagents: set[str] = field(default_factory=set)
    first_ts: str | None = None
    last_ts: str | None = None


def merge_sql(name: str, weak: bool, value: Any) -> tuple[str, list[Any]]:
    """A session fact's merge rule in SQL (``SessionRows.merge`` applies it in Python
    when the stored value and the new one have the same type)."""
    if name in SessionFacts.EARLIEST_WINS:
        return f"{name}=MIN(COALESCE({name}, ?), ?)", [value, value]
    if name == "last_event_at":
        return f"{name}=MAX(COALESCE({name}, ''), ?)", [value]
    if name in SessionFacts.FIRST_WINS or weak:
        return f"{name}=COALESCE({name}, ?)", [value]
    return f"{name}=?", [value]


class SessionRows:
    """The writer's statements on ``sessions`` (and ``session_sources``,
    ``session_subagents``), inside the commit's transaction."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        # session id -> the values of its row's columns read or written so far. Present:
        # the row exists. A column absent is unknown (read when needed).
        self._known: dict[str, dict[str, Any]] = {}
        self._sources: set[tuple[str, int]] = set()

    def forget(self) -> None:
        """A commit rolled back: what it wrote is not there."""
        self._known.clear()
        self._sources.clear()

    def _remember(self, sid: str, values: dict[str, Any]) -> dict[str, Any]:
        known = self._known
        if len(known) >= REMEMBERED:
            del known[next(iter(known))]  # the oldest entry
        known[sid] = values
        return values

    def ensure(self, sid: str, agent: str, native_id: str) -> None:
        """The session's row exists (events can arrive before any facts about their
        session: a sub-agent's file read before its parent's)."""
        if sid in self._known:
            return
        self.conn.execute(
            "INSERT OR IGNORE INTO sessions(id, agent, native_id) VALUES(?,?,?)",
            (sid, agent, native_id),
        )
        self._remember(sid, {})

    def _values(self, sid: str, names: Iterable[str]) -> dict[str, Any] | None:
        """The row's values of ``names`` (read those not remembered); None: no row."""
        known = self._known.get(sid)
        missing = [n for n in names if known is None or n not in known]
        if not missing:
            return known
        row = self.conn.execute(
            f"SELECT {', '.join(missing)} FROM sessions WHERE id=?", (sid,)
        ).fetchone()
        if row is None:
            return None
        if known is None:
            known = self._remember(sid, {})
        known.update(zip(missing, row, strict=True))
        return known

    def merge(self, f: SessionFacts) -> None:
        """The facts merged into the session's row by their rules. Only the columns whose
        value changes are SET: SQLite rewrites the entries of every index on a column
        SET, changed or not (eight on the sessions' times, cwd, model), and a live
        session's facts repeat its cwd, model and start with every line."""
        self.ensure(f.session_id, f.agent, f.native_id)
        given: dict[str, Any] = {}
        for name in SESSION_FACT_FIELDS:
            value = getattr(f, name)
            if value is None:
                continue
            if isinstance(value, dict):  # an object the agent wrote (source): as JSON
                value = orjson.dumps(value).decode()
            given[name] = value
        if not given:
            return
        known = self._values(f.session_id, given)
        assert known is not None  # ensured above
        sets: list[str] = []
        args: list[Any] = []
        for name, value in given.items():
            current = known[name]
            if (current is not None and type(current) is not type(value)) or (
                name == "last_event_at" and not isinstance(value, str)
            ):
                # Not comparable in Python as SQLite compares them: SQLite decides, and
                # the value is read again when next needed.
                sql, values = merge_sql(name, f.weak, value)
                sets.append(sql)
                args.extend(values)
                del known[name]
                continue
            merged = merged_fact(name, current, value, f.weak)
            if merged != current:
                sets.append(f"{name}=?")
                args.append(merged)
                if isinstance(merged, str):
                    known[name] = merged
                else:
                    # A number in a TEXT column is stored as text (its affinity), which
                    # SQL compares unlike the number: read again when next needed.
                    del known[name]
        if sets:
            args.append(f.session_id)
            self.conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id=?", args)

    def set_project_root(self, sid: str, root: str) -> None:
        """The project root a session's cwd lies in, set once (a row not there yet is
        left: its facts will bring it, and the next batch its root)."""
        known = self._values(sid, ("project_root",))
        if known is None or known["project_root"] is not None:
            return
        self.conn.execute(
            "UPDATE sessions SET project_root=? WHERE id=? AND project_root IS NULL",
            (root, sid),
        )
        known["project_root"] = root

    def link_source(self, sid: str, source_id: int) -> None:
        """The session was read (in part) from that file."""
        pair = (sid, source_id)
        if pair in self._sources:
            return
        self.conn.execute(
            "INSERT OR IGNORE INTO session_sources(session_id, source_id) VALUES(?,?)", pair
        )
        if len(self._sources) >= SOURCES_REMEMBERED:
            self._sources.clear()
        self._sources.add(pair)

    def parents_linked(self) -> None:
        """The spawn linking's UPDATE set parents in SQL: they are read again."""
        for known in self._known.values():
            known.pop("parent_session_id", None)

    def apply_tally(self, tally: dict[str, SessionTally]) -> None:
        """A batch's counters and event times, one UPDATE per session. The times are SET
        only when they move the session's (see ``merge``: each SET rewrites the entries
        of the indexes on that column); the events' times are text, as stored."""
        for sid, t in tally.items():
            for sub in t.subagents:
                self.conn.execute(
                    "INSERT OR IGNORE INTO session_subagents(session_id, subagent_id) VALUES(?,?)",
                    (sid, sub),
                )
            counts = {c: n for c, n in t.counts.items() if n}
            sets = [f"{c}={c}+?" for c in counts]
            args: list[Any] = list(counts.values())
            if t.last_ts or t.first_ts:
                known = self._values(sid, ("last_event_at", "started_at"))
                last, started = (None, None) if known is None else (
                    known["last_event_at"], known["started_at"])
                if t.last_ts and not (isinstance(last, str) and last >= t.last_ts):
                    sets.append("last_event_at=MAX(COALESCE(last_event_at,''), ?)")
                    args.append(t.last_ts)
                    if known is not None:
                        _moved(known, "last_event_at", last, max(last or "", t.last_ts))
                if t.first_ts and not (isinstance(started, str) and started <= t.first_ts):
                    sets.append("started_at=MIN(COALESCE(started_at, ?), ?)")
                    args.extend([t.first_ts, t.first_ts])
                    if known is not None:
                        _moved(known, "started_at", started, t.first_ts)
            if sets:
                args.append(sid)
                self.conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id=?", args)


def _moved(known: dict[str, Any], name: str, before: Any, after: str) -> None:
    """A time SQL moved: remembered as SQLite computed it when the stored value was
    text or NULL (text compares as Python's str does, code point by code point, which
    UTF-8's byte order keeps), read again otherwise."""
    if before is None or isinstance(before, str):
        known[name] = after
    else:
        del known[name]
