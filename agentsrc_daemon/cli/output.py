"""Shared pieces of the typer commands: exit statuses, calling the daemon, printing JSON
and tables (their lines are made in render.py, which the fast path shares)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer

from ..config import Config
from ..errors import DaemonNotRunning, RemoteError
from ..rpc.client import Client
from .render import emit_json, short, table_lines

__all__ = ["emit_json", "short"]  # re-exported: the command modules print with them

# Exit statuses (cli/fast.py answers with the same). A script tells "the daemon is not running" and "the daemon refused the
# request" from any other failure; everything else that fails is 1.
EXIT_FAILED = 1
EXIT_BAD_REQUEST = 2
EXIT_NOT_RUNNING = 3  # also `service status` when the service is not running
EXIT_DROPPED = 4  # `tail`: the daemon dropped a subscriber too slow to keep up


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    typer.echo(f"agentsrc: {message}", err=True)
    raise typer.Exit(code)


@contextmanager
def reporting_daemon_errors() -> Iterator[None]:
    """Talking to the daemon: a clear message and exit status when that fails."""
    try:
        yield
    except DaemonNotRunning as exc:
        fail(str(exc), EXIT_NOT_RUNNING)
    except RemoteError as exc:
        fail(exc.message, EXIT_BAD_REQUEST)


def call_daemon(cfg: Config, method: str, params: dict[str, Any] | None = None) -> Any:
    """One request to the daemon."""
    with reporting_daemon_errors(), Client(cfg.socket_path) as client:
        return client.call(method, params or {})


def print_table(rows: list[list[Any]], headers: list[str]) -> None:
    for line in table_lines(rows, headers):
        typer.echo(line)
