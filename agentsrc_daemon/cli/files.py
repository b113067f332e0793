"""Commands over what the agents touched: ``reads`` and ``edits`` (who read or changed a
file), ``commands`` (what they ran) and ``files`` (everything one session touched)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .output import emit_json, print_table, short
from .typer_app import app, call

# The options of `reads` and `edits`, which differ only in the method they call.
FilePath = Annotated[
    str, typer.Argument(help="Absolute path, project-relative path, or glob.")
]
Session = Annotated[str | None, typer.Option("--session")]
Agent = Annotated[str | None, typer.Option("--agent")]
Project = Annotated[str | None, typer.Option("--project", help="Project root.")]
Since = Annotated[str | None, typer.Option("--since", help="7d, 12h, 30m or ISO time.")]
Limit = Annotated[int, typer.Option("--limit")]
AsJson = Annotated[bool, typer.Option("--json")]


def _file_events(
    method: str,
    path: str,
    session: str | None,
    agent: str | None,
    project: str | None,
    since: str | None,
    limit: int,
    json: bool,
) -> None:
    params: dict[str, Any] = {"path": path, "limit": limit}
    for key, value in (("session_id", session), ("agent", agent), ("project", project),
                       ("since", since)):
        if value:
            params[key] = value
    events = call(method, params)["events"]
    if json:
        emit_json(events)
        return
    print_table(
        [
            [
                short(e.get("ts"), 19),
                e.get("op"),
                "ext" if e.get("external") else "",
                short(e["session_id"], 46),
                short(e.get("tool"), 12),
                e.get("path"),
            ]
            for e in events
        ],
        ["TS", "OP", "", "SESSION", "TOOL", "PATH"],
    )


@app.command()
def reads(
    path: FilePath,
    session: Session = None,
    agent: Agent = None,
    project: Project = None,
    since: Since = None,
    limit: Limit = 100,
    json: AsJson = False,
) -> None:
    """Which sessions read this file."""
    _file_events("files.reads", path, session, agent, project, since, limit, json)


@app.command()
def edits(
    path: FilePath,
    session: Session = None,
    agent: Agent = None,
    project: Project = None,
    since: Since = None,
    limit: Limit = 100,
    json: AsJson = False,
) -> None:
    """Which sessions changed this file."""
    _file_events("files.edits", path, session, agent, project, since, limit, json)


@app.command()
def commands(
    session: str | None = typer.Option(None, "--session"),
    project: str | None = typer.Option(None, "--project"),
    failed: bool = typer.Option(False, "--failed", help="Only non-zero exits and interrupts."),
    since: str | None = typer.Option(None, "--since"),
    limit: int = typer.Option(100, "--limit"),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Commands the agents ran: command line, cwd, exit code, duration."""
    params: dict[str, Any] = {"limit": limit}
    if session:
        params["session_id"] = session
    if project:
        params["project"] = project
    if failed:
        params["failed"] = True
    if since:
        params["since"] = since
    events = call("commands.list", params)["events"]
    if json:
        emit_json(events)
        return
    print_table(
        [
            [
                short(e.get("ts"), 19),
                "INT" if e.get("interrupted") else e.get("exit_code"),
                e.get("duration_ms"),
                short(e.get("cwd"), 30),
                short(e.get("command"), 90),
            ]
            for e in events
        ],
        ["TS", "EXIT", "MS", "CWD", "COMMAND"],
    )


@app.command()
def files(
    session: str = typer.Argument(..., help="Session id (or unique prefix)."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Everything one session read and changed, with counts."""
    result = call("sessions.files", {"id": session})
    if json:
        emit_json(result)
        return
    print_table(
        [
            [f["reads"], f["edits"], ",".join(sorted(f["ops"])), "ext" if f["external"] else "",
             f["rel_path"] or f["path"]]
            for f in result["files"]
        ],
        ["READS", "EDITS", "OPS", "", "PATH"],
    )
    typer.echo(
        f"{result['read_files']} files read ({result['external_reads']} outside the project), "
        f"{result['edited_files']} changed, {result['commands']} commands "
        f"({result['failed_commands']} failed)"
    )
