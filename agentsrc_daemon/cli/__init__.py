"""The ``agentsrc`` command: ``run`` starts the daemon; every other command is a
client of its socket. Every query command takes ``--json`` (the stable contract that
scripts rely on, documented in docs/protocol.md).

The typer app and its global options are in app.py; each module imported below
attaches its commands to that app.
"""

from __future__ import annotations

# `agentsrc --help` lists the commands in the order they are attached: these imports are
# in that order, not sorted.
# isort: off
from . import daemon  # noqa: F401  run, status
from . import sessions  # noqa: F401  sessions, show, events, tail, usage
from . import search  # noqa: F401  search
from . import files  # noqa: F401  reads, edits, commands, files
from . import findings  # noqa: F401  findings, report
from . import mcp  # noqa: F401  mcp
from . import service  # noqa: F401  install, uninstall, doctor, service status
from . import sink  # noqa: F401  sink init, sink status
# isort: on
from .app import app

__all__ = ["app", "main"]


def main() -> None:
    app()


if __name__ == "__main__":
    main()
