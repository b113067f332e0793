"""A small ClickHouse client over HTTP(S), on the standard library's http.client.

One persistent connection (keep-alive), Basic authentication, TLS verified against the
system's CAs or a configured file when the URL is https. A query goes in the request
body; an INSERT's statement goes in the URL and its rows (JSONEachRow) in the body.
ClickHouse answers 200 only once an INSERT's rows are written: that answer is the
acknowledgement the sink advances its position on.
"""

from __future__ import annotations

import base64
import http.client
import ssl
import urllib.parse
from pathlib import Path

SETTINGS = {
    # A newer daemon may send a column an older schema lacks: skipped, not refused.
    "input_format_skip_unknown_fields": "1",
}


class ClickHouseError(Exception):
    """The server answered with an error (bad credentials, unknown table...)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        code = message.split(",", 1)[0]
        self.code = int(code[5:]) if code.startswith("Code: ") and code[5:].strip().isdigit() else 0


# The server could not parse a row (CANNOT_PARSE_TEXT, ..._QUOTED_STRING,
# ..._INPUT_ASSERTION_FAILED, ..._DATE, ..._DATETIME, ARGUMENT_OUT_OF_BOUND,
# CANNOT_CONVERT_TYPE, CANNOT_PARSE_NUMBER, INCORRECT_DATA).
PARSE_ERRORS = frozenset({6, 26, 27, 38, 41, 69, 70, 72, 117})


class Unreachable(Exception):
    """No answer: connection refused, reset, timed out, TLS failure."""


def redact_url(url: str) -> str:
    """The URL as shown in status and logs: no credentials, no query."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class ClickHouse:
    def __init__(
        self,
        url: str,
        *,
        user: str = "default",
        password: str = "",
        timeout: float = 30.0,
        ca_file: Path | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {redact_url(url)}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (8443 if self.https else 8123)
        self.path = parts.path.rstrip("/") + "/"
        self.timeout = timeout
        self.ca_file = ca_file
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self._headers = {"Authorization": f"Basic {token}", "Connection": "keep-alive"}
        self._conn: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.https:
                ctx = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
                self._conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout, context=ctx
                )
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _request(self, params: dict[str, str], body: bytes) -> bytes:
        target = self.path + "?" + urllib.parse.urlencode({**SETTINGS, **params})
        # A kept-alive connection the server closed in between fails at once: one more
        # try on a new connection. (Sending again is harmless: rows carry their keys.)
        for attempt in (0, 1):
            reused = self._conn is not None
            conn = self._connect()
            try:
                conn.request("POST", target, body=body, headers=self._headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt == 0 and reused and not isinstance(exc, TimeoutError):
                    continue
                raise Unreachable(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
            if resp.getheader("Connection", "").lower() == "close":
                self.close()
            if resp.status != 200:
                text = data.decode("utf-8", "replace").strip().splitlines()
                raise ClickHouseError(resp.status, (text[0] if text else resp.reason)[:500])
            return data
        raise AssertionError("unreachable")

    def query(self, sql: str, *, database: str | None = None) -> bytes:
        """A statement (DDL, SELECT): its answer, as the server formats it."""
        params = {"database": database} if database else {}
        return self._request(params, sql.encode())

    def insert(self, database: str, table: str, rows: bytes, *, allow_errors: int = 0) -> None:
        """JSONEachRow lines into ``database.table``; returns once they are written.
        ``allow_errors``: that many rows the server cannot parse are skipped."""
        params = {"query": f"INSERT INTO {database}.{table} FORMAT JSONEachRow"}
        if allow_errors:
            params.update(input_format_allow_errors_num=str(allow_errors),
                          input_format_allow_errors_ratio="1")
        self._request(params, rows)
