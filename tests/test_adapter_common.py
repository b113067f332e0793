"""The one reading of an untyped JSON number as an integer (adapters/common.py), and the
call sites in the adapters that share it."""

from __future__ import annotations

from typing import Any

import pytest

from agentsrc_daemon.adapters import claude, codex
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
