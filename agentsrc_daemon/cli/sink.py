"""``agentsrc sink init`` (apply the ClickHouse schema) and ``agentsrc sink status``
(what the daemon's sink is doing). The sink's modules are imported inside the commands:
start-up stays light.

The password comes from ``password_file`` or the environment (docs/team.md), never
from the command line."""

from __future__ import annotations

import typer

from .output import EXIT_FAILED, emit_json, fail
from .typer_app import app, call, get_config

sink_app = typer.Typer(
    help="The ClickHouse sink: one view of the record for a whole team (docs/team.md).",
    no_args_is_help=True,
)


@sink_app.command("init")
def init_command() -> None:
    """Create the database and tables on the configured server (idempotent)."""
    from ..sink import schema
    from ..sink.http import ClickHouse, ClickHouseError, Unreachable, redact_url

    cfg = get_config()
    sc = cfg.sink
    if sc is None:
        fail("no [sink.clickhouse] in the configuration (docs/team.md)")
    client = ClickHouse(sc.url, user=sc.user, password=sc.password(), timeout=sc.timeout,
                        ca_file=sc.ca_file)
    try:
        before, after = schema.init(client, sc.database)
    except (ClickHouseError, Unreachable) as exc:
        fail(f"{redact_url(sc.url)}: {exc}", EXIT_FAILED)
    finally:
        client.close()
    what = "already at" if before == after else f"migrated from {before} to"
    typer.echo(f"{redact_url(sc.url)} database {sc.database}: schema {what} version {after}")


@sink_app.command("status")
def status_command(
    json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Whether the daemon's sink is connected, how far behind it is, its last error."""
    st = call("status").get("sink", {"enabled": False})
    if json:
        emit_json(st)
        return
    if not st.get("enabled"):
        typer.echo("sink: off (no [sink.clickhouse] in the configuration)")
        return
    typer.echo(f"sink:       {st['state']} -> {st['url']} database {st['database']}")
    typer.echo(f"labels:     host={st['host_label']} user={st['user_label']} level={st['level']}")
    typer.echo(f"connected:  {'yes' if st['connected'] else 'no'}")
    typer.echo(f"lag:        {st['lag_events']} events, {st['lag_sessions']} sessions,"
               f" {st['lag_seconds']:.1f} s")
    typer.echo("sent:       " + ", ".join(f"{k}={v}" for k, v in st["sent"].items()))
    if st.get("last_error"):
        typer.echo(f"last error: {st['last_error']} (at {st['last_error_at']})")


app.add_typer(sink_app, name="sink")
