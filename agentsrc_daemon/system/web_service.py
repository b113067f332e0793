"""``agentsrc install --web``: the web page as a second per-user service beside the
daemon's (a systemd user unit, a launchd agent), built from the same pieces as
service.py's (the target, the steps, the plans' execution). It runs ``agentsrc web
--service`` on a fixed port (8787 by default, so a bookmark keeps working): its log gets
the URL without the token, ``agentsrc web --url`` prints the link with it.

The page's service does not require the daemon's: it starts after it when both start,
and while the daemon is down it says so on every page. Its hardening is the daemon's
less one line: it listens on TCP (loopback), so IP address families are allowed."""

from __future__ import annotations

from pathlib import Path

from ..config import Config
from .check import Check
from .service import (
    MakeDir,
    Plan,
    RemoveFile,
    RunCommand,
    ServiceTarget,
    Step,
    WriteFile,
    _fill,
    _systemctl,
    systemd_quote,
    xml_escape,
)

WEB_UNIT_NAME = "agentsrc-web.service"
WEB_LAUNCHD_LABEL = "dev.agentsrc.web"
DEFAULT_PORT = 8787

WEB_UNIT = """\
# agentsrc web: the local web page over the record, per user. Written by
# `agentsrc install --web`; edits are lost on reinstall (`systemctl --user edit
# agentsrc-web` keeps local changes).
[Unit]
Description=agentsrc web: the local page over the record of coding agents
# Started after the daemon when both start; not bound to it: while the daemon is down
# the page says so.
After=agentsrc.service
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=simple
ExecStart=@EXEC_START@
Restart=on-failure
RestartSec=5
TimeoutStopSec=10
Environment=PYTHONUNBUFFERED=1
SyslogIdentifier=agentsrc-web
UMask=0077
NoNewPrivileges=yes
# The daemon's socket, and TCP on the loopback for the browser.
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
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

WEB_PLIST = """\
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- agentsrc web: the local page, per user. Written by `agentsrc install` (its web option). -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>@LABEL@</string>
	<key>ProgramArguments</key>
	<array>
		@PROGRAM_ARGUMENTS@
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<key>Umask</key>
	<integer>63</integer>
	<key>WorkingDirectory</key>
	<string>@HOME@</string>
	<key>StandardOutPath</key>
	<string>@LOG_DIR@/agentsrc-web.out.log</string>
	<key>StandardErrorPath</key>
	<string>@LOG_DIR@/agentsrc-web.err.log</string>
</dict>
</plist>
"""


def web_arguments(target: ServiceTarget, port: int) -> list[str]:
    """The daemon's program arguments with ``web --service --port N`` for ``run``."""
    args = target.program_arguments[:-1]
    return [*args, "web", "--service", "--port", str(port)]


def web_unit_path(target: ServiceTarget) -> Path:
    return target.config_home / "systemd" / "user" / WEB_UNIT_NAME


def web_plist_path(target: ServiceTarget) -> Path:
    return target.home / "Library" / "LaunchAgents" / f"{WEB_LAUNCHD_LABEL}.plist"


def web_service_file(target: ServiceTarget) -> Path:
    return web_unit_path(target) if target.platform == "linux" else web_plist_path(target)


def render_web_unit(program_arguments: list[str]) -> str:
    return _fill(WEB_UNIT, {"EXEC_START": " ".join(systemd_quote(a) for a in program_arguments)})


def render_web_plist(program_arguments: list[str], home: Path, log_dir: Path) -> str:
    arguments = "\n\t\t".join(f"<string>{xml_escape(a)}</string>" for a in program_arguments)
    return _fill(WEB_PLIST, {
        "LABEL": xml_escape(WEB_LAUNCHD_LABEL), "PROGRAM_ARGUMENTS": arguments,
        "HOME": xml_escape(str(home)), "LOG_DIR": xml_escape(str(log_dir)),
    })


def add_web_install(plan: Plan, port: int = DEFAULT_PORT) -> Plan:
    """The daemon's install plan with the page's service after it."""
    target = plan.target
    args = web_arguments(target, port)
    if target.platform == "linux":
        plan.steps += [
            WriteFile(web_unit_path(target), render_web_unit(args), 0o644),
            RunCommand(_systemctl("daemon-reload"), "load the page's unit"),
            RunCommand(_systemctl("reset-failed", WEB_UNIT_NAME),
                       "forget an earlier start-limit failure", may_fail=True),
            RunCommand(_systemctl("try-restart", WEB_UNIT_NAME),
                       "a reinstall restarts a running page on the new code"),
            RunCommand(_systemctl("enable", "--now", WEB_UNIT_NAME),
                       "start the page now and at login"),
        ]
        plan.notes.append("web page logs: journalctl --user -u agentsrc-web")
    else:
        service = f"gui/{target.uid}/{WEB_LAUNCHD_LABEL}"
        plan.steps += [
            MakeDir(target.log_dir, 0o700),
            WriteFile(web_plist_path(target),
                      render_web_plist(args, target.home, target.log_dir), 0o644),
            RunCommand(("launchctl", "bootout", service), "unload an earlier install",
                       may_fail=True),
            RunCommand(("launchctl", "enable", service), "undo an earlier disable"),
            RunCommand(("launchctl", "bootstrap", target.launchd_domain,
                        str(web_plist_path(target))), "load and start the page", attempts=3),
        ]
    plan.notes.append(f"web page: http://127.0.0.1:{port}/ (open it signed in: "
                      "agentsrc web --url --open)")
    return plan


def add_web_uninstall(plan: Plan) -> Plan:
    """The daemon's uninstall plan with the page's service removed first, when installed."""
    target = plan.target
    if not web_service_file(target).exists():
        return plan
    steps: list[Step]
    if target.platform == "linux":
        steps = [
            RunCommand(_systemctl("disable", "--now", WEB_UNIT_NAME),
                       "stop the page and drop its login start", may_fail=True),
            RemoveFile(web_unit_path(target)),
        ]
    else:
        steps = [
            RunCommand(("launchctl", "bootout", f"gui/{target.uid}/{WEB_LAUNCHD_LABEL}"),
                       "stop the page and unload it", may_fail=True),
            RemoveFile(web_plist_path(target)),
        ]
    plan.steps[:0] = steps
    return plan


def check_web(cfg: Config, target: ServiceTarget | None) -> Check:
    """doctor's line about the page: running (where), installed as a service, or neither
    (never a failure: the page is optional)."""
    from ..web.url import read_url, without_token

    info = read_url(cfg.socket_path)
    installed = target is not None and web_service_file(target).exists()
    service = " (installed as a service)" if installed else ""
    if info is not None:
        return Check("web page", True,
                     f"serving {without_token(str(info.get('url')))}{service}; "
                     "agentsrc web --url prints the link with its token")
    if installed:
        return Check("web page", True, "installed as a service but not serving",
                     "systemctl --user status agentsrc-web (macOS: its log)", warning=True)
    return Check("web page", True, "not running (optional): agentsrc web, or "
                 "agentsrc install --web for a service")
