"""Installing the per-user service: rendering, plans, and install/uninstall on a temp HOME.

The test machine runs no user systemd instance (there is no login session, so
`systemctl --user` cannot reach a manager) and has no launchd at all. The install code
finds systemctl, loginctl and launchctl on PATH, so these tests put the recording
stand-ins from tests/stubs/ first on PATH and assert the exact commands they were given.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agentsrc_daemon.cli import app
from agentsrc_daemon.config import load_config
from agentsrc_daemon.errors import ServiceError
from agentsrc_daemon.system import service
from agentsrc_daemon.system.service import (
    LAUNCHD_LABEL,
    UNIT_NAME,
    ServiceTarget,
    detect_platform,
    find_executable,
    install,
    plan_install,
    plan_uninstall,
    render_plist,
    render_unit,
    service_status,
    systemd_quote,
    uninstall,
)

STUBS = Path(__file__).resolve().parent / "stubs"
UID = 1000
USER = "ada"


# --- fixtures ------------------------------------------------------------------------


def make_executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def stub_bin(tmp_path: Path) -> Path:
    """The stand-ins, copied so their exec bit does not depend on the checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("systemctl", "loginctl", "launchctl"):
        shutil.copyfile(STUBS / name, bin_dir / name)
        (bin_dir / name).chmod(0o755)
    return bin_dir


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def env(tmp_path: Path, stub_bin: Path, home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": f"{stub_bin}:/usr/bin:/bin",
        "AGENTSRC_STUB_LOG": str(tmp_path / "calls.log"),
        # The socket goes there: pytest's tmp_path is too deep for a Unix socket path.
        # Never created: nothing here binds a socket.
        "XDG_RUNTIME_DIR": f"/tmp/agentsrc-test-{os.getpid()}-unused",
        "XDG_CONFIG_HOME": str(home / ".config"),
    }


def calls(env: dict[str, str]) -> list[tuple[str, ...]]:
    log = Path(env["AGENTSRC_STUB_LOG"])
    if not log.exists():
        return []
    return [tuple(line.split("\t")) for line in log.read_text().splitlines()]


def target_for(platform: str, home: Path, exe: Path | None) -> ServiceTarget:
    return ServiceTarget(
        platform="linux" if platform == "linux" else "darwin",
        home=home,
        config_home=home / ".config",
        user=USER,
        uid=UID,
        data_dir=home / ".local" / "share" / "agentsrc",
        executable=exe,
    )


@pytest.fixture
def exe(tmp_path: Path) -> Path:
    return make_executable(tmp_path / "venv" / "bin" / "agentsrc")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def unit_settings(text: str) -> dict[str, list[str]]:
    """Key -> values of a unit file, comments and section headers dropped."""
    settings: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line or line.startswith(("#", "[")):
            continue
        key, _, value = line.partition("=")
        settings.setdefault(key, []).append(value)
    return settings


# --- templates and rendering ---------------------------------------------------------


def test_embedded_templates_match_the_files() -> None:
    assert service.SYSTEMD_TEMPLATE_PATH.read_text() == service.EMBEDDED_SYSTEMD_TEMPLATE
    assert service.LAUNCHD_TEMPLATE_PATH.read_text() == service.EMBEDDED_LAUNCHD_TEMPLATE


def test_embedded_template_is_used_when_the_file_is_absent(tmp_path: Path) -> None:
    assert service.load_template(tmp_path / "none", "embedded") == "embedded"


def test_placeholders_are_filled_in_one_pass() -> None:
    assert service._fill("a=@A@ b=@B@", {"A": "/x/@B@", "B": "2"}) == "a=/x/@B@ b=2"
    with pytest.raises(ServiceError, match="template placeholder @C@ has no value"):
        service._fill("@C@", {})


