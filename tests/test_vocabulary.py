"""store/vocabulary.py's Python twins of its SQL conditions agree with them on any
JSON: ``command_failed`` decides what a session's ``failed_commands`` counts at ingest,
COMMAND_FAILED what ``commands.list failed=true`` lists and what the migration counted."""

from __future__ import annotations

from typing import Any

import apsw
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.store.vocabulary import COMMAND_FAILED, command_failed

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["", "0", "1", "abc"]),
)
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=2),
                    st.dictionaries(st.sampled_from(["a", "b"]), _SCALARS, max_size=2))
_PAYLOADS = st.dictionaries(
    st.sampled_from(["exit_code", "interrupted", "is_error", "command"]), _VALUES, max_size=4)

_CONN = apsw.Connection(":memory:")


def _sql_says(payload: Any) -> bool:
    (row,) = _CONN.execute(f"SELECT {COMMAND_FAILED} FROM (SELECT ? AS data)",
                           (orjson.dumps(payload).decode(),))
    return bool(row[0])


@settings(max_examples=400, deadline=None)
@given(_PAYLOADS)
def test_command_failed_is_the_sql_condition(payload: dict[str, Any]) -> None:
    assert command_failed(orjson.loads(orjson.dumps(payload))) is _sql_says(payload)


def test_command_failed_on_the_usual_commands() -> None:
    assert [command_failed(p) for p in (
        {"exit_code": 0}, {"exit_code": 2}, {"exit_code": None}, {}, {"interrupted": True},
        {"exit_code": 0, "is_error": True}, {"is_error": False}, {"exit_code": False}, [1],
    )] == [False, True, False, False, True, True, False, False, False]
