"""The names and SQL expressions the schema, the writer and the queries share: column
lists, the kinds with indexes of their own, and the expressions of expression indexes
(a query uses such an index only when it repeats the expression exactly)."""

from __future__ import annotations

# The sessions columns that SessionFacts fill (same names).
SESSION_FACT_FIELDS = (
    "cwd",
    "model",
    "started_at",
    "last_event_at",
    "title",
    "version",
    "originator",
    "source",
    "model_provider",
    "parent_session_id",
    "home",
    "spawned_as",
    "replayed_in",
    "own_record",
)

# The sessions columns that sum the usage events' counts (same names in their data).
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
    "total_tokens",
)

# What the usage aggregates (store/aggregates.py, store/usage_groups.py) sum of the
# requests' costs (usage_costs, schema 20), beside the token counts: the cost shown
# (nano-dollars: the agent's own where it reported one, else ours), our estimate, the
# tokens no price covers, and how many requests were estimated and reported (the rest
# of ``responses`` are unpriced, or not priced yet).
COST_FIELDS = (
    "cost_nusd",
    "est_nusd",
    "unpriced_tokens",
    "cost_estimated",
    "cost_reported",
)
# Their columns: added to tables that existed (ALTER TABLE ... ADD COLUMN needs a
# default), so written with one in the tables made at the current schema too.
COST_COLUMNS = ", ".join(f"{f} INTEGER NOT NULL DEFAULT 0" for f in COST_FIELDS)

# The kinds with a partial index of their own (schema 2, and 8 for reads, edits, usage
# and prompts): queried across all sessions.
PARTIAL_INDEXED_KINDS = frozenset(
    {"command", "secret", "sensitive_read", "read", "edit", "usage", "prompt"}
)

# The last name of an event's path (after its last / or \\, trailing separators and dots
# left out), in SQL: the expression of events_path_tails (schema 10), which a query must
# repeat exactly to use that index. rtrim(t, <every character of t but the separators>)
# leaves t up to its last separator.
_TRIMMED = "rtrim(path, '/\\.')"
PATH_TAIL = (
    f"substr({_TRIMMED}, length(rtrim({_TRIMMED},"
    f" replace(replace({_TRIMMED}, '/', ''), '\\', ''))) + 1)"
)
# A failed command (commands.list failed=true), the WHERE of events_failed_commands.
COMMAND_FAILED = (
    "(COALESCE(json_extract(data, '$.exit_code'), 0) != 0"
    " OR json_extract(data, '$.interrupted') = 1"
    " OR json_extract(data, '$.is_error') = 1)"
)


def command_failed(payload: object) -> bool:
    """COMMAND_FAILED in Python, on a command's data as parsed from its JSON: a session's
    ``failed_commands`` counts the commands it holds that SQL condition matches (schema
    21), so the two agree value for value (tests/test_vocabulary.py), JSON's true being
    SQL's 1 and any text or list differing from 0."""
    if not isinstance(payload, dict):
        return False
    code = payload.get("exit_code")
    return (code is not None and code != 0) or payload.get("interrupted") == 1 \
        or payload.get("is_error") == 1

# The project filters (schema 13, store/migrations/chunked.py's PROJECT_INDEXES): the
# last characters of an event's session id, the kinds that carry a project root of
# their own, and that root.
SESSION_TAIL = "substr(session_id, -8)"
PROJECT_KINDS = ("read", "edit", "command")
PROJECT_ROOT = "json_extract(data, '$.project_root')"

# A session's or an adapter's key by its text, in SQL (NULL for one not stored).
SESSION_KEY_OF = "(SELECT key FROM session_keys WHERE id = ?)"
ADAPTER_KEY_OF = "(SELECT key FROM adapter_keys WHERE id = ?)"
# The tables of the keys (schema 16), each (key INTEGER PRIMARY KEY, id TEXT NOT NULL
# UNIQUE).
KEY_TABLES = ("session_keys", "turn_keys", "adapter_keys")
