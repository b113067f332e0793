"""Screenshots of every page of ``agentsrc web`` (docs/web.md), in headless Chromium.

    .venv/bin/python tools/web_screenshots.py --out docs/web            # a synthetic home
    .venv/bin/python tools/web_screenshots.py --home ~/ --out /tmp/shots  # a real one

Without ``--home`` the home is built here from tests/fixtures (the transcripts written
for the tests) plus one session written now, so "Now" has something running: that is
what the committed screenshots show. With ``--home`` the real daemon reads that home
(read-only, as always) into a temporary database: transcripts are people's data, so
write those screenshots outside the repository.

The daemon and the page run as the user runs them (``agentsrc run``, ``agentsrc web``),
on a temporary data dir and socket, stopped at the end."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import orjson

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
sys.path.insert(0, str(REPO))

from agentsrc_daemon.rpc.client import Client  # noqa: E402

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def synthetic_home(home: Path) -> Path:
    """tests/fixtures laid out as a home, and a Claude Code session of a few minutes ago."""
    layout = {
        FIXTURES / "claude" / "projects": home / ".claude" / "projects",
        FIXTURES / "codex": home / ".codex" / "sessions",
        FIXTURES / "muse" / "agents": home / "agents",
        FIXTURES / "gemini": home / ".gemini",
        FIXTURES / "copilot": home / ".copilot",
    }
    for src, dst in layout.items():
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
    sid = "5c4ee7a1-0000-4000-8000-000000000042"
    d = home / ".claude" / "projects" / "-home-dev-demo"
    d.mkdir(parents=True, exist_ok=True)
    now = time.time()

    def at(seconds_ago: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - seconds_ago))

    def rec(uuid: str, kind: str, ago: float, **extra: object) -> bytes:
        return orjson.dumps({"type": kind, "sessionId": sid, "uuid": uuid, "parentUuid": None,
                             "timestamp": at(ago), "cwd": "/home/dev/demo", "version": "2.1.99",
                             "isSidechain": False, **extra}) + b"\n"

    def said(uuid: str, ago: float, blocks: list[dict[str, object]]) -> bytes:
        return rec(uuid, "assistant", ago, message={
            "id": f"msg_{uuid}", "role": "assistant", "model": "claude-sonnet-5",
            "content": blocks, "usage": {"input_tokens": 1200, "output_tokens": 340,
                                         "cache_read_input_tokens": 9000}})

    lines = [
        rec("s1", "user", 240, message={"role": "user", "content":
            "Add a retry with backoff to the deploy script"}),
        said("s2", 230, [{"type": "text", "text": "Reading the script first."},
                         {"type": "tool_use", "id": "toolu_s1", "name": "Read",
                          "input": {"file_path": "/home/dev/demo/src/deploy.py"}}]),
        rec("s3", "user", 225, message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_s1", "content": "def deploy(): ..."}]}),
        said("s4", 200, [{"type": "tool_use", "id": "toolu_s2", "name": "Bash",
                          "input": {"command": "pytest -q tests/test_deploy.py"}}]),
        rec("s5", "user", 190, message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_s2", "content": "1 failed",
             "is_error": True}]}, toolUseResult={"stdout": "1 failed", "exitCode": 1}),
        said("s6", 120, [{"type": "text", "text":
            "The test fails because `deploy()` gives up after the first error.\n\n"
            "I added `retry(times=3, backoff=2.0)`:\n\n```python\n@retry(times=3, backoff=2.0)\n"
            "def deploy():\n    ...\n```"},
            {"type": "tool_use", "id": "toolu_s3", "name": "Edit", "input": {
                "file_path": "/home/dev/demo/src/deploy.py", "old_string": "def deploy",
                "new_string": "@retry(times=3, backoff=2.0)\ndef deploy"}}]),
        said("s6b", 100, [{"type": "tool_use", "id": "toolu_s5", "name": "Read",
                           "input": {"file_path": "/home/dev/.aws/credentials"}}]),
        # AWS's documented example key, in pieces (no secret-shaped string in the source).
        rec("s6c", "user", 95, message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_s5", "content":
             "[default]\naws_access_key_id = " + "AK" + "IA" + "IOSFODNN" + "7EXAMPLE\n"}]}),
        rec("s7", "user", 60, message={"role": "user", "content": "Now run the tests again"}),
        said("s8", 30, [{"type": "tool_use", "id": "toolu_s4", "name": "Bash",
                         "input": {"command": "pytest -q"}}]),
    ]
    (d / f"{sid}.jsonl").write_bytes(b"".join(lines))
    return home


def pages(sock: Path) -> list[tuple[str, str]]:
    with Client(sock) as c:
        sessions = c.call("sessions.list", {"sort": "tools", "limit": 1})["sessions"]
        found = c.call("findings.list", {"order": "desc", "limit": 1})["findings"]
        edits = c.call("files.edits", {"order": "desc", "limit": 1})["events"]
        titles = [s["title"] for s in c.call("sessions.list", {"limit": 20})["sessions"]
                  if s.get("title")]
    word = next((w for t in titles for w in t.split() if w.isalpha() and len(w) > 3), "test")
    out = [("now", "/"), ("sessions", "/sessions")]
    if sessions:
        out.append(("session", "/sessions/" + quote(sessions[0]["id"], safe=":")))
    if found:
        f = found[0]
        out.append(("session-finding",
                    "/sessions/" + quote(f["session_id"], safe=":") + f"?at={f['id']}#e{f['id']}"))
    out.append(("search", "/search?q=" + quote(word)))
    out.append(("files", "/files?days=all"))
    if edits:
        out.append(("file-history", "/files?path=" + quote(edits[0]["path"], safe="")))
    out += [("usage", "/usage?days=all"), ("findings", "/findings"), ("health", "/health")]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, default=None,
                    help="a home to read (default: a synthetic one from tests/fixtures)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--dark", action="store_true", help="the dark colour scheme")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="asshot-", dir="/tmp"))
    home = args.home.expanduser().absolute() if args.home else synthetic_home(work / "home")
    # A synthetic home holds the database and socket too, so the pages show them as
    # ~/...; a real home is only read: they go beside it.
    state = work if args.home else home
    sock = state / ".s" / "agentsrc.sock"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "AGENTSRC_DATA_DIR": str(state / ".local" / "share" / "agentsrc"),
           "AGENTSRC_SOCKET": str(sock), "XDG_CONFIG_HOME": str(state / ".config"),
           "TZ": os.environ.get("TZ", "UTC")}
    cli = [sys.executable, "-m", "agentsrc_daemon.cli"]
    daemon = subprocess.Popen([*cli, "run", "--json-logs", "--log-level", "warning"], env=env,
                              cwd=str(REPO), stdout=subprocess.DEVNULL,
                              stderr=(work / "daemon.log").open("wb"))  # (not in home)
    web: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():  # the socket answers once the first scan has counted
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((work / "daemon.log").read_text()[-2000:])
            time.sleep(0.1)
        subprocess.run([*cli, "status", "--wait"], env=env, cwd=str(REPO), check=True,
                       stdout=subprocess.DEVNULL, timeout=900)
        web = subprocess.Popen([*cli, "web", "--port", "0"], env=env, cwd=str(REPO),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert web.stdout is not None
        url = web.stdout.readline().strip()
        base = url.split("/?token=")[0]
        args.out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            context = browser.new_context(
                viewport={"width": args.width, "height": args.height},
                color_scheme="dark" if args.dark else "light")
            page = context.new_page()
            page.goto(url)
            for name, path in pages(sock):
                page.goto(base + path, wait_until="load")
                page.wait_for_timeout(300)
                target = args.out / f"{name}{'-dark' if args.dark else ''}.png"
                page.screenshot(path=str(target))
                print(target)
            browser.close()
    finally:
        if web is not None:
            web.terminate()
            web.wait(20)
        daemon.terminate()
        daemon.wait(60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
