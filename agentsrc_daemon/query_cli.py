"""CLI commands over files, commands and findings: ``reads``, ``edits``, ``commands``,
``files``, ``findings`` and ``report``. Each is a client of one socket method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from .cli_output import call, emit_json, print_table, short
from .config import Config


def register(app: typer.Typer, get_config: Callable[[], Config]) -> None:
    def _file_query(method: str, path: str, session: str | None, agent: str | None,
                    project: str | None, since: str | None, limit: int) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"path": path, "limit": limit}
        for key, value in (("session_id", session), ("agent", agent), ("project", project),
                           ("since", since)):
            if value:
                params[key] = value
        return call(get_config(), method, params)["events"]  # type: ignore[no-any-return]

    def _print_file_events(events: list[dict[str, Any]]) -> None:
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
        path: str = typer.Argument(..., help="Absolute path, project-relative path, or glob."),
        session: str | None = typer.Option(None, "--session"),
        agent: str | None = typer.Option(None, "--agent"),
        project: str | None = typer.Option(None, "--project", help="Project root."),
        since: str | None = typer.Option(None, "--since", help="7d, 12h, 30m or ISO time."),
        limit: int = typer.Option(100, "--limit"),
        json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Which sessions read this file."""
        events = _file_query("files.reads", path, session, agent, project, since, limit)
        emit_json(events) if json else _print_file_events(events)

    @app.command()
    def edits(
        path: str = typer.Argument(..., help="Absolute path, project-relative path, or glob."),
        session: str | None = typer.Option(None, "--session"),
        agent: str | None = typer.Option(None, "--agent"),
        project: str | None = typer.Option(None, "--project", help="Project root."),
        since: str | None = typer.Option(None, "--since", help="7d, 12h, 30m or ISO time."),
        limit: int = typer.Option(100, "--limit"),
        json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Which sessions changed this file."""
        events = _file_query("files.edits", path, session, agent, project, since, limit)
        emit_json(events) if json else _print_file_events(events)

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
        events = call(get_config(), "commands.list", params)["events"]
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
        result = call(get_config(), "sessions.files", {"id": session})
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
