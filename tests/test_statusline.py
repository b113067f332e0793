"""``agentsrc statusline``'s pure parts: Claude Code's stdin JSON, the socket params,
the line (exact), the fallback, hostile text kept off the terminal (Hypothesis), and
that it imports neither typer nor the daemon."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.cli.statusline import (
    StatusInput,
    format_cost,
    format_fallback,
    format_left,
    format_line,
    parse_input,
    request_params,
)

NOW = datetime(2026, 12, 6, 11, 47, 0, tzinfo=UTC)
CLAUDE_JSON = {
    "hook_event_name": "Status",
    "session_id": "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06",
    "transcript_path": "/home/u/.claude/projects/p/e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06.jsonl",
    "cwd": "/home/u/p",
    "model": {"id": "claude-opus-4-6", "display_name": "Opus 4.6"},
    "workspace": {"current_dir": "/home/u/p", "project_dir": "/home/u/p"},
    "version": "2.1.92",
    "cost": {"total_cost_usd": 4.1234, "total_duration_ms": 45_000},
}
ANSWER = {
    "session": {"cost": {"usd": 4.086012, "kind": "estimated"}, "tokens": 3_473_302},
    "today": {"cost": {"usd": 12.8, "kind": "mixed", "unpriced_tokens": 900}, "tokens": 9},
    "block": {"start": "2026-12-06T09:00:00Z", "end": "2026-12-06T14:00:00Z",
              "cost": {"usd": 3.21, "kind": "estimated"}, "burn_usd_per_hour": 1.1,
              "projected": {"usd": 5.9, "kind": "estimated"}},
}


def test_claude_codes_json_is_read() -> None:
    assert parse_input(orjson.dumps(CLAUDE_JSON)) == StatusInput(
        "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06", "Opus 4.6", "/home/u/p", 4.1234
    )
    older = {"session_id": "s", "model": "claude-x", "workspace": {"current_dir": "/w"}}
    assert parse_input(orjson.dumps(older)) == StatusInput("s", "claude-x", "/w", None)
    for raw in (b"", b"  \n", b"[1]", b"{", b"null", b'{"model": {"id": 3}}'):
        assert parse_input(raw) == StatusInput()
    assert parse_input(b'{"cost": {"total_cost_usd": -1}}').own_cost_usd is None


def test_the_line() -> None:
    inp = parse_input(orjson.dumps(CLAUDE_JSON))
    assert format_line(inp, ANSWER, NOW) == (
        "Opus 4.6 · session $4.09 · today $12.80+ · block $3.21 (2h13m left, $1.10/h)"
    )
    # Not ingested yet: Claude Code's own figure, said to be its; no block running.
    answer = {"session": None, "today": {"cost": {"usd": 0, "kind": "estimated"}}, "block": None}
    assert format_line(inp, answer, NOW) == "Opus 4.6 · session $4.12 (Claude Code) · today $0.00"
    unpriced = {"session": {"cost": {"usd": None, "kind": "unpriced", "unpriced_tokens": 5}}}
    assert format_line(StatusInput(), unpriced, NOW) == "Claude · session $?"


def test_the_fallback_when_the_daemon_is_down() -> None:
    inp = parse_input(orjson.dumps(CLAUDE_JSON))
    assert format_fallback(inp, "daemon not running") == (
        "Opus 4.6 · session $4.12 (Claude Code) · agentsrc: daemon not running"
    )
    assert format_fallback(StatusInput(), "no answer in 40 ms") == "Claude · agentsrc: no answer in 40 ms"


def test_costs_and_times_as_shown() -> None:
    assert format_cost({"usd": 1234.5, "kind": "reported"}) == "$1,234.50"
    assert [format_cost(c) for c in (None, {}, {"usd": float("nan")}, {"usd": True})] == ["$?"] * 4
    assert format_left(timedelta(minutes=59, seconds=1)) == "1h00m"
    assert format_left(timedelta(seconds=30)) == "1m"
    assert format_left(timedelta(hours=-1)) == "0m"


def test_today_is_the_local_day() -> None:
    paris = timezone(timedelta(hours=1))
    params = request_params(StatusInput("s1"), datetime(2026, 12, 6, 0, 30, tzinfo=paris))
    assert params == {"agent": "claude-code", "day_start": "2026-12-06T00:00:00+01:00",
                      "session_id": "s1"}
    assert "session_id" not in request_params(StatusInput(), NOW)


hostile = st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers(-(2**63), 2**63 - 1) | hostile,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile, inner, max_size=3),
    max_leaves=12,
)


def _printable(line: str) -> bool:
    return "\n" not in line and all(c.isprintable() for c in line) and "\x1b" not in line


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | json_values.map(lambda v: orjson.dumps(v, default=str)))
def test_any_stdin_gives_an_input(raw: bytes) -> None:
    inp = parse_input(raw)
    assert _printable(format_fallback(inp, "daemon not running"))


@settings(max_examples=300, deadline=None)
@given(hostile, st.dictionaries(st.sampled_from(["session", "today", "block"]), json_values))
def test_any_answer_gives_one_clean_line(model: str, answer: dict[str, Any]) -> None:
    line = format_line(StatusInput(model=model), answer, NOW)
    assert _printable(line) and len(line) < 400
    assert "\u202e" not in line


def test_it_imports_neither_typer_nor_the_daemon() -> None:
    code = ("import sys, agentsrc_daemon.cli.statusline; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('typer', 'click', 'rich', 'pydantic', 'apsw', 'watchdog', 'genai_prices')"
            " or m.startswith('agentsrc_daemon.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['agentsrc_daemon.cli', 'agentsrc_daemon.cli.statusline']"


# ---- the socket, found as load_config finds it ------------------------------------

_SEGMENT = st.sampled_from(["a", "b", "run", "data dir", "..", ".", "x.sock", "é"])
_PATHS = st.builds(
    lambda lead, parts: lead + "/".join(parts),
    st.sampled_from(["/tmp/", "/", "~/", "", "./"]),
    st.lists(_SEGMENT, min_size=1, max_size=4),
)
_ENV_NAMES = ("HOME", "XDG_RUNTIME_DIR", "AGENTSRC_SOCKET", "AGENTSRC_DATA_DIR", "XDG_DATA_HOME")


@settings(max_examples=400, deadline=None)
@given(env=st.dictionaries(st.sampled_from(_ENV_NAMES), _PATHS), config_file=st.booleans())
def test_the_socket_is_where_load_config_finds_it(env: dict[str, str], config_file: bool) -> None:
    """cli/statusline.py finds the socket without the config module; where no
    configuration file exists it must find the one load_config finds (up to the
    normalization of ``..`` and ``.``, which name the same file), and with one it
    leaves the question to load_config."""
    import os
    import tempfile
    from pathlib import Path

    from agentsrc_daemon.cli.statusline import socket_path
    from agentsrc_daemon.config import load_config
    from agentsrc_daemon.errors import ConfigError

    with tempfile.TemporaryDirectory() as cfg_home:
        env = {**env, "XDG_CONFIG_HOME": cfg_home}
        if config_file:
            Path(cfg_home, "agentsrc").mkdir()
            Path(cfg_home, "agentsrc", "config.toml").write_text("")
        lean = socket_path(env)
        if config_file:
            assert lean is None
            return
        try:
            full = str(load_config(env=env).socket_path)
        except ConfigError:  # a socket path too long for AF_UNIX: load_config refuses it
            return
        assert lean is not None and os.path.normpath(lean) == os.path.normpath(full)
    assert socket_path({**env, "AGENTSRC_CONFIG": "/etc/agentsrc.toml"}) is None
