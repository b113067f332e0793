"""Logging: structlog. JSON lines (``--log-format json``, the default when stderr is
not a terminal: journald, launchd's log files, a file) or, on a terminal, structlog's
console rendering with the start told as a person reads it (``--log-format console``):
the version, the agents found and the folders not there yet in one line, the database
and socket paths, then "live". Log calls carry ids, paths, counts and error types;
never transcript content."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import structlog

LOG_FORMATS = ("json", "console")


def _mib(n: Any) -> str:
    return f"{(n or 0) / (1 << 20):.1f} MiB"


def _missing_text(missing: Mapping[str, Any]) -> str:
    """The roots not there yet, in words: an agent's with its folder, the editors'
    extensions (``<agent>@<editor>``, fifteen by default) folded into one count."""
    own = [f"{a} ({p})" for a, p in missing.items() if "@" not in a]
    editors = {a.split("@", 1)[1] for a in missing if "@" in a}
    if editors:
        own.append(f"the editor extensions in {len(editors)} editors (agentsrc doctor names them)")
    return ", ".join(own)


def _started(e: Mapping[str, Any]) -> list[str]:
    missing = e.get("missing") or {}
    agents = ", ".join(e.get("agents") or []) or "none yet"
    waiting = "; not found yet: " + _missing_text(missing) if missing else ""
    return [
        f"agentsrc {e.get('version')} started (pid {e.get('pid')})",
        f"agents: {agents}{waiting}",
        f"database: {e.get('database')}",
        f"socket: {e.get('socket')}",
    ]


def _live(e: Mapping[str, Any]) -> list[str]:
    read = f"{e.get('files', 0)} files read ({_mib(e.get('bytes'))})"
    if e.get("indexing"):  # the deferred work follows: "indexed" says when it is done
        return [f"caught up: {read}; indexing"]
    return [f"live: {read}"]


# The events a person meets at every start, said in words on a terminal.
HUMAN: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "started": _started,
    "live": _live,
    "indexed": lambda e: ["live: indexing done"],
    "memory_released": lambda e: [f"memory released: {_mib(e.get('rss'))} resident"],
    "migrating": lambda e: [f"migrating the store: {e.get('migration')}"
                            f" {e.get('done')}/{e.get('total')}"],
    "stopped": lambda e: ["stopped"],
}


class ConsoleLines:
    """structlog's console renderer, except for the events in HUMAN: those become a
    few plain lines, each with the time."""

    def __init__(self) -> None:
        self._console = structlog.dev.ConsoleRenderer(colors=False)

    def __call__(self, logger: Any, name: str, event: MutableMapping[str, Any]) -> str:
        at = str(event.get("timestamp", ""))[11:19]  # the time of day, UTC
        human = HUMAN.get(str(event.get("event")))
        if human is None:
            event["timestamp"] = at
            return str(self._console(logger, name, event))
        return "\n".join(f"{at} {line}" for line in human(event))


def configure(level: str = "info", json: bool | None = None) -> None:
    """``json`` None: JSON unless stderr (where the log goes) is a terminal."""
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else ConsoleLines()  # type: ignore[assignment]
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