def test_rendered_unit_settings(exe: Path) -> None:
    text = render_unit([str(exe), "run"])
    assert service.PLACEHOLDER_PATTERN.search(text) is None
    s = unit_settings(text)
    assert s["ExecStart"] == [f"{exe} run"]
    assert s["Type"] == ["notify"]
    assert s["NotifyAccess"] == ["main"]
    assert s["Restart"] == ["on-failure"]
    assert s["RestartSec"] == ["5"]
    assert s["WatchdogSec"] == ["30"]
    assert s["TimeoutStopSec"] == ["15"]
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert s["UMask"] == ["0077"]
    assert s["NoNewPrivileges"] == ["yes"]
    assert s["RestrictAddressFamilies"] == ["AF_UNIX"]
    assert s["WantedBy"] == ["default.target"]
    # Options that need namespaces would fail to start in an unprivileged user manager.
    for needs_namespaces in ("PrivateTmp", "ProtectSystem", "ProtectHome", "PrivateUsers"):
        assert needs_namespaces not in s


@pytest.mark.parametrize(
    ("arg", "quoted"),
    [
        ("/usr/bin/agentsrc", "/usr/bin/agentsrc"),
        ("run", "run"),
        ("/home/a b/agentsrc", '"/home/a b/agentsrc"'),
        ("/opt/100%/agentsrc", "/opt/100%%/agentsrc"),
        ("/opt/$HOME/agentsrc", "/opt/$$HOME/agentsrc"),
        ('/opt/say "hi"/x', '"/opt/say \\"hi\\"/x"'),
        ("/opt/back\\slash", '"/opt/back\\\\slash"'),
    ],
)
def test_systemd_quote(arg: str, quoted: str) -> None:
    assert systemd_quote(arg) == quoted


def systemd_analyze() -> str:
    """systemd-analyze, installed from Debian's systemd package when missing and root."""
    found = shutil.which("systemd-analyze")
    problem = "not root, or no apt-get"
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "systemd"],
        ):
            proc = subprocess.run(argv, capture_output=True, text=True, env=apt_env, timeout=900)
            if proc.returncode != 0:
                problem = f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-300:]}"
                break
        found = shutil.which("systemd-analyze")
    if found is None:
        message = f"systemd-analyze is missing and could not be installed ({problem})"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.mark.parametrize("folder", ["venv", "dir with space"])
def test_rendered_unit_passes_systemd_analyze_verify(tmp_path: Path, folder: str) -> None:
    # `systemd-analyze verify --user` needs a running user manager, which this machine
    # lacks; the system-mode verify parses every option and checks ExecStart exists.
    tool = systemd_analyze()
    program = make_executable(tmp_path / folder / "bin" / "agentsrc")
    unit = tmp_path / UNIT_NAME
    unit.write_text(render_unit([str(program), "run"]))
    proc = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # verify exits 0 on unknown keys and bad values, only warning: there must be none.
    assert proc.stderr == ""


def test_systemd_analyze_verify_catches_a_missing_executable(tmp_path: Path) -> None:
    tool = systemd_analyze()
    unit = tmp_path / UNIT_NAME
    unit.write_text(render_unit([str(tmp_path / "absent" / "agentsrc"), "run"]))
    proc = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "is not executable" in proc.stderr


def test_plist_parses_with_the_keys(tmp_path: Path) -> None:
    home = tmp_path / "Users" / "a&b <c>"
    exe = home / ".local" / "bin" / "agentsrc"
    log_dir = home / "Library" / "Logs" / "agentsrc"
    plist = plistlib.loads(render_plist([str(exe), "run"], home, log_dir).encode())
    assert plist["Label"] == LAUNCHD_LABEL == "dev.agentsrc.daemon"
    assert plist["ProgramArguments"] == [str(exe), "run"]
    assert Path(plist["ProgramArguments"][0]).is_absolute()
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["StandardOutPath"] == f"{log_dir}/agentsrc.out.log"
    assert plist["StandardErrorPath"] == f"{log_dir}/agentsrc.err.log"
    assert plist["WorkingDirectory"] == str(home)
    assert plist["Umask"] == 0o077
    assert plist["ExitTimeOut"] == 15
    assert plist["ThrottleInterval"] == 10


