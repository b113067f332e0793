"""Clients started by other programs find the daemon. MCP clients and launchers start
programs with only HOME, PATH, USER, SHELL, TERM and LOGNAME: no XDG_RUNTIME_DIR. The
daemon, started with the full environment of a login (XDG_RUNTIME_DIR=/run/user/<uid>,
as pam_systemd sets it), puts its socket there; ``agentsrc status``, a typer command,
``agentsrc mcp`` and ``agentsrc web``, each with only those six variables, must reach it.

Run for real in a private mount namespace (``unshare -m``, as root) whose /run/user is
a fresh tmpfs: the runtime directory logind would make, without touching the machine's
own. The driver runs inside it and reports what each client got."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harness import REPO, copy_tree

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent / "fixtures"
SPARSE = ("HOME", "PATH", "USER", "SHELL", "TERM", "LOGNAME")

DRIVER = r'''
import http.client, json, os, subprocess, sys, time
python, home, repo = sys.argv[1], sys.argv[2], sys.argv[3]
uid = os.getuid()
run_dir = f"/run/user/{uid}"
sock = f"{run_dir}/agentsrc/agentsrc.sock"
base = {"HOME": home, "PATH": os.environ["PATH"], "USER": "dev", "SHELL": "/bin/sh",
        "TERM": "dumb", "LOGNAME": "dev"}
full = {**base, "XDG_RUNTIME_DIR": run_dir, "AGENTSRC_RECONCILE_INTERVAL": "2",
        "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
cli = [python, "-m", "agentsrc_daemon.cli"]
out = {}
daemon = subprocess.Popen([*cli, "run", "--json-logs"], env=full, cwd=repo,
                          stdout=subprocess.DEVNULL, stderr=open(f"{home}/daemon.log", "ab"))
try:
    for _ in range(600):
        r = subprocess.run([*cli, "status", "--json"], env=full, cwd=repo,
                           capture_output=True, text=True)
        if r.returncode == 0 and json.loads(r.stdout)["state"] == "live":
            break
        time.sleep(0.1)
    out["socket_exists"] = os.path.exists(sock)
    r = subprocess.run([*cli, "status", "--json"], env=base, cwd=repo, capture_output=True, text=True)
    out["status"] = [r.returncode, json.loads(r.stdout) if r.returncode == 0 else r.stderr]
    r = subprocess.run([*cli, "search", "--json", "flaky"], env=base, cwd=repo,
                       capture_output=True, text=True)
    out["search"] = [r.returncode, json.loads(r.stdout) if r.returncode == 0 else r.stderr]
    claude_code = json.dumps({"session_id": "11111111-2222-4333-8444-555555555555",
                              "model": {"display_name": "Sonnet"}})
    r = subprocess.run([*cli, "statusline"], env=base, cwd=repo, input=claude_code,
                       capture_output=True, text=True)
    out["statusline"] = [r.returncode, r.stdout, r.stderr]
    mcp = subprocess.Popen([*cli, "mcp", "--all-projects"], env=base, cwd=home,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    def send(msg):
        mcp.stdin.write(json.dumps(msg) + "\n"); mcp.stdin.flush()
    def answer(rid):
        while True:
            msg = json.loads(mcp.stdout.readline())
            if msg.get("id") == rid:
                return msg
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "sparse", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "list_sessions", "arguments": {"all_projects": True}}})
    out["mcp"] = answer(2)["result"]
    mcp.stdin.close(); mcp.wait(20)
    web = subprocess.Popen([*cli, "web", "--port", "0"], env=base, cwd=repo,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = web.stdout.readline().strip()
    hostport, token = url[len("http://"):].split("/?token=")
    conn = http.client.HTTPConnection(*hostport.split(":"), timeout=30)
    conn.request("GET", "/sessions", headers={
        "Host": hostport, "Cookie": f"agentsrc_web_{hostport.split(':')[1]}={token}"})
    resp = conn.getresponse()
    out["web"] = [resp.status, resp.read().decode()]
    web.terminate(); web.wait(20)
finally:
    daemon.terminate(); daemon.wait(30)
print(json.dumps(out))
'''


def test_every_client_reaches_the_daemon_with_only_six_variables(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare for a private /run/user")
    probe = subprocess.run([unshare, "-m", "--propagation", "private", "true"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this machine allows no mount namespace")
    home = tmp_path / "home"
    copy_tree(FIXTURES / "claude" / "projects", home / ".claude" / "projects")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    uid = os.getuid()
    script = (f"mount -t tmpfs -o mode=755 tmpfs /run/user && mkdir -m 700 /run/user/{uid}"
              f' && exec "$0" "$@"')
    result = subprocess.run(
        [unshare, "-m", "--propagation", "private", "sh", "-c", script, sys.executable,
         str(driver), sys.executable, str(home), str(REPO)],
        capture_output=True, text=True, timeout=300, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-3000:]
    out = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert out["socket_exists"]  # the daemon's socket is in the runtime directory
    code, status = out["status"]
    assert code == 0, status
    assert status["socket"] == f"/run/user/{uid}/agentsrc/agentsrc.sock"
    assert (status["state"], status["sessions"]) == ("live", 1)
    code, search = out["search"]
    assert code == 0, search
    assert {h["session_id"] for h in search["hits"]} == {
        "claude-code:11111111-2222-4333-8444-555555555555"}
    # Claude Code's status line, run with only the six variables, reaches the daemon.
    code, line, err = out["statusline"]
    assert (code, err) == (0, "")
    assert line.startswith("Sonnet · session $") and "agentsrc:" not in line, line
    assert out["mcp"].get("isError") is not True, out["mcp"]
    assert "11111111-2222-4333-8444-555555555555" in orjson.dumps(out["mcp"]).decode()
    status_code, body = out["web"]
    assert status_code == 200
    assert "Flaky test fix" in body and "not answering" not in body
