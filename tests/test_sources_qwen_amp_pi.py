"""Roots, sources and watch points of Qwen Code, Amp and Pi: defaults from the agents'
own variables, the [roots] keys, AGENTSRC_<KEY>_ROOT and --<key>-root; which files are
sources and what is never opened (credentials, settings, shadow repositories)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentsrc_daemon.cli.launch import ROOT_OPTIONS
from agentsrc_daemon.config import load_config
from agentsrc_daemon.ingest import sources


def _cfg(home: Path, **env: str):  # type: ignore[no-untyped-def]
    return load_config(env={"HOME": str(home), **env})


def test_default_roots_and_the_agents_own_variables(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    assert (cfg.qwen_root, cfg.amp_root, cfg.pi_root) == (
        tmp_path / ".qwen", tmp_path / ".local" / "share" / "amp", tmp_path / ".pi" / "agent")
    cfg = _cfg(tmp_path, QWEN_RUNTIME_DIR="~/qr", XDG_DATA_HOME=str(tmp_path / "data"),
               PI_CODING_AGENT_DIR=str(tmp_path / "pa"))
    assert (cfg.qwen_root, cfg.amp_root, cfg.pi_root) == (
        tmp_path / "qr", tmp_path / "data" / "amp", tmp_path / "pa")


def test_toml_keys_variables_and_flags(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text('[roots]\nqwen = "~/tq"\namp = "~/ta"\npi = "~/tp"\n')
    env = {"HOME": str(tmp_path), "AGENTSRC_CONFIG": str(conf)}
    cfg = load_config(env=env)
    assert (cfg.qwen_root, cfg.amp_root, cfg.pi_root) == (tmp_path / "tq", tmp_path / "ta", tmp_path / "tp")
    cfg = load_config(env={**env, "AGENTSRC_AMP_ROOT": str(tmp_path / "ea"), "QWEN_RUNTIME_DIR": "/nope"},
                      pi_root=tmp_path / "fp")
    assert (cfg.qwen_root, cfg.amp_root, cfg.pi_root) == (tmp_path / "tq", tmp_path / "ea", tmp_path / "fp")
    assert {"--qwen-root", "--amp-root", "--pi-root"} <= set(ROOT_OPTIONS)


def test_run_accepts_the_root_flags() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "agentsrc_daemon.cli", "run", "--help"],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, check=True,
    )
    assert all(flag in result.stdout for flag in ("--qwen-root", "--amp-root", "--pi-root"))


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    return path


def test_sources_and_what_is_never_read(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    roots = cfg.roots()
    q, a, p = cfg.qwen_root, cfg.amp_root, cfg.pi_root
    want = {
        _touch(q / "projects" / "-home-dev-shop" / "chats" / "5e5a-1.jsonl"): sources.JSONL,
        _touch(q / "tmp" / ("0" * 64) / "chats" / "session-2025-09-10T08-00-5e5a1ad0.json"): sources.DOCUMENT,
        _touch(q / "QWEN.md"): sources.MEMORY,
        _touch(a / "threads" / "T-5e5a0a00-0000-4000-8000-000000000001.json"): sources.DOCUMENT,
        _touch(p / "sessions" / "--home-dev-shop--" / "2026-01-01T10-00-00-000Z_5e55.jsonl"): sources.JSONL,
    }
    never = [
        _touch(q / "oauth_creds.json"),
        _touch(q / "settings.json"),
        _touch(q / "history" / ("0" * 64) / "x.json"),
        _touch(q / "tmp" / ("0" * 64) / "logs.json"),
        _touch(q / "debug" / "s.txt"),
        _touch(a / "secrets.json"),
        _touch(a / "history.jsonl"),
        _touch(a / "threads" / "notes.json"),
        _touch(p / "auth.json"),
        _touch(p / "settings.json"),
        _touch(p / "models.json"),
        _touch(p / "sessions" / "loose.jsonl"),
    ]
    found = {Path(spec.path): spec.mode for root in (q, a, p) for spec, _ in sources.walk_sources(root, roots)}
    assert found == want
    for path in never:
        assert sources.classify(str(path), roots) is None, path


def test_watch_points_are_the_roots_entries_and_their_source_folders(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    points = {(p.agent, p.path, p.recursive) for p in cfg.watch_points() if p.agent in ("qwen", "amp", "pi")}
    assert points == {
        ("qwen", cfg.qwen_root, False), ("qwen", cfg.qwen_root / "projects", True),
        ("qwen", cfg.qwen_root / "tmp", True),
        ("amp", cfg.amp_root, False), ("amp", cfg.amp_root / "threads", True),
        ("pi", cfg.pi_root, False), ("pi", cfg.pi_root / "sessions", True),
    }
