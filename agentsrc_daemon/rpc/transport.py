"""The socket server: JSON-RPC 2.0 over a Unix socket, one JSON object per line
(framed by framing.py; a request over MAX_REQUEST_BYTES gets an error and the rest of
it is discarded, never held).

Transport only: method handlers live in rpc/methods.py. Each connection gets a thread and
its own read-only database connection. ``subscribe`` turns a connection into a stream of
``event`` notifications (its handler in the methods table only checks the params); a
subscriber that cannot keep up is dropped with a notice (its queue is bounded), so a slow
client never stalls ingest.

Only the daemon's own user may connect: the socket is 0600 in a 0700 directory, and
on Linux the peer's uid is checked with SO_PEERCRED.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import stat
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import structlog

from .. import framing
from ..errors import NotPrivate, RpcError
from ..store import Reader

log = structlog.get_logger("agentsrc.server")

MAX_REQUEST_BYTES = 1 << 20
SUBSCRIBER_QUEUE = 10_000  # events buffered per subscriber before it is dropped
SEND_TIMEOUT_S = 10.0

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a subscriber asked for, its params checked by the methods table's "subscribe"
    handler (rpc.methods.subscribe_params)."""

    since_id: int | None  # replay the stored events after it first; None: only new ones
    kinds: list[str] | None
    session_id: str | None

    @property
    def takes_all(self) -> bool:
        return not (self.kinds or self.session_id)

    def matches(self, kind: Any, session_id: Any) -> bool:
        """An event of this kind and session is one it asked for."""
        if self.kinds and kind not in self.kinds:
            return False
        return not (self.session_id and session_id != self.session_id)


class Subscriber:
    def __init__(self, subscription: Subscription) -> None:
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue(SUBSCRIBER_QUEUE)
        self.subscription = subscription
        self.dropped = False

    def wants(self, ev: dict[str, Any]) -> bool:
        return self.subscription.matches(ev.get("kind"), ev.get("session_id"))


