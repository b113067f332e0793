"""What things cost, the commands beside ``usage`` (cli/sessions.py):

* ``agentsrc statusline``: Claude Code's status-line command; answered by the fast path
  (cli/fast.py) without typer, this entry only for ``--help`` and AGENTSRC_CLI_FAST=0;
* ``agentsrc prices``: the price table and overrides in use, and a re-price running;
* ``agentsrc prices update``: the table refreshed from the data genai-prices publishes
  (the one command that uses the network for prices; docs/usage.md), and a running
  daemon told to price with it (SIGHUP: the stored costs are priced again). The library
  is imported only here, in this command's process, never in the daemon's."""

from __future__ import annotations

import os
import signal

import typer

from ..errors import DaemonNotRunning
from .output import emit_json, fail
from .typer_app import app, get_config, given_options


@app.command()
def statusline() -> None:
    """Claude Code's status line: this session's cost, today's, the 5-hour block's.

    Reads the JSON Claude Code writes on stdin and prints one line (docs/usage.md)."""
    from .fast import statusline as answer

    raise typer.Exit(answer(given_options()))

prices_app = typer.Typer(help="The price table costs are estimated with (docs/usage.md).",
                         invoke_without_command=True)


@prices_app.callback()
def show(ctx: typer.Context, json: bool = typer.Option(False, "--json")) -> None:
    """The price table the daemon prices with, and any re-price running."""
    if ctx.invoked_subcommand is not None:
        return
    from .output import call_daemon

    st = call_daemon(get_config(), "status")
    info = {"prices": st.get("prices"), "reprice": st.get("reprice")}
    if json:
        emit_json(info)
        return
    prices = info["prices"] or {}
    source = prices.get("table") or {}
    typer.echo(f"table:       {source.get('library', 'none')} {source.get('version', '')}"
               f" ({source.get('data', 'no table: every request is unpriced')})")
    typer.echo(f"fingerprint: {prices.get('fingerprint')}")
    if info["reprice"]:
        r = info["reprice"]
        typer.echo(f"re-pricing:  {r['done']:,}/{r['total']:,} requests ({r['fraction'] * 100:.1f}%)")


@prices_app.command("update")
def update(
    url: str | None = typer.Option(None, "--url", help="Where the data is (default: the library's)."),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds to wait for it."),
) -> None:
    """Fetch the newest prices into the table; the daemon prices history with them.

    The data genai-prices publishes, validated by the library itself; nothing is
    replaced when it refuses it."""
    from ..pricing import export
    from ..system.price_table import table_path

    cfg = get_config()
    try:
        info = export.update_table(table_path(cfg), url, timeout)
    except Exception as exc:  # the library's refusal or the network's: nothing replaced
        fail(f"the prices were not updated ({type(exc).__name__}: {exc}); the table is unchanged")
    typer.echo(f"price table: {info['models']:,} models from {info['data']}"
               f" (genai-prices {info['version']})")
    from ..rpc.client import Client

    try:
        with Client(cfg.socket_path, timeout=5) as client:
            pid = client.call("status")["pid"]
    except DaemonNotRunning:
        typer.echo("the daemon prices with it when it starts")
        return
    os.kill(int(pid), signal.SIGHUP)
    typer.echo("the daemon prices with it now, history included: `agentsrc prices` shows the re-price")


app.add_typer(prices_app, name="prices")
