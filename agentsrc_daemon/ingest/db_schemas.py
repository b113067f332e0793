"""The agents' databases as ``ingest/agent_db.py`` reads them: for each agent that keeps
its sessions in SQLite, the tables polled, their columns, their time column and unit,
and what a row carries of its neighbours. Pure data and two small SQL builders; the
adapters (``parse_rows``) read the rows these describe.

* OpenCode 1.2 and later (``opencode.db``; packages/opencode/src/session in
  sst/opencode): ``session``, ``message``, ``part``, JSON objects in ``data``, times in
  milliseconds. A message or part row carries its session's directory and version; a
  part carries its message's role, parent, model, provider, cwd, times and summary flag.
* Crush (``<project>/.crush/crush.db``; internal/db/migrations in charmbracelet/crush):
  ``sessions`` (title, message_count, prompt_tokens, completion_tokens, cost, parent,
  summary message) and ``messages`` (role, ``parts``: a JSON list of ``{type, data}``,
  model, provider, finished_at, is_summary_message). The migrations say the times are
  milliseconds; Crush writes ``strftime('%s', 'now')``, seconds: the unit is told from
  the values. ``files`` (whole file versions) and ``read_files`` are never read.
"""

from __future__ import annotations

from typing import Any

import orjson

from .agent_db import DbSchema, TableSpec

# What a part row carries of its message (the adapter needs the role, turn, model, cwd).
MESSAGE_CONTEXT_PATHS = (
    "$.role",
    "$.parentID",
    "$.modelID",
    "$.providerID",
    "$.path.cwd",
    "$.time.created",
    "$.time.completed",
    "$.summary",
)


def _opencode_context_sql(
    schema: dict[str, tuple[str, ...] | None], table: str, t: str
) -> tuple[list[str], str]:
    """A message's or part's session directory and version; a part's message context."""
    select: list[str] = []
    joins = ""
    session_cols = schema.get("session") or ()
    if session_cols:
        select += [
            "s.directory" if "directory" in session_cols else "NULL",
            "s.version" if "version" in session_cols else "NULL",
        ]
        joins += f" LEFT JOIN session s ON s.id = {t}.session_id"
    else:
        select += ["NULL", "NULL"]
    if table == "part" and "data" in (schema.get("message") or ()):
        paths = ", ".join(f"'{p}'" for p in MESSAGE_CONTEXT_PATHS)
        select.append(f"CASE WHEN json_valid(m.data) THEN json_extract(m.data, {paths}) END")
        joins += f" LEFT JOIN message m ON m.id = {t}.message_id"
    else:
        select.append("NULL")
    return select, joins


def _opencode_context_decode(row: dict[str, Any], values: list[Any]) -> None:
    directory, version, context = values
    row["session"] = {"directory": directory, "version": version}
    if context is not None and "message_id" in row:
        row["message"] = _message_context(context)


def _message_context(text: Any) -> dict[str, Any]:
    try:
        values = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return {}
    if not isinstance(values, list) or len(values) != len(MESSAGE_CONTEXT_PATHS):
        return {}
    role, parent, model, provider, cwd, created, completed, summary = values
    return {
        "role": role,
        "parentID": parent,
        "modelID": model,
        "providerID": provider,
        "path": {"cwd": cwd},
        "time": {"created": created, "completed": completed},
        "summary": summary is True or summary == 1,
    }


OPENCODE = DbSchema(
    tables=(
        TableSpec(
            "session",
            required=("id", "time_updated"),
            # Large or sensitive columns (summary_diffs, share, permission) never read.
            wanted=("id", "project_id", "workspace_id", "parent_id", "slug", "directory",
                    "title", "version", "time_created", "time_updated", "time_compacting",
                    "time_archived"),
            time="time_updated",
            fingerprint=("title", "directory", "version", "parent_id"),
        ),
        TableSpec(
            "message",
            required=("id", "session_id", "time_updated", "data"),
            wanted=("id", "session_id", "time_created", "time_updated", "data"),
            time="time_updated",
            json="data",
            context_sql=lambda schema, t: _opencode_context_sql(schema, "message", t),
            context_decode=_opencode_context_decode,
        ),
        TableSpec(
            "part",
            required=("id", "message_id", "session_id", "time_updated", "data"),
            wanted=("id", "message_id", "session_id", "time_created", "time_updated", "data"),
            time="time_updated",
            json="data",
            context_sql=lambda schema, t: _opencode_context_sql(schema, "part", t),
            context_decode=_opencode_context_decode,
        ),
    ),
    # Sessions first (a prompt titles a session only once its placeholder title is
    # known), parts before messages (a compaction request's part says whether it was
    # automatic; the summary message that answers it has the same key).
    poll_order=("session", "part", "message"),
)

CRUSH = DbSchema(
    tables=(
        TableSpec(
            "sessions",
            required=("id", "updated_at"),
            # todos (the agent's to-do list) is never read.
            wanted=("id", "parent_session_id", "title", "message_count", "prompt_tokens",
                    "completion_tokens", "cost", "created_at", "updated_at",
                    "summary_message_id"),
            time="updated_at",
            fingerprint=("title", "message_count", "prompt_tokens", "completion_tokens",
                         "cost", "summary_message_id"),
            unit_ms=None,
        ),
        TableSpec(
            "messages",
            required=("id", "session_id", "role", "parts", "updated_at"),
            wanted=("id", "session_id", "role", "parts", "model", "provider", "created_at",
                    "updated_at", "finished_at", "is_summary_message"),
            time="updated_at",
            json="parts",
            json_type=list,
            unit_ms=None,
        ),
    ),
    # Sessions first: a message's session (its title, its parent) is known before it.
    poll_order=("sessions", "messages"),
)

# The database schema of each adapter whose sources are read in the sqlite mode.
SCHEMAS: dict[str, DbSchema] = {"opencode": OPENCODE, "crush": CRUSH}
