"""``agentsrc run`` (the daemon in the foreground) and ``agentsrc status`` (what it is
doing)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import AgentsrcError
from .output import EXIT_FAILED, emit_json, fail
from .render import status_lines, wait_live
from .typer_app import app, call, get_config, given_options


@app.command()
def run(
    codex_root: Path | None = typer.Option(
        None, help="Codex home (default $CODEX_HOME or ~/.codex)."
    ),
    claude_root: Path | None = typer.Option(
        None,
        help="Claude Code projects dir (default $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects).",
    ),
    muse_root: Path | None = typer.Option(
        None, help="Muse agents root (default $MUSE_AGENTS_DIR or ~/agents)."
    ),
    gemini_root: Path | None = typer.Option(
        None, help="Gemini CLI home (default $GEMINI_CLI_HOME/.gemini or ~/.gemini)."
    ),
    copilot_root: Path | None = typer.Option(
        None,
        help="GitHub Copilot CLI home (default $COPILOT_HOME, $XDG_CONFIG_HOME/.copilot or ~/.copilot).",
    ),
    opencode_root: Path | None = typer.Option(
        None, help="OpenCode data dir (default $XDG_DATA_HOME/opencode or ~/.local/share/opencode)."
    ),
    log_level: str = typer.Option("info", help="debug, info, warning or error."),
    json_logs: bool | None = typer.Option(
        None,
        "--json-logs/--console-logs",
        help="Log format (default: JSON unless stderr is a TTY).",
    ),
) -> None:
    """Run the daemon in the foreground (what the service manager runs)."""
    # Here, not at the top: the daemon, the store and the scanner are heavy, and no other
    # command needs them.
    from ..daemon import Daemon
    from ..logs import configure

    configure(log_level, json_logs)
    flags = {
        "codex_root": codex_root,
        "claude_root": claude_root,
        "muse_root": muse_root,
        "gemini_root": gemini_root,
        "copilot_root": copilot_root,
        "opencode_root": opencode_root,
    }
    cfg = get_config(**flags)
    # What SIGHUP re-reads the configuration with: the same flags, over a new file.
    overrides = given_options(**flags)
    try:
        code = Daemon(cfg, cli_overrides=overrides, log_level=log_level, json_logs=json_logs).run()
    except AgentsrcError as exc:  # another daemon, a bad config, another user's dir, ...
        fail(str(exc), EXIT_FAILED)
    except PermissionError as exc:
        # The OS refused (say, a data dir whose parent is not writable): one line, as
        # for the errors above, rather than a traceback.
        fail(str(exc), EXIT_FAILED)
    raise typer.Exit(code)


@app.command()
def status(
    json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    wait: bool = typer.Option(
        False, "--wait", help="Show a progress bar until the daemon is live."
    ),
) -> None:
    """What the daemon is doing: catching up or live, files, sessions, events."""
    if wait:
        wait_live(call)
    st = call("status")
    if json:
        emit_json(st)
        return
    for line in status_lines(st):
        typer.echo(line)
