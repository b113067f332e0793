"""The usage aggregate (``agg_usage``, store/aggregates.py) summed per grouping, kept by
triggers on it, so that ``usage.summary`` without filters reads a few dozen rows where
it counted the distinct sessions of every usage key (about 30,000 at 10 million events:
five sorts of them, 250-300 ms; see docs/performance.md, "Reports at 10 million events").

Two tables:

* ``agg_usage_by`` (dimension, value, session): how many usage keys of that session
  have that value, and their sums. The dimensions are ``day``, ``adapter`` (the agent),
  ``model`` (the key's own model, ``NONE`` when the event had none) and ``session`` (value
  ``NONE``: one row per session, its sums).
* ``agg_usage_group`` (dimension, value): the number of sessions with that value (the
  rows above: a session counts once however many keys it has) and the sums.

The triggers run in the statement that changes ``agg_usage``, so in the writer's commit
transaction: an aggregate key inserted adds one to its rows here, a key's sums changing
moves the difference, a key deleted (``drop_empty``) takes one back; a row here at zero
keys is deleted, and a group at zero sessions. An update adds the new row's share
before it takes the old one out, so a row never passes through zero.

What depends on a session's model (for keys without one of their own) is not kept here:
a session's model may be set later than its events. The summary joins it at query time,
over the sessions' ``model`` rows with ``NONE`` (a few hundred).

A third table (schema 23), ``agg_usage_project``: the sessions' sums (their ``session``
rows above) by the session's project (``COALESCE(project_root, cwd)``, ``NONE`` with
neither), kept by triggers on agg_usage_by and on the sessions' project and cwd, which
move a session's sums when its project is set after its usage. Joined at query time it
was every session's row looked up and grouped (26,500 at 10 million events: 30 ms of
each unfiltered summary)."""

from __future__ import annotations

from typing import Any

import apsw

from .aggregates import NONE
from .vocabulary import COST_COLUMNS, COST_FIELDS, USAGE_FIELDS

# The sums kept per grouping: as the 11 -> 12 migration made them, and from schema 20
# with the requests' costs (COST_FIELDS, after them, where ALTER TABLE puts them).
_SUMS_12 = ("responses", *USAGE_FIELDS)
_SUMS = (*_SUMS_12, *COST_FIELDS)
_SUM_COLUMNS = ", ".join(f"{f} INTEGER NOT NULL" for f in _SUMS_12)


def _tables(costs: bool) -> str:
    cost_columns = f"\n    {COST_COLUMNS}," if costs else ""
    return f"""
CREATE TABLE IF NOT EXISTS agg_usage_by (
    dim TEXT NOT NULL,     -- day, adapter, model, session
    value NOT NULL,        -- no affinity: the key's value as agg_usage holds it
    session_id TEXT NOT NULL,
    keys INTEGER NOT NULL, -- agg_usage keys of the session with this value
    {_SUM_COLUMNS},{cost_columns}
    PRIMARY KEY (dim, value, session_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agg_usage_group (
    dim TEXT NOT NULL,
    value NOT NULL,
    sessions INTEGER NOT NULL,
    {_SUM_COLUMNS},{cost_columns}
    PRIMARY KEY (dim, value)
) WITHOUT ROWID;
"""


TABLES = _tables(costs=True)

# (dimension, the value in a row of agg_usage named {r}).
_DIMENSIONS = (("day", "{r}.day"), ("adapter", "{r}.adapter"), ("model", "{r}.model"),
               ("session", NONE))


def _key(dim: str, value: str, r: str) -> str:
    return f"dim = '{dim}' AND value = {value.format(r=r)} AND session_id = {r}.session_id"


def _add(r: str, sums: tuple[str, ...]) -> str:
    """Statements adding the share of agg_usage's row ``r`` (NEW or OLD)."""
    return "".join(
        f"INSERT INTO agg_usage_by(dim, value, session_id, keys, {', '.join(sums)})"
        f" VALUES ('{dim}', {value.format(r=r)}, {r}.session_id, 1,"
        f" {', '.join(f'{r}.{f}' for f in sums)})"
        " ON CONFLICT DO UPDATE SET keys = keys + 1, "
        + ", ".join(f"{f} = {f} + excluded.{f}" for f in sums) + "; "
        for dim, value in _DIMENSIONS
    )


