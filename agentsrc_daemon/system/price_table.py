"""The price table beside the store (``<data_dir>/prices.json``) and the pricing stage
the daemon builds from it (docs/architecture.md, "Prices").

The daemon never imports genai-prices (with pydantic and httpx2, 31 MB of its memory):
when the table is missing, unreadable, or was exported from another version of the
library than the one installed, a child process writes it (``python -m
agentsrc_daemon.pricing.export PATH``, about half a second, once per library version).
A table ``agentsrc prices update`` fetched from the library's published data says the
installed version too, so it stays until the library is upgraded. Without the library
(or when the export fails) the daemon runs with the table it has, or none: every
request is then unpriced ("no price table"), never $0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import structlog

from ..config import Config
from ..pricing import export
from ..pricing.stage import PriceStage
from ..pricing.table import PriceTable, load

log = structlog.get_logger("agentsrc.prices")

TABLE_NAME = "prices.json"
EXPORT_TIMEOUT_S = 120.0


def table_path(cfg: Config) -> Path:
    return cfg.data_dir / TABLE_NAME


def _read(path: Path) -> PriceTable | None:
    try:
        return load(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("price_table_unreadable", path=str(path), error=str(exc))
        return None


def ensure_table(path: Path, installed: str | None = None) -> PriceTable | None:
    """The table at ``path``, exported first when it is missing or of another library
    version than ``installed`` (default: the installed genai-prices')."""
    installed = installed or export.installed_version()
    table = _read(path)
    if table is not None and (installed is None or table.source.get("version") == installed):
        return table
    if installed is None:
        log.warning("price_library_missing", library=export.LIBRARY,
                    detail="costs are unpriced without a price table")
        return table
    try:
        # Its output kept apart from the daemon's log (an import profile, a traceback).
        done = subprocess.run(
            [sys.executable, "-m", "agentsrc_daemon.pricing.export", str(path)],
            capture_output=True, timeout=EXPORT_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("price_table_export_failed", error=type(exc).__name__)
        return table
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        log.warning("price_table_export_failed", code=done.returncode, error=" ".join(tail))
        return table
    exported = _read(path)
    if exported is not None:
        log.info("price_table_exported", path=str(path), **exported.source)
    return exported or table


def price_stage(cfg: Config) -> PriceStage:
    """The pricing stage of ``cfg``: its table (exported when needed) and its
    ``[prices]`` overrides."""
    return PriceStage(ensure_table(table_path(cfg)), cfg.prices)
