"""The report pages: a file's history and a project's hot spots (/files), tokens and
cost over time (/usage), the data-loss-prevention report (/findings), and the daemon's
health (/health). Charts are drawn on the server (charts.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..events import AGENTS
from . import present
from .pages import _flag, _int, _text, status_of
from .render import daemon_page, page

RANGES = (("7", "7 days"), ("30", "30 days"), ("90", "90 days"), ("365", "a year"),
          ("all", "all time"))
BLOCK_DAYS = 7  # the 5-hour blocks are listed for at most the range's last week
HISTORY_LIMIT = 200
PROJECTS = 30  # the files page lists the projects with the most sessions


def _range(request: Request, default: str = "30") -> dict[str, Any]:
    """The date range of a report: ``since``/``until`` dates (local), or ``days``."""
    since_day, until_day = _text(request, "since"), _text(request, "until")
    days = _text(request, "days") or (None if since_day or until_day else default)
    since = present.date_to_utc(since_day)
    if since is None and days and days != "all":
        since = present.local_midnight_utc(_int(days, 30, 1, 100000) - 1)
    return {"since": since, "until": present.date_to_utc(until_day, end=True),
            "since_day": since_day, "until_day": until_day, "days": days}


@daemon_page
async def files(request: Request) -> Response:
    path = _text(request, "path")
    project = _text(request, "project")
    rng = _range(request)
    history: list[dict[str, Any]] = []
    top: dict[str, Any] | None = None
    async with request.app.state.daemon.connect() as d:
        status = await status_of(d)
        if path:
            for method in ("files.reads", "files.edits"):
                page_ = await d.call(method, {"path": path, "order": "desc",
                                              "limit": HISTORY_LIMIT, "project": project})
                history += page_["events"]
            history.sort(key=lambda e: (e.get("ts") or "", e["id"]), reverse=True)
            history = history[:HISTORY_LIMIT]
        else:
            top = await d.call("files.top", {"project": project,
                                             "since": rng["since"] or "36500d", "limit": 25})
        projects = (await d.call("projects.list", {"limit": PROJECTS}))["projects"]
    return page(request, "files.html", {
        "status": status, "path": path, "project": project, "history": history,
        "top": top, "projects": projects, "rng": rng, "ranges": RANGES,
        "limit": HISTORY_LIMIT,
    })


@daemon_page
async def usage(request: Request) -> Response:
    rng = _range(request)
    agent = _text(request, "agent")
    agent = agent if agent in AGENTS else None
    project = _text(request, "project")
    async with request.app.state.daemon.connect() as d:
        status = await status_of(d)
        summary = await d.call("usage.summary", {"since": rng["since"], "until": rng["until"],
                                                 "agent": agent, "project": project})
        end = present.parse_ts(rng["until"]) or datetime.now(UTC)
        week = (end - timedelta(days=BLOCK_DAYS)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        block_since = max(rng["since"] or week, week)
        blocks = await d.call("usage.blocks", {"since": block_since, "until": rng["until"]})
    days = sorted(summary["by_day"], key=lambda r: r["day"])
    return page(request, "usage.html", {
        "status": status, "rng": rng, "ranges": RANGES, "summary": summary, "days": days,
        "blocks": blocks, "agent": agent, "project": project, "agents": AGENTS,
        "has_cost": any(isinstance(r.get("cost"), dict) for r in days),
    })


@daemon_page
async def findings(request: Request) -> Response:
    rng = _range(request, default="all")
    before = _int(request.query_params.get("before"), 0, 0, 2**62) or None
    ftype = _text(request, "type")
    project = _text(request, "project")
    async with request.app.state.daemon.connect() as d:
        status = await status_of(d)
        report = await d.call("findings.report", {"since": rng["since"], "sessions_limit": 0})
        by_day = await d.call("findings.by_day", {"since": rng["since"]})
        listing = await d.call("findings.list", {
            "since": rng["since"], "order": "desc", "limit": 100, "before_id": before,
            "type": ftype, "project": project})
    return page(request, "findings.html", {
        "status": status, "rng": rng, "ranges": RANGES, "report": report,
        "by_day": by_day["days"], "listing": listing, "type": ftype, "project": project,
        "before": before,
    })


@daemon_page
async def health(request: Request) -> Response:
    async with request.app.state.daemon.connect() as d:
        status = await status_of(d)
        store = None if status.get("state") == "migrating" else await d.call("store.info")
    return page(request, "health.html", {
        "status": status, "store": store, "web": request.app.state.info,
        "show_all": _flag(request, "all"),
    })
