"""The ``agentsrc`` command: ``run`` starts the daemon; every other command is a
client of its socket. Every query command takes ``--json`` (the stable contract that
scripts rely on, documented in docs/protocol.md)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
import typer

from ..config import Config, load_config
from ..errors import AgentsrcError, DaemonNotRunning, RemoteError
from ..rpc.client import Client
from .output import (
    EXIT_BAD_REQUEST,
    EXIT_FAILED,
    EXIT_NOT_RUNNING,
    emit_json,
    fail,
    print_table,
)
from .output import call as call_daemon
from .output import short as _short

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="A local record of what coding agents (Codex, Claude Code, Muse) do on this machine.",
)

_GLOBAL: dict[str, Any] = {}


@app.callback()
def _main(
    socket: Path | None = typer.Option(None, "--socket", help="Daemon socket path."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Data directory."),
    config: Path | None = typer.Option(None, "--config", help="TOML config file."),
) -> None:
    _GLOBAL.update(socket_path=socket, data_dir=data_dir, config_file=config)


def get_config(**flags: Any) -> Config:
    merged = {k: v for k, v in _GLOBAL.items() if v is not None}
    merged.update({k: v for k, v in flags.items() if v is not None})
    try:
        return load_config(**merged)
    except AgentsrcError as exc:
        fail(str(exc))


def call(method: str, params: dict[str, Any] | None = None) -> Any:
    return call_daemon(get_config(), method, params)


# ---- run ------------------------------------------------------------------------------


@app.command()
def run(
    codex_root: Path | None = typer.Option(None, help="Codex home (default $CODEX_HOME or ~/.codex)."),
    claude_root: Path | None = typer.Option(
        None, help="Claude Code projects dir (default $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects)."
    ),
    muse_root: Path | None = typer.Option(None, help="Muse agents root (default $MUSE_AGENTS_DIR or ~/agents)."),
    log_level: str = typer.Option("info", help="debug, info, warning or error."),
    json_logs: bool | None = typer.Option(None, "--json-logs/--console-logs", help="Log format (default: JSON unless stderr is a TTY)."),
) -> None:
    """Run the daemon in the foreground (what the service manager runs)."""
    from ..daemon import Daemon
    from ..logs import configure

    configure(log_level, json_logs)
    flags = {"codex_root": codex_root, "claude_root": claude_root, "muse_root": muse_root}
    cfg = get_config(**flags)
    overrides = {k: v for k, v in {**_GLOBAL, **flags}.items() if v is not None}
    try:
        code = Daemon(cfg, cli_overrides=overrides, log_level=log_level, json_logs=json_logs).run()
    except AgentsrcError as exc:  # another daemon, a bad config, another user's dir, ...
        fail(str(exc), EXIT_FAILED)
    except PermissionError as exc:
        # The OS refused (say, a data dir whose parent is not writable): one line, as
        # for the errors above, rather than a traceback.
        fail(str(exc), EXIT_FAILED)
    raise typer.Exit(code)


# ---- status ---------------------------------------------------------------------------


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _progress_line(st: dict[str, Any]) -> str:
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
    wait: bool = typer.Option(False, "--wait", help="Show a progress bar until the daemon is live."),
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
    if st["state"] == "catching_up":
        typer.echo(f"progress:  {_progress_line(st)}")
    typer.echo(f"files:     {st['files']} ({st.get('files_gone', 0)} gone)")
    typer.echo(f"sessions:  {st['sessions']}")
    typer.echo(f"events:    {st['events']}")
    typer.echo(f"pending:   {_fmt_bytes(st['pending_bytes'])}")
    for agent, root in st.get("roots", {}).items():
        typer.echo(f"root:      {agent:<12} {root['path']} ({root['watch']})")
    scan = st.get("scan", {})
    typer.echo(f"scanning:  {'on' if scan.get('enabled') else 'OFF: content is not scanned for secrets'}")
    if st.get("skipped"):
        typer.echo("skipped:   " + ", ".join(f"{k}={v}" for k, v in sorted(st["skipped"].items())))
    for d in st.get("drift", [])[:10]:
        typer.echo(f"drift:     {d['adapter']} {d['version']} {d['record_type']} x{d['count']}")


# ---- sessions / show / events / tail --------------------------------------------------------


@app.command()
def sessions(
    agent: str | None = typer.Option(None, help="codex, claude-code or muse."),
    limit: int = typer.Option(50, help="At most this many, newest first."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Sessions, newest first."""
    params: dict[str, Any] = {"limit": limit}
    if agent:
        params["agent"] = agent
    result = call("sessions.list", params)["sessions"]
    if json:
        emit_json(result)
        return
    print_table(
        [
            [
                s["id"][:48],
                _short(s.get("last_event_at"), 19),
                s.get("prompts"),
                s.get("tool_calls"),
                _short(s.get("model"), 20),
                _short(s.get("cwd"), 40),
                _short(s.get("title"), 40),
            ]
            for s in result
        ],
        ["SESSION", "LAST EVENT", "PROMPTS", "TOOLS", "MODEL", "CWD", "TITLE"],
    )


