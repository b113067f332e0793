"""Every error agentsrc raises on purpose, in one hierarchy under ``AgentsrcError``.

The message of each is written for the person at the terminal: it says what is wrong
and, where it can, what to do. That is why the CLI can report any of them the same way
(``agentsrc: <message>``, exit status 1) by catching the base class, and keep specific
exit statuses only where a script needs to tell them apart (the daemon not running,
a request the daemon refused).

What is not here is not a domain error: a file that vanished, a permission the OS
refused, a bug. Builtin exceptions keep meaning what the OS or Python meant.

This module imports nothing of the package, so that any module (the CLI's light start-up
included) can import it.
"""

from __future__ import annotations

from typing import Any


class AgentsrcError(Exception):
    """Base class: an error agentsrc raises on purpose, with a message for the user."""


# ---- start-up: configuration, the data dir, the database ---------------------------


class ConfigError(AgentsrcError):
    """The configuration cannot be used (config file, environment, flags, scan settings)."""


class AlreadyRunning(AgentsrcError):
    """Another daemon holds the data dir's lock."""


class NotPrivate(AgentsrcError):
    """A directory the daemon keeps private (the data dir, the socket's directory) belongs
    to another user: the daemon will not use it, nor change its owner or mode."""


class SchemaTooNew(AgentsrcError):
    """The database was written by a newer agentsrc; this one does not downgrade it."""


# ---- the per-user service ------------------------------------------------------------


class ServiceError(AgentsrcError):
    """Installing, removing or querying the service failed; the message says what to do."""


# ---- the socket protocol (JSON-RPC 2.0) ------------------------------------------------


class RpcError(AgentsrcError):
    """Server side: a method refuses a request. The transport sends it as the JSON-RPC
    error object ``{code, message, data}``; codes are in rpc/transport.py."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class DaemonNotRunning(AgentsrcError):
    """Client side: no daemon answers on the socket (none, a stale socket, another
    user's socket), or it closed the connection."""


class RemoteError(AgentsrcError):
    """Client side: the daemon answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


# ---- the MCP server (agentsrc mcp) -----------------------------------------------------


class ToolCallError(AgentsrcError):
    """A tool call of the MCP server cannot be answered: a bad argument or cursor, a
    session outside the server's project, or the daemon not running or refusing. The
    message is written for the model that called the tool: what is wrong, what to do."""