def _remove(r: str, sums: tuple[str, ...]) -> str:
    return "".join(
        "UPDATE agg_usage_by SET keys = keys - 1, "
        + ", ".join(f"{f} = {f} - {r}.{f}" for f in sums)
        + f" WHERE {_key(dim, value, r)};"
        f" DELETE FROM agg_usage_by WHERE {_key(dim, value, r)} AND keys <= 0; "
        for dim, value in _DIMENSIONS
    )


def _move(sums: tuple[str, ...]) -> str:
    """An update keeping the key (the upserts'): its rows take the difference."""
    return "".join(
        "UPDATE agg_usage_by SET "
        + ", ".join(f"{f} = {f} + NEW.{f} - OLD.{f}" for f in sums)
        + f" WHERE {_key(dim, value, 'NEW')}; "
        for dim, value in _DIMENSIONS
    )


_SAME_KEY = " AND ".join(
    f"NEW.{c} IS OLD.{c}" for c in ("session_id", "model", "day", "adapter", "project")
)
_GROUP = "dim = {r}.dim AND value = {r}.value"
# The triggers' names (schema 20 drops them and makes them again with the costs).
TRIGGER_NAMES = ("agg_usage_by_insert", "agg_usage_by_update", "agg_usage_by_rekey",
                 "agg_usage_by_delete", "agg_usage_group_insert", "agg_usage_group_update",
                 "agg_usage_group_delete")


def _triggers(sums: tuple[str, ...]) -> str:
    return f"""
CREATE TRIGGER IF NOT EXISTS agg_usage_by_insert AFTER INSERT ON agg_usage BEGIN
    {_add('NEW', sums)}
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_by_update AFTER UPDATE ON agg_usage WHEN {_SAME_KEY} BEGIN
    {_move(sums)}
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_by_rekey AFTER UPDATE ON agg_usage WHEN NOT ({_SAME_KEY}) BEGIN
    {_add('NEW', sums)}{_remove('OLD', sums)}
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_by_delete AFTER DELETE ON agg_usage BEGIN
    {_remove('OLD', sums)}
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_group_insert AFTER INSERT ON agg_usage_by BEGIN
    INSERT INTO agg_usage_group(dim, value, sessions, {', '.join(sums)})
    VALUES (NEW.dim, NEW.value, 1, {', '.join(f'NEW.{f}' for f in sums)})
    ON CONFLICT DO UPDATE SET sessions = sessions + 1,
    {', '.join(f'{f} = {f} + excluded.{f}' for f in sums)};
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_group_update AFTER UPDATE ON agg_usage_by BEGIN
    UPDATE agg_usage_group SET {', '.join(f'{f} = {f} + NEW.{f} - OLD.{f}' for f in sums)}
    WHERE {_GROUP.format(r='NEW')};
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_group_delete AFTER DELETE ON agg_usage_by BEGIN
    UPDATE agg_usage_group SET sessions = sessions - 1,
    {', '.join(f'{f} = {f} - OLD.{f}' for f in sums)}
    WHERE {_GROUP.format(r='OLD')};
    DELETE FROM agg_usage_group WHERE {_GROUP.format(r='OLD')} AND sessions <= 0;
END;
"""


TRIGGERS = _triggers(_SUMS)


# The sessions' sums by project (schema 23).
_PROJECT_OF = "COALESCE({r}.project_root, {r}.cwd, " + NONE + ")"
_SESSION_PROJECT = ("COALESCE((SELECT COALESCE(s.project_root, s.cwd) FROM sessions s"
                    " WHERE s.id = {r}.session_id), " + NONE + ")")
_SESSION_ROW = "b.dim = 'session' AND b.value = " + NONE + " AND b.session_id = {sid}"
PROJECT_TABLE = f"""
CREATE TABLE IF NOT EXISTS agg_usage_project (
    project NOT NULL,      -- the sessions' COALESCE(project_root, cwd), NONE for neither
    sessions INTEGER NOT NULL,
    {_SUM_COLUMNS},
    {COST_COLUMNS},
    PRIMARY KEY (project)
) WITHOUT ROWID;
"""


