"""Third-party packages imported without the parts the daemon never runs.

Two of the daemon's dependencies import heavy packages at their top for code paths the
daemon never takes, and those imports stay resident for the daemon's whole life:

* detect-secrets' plugins and filters ``import requests`` (urllib3, http.client, email,
  charset_normalizer, ssl: about 10 MB) to verify a secret with its vendor over the
  network, which the engine never does (secrets/engine.py disables verification);
* structlog imports rich (and through it pygments and attrs: about 7 MB) for its
  console renderer's pretty tracebacks, and asyncio (with ssl: about 5 MB) for its
  async logging methods; the daemon logs plain lines, from threads.

While such a package is imported, the module it does not need stands in as a
``_Deferred`` module: the package binds it, and the real module is imported the first
time anything asks it for an attribute (a verification, an async log call), so nothing
stops working. rich is simply absent during structlog's import (structlog falls back to
plain tracebacks); asyncio and requests are deferred. A module already imported in the
process is never replaced. Once the package is imported the stand-ins leave
``sys.modules``, so any later ``import`` of them gets the real module.

``import_detect_secrets()`` is called by secrets/engine.py before it imports detect-secrets;
``import_structlog()`` by the daemon's entry points (``agentsrc run``, the backfill worker)
before anything imports structlog. Both import nothing of agentsrc.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Deferred(types.ModuleType):
    """Stands in for module ``name``: the first attribute asked of it imports the real
    module (once the stand-in has left ``sys.modules``) and answers from it."""

    def __init__(self, name: str, placeholders: dict[str, Any]) -> None:
        super().__init__(name)
        # Names read at the importing package's import time (annotations of functions
        # that are never called), so that reading them imports nothing.
        self.__dict__.update(placeholders)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or sys.modules.get(self.__name__) is self:
            raise AttributeError(attr)  # still standing in: the real one is not there yet
        return getattr(importlib.import_module(self.__name__), attr)


@contextmanager
def _standing_in(
    deferred: dict[str, dict[str, Any]], absent: tuple[str, ...] = ()
) -> Iterator[None]:
    installed: dict[str, object] = {}
    for name, placeholders in deferred.items():
        if name not in sys.modules:
            installed[name] = sys.modules[name] = _Deferred(name, placeholders)
    for name in absent:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]  # `import name` fails
            installed[name] = None
    try:
        yield
    finally:
        for name, module in installed.items():
            if name in sys.modules and sys.modules[name] is module:
                del sys.modules[name]


def import_detect_secrets() -> None:
    """Import detect-secrets, every plugin and filter module it may load later included,
    with ``requests`` deferred."""
    if "detect_secrets.plugins.base" in sys.modules:
        return
    with _standing_in({"requests": {"Response": object}}):
        import detect_secrets.core.scan  # noqa: F401
        import detect_secrets.filters
        import detect_secrets.plugins
        import detect_secrets.settings  # noqa: F401

        # The plugins and filters are imported by name later (settings, the plugin
        # mapping): import them all now, inside the window, or they would import the
        # real requests then.
        for package in (detect_secrets.plugins, detect_secrets.filters):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                importlib.import_module(info.name)


def import_structlog() -> None:
    """Import structlog with rich absent and asyncio deferred."""
    if "structlog" in sys.modules:
        return
    with _standing_in({"asyncio": {}}, absent=("rich",)):
        import structlog  # noqa: F401
