"""Where a running ``agentsrc web`` says its link: ``web.url`` beside the daemon's socket
(0600 in its 0700 directory), ``{"url", "pid", "port", "host"}``. Read by ``agentsrc
web --url``, ``status`` and ``doctor``: standard library and orjson only (the CLI's fast
path reads it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

URL_FILE = "web.url"


def url_file(socket_path: Path) -> Path:
    return socket_path.parent / URL_FILE


def read_url(socket_path: Path) -> dict[str, Any] | None:
    """The running server's link and where it listens, or None (no file, or its process
    is gone)."""
    try:
        info = orjson.loads(url_file(socket_path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return None
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return info


def without_token(url: str) -> str:
    return url.split("?token=", 1)[0]


def write_url(socket_path: Path, info: dict[str, Any]) -> Path:
    path = url_file(socket_path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(orjson.dumps(info))
    os.replace(tmp, path)
    return path
