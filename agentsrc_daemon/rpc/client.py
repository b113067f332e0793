"""A small client of the daemon's socket, used by the CLI and the tests."""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..errors import DaemonNotRunning, RemoteError


def _explain_connect_failure(path: Path, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return (
            f"the agentsrc daemon is not running (no socket at {path}); "
            "start it with `agentsrc run` or `agentsrc install`"
        )
    if isinstance(exc, ConnectionRefusedError):
        return f"the agentsrc daemon is not running (stale socket at {path})"
    if isinstance(exc, PermissionError):
        try:
            owner = path.stat().st_uid
        except OSError:
            owner = -1
        if owner not in (-1, os.getuid()):
            return f"the socket {path} belongs to another user (uid {owner}); not connecting"
        return f"permission denied on {path}"
    return f"cannot connect to {path}: {exc}"


class Client:
    def __init__(self, socket_path: Path | str, timeout: float | None = 30.0) -> None:
        self.socket_path = Path(socket_path)
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._sock: socket.socket | None = None
        self._buf = bytearray()

    def connect(self) -> socket.socket:
        if self._sock is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(str(self.socket_path))
            except OSError as exc:
                s.close()
                raise DaemonNotRunning(_explain_connect_failure(self.socket_path, exc)) from None
            self._sock = s
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_message(self) -> dict[str, Any]:
        sock = self.connect()
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                msg = orjson.loads(line)
                if not isinstance(msg, dict):
                    raise RemoteError(-32700, "daemon sent a non-object")
                return msg
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise DaemonNotRunning("the daemon closed the connection")
            self._buf += chunk

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        rid = next(self._ids)
        req = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        self.connect().sendall(orjson.dumps(req) + b"\n")
        while True:
            msg = self._read_message()
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                err = msg["error"]
                raise RemoteError(err.get("code", 0), err.get("message", ""), err.get("data"))
            return msg.get("result")

    def subscribe(self, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Yields notifications ({"method": "event"|"dropped", "params": ...}) forever."""
        first = self.call("subscribe", params or {})
        yield {"method": "subscribed", "params": first}
        while True:
            yield self._read_message()
