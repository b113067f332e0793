"""Shared pieces of the CLI commands: calling the daemon, printing JSON and tables."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import orjson
import typer

from ..config import Config
from ..errors import DaemonNotRunning, RemoteError
from ..rpc.client import Client

EXIT_FAILED = 1
EXIT_BAD_REQUEST = 2
EXIT_NOT_RUNNING = 3


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    typer.echo(f"agentsrc: {message}", err=True)
    raise typer.Exit(code)


def call(cfg: Config, method: str, params: dict[str, Any] | None = None) -> Any:
    """One request to the daemon; a clear message and exit status when it fails."""
    try:
        with Client(cfg.socket_path) as client:
            return client.call(method, params or {})
    except DaemonNotRunning as exc:
        fail(str(exc), EXIT_NOT_RUNNING)
    except RemoteError as exc:
        fail(exc.message, EXIT_BAD_REQUEST)


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
