"""Who may read the page: every request passes here before any page sees it (an ASGI
middleware around the whole app, static files included).

In order, each refusal a page of its own with no data in it:

1. the ``Host`` header must name this server as it was bound (the loopback names and
   addresses and the port): a page on another site whose name was made to resolve to
   127.0.0.1 (DNS rebinding) sends its own name and is refused (403);
2. on Linux, a connection from the loopback must come from a process of this user (the
   uid that owns the client's end in /proc/net/tcp{,6}): another user on the machine
   is refused even with the token (403);
3. only GET and HEAD: the page only reads (405);
4. the token: ``?token=`` equal to this server's sets the cookie (HttpOnly,
   SameSite=Strict) and redirects to the same URL without it, so it leaves the address
   bar and history; every other request needs that cookie (401).

Every response, refusals included, carries the security headers: a strict
Content-Security-Policy (only this origin's own script and style files, no inline
script, no eval, nothing framed or framing), no referrer, no sniffing, no caching
(the pages hold private data)."""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none';"
    " form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_PEERS = ("127.0.0.1", "::1", "::ffff:127.0.0.1")

REFUSED_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>agentsrc: {title}</title></head><body><h1>{title}</h1><p>{text}</p></body></html>"""


def allowed_hosts(host: str, port: int) -> set[str]:
    """The Host values this server answers to: the loopback names with the port, and the
    address it was bound to (``--host``) when that is another."""
    names = set(LOOPBACK_NAMES)
    if host not in ("0.0.0.0", "::", ""):
        names.add(f"[{host}]" if ":" in host else host)
    return {f"{n}:{port}" for n in names}


class PeerUids:
    """The uid that owns a loopback TCP connection's client end, from /proc/net/tcp
    and tcp6 (Linux), remembered a few seconds per (client port, server port)."""

    TTL = 10.0

    def __init__(self, proc: str = "/proc/net") -> None:
        self.proc = proc
        self._seen: dict[tuple[int, int], tuple[float, int | None]] = {}

    def available(self) -> bool:
        return os.path.exists(os.path.join(self.proc, "tcp"))

    def uid(self, client_port: int, server_port: int) -> int | None:
        now = time.monotonic()
        key = (client_port, server_port)
        hit = self._seen.get(key)
        if hit is not None and now - hit[0] < self.TTL:
            return hit[1]
        uid = self._lookup(client_port, server_port)
        if len(self._seen) > 4096:
            self._seen.clear()
        self._seen[key] = (now, uid)
        return uid

    def _lookup(self, client_port: int, server_port: int) -> int | None:
        want_local = f":{client_port:04X}"
        want_remote = f":{server_port:04X}"
        for name in ("tcp", "tcp6"):
            try:
                with open(os.path.join(self.proc, name)) as fh:
                    next(fh, None)
                    for line in fh:
                        f = line.split()
                        if len(f) > 7 and f[1].endswith(want_local) and f[2].endswith(want_remote):
                            return int(f[7])
            except OSError:
                continue
        return None


class Guard:
    def __init__(self, app: ASGIApp, *, token: str, hosts: set[str], port: int,
                 peer_uids: PeerUids | None = None) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.cookie = f"agentsrc_web_{port}"  # cookies are per host, not per port
        self.peer_uids = peer_uids
        self.uid = os.getuid()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() not in dict(SECURITY_HEADERS)]
                message["headers"] = headers + SECURITY_HEADERS
            await send(message)

        refusal = self._refusal(scope)
        if refusal is not None:
            status, title, text, extra = refusal
            await _respond(secured, status, REFUSED_PAGE.format(title=title, text=text), extra)
            return
        await self.app(scope, receive, secured)

    def _refusal(self, scope: Scope) -> tuple[int, str, str, list[tuple[bytes, bytes]]] | None:
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        if host not in self.hosts:
            return (403, "refused", "This server answers only to its own address "
                    "(the Host header named another: DNS rebinding is refused).", [])
        client, server = scope.get("client"), scope.get("server")
        if self.peer_uids is not None and client and server and client[0] in LOOPBACK_PEERS:
            uid = self.peer_uids.uid(int(client[1]), int(server[1]))
            if uid is not None and uid != self.uid:
                return (403, "refused", "This page is its owner's only: the connection "
                        "comes from another user's process.", [])
        if scope.get("method") not in ("GET", "HEAD"):
            return (405, "read only", "The page only reads: GET and HEAD only.",
                    [(b"allow", b"GET, HEAD")])
        query = scope.get("query_string", b"").decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True)
        given = next((v for k, v in pairs if k == "token"), None)
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            rest = urlencode([(k, v) for k, v in pairs if k != "token"])
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            cookie = (f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict")
            return (303, "signed in", "Signed in.",
                    [(b"location", location.encode("utf-8", "replace")),
                     (b"set-cookie", cookie.encode())])
        jar = SimpleCookie()
        try:
            jar.load(headers.get(b"cookie", b"").decode("latin-1"))
        except Exception:  # a malformed Cookie header is no cookie
            jar = SimpleCookie()
        morsel = jar.get(self.cookie)
        if morsel is not None and hmac.compare_digest(morsel.value.encode(), self.token.encode()):
            return None
        return (401, "sign in", "This page needs the link that <code>agentsrc web</code> "
                "printed: it carries a token. Run <code>agentsrc web --url</code> in a "
                "terminal for the link of the running server.", [])


async def _respond(send: Send, status: int, body: str,
                   extra: list[tuple[bytes, bytes]]) -> None:
    data = body.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/html; charset=utf-8"),
                            (b"content-length", str(len(data)).encode()), *extra]})
    await send({"type": "http.response.body", "body": data})
