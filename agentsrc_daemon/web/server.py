"""``agentsrc web``'s process: a fresh token, the listening socket (``--port 0``: a free
one), the URL printed as the first line on stdout and kept in ``web.url`` beside the
daemon's socket (0600 in its 0700 directory: ``agentsrc web --url`` and ``status`` read
it), then uvicorn until SIGTERM or Ctrl-C.

Loopback only by default. Another ``--host`` is the user's choice, said with a warning:
the page is then reachable from the network, behind the token alone."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any

import orjson

URL_FILE = "web.url"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_file(socket_path: Path) -> Path:
    return socket_path.parent / URL_FILE


def read_url(socket_path: Path) -> dict[str, Any] | None:
    """The running server's ``{"url", "pid", "port", "host"}``, or None (no file, or its
    process is gone)."""
    try:
        info = orjson.loads(url_file(socket_path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return None
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return info


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _write_url_file(path: Path, info: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(orjson.dumps(info))
    os.replace(tmp, path)


def serve(socket_path: Path, host: str, port: int, open_browser: bool) -> int:
    import uvicorn

    from ..logs import configure
    from .app import build_app
    from .guard import allowed_hosts

    configure()  # on stderr: stdout's first line is the URL
    sock = _listen(host, port)
    actual = int(sock.getsockname()[1])
    token = secrets.token_urlsafe(32)
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host)
    shown = shown or (f"[{host.strip('[]')}]" if ":" in host else host)
    url = f"http://{shown}:{actual}/?token={token}"
    print(url, flush=True)
    if not is_loopback(host):
        print(f"warning: serving on {host}, reachable from other machines: anyone with the "
              "link reads the record (the token is the only lock; there is no TLS)",
              file=sys.stderr, flush=True)
    info = {"url": url, "pid": os.getpid(), "port": actual, "host": host}
    ufile = url_file(socket_path)
    with contextlib.suppress(OSError):
        _write_url_file(ufile, info)
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    app = build_app(socket_path, token=token, hosts=allowed_hosts(host.strip("[]"), actual),
                    port=actual)
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False,
                            date_header=False, proxy_headers=False, lifespan="off",
                            timeout_graceful_shutdown=1, ws="none")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        with contextlib.suppress(OSError):
            if (read_url(socket_path) or {}).get("pid") == os.getpid():
                ufile.unlink()
    return 0
