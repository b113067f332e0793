"""Where things are: defaults from $HOME and XDG, the agents' own variables, our
variables, the TOML file, and flags, in that order of precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsrc_daemon.config import load_config
from agentsrc_daemon.errors import ConfigError


def test_defaults_from_home_and_xdg(tmp_path: Path) -> None:
    cfg = load_config(env={"HOME": str(tmp_path)})
    assert cfg.codex_root == tmp_path / ".codex"
    assert cfg.claude_root == tmp_path / ".claude" / "projects"
    assert cfg.muse_root == tmp_path / "agents"
    assert cfg.data_dir == tmp_path / ".local" / "share" / "agentsrc"
    # No XDG_RUNTIME_DIR: logind's /run/user/<uid> where this machine has one.
    from agentsrc_daemon.config import runtime_dir

    run = runtime_dir({})
    assert cfg.socket_path == (run / "agentsrc" if run else cfg.data_dir) / "agentsrc.sock"
    assert cfg.db_path == cfg.data_dir / "agentsrc.db"
    assert (cfg.reconcile_interval, cfg.max_line_bytes) == (30.0, 64 * 1024 * 1024)
    assert cfg.scan.enabled and cfg.scan.store_text


def test_agents_variables_and_xdg(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "CODEX_HOME": str(tmp_path / "cx"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cl"),
        "MUSE_AGENTS_DIR": str(tmp_path / "mu"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    cfg = load_config(env=env)
    assert cfg.codex_root == tmp_path / "cx"
    assert cfg.claude_root == tmp_path / "cl" / "projects"
    assert cfg.muse_root == tmp_path / "mu"
    assert cfg.data_dir == tmp_path / "data" / "agentsrc"
    assert cfg.socket_path == tmp_path / "run" / "agentsrc" / "agentsrc.sock"


def test_precedence_flag_over_env_over_file(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text(
        '[roots]\ncodex = "~/from-file-codex"\nmuse = "~/from-file-muse"\n'
        '[daemon]\ndata_dir = "~/from-file-data"\nreconcile_interval = 5\n'
        '[scan]\nenabled = false\nuser_patterns = { tok = "tok_[0-9]{8}" }\n'
        'exclude_paths = ["**/fixtures/**"]\n'
    )
    env = {
        "HOME": str(tmp_path),
        "AGENTSRC_CONFIG": str(conf),
        "MUSE_AGENTS_DIR": str(tmp_path / "env-muse"),
        "AGENTSRC_MUSE_ROOT": str(tmp_path / "our-env-muse"),
        "AGENTSRC_DATA_DIR": str(tmp_path / "env-data"),
    }
    cfg = load_config(env=env, data_dir=tmp_path / "flag-data")
    assert cfg.codex_root == tmp_path / "from-file-codex"  # file over the default
    assert cfg.muse_root == tmp_path / "our-env-muse"  # our variable over the file
    assert cfg.data_dir == tmp_path / "flag-data"  # the flag over everything
    assert cfg.reconcile_interval == 5.0
    assert cfg.config_file == conf
    assert not cfg.scan.enabled
    assert cfg.scan.user_patterns == {"tok": "tok_[0-9]{8}"}
    assert cfg.scan.exclude_paths == ["**/fixtures/**"]
    cfg = load_config(env={**env, "AGENTSRC_SCAN": "1", "AGENTSRC_STORE_TEXT": "0"})
    assert cfg.scan.enabled and not cfg.scan.store_text


def test_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[daemon\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(env={"HOME": str(tmp_path)}, config_file=bad)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(env={"HOME": str(tmp_path)}, config_file=tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="bad number"):
        load_config(env={"HOME": str(tmp_path), "AGENTSRC_RECONCILE_INTERVAL": "soon"})
    with pytest.raises(ConfigError, match="Unix sockets allow about 104"):
        load_config(env={"HOME": str(tmp_path)}, socket_path="/tmp/" + "s" * 120)
    # An absent default config file is fine: it is optional.
    assert load_config(env={"HOME": str(tmp_path)}).config_file is None


def test_runtime_dir_without_xdg_runtime_dir_is_logind_s_when_it_is_the_user_s(
    tmp_path: Path,
) -> None:
    """Programs launched by others (MCP clients, cron) have no XDG_RUNTIME_DIR: they
    find the socket in /run/user/<uid> as the daemon that had the variable put it."""
    import os

    from agentsrc_daemon.config import runtime_dir

    uid = os.getuid()
    assert runtime_dir({"XDG_RUNTIME_DIR": "/x/y"}, base=tmp_path) == Path("/x/y")
    assert runtime_dir({}, base=tmp_path) is None  # no such directory
    mine = tmp_path / str(uid)
    mine.mkdir(mode=0o700)
    mine.chmod(0o700)
    assert runtime_dir({}, base=tmp_path) == mine
    mine.chmod(0o755)  # not private: not the runtime directory logind makes
    assert runtime_dir({}, base=tmp_path) is None
    mine.chmod(0o700)
    assert runtime_dir({}, uid=uid + 1, base=tmp_path) is None  # another user's uid
    (tmp_path / str(uid + 1)).mkdir(mode=0o700)
    assert runtime_dir({}, uid=uid + 1, base=tmp_path) is None  # exists, not theirs


def test_only_config_reads_the_environment_and_no_test_hook_is_left() -> None:
    """Knobs are read once, in config.py (Tuning, ROOTS, environment()); the rest of the
    package is handed them, and no production code looks for a test-only variable
    (tests inject their fakes: tests/daemon_with_fakes.py)."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "agentsrc_daemon"
    reads = re.compile(r"os\.environ|os\.getenv|getenv\(")
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        if path.name != "config.py" or path.parent != package:
            found += [f"{path.relative_to(package)}:{n}" for n, line in
                      enumerate(text.splitlines(), 1) if reads.search(line)]
        found += [f"{path.relative_to(package)}: AGENTSRC_TEST_" for _ in
                  re.findall(r"AGENTSRC_TEST_", text)]
    # The one other read, with why: `agentsrc statusline`, which Claude Code runs every
    # few hundred milliseconds, finds the socket as load_config does without importing
    # the config module (10 to 25 ms of each run): cli/statusline.run hands os.environ
    # to socket_path, which tests/test_statusline.py holds to load_config's answer.
    elsewhere = [f for f in found if f.startswith("cli/statusline.py:")]
    assert len(elsewhere) == 1
    assert [f for f in found if f not in elsewhere] == []


def test_project_folders_flag_then_environment_then_file(tmp_path: Path) -> None:
    cfg_file = tmp_path / "config.toml"
    cfg_file.write_text('[roots]\nprojects = ["~/code", "~/work"]\n')
    env = {"HOME": str(tmp_path)}
    assert load_config(env=env).project_folders == []  # none named by default
    assert load_config(env=env, config_file=cfg_file).project_folders == [
        tmp_path / "code", tmp_path / "work"]
    env["AGENTSRC_PROJECTS"] = f"~/a:{tmp_path / 'b'}:"
    assert load_config(env=env, config_file=cfg_file).project_folders == [
        tmp_path / "a", tmp_path / "b"]
    # --projects-root, repeatable, each value maybe several folders.
    assert load_config(env=env, config_file=cfg_file,
                       projects=["~/x", "~/y:~/x"]).project_folders == [
        tmp_path / "x", tmp_path / "y"]
    cfg_file.write_text("[roots]\nprojects = 3\n")
    with pytest.raises(ConfigError, match="projects"):
        load_config(env={"HOME": str(tmp_path)}, config_file=cfg_file)
