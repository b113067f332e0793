"""``agentsrc run`` (the daemon in the foreground) and ``agentsrc status`` (what it is
doing)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from .output import emit_json
from .render import status_lines, wait_live, web_line
from .typer_app import app, call, get_config, given_options


class LogFormat(StrEnum):
    json = "json"
    console = "console"


@app.command(help="Run the daemon in the foreground (what the service manager runs).")
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
    qwen_root: Path | None = typer.Option(
        None, help="Qwen Code home (default $QWEN_RUNTIME_DIR or ~/.qwen)."
    ),
    amp_root: Path | None = typer.Option(
        None, help="Amp data dir (default $XDG_DATA_HOME/amp or ~/.local/share/amp)."
    ),
    pi_root: Path | None = typer.Option(
        None, help="Pi agent dir (default $PI_CODING_AGENT_DIR or ~/.pi/agent)."
    ),
    cursor_root: Path | None = typer.Option(None, help="Cursor home (default ~/.cursor)."),
    cline_root: Path | None = typer.Option(
        None, help="Cline data dir (default $CLINE_DATA_DIR, $CLINE_DIR/data or ~/.cline/data)."
    ),
    continue_root: Path | None = typer.Option(
        None, help="Continue home (default $CONTINUE_GLOBAL_DIR or ~/.continue)."
    ),
    editors_root: str | None = typer.Option(
        None,
        help="Editor user dirs whose Cline, Roo Code and Kilo Code task folders are read,"
        " separated by ':' (default: VS Code, Insiders, VSCodium, Cursor and Windsurf's).",
    ),
    projects_root: list[str] | None = typer.Option(
        None,
        "--projects-root",
        help="A folder of projects, searched 3 levels deep for Aider's and Crush's files "
        "(repeatable, or several separated by ':'; default $AGENTSRC_PROJECTS, else "
        "[roots] projects).",
    ),
    log_level: str = typer.Option("info", help="debug, info, warning or error."),
    log_format: LogFormat | None = typer.Option(
        None, "--log-format", help="json or console (default: console on a terminal, else JSON).",
    ),
    json_logs: bool | None = typer.Option(
        None,
        "--json-logs/--console-logs",
        help="Short for --log-format json / console.",
    ),
) -> None:
    """The daemon in the foreground (typer's help is the decorator's). Long on purpose:
    typer reads a command's options from its signature, one per agent's root."""
    # `agentsrc run` usually starts in launch.py without typer (cli/__init__.py); this
    # command is what typer parses otherwise, and ends the same way.
    from .launch import RunArgs, start

    flags = {
        "codex_root": codex_root,
        "claude_root": claude_root,
        "muse_root": muse_root,
        "gemini_root": gemini_root,
        "copilot_root": copilot_root,
        "opencode_root": opencode_root,
        "qwen_root": qwen_root,
        "amp_root": amp_root,
        "pi_root": pi_root,
        "cursor_root": cursor_root,
        "cline_root": cline_root,
        "continue_root": continue_root,
        "editors_root": editors_root,
        "projects": list(projects_root) if projects_root else None,
    }
    if log_format is not None:
        json_logs = log_format is LogFormat.json
    code = start(RunArgs(given_options(**flags), log_level, json_logs))
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
    web = web_line(get_config().socket_path)
    if web:
        typer.echo(web)
