"""Shared fixtures. ``tests/`` and ``bench/`` are on the import path through pytest's
``pythonpath`` setting (pyproject.toml), so helpers are plain imports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clickhouse import ClickHouseServer
from harness import DaemonFactory, DaemonProcess


@pytest.fixture()
def daemon_factory(tmp_path: Path) -> Iterator[DaemonFactory]:
    """Make daemons on temporary homes (``tmp_path/home`` unless given); every daemon
    made is killed and its run directory removed when the test ends."""
    made: list[DaemonProcess] = []

    def make(home: Path | None = None, **env: str) -> DaemonProcess:
        h = home or (tmp_path / "home")
        h.mkdir(parents=True, exist_ok=True)
        d = DaemonProcess(h, env=env)
        made.append(d)
        return d

    yield make
    for d in made:
        d.cleanup()


@pytest.fixture(scope="session")
def clickhouse() -> Iterator[ClickHouseServer]:
    """A real ClickHouse server on free local ports, for the whole session (installed
    from Debian's packages when missing, as root); stopped and removed after."""
    server = ClickHouseServer().start()
    yield server
    server.stop()
