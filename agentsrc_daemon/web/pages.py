"""The pages about sessions: now (what is running), the sessions listing, one session
turn by turn, and search. Each handler asks the daemon on one connection (its calls
in order), then renders a template; the reports' pages are in reports.py."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..events import AGENTS
from . import present
from .daemon import Connection
from .render import daemon_page, page, render

LIVE_MINUTES = (5, 15, 60, 240, 1440)
SESSION_SORTS = (("last", "latest activity"), ("started", "start"), ("tokens", "tokens"),
                 ("tools", "tool calls"))
PAGE_SIZE = 50
TURNS_PER_PAGE = 10
SEARCH_KINDS = ("prompt", "message", "command", "read", "edit", "tool_call", "title")


def _int(value: str | None, default: int, lo: int, hi: int) -> int:
    try:
        n = int(value) if value is not None else default
    except ValueError:
        return default
    return min(hi, max(lo, n))


def _text(request: Request, name: str) -> str | None:
    v = request.query_params.get(name, "").strip()
    return v or None


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "") in ("1", "on", "true", "yes")


async def status_of(d: Connection) -> dict[str, Any]:
    status: dict[str, Any] = await d.call("status")
    return status


# ---- now ------------------------------------------------------------------------------


async def now_context(d: Connection, minutes: int) -> dict[str, Any]:
    status = await status_of(d)
    if status.get("state") == "migrating":
        return {"status": status, "live": None, "today": None, "latest": [], "minutes": minutes}
    live = await d.call("sessions.live", {"since": f"{minutes}m", "limit": 50})
    today = await d.call("usage.summary", {"since": present.local_midnight_utc()})
    latest = []
    if not live["sessions"]:
        latest = (await d.call("sessions.list", {"limit": 10}))["sessions"]
    return {"status": status, "live": live, "today": today, "latest": latest,
            "minutes": minutes}


@daemon_page
async def now(request: Request) -> Response:
    minutes = _int(request.query_params.get("minutes"), 15, 1, 10080)
    async with request.app.state.daemon.connect() as d:
        ctx = await now_context(d, minutes)
    return page(request, "now.html", {**ctx, "minute_choices": LIVE_MINUTES})


@daemon_page
async def now_fragment(request: Request) -> Response:
    """The live part of "now", for the page's script to swap in."""
    minutes = _int(request.query_params.get("minutes"), 15, 1, 10080)
    async with request.app.state.daemon.connect() as d:
        ctx = await now_context(d, minutes)
    from .render import HTML

    return HTML(render("now_live.html", {**ctx, "request": request}))


# ---- sessions -------------------------------------------------------------------------


def session_filters(request: Request) -> dict[str, Any]:
    agent = _text(request, "agent")
    sort = _text(request, "sort") or "last"
    return {
        "agent": agent if agent in AGENTS else None,
        "project": _text(request, "project"),
        "model": _text(request, "model"),
        "since_day": _text(request, "since"),
        "until_day": _text(request, "until"),
        "has_findings": _flag(request, "findings"),
        "failed_commands": _flag(request, "failed"),
        "q": _text(request, "q"),
        "sort": sort if sort in dict(SESSION_SORTS) else "last",
    }


@daemon_page
async def sessions(request: Request) -> Response:
    f = session_filters(request)
    params: dict[str, Any] = {
        "agent": f["agent"], "project": f["project"], "model": f["model"],
        "since": present.date_to_utc(f["since_day"]),
        "until": present.date_to_utc(f["until_day"], end=True),
        "has_findings": f["has_findings"] or None, "failed_commands": f["failed_commands"] or None,
    }
    cursor = _text(request, "cursor")
    async with request.app.state.daemon.connect() as d:
        status = await status_of(d)
        listing = await d.call("sessions.list", {
            **params, "search": f["q"], "sort": f["sort"], "limit": PAGE_SIZE,
            "cursor": cursor})
        count = None if f["q"] else (await d.call("sessions.count", params))["sessions"]
    return page(request, "sessions.html", {
        "status": status, "f": f, "listing": listing, "count": count, "cursor": cursor,
        "agents": AGENTS, "sorts": SESSION_SORTS,
    })


@daemon_page
async def session(request: Request) -> Response:
    ident = request.path_params["session_id"]
    at = _int(request.query_params.get("at"), 0, 0, 2**62) or None
    after = _int(request.query_params.get("after"), 0, 0, 2**62)
    first_n = _int(request.query_params.get("n"), 1, 1, 10**9)
    async with request.app.state.daemon.connect() as d:
        status = await status_of(d)
        s = (await d.call("sessions.get", {"id": ident}))["session"]
        sid = s["id"]
        timeline = await d.call("sessions.timeline", {
            "id": sid, "limit": TURNS_PER_PAGE, "after_id": None if at else after,
            "around_id": at})
        files = await d.call("sessions.files", {"id": sid})
        findings = (await d.call("findings.list", {"session_id": sid, "limit": 200}))["findings"]
    numbered = at is None and (after == 0 or "n" in request.query_params)
    return page(request, "session.html", {
        "status": status, "s": s, "timeline": timeline, "files": files,
        "findings": findings, "first_n": first_n if numbered else None, "at": at,
        "live": timeline["next_after_id"] is None,
    })


@daemon_page
async def session_tail(request: Request) -> Response:
    """The turns from event ``from`` on (the last turn shown, and any after it): what a
    live session page swaps in as the session grows."""
    ident = request.path_params["session_id"]
    after = _int(request.query_params.get("from"), 0, 0, 2**62)
    n = _int(request.query_params.get("n"), 0, 0, 10**9) or None
    async with request.app.state.daemon.connect() as d:
        s = (await d.call("sessions.get", {"id": ident}))["session"]
        timeline = await d.call("sessions.timeline", {
            "id": s["id"], "after_id": after, "limit": TURNS_PER_PAGE})
    from .render import HTML

    return HTML(render("turns.html", {"s": s, "timeline": timeline, "first_n": n,
                                      "request": request}))


# ---- search ---------------------------------------------------------------------------


@daemon_page
async def search(request: Request) -> Response:
    q = _text(request, "q")
    kind = _text(request, "kind")
    agent = _text(request, "agent")
    order = "recent" if _text(request, "order") == "recent" else "rank"
    filters = {"agent": agent if agent in AGENTS else None,
               "kind": kind if kind in SEARCH_KINDS else None,
               "project": _text(request, "project"), "order": order}
    cursor = _text(request, "cursor")
    result: dict[str, Any] | None = None
    facets: dict[str, Any] | None = None
    error: str | None = None
    async with request.app.state.daemon.connect() as d:
        status = await status_of(d)
        if q:
            from .daemon import Refused

            try:
                result = await d.call("search.query", {
                    "q": q, "limit": 50, "cursor": cursor, **filters})
                facets = await d.call("search.facets", {"q": q})
            except Refused as exc:
                error = exc.message
    return page(request, "search.html", {
        "status": status, "q": q, "f": filters, "result": result, "facets": facets,
        "error": error, "kinds": SEARCH_KINDS, "agents": AGENTS, "cursor": cursor,
    })
