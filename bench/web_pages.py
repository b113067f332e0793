"""The web page's speed: the server's time per page (p50 and p99 of its Server-Timing,
which spans the page's calls to the daemon and its rendering) and the first contentful
paint in headless Chromium, on a store built by bench/bigstore.py.

    .venv/bin/python bench/web_pages.py [--events 10000000] [--files 20000] [--out DIR]
                                        [--store BUILD] [--runs 50] [--paints 5] [--json FILE]

The real daemon is started on a private copy of the build's data dir with the build's
home (as the other benchmarks do), then ``agentsrc web --port 0`` against its socket.
Each page is asked ``--runs`` times over one keep-alive connection after 3 warm-up
requests; the paint is measured by loading each page ``--paints`` times in a fresh tab
(its ``first-contentful-paint`` entry). The pages are chosen from the store's own data:
its biggest session, a failed command's turn, a word of its titles, a changed file.
``--store`` takes a build's directory of any schema (the daemon migrates its copy), as
bench/scale.py does. Targets (issue 28): p99 under 50 ms per page, first paint under
500 ms."""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import orjson

# bench/ is this script's own directory (on the path)
from bigstore import DaemonRun, build, checkout, load

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def pages_of(d: DaemonRun) -> list[tuple[str, str]]:
    """(name, path) of every page, from the store's own data."""
    biggest = d.call("sessions.list", {"sort": "tools", "limit": 1})["sessions"][0]["id"]
    failed = d.call("commands.list", {"failed": True, "order": "desc", "limit": 1})["events"]
    edits = d.call("files.edits", {"order": "desc", "limit": 1})["events"]
    title = next((s["title"] for s in d.call("sessions.list", {"limit": 50})["sessions"]
                  if s.get("title")), "test")
    word = next((w for w in title.split() if w.isalpha() and len(w) > 3), "test")
    session = "/sessions/" + quote(biggest, safe=":")
    out = [
        ("now", "/"),
        ("sessions", "/sessions"),
        ("sessions, has findings", "/sessions?findings=1"),
        ("sessions, failed commands", "/sessions?failed=1"),
        ("session (most tool calls)", session),
        ("search", "/search?" + urlencode({"q": word})),
        ("files, all projects", "/files?days=all"),
        ("usage, all time", "/usage?days=all"),
        ("usage, 30 days", "/usage"),
        ("findings", "/findings"),
        ("health", "/health"),
    ]
    if failed:
        e = failed[0]
        out.insert(5, ("session at a failed command",
                       "/sessions/" + quote(e["session_id"], safe=":") + f"?at={e['id']}"))
    if edits:
        out.insert(7, ("a file's history", "/files?" + urlencode({"path": edits[0]["path"]})))
    return out


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def server_times(port: int, token: str, path: str, runs: int) -> tuple[list[float], int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Host": f"127.0.0.1:{port}", "Cookie": f"agentsrc_web_{port}={token}"}
    times: list[float] = []
    size = 0
    for i in range(runs + 3):
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{path}: {resp.status}")
        timing = resp.getheader("server-timing") or ""
        if i >= 3:
            times.append(float(timing.split("dur=")[1]))
            size = len(body)
    conn.close()
    return times, size


def paints(base: str, url: str, paths: list[str], n: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(url)
        for path in paths:
            got = []
            for _ in range(n):
                page.goto(base + path, wait_until="load")
                fcp = None
                for _ in range(100):  # (the page's CSP forbids wait_for_function's eval)
                    fcp = page.evaluate("performance.getEntriesByName("
                                        "'first-contentful-paint')[0]?.startTime")
                    if fcp is not None:
                        break
                    page.wait_for_timeout(50)
                if fcp is None:
                    raise RuntimeError(f"{path}: no first-contentful-paint entry")
                got.append(float(fcp))
            out[path] = got
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get(
        "AGENTSRC_BIGSTORE", "/tmp/agentsrc-bigstore")))
    ap.add_argument("--store", type=Path, default=None,
                    help="a build's directory (bigstore.py), whatever its schema")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--paints", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    store = load(args.store) if args.store else build(args.out, args.events, args.files)
    work = Path(tempfile.mkdtemp(prefix="asweb-", dir="/tmp"))
    data = checkout(store, work)
    d = DaemonRun(Path(store.home), data).start()
    web: subprocess.Popen[str] | None = None
    try:
        st = d.wait_live(say=True)
        web = subprocess.Popen(
            [sys.executable, "-m", "agentsrc_daemon.cli", "web", "--port", "0"],
            env={**d.env, "TZ": "UTC"}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, cwd=str(REPO), start_new_session=True)
        assert web.stdout is not None
        url = web.stdout.readline().strip()
        base, _, token = url.partition("/?token=")
        port = int(base.rsplit(":", 1)[1])
        pages = pages_of(d)
        rows: list[dict[str, Any]] = []
        print(f"store: {st['events']:,} events, {st['sessions']:,} sessions "
              f"({store.db_bytes / 1e9:.2f} GB); {args.runs} requests a page")
        fcp = paints(base, url, [p for _, p in pages], args.paints) if args.paints else {}
        print(f"{'page':<30} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'KiB':>7} {'FCP ms':>8}")
        for name, path in pages:
            times, size = server_times(port, token, path, args.runs)
            f = fcp.get(path) or [float("nan")]
            row = {"page": name, "path": path, "p50_ms": round(statistics.median(times), 2),
                   "p99_ms": round(pct(times, 0.99), 2), "max_ms": round(max(times), 2),
                   "bytes": size, "fcp_ms_median": round(statistics.median(f), 1),
                   "fcp_ms_max": round(max(f), 1)}
            rows.append(row)
            print(f"{name:<30} {row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f} {row['max_ms']:>8.1f}"
                  f" {size / 1024:>7.1f} {row['fcp_ms_median']:>8.1f}", flush=True)
        if args.json:
            args.json.write_bytes(orjson.dumps({"events": st["events"], "sessions": st["sessions"],
                                                "runs": args.runs, "pages": rows},
                                               option=orjson.OPT_INDENT_2))
    finally:
        if web is not None:
            web.terminate()
            web.wait(20)
        d.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
