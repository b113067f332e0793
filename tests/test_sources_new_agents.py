"""Roots, sources and watch points of Gemini CLI, Copilot CLI and OpenCode."""

from __future__ import annotations

from pathlib import Path

from agentsrc_daemon.config import load_config
from agentsrc_daemon.ingest import sources


def _cfg(home: Path, **env: str):  # type: ignore[no-untyped-def]
    return load_config(env={"HOME": str(home), **env})


def test_default_roots(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    assert cfg.gemini_root == tmp_path / ".gemini"
    assert cfg.copilot_root == tmp_path / ".copilot"
    assert cfg.opencode_root == tmp_path / ".local" / "share" / "opencode"
    roots = list(cfg.roots())
    assert roots[:12] == ["codex", "claude-code", "muse", "gemini", "copilot", "opencode",
                          "qwen", "amp", "pi", "cursor", "cline", "continue"]
    # The editors' extensions: three roots in each of the five editors' user dirs.
    assert roots[12:15] == ["cline@Code", "roo-code@Code", "kilo-code@Code"]
    assert len(roots) == 12 + 3 * 5


def test_agents_own_variables(tmp_path: Path) -> None:
    xdg_config = tmp_path / "xdgc"
    cfg = _cfg(
        tmp_path,
        GEMINI_CLI_HOME=str(tmp_path / "g"),
        XDG_CONFIG_HOME=str(xdg_config),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    assert cfg.gemini_root == tmp_path / "g" / ".gemini"
    assert cfg.copilot_root == tmp_path / ".copilot"  # $XDG_CONFIG_HOME/.copilot is absent
    assert cfg.opencode_root == tmp_path / "data" / "opencode"
    (xdg_config / ".copilot").mkdir(parents=True)
    assert _cfg(tmp_path, XDG_CONFIG_HOME=str(xdg_config)).copilot_root == xdg_config / ".copilot"
    cfg = _cfg(tmp_path, XDG_CONFIG_HOME=str(xdg_config), COPILOT_HOME=str(tmp_path / "c"))
    assert cfg.copilot_root == tmp_path / "c"


def test_flags_env_and_toml(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text('[roots]\ngemini = "~/tg"\ncopilot = "~/tc"\nopencode = "~/to"\n')
    env = {"HOME": str(tmp_path), "AGENTSRC_CONFIG": str(conf)}
    cfg = load_config(env=env)
    assert (cfg.gemini_root, cfg.copilot_root, cfg.opencode_root) == (
        tmp_path / "tg",
        tmp_path / "tc",
        tmp_path / "to",
    )
    cfg = load_config(env={**env, "AGENTSRC_GEMINI_ROOT": str(tmp_path / "eg")}, copilot_root=tmp_path / "fc")
    assert cfg.gemini_root == tmp_path / "eg" and cfg.copilot_root == tmp_path / "fc"


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    return path


def test_sources_and_what_is_never_read(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    roots = cfg.roots()
    g, c, o = cfg.gemini_root, cfg.copilot_root, cfg.opencode_root
    want = {
        _touch(g / "tmp" / "p" / "chats" / "session-2026-01-01T10-00-abcdef12.json"): sources.DOCUMENT,
        _touch(g / "tmp" / "p" / "chats" / "session-2026-01-01T10-00-abcdef12.jsonl"): sources.JSONL,
        _touch(g / "tmp" / "p" / "logs.json"): sources.MEMORY,
        _touch(c / "session-state" / "s1" / "events.jsonl"): sources.JSONL,
        _touch(c / "session-state" / "s2.jsonl"): sources.JSONL,
        _touch(c / "history-session-state" / "session_x_1.json"): sources.DOCUMENT,
        _touch(o / "opencode.db"): sources.SQLITE,
        _touch(o / "opencode-stable.db"): sources.SQLITE,
        _touch(o / "storage" / "part" / "msg_a1" / "prt_b1.json"): sources.DOCUMENT,
    }
    never = [
        _touch(g / "oauth_creds.json"),
        _touch(g / "tmp" / "p" / ".project_root"),
        _touch(g / "history" / "p" / "x.json"),
        _touch(c / "config.json"),
        _touch(c / "session-state" / "s1" / "workspace.yaml"),
        _touch(o / "auth.json"),
        _touch(o / "mcp-auth.json"),
        _touch(o / "opencode.db-wal"),
        _touch(o / "snapshot" / "storage" / "part" / "msg_a1" / "prt_b1.json"),
    ]
    found = {
        Path(spec.path): spec.mode
        for root in (g, c, o)
        for spec, _ in sources.walk_sources(root, roots)
    }
    assert found == want
    for path in never:
        assert sources.classify(str(path), roots) is None, path
    # A database's -wal wakes the database; a workspace.yaml wakes its log.
    assert [s.path for s in sources.dependents(str(o / "opencode.db-wal"), roots)] == [
        str(o / "opencode.db")
    ]
    assert [s.path for s in sources.dependents(str(c / "session-state" / "s1" / "workspace.yaml"), roots)] == [
        str(c / "session-state" / "s1" / "events.jsonl")
    ]


def test_watch_points_leave_big_trees_out(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    points = {(p.agent, p.path, p.recursive) for p in cfg.watch_points()}
    assert ("gemini", cfg.gemini_root, False) in points
    assert ("gemini", cfg.gemini_root / "tmp", True) in points
    assert ("copilot", cfg.copilot_root / "session-state", True) in points
    assert ("opencode", cfg.opencode_root, False) in points
    assert not any(p[1] == cfg.opencode_root / "snapshot" for p in points)
    assert ("codex", cfg.codex_root, True) in points


# Path pieces the sources' rules look at, for the property below.
_PIECES = [
    "sessions", "archived_sessions", "2026", "rollout-a.jsonl", "rollout-b.json", "AGENTS.md",
    "memories", "-work-p", "0b8a6a2e-0000-4000-8000-000000000001.jsonl", "subagents",
    "agent-a1.jsonl", "agent-a1.meta.json", "memory", "notes.md", "tmp", "chats",
    "session-1.jsonl", "session-2.json", ".project_root", "GEMINI.md", "logs.json",
    "session-state", "events.jsonl", "workspace.yaml", "history-session-state",
    "session_1.json", "instructions", "x.instructions.md", "opencode.db", "opencode.db-wal",
    "storage", "session", "message", "part", "ses_1.json", "msg_1.json", "prt_1.json",
    "project", "info", "node_modules", "x",
]


def test_the_walk_classifies_a_directory_s_entries_as_classify_does(tmp_path: Path) -> None:
    """walk_sources matches the roots once per directory (sources._classifier); for any
    path under any root (nested roots and extra sources included) it must say what
    classify says."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    cfg = _cfg(tmp_path, OPENCODE_DB=str(tmp_path / "elsewhere" / "opencode.db"))
    roots = cfg.roots()
    extra = cfg.extra_sources()
    bases = [str(r) for r in roots.values()] + [str(tmp_path), str(tmp_path / "elsewhere")]

    @settings(max_examples=400, deadline=None)
    @given(st.sampled_from(bases), st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6))
    def check(base: str, parts: list[str]) -> None:
        path = "/".join([base, *parts])
        directory, name = path.rsplit("/", 1)
        assert sources._classifier(directory, roots, extra)(path, name) == sources.classify(
            path, roots, extra
        )

    check()
    # And some of those paths are sources, of several modes (the property is not vacuous).
    modes = {
        spec.mode
        for spec in (
            sources.classify(str(roots["codex"] / "sessions" / "2026" / "rollout-a.jsonl"), roots),
            sources.classify(str(roots["opencode"] / "opencode.db"), roots),
            sources.classify(str(tmp_path / "elsewhere" / "opencode.db"), roots, extra),
            sources.classify(str(roots["gemini"] / "tmp" / "x" / "chats" / "session-2.json"), roots),
        )
        if spec is not None
    }
    assert modes == {sources.JSONL, sources.SQLITE, sources.DOCUMENT}
