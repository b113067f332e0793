"""The ``agentsrc`` command: ``run`` starts the daemon; every other command is a
client of its socket. Every query command takes ``--json`` (the stable contract that
scripts rely on, documented in docs/protocol.md).

Importing this package loads nothing else: ``main`` answers ``status`` and ``sessions``
on the fast path (fast.py, no typer) and starts the daemon for ``run`` without typer
(launch.py); any other command line loads the typer app (typer_app.py) and the command
modules, which attach their commands to it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported: `agentsrc statusline` pays every import
if TYPE_CHECKING:
    from typing import Any

    import typer

__all__ = ["app", "load_app", "main"]


def load_app() -> typer.Typer:
    """The typer app with every command attached."""
    # `agentsrc --help` lists the commands in the order they are attached: these imports
    # are in that order, not sorted.
    # isort: off
    from . import daemon  # noqa: F401  run, status
    from . import sessions  # noqa: F401  sessions, show, events, tail, usage
    from . import costs  # noqa: F401  statusline, prices
    from . import search  # noqa: F401  search
    from . import files  # noqa: F401  reads, edits, commands, files
    from . import findings  # noqa: F401  findings, report
    from . import mcp  # noqa: F401  mcp
    from . import web  # noqa: F401  web
    from . import service  # noqa: F401  install, uninstall, doctor, service status
    from . import sink  # noqa: F401  sink init, sink status
    # isort: on
    from .typer_app import app

    return app


def __getattr__(name: str) -> Any:
    # `from agentsrc_daemon.cli import app` (the tests' CliRunner) still works.
    if name == "app":
        return load_app()
    raise AttributeError(name)


def main() -> None:
    if sys.argv[1:2] == ["statusline"]:
        # Claude Code runs it every few hundred milliseconds: answered before the fast
        # path's imports (cli/statusline.py), which hands back what it cannot answer.
        from .statusline import run as statusline

        code = statusline(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from .fast import run

    code = run(sys.argv[1:])
    if code is None:
        # `run` without typer too: it would stay resident in the daemon (launch.py).
        from .launch import run as launch

        code = launch(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    load_app()()


if __name__ == "__main__":
    main()
