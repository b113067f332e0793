"""The one typer app of the ``agentsrc`` command, its global options, and what every
command needs of them: the configuration, and a call to the daemon.

Each command module (daemon, sessions, files, findings, service) decorates its
functions with ``@app.command()`` when imported; cli/__init__.py imports them. The
configuration is resolved only when a command runs, so ``--help`` works with a broken
config file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..config import Config, load_config
from ..errors import AgentsrcError
from .output import call_daemon, fail

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help=(
        "A local record of what coding agents (Codex, Claude Code, Muse, Gemini CLI,"
        " GitHub Copilot CLI, OpenCode) do on this machine."
    ),
)

# The global options of this invocation (None: not given), set before any command runs.
_global_options: dict[str, Any] = {}


@app.callback()
def _main(
    socket: Path | None = typer.Option(None, "--socket", help="Daemon socket path."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Data directory."),
    config: Path | None = typer.Option(None, "--config", help="TOML config file."),
) -> None:
    _global_options.update(socket_path=socket, data_dir=data_dir, config_file=config)


def given_options(**flags: Any) -> dict[str, Any]:
    """The global options and a command's own ``flags`` that were given, as
    ``load_config`` keywords (a command's flag wins over a global option)."""
    given = {k: v for k, v in _global_options.items() if v is not None}
    given.update({k: v for k, v in flags.items() if v is not None})
    return given


def get_config(**flags: Any) -> Config:
    """The configuration for this invocation; a bad one is reported and exits 1."""
    try:
        return load_config(**given_options(**flags))
    except AgentsrcError as exc:
        fail(str(exc))


def call(method: str, params: dict[str, Any] | None = None) -> Any:
    """One request to the daemon of this invocation's configuration."""
    return call_daemon(get_config(), method, params)
