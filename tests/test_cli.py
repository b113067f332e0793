"""The shape of the `agentsrc` command: its commands (in --help's order), its entry
points, and a start-up that does not load the daemon's machinery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from agentsrc_daemon.cli import app, render

from harness import REPO, DaemonFactory, DaemonProcess, copy_tree

FIXTURES = Path(__file__).parent / "fixtures"

COMMANDS = [
    "run",
    "status",
    "sessions",
    "show",
    "events",
    "tail",
    "usage",
    "statusline",
    "search",
    "log",
    "reads",
    "edits",
    "commands",
    "files",
    "findings",
    "report",
    "mcp",
    "web",
    "install",
    "uninstall",
    "doctor",
    "prices",  # groups of commands after the commands
    "service",
    "sink",
]


def test_commands_in_help_order() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    ctx = typer.Context(group)
    assert group.list_commands(ctx) == COMMANDS
    service = group.get_command(ctx, "service")
    assert isinstance(service, typer.core.TyperGroup)
    assert service.list_commands(ctx) == ["status"]
    prices = group.get_command(ctx, "prices")
    assert isinstance(prices, typer.core.TyperGroup)
    assert prices.list_commands(ctx) == ["update"]
    sink = group.get_command(ctx, "sink")
    assert isinstance(sink, typer.core.TyperGroup)
    assert sink.list_commands(ctx) == ["init", "status"]


def test_python_dash_m_is_the_same_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "agentsrc_daemon.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "100", "TERM": "dumb", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    # The rows of the Commands panel: "│ run   Run the daemon ...", options start with "-".
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("│ ")]
    assert [row[1] for row in rows if not row[1].startswith("-")] == COMMANDS


def test_importing_the_command_loads_nothing_else() -> None:
    probe = (
        "import sys, agentsrc_daemon.cli\n"
        "print(' '.join(sorted(m for m in sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(result.stdout.split())
    assert sorted(m for m in loaded if m.startswith("agentsrc_daemon")) == [
        "agentsrc_daemon",
        "agentsrc_daemon.cli",
    ]
    assert not loaded & HEAVY


# What a query must not load: the daemon's machinery, the scanner, the service code, the
# sink, and typer with what it brings (click, rich, pydantic).
HEAVY = {"apsw", "detect_secrets", "structlog", "watchdog", "mcp", "pydantic", "typer",
         "click", "rich", "agentsrc_daemon.daemon", "agentsrc_daemon.store",
         "agentsrc_daemon.secrets", "agentsrc_daemon.system", "agentsrc_daemon.sink",
         "agentsrc_daemon.ingest", "agentsrc_daemon.cli.typer_app"}
# Everything of the package a fast query loads.
FAST_PATH = [
    "agentsrc_daemon",
    "agentsrc_daemon.cli",
    "agentsrc_daemon.cli.fast",
    "agentsrc_daemon.cli.render",
    "agentsrc_daemon.config",
    "agentsrc_daemon.errors",
    "agentsrc_daemon.rpc",
    "agentsrc_daemon.rpc.client",
    "agentsrc_daemon.states",  # the states' words (typing only), for render's status
]


def _fixture_home(home: Path) -> None:
    copy_tree(FIXTURES / "claude" / "projects", home / ".claude" / "projects")
    copy_tree(FIXTURES / "muse" / "agents", home / "agents")


def _agentsrc(d: DaemonProcess, *args: str, importtime: bool = False,
              **env: str) -> subprocess.CompletedProcess[str]:
    """The installed `agentsrc` script, as a user runs it (optionally under
    ``-X importtime``, which lists every module imported on stderr)."""
    script = Path(sys.executable).parent / "agentsrc"
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), str(script), *args]
    return subprocess.run(argv, env={**d.env, "COLUMNS": "100", **env}, capture_output=True,
                          text=True, timeout=60, cwd=str(REPO))


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line} - {"package"}


@pytest.mark.slow
def test_status_and_sessions_load_no_heavy_module(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    _fixture_home(d.home)
    d.start()
    d.wait_live()
    for args in (["status"], ["sessions"], ["status", "--json"], ["sessions", "--json"],
                 ["--socket", str(d.socket_path), "sessions", "--agent=muse", "--limit", "1"],
                 ["--socket", str(d.socket_path), "statusline"]):
        result = _agentsrc(d, *args, importtime=True)
        assert result.returncode == 0, result.stderr[-2000:]
        loaded = _imported(result.stderr)
        # `status` also says where a running web page is (web/url.py: os and orjson);
        # `statusline` with an option reads Claude Code's JSON and prints its line
        # (cli/statusline.py; without one it loads less: tests/test_cost_cli.py).
        more = {"status": ["agentsrc_daemon.web", "agentsrc_daemon.web.url"]}.get(
            " ".join(args), ["agentsrc_daemon.cli.statusline"] if "statusline" in args else [])
        assert sorted(m for m in loaded if m.startswith("agentsrc_daemon")) == sorted(
            FAST_PATH + more), args
        assert {m.split(".")[0] for m in loaded} & HEAVY == set(), args
        assert loaded & HEAVY == set(), args
    # --help and every other command are typer's.
    help_ = _agentsrc(d, "status", "--help", importtime=True)
    assert help_.returncode == 0
    assert "typer" in _imported(help_.stderr)


@pytest.mark.slow
def test_fast_path_prints_what_typer_prints(daemon_factory: DaemonFactory, tmp_path: Path) -> None:
    d = daemon_factory()
    _fixture_home(d.home)
    d.start()
    st = d.wait_live()
    bad_config = tmp_path / "bad.toml"
    bad_config.write_text("[daemon\n")
    cases = [
        ["status"],
        ["sessions"],
        ["sessions", "--json"],
        ["sessions", "--limit", "2"],  # a next page: its hint on stderr
        ["sessions", "--agent", "muse", "--relative"],
        ["sessions", "--agent=claude-code", "--sort", "started", "--limit=1", "--json"],
        ["sessions", "--sort", "nonsense"],  # the daemon refuses: exit 2
        ["sessions", "--agent", ""],  # an empty value is left out, as typer does
        ["--socket", str(tmp_path / "none.sock"), "status"],  # not running: exit 3
        ["--config", str(bad_config), "sessions"],  # a bad config: exit 1
        ["--config", str(tmp_path / "missing.toml"), "status"],
        ["sessions", "--limit", "x"],  # typer's own refusal on both paths
        ["status", "--nope"],
    ]
    for args in cases:
        fast = _agentsrc(d, *args)
        slow = _agentsrc(d, *args, AGENTSRC_CLI_FAST="0")
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            slow.returncode, slow.stdout, slow.stderr), args
    codes = [_agentsrc(d, *args).returncode for args in cases]
    assert codes == [0, 0, 0, 0, 0, 0, 2, 0, 3, 1, 1, 2, 2]
    # What the fast path printed, in exact values.
    sessions = json.loads(_agentsrc(d, "sessions", "--json").stdout)
    assert len(sessions) == st["sessions"] == 3
    table = _agentsrc(d, "sessions").stdout.splitlines()
    assert table[0].split() == ["SESSION", "LAST", "EVENT", "PROMPTS", "TOOLS", "COST", "MODEL",
                                "CWD", "TITLE"]
    assert [line.split()[0] for line in table[1:]] == [s["id"] for s in sessions]
    # Each session's cost, as render.cost_text words it (the fixtures' Claude sessions
    # name a model; the Muse one records no usage).
    cost_at = table[0].index("COST")
    assert [line[cost_at:table[0].index("MODEL")].strip() for line in table[1:]] == [
        render.cost_text(s["cost"]) for s in sessions]
    assert "unpriced (no usage recorded)" in [render.cost_text(s["cost"]) for s in sessions]
    page = _agentsrc(d, "sessions", "--limit", "2")
    assert len(page.stdout.splitlines()) == 3
    assert page.stderr.startswith("(more: --cursor ")
    status = _agentsrc(d, "status").stdout.splitlines()
    assert status[:4] == ["state:     live", f"files:     {st['files']} (0 gone)",
                          "sessions:  3", f"events:    {st['events']}"]
    refused = _agentsrc(d, "sessions", "--sort", "nonsense")
    assert refused.stdout == ""
    assert refused.stderr.startswith("agentsrc: ")
