"""Install agentsrc as a per-user service: a systemd user unit on Linux, a launch agent on macOS.

Everything here is data until the last step: `ServiceTarget` says where things go on this
machine, `plan_install` / `plan_uninstall` turn it into an ordered list of steps (directories
to make, files to write with their content and mode, commands to run), and `install` /
`uninstall` carry a plan out (or only describe it, for --dry-run). No root is needed.

The service managers are driven through their command-line tools (systemctl, loginctl,
launchctl), looked up on PATH at run time, so a test can put recording stand-ins first on
PATH where the real manager cannot run.

The unit and plist are rendered from the templates at the top of the source tree
(systemd/agentsrc.service, launchd/dev.agentsrc.daemon.plist). A copy of each is embedded
below because a wheel (pip install ., pipx) carries only the package, not those folders;
a test keeps the copies identical to the files.

Long on purpose (about 850 lines): two service managers, each with its plan, its
templates and its status, in one module so that install, uninstall and status read the
same `ServiceTarget` and plan the same way on both.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import escape as xml_escape

from agentsrc_daemon.config import Config, default_config_file, environment, load_config
from agentsrc_daemon.errors import ConfigError, ServiceError

Platform = Literal["linux", "darwin"]

UNIT_NAME = "agentsrc.service"
LAUNCHD_LABEL = "dev.agentsrc.daemon"
# Lets a test (or a curious user) ask for the other platform's plan: "linux" or "darwin".
PLATFORM_ENV = "AGENTSRC_SERVICE_PLATFORM"
COMMAND_TIMEOUT = 30.0  # seconds; systemctl waits for the start job of `enable --now`

SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the repository (templates beside the package)
SYSTEMD_TEMPLATE_PATH = SOURCE_ROOT / "systemd" / UNIT_NAME
LAUNCHD_TEMPLATE_PATH = SOURCE_ROOT / "launchd" / f"{LAUNCHD_LABEL}.plist"

PLACEHOLDER_PATTERN = re.compile(r"@[A-Z_]+@")


def detect_platform(override: str | None = None, env: Mapping[str, str] | None = None) -> Platform:
    env = environment() if env is None else env
    name = override or env.get(PLATFORM_ENV) or sys.platform
    if name.startswith("linux"):
        return "linux"
    if name == "darwin":
        return "darwin"
    raise ServiceError(
        f"no per-user service manager supported on {name!r}: run `agentsrc run` yourself "
        "(systemd user units on Linux and launchd agents on macOS are supported)"
    )


# --- where things go -----------------------------------------------------------------


def find_executable(
    env: Mapping[str, str] | None = None,
    argv0: str | None = None,
    python: str | None = None,
) -> Path:
    """The absolute path of the installed `agentsrc` console script, for ExecStart.

    In order: the script being run now (argv[0]), the script beside this interpreter (the
    same venv as the running code), then `agentsrc` on PATH. Symlinks are kept, not
    resolved: pipx links ~/.local/bin/agentsrc into a venv it recreates on upgrade.
    """
    env = environment() if env is None else env
    argv0 = sys.argv[0] if argv0 is None else argv0
    python = sys.executable if python is None else python
    candidates: list[str] = []
    if argv0 and Path(argv0).name == "agentsrc":
        candidates.append(argv0)
    if python:
        candidates.append(str(Path(python).parent / "agentsrc"))
    on_path = shutil.which("agentsrc", path=env.get("PATH"))
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return Path(os.path.abspath(candidate))
    raise ServiceError(
        "cannot find the installed `agentsrc` command: install the package "
        "(e.g. `pipx install agentsrc` or `pip install -e .`) so that it exists"
    )


@dataclass(frozen=True, slots=True)
class ServiceTarget:
    """Everything about this machine and user that the service files depend on."""

    platform: Platform
    home: Path
    config_home: Path  # $XDG_CONFIG_HOME or ~/.config: where systemd looks for user units
    user: str
    uid: int
    data_dir: Path
    executable: Path | None = None  # None: only status and uninstall are possible
    # A config file the service would not find by itself (--config, AGENTSRC_CONFIG):
    # passed to it as `agentsrc --config <file> run`.
    config_file: Path | None = None

    @property
    def program_arguments(self) -> list[str]:
        if self.executable is None:
            raise ServiceError("cannot install: the path of the agentsrc command is unknown")
        config = ["--config", str(self.config_file)] if self.config_file else []
        return [str(self.executable), *config, "run"]

    @property
    def unit_path(self) -> Path:
        return self.config_home / "systemd" / "user" / UNIT_NAME

    @property
    def plist_path(self) -> Path:
        return self.home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"

    @property
    def log_dir(self) -> Path:
        return self.home / "Library" / "Logs" / "agentsrc"

    @property
    def service_file(self) -> Path:
        return self.unit_path if self.platform == "linux" else self.plist_path

    @property
    def launchd_domain(self) -> str:
        return f"gui/{self.uid}"

    @property
    def launchd_service(self) -> str:
        return f"gui/{self.uid}/{LAUNCHD_LABEL}"

    @classmethod
    def current(
        cls,
        cfg: Config,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        need_executable: bool = True,
    ) -> ServiceTarget:
        env = environment() if env is None else env
        uid = os.getuid()
        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:  # a uid with no passwd entry (containers)
            user = env.get("USER") or env.get("LOGNAME") or str(uid)
        config_home = Path(env.get("XDG_CONFIG_HOME") or cfg.home / ".config").absolute()
        return cls(
            config_file=_config_file_to_pass(cfg, env),
            platform=detect_platform(platform, env),
            home=cfg.home,
            config_home=config_home,
            user=user,
            uid=uid,
            data_dir=cfg.data_dir,
            executable=find_executable(env) if need_executable else None,
        )


def _service_env(env: Mapping[str, str], home: Path) -> dict[str, str]:
    """The part of the environment the service will also have: the manager sets HOME and,
    on Linux, XDG_RUNTIME_DIR; XDG_CONFIG_HOME and XDG_DATA_HOME usually match the login's."""
    keep = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR")
    return {"HOME": str(home), **{k: env[k] for k in keep if env.get(k)}}