def test_a_config_file_elsewhere_is_passed_to_the_service(tmp_path: Path, exe: Path) -> None:
    cfg_file = tmp_path / "etc" / "my agentsrc.toml"
    target = replace(target_for("linux", tmp_path, exe), config_file=cfg_file)
    assert target.program_arguments == [str(exe), "--config", str(cfg_file), "run"]
    unit = unit_settings(render_unit(target.program_arguments))
    assert unit["ExecStart"] == [f'{exe} --config "{cfg_file}" run']
    log_dir = tmp_path / "Library" / "Logs" / "agentsrc"
    plist = plistlib.loads(render_plist(target.program_arguments, tmp_path, log_dir).encode())
    assert plist["ProgramArguments"] == [str(exe), "--config", str(cfg_file), "run"]


def test_which_config_file_is_passed(home: Path, env: dict[str, str], exe: Path) -> None:
    default = home / ".config" / "agentsrc" / "config.toml"
    default.parent.mkdir(parents=True)
    default.write_text("")
    other = home / "other.toml"
    other.write_text("")
    path_env = {**env, "PATH": str(exe.parent)}  # an agentsrc command is found somewhere
    # Found by the service itself: nothing to pass.
    target = ServiceTarget.current(load_config(env=env), env=path_env, platform="linux")
    assert target.config_file is None
    assert target.program_arguments[1:] == ["run"]
    # Named by AGENTSRC_CONFIG, which the service will not have: passed with --config.
    cfg = load_config(env={**env, "AGENTSRC_CONFIG": str(other)})
    target = ServiceTarget.current(cfg, env=path_env, platform="linux")
    assert target.config_file == other


def test_settings_drift(home: Path, env: dict[str, str], exe: Path) -> None:
    target = target_for("linux", home, exe)
    assert service.settings_drift(load_config(env=env), target, env) == []
    elsewhere = home / "elsewhere"
    cfg = load_config(env={**env, "AGENTSRC_DATA_DIR": str(elsewhere)})
    assert service.settings_drift(cfg, target, env) == [
        f"the service will use data dir {home}/.local/share/agentsrc, not {elsewhere} as set "
        "in this shell (environment or flags): put it in the config file to make them agree"
    ]


# --- platform and executable ---------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "env", "expected"),
    [
        ("linux", {}, "linux"),
        ("darwin", {}, "darwin"),
        (None, {"AGENTSRC_SERVICE_PLATFORM": "darwin"}, "darwin"),
        ("linux2", {"AGENTSRC_SERVICE_PLATFORM": "darwin"}, "linux"),
    ],
)
def test_detect_platform(override: str | None, env: dict[str, str], expected: str) -> None:
    assert detect_platform(override, env) == expected


def test_detect_platform_refuses_windows() -> None:
    with pytest.raises(ServiceError, match="no per-user service manager supported on 'win32'"):
        detect_platform("win32", {})


def test_find_executable_prefers_the_running_script(tmp_path: Path) -> None:
    running = make_executable(tmp_path / "pipx" / "agentsrc")
    beside = make_executable(tmp_path / "venv" / "bin" / "agentsrc")
    on_path = make_executable(tmp_path / "path" / "agentsrc")
    python = tmp_path / "venv" / "bin" / "python"
    env = {"PATH": str(on_path.parent)}
    assert find_executable(env, argv0=str(running), python=str(python)) == running
    assert find_executable(env, argv0="/x/pytest", python=str(python)) == beside
    assert find_executable(env, argv0="/x/pytest", python="/nowhere/python") == on_path
    with pytest.raises(ServiceError, match="cannot find the installed `agentsrc` command"):
        find_executable({"PATH": str(tmp_path / "empty")}, argv0="", python="/nowhere/python")


