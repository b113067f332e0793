"""``agentsrc doctor``'s checks of the project folders (Aider and Crush keep their files
in the projects they work in: ingest/project_scan.py): each named folder, and what the
daemon searched and found."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ..config import Config
from .check import Check

FIX_FOLDERS = ('name the folders your projects are in: [roots] projects = ["~/code"] in '
               "{file}, $AGENTSRC_PROJECTS or --projects-root (docs/operations.md)")


def check_project_folders(cfg: Config) -> list[Check]:
    config_file = cfg.config_file or "~/.config/agentsrc/config.toml"
    checks: list[Check] = []
    for folder in cfg.project_folders:
        name = f"projects {folder}"
        if not folder.is_dir():
            checks.append(Check(name, True, f"{folder} does not exist: nothing is searched there",
                                FIX_FOLDERS.format(file=config_file), warning=True))
        elif not os.access(folder, os.R_OK | os.X_OK):
            checks.append(Check(name, False, f"{folder} is not readable by this user",
                                f"chmod u+rx {folder}"))
        else:
            checks.append(Check(name, True, f"{folder} is searched 3 levels deep"))
    return checks


def check_project_files(cfg: Config, ask: Callable[[Config], Any]) -> Check:
    """What the daemon searched and found (its status' ``projects``)."""
    config_file = cfg.config_file or "~/.config/agentsrc/config.toml"
    try:
        answer = ask(cfg)
    except Exception:  # check_daemon says why
        return Check("project files", True, "the daemon did not answer: not known",
                     warning=True)
    projects = answer.get("projects") if isinstance(answer, Mapping) else None
    if not isinstance(projects, Mapping):
        return Check("project files", True, "the daemon does not search projects", warning=True)
    files = projects.get("files") or []
    folders = projects.get("folders") or []
    where = (f"{len(folders)} named folder(s) and {projects.get('known_roots', 0)} project "
             f"root(s) of known sessions searched")
    if not files:
        return Check("project files", True, f"{where}: no Aider or Crush file found",
                     None if folders else FIX_FOLDERS.format(file=config_file))
    listed = "; ".join(f"{f.get('agent')} {f.get('path')}" for f in files[:20])
    more = f" and {len(files) - 20} more" if len(files) > 20 else ""
    return Check("project files", True,
                 f"{where}: {len(files)} found ({projects.get('watch')}): {listed}{more}")
