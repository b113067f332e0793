"""The read side of the store: queries, one short read transaction each.

One writer (the ingest loop) and any number of readers (socket handlers), each with its
own connection. Reads are short so checkpoints are never starved.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import apsw
import orjson

from .batch import event_row_to_json
from .schema import USAGE_FIELDS, connect
from .where import Where
from .where import finding_path_filter as _finding_path_filter


def _finding_path(path: str) -> tuple[Any, ...]:
    condition, args = _finding_path_filter(path)
    return (condition, *args)

EVENT_COLUMNS = (
    "e.id, e.session_id, e.kind, e.ts, e.turn_id, e.tool, e.call_id, e.subagent_id,"
    " e.adapter, s.path, e.offset, e.data"
)

SESSION_COLUMNS = (
    "id, agent, native_id, cwd, model, started_at, last_event_at, title, version, originator,"
    " source, model_provider, parent_session_id, prompts, messages, tool_calls, compactions,"
    " errors, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,"
    " reasoning_tokens, total_tokens, project_root, replayed_in, own_record"
)
_SESSION_NAMES = [c.strip() for c in SESSION_COLUMNS.split(",")]


class Reader:
    """Read-only queries, one per socket handler thread. Every method is one short
    read transaction (a long-lived reader would stop WAL checkpoints)."""

    def __init__(self, db_path: Path) -> None:
        self.conn = connect(db_path, readonly=True)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def snapshot(self) -> Iterator[apsw.Connection]:
        with self.conn:
            yield self.conn

    # -- status
    def counts(self) -> dict[str, int]:
        c = self.conn
        files = c.execute("SELECT COUNT(*) FROM sources WHERE gone_at IS NULL").fetchone()
        sessions = c.execute("SELECT COUNT(*) FROM sessions").fetchone()
        events = c.execute("SELECT value FROM counters WHERE name = 'events'").fetchone()
        gone = c.execute("SELECT COUNT(*) FROM sources WHERE gone_at IS NOT NULL").fetchone()
        return {
            "files": int(files[0]) if files else 0,
            "files_gone": int(gone[0]) if gone else 0,
            "sessions": int(sessions[0]) if sessions else 0,
            "events": int(events[0]) if events else 0,
        }

    def event_count(self) -> int:
        row = self.conn.execute("SELECT COUNT(*) FROM events").fetchone()
        return int(row[0]) if row else 0

    def last_event_id(self) -> int:
        """The newest event id (ids increase but have gaps: not a count)."""
        row = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
        return int(row[0]) if row else 0

    def skipped_totals(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for (skipped,) in self.conn.execute("SELECT skipped FROM sources WHERE skipped != '{}'"):
            for k, v in orjson.loads(skipped).items():
                totals[k] = totals.get(k, 0) + int(v)
        return totals

    def drift(self) -> list[dict[str, Any]]:
        return [
            {"adapter": a, "version": v, "record_type": t, "count": n, "last_seen": ls}
            for a, v, t, n, ls in self.conn.execute(
                "SELECT adapter, version, record_type, count, last_seen FROM drift"
                " ORDER BY count DESC, adapter, record_type"
            )
        ]

    def sources(self, path_like: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT path, adapter, mode, size, offset, lines, skipped, generation, gone_at"
            " FROM sources"
        )
        args: tuple[Any, ...] = ()
        if path_like:
            sql += " WHERE path LIKE ?"
            args = (path_like,)
        return [
            {
                "path": p,
                "adapter": a,
                "mode": m,
                "size": s,
                "offset": o,
                "lines": n,
                "skipped": orjson.loads(sk) if sk else {},
                "generation": g,
                "gone_at": gone,
            }
            for p, a, m, s, o, n, sk, g, gone in self.conn.execute(sql + " ORDER BY path", args)
        ]

    # -- sessions
    def _session_dict(self, row: Sequence[Any]) -> dict[str, Any]:
        d = dict(zip(_SESSION_NAMES, row, strict=True))
        sid = d["id"]
        source = d.get("source")
        if isinstance(source, str) and source.startswith("{"):
            with suppress(orjson.JSONDecodeError):
                d["source"] = orjson.loads(source)  # an object the agent wrote, as written
        # A session known only through another session's copy of its history (a Codex
        # resume replays its parent's): its own transcript was never read.
        d["known_from_replay"] = d.pop("replayed_in") if not d.pop("own_record") else None
        sub = self.conn.execute(
            "SELECT COUNT(*) FROM session_subagents WHERE session_id=?", (sid,)
        ).fetchone()
        d["subagents"] = int(sub[0]) if sub else 0
        states = [
            gone is None
            for (gone,) in self.conn.execute(
                "SELECT s.gone_at FROM session_sources ss JOIN sources s ON s.id=ss.source_id"
                " WHERE ss.session_id=?",
                (sid,),
            )
        ]
        if not states or all(states):
            d["source_state"] = "present"
        elif any(states):
            d["source_state"] = "partial"
        else:
            d["source_state"] = "gone"
        d["tokens"] = {
            f: d.pop(f) for f in USAGE_FIELDS
        }
        return d

    def sessions(
        self,
        *,
        agent: str | None = None,
        limit: int = 50,
        cwd: str | None = None,
        project: str | None = None,
    ) -> list[dict[str, Any]]:
        where = Where()
        if agent:
            where.add("agent=?", agent)
        if cwd:
            where.add("cwd=?", cwd)
        if project:
            where.add("(project_root=? OR cwd=?)", project, project)
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM sessions{where.sql()}"
            " ORDER BY COALESCE(last_event_at, started_at, '') DESC, id LIMIT ?"
        )
        with self.snapshot():
            rows = list(self.conn.execute(sql, [*where.args, limit]))
            return [self._session_dict(r) for r in rows]

    def resolve_session(self, ident: str) -> str | None:
        """Accept our id, the agent's native id, or a unique prefix of either."""
        row = self.conn.execute("SELECT id FROM sessions WHERE id=?", (ident,)).fetchone()
        if row:
            return str(row[0])
        rows = list(
            self.conn.execute(
                "SELECT id FROM sessions WHERE native_id=? OR id LIKE ? OR native_id LIKE ?"
                " LIMIT 2",
                (ident, ident + "%", ident + "%"),
            )
        )
        if len(rows) == 1:
            return str(rows[0][0])
        return None

    def session(self, session_id: str) -> dict[str, Any] | None:
        with self.snapshot():
            row = self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            d = self._session_dict(row)
            d["turns"] = [
                {
                    "turn_id": t,
                    "started_at": s,
                    "ended_at": e,
                    "status": st,
                    "cwd": cwd,
                    "model": m,
                }
                for t, s, e, st, cwd, m in self.conn.execute(
                    "SELECT turn_id, started_at, ended_at, status, cwd, model FROM turns"
                    " WHERE session_id=? ORDER BY COALESCE(started_at, ''), turn_id",
                    (session_id,),
                )
            ]
            d["sources"] = [
                {"path": p, "gone": gone is not None, "gone_at": gone}
                for p, gone in self.conn.execute(
                    "SELECT s.path, s.gone_at FROM session_sources ss"
                    " JOIN sources s ON s.id=ss.source_id WHERE ss.session_id=? ORDER BY s.path",
                    (session_id,),
                )
            ]
            d["subagent_ids"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT subagent_id FROM session_subagents WHERE session_id=? ORDER BY 1",
                    (session_id,),
                )
            ]
            d["children"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM sessions WHERE parent_session_id=?"
                    " ORDER BY COALESCE(started_at, ''), id",
                    (session_id,),
                )
            ]
            # Records this session holds copies of, owned (and counted) by another session
            # (a resumed or forked history, a sub-agent's replay): shown, marked
            # inherited, never counted here.
            d["inherited"] = {
                k: n
                for k, n in self.conn.execute(
                    "SELECT e.kind, COUNT(*) FROM event_copies c JOIN events e"
                    " ON e.id = c.event_id WHERE c.session_id=? AND e.session_id != ?"
                    " GROUP BY e.kind",
                    (session_id, session_id),
                )
            }
            # The turns of this session's copies, as its own file has them (a resumed
            # Claude session's first turns are the earlier conversation's).
            d["inherited_turns"] = [
                {"turn_id": t, "events": n, "owner": owner}
                for t, n, owner in self.conn.execute(
                    "SELECT c.turn_id, COUNT(*), MIN(e.session_id) FROM event_copies c"
                    " JOIN events e ON e.id = c.event_id WHERE c.session_id=?"
                    " AND e.session_id != ? AND c.turn_id IS NOT NULL"
                    " GROUP BY c.turn_id ORDER BY MIN(e.ts), c.turn_id",
                    (session_id, session_id),
                )
            ]
            # Links by the data, for agents whose files do not name them (a resumed or
            # forked Claude Code session starts with copies of the earlier one's records):
            # the sessions whose records this one holds copies of, and those holding
            # copies of its records.
            d["copied_from"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT e.session_id FROM event_copies c JOIN events e ON e.id = c.event_id"
                    " WHERE c.session_id=? AND e.session_id != ? GROUP BY e.session_id"
                    " ORDER BY MIN(e.ts), e.session_id",
                    (session_id, session_id),
                )
            ]
            d["copied_into"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT DISTINCT c.session_id FROM events e JOIN event_copies c"
                    " ON c.event_id = e.id WHERE e.session_id=? AND c.session_id != ?"
                    " ORDER BY 1",
                    (session_id, session_id),
                )
            ]
            if d["parent_session_id"] is None and d["copied_from"]:
                d["parent_session_id"] = d["copied_from"][0]
            d["children"] += [c for c in d["copied_into"] if c not in d["children"]]
            d["kinds"] = {
                k: n
                for k, n in self.conn.execute(
                    "SELECT kind, COUNT(*) FROM events WHERE session_id=? GROUP BY kind",
                    (session_id,),
                )
            }
            return d

    # -- events
    def events(
        self,
        *,
        session_id: str | None = None,
        kinds: Sequence[str] | None = None,
        since_id: int = 0,
        limit: int = 100,
        path: str | None = None,
        path_glob: str | None = None,
        call_id: str | None = None,
    ) -> list[dict[str, Any]]:
        where = _event_page(since_id, session_id, kinds)
        if path:
            where.add("e.path = ?", path)
        if path_glob:
            where.add("e.path GLOB ?", path_glob)
        if call_id:
            where.add("e.call_id = ?", call_id)
        return self._events(where, limit)

    def _events(self, where: Where, limit: int) -> list[dict[str, Any]]:
        sql = (
            f"SELECT {EVENT_COLUMNS} FROM events e JOIN sources s ON s.id = e.source_id"
            f"{where.sql()} ORDER BY e.id LIMIT ?"
        )
        with self.snapshot():
            return [event_row_to_json(r) for r in self.conn.execute(sql, [*where.args, limit])]

    def file_events(
        self,
        kind: str,
        path: str | None,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        where = _event_page(since_id, session_id, [kind])
        where.scope(agent=agent, project=project, since_ts=since_ts)
        where.path_matches(path)
        return self._events(where, limit)

    def commands(
        self,
        *,
        session_id: str | None = None,
        project: str | None = None,
        failed: bool | None = None,
        exit_code: int | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        where = _event_page(since_id, session_id, ["command"])
        where.scope(project=project, since_ts=since_ts)
        if failed is True:
            where.add(
                "(COALESCE(json_extract(e.data, '$.exit_code'), 0) != 0"
                " OR json_extract(e.data, '$.interrupted') = 1"
                " OR json_extract(e.data, '$.is_error') = 1)"
            )
        elif failed is False:
            where.add("json_extract(e.data, '$.exit_code') = 0")
        if exit_code is not None:
            where.add("json_extract(e.data, '$.exit_code') = ?", exit_code)
        return self._events(where, limit)

    def documents(self) -> list[dict[str, Any]]:
        """Memory files (Codex AGENTS.md and memories/, Claude project memory/): what
        and where, never their content."""
        names = ("path", "agent", "project", "size", "sha256", "gone_at", "updated_at")
        with self.snapshot():
            return [
                dict(zip(names, row, strict=True))
                for row in self.conn.execute(
                    "SELECT path, agent, project, size, sha256, gone_at, updated_at"
                    " FROM documents ORDER BY path"
                )
            ]

    def findings(
        self,
        *,
        session_id: str | None = None,
        path: str | None = None,
        secret_type: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
        since_id: int = 0,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Secret findings, newest last: the JSON contract of a finding."""
        where = Where()
        where.kind_in(["secret"])
        where.add("e.id > ?", since_id)
        where.scope(session_id=session_id, project=project, since_ts=since_ts)
        if path:
            where.add(*_finding_path(path))
        if secret_type:
            where.add("json_extract(e.data, '$.type') = ?", secret_type)
        sql = (
            "SELECT e.id, e.session_id, e.ts, e.turn_id, e.call_id, e.tool, e.subagent_id, e.path,"
            " json_extract(e.data, '$.type'), json_extract(e.data, '$.line'),"
            " json_extract(e.data, '$.hash'), json_extract(e.data, '$.label'),"
            " json_extract(e.data, '$.of_kind'),"
            " (SELECT o.id FROM events o WHERE o.key_hash = unhex(json_extract(e.data, '$.of'))),"
            f" e.adapter, json_extract(e.data, '$.paths') FROM events e{where.sql()}"
            " ORDER BY e.id LIMIT ?"
        )
        names = ("id", "session_id", "ts", "turn_id", "call_id", "tool", "subagent_id", "path",
                 "type", "line", "hash", "label", "of_kind", "event_id", "agent", "paths")
        with self.snapshot():
            out = [
                dict(zip(names, row, strict=True))
                for row in self.conn.execute(sql, [*where.args, limit])
            ]
        for f in out:
            # The candidate paths of a finding in the output of a call that read several
            # files; [path] (or []) otherwise.
            f["paths"] = orjson.loads(f["paths"]) if f["paths"] else (
                [f["path"]] if f["path"] else []
            )
        return out

    def findings_report(self, *, since_ts: str | None = None) -> dict[str, Any]:
        """Counts by type, session and project; sensitive reads; reads outside the
        project whose content carried a secret."""
        since = "AND e.ts >= ?" if since_ts else ""
        args: tuple[Any, ...] = (since_ts,) if since_ts else ()
        with self.snapshot():
            by_type = {
                t: {"findings": n, "distinct_values": d, "sessions": ns}
                for t, n, d, ns in self.conn.execute(
                    "SELECT json_extract(e.data, '$.type') t, COUNT(*),"
                    " COUNT(DISTINCT json_extract(e.data, '$.hash')), COUNT(DISTINCT e.session_id)"
                    f" FROM events e WHERE e.kind = 'secret' {since} GROUP BY t ORDER BY 2 DESC",
                    args,
                )
            }
            by_session = [
                {"session_id": sid, "agent": agent, "cwd": cwd, "project_root": root,
                 "findings": n, "types": sorted(set((types or "").split(",")))}
                for sid, agent, cwd, root, n, types in self.conn.execute(
                    "SELECT e.session_id, s.agent, s.cwd, s.project_root, COUNT(*),"
                    " group_concat(DISTINCT json_extract(e.data, '$.type'))"
                    " FROM events e LEFT JOIN sessions s ON s.id = e.session_id"
                    f" WHERE e.kind = 'secret' {since} GROUP BY e.session_id ORDER BY 5 DESC",
                    args,
                )
            ]
            by_project: dict[str, int] = {}
            for entry in by_session:
                key = entry["project_root"] or entry["cwd"] or "(unknown)"
                by_project[key] = by_project.get(key, 0) + entry["findings"]
            # A sensitive read and the findings in what it read, whether the finding names
            # the path alone or among the candidates of a call that read several files.
            sensitive = [
                {"path": p, "reads": n, "sessions": ns, "last_ts": last, "findings": nf}
                for p, n, ns, last, nf in self.conn.execute(
                    "SELECT e.path, COUNT(*), COUNT(DISTINCT e.session_id), MAX(e.ts),"
                    " (SELECT COUNT(*) FROM events f WHERE f.kind = 'secret' AND (f.path = e.path"
                    " OR EXISTS (SELECT 1 FROM json_each(f.data, '$.paths') j"
                    " WHERE j.value = e.path))) FROM events e"
                    f" WHERE e.kind = 'sensitive_read' {since} GROUP BY e.path ORDER BY 2 DESC",
                    args,
                )
            ]
            external = [
                {"path": p, "session_id": sid, "findings": n,
                 "types": sorted(set((types or "").split(",")))}
                for p, sid, n, types in self.conn.execute(
                    "SELECT e.path, e.session_id, COUNT(*),"
                    " group_concat(DISTINCT json_extract(e.data, '$.type')) FROM events e"
                    " WHERE e.kind = 'secret' AND e.path IS NOT NULL"
                    f" {since} AND EXISTS (SELECT 1 FROM events r WHERE r.kind = 'read'"
                    " AND r.session_id = e.session_id AND r.path = e.path"
                    " AND json_extract(r.data, '$.external') = 1)"
                    " GROUP BY e.path, e.session_id ORDER BY 3 DESC",
                    args,
                )
            ]
            total = sum(v["findings"] for v in by_type.values())
        return {
            "findings": total,
            "by_type": by_type,
            "by_session": by_session,
            "by_project": dict(sorted(by_project.items(), key=lambda kv: -kv[1])),
            "sensitive_reads": sensitive,
            "external_reads_with_secrets": external,
        }

    def session_files(self, session_id: str) -> dict[str, Any]:
        """Everything one session read and changed, one row per path, with counts."""
        with self.snapshot():
            rows = list(
                self.conn.execute(
                    "SELECT e.kind, e.path, json_extract(e.data, '$.rel_path'),"
                    " json_extract(e.data, '$.external'), json_extract(e.data, '$.op'),"
                    " COUNT(*), MIN(e.ts), MAX(e.ts) FROM events e"
                    " WHERE e.session_id = ? AND e.kind IN ('read', 'edit') AND e.path IS NOT NULL"
                    " GROUP BY e.kind, e.path, json_extract(e.data, '$.op')"
                    " ORDER BY e.path",
                    (session_id,),
                )
            )
            commands = self.conn.execute(
                "SELECT COUNT(*), SUM(CASE WHEN COALESCE(json_extract(data, '$.exit_code'), 0) != 0"
                " THEN 1 ELSE 0 END) FROM events WHERE session_id = ? AND kind = 'command'",
                (session_id,),
            ).fetchone()
        files: dict[str, dict[str, Any]] = {}
        for kind, path, rel, external, op, n, first, last in rows:
            f = files.setdefault(
                path,
                {
                    "path": path,
                    "rel_path": rel,
                    "external": bool(external),
                    "reads": 0,
                    "edits": 0,
                    "ops": {},
                    "first_ts": first,
                    "last_ts": last,
                },
            )
            if kind == "read":
                f["reads"] += n
            else:
                f["edits"] += n
            f["ops"][op or kind] = f["ops"].get(op or kind, 0) + n
            f["first_ts"] = min(x for x in (f["first_ts"], first) if x) if (f["first_ts"] or first) else None
            f["last_ts"] = max(x for x in (f["last_ts"], last) if x) if (f["last_ts"] or last) else None
        out = sorted(files.values(), key=lambda f: f["path"])
        return {
            "session_id": session_id,
            "files": out,
            "read_files": sum(1 for f in out if f["reads"]),
            "edited_files": sum(1 for f in out if f["edits"]),
            "external_reads": sum(1 for f in out if f["reads"] and f["external"]),
            "commands": int(commands[0] or 0) if commands else 0,
            "failed_commands": int(commands[1] or 0) if commands else 0,
        }


def _event_page(since_id: int, session_id: str | None, kinds: Sequence[str] | None) -> Where:
    """The conditions every event listing starts with: after an id (paging), of a
    session, of some kinds."""
    where = Where()
    where.add("e.id > ?", since_id)
    if session_id:
        where.add("e.session_id = ?", session_id)
    where.kind_in(kinds)
    return where
