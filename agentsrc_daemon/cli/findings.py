"""Commands over secret findings: ``findings`` (each one: where, which kind, never the
value) and ``report`` (a data-loss-prevention summary, also as Markdown)."""

from __future__ import annotations

from typing import Any

import typer

from .output import emit_json, print_table, short
from .typer_app import app, call


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
    rows = call("findings.list", params)["findings"]
    if json:
        emit_json(rows)
        return
    print_table(
        [
            [short(f["ts"], 19), f["type"], f["line"], short(f["session_id"], 46),
             f.get("tool"), f["hash"][:12], f.get("path") or " | ".join(f.get("paths") or []) or f"({f['label']})"]
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
    r = call("findings.report", params)
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
        ["path", "reads", "sessions", "last read", "findings"],
        [[s["path"], s["reads"], s["sessions"], s["last_ts"], s.get("findings", 0)]
         for s in r["sensitive_reads"]],
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
