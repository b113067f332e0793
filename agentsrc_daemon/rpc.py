"""The socket methods: parameter checking and shaping of results. Queries are the
store's (store.Reader); the transport is the server's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .events import AGENTS, EVENT_KINDS
from .server import INVALID_PARAMS, Handler, RpcError
from .store import Reader

MAX_LIMIT = 10_000


def _int(params: dict[str, Any], name: str, default: int, lo: int = 0, hi: int = MAX_LIMIT) -> int:
    value = params.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise RpcError(INVALID_PARAMS, f"{name} must be an integer")
    if not lo <= value <= hi:
        raise RpcError(INVALID_PARAMS, f"{name} must be between {lo} and {hi}")
    return value


def _str(params: dict[str, Any], name: str, required: bool = False) -> str | None:
    value = params.get(name)
    if value is None:
        if required:
            raise RpcError(INVALID_PARAMS, f"{name} is required")
        return None
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name} must be a non-empty string")
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


def _session(reader: Reader, params: dict[str, Any], name: str = "session_id") -> str | None:
    ident = _str(params, name)
    if ident is None:
        return None
    resolved = reader.resolve_session(ident)
    if resolved is None:
        raise RpcError(INVALID_PARAMS, f"no such session: {ident}")
    return resolved


def sessions_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    agent = _str(params, "agent")
    if agent is not None and agent not in AGENTS:
        raise RpcError(INVALID_PARAMS, f"agent must be one of {', '.join(AGENTS)}")
    limit = _int(params, "limit", 50, 1)
    return {
        "sessions": reader.sessions(
            agent=agent, limit=limit, cwd=_str(params, "cwd"), project=_str(params, "project")
        )
    }


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
    limit = _int(params, "limit", 100, 1)
    since = _int(params, "since_id", 0, 0, 2**62)
    events = reader.events(
        session_id=sid,
        kinds=_kinds(params),
        since_id=since,
        limit=limit,
        call_id=_str(params, "call_id"),
    )
    next_id = events[-1]["id"] if len(events) == limit else None
    return {"events": events, "next_since_id": next_id}


def sources_list(reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    return {"sources": reader.sources(_str(params, "path_like"))}


def subscribe_backlog(
    reader: Reader, since: int, filters: dict[str, Any], limit: int
) -> list[dict[str, Any]]:
    return reader.events(
        session_id=filters.get("session_id"),
        kinds=filters.get("kinds"),
        since_id=since,
        limit=limit,
    )


def build_methods(
    status: Callable[[Reader], dict[str, Any]],
    extra: dict[str, Handler] | None = None,
) -> dict[str, Handler]:
    methods: dict[str, Handler] = {
        "status": lambda reader, params: status(reader),
        "sessions.list": sessions_list,
        "sessions.get": sessions_get,
        "events.list": events_list,
        "sources.list": sources_list,
    }
    if extra:
        methods.update(extra)
    return methods
