"""The daemon's processes import neither typer (and click, rich) nor requests (urllib3,
http.client) nor asyncio (and ssl): lean_imports.py and cli/launch.py. What the
stand-ins defer still works when asked for, and ``agentsrc run`` parsed without typer
means what typer's parse of the same command line means."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.cli import launch, load_app

from harness import wait_for
from test_secrets_e2e import EXPECTED, write_home

# What the daemon and its backfill worker must not hold: a command-line parser used once,
# HTTP clients for vendors' verification APIs, an event loop nothing runs.
NOT_IN_THE_DAEMON = {"typer", "click", "rich", "pygments", "requests", "urllib3",
                     "charset_normalizer", "http.client", "email", "asyncio", "ssl", "attr"}


def _imported(log: str) -> list[str]:
    """The modules ``-X importtime`` (PYTHONPROFILEIMPORTTIME) logged, once per import
    in each process that wrote to the log."""
    return [line.rsplit("|", 1)[1].strip() for line in log.splitlines()
            if line.startswith("import time:") and "|" in line]


@pytest.mark.slow
def test_the_daemon_and_its_worker_import_nothing_heavy_and_still_find_every_secret(
    tmp_path: Path, daemon_factory: Any
) -> None:
    home = tmp_path / "home"
    write_home(home)
    d = daemon_factory(
        home,
        MUSE_AGENTS_DIR=str(home / "agents"),
        AGENTSRC_WORKERS="1",
        AGENTSRC_WORKER_MIN_BACKLOG="1",  # the backlog goes to a worker process
        PYTHONPROFILEIMPORTTIME="1",
    ).start()
    d.wait_live()
    findings = wait_for(
        lambda: len(f := d.call("findings.list", {"limit": 1000})["findings"]) >= len(EXPECTED)
        and f, timeout=30)
    # Exactly what main's daemon finds there (the private key's base64 body as well).
    assert {(f["type"], f["path"]) for f in findings} == EXPECTED | {
        ("Base64 High Entropy String", "/work/proj/config.py")}
    assert len(findings) == 22
    imported = _imported(d.log())
    # Both processes logged their imports: the daemon's and the worker's.
    assert imported.count("agentsrc_daemon.ingest.workers") == 2
    assert imported.count("agentsrc_daemon.secrets.engine") == 2
    assert "agentsrc_daemon.cli.launch" in imported
    heavy = {m for m in imported
             if m.split(".")[0] in NOT_IN_THE_DAEMON or m in NOT_IN_THE_DAEMON}
    # structlog's `import rich` is logged though it fails at once (rich absent): rich
    # loaded would show its submodules (rich.console, rich.traceback) here as well.
    assert sorted(heavy - {"rich"}) == []
    assert "structlog.dev" in imported


def _run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True).stdout


def test_what_the_stand_ins_defer_is_imported_when_asked_for() -> None:
    out = _run_python(
        "import sys\n"
        "from agentsrc_daemon import lean_imports\n"
        "lean_imports.import_structlog()\n"
        "from agentsrc_daemon.secrets.engine import SecretScanner\n"
        "import detect_secrets.plugins.aws as aws, structlog.stdlib as sl\n"
        "print(sorted(m for m in ('requests', 'asyncio', 'rich', 'ssl') if m in sys.modules))\n"
        "key = 'AKIA' + 'Q' * 4 + 'ZXCVBNMASDFGHJKL'[:12]\n"
        "print([f.type for f in SecretScanner(None, {}, b'k' * 32).scan(key)])\n"
        # Asked for an attribute, a stand-in imports the real module and answers from it.
        "print(callable(aws.requests.post), sl.asyncio.get_running_loop.__name__)\n"
        "print(sys.modules['requests'] is not aws.requests, 'asyncio' in sys.modules)\n"
        "import requests, asyncio\n"
        "print(aws.requests.post is requests.post, sl.asyncio.sleep is asyncio.sleep)\n"
    )
    assert out.splitlines() == [
        "[]",
        "['AWS Access Key']",
        "True get_running_loop",
        "True True",
        "True True",
    ]


def test_a_module_already_imported_is_never_replaced() -> None:
    out = _run_python(
        "import requests, asyncio, rich\n"
        "from agentsrc_daemon import lean_imports\n"
        "lean_imports.import_structlog()\n"
        "import agentsrc_daemon.secrets.engine\n"
        "import detect_secrets.plugins.aws as aws, structlog.stdlib as sl, structlog.dev as dev\n"
        "print(aws.requests is requests, sl.asyncio is asyncio, dev.rich is rich)\n"
    )
    assert out.splitlines() == ["True True True"]


# ----------------------------------------------------------------- `agentsrc run` parsed


def test_run_is_parsed_exactly() -> None:
    args = launch.parse(["--data-dir=/d", "--socket", "/s", "run", "--claude-root", "/c",
                         "--log-level=debug", "--console-logs", "--json-logs"])
    assert args == launch.RunArgs(
        {"data_dir": Path("/d"), "socket_path": Path("/s"), "claude_root": Path("/c")},
        "debug", True)
    assert launch.parse(["run"]) == launch.RunArgs({}, "info", None)
    # --log-format wins over the flags, wherever it stands.
    assert launch.parse(["run", "--log-format", "console", "--json-logs"]) == launch.RunArgs(
        {}, "info", False)
    assert launch.parse(["run", "--console-logs", "--log-format=json"]) == launch.RunArgs(
        {}, "info", True)
    # Anything else is typer's, with its messages.
    for argv in (["run", "--help"], ["run", "--log-level"], ["run", "x"], ["status"],
                 ["--data-dir", "run"], ["run", "--codex-root", "--muse-root", "/m"], [],
                 ["run", "-h"], ["run", "--json-logs=1"], ["run", "--log-format", "xml"]):
        assert launch.parse(argv) is None, argv


def _typer_parse(argv: list[str]) -> launch.RunArgs:
    """What typer's app makes of ``argv`` (its click parser; no command runs)."""
    group: Any = typer.main.get_command(load_app())
    ctx = group.make_context("agentsrc", list(argv))
    # The command name and what follows it, as click's Group.invoke takes them.
    name, cmd, rest = group.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
    assert name == "run"
    sub = cmd.make_context("run", rest, parent=ctx)
    given = {"socket_path": ctx.params["socket"], "data_dir": ctx.params["data_dir"],
             "config_file": ctx.params["config"]}
    given.update({k: v for k, v in sub.params.items()
                  if k.endswith("_root") and k != "projects_root"})
    if sub.params["projects_root"]:  # repeatable: every value, in order
        given["projects"] = list(sub.params["projects_root"])
    json_logs = sub.params["json_logs"]
    if sub.params["log_format"] is not None:
        json_logs = sub.params["log_format"].value == "json"
    return launch.RunArgs({k: v for k, v in given.items() if v is not None},
                          sub.params["log_level"], json_logs)


