"""sd_notify: a real AF_UNIX datagram listener stands in for systemd's notify socket."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.system.notify import Notifier, watchdog_interval


class Listener:
    """A bound datagram socket, as systemd's NOTIFY_SOCKET is."""

    def __init__(self, sock: socket.socket, env_value: str) -> None:
        self.sock = sock
        self.env_value = env_value  # what NOTIFY_SOCKET would say

    def receive(self, timeout: float = 2.0) -> str:
        self.sock.settimeout(timeout)
        return self.sock.recv(4096).decode()

    def pending(self) -> list[str]:
        """Every datagram already queued, without waiting."""
        self.sock.setblocking(False)
        got: list[str] = []
        while True:
            try:
                got.append(self.sock.recv(4096).decode())
            except BlockingIOError:
                return got


@pytest.fixture
def path_listener() -> Iterator[Listener]:
    # A short directory under /tmp: AF_UNIX paths are limited to ~108 bytes.
    folder = tempfile.mkdtemp(prefix="agentsrc-notify-", dir="/tmp")
    path = os.path.join(folder, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    try:
        yield Listener(sock, path)
    finally:
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def abstract_listener() -> Iterator[Listener]:
    name = f"agentsrc-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    try:
        yield Listener(sock, "@" + name)
    finally:
        sock.close()


def test_lifecycle_messages_arrive_in_order(path_listener: Listener) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": path_listener.env_value})
    assert notifier.enabled
    assert notifier.ready(status="live")
    assert notifier.watchdog()
    assert notifier.status("backfill 12/40 files")
    assert notifier.stopping()
    notifier.close()
    assert [path_listener.receive() for _ in range(4)] == [
        "READY=1\nSTATUS=live",
        "WATCHDOG=1",
        "STATUS=backfill 12/40 files",
        "STOPPING=1",
    ]


def test_abstract_namespace_socket(abstract_listener: Listener) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": abstract_listener.env_value})
    assert notifier.address == b"\0" + abstract_listener.env_value[1:].encode()
    assert notifier.ready()
    assert abstract_listener.receive() == "READY=1"
    notifier.close()


def test_reloading_carries_the_monotonic_clock(path_listener: Listener) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": path_listener.env_value})
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    assert notifier.reloading()
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    lines = path_listener.receive().split("\n")
    assert lines[0] == "RELOADING=1"
    key, _, value = lines[1].partition("=")
    assert key == "MONOTONIC_USEC"
    assert before <= int(value) <= after
    assert len(lines) == 2
    notifier.close()


def extend_timeout(notifier: Notifier, seconds: float) -> bool:
    """What asking the manager for more start/stop time takes (a long migration before
    READY=1 would): the daemon does not ask today, so this lives with its test."""
    return notifier.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")


def test_extend_timeout_in_microseconds(path_listener: Listener) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": path_listener.env_value})
    assert extend_timeout(notifier, 2.5)
    assert path_listener.receive() == "EXTEND_TIMEOUT_USEC=2500000"
    notifier.close()


@pytest.mark.parametrize(
    "value", [None, "", "relative/path", "vsock:2:1234"], ids=["unset", "empty", "rel", "vsock"]
)
def test_no_manager_means_silent_no_op(value: str | None) -> None:
    env = {} if value is None else {"NOTIFY_SOCKET": value}
    notifier = Notifier.from_env(env)
    assert notifier.enabled is False
    assert notifier.ready() is False
    assert notifier.watchdog() is False
    assert notifier.watchdog_if_due(now=1e9) is False
    assert notifier.stopping() is False


def test_vanished_listener_does_not_raise() -> None:
    folder = tempfile.mkdtemp(prefix="agentsrc-notify-", dir="/tmp")
    try:
        notifier = Notifier.from_env({"NOTIFY_SOCKET": os.path.join(folder, "gone")})
        assert notifier.enabled
        assert notifier.ready() is False  # ENOENT swallowed: the daemon keeps running
        notifier.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_status_is_one_line(path_listener: Listener) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": path_listener.env_value})
    notifier.status("backfill\nREADY=1\tdone")
    assert path_listener.receive() == "STATUS=backfill READY=1 done"
    notifier.close()


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=400))
def test_status_never_injects_an_assignment(text: str) -> None:
    folder = tempfile.mkdtemp(prefix="agentsrc-notify-", dir="/tmp")
    path = os.path.join(folder, "n")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    try:
        notifier = Notifier(path)
        notifier.status(text)
        notifier.close()
        sock.settimeout(2)
        got = sock.recv(65536).decode()
    finally:
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert got.startswith("STATUS=")
    body = got[len("STATUS=") :]
    assert "\n" not in body
    assert len(body) <= 200
    assert body == " ".join(text.split())[:200]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "1000"}, 0.0005),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "-5"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"}, 15.0),  # pid=4242 below
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4243"}, None),  # meant for another
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "x"}, None),
    ],
)
def test_watchdog_interval(env: dict[str, str], expected: float | None) -> None:
    assert watchdog_interval(env, pid=4242) == expected


def test_watchdog_interval_defaults_to_this_process() -> None:
    env = {"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": str(os.getpid())}
    assert watchdog_interval(env) == 2.0


def test_watchdog_if_due_pings_at_half_the_timeout(path_listener: Listener) -> None:
    notifier = Notifier.from_env(
        {"NOTIFY_SOCKET": path_listener.env_value, "WATCHDOG_USEC": "10000000"}
    )
    assert notifier.watchdog_every == 5.0
    sent = [notifier.watchdog_if_due(now=t) for t in (100.0, 101.0, 104.9, 105.0, 107.0, 110.5)]
    assert sent == [True, False, False, True, False, True]
    time.sleep(0.05)
    assert path_listener.pending() == ["WATCHDOG=1"] * 3
    notifier.close()


def test_watchdog_if_due_without_watchdog_usec(path_listener: Listener) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": path_listener.env_value})
    assert notifier.watchdog_every is None
    assert notifier.watchdog_if_due(now=1000.0) is False
    time.sleep(0.05)
    assert path_listener.pending() == []
    notifier.close()


def test_path_address_is_kept_as_given(tmp_path: Path) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": str(tmp_path / "later")})
    assert notifier.address == str(tmp_path / "later")
    notifier.close()
