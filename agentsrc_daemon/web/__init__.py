"""``agentsrc web``: the local web page over the record, a client of the daemon's socket
    (docs/web.md). Its modules import the optional ``web`` extra (Starlette, uvicorn,
    Jinja2, markdown-it-py); only the ``web`` command loads them. The modules are in
    docs/architecture.md's table."""
