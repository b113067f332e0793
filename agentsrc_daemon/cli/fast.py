"""The query commands a person types most, answered without typer: ``agentsrc status``
and ``agentsrc sessions``; and ``agentsrc statusline``, which Claude Code runs every few
hundred milliseconds.

Importing typer (and through it click, rich, pydantic) costs several times what the
query itself does (docs/performance.md, "CLI, start-up and idle at scale"), so
``main`` first tries this path. It understands exactly the options those two commands
and the global options take, in the forms click accepts (``--opt value``,
``--opt=value``); anything else (``--help``, another command, an option it does not
know, a value typer would have to convert or refuse) returns None and typer parses the
command line as before, with its own messages. What is printed comes from render.py,
the same lines the typer commands print, with the same exit statuses.

Imports: the standard library, orjson, config, errors and rpc.client, nothing more
(tests/test_cli.py checks the modules a query loads).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import cli_fast_path, load_config
from ..errors import AgentsrcError, DaemonNotRunning, RemoteError
from ..rpc.client import Client
from . import render

# The exit statuses of output.py (which imports typer, so they are repeated here).
EXIT_FAILED = 1
EXIT_BAD_REQUEST = 2
EXIT_NOT_RUNNING = 3
EXIT_INTERRUPTED = 130  # what typer exits with on Ctrl-C

GLOBAL_OPTIONS = {"--socket": "socket_path", "--data-dir": "data_dir", "--config": "config_file"}
# Per command: its options that take a value, and its flags.
VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "status": frozenset(),
    "sessions": frozenset(
        {"agent", "project", "cwd", "since", "until", "model", "search", "sort", "limit",
         "cursor"}
    ),
    "statusline": frozenset(),
}
FLAGS: dict[str, frozenset[str]] = {
    "status": frozenset({"json", "wait"}),
    "sessions": frozenset({"json", "relative"}),
    "statusline": frozenset(),
}


@dataclass
class Query:
    command: str
    config: dict[str, Any] = field(default_factory=dict)  # load_config keywords
    values: dict[str, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)


def _option(arg: str, rest: list[str]) -> tuple[str, str | None] | None:
    """``--name value`` or ``--name=value``: (name, value); None when the value is
    missing or looks like an option (typer's messages are better there)."""
    if "=" in arg:
        name, value = arg.split("=", 1)
        return name, value
    if not rest or rest[0].startswith("-"):
        return None
    return arg, rest.pop(0)


def parse(argv: list[str]) -> Query | None:
    """The query ``argv`` asks for, or None when typer should parse it."""
    rest = list(argv)
    config: dict[str, Any] = {}
    while rest and rest[0].startswith("--") and rest[0].split("=", 1)[0] in GLOBAL_OPTIONS:
        got = _option(rest.pop(0), rest)
        if got is None:
            return None
        config[GLOBAL_OPTIONS[got[0]]] = Path(got[1])  # type: ignore[arg-type]
    if not rest or rest[0] not in VALUE_OPTIONS:
        return None
    query = Query(rest.pop(0), config)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("--") or arg == "--":
            return None  # a positional argument, "--", or a short option
        name = arg[2:].split("=", 1)[0]
        if name in FLAGS[query.command] and "=" not in arg:
            query.flags.add(name)
        elif name in VALUE_OPTIONS[query.command]:
            got = _option(arg, rest)
            if got is None or got[1] is None:
                return None
            query.values[name] = got[1]
        else:
            return None
    limit = query.values.get("limit", "50")
    if not limit.isascii() or not limit.isdigit():
        return None  # typer converts (or refuses) anything but plain digits
    return query


class _Failed(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _call(socket_path: Path, method: str, params: dict[str, Any] | None = None) -> Any:
    try:
        with Client(socket_path) as client:
            return client.call(method, params or {})
    except DaemonNotRunning as exc:
        raise _Failed(str(exc), EXIT_NOT_RUNNING) from None
    except RemoteError as exc:
        raise _Failed(exc.message, EXIT_BAD_REQUEST) from None


def _out(lines: list[str], stream: Any) -> None:
    if lines:
        stream.write("\n".join(lines) + "\n")


def answer(query: Query) -> int:
    """Run ``query``; its exit status."""
    if query.command == "statusline":
        return statusline(query.config)
    try:
        cfg = load_config(**query.config)
    except AgentsrcError as exc:
        raise _Failed(str(exc), EXIT_FAILED) from None
    if query.command == "status":
        if "wait" in query.flags:
            render.wait_live(lambda method: _call(cfg.socket_path, method))
        st = _call(cfg.socket_path, "status")
        if "json" in query.flags:
            render.emit_json(st)
        else:
            web = render.web_line(cfg.socket_path)
            _out(render.status_lines(st) + ([web] if web else []), sys.stdout)
        return 0
    v = query.values
    params = render.sessions_params(
        agent=v.get("agent"), project=v.get("project"), cwd=v.get("cwd"),
        since=v.get("since"), until=v.get("until"), model=v.get("model"),
        search=v.get("search"), sort=v.get("sort", "last"), limit=int(v.get("limit", "50")),
        cursor=v.get("cursor"),
    )
    page = _call(cfg.socket_path, "sessions.list", params)
    if "json" in query.flags:
        render.emit_json(page["sessions"])
        return 0
    table, hint = render.sessions_lines(page, "relative" in query.flags)
    _out(table, sys.stdout)
    sys.stdout.flush()
    _out(hint, sys.stderr)
    return 0


def statusline(config: dict[str, Any]) -> int:
    """``agentsrc statusline`` with options or a configuration file (cli/statusline.py
    answers it without them): the socket from load_config. Always exit 0: the line says
    when the daemon cannot answer, and Claude Code shows whatever it prints."""
    from datetime import datetime

    from . import statusline as sl

    inp = sl.read_stdin()
    try:
        path = str(load_config(**config).socket_path)
    except AgentsrcError as exc:
        line = sl.format_fallback(inp, str(exc))
    else:
        line = sl.line_for(inp, path, datetime.now().astimezone())
    sys.stdout.write(line + "\n")
    return 0


def run(argv: list[str]) -> int | None:
    """The exit status of a query this path answers, or None: typer's turn."""
    if not cli_fast_path():
        return None  # the typer path, to compare the two (tests/test_cli.py)
    query = parse(argv)
    if query is None:
        return None
    try:
        return answer(query)
    except _Failed as exc:
        sys.stdout.flush()
        sys.stderr.write(f"agentsrc: {exc}\n")
        return exc.code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # As typer does: quiet, exit 1 (and no second error when stdout is flushed).
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_FAILED
