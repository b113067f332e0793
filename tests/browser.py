"""A real browser for the web page's tests: Debian's ``chromium`` (installed with
apt-get when missing, as root, as tests/clickhouse.py installs its server) driven by
Playwright for Python. Playwright's own browser download cannot reach its servers here,
so it launches the system's binary (``executable_path``) with flags that keep it off
the network. Also the web server as a subprocess of the real ``agentsrc web``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from harness import REPO, DaemonProcess

CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_binary() -> str:
    """The chromium binary; installed from Debian's packages when missing (as root)."""
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], check=True, env=env, capture_output=True,
                       timeout=600)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
                       check=True, env=env, capture_output=True, timeout=1200)
        for path in CANDIDATES:
            if os.access(path, os.X_OK):
                return path
        raise RuntimeError("apt-get installed chromium but no chromium binary was found")
    message = ("chromium is not installed and this user is not root: "
               "`sudo apt-get install chromium` (the web page's tests need a real browser)")
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=chromium_binary(), args=CHROMIUM_ARGS)


class WebServer:
    """``agentsrc web --port 0`` against a daemon's socket; its first stdout line is the
    URL with the token."""

    def __init__(self, daemon: DaemonProcess, *args: str, **env: str) -> None:
        self.env = {**daemon.env, "TZ": "UTC", **env}
        self.log_path = daemon.run_dir / f"web-{os.getpid()}-{id(self)}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentsrc_daemon.cli", "web", "--port", "0", *args],
            env=self.env, stdout=subprocess.PIPE, stderr=self.log_path.open("ab"),
            cwd=str(REPO), start_new_session=True, text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise AssertionError(f"agentsrc web printed {self.url!r}: {self.log()[-2000:]}")
        self.base, _, self.token = self.url.partition("/?token=")
        self.port = int(self.base.rsplit(":", 1)[1])

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


