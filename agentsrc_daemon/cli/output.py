"""Shared pieces of the CLI commands: exit statuses, calling the daemon, printing JSON
and tables."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import orjson
import typer

from ..config import Config
from ..errors import DaemonNotRunning, RemoteError
from ..rpc.client import Client

# Exit statuses. A script tells "the daemon is not running" and "the daemon refused the
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


def emit_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def short(value: Any, n: int) -> str:
    text = " ".join(("" if value is None else str(value)).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def print_table(rows: list[list[Any]], headers: list[str]) -> None:
    cells = [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    typer.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for r in cells:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
