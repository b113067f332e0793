"""The daemon under a service manager: sd_notify over a real NOTIFY_SOCKET datagram
listener, the watchdog stopping when the ingest loop stalls, SIGHUP reload, and
SIGTERM in the middle of a backfill losing and duplicating nothing."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import orjson
import pytest

from corpus import corpus_home, source_files
from harness import DaemonProcess, all_events, claude_line, claude_session, signature, wait_for
from replicate import replicate

pytestmark = pytest.mark.slow


class NotifyListener:
    """What systemd does: a datagram socket the daemon sends KEY=VALUE lines to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.05)
        self.messages: list[tuple[float, str]] = []
        self.unread: list[str] = []  # received but not yet matched by wait_for

    def pump(self, seconds: float) -> list[str]:
        """Collect datagrams for ``seconds``; returns those received."""
        got: list[str] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                data = self.sock.recv(4096).decode()
            except TimeoutError:
                continue
            self.messages.append((time.monotonic(), data))
            got.append(data)
        self.unread.extend(got)
        return got

    def wait_for(self, prefix: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while self.unread:
                msg = self.unread.pop(0)
                if any(line.startswith(prefix) for line in msg.splitlines()):
                    return msg
            self.pump(0.1)
        raise AssertionError(f"no {prefix} within {timeout}s; got {self.messages[-5:]}")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture()
def notify(tmp_path: Path):  # type: ignore[no-untyped-def]
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="ntf-", dir="/tmp"))
    listener = NotifyListener(d / "notify")
    yield listener
    listener.close()


def test_ready_watchdog_stall_reload_stopping(tmp_path: Path, notify: NotifyListener) -> None:
    home = tmp_path / "home"
    claude_session(home).write_bytes(claude_line("u1", text="hi"))
    stall = tmp_path / "stall"
    d = DaemonProcess(
        home,
        env={
            "NOTIFY_SOCKET": str(notify.path),
            "WATCHDOG_USEC": "400000",  # ping every 0.2 s
        },
        # The loop stalls while this file exists (tests/daemon_with_fakes.py: a stand-in
        # for a hung loop).
        fakes=["--stall-file", str(stall)],
    )
    try:
        d.start(wait=False)
        ready = notify.wait_for("READY=1")
        notify.unread.clear()
        # READY=1 means the database is open and the socket bound: a call succeeds now.
        assert d.call("status")["state"] in ("live", "catching_up")
        assert "STATUS=" in ready
        pings = [m for m in notify.pump(1.5) if "WATCHDOG=1" in m]
        assert len(pings) >= 4  # about 7 expected in 1.5 s
        stall.write_text("")
        notify.pump(0.5)  # a ping already in flight may still land
        stalled = [m for m in notify.pump(1.5) if "WATCHDOG=1" in m]
        assert stalled == []  # a hung loop stops the pings: the manager would kill it
        stall.unlink()
        resumed = [m for m in notify.pump(1.0) if "WATCHDOG=1" in m]
        assert len(resumed) >= 2
        notify.unread.clear()
        d.send_signal(signal.SIGHUP)
        reloading = notify.wait_for("RELOADING=1")
        assert "MONOTONIC_USEC=" in reloading
        notify.wait_for("READY=1")
        wait_for(lambda: '"reloaded"' in d.log(), timeout=10)
        assert d.proc is not None
        d.proc.send_signal(signal.SIGTERM)
        notify.wait_for("STOPPING=1")
        assert d.proc.wait(5) == 0
    finally:
        d.cleanup()


def test_sigterm_mid_backfill_then_restart_gives_exact_events(tmp_path: Path) -> None:
    home = tmp_path / "rep"
    replicate(corpus_home(), home, 3)
    ref = DaemonProcess(home, env={"AGENTSRC_WORKERS": "0"}).start()
    try:
        ref.wait_live(timeout=300)
        expected = signature(all_events(ref))
    finally:
        ref.cleanup()
    # The interrupted run has a backfill worker (forced on for this small backlog): the
    # rounds in its hands at SIGTERM are committed before the exit.
    d = DaemonProcess(home, env={"AGENTSRC_WORKERS": "1", "AGENTSRC_WORKER_MIN_BACKLOG": "1"})
    try:
        d.start()
        wait_for(lambda: d.call("status")["events"] > 2000, timeout=120, interval=0.01)
        assert d.call("status")["state"] == "catching_up"
        assert d.proc is not None
        assert d.children()  # the backfill worker is running
        t0 = time.monotonic()
        # As systemd stops a unit: SIGTERM to every process of the group, workers too.
        os.killpg(d.proc.pid, signal.SIGTERM)
        assert d.proc.wait(5) == 0
        assert time.monotonic() - t0 < 5
        assert not d.socket_path.exists()  # closed and removed on the way out
        d.proc = None
        assert '"backfill_worker_failed"' not in d.log()  # workers finished their rounds
        d.start()
        d.wait_live(timeout=300)
        assert signature(all_events(d)) == expected
    finally:
        d.cleanup()


def test_status_wait_returns_once_live_with_progress(tmp_path: Path) -> None:
    home = tmp_path / "rep"
    replicate(corpus_home(), home, 2)
    d = DaemonProcess(home)
    try:
        d.start()
        st = d.call("status")
        if st["state"] == "catching_up":  # progress is reported while catching up
            p = st["progress"]
            assert p["files_total"] >= p["files_done"] >= 0 and p["bytes_total"] > 0
        out = d.cli("status", "--wait", "--json")
        final = orjson.loads(out.stdout)
        assert final["state"] == "live" and final["pending_bytes"] == 0
        # Every source of both copies: the Gemini files once (their names carry no id the
        # replication rewrites), the OpenCode databases once (copied once).
        files = sum(len(paths) for paths in source_files(home).values())
        assert final["progress"]["files_done"] == final["progress"]["files_total"] == files
    finally:
        d.cleanup()
