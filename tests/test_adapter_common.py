"""The one reading of an untyped JSON number as an integer (adapters/common.py), and the
call sites in the adapters that share it."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsrc_daemon.adapters import claude, codex, common
from agentsrc_daemon.adapters.common import as_int, seconds_to_ms


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (7, 7),
        (-1, -1),
        (2**64 - 1, 2**64 - 1),  # an int is kept as written
        (2**64, None),  # orjson cannot write it (a line over 4 MiB parsed by the stdlib)
        (-(2**63) - 1, None),
        (True, None),
        (False, None),
        (2.0, 2),
        (41.6, 42),
        (41.4, 41),
        (2.5, 2),  # halves to even, as round() does
        (3.5, 4),
        (-1.6, -2),
        (9.2e18, 9_200_000_000_000_000_000),
        (1e19, None),  # past 64 bits: not storable
        (-1e19, None),
        (float("inf"), None),
        (float("-inf"), None),
        (float("nan"), None),
        ("7", None),
        (None, None),
        ([1], None),
    ],
)
def test_as_int(value: Any, expected: int | None) -> None:
    assert as_int(value) == expected


@pytest.mark.parametrize(
    ("seconds", "ms"),
    [
        (2, 2000),
        (1.25, 1250),
        (0.0416, 42),
        (1e300, None),
        (True, None),
        ("1", None),
        (None, None),
    ],
)
def test_seconds_to_ms(seconds: Any, ms: int | None) -> None:
    assert seconds_to_ms(seconds) == ms


def test_claude_results_use_the_shared_rule() -> None:
    # Both were different before: a float exit code was dropped, seconds were truncated.
    assert claude._exit_code({"exitCode": 1.0}) == 1
    assert claude._duration_ms({"durationSeconds": 0.0416}) == 42
    assert claude._duration_ms({"durationMs": 12.5, "durationSeconds": 3}) == 12
    assert claude._duration_ms({"durationMs": "12", "totalDurationMs": 40}) == 40


def test_codex_outputs_use_the_shared_rule() -> None:
    # A float exit code was truncated (2) before.
    shell = codex.parse_tool_output(
        '{"output":"x","metadata":{"exit_code":2.7,"duration_seconds":1.25}}'
    )
    assert (shell.exit_code, shell.duration_ms) == (3, 1250)
    # A wall time too long for a float raised OverflowError before.
    text = codex.parse_tool_output(f"Exit code: 0\nWall time: {'9' * 400} seconds\nOutput:\nx")
    assert (text.text, text.exit_code, text.duration_ms) == ("x", 0, None)


def _normalize_ts_reference(value: Any) -> str | None:
    """common._normalize_ts before its string branch went first (the reference)."""
    from datetime import UTC, datetime

    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if seconds > 1e11:
            seconds /= 1000.0
        dt = datetime.fromtimestamp(seconds, tz=UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        if s.isascii() and s.isdigit():
            return _normalize_ts_reference(int(s))
        if len(s) == 24 and s[19] == "." and s.endswith("Z"):
            return s
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return s
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        dt = dt.astimezone(UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return None


def _outcome(fn: Any, value: Any) -> Any:
    try:
        return ("ok", fn(value))
    except Exception as exc:  # the same exception type on the same input
        return ("raised", type(exc))


_TS_CHARS = st.sampled_from(list("0123456789-:TZ.+ \t\u3000\u00b2x"))


@given(value=st.one_of(
    st.text(_TS_CHARS, min_size=22, max_size=26),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"),
    st.text(max_size=30), st.integers(), st.floats(), st.none(), st.booleans(),
).flatmap(lambda v: st.sampled_from([v, f" {v}", f"{v} ", f"\u3000{v}"]) if isinstance(v, str)
          else st.just(v)))
def test_normalize_ts_fast_path_agrees_with_the_reference(value: Any) -> None:
    assert _outcome(common._normalize_ts, value) == _outcome(_normalize_ts_reference, value)


def _as_int_reference(value: Any) -> int | None:
    """as_int before its fast path for a plain int (the reference)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if common.INT64_MIN <= value <= common.UINT64_MAX else None
    if isinstance(value, float) and math.isfinite(value):
        rounded = round(value)
        return rounded if common.INT64_MIN <= rounded <= common.INT64_MAX else None
    return None


@given(value=st.one_of(st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
                       st.booleans(), st.floats(), st.text(max_size=3), st.none()))
def test_as_int_fast_path_agrees_with_the_reference(value: Any) -> None:
    assert as_int(value) == _as_int_reference(value)
    assert type(as_int(value)) is type(_as_int_reference(value))
