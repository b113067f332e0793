"""CLI commands over files, commands and findings: ``reads``, ``edits``, ``commands``,
``files``, ``findings`` and ``report``. Each is a client of one socket method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from ..config import Config
from .output import call, emit_json, print_table, short


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

    def file_command(method: str, name: str, doc: str) -> None:
        def command(
            path: str = typer.Argument(..., help="Absolute path, project-relative path, or glob."),
            session: str | None = typer.Option(None, "--session"),
            agent: str | None = typer.Option(None, "--agent"),
            project: str | None = typer.Option(None, "--project", help="Project root."),
            since: str | None = typer.Option(None, "--since", help="7d, 12h, 30m or ISO time."),
            limit: int = typer.Option(100, "--limit"),
            json: bool = typer.Option(False, "--json"),
        ) -> None:
            events = _file_query(method, path, session, agent, project, since, limit)
            emit_json(events) if json else _print_file_events(events)

        command.__doc__ = doc
        app.command(name=name)(command)

    file_command("files.reads", "reads", "Which sessions read this file.")
    file_command("files.edits", "edits", "Which sessions changed this file.")

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

    @app.command()
    def findings(
        since: str | None = typer.Option(None, "--since", help="7d, 12h, 30m or ISO time."),
        session: str | None = typer.Option(None, "--session"),
        path: str | None = typer.Option(None, "--path", help="Absolute, relative or glob."),
        type_: str | None = typer.Option(None, "--type", help="detect-secrets type name."),
        project: str | None = typer.Option(None, "--project"),
        limit: int = typer.Option(1000, "--limit"),
        json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Secrets that reached a model: where, which kind, never the value."""
        params: dict[str, Any] = {"limit": limit}
        for key, value in (("since", since), ("session_id", session), ("path", path),
                           ("type", type_), ("project", project)):
            if value:
                params[key] = value
        rows = call(get_config(), "findings.list", params)["findings"]
        if json:
            emit_json(rows)
            return
        print_table(
            [
                [short(f["ts"], 19), f["type"], f["line"], short(f["session_id"], 46),
                 f.get("tool"), f["hash"][:12], f.get("path") or f"({f['label']})"]
                for f in rows
            ],
            ["TS", "TYPE", "LINE", "SESSION", "TOOL", "HASH", "FILE"],
        )

    @app.command()
    def report(
        since: str | None = typer.Option(None, "--since", help="7d, 12h, 30m or ISO time."),
        md: bool = typer.Option(False, "--md", help="A Markdown DLP report."),
        json: bool = typer.Option(False, "--json"),
    ) -> None:
        """A data-loss-prevention report: what kinds of secrets reached which sessions."""
        params: dict[str, Any] = {"since": since} if since else {}
        r = call(get_config(), "findings.report", params)
        if json:
            emit_json(r)
            return
        typer.echo(render_report(r, markdown=md))


def render_report(r: dict[str, Any], *, markdown: bool) -> str:
    """The report as Markdown (or plain text, which is the same minus the markup)."""
    h2 = "## " if markdown else ""
    lines = [
        f"{'# ' if markdown else ''}agentsrc secrets report",
        "",
        f"{r['findings']} findings; values are never stored (each is a keyed hash).",
        "",
        f"{h2}By type",
        "",
    ]
    rows = [[t, v["findings"], v["distinct_values"], v["sessions"]] for t, v in r["by_type"].items()]
    lines += _table(["type", "findings", "distinct values", "sessions"], rows, markdown)
    lines += ["", f"{h2}By session", ""]
    lines += _table(
        ["session", "findings", "types"],
        [[s["session_id"], s["findings"], ", ".join(s["types"])] for s in r["by_session"]],
        markdown,
    )
    lines += ["", f"{h2}By project", ""]
    lines += _table(["project", "findings"], [[p, n] for p, n in r["by_project"].items()], markdown)
    lines += ["", f"{h2}Sensitive files read", ""]
    lines += _table(
        ["path", "reads", "sessions", "last read"],
        [[s["path"], s["reads"], s["sessions"], s["last_ts"]] for s in r["sensitive_reads"]],
        markdown,
    )
    lines += ["", f"{h2}Reads outside the project that carried a secret", ""]
    lines += _table(
        ["path", "session", "findings", "types"],
        [[e["path"], e["session_id"], e["findings"], ", ".join(e["types"])]
         for e in r["external_reads_with_secrets"]],
        markdown,
    )
    return "\n".join(lines)


def _table(headers: list[str], rows: list[list[Any]], markdown: bool) -> list[str]:
    if not rows:
        return ["(none)"]
    cells = [["" if c is None else str(c) for c in row] for row in rows]
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        return out
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return out