def test_find_executable_keeps_symlinks(tmp_path: Path) -> None:
    real = make_executable(tmp_path / "venvs" / "agentsrc" / "bin" / "agentsrc")
    link = tmp_path / "local" / "bin" / "agentsrc"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert find_executable({"PATH": ""}, argv0=str(link), python="/nowhere/python") == link


def test_current_target_from_config(home: Path, env: dict[str, str], exe: Path) -> None:
    cfg = load_config(env=env)
    env_with_xdg = {**env, "XDG_CONFIG_HOME": str(home / "xdg"), "PATH": str(exe.parent)}
    target = ServiceTarget.current(cfg, env=env_with_xdg, platform="linux")
    assert target.home == home
    assert target.unit_path == home / "xdg" / "systemd" / "user" / UNIT_NAME
    assert target.executable is not None and target.executable.name == "agentsrc"
    assert target.data_dir == home / ".local" / "share" / "agentsrc"
    assert target.uid == os.getuid()


# --- install and uninstall on Linux --------------------------------------------------

LINUX_INSTALL_CALLS = [
    ("systemctl", "--user", "daemon-reload"),
    ("systemctl", "--user", "reset-failed", UNIT_NAME),
    ("systemctl", "--user", "try-restart", UNIT_NAME),
    ("systemctl", "--user", "enable", "--now", UNIT_NAME),
]


def test_linux_install_writes_the_unit_and_runs_systemctl(
    home: Path, env: dict[str, str], exe: Path
) -> None:
    target = target_for("linux", home, exe)
    outcome = install(plan_install(target), env=env)
    unit = home / ".config" / "systemd" / "user" / UNIT_NAME
    assert unit.read_text() == render_unit([str(exe), "run"])
    assert mode_of(unit) == 0o644
    assert mode_of(unit.parent) == 0o755
    assert calls(env) == [
        *LINUX_INSTALL_CALLS,
        ("loginctl", "show-user", USER, "--property=Linger"),
    ]
    assert outcome.done[-1] == f"systemctl --user enable --now {UNIT_NAME}"
    assert outcome.done[3] == f"systemctl --user reset-failed {UNIT_NAME}"
    assert outcome.notes[0] == "logs: journalctl --user -u agentsrc"
    assert outcome.notes[-1] == (
        f"lingering is off for {USER}: the service stops when you log out and starts again "
        f"at your next login. To keep it running after logout: loginctl enable-linger {USER}"
    )
    assert not target.data_dir.exists()  # the daemon makes its data dir, not install


def test_linux_install_with_lingering_says_nothing_about_it(
    home: Path, env: dict[str, str], exe: Path
) -> None:
    outcome = install(
        plan_install(target_for("linux", home, exe)), env={**env, "STUB_LINGER": "yes"}
    )
    assert not any("linger" in note for note in outcome.notes)


def test_linux_install_when_logind_cannot_be_asked(
    home: Path, env: dict[str, str], exe: Path
) -> None:
    outcome = install(
        plan_install(target_for("linux", home, exe)), env={**env, "STUB_LINGER": "error"}
    )
    assert outcome.notes[-1].startswith("could not ask logind whether lingering is on")
    assert outcome.notes[-1].endswith(f"enable with: loginctl enable-linger {USER}")


def test_reinstall_replaces_the_unit(home: Path, env: dict[str, str], exe: Path) -> None:
    unit = home / ".config" / "systemd" / "user" / UNIT_NAME
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/old/agentsrc run\n")
    unit.chmod(0o600)
    install(plan_install(target_for("linux", home, exe)), env=env)
    assert unit.read_text() == render_unit([str(exe), "run"])
    assert mode_of(unit) == 0o644
    assert sorted(p.name for p in unit.parent.iterdir()) == [UNIT_NAME]  # no temp file left