_VALUE = st.sampled_from(["/a", "/b/c", "rel", "x=y", "debug"])
_GLOBAL = st.sampled_from(sorted(launch.GLOBAL_OPTIONS))
_RUN_OPTION = st.sampled_from(sorted([*launch.ROOT_OPTIONS, "--log-level", launch.PROJECTS_FLAG]))


@st.composite
def _argv(draw: st.DrawFn) -> list[str]:
    argv: list[str] = []
    for name, value, joined in draw(st.lists(st.tuples(_GLOBAL, _VALUE, st.booleans()),
                                             max_size=3)):
        argv += [f"{name}={value}"] if joined else [name, value]
    argv.append("run")
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            argv.append(draw(st.sampled_from(sorted(launch.LOG_FORMAT_FLAGS))))
        elif kind == 1:
            value = draw(st.sampled_from(sorted(launch.LOG_FORMATS)))
            argv += [f"--log-format={value}"] if draw(st.booleans()) else ["--log-format", value]
        else:
            name, value = draw(_RUN_OPTION), draw(_VALUE)
            argv += [f"{name}={value}"] if draw(st.booleans()) else [name, value]
    return argv


@settings(max_examples=150, deadline=None)
@given(_argv())
def test_run_parsed_without_typer_means_what_typer_parses(argv: list[str]) -> None:
    ours = launch.parse(argv)
    assert ours is not None, argv  # every command line of run's own options is ours
    assert ours == _typer_parse(argv)
