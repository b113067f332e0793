"""A real ClickHouse server for the sink's tests: Debian's ``clickhouse-server``
(installed when missing, as root), started on free local ports bound to 127.0.0.1 with
a temporary config and data directory, stopped after. The system's default instance
and config are never touched. Also a TCP proxy in front of it, to cut the line (the
server "down") or swallow its answers (a push the server took but the daemon never
heard of)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any

import orjson
import pytest

CANDIDATES = ("/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server")
PASSWORD = "agentsrc-test-password"  # of the test server's "writer" user: no secret

CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/server.log</log><errorlog>{dir}/error.log</errorlog>
    <size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{interserver}</interserver_http_port>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>{dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage>
    <background_pool_size>2</background_pool_size></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <writer><password>{password}</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></writer>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_binary() -> str:
    """The server binary; installed from Debian's packages when missing (as root)."""
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("clickhouse-server")
    if found:
        return found
    if os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        # The package's postinst starts the system's default instance unless policy-rc.d
        # says no (this machine image has one that does): never start that instance.
        policy = Path("/usr/sbin/policy-rc.d")
        ours = not policy.exists()
        if ours:
            policy.write_text("#!/bin/sh\nexit 101\n")
            policy.chmod(0o755)
        try:
            subprocess.run(["apt-get", "update"], check=True, env=env, capture_output=True,
                           timeout=600)
            subprocess.run(
                ["apt-get", "install", "-y", "--no-install-recommends", "clickhouse-server"],
                check=True, env=env, capture_output=True, timeout=1200,
            )
        finally:
            if ours:
                policy.unlink()
        for path in CANDIDATES:
            if os.access(path, os.X_OK):
                return path
        raise RuntimeError("apt-get installed clickhouse-server but no server binary was found")
    message = (
        "clickhouse-server is not installed and this user is not root: "
        "`sudo apt-get install clickhouse-server` (the sink's tests need a real server)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


class ClickHouseServer:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="agentsrc-ch-"))
        self.http_port = free_port()
        self.tcp_port = free_port()
        self.interserver_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self, timeout: float = 90.0) -> ClickHouseServer:
        binary = server_binary()
        for sub in ("data", "tmp", "user_files", "format_schemas"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / "config.xml").write_text(CONFIG.format(
            dir=self.dir, http=self.http_port, tcp=self.tcp_port,
            interserver=self.interserver_port))
        (self.dir / "users.xml").write_text(USERS.format(password=PASSWORD))
        self.proc = subprocess.Popen(
            [binary, f"--config-file={self.dir / 'config.xml'}"],
            stdout=(self.dir / "stdout.log").open("wb"),
            stderr=subprocess.STDOUT,
            cwd=str(self.dir),
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"clickhouse-server exited: {self.log_tail()}")
            try:
                if self.query("SELECT 1").strip() == "1":
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"clickhouse-server did not answer in {timeout}s: {self.log_tail()}")

    def log_tail(self) -> str:
        parts = []
        for name in ("stdout.log", "error.log"):
            p = self.dir / name
            if p.exists():
                parts.append(p.read_text(errors="replace")[-1500:])
        return "\n".join(parts)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, sql: str, database: str | None = None) -> str:
        params = {"database": database} if database else {}
        url = self.url + "/?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, data=sql.encode(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return str(resp.read().decode())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{exc.code}: {exc.read().decode()[:1000]}\n{sql}") from None

    def rows(self, sql: str, database: str | None = None) -> list[dict[str, Any]]:
        out = self.query(sql + " FORMAT JSONEachRow", database)
        return [orjson.loads(line) for line in out.splitlines() if line.strip()]

    def scalar(self, sql: str, database: str | None = None) -> Any:
        return self.query(sql, database).strip()

    def drop(self, database: str) -> None:
        self.query(f"DROP DATABASE IF EXISTS {database}")


class Proxy:
    """A TCP proxy to the server. ``down()`` refuses connections and cuts the open
    ones; ``up()`` listens again on the same port. While ``swallow_inserts`` is set,
    the server's answers to INSERTs are dropped (the rows still reach the server)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.swallow_inserts = threading.Event()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> Proxy:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(16)
        self._listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        return self

    def down(self) -> None:
        s, self._listener = self._listener, None
        if s is not None:
            # shutdown wakes the accept() blocked on it; close alone would not (Linux).
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()

    def close(self) -> None:
        self._stopped = True
        self.down()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns += [client, upstream]
            inserts: deque[bool] = deque()  # per request in flight: is it an INSERT?
            for args in ((client, upstream, False, inserts), (upstream, client, True, inserts)):
                threading.Thread(target=self._pump, args=args, daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, answers: bool,
              inserts: deque[bool]) -> None:
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if not answers:
                    # Requests are sequential on a connection (keep-alive, no pipelining).
                    for line in re.findall(rb"POST (\S+) HTTP/1\.1", data):
                        inserts.append(b"query=INSERT" in line)
                else:
                    swallow = False
                    for _ in range(data.count(b"HTTP/1.1 ")):
                        was_insert = inserts.popleft() if inserts else False
                        swallow = swallow or (was_insert and self.swallow_inserts.is_set())
                    if swallow:
                        continue
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
