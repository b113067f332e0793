"""The one exception hierarchy (agentsrc_daemon/errors.py), and how `agentsrc run` reports
the start-up errors in it: one line on stderr, exit status 1."""

from __future__ import annotations

import ast
import inspect
import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from agentsrc_daemon import errors
from agentsrc_daemon.errors import AgentsrcError, NotPrivate
from agentsrc_daemon.rpc.transport import prepare_socket_dir
from agentsrc_daemon.store.migrations.versions import SCHEMA_VERSION
from agentsrc_daemon.system.datadir import ensure_private_dir

from harness import DaemonProcess

OTHER_UID = os.getuid() + 4242
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="giving a directory to another user needs root"
)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    home = tmp_path / "home"
    home.mkdir()
    d = DaemonProcess(home)
    try:
        yield d
    finally:
        d.cleanup()


def test_every_error_is_an_agentsrc_error() -> None:
    classes = {
        name: value
        for name, value in vars(errors).items()
        if inspect.isclass(value) and value.__module__ == errors.__name__
    }
    assert sorted(classes) == [
        "AgentsrcError",
        "AlreadyRunning",
        "ConfigError",
        "DaemonNotRunning",
        "NotPrivate",
        "RemoteError",
        "RpcError",
        "SchemaTooNew",
        "ServiceError",
        "ToolCallError",
    ]
    assert all(issubclass(cls, AgentsrcError) for cls in classes.values())
    # Domain errors, not OS errors: an `except OSError` elsewhere does not swallow them.
    assert not any(issubclass(cls, OSError) for cls in classes.values())


def test_errors_module_imports_nothing_of_the_package() -> None:
    modules: list[str] = []
    for node in ast.walk(ast.parse(Path(errors.__file__).read_text())):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules.append("." * node.level + (node.module or ""))
    assert sorted(modules) == ["__future__", "typing"]


def test_rpc_errors_keep_code_message_and_data() -> None:
    server_side = errors.RpcError(-32602, "unknown kind 'x'", {"kinds": ["prompt"]})
    assert (server_side.code, server_side.message, server_side.data) == (
        -32602,
        "unknown kind 'x'",
        {"kinds": ["prompt"]},
    )
    assert str(server_side) == "unknown kind 'x'"
    client_side = errors.RemoteError(-32602, "unknown kind 'x'")
    assert (client_side.code, client_side.message, client_side.data) == (
        -32602,
        "unknown kind 'x'",
        None,
    )
    assert str(client_side) == "unknown kind 'x' (-32602)"


@needs_root
def test_a_data_dir_of_another_user_is_not_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chown(data, OTHER_UID, -1)
    with pytest.raises(NotPrivate) as refused:
        ensure_private_dir(data)
    assert str(refused.value) == f"{data} belongs to another user"
    assert data.stat().st_mode & 0o777 == 0o755  # left as it was


@needs_root
def test_a_socket_dir_of_another_user_is_not_private(tmp_path: Path) -> None:
    sock_dir = tmp_path / "run"
    sock_dir.mkdir(mode=0o755)
    os.chown(sock_dir, OTHER_UID, -1)
    with pytest.raises(NotPrivate) as refused:
        prepare_socket_dir(sock_dir / "agentsrc.sock")
    assert str(refused.value) == f"socket directory {sock_dir} belongs to another user"
    assert sock_dir.stat().st_mode & 0o777 == 0o755


def test_run_reports_a_database_from_a_newer_agentsrc(daemon: DaemonProcess) -> None:
    daemon.data_dir.mkdir(mode=0o700)
    conn = apsw.Connection(str(daemon.data_dir / "agentsrc.db"))
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    result = daemon.cli("run", check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"agentsrc: database schema version {SCHEMA_VERSION + 1} is newer than this agentsrc "
        f"({SCHEMA_VERSION})"
    )
    assert "Traceback" not in result.stderr


@needs_root
def test_run_reports_a_data_dir_of_another_user(daemon: DaemonProcess) -> None:
    daemon.data_dir.mkdir(mode=0o700)
    os.chown(daemon.data_dir, OTHER_UID, -1)
    result = daemon.cli("run", check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"agentsrc: {daemon.data_dir} belongs to another user"
    )
    assert "Traceback" not in result.stderr
