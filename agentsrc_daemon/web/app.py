"""The web app: its routes (stable URLs, so a link can be bookmarked), the static files,
and the guard around all of it (guard.py). Built by ``build_app`` with where the daemon
is and this server's token; served by server.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import structlog
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from . import live, pages, reports
from .daemon import Daemon
from .guard import ASGIApp, Guard, PeerUids, Receive, Scope, Send

log = structlog.get_logger("agentsrc.web")

STATIC = Path(__file__).parent / "static"

ROUTES = [
    Route("/", pages.now, name="now"),
    Route("/sessions", pages.sessions, name="sessions"),
    Route("/sessions/{session_id:str}", pages.session, name="session"),
    Route("/sessions/{session_id:str}/tail", pages.session_tail, name="session_tail"),
    Route("/search", pages.search, name="search"),
    Route("/files", reports.files, name="files"),
    Route("/usage", reports.usage, name="usage"),
    Route("/findings", reports.findings, name="findings"),
    Route("/health", reports.health, name="health"),
    Route("/fragments/now", pages.now_fragment, name="now_fragment"),
    Route("/live/now", live.now_stream, name="live_now"),
    Route("/live/sessions/{session_id:str}", live.session_stream, name="live_session"),
    Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
]


class Quiet:
    """The layer inside the guard: an error that escaped a page is logged by its type and the
    path's first segment only (a path can hold a session id or a file name, a message
    transcript text), and answered 500. Every answer says how long the server took to
    start it (``Server-Timing: app;dur=<ms>``: the page's calls to the daemon and its
    rendering; browsers show it, bench/web_pages.py measures it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False
        t0 = time.perf_counter()

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                ms = (time.perf_counter() - t0) * 1000
                message["headers"] = [*message.get("headers", []),
                                      (b"server-timing", f"app;dur={ms:.2f}".encode())]
            await send(message)

        try:
            await self.app(scope, receive, tracked)  # type: ignore[arg-type]
        except Exception as exc:
            first = str(scope.get("path", "")).split("/")[1:2]
            log.error("request_failed", route=f"/{first[0] if first else ''}",
                      error=type(exc).__name__)
            if scope["type"] == "http" and not started:
                body = b"internal error: the server keeps serving"
                await send({"type": "http.response.start", "status": 500,
                            "headers": [(b"content-type", b"text/plain"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})


def build_app(socket_path: Path, *, token: str, hosts: set[str], port: int,
              timeout: float = 10.0) -> ASGIApp:
    app = Starlette(routes=ROUTES)
    app.state.daemon = Daemon(socket_path, timeout)
    app.state.info = {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "socket": str(socket_path), "port": port}
    peers = PeerUids()
    return Guard(Quiet(app), token=token, hosts=hosts, port=port,
                 peer_uids=peers if peers.available() else None)
