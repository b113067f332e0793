"""Which derivation and scanning stages the daemon runs, built from the config.
Kept apart from daemon.py so the orchestrator stays about the loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .config import Config
from .derive import Deriver
from .ingest import DeriveStage, ScanStage
from .projects import ProjectRoots
from .server import Handler


def build_stages(
    cfg: Config,
) -> tuple[DeriveStage | None, ScanStage | None, Callable[[str], str] | None, dict[str, Any]]:
    roots = ProjectRoots()
    deriver = Deriver(roots.root_for, home=str(cfg.home))
    return deriver, None, roots.root_for, {"enabled": False}


def extra_methods(cfg: Config) -> dict[str, Handler]:
    return {}