def test_dry_run_writes_and_runs_nothing(home: Path, env: dict[str, str], exe: Path) -> None:
    plan = plan_install(target_for("linux", home, exe))
    outcome = install(plan, dry_run=True, env=env)
    assert outcome.done == []
    assert calls(env) == []
    assert list(home.iterdir()) == []
    described = plan.describe(with_content=True)
    unit = home / ".config" / "systemd" / "user" / UNIT_NAME
    assert f"write {unit} (mode 644, " in described
    assert f"    | ExecStart={exe} run" in described
    assert f"  systemctl --user enable --now {UNIT_NAME}" in described
    assert plan.commands == [tuple(c) for c in LINUX_INSTALL_CALLS]


def test_uninstall_removes_the_unit_and_keeps_the_data(
    home: Path, env: dict[str, str], exe: Path
) -> None:
    target = target_for("linux", home, exe)
    install(plan_install(target), env=env)
    target.data_dir.mkdir(parents=True)
    (target.data_dir / "agentsrc.db").write_bytes(b"events")
    Path(env["AGENTSRC_STUB_LOG"]).unlink()

    outcome = uninstall(plan_uninstall(target), env=env)
    assert not target.unit_path.exists()
    assert (target.data_dir / "agentsrc.db").read_bytes() == b"events"
    assert calls(env) == [
        ("systemctl", "--user", "disable", "--now", UNIT_NAME),
        ("systemctl", "--user", "daemon-reload"),
        ("systemctl", "--user", "reset-failed", UNIT_NAME),
    ]
    assert outcome.notes == [
        f"kept the data dir {target.data_dir} (the database): delete it yourself to "
        "drop the recorded history"
    ]


def test_uninstall_dry_run_and_uninstall_when_not_installed(
    home: Path, env: dict[str, str]
) -> None:
    target = target_for("linux", home, None)
    plan = plan_uninstall(target)
    assert uninstall(plan, dry_run=True, env=env).done == []
    assert calls(env) == []
    # Nothing installed: disable fails (ignored), removing a missing file is fine.
    outcome = uninstall(plan, env={**env, "STUB_SYSTEMCTL_FAIL": "disable"})
    assert outcome.done[0] == f"systemctl --user disable --now {UNIT_NAME}  (exit 1, ignored)"


def test_a_failing_command_stops_the_install(home: Path, env: dict[str, str], exe: Path) -> None:
    failing = {
        **env,
        "STUB_SYSTEMCTL_FAIL": "daemon-reload",
        "STUB_SYSTEMCTL_FAIL_MESSAGE": "Failed to connect to bus: No medium found",
    }
    with pytest.raises(ServiceError) as caught:
        install(plan_install(target_for("linux", home, exe)), env=failing)
    message = str(caught.value)
    assert message.startswith(
        "`systemctl --user daemon-reload` failed (exit 1): Failed to connect to bus"
    )
    assert "no user systemd instance is reachable" in message
    assert calls(env) == [("systemctl", "--user", "daemon-reload")]


def test_a_missing_tool_is_named(home: Path, tmp_path: Path, exe: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ServiceError, match="`systemctl` was not found on PATH"):
        install(plan_install(target_for("linux", home, exe)), env={"PATH": str(empty)})


def test_a_file_in_the_way_is_reported(home: Path, env: dict[str, str], exe: Path) -> None:
    (home / ".config").write_text("not a directory")
    with pytest.raises(ServiceError, match=f"mkdir -p -m 755 {home}/.config/systemd/user: "):
        install(plan_install(target_for("linux", home, exe)), env=env)
    assert calls(env) == []


def test_plans_refuse_the_wrong_action(home: Path, exe: Path) -> None:
    target = target_for("linux", home, exe)
    with pytest.raises(ValueError):
        install(plan_uninstall(target), dry_run=True)
    with pytest.raises(ValueError):
        uninstall(plan_install(target), dry_run=True)
    with pytest.raises(ServiceError, match="path of the agentsrc command is unknown"):
        plan_install(target_for("linux", home, None))


# --- install and uninstall on macOS --------------------------------------------------


