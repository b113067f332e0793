"""The ClickHouse schema, versioned: ``MIGRATIONS[i]`` brings a database from version i
to i+1, and ``agentsrc sink init`` (or the daemon, with ``auto_init``) applies what a
database lacks. Every step is idempotent, so two daemons initialising one database at
once do no harm.

Only what ClickHouse 18.16 (Debian's package, the oldest server supported) and current
releases both have: the MergeTree syntax with ORDER BY (not the old engine arguments),
ReplacingMergeTree with a version column, ``DateTime('UTC')``, Nullable outside keys, CREATE ... IF NOT
EXISTS. Not used: LowCardinality (experimental in 18.16), DateTime64, CODEC, TTL, Map,
JSON functions in queries, ``ADD COLUMN IF NOT EXISTS`` (a later step adding a column
is an ``AddColumn``, which looks at system.columns first), JOIN (crashed 18.16 in a
test: the queries of docs/team.md use IN subqueries instead).

Deduplication: a row's identity is its sorting key, (host, user, key) for ``events``
and ``findings``, (host, user, session_id) for ``sessions``; of the rows of one
identity the highest ``version`` is kept: the sink's clock when it sent the row, so the
latest state sent wins (an event's data superseded by a higher revision, see
Event.revision; an event another session takes over, its time included; a session's
counters).
Merges collapse duplicates in the background, at their own pace: queries read
``FINAL`` (or argMax ... GROUP BY the key), as docs/team.md shows. The tables are not
partitioned: merges never cross partitions, and an event's time can change.
"""

from __future__ import annotations

from dataclasses import dataclass

from .http import ClickHouse, ClickHouseError

SCHEMA_TABLE = "agentsrc_schema"
UNKNOWN_TABLE = 60
UNKNOWN_DATABASE = 81

_LABELS = "host String, user String"

EVENTS = f"""
CREATE TABLE IF NOT EXISTS {{db}}.events (
    {_LABELS},
    key String,
    id UInt64,
    session_id String,
    agent String,
    kind String,
    ts DateTime('UTC'),
    ts_ms UInt64,
    turn_id String,
    tool String,
    call_id String,
    subagent_id String,
    path String,
    rel_path String,
    project_root String,
    external UInt8,
    op String,
    command String,
    cwd String,
    exit_code Nullable(Int64),
    failed UInt8,
    interrupted UInt8,
    is_error UInt8,
    duration_ms UInt64,
    output_chars UInt64,
    model String,
    input_tokens UInt64,
    output_tokens UInt64,
    cache_read_tokens UInt64,
    cache_creation_tokens UInt64,
    reasoning_tokens UInt64,
    total_tokens UInt64,
    status String,
    error_type String,
    secret_type String,
    text String,
    text_chars UInt64,
    revision UInt64,
    version UInt64,
    pushed_at DateTime('UTC') DEFAULT now()
) ENGINE = ReplacingMergeTree(version)
ORDER BY (host, user, key)
"""

FINDINGS = f"""
CREATE TABLE IF NOT EXISTS {{db}}.findings (
    {_LABELS},
    key String,
    id UInt64,
    session_id String,
    agent String,
    ts DateTime('UTC'),
    ts_ms UInt64,
    turn_id String,
    call_id String,
    tool String,
    path String,
    secret_type String,
    hash String,
    line UInt64,
    label String,
    of_kind String,
    of_key String,
    revision UInt64,
    version UInt64,
    pushed_at DateTime('UTC') DEFAULT now()
) ENGINE = ReplacingMergeTree(version)
ORDER BY (host, user, key)
"""

SESSIONS = f"""
CREATE TABLE IF NOT EXISTS {{db}}.sessions (
    {_LABELS},
    session_id String,
    agent String,
    native_id String,
    cwd String,
    project_root String,
    model String,
    model_provider String,
    agent_version String,
    originator String,
    source String,
    parent_session_id String,
    title String,
    started_at DateTime('UTC'),
    last_event_at DateTime('UTC'),
    prompts UInt64,
    messages UInt64,
    tool_calls UInt64,
    compactions UInt64,
    errors UInt64,
    input_tokens UInt64,
    output_tokens UInt64,
    cache_read_tokens UInt64,
    cache_creation_tokens UInt64,
    reasoning_tokens UInt64,
    total_tokens UInt64,
    subagents UInt64,
    version UInt64,
    pushed_at DateTime('UTC') DEFAULT now()
) ENGINE = ReplacingMergeTree(version)
ORDER BY (host, user, session_id)
"""


@dataclass(frozen=True, slots=True)
class AddColumn:
    """A column added by a later version: 18.16 has no ADD COLUMN IF NOT EXISTS."""

    table: str
    name: str
    type: str


Step = str | AddColumn

# What a request or a session cost (issue 27; docs/usage.md): the dollars shown (null
# when nothing could be priced), their kind (estimated, reported, unpriced, mixed), our
# estimate where the agent reported its own, and the tokens no price covers.
_COSTS = (("cost_usd", "Nullable(Float64)"), ("cost_kind", "String"),
          ("estimated_usd", "Nullable(Float64)"), ("unpriced_tokens", "UInt64"))

MIGRATIONS: list[list[Step]] = [
    # 0 -> 1: the three tables
    [EVENTS, FINDINGS, SESSIONS],
    # 1 -> 2: costs, on usage events and sessions
    [AddColumn(table, name, kind) for table in ("events", "sessions") for name, kind in _COSTS],
]
SCHEMA_VERSION = len(MIGRATIONS)


def _version_table(db: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {db}.{SCHEMA_TABLE} (version UInt32,"
        " applied_at DateTime('UTC') DEFAULT now()) ENGINE = MergeTree ORDER BY version"
    )


def server_version(client: ClickHouse, db: str) -> int:
    """The schema version of ``db`` on the server: 0 when it has none."""
    try:
        out = client.query(f"SELECT max(version) FROM {db}.{SCHEMA_TABLE}")
    except ClickHouseError as exc:
        if exc.code in (UNKNOWN_TABLE, UNKNOWN_DATABASE):
            return 0
        raise
    text = out.decode().strip()
    return int(text) if text.isdigit() else 0


def _apply(client: ClickHouse, db: str, step: Step) -> None:
    if isinstance(step, AddColumn):
        have = client.query(
            f"SELECT count() FROM system.columns WHERE database = '{db}'"
            f" AND table = '{step.table}' AND name = '{step.name}'"
        )
        if have.decode().strip() == "0":
            client.query(f"ALTER TABLE {db}.{step.table} ADD COLUMN {step.name} {step.type}")
        return
    client.query(step.format(db=db))


def init(client: ClickHouse, db: str, migrations: list[list[Step]] | None = None) -> tuple[int, int]:
    """Create the database and bring its schema to the latest version. Returns the
    versions (before, after)."""
    migrations = MIGRATIONS if migrations is None else migrations
    client.query(f"CREATE DATABASE IF NOT EXISTS {db}")
    client.query(_version_table(db))
    found = server_version(client, db)
    for version in range(found, len(migrations)):
        for step in migrations[version]:
            _apply(client, db, step)
        client.query(f"INSERT INTO {db}.{SCHEMA_TABLE} (version) VALUES ({version + 1})")
    return found, max(found, len(migrations))
