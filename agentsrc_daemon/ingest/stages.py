"""Which derivation and scanning stages the daemon runs, built from the config.
Kept apart from daemon.py so the orchestrator stays about the loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from ..config import Config
from ..derive.derive import Deriver
from ..derive.projects import ProjectRoots
from .round import DeriveStage, ScanStage

log = structlog.get_logger("agentsrc.wiring")


def build_stages(
    cfg: Config,
) -> tuple[DeriveStage | None, ScanStage | None, Callable[[str], str] | None, dict[str, Any]]:
    roots = ProjectRoots()
    deriver = Deriver(roots.root_for, home=str(cfg.home))
    scan_state: dict[str, Any] = {"enabled": False}
    stage: ScanStage | None = None
    if cfg.scan.enabled:
        from ..secrets.engine import SecretScanner, load_or_create_hash_key
        from ..secrets.stage import SecretStage

        scanner = SecretScanner(
            cfg.scan.plugins or None,
            cfg.scan.user_patterns,
            load_or_create_hash_key(cfg.data_dir),
        )
        stage = SecretStage(scanner, cfg.scan)
        scan_state = {
            "enabled": True,
            "plugins": scanner.plugin_names,
            "fallback_plugins": scanner.fallback_plugins,
            "user_patterns": sorted(cfg.scan.user_patterns),
            "store_text": cfg.scan.store_text,
            "exclude_paths": cfg.scan.exclude_paths,
            "exclude_sessions": cfg.scan.exclude_sessions,
        }
    return deriver, stage, roots.root_for, scan_state