def test_darwin_install_and_uninstall(home: Path, env: dict[str, str], exe: Path) -> None:
    target = target_for("darwin", home, exe)
    outcome = install(plan_install(target), env=env)
    plist_path = home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    log_dir = home / "Library" / "Logs" / "agentsrc"
    assert plist_path.read_text() == render_plist([str(exe), "run"], home, log_dir)
    assert mode_of(plist_path) == 0o644
    assert mode_of(log_dir) == 0o700
    service_name = f"gui/{UID}/{LAUNCHD_LABEL}"
    assert calls(env) == [
        ("launchctl", "bootout", service_name),
        ("launchctl", "enable", service_name),
        ("launchctl", "bootstrap", f"gui/{UID}", str(plist_path)),
    ]
    assert outcome.notes[0] == f"logs: {log_dir}"
    assert not any("linger" in note for note in outcome.notes)

    Path(env["AGENTSRC_STUB_LOG"]).unlink()
    target.data_dir.mkdir(parents=True)
    outcome = uninstall(plan_uninstall(target), env=env)
    assert calls(env) == [("launchctl", "bootout", service_name)]
    assert not plist_path.exists()
    assert log_dir.is_dir() and target.data_dir.is_dir()
    assert outcome.notes[0] == f"kept the logs in {log_dir}"


def test_darwin_bootstrap_failure_is_reported(home: Path, env: dict[str, str], exe: Path) -> None:
    plan = plan_install(target_for("darwin", home, exe))
    # One attempt only, so the test does not sleep between retries.
    bootstrap = plan.steps[-1]
    assert isinstance(bootstrap, service.RunCommand) and bootstrap.attempts == 3
    plan.steps[-1] = service.RunCommand(bootstrap.argv, bootstrap.why, attempts=1)
    with pytest.raises(ServiceError, match="bootstrap failed: 5: Input/output error"):
        install(plan, env={**env, "STUB_LAUNCHCTL_FAIL": "bootstrap"})


# --- the manager's view --------------------------------------------------------------

SYSTEMCTL_SHOW_RUNNING = """\
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
MainPID=4321
NRestarts=2
ExecMainStatus=0
Result=success
StatusText=backfill 120/900 files
ActiveEnterTimestamp=Sat 2025-11-29 18:00:00 UTC
"""

LAUNCHCTL_PRINT_RUNNING = """\
gui/1000/dev.agentsrc.daemon = {
\tactive count = 1
\tpath = /Users/ada/Library/LaunchAgents/dev.agentsrc.daemon.plist
\ttype = LaunchAgent
\tstate = running

\tprogram = /Users/ada/.local/bin/agentsrc
\targuments = {
\t\t/Users/ada/.local/bin/agentsrc
\t\trun
\t}

\truns = 3
\tpid = 777
\tlast exit code = 1
}
"""


def test_systemd_status(home: Path, tmp_path: Path, env: dict[str, str], exe: Path) -> None:
    target = target_for("linux", home, exe)
    show = tmp_path / "show.txt"
    show.write_text(SYSTEMCTL_SHOW_RUNNING)
    status = service_status(target, env={**env, "STUB_SYSTEMCTL_SHOW": str(show)})
    assert calls(env) == [
        (
            "systemctl",
            "--user",
            "show",
            UNIT_NAME,
            "--property=LoadState,ActiveState,SubState,UnitFileState,MainPID,NRestarts,"
            "ExecMainStatus,Result,StatusText,ActiveEnterTimestamp",
        )
    ]
    assert (status.manager, status.installed, status.loaded, status.active) == (
        "systemd",
        False,
        True,
        True,
    )
    assert status.state == "active (running)"
    assert (status.pid, status.restarts, status.last_exit) == (4321, 2, 0)
    assert status.status_text == "backfill 120/900 files"
    assert status.error is None


