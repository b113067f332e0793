"""Pages of events: the events of a session or of some kinds, the files read and
edited, the commands, the secret findings, the memory documents, and what one session
read and changed. Each in the caller's read transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import orjson

from ..batch import event_row_to_json
from ..vocabulary import PROJECT_KINDS
from ..where import E_COMMAND_FAILED, PATH_EQUALS, Where
from ..where import finding_path_filter as _finding_path_filter

EVENT_COLUMNS = (
    "e.id, e.session_id, e.kind, e.ts, e.turn_id, e.tool, e.call_id, e.subagent_id,"
    " e.adapter, s.path, e.offset, e.data"
)

# Newest first is by the time an event happened (ids are commit order: a backfill of old
# transcripts commits old events late), ties by id; an event without a time comes last.
NEWEST_FIRST = "COALESCE(e.ts, '') DESC, e.id DESC"


def _finding_path(path: str) -> tuple[Any, ...]:
    condition, args = _finding_path_filter(path)
    return (condition, *args)


def events(
    conn: apsw.Connection,
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
        where.add(PATH_EQUALS, path)
    if path_glob:
        where.add("e.path GLOB ?", path_glob)
    if call_id:
        where.add("e.call_id = ?", call_id)
    return _events(conn, where, limit)


def _events(
    conn: apsw.Connection, where: Where, limit: int, newest_first: bool = False
) -> list[dict[str, Any]]:
    rows = f"SELECT {EVENT_COLUMNS} FROM events e JOIN sources s ON s.id = e.source_id"
    if not newest_first and PATH_EQUALS in where.conditions:
        # A path's events oldest first: the page's ids first, from events_path_times (the
        # path and the kind, the id at the end of each entry: a path's ids sorted, not its
        # rows), then those rows. With the rows read to sort them, 12,512 edits of one
        # path took 40-60 ms at 10 million events; an index of the path alone in id order
        # (events_path, until schema 24) was 83 MB more.
        sql = (f"{rows} WHERE e.id IN (SELECT e.id FROM events e{where.sql()}"
               " ORDER BY e.id LIMIT ?) ORDER BY e.id")
    else:
        sql = f"{rows}{where.sql()} ORDER BY {NEWEST_FIRST if newest_first else 'e.id'} LIMIT ?"
    return [event_row_to_json(r) for r in conn.execute(sql, [*where.args, limit])]


def file_events(
    conn: apsw.Connection,
    kind: str,
    path: str | None,
    *,
    session_id: str | None = None,
    agent: str | None = None,
    project: str | None = None,
    since_ts: str | None = None,
    since_id: int = 0,
    limit: int = 100,
    before_id: int | None = None,
    newest_first: bool = False,
) -> list[dict[str, Any]]:
    where = _event_page(since_id, session_id, [kind], before_id, newest_first)
    if project and _by_project_arms(kind, session_id, path, newest_first):
        where.scope(agent=agent, since_ts=since_ts)
        return _project_events(conn, where, kind, project, limit)
    where.scope(agent=agent, project=project, since_ts=since_ts)
    where.path_matches(path)
    return _events(conn, where, limit, newest_first)


def commands(
    conn: apsw.Connection,
    *,
    session_id: str | None = None,
    project: str | None = None,
    failed: bool | None = None,
    exit_code: int | None = None,
    since_ts: str | None = None,
    since_id: int = 0,
    limit: int = 100,
    before_id: int | None = None,
    newest_first: bool = False,
) -> list[dict[str, Any]]:
    where = _event_page(since_id, session_id, ["command"], before_id, newest_first)
    arms = bool(project) and _by_project_arms("command", session_id, None, newest_first)
    where.scope(project=None if arms else project, since_ts=since_ts)
    if failed is True:
        where.add(E_COMMAND_FAILED)  # the WHERE of events_failed_commands
    elif failed is False:
        where.add("json_extract(e.data, '$.exit_code') = 0")
    if exit_code is not None:
        where.add("json_extract(e.data, '$.exit_code') = ?", exit_code)
    if arms and project:
        return _project_events(conn, where, "command", project, limit)
    return _events(conn, where, limit, newest_first)


def _project_events(
    conn: apsw.Connection, where: Where, kind: str, project: str, limit: int
) -> list[dict[str, Any]]:
    """``_events`` oldest first with ``where`` and the events of ``project``: the
    first ``limit`` ids of each of Where.project_arms, and of those the first
    ``limit``."""
    by_session, session_args, by_root, root_args = where.project_arms(kind, project)
    sql = (
        f"SELECT {EVENT_COLUMNS} FROM events e JOIN sources s ON s.id = e.source_id"
        f" WHERE e.id IN (SELECT id FROM ({by_session}) UNION ALL SELECT id FROM ({by_root}))"
        " ORDER BY e.id LIMIT ?"
    )
    args = [*session_args, limit, *root_args, limit, limit]
    return [event_row_to_json(r) for r in conn.execute(sql, args)]


def documents(conn: apsw.Connection) -> list[dict[str, Any]]:
    """Memory files (Codex AGENTS.md and memories/, Claude project memory/): what
    and where, never their content."""
    names = ("path", "agent", "project", "size", "sha256", "gone_at", "updated_at")
    return [
        dict(zip(names, row, strict=True))
        for row in conn.execute(
            "SELECT path, agent, project, size, sha256, gone_at, updated_at"
            " FROM documents ORDER BY path"
        )
    ]


def findings(
    conn: apsw.Connection,
    *,
    session_id: str | None = None,
    path: str | None = None,
    secret_type: str | None = None,
    project: str | None = None,
    since_ts: str | None = None,
    since_id: int = 0,
    limit: int = 100,
    before_id: int | None = None,
    newest_first: bool = False,
) -> list[dict[str, Any]]:
    """Secret findings, newest last (or first): the JSON contract of a finding."""
    where = Where()
    where.kind_in(["secret"])
    where.add("e.id > ?", since_id)
    _before(where, before_id, newest_first)
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
        f" ORDER BY {NEWEST_FIRST if newest_first else 'e.id'} LIMIT ?"
    )
    names = ("id", "session_id", "ts", "turn_id", "call_id", "tool", "subagent_id", "path",
             "type", "line", "hash", "label", "of_kind", "event_id", "agent", "paths")
    out = [
        dict(zip(names, row, strict=True))
        for row in conn.execute(sql, [*where.args, limit])
    ]
    for f in out:
        # The candidate paths of a finding in the output of a call that read several
        # files; [path] (or []) otherwise.
        f["paths"] = orjson.loads(f["paths"]) if f["paths"] else (
            [f["path"]] if f["path"] else []
        )
    return out


def session_files(conn: apsw.Connection, session_id: str) -> dict[str, Any]:
    """Everything one session read and changed, one row per path, with counts."""
    rows = list(
        conn.execute(
            "SELECT e.kind, e.path, json_extract(e.data, '$.rel_path'),"
            " json_extract(e.data, '$.external'), json_extract(e.data, '$.op'),"
            " COUNT(*), MIN(e.ts), MAX(e.ts) FROM events e"
            " WHERE e.session_id = ? AND e.kind IN ('read', 'edit') AND e.path IS NOT NULL"
            " GROUP BY e.kind, e.path, json_extract(e.data, '$.op')"
            " ORDER BY e.path",
            (session_id,),
        )
    )
    commands = conn.execute(
        "SELECT COUNT(*), SUM(CASE WHEN COALESCE(json_extract(data, '$.exit_code'), 0) != 0"
        " THEN 1 ELSE 0 END) FROM events WHERE session_id = ? AND kind = 'command'",
        (session_id,),
    ).fetchone()
    out = _files_of(rows)
    return {
        "session_id": session_id,
        "files": out,
        "read_files": sum(1 for f in out if f["reads"]),
        "edited_files": sum(1 for f in out if f["edits"]),
        "external_reads": sum(1 for f in out if f["reads"] and f["external"]),
        "commands": int(commands[0] or 0) if commands else 0,
        "failed_commands": int(commands[1] or 0) if commands else 0,
    }


def _files_of(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """session_files' rows (kind, path, op) as one entry per path, by path."""
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
    return sorted(files.values(), key=lambda f: f["path"])