def _project_add(project: str, values: str, where: str = "") -> str:
    """Add a session's sums (``values``: its sums' expressions, or a SELECT of them
    FROM ``where``) to ``project``."""
    head = f"INSERT INTO agg_usage_project(project, sessions, {', '.join(_SUMS)})"
    if where:
        body = f" SELECT {project}, 1, {values} FROM {where}"
    else:
        body = f" VALUES ({project}, 1, {values})"
    return (head + body + " ON CONFLICT DO UPDATE SET sessions = sessions + 1, "
            + ", ".join(f"{f} = {f} + excluded.{f}" for f in _SUMS) + "; ")


def _project_take(project: str, sid: str, r: str | None) -> str:
    """Take a session's sums (of the row ``r``, or its session row read) out of
    ``project``; a project at no session goes."""
    if r is None:
        sums = ", ".join(f"{f} = {f} - (SELECT b.{f} FROM agg_usage_by b"
                         f" WHERE {_SESSION_ROW.format(sid=sid)})" for f in _SUMS)
        where = (f"project = {project} AND EXISTS (SELECT 1 FROM agg_usage_by b"
                 f" WHERE {_SESSION_ROW.format(sid=sid)})")
    else:
        sums = ", ".join(f"{f} = {f} - {r}.{f}" for f in _SUMS)
        where = f"project = {project}"
    return (f"UPDATE agg_usage_project SET sessions = sessions - 1, {sums} WHERE {where}; "
            f"DELETE FROM agg_usage_project WHERE project = {project} AND sessions <= 0; ")


PROJECT_TRIGGERS = f"""
CREATE TRIGGER IF NOT EXISTS agg_usage_project_insert AFTER INSERT ON agg_usage_by
WHEN NEW.dim = 'session' BEGIN
    {_project_add(_SESSION_PROJECT.format(r='NEW'), ', '.join(f'NEW.{f}' for f in _SUMS))}
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_project_update AFTER UPDATE ON agg_usage_by
WHEN NEW.dim = 'session' BEGIN
    UPDATE agg_usage_project SET {', '.join(f'{f} = {f} + NEW.{f} - OLD.{f}' for f in _SUMS)}
    WHERE project = {_SESSION_PROJECT.format(r='NEW')};
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_project_delete AFTER DELETE ON agg_usage_by
WHEN OLD.dim = 'session' BEGIN
    {_project_take(_SESSION_PROJECT.format(r='OLD'), 'OLD.session_id', 'OLD')}
END;
CREATE TRIGGER IF NOT EXISTS agg_usage_project_moved AFTER UPDATE OF project_root, cwd ON sessions
WHEN {_PROJECT_OF.format(r='OLD')} IS NOT {_PROJECT_OF.format(r='NEW')} BEGIN
    {_project_take(_PROJECT_OF.format(r='OLD'), 'NEW.id', None)}
    {_project_add(_PROJECT_OF.format(r='NEW'), ', '.join(f'b.{f}' for f in _SUMS),
                  'agg_usage_by b WHERE ' + _SESSION_ROW.format(sid='NEW.id'))}
END;
"""

# The projects' sums from the sessions' rows as they stand (schema 23's fill, a refill).
FILL_PROJECTS = (
    f"INSERT INTO agg_usage_project(project, sessions, {', '.join(_SUMS)})"
    f" SELECT {_PROJECT_OF.format(r='ss')}, COUNT(*), {', '.join(f'SUM(b.{f})' for f in _SUMS)}"
    " FROM agg_usage_by b LEFT JOIN sessions ss ON ss.id = b.session_id"
    f" WHERE b.dim = 'session' AND b.value = {NONE} GROUP BY 1; "
)


def _fill(sums: tuple[str, ...]) -> str:
    """The fill from agg_usage as it stands: each dimension's rows at once;
    agg_usage_group follows by its trigger."""
    return "".join(
        f"INSERT INTO agg_usage_by(dim, value, session_id, keys, {', '.join(sums)})"
        f" SELECT '{dim}', {value.format(r='u')}, u.session_id, COUNT(*),"
        f" {', '.join(f'SUM(u.{f})' for f in sums)} FROM agg_usage u GROUP BY 2, 3; "
        for dim, value in _DIMENSIONS
    )