def _config_file_to_pass(cfg: Config, env: Mapping[str, str]) -> Path | None:
    if cfg.config_file is None:
        return None
    found_by_itself = default_config_file(_service_env(env, cfg.home), cfg.home)
    return None if cfg.config_file == found_by_itself else cfg.config_file


def settings_drift(
    cfg: Config, target: ServiceTarget, env: Mapping[str, str] | None = None
) -> list[str]:
    """Where the service will look elsewhere than this command does.

    The service sees neither this shell's AGENTSRC_* variables nor its flags (only the
    config file is passed on), so a data dir set that way would split the record in two.
    """
    env = environment() if env is None else env
    try:
        seen = load_config(env=_service_env(env, cfg.home), config_file=target.config_file)
    except ConfigError as exc:
        return [f"the service will not be able to load its configuration: {exc}"]
    differences = [
        (what, mine, theirs)
        for what, mine, theirs in (
            ("data dir", cfg.data_dir, seen.data_dir),
            ("socket", cfg.socket_path, seen.socket_path),
            *((f"{agent} root", cfg.roots()[agent], seen.roots().get(agent))
              for agent in cfg.roots()),
        )
        if mine != theirs
    ]
    return [
        f"the service will use {what} {theirs}, not {mine} as set in this shell "
        "(environment or flags): put it in the config file to make them agree"
        for what, mine, theirs in differences
    ]


# --- rendering -----------------------------------------------------------------------


