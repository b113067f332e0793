"""The socket methods: parameter checking and shaping of results. Queries are the
store's (store.Reader); the transport is the server's (rpc/transport.py), subscribe's
stream included: its params are checked here, by the same rules as events.list's."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import orjson

from ..errors import RpcError
from ..events import AGENTS, EVENT_KINDS
from ..store import Reader
from ..store.queries.fidelity import summary as fidelity_summary
from ..store.ranked import Cut
from ..store.search import TITLE_KIND, QuerySyntaxError
from ..store.usage_report import BYS as USAGE_BYS
from .transport import INVALID_PARAMS, Handler, Subscription

MAX_LIMIT = 10_000
MAX_EVENT_ID = 2**62  # the largest since_id accepted


def _int_param(
    params: dict[str, Any], name: str, default: int, lo: int = 0, hi: int = MAX_LIMIT
) -> int:
    """A request's integer param, checked: a JSON integer (not a float, not a bool: a
    request is typed, unlike a transcript) within [lo, hi]; ``default`` when absent."""
    value = params.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise RpcError(INVALID_PARAMS, f"{name} must be an integer")
    if not lo <= value <= hi:
        raise RpcError(INVALID_PARAMS, f"{name} must be between {lo} and {hi}")
    return value


def _str_param(params: dict[str, Any], name: str, required: bool = False) -> str | None:
    value = params.get(name)
    if value is None:
        if required:
            raise RpcError(INVALID_PARAMS, f"{name} is required")
        return None
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name} must be a non-empty string")
    return value


def _bool_param(params: dict[str, Any], name: str) -> bool:
    value = params.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"{name} must be a boolean")
    return value


def _kinds(params: dict[str, Any]) -> list[str] | None:
    kinds = params.get("kinds")
    kind = params.get("kind")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind
    if kinds is None:
        return None
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise RpcError(INVALID_PARAMS, "kind must be a string or kinds a list of strings")
    unknown = [k for k in kinds if k not in EVENT_KINDS]
    if unknown:
        raise RpcError(
            INVALID_PARAMS, f"unknown kind {unknown[0]!r}", {"kinds": list(EVENT_KINDS)}
        )
    return kinds


def _next_since_id(rows: list[dict[str, Any]], limit: int) -> int | None:
    """The pagination cursor of a list: the last id when the page is full (there may be
    more after it), else None (this was the last page)."""
    return rows[-1]["id"] if len(rows) == limit else None


def _order(params: dict[str, Any]) -> tuple[int | None, bool]:
    """``order`` (``asc``, the default: oldest first, paged with ``since_id``; or
    ``desc``: newest first, paged back with ``before_id``) -> (before_id, newest first)."""
    order = params.get("order", "asc")
    if order not in ("asc", "desc", None):
        raise RpcError(INVALID_PARAMS, "order must be 'asc' or 'desc'")
    before = params.get("before_id")
    before_id = None if before is None else _int_param(params, "before_id", 0, 1, MAX_EVENT_ID)
    return before_id, order == "desc"


def _page(rows: list[dict[str, Any]], limit: int, newest_first: bool) -> dict[str, Any]:
    """The cursor of a list in either order: ``next_since_id`` oldest first,
    ``next_before_id`` newest first."""
    if newest_first:
        return {"next_before_id": _next_since_id(rows, limit)}
    return {"next_since_id": _next_since_id(rows, limit)}


def _session(reader: Reader, params: dict[str, Any], name: str = "session_id") -> str | None:
    ident = _str_param(params, name)
    if ident is None:
        return None
    resolved = reader.resolve_session(ident)
    if resolved is None:
        raise RpcError(INVALID_PARAMS, f"no such session: {ident}")
    return resolved


def _agent_param(params: dict[str, Any]) -> str | None:
    """The ``agent`` filter: one of the agents agentsrc reads, or None."""
    agent = _str_param(params, "agent")
    if agent is not None and agent not in AGENTS:
        raise RpcError(INVALID_PARAMS, f"agent must be one of {', '.join(AGENTS)}")
    return agent


def sessions_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    agent = _agent_param(params)
    limit = _int_param(params, "limit", 50, 1)
    sort = params.get("sort", "last")
    if sort not in Reader.SESSION_SORTS:
        raise RpcError(INVALID_PARAMS, f"sort must be one of {', '.join(Reader.SESSION_SORTS)}")
    after: tuple[Any, str] | None = None
    search = _str_param(params, "search")
    search_cut: list[int] | None = None
    searched_over: int | None = None
    cursor = _str_param(params, "cursor")
    if cursor:
        c = _decode_cursor(cursor)
        if c.get("sort") != sort or "k" not in c or not isinstance(c.get("i"), str):
            raise RpcError(INVALID_PARAMS, "cursor is not one this daemon returned for this sort")
        after = (c["k"], c["i"])
        # A search's candidates, as the first page had them (store/ranked.py).
        search_cut, searched_over = c.get("q"), c.get("h")
        if not isinstance(searched_over, int | None) or search_cut is not None and not (
            isinstance(search_cut, list) and len(search_cut) == 4
            and all(isinstance(v, int) and not isinstance(v, bool) for v in search_cut)
        ):
            raise RpcError(INVALID_PARAMS, "cursor is not one this daemon returned for this sort")
    try:
        listing = reader.sessions_listing(
            agent=agent,
            limit=limit,
            cwd=_str_param(params, "cwd"),
            project=_str_param(params, "project"),
            since_ts=_since(params),
            until_ts=_until(params),
            model=_str_param(params, "model"),
            search=search,
            sort=sort,
            after=after,
            search_cut=search_cut,
            has_findings=_bool_param(params, "has_findings"),
            failed_commands=_bool_param(params, "failed_commands"),
        )
    except QuerySyntaxError as exc:
        raise RpcError(INVALID_PARAMS, f"bad search query: {exc}") from None
    rows = listing["sessions"]
    if listing["searched_over"] is not None:
        searched_over = listing["searched_over"]
    next_cursor = None
    if len(rows) == limit:
        k, i = rows[-1]["_key"]
        token: dict[str, Any] = {"sort": sort, "k": k, "i": i}
        if search:
            token.update(q=listing["search_cut"], h=searched_over)
        next_cursor = _encode_cursor(token)
    for r in rows:
        del r["_key"]
    out: dict[str, Any] = {"sessions": rows, "next_cursor": next_cursor}
    if search:
        out.update(searched_over=searched_over, capped=listing["capped"])
    return out


def sessions_get(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    sid = _session(reader, params, "id" if "id" in params else "session_id")
    if sid is None:
        raise RpcError(INVALID_PARAMS, "id is required")
    session = reader.session(sid)
    if session is None:
        raise RpcError(INVALID_PARAMS, f"no such session: {sid}")
    return {"session": session}


def events_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    sid = _session(reader, params)
    limit = _int_param(params, "limit", 100, 1)
    since = _int_param(params, "since_id", 0, 0, MAX_EVENT_ID)
    events = reader.events(
        session_id=sid,
        kinds=_kinds(params),
        since_id=since,
        limit=limit,
        call_id=_str_param(params, "call_id"),
    )
    return {"events": events, "next_since_id": _next_since_id(events, limit)}


_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(value: str, now: datetime | None = None, name: str = "since") -> str:
    """A relative duration (30m, 12h, 7d, 2w) or an ISO timestamp -> ISO UTC (...Z)."""
    m = _DURATION.match(value.strip())
    now = now or datetime.now(UTC)
    if m:
        moment = now - timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)])
    else:
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise RpcError(
                INVALID_PARAMS, f"{name} must be a duration like 7d, 12h, 30m or an ISO timestamp"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _since(params: dict[str, Any], name: str = "since") -> str | None:
    value = _str_param(params, name)
    return parse_since(value, name=name) if value else None


def _file_events(kind: str) -> Handler:
    def handler(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
        agent = _agent_param(params)
        limit = _int_param(params, "limit", 100, 1)
        before_id, newest_first = _order(params)
        events = reader.file_events(
            kind,
            _str_param(params, "path"),
            session_id=_session(reader, params),
            agent=agent,
            project=_str_param(params, "project"),
            since_ts=_since(params),
            since_id=_int_param(params, "since_id", 0, 0, MAX_EVENT_ID),
            limit=limit,
            before_id=before_id,
            newest_first=newest_first,
        )
        return {"events": events, **_page(events, limit, newest_first)}

    return handler


def commands_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    failed = params.get("failed")
    if failed is not None and not isinstance(failed, bool):
        raise RpcError(INVALID_PARAMS, "failed must be a boolean")
    exit_code = params.get("exit_code")
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        raise RpcError(INVALID_PARAMS, "exit_code must be an integer")
    limit = _int_param(params, "limit", 100, 1)
    before_id, newest_first = _order(params)
    events = reader.commands(
        session_id=_session(reader, params),
        project=_str_param(params, "project"),
        failed=failed,
        exit_code=exit_code,
        since_ts=_since(params),
        since_id=_int_param(params, "since_id", 0, 0, MAX_EVENT_ID),
        limit=limit,
        before_id=before_id,
        newest_first=newest_first,
    )
    return {"events": events, **_page(events, limit, newest_first)}


def sessions_files(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    sid = _session(reader, params, "id" if "id" in params else "session_id")
    if sid is None:
        raise RpcError(INVALID_PARAMS, "id is required")
    return reader.session_files(sid)


def findings_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    limit = _int_param(params, "limit", 100, 1)
    before_id, newest_first = _order(params)
    findings = reader.findings(
        session_id=_session(reader, params),
        path=_str_param(params, "path"),
        secret_type=_str_param(params, "type"),
        project=_str_param(params, "project"),
        since_ts=_since(params),
        since_id=_int_param(params, "since_id", 0, 0, MAX_EVENT_ID),
        limit=limit,
        before_id=before_id,
        newest_first=newest_first,
    )
    return {"findings": findings, **_page(findings, limit, newest_first)}


def usage_summary(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    agent = _agent_param(params)
    return reader.usage_summary(
        since_ts=_since(params),
        until_ts=_since(params, "until"),
        project=_str_param(params, "project"),
        agent=agent,
    )


def usage_report(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    """Usage and cost in range, by day, week, month, session, project, model or agent."""
    by = params.get("by", "model")
    if by not in USAGE_BYS:
        raise RpcError(INVALID_PARAMS, f"by must be one of {', '.join(USAGE_BYS)}")
    since, until = _since(params), _until(params)
    if since is not None and until is not None and until <= since:
        raise RpcError(INVALID_PARAMS, "until must be after since")
    return reader.usage_report(
        by=by, since_ts=since, until_ts=until, project=_str_param(params, "project"),
        agent=_agent_param(params), limit=_int_param(params, "limit", 50, 1),
    )


def usage_statusline(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    """The status line's figures: one session's cost (its agent's own id, or ours),
    the cost since ``day_start`` (the start of the user's day: an ISO time with its
    offset; default the UTC day's start) and the active 5-hour block."""
    agent = _agent_param(params) or "claude-code"
    native = _str_param(params, "session_id")
    session_id = None
    if native is not None:
        session_id = native if native.startswith(agent + ":") else f"{agent}:{native}"
    now = datetime.now(UTC)
    day_start = _since(params, "day_start") or now.strftime("%Y-%m-%dT00:00:00.000Z")
    return reader.usage_statusline(session_id, day_start, now)


def findings_report(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    limit = params.get("sessions_limit")
    return reader.findings_report(
        since_ts=_since(params),
        sessions_limit=None if limit is None else _int_param(params, "sessions_limit", 0),
    )


def sources_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    return {"sources": reader.sources(_str_param(params, "path_like"))}


def fidelity(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    """What became of the records read: per adapter, version and record type (``rows``),
    and per adapter and version with the share not understood (``versions``)."""
    rows = reader.fidelity(_str_param(params, "adapter"), _str_param(params, "version"))
    return {"rows": rows, "versions": fidelity_summary(rows)}


def subscribe_params(reader: Reader, params: dict[str, Any]) -> Subscription:
    """subscribe's params, checked as events.list checks the same ones (an unknown kind
    is refused alike). The session is not resolved: a subscriber may wait for a session
    that has not started, so ``session_id`` filters by the exact id."""
    since = params.get("since_id")
    return Subscription(
        since_id=None if since is None else _int_param(params, "since_id", 0, 0, MAX_EVENT_ID),
        kinds=_kinds(params),
        session_id=_str_param(params, "session_id"),
    )


def subscribe_backlog(
    reader: Reader, since: int, subscription: Subscription, limit: int
) -> list[dict[str, Any]]:
    return reader.events(
        session_id=subscription.session_id,
        kinds=subscription.kinds,
        since_id=since,
        limit=limit,
    )


def _until(params: dict[str, Any]) -> str | None:
    value = _str_param(params, "until")
    if not value:
        return None
    try:
        return parse_since(value)
    except RpcError:
        raise RpcError(
            INVALID_PARAMS, "until must be a duration like 7d, 12h, 30m or an ISO timestamp"
        ) from None


def _encode_cursor(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(value)).decode().rstrip("=")


def _decode_cursor(cursor: str) -> dict[str, Any]:
    try:
        value = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise RpcError(INVALID_PARAMS, "cursor is not one this daemon returned") from None
    if not isinstance(value, dict):
        raise RpcError(INVALID_PARAMS, "cursor is not one this daemon returned")
    return value


SEARCHABLE = ("prompt", "message", "command", "read", "edit", "tool_call", TITLE_KIND)


def _search_kinds(params: dict[str, Any]) -> list[str] | None:
    """``kind`` (one) or ``kinds`` (a list) of the searchable kinds; None: every kind."""
    kinds = params.get("kinds")
    kind = params.get("kind")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind
    if kinds is None:
        return None
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise RpcError(INVALID_PARAMS, "kind must be a string or kinds a list of strings")
    bad = [k for k in kinds if k not in SEARCHABLE]
    if bad:
        raise RpcError(INVALID_PARAMS, f"kind {bad[0]!r} is not searched",
                       {"kinds": list(SEARCHABLE)})
    return kinds


class _SearchPage(NamedTuple):
    """Where a search's next page starts, from its cursor (all None on the first)."""
    upto: int | None = None
    now: str | None = None
    after: tuple[float, int] | None = None
    cut: Cut | None = None


def _search_page(params: dict[str, Any], order: str) -> _SearchPage:
    cursor = _str_param(params, "cursor")
    if not cursor:
        return _SearchPage()
    c = _decode_cursor(cursor)
    try:
        page = _SearchPage(int(c["u"]), str(c["n"]), (float(c["s"]), int(c["i"])),
                           None if c.get("k") is None else Cut.from_json(c["k"]))
    except (KeyError, TypeError, ValueError):
        raise RpcError(INVALID_PARAMS, "cursor is not one this daemon returned") from None
    if c.get("o", "rank") != order:
        raise RpcError(INVALID_PARAMS, "cursor was returned for another order")
    return page


def search_query(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    q = _str_param(params, "q", required=True)
    assert q is not None
    agent = _agent_param(params)
    kinds = _search_kinds(params)
    order = params.get("order", "rank")
    if order not in ("rank", "recent"):
        raise RpcError(INVALID_PARAMS, "order must be rank or recent")
    limit = _int_param(params, "limit", 20, 1, 1000)
    page = _search_page(params, order)
    try:
        result = reader.search(
            q,
            agent=agent,
            project=_str_param(params, "project"),
            session_id=_session(reader, params, "session" if "session" in params else "session_id"),
            kinds=kinds,
            since_ts=_since(params),
            until_ts=_until(params),
            limit=limit,
            order=order,
            upto=page.upto,
            now=page.now,
            after=page.after,
            cut=page.cut,
        )
    except QuerySyntaxError as exc:
        raise RpcError(INVALID_PARAMS, f"bad search query: {exc}", {"q": q}) from None
    hits = result["hits"]
    next_cursor = None
    if len(hits) == limit:
        score, rid = hits[-1]["_key"]
        token = {"u": result["upto"], "n": result["now"], "o": order, "s": score, "i": rid}
        if result["cut"] is not None:  # a capped listing's candidates, for every page
            token["k"] = result["cut"].to_json()
        next_cursor = _encode_cursor(token)
    for h in hits:
        del h["_key"]
    return {
        "hits": hits,
        "next_cursor": next_cursor,
        "ranked_over": result["ranked_over"],
        "capped": result["capped"],
    }


def sessions_turns(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    sid = _session(reader, params, "id" if "id" in params else "session_id")
    if sid is None:
        raise RpcError(INVALID_PARAMS, "id is required")
    return reader.session_turns(
        sid,
        after_id=_int_param(params, "after_id", 0, 0, MAX_EVENT_ID),
        limit=_int_param(params, "limit", 20, 1, 1000),
    )


# ---- the web page's views (docs/web.md); their SQL is in store/timeline.py,
# store/activity.py and store/breakdowns.py.


def sessions_timeline(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    sid = _session(reader, params, "id" if "id" in params else "session_id")
    if sid is None:
        raise RpcError(INVALID_PARAMS, "id is required")
    around = params.get("around_id")
    return reader.session_timeline(
        sid,
        after_id=_int_param(params, "after_id", 0, 0, MAX_EVENT_ID),
        limit=_int_param(params, "limit", 20, 1, 500),
        around_id=None if around is None else _int_param(params, "around_id", 0, 1, MAX_EVENT_ID),
    )


def sessions_live(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    since = _since(params) or parse_since("15m")
    return reader.live_sessions(since, _int_param(params, "limit", 20, 1, 200))


def sessions_count(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    return {"sessions": reader.count_sessions(
        agent=_agent_param(params),
        cwd=_str_param(params, "cwd"),
        project=_str_param(params, "project"),
        since_ts=_since(params),
        until_ts=_until(params),
        model=_str_param(params, "model"),
        has_findings=_bool_param(params, "has_findings"),
        failed_commands=_bool_param(params, "failed_commands"),
    )}


def usage_blocks(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    since = _since(params) or parse_since("2d")
    until = _until(params)
    if until is not None and until <= since:
        raise RpcError(INVALID_PARAMS, "until must be after since")
    return reader.usage_blocks(since, until)


def findings_by_day(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    since = _since(params)
    return reader.findings_by_day(since[:10] if since else None)


def files_top(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    return reader.files_top(
        project=_str_param(params, "project"),
        since_ts=_since(params) or parse_since("30d"),
        limit=_int_param(params, "limit", 20, 1, 1000),
    )


def projects_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    return {"projects": reader.projects(_int_param(params, "limit", 100, 1, 1000))}


def search_facets(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    q = _str_param(params, "q", required=True)
    assert q is not None
    try:
        return reader.search_facets(q)
    except QuerySyntaxError as exc:
        raise RpcError(INVALID_PARAMS, f"bad search query: {exc}", {"q": q}) from None


def build_methods(status: Callable[[Reader], dict[str, Any]]) -> dict[str, Handler]:
    return {
        "status": lambda reader, params: status(reader),
        # Checks the params only: the transport turns the connection into the stream.
        "subscribe": subscribe_params,
        "sessions.list": sessions_list,
        "sessions.get": sessions_get,
        "events.list": events_list,
        "sources.list": sources_list,
        "fidelity": fidelity,
        "files.reads": _file_events("read"),
        "files.edits": _file_events("edit"),
        "commands.list": commands_list,
        "sessions.files": sessions_files,
        "findings.list": findings_list,
        "documents.list": lambda reader, params: {"documents": reader.documents()},
        "findings.report": findings_report,
        "usage.summary": usage_summary,
        "usage.report": usage_report,
        "usage.statusline": usage_statusline,
        "search.query": search_query,
        "sessions.turns": sessions_turns,
        "sessions.timeline": sessions_timeline,
        "sessions.live": sessions_live,
        "sessions.count": sessions_count,
        "usage.blocks": usage_blocks,
        "findings.by_day": findings_by_day,
        "files.top": files_top,
        "projects.list": projects_list,
        "search.facets": search_facets,
        "store.info": lambda reader, params: reader.store_info(),
    }
