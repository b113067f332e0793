"""``agentsrc run`` (the daemon in the foreground) and ``agentsrc status`` (what it is
doing)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import typer

from ..errors import AgentsrcError
from .app import app, call, get_config, given_options
from .output import EXIT_FAILED, emit_json, fail


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


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _progress_line(st: dict[str, Any]) -> str:
    if st["state"] == "migrating":  # a schema migration that rewrites every event
        m = st.get("migration", {})
        return (
            f"migrating the store ({m.get('name')}): {m.get('fraction', 0) * 100:5.1f}%  "
            f"{m.get('done', 0)}/{m.get('total', 0)} events"
        )
    p = st.get("progress", {})
    total = max(1, p.get("bytes_total", 0))
    done = min(p.get("bytes_done", 0), total)
    frac = done / total
    bar = "#" * int(frac * 30) + "-" * (30 - int(frac * 30))
    return (
        f"[{bar}] {frac * 100:5.1f}%  {p.get('files_done', 0)}/{p.get('files_total', 0)} files  "
        f"{_fmt_bytes(done)}/{_fmt_bytes(total)}  {_fmt_bytes(p.get('rate_bytes_per_s', 0))}/s"
        f"  ETA {p.get('eta_s', 0):.0f}s"
    )


@app.command()
def status(
    json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    wait: bool = typer.Option(
        False, "--wait", help="Show a progress bar until the daemon is live."
    ),
) -> None:
    """What the daemon is doing: catching up or live, files, sessions, events."""
    if wait:
        while True:
            st = call("status")
            if st["state"] == "live":
                break
            if sys.stderr.isatty():
                sys.stderr.write("\r" + _progress_line(st))
                sys.stderr.flush()
            time.sleep(0.5)
        if sys.stderr.isatty():
            sys.stderr.write("\n")
    st = call("status")
    if json:
        emit_json(st)
        return
    typer.echo(f"state:     {st['state']}")
    if st["state"] == "migrating":
        typer.echo(f"progress:  {_progress_line(st)}")
        return
    if st["state"] == "catching_up":
        typer.echo(f"progress:  {_progress_line(st)}")
    typer.echo(f"files:     {st['files']} ({st.get('files_gone', 0)} gone)")
    typer.echo(f"sessions:  {st['sessions']}")
    typer.echo(f"events:    {st['events']}")
    typer.echo(f"pending:   {_fmt_bytes(st['pending_bytes'])}")
    for agent, root in st.get("roots", {}).items():
        typer.echo(f"root:      {agent:<12} {root['path']} ({root['watch']})")
    scan = st.get("scan", {})
    typer.echo(
        f"scanning:  {'on' if scan.get('enabled') else 'OFF: content is not scanned for secrets'}"
    )
    sink = st.get("sink", {})
    if sink.get("enabled"):
        typer.echo(
            f"sink:      {sink['state']} -> {sink['url']} ({sink['database']}), "
            f"lag {sink['lag_events']} events / {sink['lag_seconds']:.1f} s"
            + (f", last error: {sink['last_error']}" if sink.get("last_error") else "")
        )
    if st.get("skipped"):
        typer.echo("skipped:   " + ", ".join(f"{k}={v}" for k, v in sorted(st["skipped"].items())))
    for d in st.get("drift", [])[:10]:
        typer.echo(f"drift:     {d['adapter']} {d['version']} {d['record_type']} x{d['count']}")
