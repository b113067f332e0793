"""The service commands of the CLI: install, uninstall, service status, doctor.

Exit codes: 0 done / all well; 1 a step or a check failed, or the configuration is
unusable; 3 (`service status`) the service or the daemon is not running, as
`systemctl status` does.

The service and doctor code (and apsw, which doctor opens the database with) are
imported inside the commands: the other commands do not need them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import orjson
import typer

from ..errors import ServiceError
from .output import EXIT_FAILED, EXIT_NOT_RUNNING, emit_json
from .typer_app import app, get_config

if TYPE_CHECKING:
    from ..config import Config
    from ..system.service import Outcome, ServiceStatus

DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be written and run; change nothing.")
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]

service_app = typer.Typer(
    help="The per-user service (systemd user unit or launchd agent).",
    no_args_is_help=True,
)


def _failed(command: str, exc: ServiceError) -> NoReturn:
    typer.echo(f"agentsrc {command}: {exc}", err=True)
    raise typer.Exit(EXIT_FAILED)


def _print_outcome(outcome: Outcome) -> None:
    if outcome.dry_run:
        typer.echo(outcome.plan.describe(with_content=True))
        typer.echo("(dry run: nothing was written and nothing was run)")
        return
    for line in outcome.done:
        typer.echo(f"done: {line}")
    for note in outcome.notes:
        typer.echo(f"note: {note}")


def _service_lines(status: ServiceStatus) -> list[str]:
    where = "installed" if status.installed else "not installed"
    lines = [f"service ({status.manager}): {status.state}"]
    lines.append(f"  file: {status.service_file} ({where})")
    if status.pid:
        lines.append(f"  pid: {status.pid}")
    if status.restarts is not None:
        lines.append(f"  restarts: {status.restarts}")
    if status.last_exit:
        lines.append(f"  last exit status: {status.last_exit}")
    if status.status_text:
        lines.append(f"  daemon says: {status.status_text}")
    if status.error:
        lines.append(f"  error: {status.error}")
    return lines


def _daemon_lines(answer: Any, error: str | None, cfg: Config) -> list[str]:
    if error is not None:
        return [f"daemon: no answer on {cfg.socket_path}: {error}"]
    lines = [f"daemon: answered on {cfg.socket_path}"]
    if isinstance(answer, Mapping):
        for key, value in answer.items():
            shown = value if isinstance(value, str | int | float | bool) else orjson.dumps(value)
            if isinstance(shown, bytes):
                shown = shown.decode()
            lines.append(f"  {key}: {shown}")
    return lines


def _ask_daemon(cfg: Config) -> tuple[Any, str | None]:
    from ..system import doctor

    try:
        return doctor.ask_daemon_status(cfg), None
    except Exception as exc:  # reported to the user, not raised: status must always print
        return None, f"{type(exc).__name__}: {exc}"


@app.command("install")
def install_command(
    dry_run: DryRun = False,
    web: bool = typer.Option(
        False, "--web", help="Also install the web page (agentsrc web) as a second service."
    ),
    port: int = typer.Option(8787, "--port", min=1, max=65535, help="The web page's port."),
) -> None:
    """Install and start agentsrc as a per-user service that starts at login."""
    from ..system.service import ServiceTarget, install, plan_install, settings_drift

    cfg = get_config()
    try:
        target = ServiceTarget.current(cfg)
        plan = plan_install(target)
        if web:
            from ..system.web_service import add_web_install

            add_web_install(plan, port)
        plan.notes.extend(settings_drift(cfg, target))
        outcome = install(plan, dry_run=dry_run)
    except ServiceError as exc:
        _failed("install", exc)
    _print_outcome(outcome)


@app.command("uninstall")
def uninstall_command(dry_run: DryRun = False) -> None:
    """Stop and remove the service (and the web page's). The database is kept."""
    from ..system.service import ServiceTarget, plan_uninstall, uninstall
    from ..system.web_service import add_web_uninstall

    cfg = get_config()
    try:
        plan = add_web_uninstall(plan_uninstall(ServiceTarget.current(cfg, need_executable=False)))
        outcome = uninstall(plan, dry_run=dry_run)
    except ServiceError as exc:
        _failed("uninstall", exc)
    _print_outcome(outcome)


@service_app.command("status")
def status_command(as_json: AsJson = False) -> None:
    """The service manager's view and the daemon's own status, together."""
    from ..system.service import ServiceTarget, service_status

    cfg = get_config()
    try:
        status = service_status(ServiceTarget.current(cfg, need_executable=False))
    except ServiceError as exc:
        _failed("service status", exc)
    answer, error = _ask_daemon(cfg)
    if as_json:
        emit_json({"service": status.to_json(), "daemon": answer, "daemon_error": error})
    else:
        typer.echo("\n".join(_service_lines(status) + _daemon_lines(answer, error, cfg)))
    if not (status.active and error is None):
        raise typer.Exit(EXIT_NOT_RUNNING)


@app.command("doctor")
def doctor_command(as_json: AsJson = False) -> None:
    """Check roots, permissions, inotify limits, the service and the database."""
    from ..system import doctor

    cfg = get_config()
    checks = doctor.run_checks(cfg)
    if as_json:
        emit_json([c.to_json() for c in checks])
    else:
        typer.echo(doctor.format_report(checks))
    code = doctor.exit_code(checks)
    if code:
        raise typer.Exit(code)


app.add_typer(service_app, name="service")