@app.command()
def show(session: str, json: bool = typer.Option(False, "--json")) -> None:
    """One session: facts, counts, turns, sources."""
    s = call("sessions.get", {"id": session})["session"]
    if json:
        emit_json(s)
        return
    for key in ("id", "agent", "native_id", "cwd", "project_root", "model", "version",
                "started_at", "last_event_at", "title", "prompts", "messages", "tool_calls",
                "subagents", "compactions", "errors", "source_state"):
        typer.echo(f"{key + ':':<15}{_short(s.get(key), 100)}")
    typer.echo(f"{'tokens:':<15}" + ", ".join(f"{k}={v}" for k, v in s["tokens"].items()))
    typer.echo(f"{'turns:':<15}{len(s['turns'])}")
    for src in s["sources"]:
        typer.echo(f"{'source:':<15}{src['path']}{' (gone)' if src['gone'] else ''}")


def _event_line(ev: dict[str, Any]) -> str:
    detail = ev.get("path") or ev.get("command") or ev.get("text") or ev.get("type") or ""
    who = f" [{ev['subagent_id']}]" if ev.get("subagent_id") else ""
    return (
        f"{ev['id']:>8}  {_short(ev.get('ts'), 24):<24}  {ev['kind']:<12}  "
        f"{_short(ev.get('tool'), 14):<14}{who}  {_short(detail, 80)}"
    )


@app.command()
def events(
    session: str | None = typer.Option(None, "--session", help="Session id (or unique prefix)."),
    kind: list[str] = typer.Option([], "--kind", help="Only these kinds (repeatable)."),
    since_id: int = typer.Option(0, "--since-id", help="Only events with a larger id."),
    limit: int = typer.Option(100, "--limit"),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Events in id order, paginated with --since-id."""
    params: dict[str, Any] = {"since_id": since_id, "limit": limit}
    if session:
        params["session_id"] = session
    if kind:
        params["kinds"] = kind
    result = call("events.list", params)
    if json:
        emit_json(result["events"])
        return
    for ev in result["events"]:
        typer.echo(_event_line(ev))
    if result.get("next_since_id"):
        typer.echo(f"(more: --since-id {result['next_since_id']})", err=True)


@app.command()
def tail(
    count: int = typer.Option(0, "--count", help="Stop after this many events (0: follow forever)."),
    since_id: int | None = typer.Option(None, "--since-id", help="Replay from this id first."),
    session: str | None = typer.Option(None, "--session"),
    kind: list[str] = typer.Option([], "--kind"),
    json: bool = typer.Option(False, "--json", help="NDJSON, one event per line."),
) -> None:
    """Follow live events as they are ingested."""
    cfg = get_config()
    params: dict[str, Any] = {}
    if since_id is not None:
        params["since_id"] = since_id
    if session:
        params["session_id"] = session
    if kind:
        params["kinds"] = kind
    seen = 0
    try:
        with Client(cfg.socket_path, timeout=None) as client:
            for msg in client.subscribe(params):
                if msg.get("method") == "dropped":
                    fail("dropped by the daemon: too slow; resume with --since-id "
                         f"{msg['params'].get('last_id')}", 4)
                if msg.get("method") != "event":
                    continue
                ev = msg["params"]
                if json:
                    sys.stdout.write(orjson.dumps(ev).decode() + "\n")
                else:
                    typer.echo(_event_line(ev))
                sys.stdout.flush()
                seen += 1
                if count and seen >= count:
                    return
    except DaemonNotRunning as exc:
        fail(str(exc), EXIT_NOT_RUNNING)
    except RemoteError as exc:
        fail(exc.message, EXIT_BAD_REQUEST)
    except KeyboardInterrupt:
        return


def _register_extensions() -> None:
    """Commands from the other feature modules (file queries, findings, service)."""
    from importlib import import_module

    for name in ("agentsrc_daemon.cli.queries", "agentsrc_daemon.cli.service"):
        try:
            module = import_module(name)
        except ImportError:
            continue
        module.register(app, get_config)


_register_extensions()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
