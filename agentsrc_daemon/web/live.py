"""Live updates as server-sent events, fed by the socket's ``subscribe``.

A stream says only that something changed (``event: change`` with the last event id)
and what state the daemon is in (``event: state``: live, catching up with its
progress, down); the page's script then fetches the server-rendered part that changed
(a fragment), so every string still goes through the templates' escaping and nothing
from a transcript travels in an event. Changes are coalesced: at most one
``change`` per ``COALESCE_S``, so a backfill of thousands of events a second costs the
page one fetch a second.

While the daemon is down the stream says so and tries again every ``RETRY_S``; a
subscriber the daemon dropped (too slow) subscribes again from its last id."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .daemon import Daemon, DaemonDown, Refused

COALESCE_S = 0.25
STATUS_EVERY_S = 1.0
RETRY_S = 2.0
KEEPALIVE_S = 15.0


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _state(status: dict[str, Any]) -> dict[str, Any]:
    p = status.get("progress") or {}
    return {"state": status.get("state"), "events": status.get("events"),
            "bytes_done": p.get("bytes_done"), "bytes_total": p.get("bytes_total"),
            "files_done": p.get("files_done"), "files_total": p.get("files_total"),
            "migration": status.get("migration")}


async def _changes(daemon: Daemon, params: dict[str, Any], with_status: bool,
                   request: Request) -> AsyncIterator[bytes]:
    """The stream's bytes: a retry hint, then state and change events until the
    browser goes away."""
    yield b"retry: 2000\n\n"
    last_state: dict[str, Any] | None = None
    since: int | None = None
    while not await request.is_disconnected():
        try:
            async with daemon.connect() as conn, daemon.connect() as poll:
                queue: asyncio.Queue[int] = asyncio.Queue()
                reader = asyncio.create_task(_subscribe(conn, {**params, "since_id": since}, queue))
                try:
                    pending: int | None = None
                    next_status = 0.0
                    loop = asyncio.get_running_loop()
                    idle = loop.time()
                    while not await request.is_disconnected():
                        if reader.done():
                            reader.result()  # its DaemonDown, or a drop to resume from
                            break
                        if with_status and loop.time() >= next_status:
                            state = _state(await poll.call("status"))
                            next_status = loop.time() + STATUS_EVERY_S
                            if state != last_state:
                                last_state = state
                                yield _sse("state", state)
                                idle = loop.time()
                        try:
                            pending = await asyncio.wait_for(queue.get(), COALESCE_S)
                            while not queue.empty():
                                pending = queue.get_nowait()
                        except TimeoutError:
                            pass
                        if pending is not None:
                            since = pending
                            yield _sse("change", {"last_id": pending})
                            pending = None
                            idle = loop.time()
                            await asyncio.sleep(COALESCE_S)
                        elif loop.time() - idle > KEEPALIVE_S:
                            yield b": keep-alive\n\n"
                            idle = loop.time()
                finally:
                    reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError, DaemonDown, Refused):
                        await reader
        except DaemonDown:
            down = {"state": "down"}
            if last_state != down:
                last_state = down
                yield _sse("state", down)
            await asyncio.sleep(RETRY_S)
        except Refused as exc:  # the params refused: say so once and end the stream
            yield _sse("error", {"message": exc.message})
            return


async def _subscribe(conn: Any, params: dict[str, Any], queue: asyncio.Queue[int]) -> None:
    async for msg in conn.stream({k: v for k, v in params.items() if v is not None}):
        method = msg.get("method")
        p = msg.get("params") or {}
        if method == "event" and isinstance(p.get("id"), int):
            queue.put_nowait(p["id"])
        elif method == "dropped":
            if isinstance(p.get("last_id"), int):
                queue.put_nowait(p["last_id"])
            return  # the daemon closed it: subscribe again from there


def _stream(request: Request, params: dict[str, Any], with_status: bool) -> Response:
    return StreamingResponse(
        _changes(request.app.state.daemon, params, with_status, request),
        media_type="text/event-stream",
        headers={"x-accel-buffering": "no"},
    )


async def now_stream(request: Request) -> Response:
    return _stream(request, {}, with_status=True)


async def session_stream(request: Request) -> Response:
    """Events of one session (its full id, as the page has it)."""
    return _stream(request, {"session_id": request.path_params["session_id"]},
                   with_status=False)