def _by_project_arms(
    kind: str, session_id: str | None, path: str | None, newest_first: bool
) -> bool:
    """Whether a page with a project filter is read by its two arms (Where.project_arms):
    oldest first, of a kind they index, with no session or path (whose indexes narrow
    more than the project's arms, and with the project's OR are pages as before).
    Newest first is as before: the kind's time index, testing each event."""
    return kind in PROJECT_KINDS and not session_id and not path and not newest_first


def _event_page(
    since_id: int,
    session_id: str | None,
    kinds: Sequence[str] | None,
    before_id: int | None = None,
    newest_first: bool = False,
) -> Where:
    """The conditions every event listing starts with: after an id (paging forward),
    before one (see ``_before``), of a session, of some kinds."""
    where = Where()
    if not newest_first:
        where.add("e.id > ?", since_id)
    elif since_id:
        # Not a range of ids (the unary +): newest first is a walk of a time index, and
        # with a range of ids SQLite reads a path's events by id and sorts them all
        # (events_path, not events_path_times: 55-82 ms for 12,512 edits of a path).
        where.add("+e.id > ?", since_id)
    _before(where, before_id, newest_first)
    if session_id:
        where.add("e.session_id = ?", session_id)
    where.kind_in(kinds)
    return where


def _before(where: Where, before_id: int | None, newest_first: bool) -> None:
    """Events before ``before_id``: a smaller id oldest first; newest first, the events
    after it in NEWEST_FIRST order (an older time, or the same time and a smaller id),
    so that the last id of a page is the cursor of the next one."""
    if before_id is None:
        return
    if not newest_first:
        where.add("e.id < ?", before_id)
        return
    # "At or before that time, and before it or a smaller id": the first term is a range
    # of events_by_time (an OR alone, or a row value, is a walk from the index's end).
    at = "(SELECT COALESCE(ts, '') FROM events WHERE id = ?)"
    where.add(
        f"COALESCE(e.ts, '') <= {at} AND (COALESCE(e.ts, '') < {at} OR e.id < ?)",
        before_id,
        before_id,
        before_id,
    )
