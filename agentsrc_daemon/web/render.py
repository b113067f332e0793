"""The templates (Jinja2, autoescape on for every template) and a page's frame: the
daemon's state in the header, a page for a daemon that is down and for a refused
request. A page handler returns ``page(request, template, context)``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from pathlib import Path
from typing import Any

import structlog
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from .. import __version__
from . import charts, present, text
from .daemon import INVALID_PARAMS, DaemonDown, Refused

log = structlog.get_logger("agentsrc.web")

HERE = Path(__file__).parent

NAV = (
    ("/", "Now"), ("/sessions", "Sessions"), ("/search", "Search"), ("/files", "Files"),
    ("/usage", "Usage"), ("/findings", "Findings"), ("/health", "Health"),
)


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(present.FILTERS)
    env.filters.update(neutral=text.neutral, markdown=text.markdown, clip=text.clip,
                       short=text.short)
    env.globals.update(nav=NAV, version=__version__, query=present.query,
                       columns=charts.columns, bars=charts.bars)
    return env


ENV = environment()


class HTML(HTMLResponse):
    def render(self, content: Any) -> bytes:
        # A lone surrogate (an invalid UTF-8 escape in a transcript) must not fail the
        # page: text.neutral marks them, this is the last guard.
        return str(content).encode("utf-8", "replace")


def render(template: str, context: dict[str, Any]) -> str:
    return ENV.get_template(template).render(**context)


def page(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    ctx = {"request": request, "req_path": request.url.path, "status": None, **context}
    return HTML(render(template, ctx), status_code=status)


Handler = Callable[[Request], Awaitable[Response]]


def daemon_page(handler: Handler) -> Handler:
    """A page that asks the daemon: when it is down, the page says so (503) with the
    reason; a refused request (a bad filter, no such session) is a 400 or 404 with the
    daemon's message. Any other failure is a 500 that logs the error's type and the
    page's route only: never a value, which may be transcript text."""

    @wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except DaemonDown as exc:
            return page(request, "down.html", {"reason": str(exc)}, status=503)
        except Refused as exc:
            missing = exc.code == INVALID_PARAMS and exc.message.startswith("no such session")
            return page(request, "refused.html", {"message": exc.message},
                        status=404 if missing else 400)
        except Exception as exc:
            log.error("page_failed", route=handler.__name__, error=type(exc).__name__)
            return page(request, "refused.html",
                        {"message": f"this page failed ({type(exc).__name__}); the server "
                                    "keeps serving"}, status=500)

    return wrapped
