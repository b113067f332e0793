"""The web server's client of the daemon's socket, on asyncio: one connection per page
(its calls in order on it), one per live stream (``subscribe``). The same JSON-RPC
lines as rpc/client.py; what differs is that nothing here blocks the event loop, so a
slow daemon holds up one page, not the server.

A daemon that is down, stopped in the middle of a page or slower than ``timeout`` is a
``DaemonDown`` with a sentence for the page; a refused request (a bad filter, no such
session) is a ``Refused`` with the daemon's message."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

MAX_LINE = 256 << 20  # an answer's line: a page of a long session's turns is a few MiB
INVALID_PARAMS = -32602


class DaemonDown(Exception):
    """The daemon cannot be asked: not running, gone mid-answer, or too slow."""


class Refused(Exception):
    """The daemon refused a request (invalid params), with its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Connection:
    """One connection: ``await call(method, params)`` in order. Use as ``async with``."""

    def __init__(self, socket_path: Path, timeout: float) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Connection:
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(self.socket_path), limit=MAX_LINE),
                self.timeout)
        except FileNotFoundError:
            raise DaemonDown(f"the agentsrc daemon is not running (no socket at "
                             f"{self.socket_path}): start it with `agentsrc run`") from None
        except ConnectionRefusedError:
            raise DaemonDown("the agentsrc daemon is not running (its socket is stale): "
                             "start it with `agentsrc run`") from None
        except PermissionError:
            raise DaemonDown(f"permission denied on {self.socket_path}") from None
        except (TimeoutError, OSError) as exc:
            raise DaemonDown(f"cannot reach the agentsrc daemon ({type(exc).__name__})") from None
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError, asyncio.CancelledError):
                await self._writer.wait_closed()
            self._writer = None

    async def _message(self, timeout: float | None) -> dict[str, Any]:
        assert self._reader is not None
        try:
            line = await asyncio.wait_for(self._reader.readline(), timeout)
        except TimeoutError:
            raise DaemonDown(f"the agentsrc daemon did not answer within {timeout:.0f} s") from None
        except (ValueError, asyncio.LimitOverrunError):
            raise DaemonDown("the daemon's answer was too large to read") from None
        except OSError:
            raise DaemonDown("lost the connection to the agentsrc daemon") from None
        if not line:
            raise DaemonDown("the agentsrc daemon closed the connection (stopped?)")
        msg = orjson.loads(line)
        if not isinstance(msg, dict):
            raise DaemonDown("the daemon sent a non-object")
        return msg

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        assert self._writer is not None
        rid = next(self._ids)
        req = {"jsonrpc": "2.0", "id": rid, "method": method,
               "params": {k: v for k, v in (params or {}).items() if v is not None}}
        try:
            self._writer.write(orjson.dumps(req) + b"\n")
            await self._writer.drain()
        except OSError:
            raise DaemonDown("lost the connection to the agentsrc daemon") from None
        while True:
            msg = await self._message(self.timeout)
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                err = msg["error"] if isinstance(msg["error"], dict) else {}
                code = int(err.get("code", 0))
                message = str(err.get("message", ""))
                if code == -32601:
                    raise Refused(code, f"this daemon has no method {method}: update agentsrc "
                                        "and restart the daemon")
                raise Refused(code, message)
            return msg.get("result")

    async def stream(self, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """``subscribe``: the first item is the answer (``{"subscribed", "last_id"}``),
        then each notification (``{"method": "event"|"dropped", "params"}``)."""
        first = await self.call("subscribe", params)
        yield {"method": "subscribed", "params": first}
        while True:
            yield await self._message(None)


class Daemon:
    """Where the daemon is, and how long to wait for it."""

    def __init__(self, socket_path: Path, timeout: float = 10.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    def connect(self) -> Connection:
        return Connection(self.socket_path, self.timeout)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        async with self.connect() as conn:
            return await conn.call(method, params)
