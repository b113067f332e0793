"""The WHERE clauses of the store's queries: conditions ANDed in the order they are
added, each with the values it binds, and the event filters several queries share."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .vocabulary import (
    ADAPTER_KEY_OF,
    COMMAND_FAILED,
    PARTIAL_INDEXED_KINDS,
    PATH_TAIL,
    PROJECT_KINDS,
    PROJECT_ROOT,
    SESSION_KEY_OF,
)

_GLOB_CHARS = frozenset("*?[")
# An absolute path's filter: its pages oldest first read their ids first (queries/events).
PATH_EQUALS = "e.path = ?"

# vocabulary.PATH_TAIL and COMMAND_FAILED of the events aliased ``e``: the expressions of
# their indexes, repeated exactly (SQLite matches an indexed expression by its terms).
E_PATH_TAIL = re.sub(r"\bpath\b", "e.path", PATH_TAIL)
E_COMMAND_FAILED = re.sub(r"\bdata\b", "e.data", COMMAND_FAILED)
E_PROJECT_ROOT = re.sub(r"\bdata\b", "e.data", PROJECT_ROOT)
# The keys of a project's sessions (its project root or its cwd): a list SQLite builds
# once per statement.
PROJECT_SESSION_KEYS = (
    "(SELECT k.key FROM sessions ps JOIN session_keys k ON k.id = ps.id"
    " WHERE ps.project_root = ? OR ps.cwd = ?)"
)


@dataclass(slots=True)
class Where:
    """Conditions ANDed in the order they were added, and their values in that order.

    The event filters (``kind_in``, ``scope``, ``path_matches``) are written for the
    ``events`` view aliased ``e``, and read only the columns it shares with its
    ``event_rows`` (schema 16): a page by project reads the rows through an index. Like the RPC parameters they come from, an empty
    filter value (None, "") means no filter."""

    conditions: list[str] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)

    def add(self, condition: str, *args: Any) -> None:
        self.conditions.append(condition)
        self.args.extend(args)

    def copy(self) -> Where:
        return Where(list(self.conditions), list(self.args))

    def sql(self) -> str:
        """`` WHERE a AND b``, or nothing when there is no condition."""
        return f" WHERE {' AND '.join(self.conditions)}" if self.conditions else ""

    def kind_in(self, kinds: Sequence[str] | None) -> None:
        if kinds and len(kinds) == 1 and kinds[0] in PARTIAL_INDEXED_KINDS:
            # A literal, so SQLite can use that kind's partial index (it cannot match a
            # bound value to the index's WHERE). Safe: one of a fixed set of names.
            self.add(f"e.kind = '{kinds[0]}'")
        elif kinds:
            self.add(f"e.kind IN ({','.join('?' * len(kinds))})", *kinds)

    def scope(
        self,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        project: str | None = None,
        since_ts: str | None = None,
    ) -> None:
        """Events of one session, agent or project, at or after a time. An event is in a
        project when it says so (its ``project_root``: derived reads and edits) or when
        its session's project root or cwd is that project."""
        if session_id:
            self.add(f"e.session_key = {SESSION_KEY_OF}", session_id)
        if agent:
            self.add(f"e.adapter_key = {ADAPTER_KEY_OF}", agent)
        if project:
            # The session's project first: SQLite stops at the first true term of an OR,
            # and that one is a lookup in a list, the other unpacks the event's data.
            self.add(
                f"(e.session_key IN {PROJECT_SESSION_KEYS} OR {E_PROJECT_ROOT} = ?)",
                project,
                project,
                project,
            )
        if since_ts:
            self.add("e.ts >= ?", since_ts)

    def project_arms(self, kind: str, project: str) -> tuple[str, list[Any], str, list[Any]]:
        """The ids of a page of one kind's events in a project, oldest first, as two
        statements (SQL and values) whose rows together are those of this page with
        ``scope(project=...)``: each is in id order, so the page's first ``limit`` ids are
        among the first ``limit`` of each (both end with ``ORDER BY e.id LIMIT ?``).

        The events of the project's sessions walk the kind's events_<kind>s_by_session
        (schema 16: the id and the session's key), matching the key from the index: only
        a match is read from the table. The events that name the project in their data
        are a range of events_project_roots (named: with ``failed`` SQLite would rather
        walk the failed commands, unpacking each). An event in both arms is in the page
        once (``e.id IN``). Both read ``event_rows``: an index is named on a table, not
        on the view."""
        assert kind in PROJECT_KINDS, kind
        by_session = self.copy()
        by_session.add(f"e.session_key IN {PROJECT_SESSION_KEYS}", project, project)
        by_root = self.copy()
        by_root.add(f"{E_PROJECT_ROOT} = ?", project)
        return (
            "SELECT e.id FROM event_rows e"
            f" INDEXED BY events_{kind}s_by_session{by_session.sql()} ORDER BY e.id LIMIT ?",
            by_session.args,
            "SELECT e.id FROM event_rows e"
            f" INDEXED BY events_project_roots{by_root.sql()} ORDER BY e.id LIMIT ?",
            by_root.args,
        )

    def path_matches(self, path: str | None) -> None:
        if path:
            tail = relative_tail(path)
            if tail is not None:
                # Implied by path_filter's condition (see relative_tail), and an index
                # range (events_path_tails) where that condition is a walk of the kind.
                self.add(f"lower({E_PATH_TAIL}) = lower(?)", tail)
            condition, args = path_filter(path)
            self.add(condition, *args)