class Hub:
    """Fan-out of newly committed events to subscribers. ``publish`` never blocks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: set[Subscriber] = set()

    def add(self, sub: Subscriber) -> None:
        with self._lock:
            self._subs.add(sub)

    def remove(self, sub: Subscriber) -> None:
        with self._lock:
            self._subs.discard(sub)

    def count(self) -> int:
        with self._lock:
            return len(self._subs)

    def wanted(self) -> Callable[[str, str], bool] | None:
        """Whether some subscriber wants an event, by its kind and session; None when
        one takes every event. The committer builds the events' JSON only for those
        (a backfill's batch of 2,000, built whole for a subscriber to prompts, cost
        the ingest thread about 20 ms)."""
        with self._lock:
            subscriptions = [s.subscription for s in self._subs if not s.dropped]
        if any(s.takes_all for s in subscriptions):
            return None
        return lambda kind, session_id: any(s.matches(kind, session_id) for s in subscriptions)

    def publish(self, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            if sub.dropped:
                continue
            for ev in events:
                if not sub.wants(ev):
                    continue
                try:
                    sub.queue.put_nowait(ev)
                except queue.Full:
                    # The subscriber's thread sees the flag and sends the notice; the
                    # queue is full, so nothing more is put in it.
                    sub.dropped = True
                    break


Handler = Callable[[Reader, dict[str, Any]], Any]


def peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's uid (Linux SO_PEERCRED); None where unsupported."""
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def prepare_socket_dir(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = path.parent.stat()
    if st.st_uid != os.getuid():
        raise NotPrivate(f"socket directory {path.parent} belongs to another user")
    os.chmod(path.parent, 0o700)


# Idle Readers kept for the next connections: opening one (a connection, the schema
# parsed, the functions registered) cost 0.8 ms of the daemon's 1.5 ms for a `status`, and
# every CLI command and progress poll is a connection of its own. Each is given back with
# its page cache released, so two cost the live daemon little memory.
IDLE_READERS = 2


class Server:
    def __init__(
        self,
        socket_path: Path,
        db_path: Path,
        methods: dict[str, Handler],
        hub: Hub,
        subscribe_backlog: Callable[[Reader, int, Subscription, int], list[dict[str, Any]]],
    ) -> None:
        self.socket_path = socket_path
        self.db_path = db_path
        self.methods = methods
        self.hub = hub
        self.subscribe_backlog = subscribe_backlog
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._idle_readers: list[Reader] = []

    # ---- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        prepare_socket_dir(self.socket_path)
        # The caller holds the data-dir lock, so a socket file here is a stale one
        # left by a crash: replace it.
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(self.socket_path)
            if stat.S_ISSOCK(st.st_mode) or st.st_size == 0:
                os.unlink(self.socket_path)
            else:
                raise FileExistsError(f"{self.socket_path} exists and is not a socket")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(self.socket_path))
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        sock.listen(64)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept_loop, name="rpc-accept", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._lock:
            idle, self._idle_readers = self._idle_readers, []
        for reader in idle:
            reader.close()

    def _take_reader(self) -> Reader:
        with self._lock:
            if self._idle_readers:
                return self._idle_readers.pop()
        return Reader(self.db_path)

    def _give_back(self, reader: Reader) -> None:
        """A connection's Reader, kept for the next one unless the pool is full, the
        server stops, or it still holds a read transaction (an unfinished statement):
        kept, it would hold a snapshot of the WAL and stop every checkpoint."""
        idle = reader.ready_for_reuse()
        with self._lock:
            if idle and not self._stopping.is_set() and len(self._idle_readers) < IDLE_READERS:
                self._idle_readers.append(reader)
                return
        reader.close()

    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._stopping.is_set():
                    return
                continue
            uid = peer_uid(conn)
            if uid is not None and uid != os.getuid():
                log.warning("peer_rejected", peer_uid=uid)
                with contextlib.suppress(OSError):
                    conn.sendall(_error_line(None, INVALID_REQUEST, "permission denied"))
                conn.close()
                continue
            with self._lock:
                self._conns.add(conn)
            threading.Thread(
                target=self._serve_conn, args=(conn,), name="rpc-conn", daemon=True
            ).start()

    # ---- a connection --------------------------------------------------------------

    def _serve_conn(self, conn: socket.socket) -> None:
        reader: Reader | None = None
        try:
            reader = self._take_reader()
            buf = bytearray()
            # Inside a request over the cap: its error is sent, the rest is dropped up
            # to its newline.
            discarding = False
            while not self._stopping.is_set():
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                start = 0
                while True:
                    if discarding:
                        after = framing.skip_past_newline(buf, start)
                        if after is None:
                            start = len(buf)
                            break
                        discarding = False
                        start = after
                    framed = framing.next_line(buf, start, MAX_REQUEST_BYTES)
                    if isinstance(framed, framing.NeedMore):
                        break
                    if isinstance(framed, framing.TooLong):
                        conn.sendall(_error_line(None, INVALID_REQUEST, "request over 1 MiB"))
                        if framed.end is None:
                            log.warning("request_too_large")
                            discarding = True
                            start = len(buf)
                            break
                        start = framed.end + 1
                        continue
                    line = bytes(buf[framed.start : framed.end])
                    start = framed.next_start
                    if not line.strip():
                        continue
                    if self._handle_line(conn, reader, line):
                        return  # the connection became a subscription and ended
                del buf[:start]
        except Exception as exc:  # never let one client take the server down
            log.warning("connection_error", error=type(exc).__name__)
        finally:
            with self._lock:
                self._conns.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()
            if reader is not None:
                self._give_back(reader)

    def _handle_line(self, conn: socket.socket, reader: Reader, line: bytes) -> bool:
        try:
            req = orjson.loads(line)
        except orjson.JSONDecodeError:
            conn.sendall(_error_line(None, PARSE_ERROR, "parse error: not valid JSON"))
            return False
        if not isinstance(req, dict) or req.get("jsonrpc") != "2.0" or not isinstance(
            req.get("method"), str
        ):
            rid = req.get("id") if isinstance(req, dict) else None
            conn.sendall(
                _error_line(rid, INVALID_REQUEST, "invalid request: need jsonrpc '2.0' and method")
            )
            return False
        rid = req.get("id")
        method = req["method"]
        params = req.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            conn.sendall(_error_line(rid, INVALID_PARAMS, "params must be an object"))
            return False
        if method == "subscribe":
            self._subscribe(conn, reader, rid, params)
            return True
        handler = self.methods.get(method)
        if handler is None:
            conn.sendall(_error_line(rid, METHOD_NOT_FOUND, f"method not found: {method}"))
            return False
        try:
            result = handler(reader, params)
        except RpcError as exc:
            conn.sendall(_error_line(rid, exc.code, exc.message, exc.data))
            return False
        except Exception as exc:
            log.error("method_failed", method=method, error=type(exc).__name__, detail=str(exc))
            conn.sendall(_error_line(rid, INTERNAL_ERROR, f"internal error: {type(exc).__name__}"))
            return False
        if rid is not None:
            conn.sendall(_result_line(rid, result))
        return False

    def _subscribe(
        self, conn: socket.socket, reader: Reader, rid: Any, params: dict[str, Any]
    ) -> None:
        """Stream events. Registration happens before the backlog query, and events are
        de-duplicated by id, so resuming with since_id leaves no gap."""
        check_params = self.methods.get("subscribe")
        if check_params is None:
            conn.sendall(_error_line(rid, METHOD_NOT_FOUND, "method not found: subscribe"))
            return
        try:
            subscription = check_params(reader, params)
        except RpcError as exc:
            conn.sendall(_error_line(rid, exc.code, exc.message, exc.data))
            return
        if not isinstance(subscription, Subscription):
            raise TypeError(f"the subscribe handler returned {type(subscription).__name__}")
        since = subscription.since_id
        sub = Subscriber(subscription)
        self.hub.add(sub)
        conn.settimeout(SEND_TIMEOUT_S)
        try:
            head = reader.last_event_id()
            conn.sendall(_result_line(rid, {"subscribed": True, "last_id": head}))
            last = head if since is None else self._send_backlog(conn, reader, subscription, since)
            self._stream(conn, sub, last)
        except OSError:
            return
        finally:
            self.hub.remove(sub)

    def _send_backlog(
        self, conn: socket.socket, reader: Reader, subscription: Subscription, since: int
    ) -> int:
        """The events after ``since`` already committed, in pages; the last id sent."""
        last = since
        while True:
            page = self.subscribe_backlog(reader, last, subscription, 1000)
            for ev in page:
                conn.sendall(_notification("event", ev))
                last = ev["id"]
            if len(page) < 1000:
                return last

    def _stream(self, conn: socket.socket, sub: Subscriber, last: int) -> None:
        """New events as the hub hands them over, each once (an id at or below ``last``
        came in the backlog already), until the server stops or the subscriber falls
        behind (then a ``dropped`` notice, and the connection ends)."""
        while not self._stopping.is_set():
            if sub.dropped:
                item = None
            else:
                try:
                    item = sub.queue.get(timeout=1.0)
                except queue.Empty:
                    continue
            if item is None:
                conn.sendall(
                    _notification(
                        "dropped",
                        {
                            "reason": "subscriber too slow: queue full",
                            "last_id": last,
                            "resume": "subscribe again with since_id=last_id",
                        },
                    )
                )
                log.warning("subscriber_dropped", last_id=last)
                return
            if item["id"] <= last:
                continue
            conn.sendall(_notification("event", item))
            last = item["id"]


def _result_line(rid: Any, result: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, default=str) + b"\n"


def _error_line(rid: Any, code: int, message: str, data: Any = None) -> bytes:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": err}) + b"\n"


def _notification(method: str, params: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params}, default=str) + b"\n"


if sys.platform == "win32":  # pragma: no cover
    raise ImportError("agentsrc needs Unix sockets")