def test_systemd_status_of_an_unknown_unit(home: Path, env: dict[str, str]) -> None:
    status = service_status(target_for("linux", home, None), env=env)
    assert (status.loaded, status.active, status.state, status.pid) == (
        False,
        False,
        "not-found",
        None,
    )


def test_systemd_status_without_a_manager(home: Path, env: dict[str, str]) -> None:
    status = service_status(
        target_for("linux", home, None), env={**env, "STUB_SYSTEMCTL_FAIL": "show"}
    )
    assert status.error is not None
    assert status.error.startswith("`systemctl --user show agentsrc.service --property=")
    assert (status.loaded, status.active, status.state) == (False, False, "unknown")


def test_launchd_status(home: Path, tmp_path: Path, env: dict[str, str]) -> None:
    printed = tmp_path / "print.txt"
    printed.write_text(LAUNCHCTL_PRINT_RUNNING)
    target = target_for("darwin", home, None)
    status = service_status(target, env={**env, "STUB_LAUNCHCTL_PRINT": str(printed)})
    assert calls(env) == [("launchctl", "print", f"gui/{UID}/{LAUNCHD_LABEL}")]
    assert (status.manager, status.loaded, status.active, status.state) == (
        "launchd",
        True,
        True,
        "running",
    )
    assert (status.pid, status.restarts, status.last_exit) == (777, 2, 1)
    assert "arguments" not in status.properties  # nested blocks are skipped


def test_launchd_status_not_loaded(home: Path, env: dict[str, str]) -> None:
    status = service_status(target_for("darwin", home, None), env=env)
    assert (status.loaded, status.active, status.state, status.error) == (
        False,
        False,
        "not loaded",
        None,
    )


# --- the CLI commands ----------------------------------------------------------------


def test_cli_install_dry_run_and_uninstall(home: Path, env: dict[str, str], exe: Path) -> None:
    runner = CliRunner()
    cli_env = {**env, "PATH": f"{env['PATH']}:{exe.parent}", "AGENTSRC_SERVICE_PLATFORM": "linux"}
    result = runner.invoke(app, ["install", "--dry-run"], env=cli_env)
    assert result.exit_code == 0, result.output
    assert "install agentsrc as a systemd user service:" in result.output
    assert "(dry run: nothing was written and nothing was run)" in result.output
    assert calls(env) == []
    assert list(home.iterdir()) == []

    result = runner.invoke(app, ["uninstall"], env=cli_env)
    assert result.exit_code == 0, result.output
    assert f"done: rm -f {home}/.config/systemd/user/{UNIT_NAME}" in result.output
    assert [c[:3] for c in calls(env)] == [
        ("systemctl", "--user", "disable"),
        ("systemctl", "--user", "daemon-reload"),
        ("systemctl", "--user", "reset-failed"),
    ]


def test_cli_service_status_json(home: Path, tmp_path: Path, env: dict[str, str]) -> None:
    show = tmp_path / "show.txt"
    show.write_text(SYSTEMCTL_SHOW_RUNNING)
    cli_env = {
        **env,
        "STUB_SYSTEMCTL_SHOW": str(show),
        "AGENTSRC_SERVICE_PLATFORM": "linux",
    }
    result = CliRunner().invoke(app, ["service", "status", "--json"], env=cli_env)
    # The manager says running, but no daemon answers on the socket: exit 3.
    assert result.exit_code == 3, result.output
    answer = orjson.loads(result.output)
    assert answer["service"]["active"] is True
    assert answer["service"]["pid"] == 4321
    assert answer["daemon"] is None
    assert answer["daemon_error"]


def test_cli_reports_a_bad_config(env: dict[str, str]) -> None:
    # Exit 1, as for every command: the configuration is loaded by the CLI's one
    # get_config. (A fake get_config used to make this 2, which agentsrc never did.)
    result = CliRunner().invoke(app, ["--config", "/x.toml", "install"], env=env)
    assert result.exit_code == 1
    assert result.output == "agentsrc: config file not found: /x.toml\n"