def finding_path_filter(path: str) -> tuple[str, list[Any]]:
    """``path_filter`` for findings: the finding's path, or one of its candidate
    ``paths`` (a finding in the output of a command that read several files)."""
    condition, args = path_filter(path)
    candidate = condition.replace("json_extract(e.data, '$.rel_path')", "NULL").replace(
        "e.path", "j.value"
    )
    return (
        f"({condition} OR EXISTS (SELECT 1 FROM json_each(e.data, '$.paths') j"
        f" WHERE {candidate}))",
        [*args, *args],
    )


def is_windows_style(path: str) -> bool:
    return (len(path) > 2 and path[1] == ":" and path[0].isalpha()) or path.lower().startswith(
        "/mnt/"
    )


def path_filter(path: str) -> tuple[str, list[Any]]:
    """SQL matching a path given as absolute, project-relative or glob. Windows-style
    paths (C:\\..., /mnt/c/...) match case-insensitively, as their filesystems do."""
    if any(c in _GLOB_CHARS for c in path):
        if path.startswith("/") or is_windows_style(path):
            return "(e.path GLOB ? OR lower(e.path) GLOB lower(?))", [path, path]
        return (
            "(json_extract(e.data, '$.rel_path') GLOB ? OR e.path GLOB ?)",
            [path, "*/" + path],
        )
    if path.startswith("/") or is_windows_style(path):
        if is_windows_style(path):
            return "lower(e.path) = lower(?)", [path]
        return PATH_EQUALS, [path]
    rel = path[2:] if path.startswith("./") else path
    return "(json_extract(e.data, '$.rel_path') = ? OR e.path LIKE ? ESCAPE '\\')", [
        rel,
        "%/" + rel.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),
    ]


def relative_tail(path: str) -> str | None:
    """The last name of a project-relative path (not a glob), which every path that
    path_filter matches for it ends with (ASCII case aside): its ``rel_path`` is the
    path's names under the project root, joined by "/"; or the path ends with "/" and
    it. None when that does not hold for the PATH_TAIL of the stored path: an absolute
    path or a glob; a last name that ends with a dot or a separator (".", "..", "x."),
    which PATH_TAIL trims."""
    if any(c in _GLOB_CHARS for c in path) or path.startswith("/") or is_windows_style(path):
        return None
    rel = path[2:] if path.startswith("./") else path
    name = re.split(r"[/\\]", rel)[-1]
    return name if name and not name.endswith(".") else None
