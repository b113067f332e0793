"""``agentsrc mcp``: the MCP server over the daemon's socket, on stdio, for coding agents
to ask the record (docs/mcp.md). The MCP SDK is the optional ``agentsrc[mcp]`` extra and
is imported only here, when the command runs."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from .output import EXIT_FAILED, fail
from .typer_app import app, get_config


@app.command()
def mcp(
    project: Path | None = typer.Option(
        None, "--project",
        help="The project the tools answer about by default (default: the git root of the "
        "current directory, else the directory itself).",
    ),
    all_projects: bool = typer.Option(
        False, "--all-projects", help="Answer about every project by default."
    ),
    timeout: float = typer.Option(
        20.0, "--timeout", min=0.1, help="Seconds to wait for the daemon's answer to a call."
    ),
) -> None:
    """Serve the record to coding agents: an MCP server on stdio (read-only tools)."""
    if project is not None and all_projects:
        fail("give --project or --all-projects, not both")
    try:
        from ..mcp_bridge.server import serve
    except ImportError as exc:
        fail(f"the MCP server needs the mcp extra: pip install 'agentsrc[mcp]' ({exc})",
             EXIT_FAILED)
    from ..derive.projects import find_project_root

    cfg = get_config()
    scope: str | None = None
    if not all_projects:
        start = str(project.absolute()) if project is not None else os.getcwd()
        scope = find_project_root(start) if project is None else start.rstrip("/") or "/"
    serve(cfg.socket_path, scope, timeout)
