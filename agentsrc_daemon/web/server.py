"""``agentsrc web``'s process: a fresh token, the listening socket (``--port 0``: a free
one), the URL printed as the first line on stdout and kept in ``web.url`` beside the
daemon's socket (url.py: ``agentsrc web --url``, ``status`` and ``doctor`` read it),
then uvicorn until SIGTERM or Ctrl-C.

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

from .url import read_url, url_file, without_token, write_url


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(socket_path: Path, host: str, port: int, open_browser: bool,
          service: bool = False) -> int:
    """Serve until SIGTERM or Ctrl-C. ``service``: under a service manager, whose log
    keeps stdout: the first line is the URL without its token (``agentsrc web --url``
    prints the link with it)."""
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
    print(f"{without_token(url)} (the link with its token: agentsrc web --url)" if service
          else url, flush=True)
    if not is_loopback(host):
        print(f"warning: serving on {host}, reachable from other machines: anyone with the "
              "link reads the record (the token is the only lock; there is no TLS)",
              file=sys.stderr, flush=True)
    info = {"url": url, "pid": os.getpid(), "port": actual, "host": host}
    ufile = url_file(socket_path)
    with contextlib.suppress(OSError):
        write_url(socket_path, info)
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
