"""Tell the service manager what the daemon is doing: the sd_notify protocol, in stdlib.

systemd passes NOTIFY_SOCKET (a datagram socket: a filesystem path, or "@name" for the
abstract namespace) to Type=notify services. Each datagram is newline-separated
KEY=VALUE assignments. We send:

- READY=1 once the database is open, the socket bound and the first reconcile started;
- WATCHDOG=1 from the ingest loop itself, at least every half of WATCHDOG_USEC, so a hung
  loop stops pinging and systemd kills and restarts it;
- STATUS=<text> with progress ("backfill 120/900 files, 40%"), shown by `systemctl status`;
- RELOADING=1 (with MONOTONIC_USEC) on SIGHUP, then READY=1 again when the reload is done;
- STOPPING=1 on shutdown.

A few lines of stdlib rather than a dependency: the protocol is one sendto() per message.
Without NOTIFY_SOCKET (run by hand, or under launchd) every method is a silent no-op, so
the daemon calls them unconditionally. Sending never raises: a manager that went away must
not take the daemon down with it.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Mapping

from ..config import environment

# The abstract-namespace prefix systemd uses in NOTIFY_SOCKET; the kernel wants a NUL.
_ABSTRACT_PREFIX = "@"
# A STATUS= line is shown on one line of `systemctl status`; keep it readable.
_MAX_STATUS_CHARS = 200


def _socket_address(value: str | None) -> str | bytes | None:
    """NOTIFY_SOCKET -> an AF_UNIX address, or None when it is unset or not one we speak.

    systemd also knows "vsock:..." addresses (for VMs); a daemon on a desktop never gets
    one, so those are treated as "no manager" rather than an error.
    """
    if not value:
        return None
    if value.startswith(_ABSTRACT_PREFIX):
        return b"\0" + os.fsencode(value[1:])
    if value.startswith("/"):
        return value
    return None


def watchdog_interval(
    env: Mapping[str, str] | None = None, *, pid: int | None = None
) -> float | None:
    """Seconds between WATCHDOG=1 pings: half of WATCHDOG_USEC, as sd_watchdog_enabled advises.

    None when the manager asked for no watchdog, or when WATCHDOG_PID names another process
    (the variables were inherited from a parent and are not meant for us).
    """
    env = environment() if env is None else env
    raw_usec = env.get("WATCHDOG_USEC", "").strip()
    if not raw_usec:
        return None
    try:
        usec = int(raw_usec)
    except ValueError:
        return None
    if usec <= 0:
        return None
    raw_pid = env.get("WATCHDOG_PID", "").strip()
    if raw_pid:
        try:
            meant_for = int(raw_pid)
        except ValueError:
            return None
        if meant_for != (os.getpid() if pid is None else pid):
            return None
    return usec / 2 / 1_000_000


def _one_line(text: str) -> str:
    # A newline inside STATUS= would start a new assignment in the datagram.
    flat = " ".join(text.split())
    return flat[:_MAX_STATUS_CHARS]


class Notifier:
    """Sends sd_notify messages to one address; a no-op when the address is None."""

    def __init__(self, address: str | bytes | None, watchdog_every: float | None = None) -> None:
        self.address = address
        self.watchdog_every = watchdog_every
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()  # the ingest loop and the status thread both send
        self._last_watchdog = float("-inf")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Notifier:
        env = environment() if env is None else env
        return cls(_socket_address(env.get("NOTIFY_SOCKET")), watchdog_interval(env))

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *assignments: str) -> bool:
        """Send KEY=VALUE assignments as one datagram. True when it was sent."""
        if self.address is None or not assignments:
            return False
        payload = "\n".join(assignments).encode("utf-8", "replace")
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    # Bounded, not non-blocking: READY=1 must not be dropped because the
                    # manager's queue was momentarily full, nor may a ping hang the loop.
                    self._sock.settimeout(1.0)
                self._sock.sendto(payload, self.address)
            except OSError:
                return False
        return True

    def ready(self, status: str | None = None) -> bool:
        extra = [f"STATUS={_one_line(status)}"] if status else []
        return self.send("READY=1", *extra)

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={_one_line(text)}")

    def watchdog(self) -> bool:
        self._last_watchdog = time.monotonic()
        return self.send("WATCHDOG=1")

    def watchdog_if_due(self, now: float | None = None) -> bool:
        """Ping when half the watchdog timeout has passed since the last ping.

        Cheap enough to call on every turn of the ingest loop; True when a ping was sent.
        """
        if self.address is None or self.watchdog_every is None:
            return False
        now = time.monotonic() if now is None else now
        if now - self._last_watchdog < self.watchdog_every:
            return False
        sent = self.send("WATCHDOG=1")
        self._last_watchdog = now
        return sent

    def reloading(self, status: str | None = None) -> bool:
        # systemd >= 253 (Type=notify-reload) requires MONOTONIC_USEC beside RELOADING=1
        # to tell this reload from an earlier one; older managers ignore it.
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        extra = [f"STATUS={_one_line(status)}"] if status else []
        return self.send("RELOADING=1", f"MONOTONIC_USEC={usec}", *extra)

    def stopping(self, status: str | None = None) -> bool:
        extra = [f"STATUS={_one_line(status)}"] if status else []
        return self.send("STOPPING=1", *extra)

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
