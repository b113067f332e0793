"""The shape of the `agentsrc` command: its commands (in --help's order), its entry
points, and a start-up that does not load the daemon's machinery."""

from __future__ import annotations

import subprocess
import sys

import typer

from agentsrc_daemon.cli import app

COMMANDS = [
    "run",
    "status",
    "sessions",
    "show",
    "events",
    "tail",
    "usage",
    "search",
    "log",
    "reads",
    "edits",
    "commands",
    "files",
    "findings",
    "report",
    "mcp",
    "install",
    "uninstall",
    "doctor",
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


def test_start_up_loads_no_daemon_store_scanner_or_service_code() -> None:
    probe = (
        "import sys, agentsrc_daemon.cli\n"
        "print(' '.join(sorted(m for m in sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(result.stdout.split())
    package = sorted(m for m in loaded if m.startswith("agentsrc_daemon"))
    assert package == [
        "agentsrc_daemon",
        "agentsrc_daemon.cli",
        "agentsrc_daemon.cli.app",
        "agentsrc_daemon.cli.daemon",
        "agentsrc_daemon.cli.files",
        "agentsrc_daemon.cli.findings",
        "agentsrc_daemon.cli.mcp",
        "agentsrc_daemon.cli.output",
        "agentsrc_daemon.cli.search",
        "agentsrc_daemon.cli.service",
        "agentsrc_daemon.cli.sessions",
        "agentsrc_daemon.cli.sink",
        "agentsrc_daemon.config",
        "agentsrc_daemon.errors",
        "agentsrc_daemon.rpc",
        "agentsrc_daemon.rpc.client",
    ]
    assert not loaded & {"apsw", "detect_secrets", "structlog", "watchdog", "mcp", "pydantic"}
