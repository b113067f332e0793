"""The ClickHouse sink: committed events, session facts and findings streamed to a
team's ClickHouse server over its HTTP interface (docs/team.md).

``http`` is the client (the standard library's http.client), ``schema`` the versioned
DDL that ``agentsrc sink init`` applies, ``pusher`` the daemon's thread that reads what
the store committed (store/sink.py shapes the rows) and sends it. Importing this
package loads nothing: the CLI imports the modules it needs inside its commands."""
