"""``agentsrc run`` without typer: the daemon in the foreground, as the service manager
and the tests start it.

typer, click and rich would stay resident in the daemon for its whole life (about 9 MB
of its RSS, docs/performance.md "Memory and backfill speed") for one command line
parsed once. ``parse`` understands exactly the options ``run`` and the global options
take, in the forms click accepts (``--opt value``, ``--opt=value``; the last of a
repeated option wins, except ``--projects-root``, which adds up); anything else (``--help``, an unknown option, a missing value)
returns None and typer parses the command line as before, with its own messages. The
typer command (cli/daemon.py) and this path both end in ``start``.

Imports: the standard library, config and errors; the daemon once it starts.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import EDITORS_FIELD, PROJECTS_FLAG, ROOTS, load_config
from ..errors import AgentsrcError

EXIT_FAILED = 1  # output.py's (which imports typer)

GLOBAL_OPTIONS = {"--socket": "socket_path", "--data-dir": "data_dir", "--config": "config_file"}
ROOT_OPTIONS = {spec.flag: spec.field for spec in ROOTS} | {"--editors-root": EDITORS_FIELD}
LOG_FORMAT_FLAGS = {"--json-logs": True, "--console-logs": False}  # short for --log-format
LOG_FORMATS = {"json": True, "console": False}


@dataclass
class RunArgs:
    overrides: dict[str, Any] = field(default_factory=dict)  # load_config keywords given
    log_level: str = "info"
    json_logs: bool | None = None  # None: JSON unless stderr is a terminal (logs.py)


def _value(arg: str, rest: list[str]) -> tuple[str, str] | None:
    if "=" in arg:
        name, value = arg.split("=", 1)
        return name, value
    if not rest or rest[0].startswith("-"):
        return None  # missing, or looks like an option: typer says so better
    return arg, rest.pop(0)


def parse(argv: list[str]) -> RunArgs | None:
    """The ``run`` command line ``argv`` is, or None when typer should parse it."""
    rest = list(argv)
    args = RunArgs()
    while rest and rest[0].split("=", 1)[0] in GLOBAL_OPTIONS:
        got = _value(rest.pop(0), rest)
        if got is None:
            return None
        args.overrides[GLOBAL_OPTIONS[got[0]]] = Path(got[1])
    if not rest or rest.pop(0) != "run":
        return None
    log_format: bool | None = None  # --log-format, which wins over the flags
    while rest:
        arg = rest.pop(0)
        name = arg.split("=", 1)[0]
        if arg in LOG_FORMAT_FLAGS:
            args.json_logs = LOG_FORMAT_FLAGS[arg]
        elif name == PROJECTS_FLAG:
            got = _value(arg, rest)
            if got is None:
                return None
            # Repeatable (each value may hold several folders separated by ":").
            args.overrides.setdefault("projects", []).append(got[1])
        elif name in ROOT_OPTIONS or name in ("--log-level", "--log-format"):
            got = _value(arg, rest)
            if got is None:
                return None
            if name == "--log-level":
                args.log_level = got[1]
            elif name == "--log-format":
                if got[1] not in LOG_FORMATS:
                    return None  # typer names the choices
                log_format = LOG_FORMATS[got[1]]
            else:
                field_name = ROOT_OPTIONS[name]
                # The editors' dirs are a list (paths separated by ':'), as typer keeps it.
                args.overrides[field_name] = got[1] if field_name == EDITORS_FIELD else Path(got[1])
        else:
            return None  # --help, a positional argument, an option run does not take
    if log_format is not None:
        args.json_logs = log_format
    return args


def start(args: RunArgs) -> int:
    """Run the daemon until it stops; its exit status. A bad configuration, another
    daemon or a refusal of the OS is one line on stderr and exit status 1."""
    # structlog without rich and asyncio (lean_imports.py), before anything imports it.
    from .. import lean_imports

    lean_imports.import_structlog()
    from ..daemon import Daemon
    from ..logs import configure

    configure(args.log_level, args.json_logs)
    try:
        cfg = load_config(**args.overrides)
        # What SIGHUP re-reads the configuration with: the same flags, over a new file.
        return Daemon(
            cfg,
            cli_overrides=dict(args.overrides),
            log_level=args.log_level,
            json_logs=args.json_logs,
        ).run()
    except (AgentsrcError, PermissionError) as exc:
        # Another daemon, a bad config, another user's dir; or the OS refused (a data dir
        # whose parent is not writable): one line rather than a traceback.
        sys.stderr.write(f"agentsrc: {exc}\n")
        return EXIT_FAILED


def run(argv: list[str]) -> int | None:
    """The daemon's exit status when ``argv`` is a ``run`` this path parses, else None."""
    args = parse(argv)
    return None if args is None else start(args)
