"""``agentsrc install --web``: the web page as a second user service beside the daemon's
(systemd and launchd), with the recording stand-ins of tests/stubs for systemctl,
loginctl and launchctl as tests/test_service.py uses them (no user manager and no
launchd on this machine); doctor's and status's line about the page."""

from __future__ import annotations

import os
import plistlib
import subprocess
from pathlib import Path

import orjson
import test_service
from test_service import (
    LINUX_INSTALL_CALLS,
    USER,
    calls,
    make_executable,
    mode_of,
    systemd_analyze,
    target_for,
    unit_settings,
)

from agentsrc_daemon.cli.render import web_line
from agentsrc_daemon.config import load_config
from agentsrc_daemon.system.service import (
    UNIT_NAME,
    install,
    plan_install,
    plan_uninstall,
    uninstall,
)
from agentsrc_daemon.system.web_service import (
    WEB_LAUNCHD_LABEL,
    WEB_UNIT_NAME,
    add_web_install,
    add_web_uninstall,
    check_web,
    render_web_unit,
)
from agentsrc_daemon.web.url import write_url

# test_service's fixtures: a temporary home, the stand-ins first on PATH, an executable.
stub_bin = test_service.stub_bin
home = test_service.home
env = test_service.env
exe = test_service.exe


def test_linux_install_web_writes_both_units_and_starts_the_page_after_the_daemon(
    home: Path, env: dict[str, str], exe: Path
) -> None:
    target = target_for("linux", home, exe)
    outcome = install(add_web_install(plan_install(target), 9000), env=env)
    unit_dir = home / ".config" / "systemd" / "user"
    web_unit = unit_dir / WEB_UNIT_NAME
    assert (unit_dir / UNIT_NAME).is_file()
    assert web_unit.read_text() == render_web_unit(
        [str(exe), "web", "--service", "--port", "9000"])
    assert mode_of(web_unit) == 0o644
    settings = unit_settings(web_unit.read_text())
    assert settings["ExecStart"] == [f"{exe} web --service --port 9000"]
    assert settings["After"] == [UNIT_NAME]
    assert "Requires" not in settings  # the page stays up and says the daemon is down
    assert settings["RestrictAddressFamilies"] == ["AF_UNIX AF_INET AF_INET6"]
    assert settings["UMask"] == ["0077"]
    assert calls(env) == [
        *LINUX_INSTALL_CALLS,
        ("systemctl", "--user", "daemon-reload"),
        ("systemctl", "--user", "reset-failed", WEB_UNIT_NAME),
        ("systemctl", "--user", "try-restart", WEB_UNIT_NAME),
        ("systemctl", "--user", "enable", "--now", WEB_UNIT_NAME),
        ("loginctl", "show-user", USER, "--property=Linger"),
    ]
    assert "web page: http://127.0.0.1:9000/ (open it signed in: agentsrc web --url --open)" \
        in outcome.notes

    Path(env["AGENTSRC_STUB_LOG"]).unlink()
    uninstall(add_web_uninstall(plan_uninstall(target)), env=env)
    assert calls(env)[0] == ("systemctl", "--user", "disable", "--now", WEB_UNIT_NAME)
    assert not web_unit.exists() and not (unit_dir / UNIT_NAME).exists()


def test_the_web_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = systemd_analyze()
    program = make_executable(tmp_path / "venv" / "bin" / "agentsrc")
    unit = tmp_path / WEB_UNIT_NAME
    unit.write_text(render_web_unit([str(program), "web", "--service", "--port", "8787"]))
    proc = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_darwin_install_web_writes_the_page_s_agent(
    home: Path, env: dict[str, str], exe: Path
) -> None:
    target = target_for("darwin", home, exe)
    install(add_web_install(plan_install(target)), env=env)
    path = home / "Library" / "LaunchAgents" / f"{WEB_LAUNCHD_LABEL}.plist"
    plist = plistlib.loads(path.read_bytes())
    assert plist["Label"] == WEB_LAUNCHD_LABEL
    assert plist["ProgramArguments"] == [str(exe), "web", "--service", "--port", "8787"]
    log_dir = home / "Library" / "Logs" / "agentsrc"
    assert plist["StandardErrorPath"] == f"{log_dir}/agentsrc-web.err.log"
    assert plist["Umask"] == 0o077
    assert calls(env)[-1] == ("launchctl", "bootstrap", "gui/1000", str(path))
    Path(env["AGENTSRC_STUB_LOG"]).unlink()
    uninstall(add_web_uninstall(plan_uninstall(target)), env=env)
    assert calls(env)[0] == ("launchctl", "bootout", f"gui/1000/{WEB_LAUNCHD_LABEL}")
    assert not path.exists()


def test_uninstall_without_the_page_is_the_daemon_s_alone(
    home: Path, env: dict[str, str], exe: Path
) -> None:
    target = target_for("linux", home, exe)
    plan = plan_uninstall(target)
    assert add_web_uninstall(plan_uninstall(target)).commands == plan.commands


def test_doctor_and_status_say_where_the_page_is(home: Path, env: dict[str, str],
                                                 exe: Path) -> None:
    cfg = load_config(env=env)
    target = target_for("linux", home, exe)
    check = check_web(cfg, target)
    assert (check.ok, check.warning) == (True, False)
    assert check.detail.startswith("not running (optional)")
    assert web_line(cfg.socket_path) is None
    install(add_web_install(plan_install(target)), env=env)
    check = check_web(cfg, target)
    assert (check.ok, check.warning) == (True, True)
    assert check.detail == "installed as a service but not serving"
    url = "http://127.0.0.1:8787/?token=abc"
    path = write_url(cfg.socket_path, {"url": url, "pid": os.getpid(), "port": 8787,
                                       "host": "127.0.0.1"})
    try:
        assert mode_of(path) == 0o600
        check = check_web(cfg, target)
        assert check.detail.startswith("serving http://127.0.0.1:8787/ (installed as a service)")
        assert "abc" not in check.detail  # never the token
        assert web_line(cfg.socket_path) == \
            "web:       http://127.0.0.1:8787/ (agentsrc web --url: the link)"
        # A file left by a server that is gone is no page.
        path.write_bytes(orjson.dumps({"url": url, "pid": 2**22 + 12345, "port": 8787}))
        assert web_line(cfg.socket_path) is None
    finally:
        path.unlink()
        path.parent.rmdir()
