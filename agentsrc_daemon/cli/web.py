"""``agentsrc web``: the local web page over the record (docs/web.md), a client of the
daemon's socket like ``agentsrc mcp``. Its stack (Starlette, uvicorn, Jinja2,
markdown-it-py) is the optional ``agentsrc[web]`` extra, imported only here, when the
command runs."""

from __future__ import annotations

import webbrowser

import typer

from .output import EXIT_FAILED, EXIT_NOT_RUNNING, fail
from .typer_app import app, get_config


@app.command()
def web(
    host: str = typer.Option(
        "127.0.0.1", "--host",
        help="The address to listen on: loopback by default; any other is reachable from "
        "the network (a warning says so).",
    ),
    port: int = typer.Option(
        8787, "--port", min=0, max=65535, help="The port; 0 picks a free one."
    ),
    open_browser: bool = typer.Option(
        False, "--open", help="Also open the page in the default browser."
    ),
    url: bool = typer.Option(
        False, "--url",
        help="Print the link (with its token) of the page already running, and exit.",
    ),
    service: bool = typer.Option(
        False, "--service", hidden=True,
        help="Under a service manager: the first line printed is the URL without its token.",
    ),
) -> None:
    """Serve the record as a local read-only web page (its link is the first line)."""
    cfg = get_config()
    if url:
        from ..web.url import read_url

        info = read_url(cfg.socket_path)
        if info is None:
            fail("no agentsrc web page is running: start one with `agentsrc web` "
                 "(or `agentsrc install --web`)", EXIT_NOT_RUNNING)
        print(info["url"])
        if open_browser:
            webbrowser.open(str(info["url"]))
        return
    try:
        from ..web.server import serve
    except ImportError as exc:
        fail(f"the web page needs the web extra: pip install 'agentsrc[web]' ({exc})",
             EXIT_FAILED)
    try:
        code = serve(cfg.socket_path, host, port, open_browser, service)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", EXIT_FAILED)
    raise typer.Exit(code)