def begin_fill(conn: apsw.Connection) -> None:
    """The 11 -> 12 migration's first transaction (run again by a resumed one): the
    tables and the triggers as they were at 12, from which on the writer keeps them
    (schema 20 adds the costs)."""
    conn.execute(_tables(costs=False))
    conn.execute(_triggers(_SUMS_12))
    conn.execute(
        "INSERT OR IGNORE INTO counters(name, value) VALUES ('usage_groups_target', 1),"
        " ('usage_groups_done', 0)"
    )


def fill_step(conn: apsw.Connection, after: int, upto: int) -> None:
    """The one step: every row from agg_usage (30,000 keys at 10 million events)."""
    conn.execute("DELETE FROM agg_usage_group; DELETE FROM agg_usage_by;")
    conn.execute(_fill(_SUMS_12))


def refill(conn: apsw.Connection) -> None:
    """The groupings computed again from agg_usage as it stands, costs included (what
    the triggers keep; tests compare the two)."""
    conn.execute("DELETE FROM agg_usage_group; DELETE FROM agg_usage_by;"
                 " DELETE FROM agg_usage_project;")
    conn.execute(_fill(_SUMS))
    conn.execute("DELETE FROM agg_usage_project; " + FILL_PROJECTS)


# Schema 19 (store/migrations/versions.py assembles it): the triggers dropped while the
# costs' columns are added and filled, then made again with them.
DROP_TRIGGERS = "".join(f"DROP TRIGGER IF EXISTS {name}; " for name in TRIGGER_NAMES)
ADD_COSTS = "".join(
    f"ALTER TABLE {table} ADD COLUMN {column}; "
    for table in ("agg_usage_by", "agg_usage_group") for column in COST_COLUMNS.split(", ")
)


def finish_fill(conn: apsw.Connection) -> None:
    conn.execute("DELETE FROM counters WHERE name IN ('usage_groups_done', 'usage_groups_target')")


def summary_rows(conn: apsw.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """The unfiltered summary's rows: per grouping (total, day, agent, model, project)
    its (key, sessions, responses, *sums), as reports.usage_summary's queries over
    agg_usage gave them. Model: the keys' own models from the groups; the keys without
    one count under their session's model, a session once per model (not again when it
    has keys of that model of its own)."""
    sums = ", ".join(_SUMS)
    grouped: dict[str, list[tuple[Any, ...]]] = {"total": [], "day": [], "agent": [], "model": []}
    dims = {"session": "total", "day": "day", "adapter": "agent", "model": "model"}
    for dim, value, sessions, *rest in conn.execute(
        f"SELECT dim, NULLIF(value, {NONE}), sessions, {sums} FROM agg_usage_group"
        f" WHERE dim IN ('session', 'day', 'adapter') OR (dim = 'model' AND value != {NONE})"
    ):
        grouped[dims[dim]].append((value, sessions, *rest))
    models = {row[0]: list(row) for row in grouped["model"]}
    # The sessions' rows of keys without a model, by the session's model: +ss.model has
    # no affinity (the comparison with value is by type, as GROUP BY is).
    for model, sessions, *rest in conn.execute(
        "SELECT ss.model, SUM(NOT EXISTS (SELECT 1 FROM agg_usage_by e WHERE e.dim = 'model'"
        " AND e.value = +ss.model AND e.session_id = b.session_id)),"
        f" {', '.join(f'SUM(b.{f})' for f in _SUMS)} FROM agg_usage_by b"
        " LEFT JOIN sessions ss INDEXED BY sessions_report ON ss.id = b.session_id"
        f" WHERE b.dim = 'model' AND b.value = {NONE} GROUP BY 1"
    ):
        have = models.setdefault(model, [model, 0] + [0] * len(_SUMS))
        have[1:] = [a + b for a, b in zip(have[1:], [sessions, *rest], strict=True)]
    grouped["model"] = [tuple(row) for row in models.values()]
    grouped["project"] = list(conn.execute(
        f"SELECT NULLIF(project, {NONE}), sessions, {sums} FROM agg_usage_project"))
    return grouped