def systemd_quote(arg: str) -> str:
    """One ExecStart= word: '%' and '$' are specifier and variable syntax in unit files."""
    escaped = arg.replace("%", "%%").replace("$", "$$")
    if escaped and not re.search(r"[\s\"'\\;]", escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def load_template(path: Path, embedded: str) -> str:
    """The template file from the source tree, else the copy embedded in this module."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return embedded


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Replace each @NAME@ in one pass, so a value that happens to contain "@HOME@" (a
    path can) is left as it is; a placeholder without a value is an error."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group(0)[1:-1]
        if name not in values:
            raise ServiceError(f"template placeholder {match.group(0)} has no value")
        return values[name]

    return PLACEHOLDER_PATTERN.sub(value_of, template)


def render_unit(program_arguments: Sequence[str]) -> str:
    template = load_template(SYSTEMD_TEMPLATE_PATH, EMBEDDED_SYSTEMD_TEMPLATE)
    exec_start = " ".join(systemd_quote(a) for a in program_arguments)
    return _fill(template, {"EXEC_START": exec_start})


def render_plist(program_arguments: Sequence[str], home: Path, log_dir: Path) -> str:
    template = load_template(LAUNCHD_TEMPLATE_PATH, EMBEDDED_LAUNCHD_TEMPLATE)
    # One <string> per argument, at the indentation the template gives the first one.
    arguments = "\n\t\t".join(f"<string>{xml_escape(a)}</string>" for a in program_arguments)
    return _fill(
        template,
        {
            "LABEL": xml_escape(LAUNCHD_LABEL),
            "PROGRAM_ARGUMENTS": arguments,
            "HOME": xml_escape(str(home)),
            "LOG_DIR": xml_escape(str(log_dir)),
        },
    )


# --- plans ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MakeDir:
    path: Path
    mode: int  # applied only when the directory is created

    def describe(self) -> str:
        return f"mkdir -p -m {self.mode:o} {shlex.quote(str(self.path))}"


@dataclass(frozen=True, slots=True)
class WriteFile:
    path: Path
    content: str
    mode: int

    def describe(self) -> str:
        return f"write {self.path} (mode {self.mode:o}, {len(self.content.encode())} bytes)"


@dataclass(frozen=True, slots=True)
class RemoveFile:
    path: Path

    def describe(self) -> str:
        return f"rm -f {shlex.quote(str(self.path))}"


@dataclass(frozen=True, slots=True)
class RunCommand:
    argv: tuple[str, ...]
    why: str
    may_fail: bool = False  # e.g. stopping a service that is not loaded
    attempts: int = 1  # launchd sometimes needs a moment after bootout

    def describe(self) -> str:
        suffix = "  # may fail harmlessly" if self.may_fail else ""
        return shlex.join(self.argv) + suffix


Step = MakeDir | WriteFile | RemoveFile | RunCommand


@dataclass(slots=True)
class Plan:
    action: Literal["install", "uninstall"]
    target: ServiceTarget
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def commands(self) -> list[tuple[str, ...]]:
        return [s.argv for s in self.steps if isinstance(s, RunCommand)]

    @property
    def files(self) -> list[WriteFile]:
        return [s for s in self.steps if isinstance(s, WriteFile)]

    def describe(self, with_content: bool = False) -> str:
        lines = [f"{self.action} agentsrc as a {_manager(self.target.platform)} user service:"]
        for step in self.steps:
            lines.append(f"  {step.describe()}")
            if with_content and isinstance(step, WriteFile):
                lines.extend(f"    | {line}" for line in step.content.splitlines())
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "platform": self.target.platform,
            "steps": [_step_json(s) for s in self.steps],
            "notes": list(self.notes),
        }


def _step_json(step: Step) -> dict[str, Any]:
    if isinstance(step, MakeDir):
        return {"mkdir": str(step.path), "mode": f"{step.mode:o}"}
    if isinstance(step, WriteFile):
        return {"write": str(step.path), "mode": f"{step.mode:o}", "content": step.content}
    if isinstance(step, RemoveFile):
        return {"remove": str(step.path)}
    return {"run": list(step.argv), "why": step.why, "may_fail": step.may_fail}


def _manager(platform: Platform) -> str:
    return "systemd" if platform == "linux" else "launchd"


def _systemctl(*args: str) -> tuple[str, ...]:
    return ("systemctl", "--user", *args)


def plan_install(target: ServiceTarget) -> Plan:
    arguments = target.program_arguments
    plan = Plan("install", target)
    if target.platform == "linux":
        plan.steps = [
            MakeDir(target.unit_path.parent, 0o755),
            WriteFile(target.unit_path, render_unit(arguments), 0o644),
            RunCommand(_systemctl("daemon-reload"), "load the new or changed unit"),
            RunCommand(
                _systemctl("reset-failed", UNIT_NAME),
                "forget an earlier start-limit failure so the start below is allowed",
                may_fail=True,
            ),
            RunCommand(
                _systemctl("try-restart", UNIT_NAME),
                "a reinstall (upgrade) restarts a running daemon on the new code",
            ),
            RunCommand(_systemctl("enable", "--now", UNIT_NAME), "start now and at login"),
        ]
        plan.notes = [
            "logs: journalctl --user -u agentsrc",
            "state: agentsrc service status; checks: agentsrc doctor",
        ]
    else:
        plan.steps = [
            MakeDir(target.plist_path.parent, 0o755),
            MakeDir(target.log_dir, 0o700),
            WriteFile(
                target.plist_path,
                render_plist(arguments, target.home, target.log_dir),
                0o644,
            ),
            RunCommand(
                ("launchctl", "bootout", target.launchd_service),
                "unload an earlier install so the new plist is read",
                may_fail=True,
            ),
            RunCommand(
                ("launchctl", "enable", target.launchd_service),
                "undo an earlier `launchctl disable`, which would block the bootstrap",
            ),
            RunCommand(
                ("launchctl", "bootstrap", target.launchd_domain, str(target.plist_path)),
                "load and start the agent (and at every login)",
                attempts=3,
            ),
        ]
        plan.notes = [
            f"logs: {target.log_dir}",
            "state: agentsrc service status; checks: agentsrc doctor",
        ]
    return plan


def plan_uninstall(target: ServiceTarget) -> Plan:
    plan = Plan("uninstall", target)
    if target.platform == "linux":
        plan.steps = [
            RunCommand(
                _systemctl("disable", "--now", UNIT_NAME),
                "stop the daemon and drop the login start",
                may_fail=True,
            ),
            RemoveFile(target.unit_path),
            RunCommand(_systemctl("daemon-reload"), "forget the removed unit"),
            RunCommand(
                _systemctl("reset-failed", UNIT_NAME),
                "clear a failed state left behind",
                may_fail=True,
            ),
        ]
    else:
        plan.steps = [
            RunCommand(
                ("launchctl", "bootout", target.launchd_service),
                "stop the daemon and unload the agent",
                may_fail=True,
            ),
            RemoveFile(target.plist_path),
        ]
        plan.notes.append(f"kept the logs in {target.log_dir}")
    plan.notes.append(
        f"kept the data dir {target.data_dir} (the database): delete it yourself to "
        "drop the recorded history"
    )
    return plan


# --- carrying a plan out -------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    plan: Plan
    dry_run: bool
    done: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_command(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = COMMAND_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """Run a manager's tool, found on PATH now (so tests can put stand-ins first)."""
    env = environment() if env is None else env
    exe = shutil.which(argv[0], path=env.get("PATH"))
    if exe is None:
        raise ServiceError(f"`{argv[0]}` was not found on PATH ({env.get('PATH', '')})")
    try:
        return subprocess.run(
            [exe, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(env),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ServiceError(f"`{shlex.join(argv)}` did not finish in {timeout:.0f} s") from None


def _failure_message(argv: Sequence[str], proc: subprocess.CompletedProcess[str]) -> str:
    said = (proc.stderr or proc.stdout or "").strip()[:500]
    message = f"`{shlex.join(argv)}` failed (exit {proc.returncode}): {said}"
    if "Failed to connect to bus" in said or "No medium found" in said:
        message += (
            "\nno user systemd instance is reachable: run this from your own login session "
            "(XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS must be set), not via sudo or su"
        )
    return message


def _write_file(step: WriteFile) -> None:
    # Write beside the target and rename, so a crash never leaves half a unit file.
    tmp = step.path.with_name(f".{step.path.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, step.mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(step.content)
        os.chmod(tmp, step.mode)  # os.open's mode is filtered by the umask
        os.replace(tmp, step.path)
    finally:
        tmp.unlink(missing_ok=True)


def _run_step(step: Step, env: Mapping[str, str]) -> str:
    if isinstance(step, MakeDir):
        if not step.path.is_dir():
            step.path.mkdir(parents=True, mode=step.mode)
            os.chmod(step.path, step.mode)
        return step.describe()
    if isinstance(step, WriteFile):
        _write_file(step)
        return step.describe()
    if isinstance(step, RemoveFile):
        step.path.unlink(missing_ok=True)
        return step.describe()
    proc = run_command(step.argv, env)
    for _ in range(step.attempts - 1):
        if proc.returncode == 0:
            break
        time.sleep(1.0)
        proc = run_command(step.argv, env)
    if proc.returncode != 0 and not step.may_fail:
        raise ServiceError(_failure_message(step.argv, proc))
    status = "" if proc.returncode == 0 else f"  (exit {proc.returncode}, ignored)"
    return shlex.join(step.argv) + status


def carry_out(plan: Plan, dry_run: bool, env: Mapping[str, str] | None = None) -> Outcome:
    env = environment() if env is None else env
    outcome = Outcome(plan, dry_run)
    if dry_run:
        return outcome
    for step in plan.steps:
        try:
            outcome.done.append(_run_step(step, env))
        except OSError as exc:  # e.g. a file where the unit directory should be
            raise ServiceError(f"{step.describe()}: {exc.strerror or exc}") from None
    return outcome


def install(plan: Plan, dry_run: bool = False, env: Mapping[str, str] | None = None) -> Outcome:
    """Carry out an install plan; on Linux, then warn when the service stops at logout."""
    if plan.action != "install":
        raise ValueError("install() needs a plan from plan_install()")
    env = environment() if env is None else env
    outcome = carry_out(plan, dry_run, env)
    outcome.notes.extend(plan.notes)
    if not dry_run and plan.target.platform == "linux":
        note = linger_note(plan.target.user, linger_enabled(plan.target.user, env))
        if note:
            outcome.notes.append(note)
    return outcome


def uninstall(plan: Plan, dry_run: bool = False, env: Mapping[str, str] | None = None) -> Outcome:
    """Carry out an uninstall plan. The data dir and its database are never touched."""
    if plan.action != "uninstall":
        raise ValueError("uninstall() needs a plan from plan_uninstall()")
    outcome = carry_out(plan, dry_run, env)
    outcome.notes.extend(plan.notes)
    return outcome


# --- lingering -----------------------------------------------------------------------


def linger_enabled(user: str, env: Mapping[str, str] | None = None) -> bool | None:
    """Whether logind keeps this user's manager (and so the service) running after logout.

    None when logind cannot be asked (no loginctl, no logind running).
    """
    try:
        proc = run_command(("loginctl", "show-user", user, "--property=Linger"), env)
    except ServiceError:
        return None
    if proc.returncode != 0:
        return None
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "Linger":
            return value.strip() == "yes"
    return None


def linger_note(user: str, linger: bool | None) -> str | None:
    enable = f"loginctl enable-linger {shlex.quote(user)}"
    if linger is False:
        return (
            f"lingering is off for {user}: the service stops when you log out and starts "
            f"again at your next login. To keep it running after logout: {enable}"
        )
    if linger is None:
        return (
            "could not ask logind whether lingering is on; without it the service stops "
            f"at logout. Check with `loginctl show-user {shlex.quote(user)} "
            f"--property=Linger`, enable with: {enable}"
        )
    return None


# --- the manager's view --------------------------------------------------------------

SYSTEMD_STATUS_PROPERTIES = (
    "LoadState",
    "ActiveState",
    "SubState",
    "UnitFileState",
    "MainPID",
    "NRestarts",
    "ExecMainStatus",
    "Result",
    "StatusText",
    "ActiveEnterTimestamp",
)


@dataclass(slots=True)
class ServiceStatus:
    manager: str  # "systemd" or "launchd"
    service_file: Path
    installed: bool  # the unit or plist file is there
    loaded: bool  # the manager knows the service
    active: bool  # the daemon process is running
    state: str  # the manager's words, e.g. "active (running)", "failed (exit-code)"
    pid: int | None = None
    restarts: int | None = None
    last_exit: int | None = None
    status_text: str | None = None  # the daemon's last STATUS= line (systemd only)
    properties: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # the manager could not be asked

    def to_json(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "service_file": str(self.service_file),
            "installed": self.installed,
            "loaded": self.loaded,
            "active": self.active,
            "state": self.state,
            "pid": self.pid,
            "restarts": self.restarts,
            "last_exit": self.last_exit,
            "status_text": self.status_text,
            "properties": dict(self.properties),
            "error": self.error,
        }


def _int_from_text(value: str | None) -> int | None:
    """A number in systemctl's or launchctl's text output (not a transcript's JSON
    number: adapters/common.py as_int reads those)."""
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def parse_systemctl_show(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key] = value
    return props


def parse_launchctl_print(text: str) -> dict[str, str]:
    """The top-level `key = value` lines of `launchctl print` (nested blocks skipped)."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("\t") or line.startswith("\t\t"):
            continue
        key, sep, value = line.strip().partition(" = ")
        if sep and not value.endswith("{"):
            props[key] = value
    return props


def service_status(target: ServiceTarget, env: Mapping[str, str] | None = None) -> ServiceStatus:
    if target.platform == "linux":
        return _systemd_status(target, env)
    return _launchd_status(target, env)


def _systemd_status(target: ServiceTarget, env: Mapping[str, str] | None) -> ServiceStatus:
    status = ServiceStatus(
        manager="systemd",
        service_file=target.unit_path,
        installed=target.unit_path.is_file(),
        loaded=False,
        active=False,
        state="unknown",
    )
    argv = _systemctl("show", UNIT_NAME, "--property=" + ",".join(SYSTEMD_STATUS_PROPERTIES))
    try:
        proc = run_command(argv, env)
    except ServiceError as exc:
        status.error = str(exc)
        return status
    if proc.returncode != 0:
        status.error = _failure_message(argv, proc)
        return status
    props = parse_systemctl_show(proc.stdout)
    status.properties = props
    status.loaded = props.get("LoadState") == "loaded"
    active_state = props.get("ActiveState", "unknown")
    status.active = active_state in ("active", "reloading")
    sub = props.get("SubState")
    status.state = f"{active_state} ({sub})" if sub else active_state
    if not status.loaded:
        status.state = props.get("LoadState", "not-found")
    main_pid = _int_from_text(props.get("MainPID"))
    status.pid = main_pid if main_pid else None
    status.restarts = _int_from_text(props.get("NRestarts"))
    status.last_exit = _int_from_text(props.get("ExecMainStatus"))
    status.status_text = props.get("StatusText") or None
    return status


def _launchd_status(target: ServiceTarget, env: Mapping[str, str] | None) -> ServiceStatus:
    status = ServiceStatus(
        manager="launchd",
        service_file=target.plist_path,
        installed=target.plist_path.is_file(),
        loaded=False,
        active=False,
        state="unknown",
    )
    argv = ("launchctl", "print", target.launchd_service)
    try:
        proc = run_command(argv, env)
    except ServiceError as exc:
        status.error = str(exc)
        return status
    if proc.returncode != 0:
        # launchctl exits 113 ("Could not find service") when the agent is not loaded.
        status.state = "not loaded"
        return status
    props = parse_launchctl_print(proc.stdout)
    status.properties = props
    status.loaded = True
    status.state = props.get("state", "unknown")
    status.active = status.state == "running"
    status.pid = _int_from_text(props.get("pid"))
    runs = _int_from_text(props.get("runs"))
    status.restarts = max(runs - 1, 0) if runs is not None else None
    status.last_exit = _int_from_text(props.get("last exit code"))
    return status


# --- embedded copies of the templates (kept identical to the files by a test) ---------

EMBEDDED_SYSTEMD_TEMPLATE = """\
# agentsrc: per-user service. Written by `agentsrc install`; edits are lost on reinstall
# (put local changes in `systemctl --user edit agentsrc` instead).
[Unit]
Description=agentsrc: record of what coding agents do (transcripts to SQLite)
# Give up after 5 failed starts in 5 minutes instead of restarting forever;
# `systemctl --user reset-failed agentsrc` clears it.
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
# The daemon stays in the foreground and says READY=1 itself once the database is open,
# the socket bound and the first reconcile scan started.
Type=notify
NotifyAccess=main
ExecStart=@EXEC_START@
# SIGHUP re-reads the config file (the daemon answers RELOADING=1, then READY=1).
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=5
# The ingest loop pings every 15 s (half of this); 30 s leaves room for a large batch
# commit or a reconcile scan on a slow disk, and still restarts a hung loop within 30 s.
WatchdogSec=30
TimeoutStartSec=90
# SIGTERM: the daemon commits the batch in hand and exits within 5 s; 15 s before SIGKILL.
TimeoutStopSec=15
Environment=PYTHONUNBUFFERED=1
SyslogIdentifier=agentsrc

# Hardening that works in a user manager. The daemon must read the user's home (the agent
# transcripts), so no ProtectHome=; and options that need a mount or user namespace
# (PrivateTmp=, ProtectSystem=, ProtectKernel*=, ...) make the start fail in a user manager
# where unprivileged user namespaces are off, so none of those. All below are plain process
# attributes or seccomp filters, which an unprivileged user manager can set.
# Files the daemon creates (database, socket, logs) are private to the user.
UMask=0077
NoNewPrivileges=yes
# The daemon speaks only over its Unix socket and to the manager: no network at all.
RestrictAddressFamilies=AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM

[Install]
WantedBy=default.target
"""

EMBEDDED_LAUNCHD_TEMPLATE = """\
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- agentsrc: per-user launch agent. Written by `agentsrc install`; edits are lost on reinstall. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>@LABEL@</string>
	<!-- The daemon stays in the foreground: launchd supervises the process it started. -->
	<key>ProgramArguments</key>
	<array>
		@PROGRAM_ARGUMENTS@
	</array>
	<key>RunAtLoad</key>
	<true/>
	<!-- Restart after a crash or a non-zero exit; a clean exit (uninstall, stop) stays down. -->
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<!-- At most one restart every 10 seconds. -->
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<!-- SIGTERM: the daemon commits the batch in hand and exits within 5 s; 15 s before SIGKILL. -->
	<key>ExitTimeOut</key>
	<integer>15</integer>
	<!-- 63 is 0077: the database, socket and logs are private to the user. -->
	<key>Umask</key>
	<integer>63</integer>
	<key>WorkingDirectory</key>
	<string>@HOME@</string>
	<key>EnvironmentVariables</key>
	<dict>
		<key>PYTHONUNBUFFERED</key>
		<string>1</string>
	</dict>
	<key>StandardOutPath</key>
	<string>@LOG_DIR@/agentsrc.out.log</string>
	<key>StandardErrorPath</key>
	<string>@LOG_DIR@/agentsrc.err.log</string>
</dict>
</plist>
"""
