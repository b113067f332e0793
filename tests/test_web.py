"""The web page in a real browser (Debian's chromium driven by Playwright) against the
real daemon on the corpus, with hostile transcripts planted beside it: exact values on
each page from the socket's own answers, navigation and the keyboard, a live append
seen within a second, nothing from a transcript ever runs, the token, Host and peer
checks, the daemon down and catching up.

One daemon, one web server and one browser for the module; the tests run in file
order (the last ones stop and restart the daemon)."""

from __future__ import annotations

import http.client
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsrc_daemon.web.pages import TURNS_PER_PAGE

from browser import WebServer, launch
from corpus import copy_read_corpus
from harness import DaemonProcess, wait_for

pytestmark = pytest.mark.slow

HOSTILE_SID = "0badc0de-0000-4000-8000-00000000beef"
LIVE_SID = "11ve0000-0000-4000-8000-000000000001".replace("v", "0")
PWN = "window.__pwned"
BIG_CHARS = 10 * 1024 * 1024


def _claude(sid: str, uuid: str, kind: str, ts: str, cwd: str, **extra: Any) -> bytes:
    rec: dict[str, Any] = {"type": kind, "sessionId": sid, "uuid": uuid, "parentUuid": None,
                           "timestamp": ts, "cwd": cwd, "version": "2.1.90",
                           "isSidechain": False, **extra}
    return orjson.dumps(rec) + b"\n"


def _user(sid: str, uuid: str, ts: str, text: str, cwd: str = "/work/hostile") -> bytes:
    return _claude(sid, uuid, "user", ts, cwd, message={"role": "user", "content": text})


def _said(sid: str, uuid: str, ts: str, blocks: list[dict[str, Any]],
          cwd: str = "/work/hostile") -> bytes:
    return _claude(sid, uuid, "assistant", ts, cwd, message={
        "id": f"msg_{uuid}", "role": "assistant", "model": "claude-test", "content": blocks,
        "usage": {"input_tokens": 11, "output_tokens": 7}})


HOSTILE_ANSWER = (
    "Here: [click me](javascript:window.__pwned='js-link') and [docs](https://example.org/x)"
    " <b onmouseover=\"window.__pwned='hover'\">bold</b>"
    " <style>body{display:none !important}</style>"
    " <span style=\"display:none\">HIDDEN-TEXT</span>"
    " <iframe src=\"https://example.org\"></iframe> ![pixel](https://example.org/p.png)"
    " ANSWER-END"
)


def write_hostile(home: Path) -> Path:
    """A Claude Code session whose every string attacks the page, a 10 MB line, and a
    line that is not UTF-8."""
    d = home / ".claude" / "projects" / "-work-hostile"
    d.mkdir(parents=True, exist_ok=True)
    sid = HOSTILE_SID
    lines = [
        _user(sid, "h1", "2026-05-03T10:00:00.000Z",
              f"<script>{PWN}='script'</script> SCRIPT-PROMPT"),
        _said(sid, "h2", "2026-05-03T10:00:01.000Z", [
            {"type": "text", "text": HOSTILE_ANSWER},
            {"type": "tool_use", "id": "toolu_h1", "name": "Bash",
             "input": {"command": f"echo '<img src=x onerror=\"{PWN}=1\">'; exit 3"}}]),
        _claude(sid, "h3", "user", "2026-05-03T10:00:02.000Z", "/work/hostile",
                message={"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_h1", "content": "boom",
                     "is_error": True}]},
                toolUseResult={"stdout": "", "stderr": "boom", "exitCode": 3}),
        _user(sid, "h4", "2026-05-03T10:00:03.000Z",
              f"<img src=x onerror=\"{PWN}='onerror'\"> invoice\u202egpj.exe RTL-PROMPT"),
        _user(sid, "h5", "2026-05-03T10:00:04.000Z", "BIG-PROMPT " + "A" * BIG_CHARS),
    ]
    path = d / f"{sid}.jsonl"
    with path.open("wb") as fh:
        for line in lines:
            fh.write(line)
        fh.write(b'{"type":"user","text":"\xff\xfe not utf-8"}\n')
    return path


def write_live(home: Path) -> Path:
    """A session active now: a prompt, and an answer whose request costs $0.0105
    (claude-sonnet-4-5: 1,000 input tokens at $3, 500 output at $15 per million)."""
    d = home / ".claude" / "projects" / "-work-live"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{LIVE_SID}.jsonl"
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    path.write_bytes(
        _user(LIVE_SID, "l1", now, "LIVE-FIRST-PROMPT", cwd="/work/live")
        + _claude(LIVE_SID, "l1a", "assistant", now, "/work/live", message={
            "id": "msg_l1a", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "on it"}],
            "usage": {"input_tokens": 1000, "output_tokens": 500}}))
    return path


class Env:
    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        copy_read_corpus(self.home)
        self.hostile = write_hostile(self.home)
        self.live = write_live(self.home)
        self.daemon = DaemonProcess(self.home)
        self.daemon.start()
        self.daemon.wait_live(timeout=300)
        self.web = WebServer(self.daemon)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.daemon.call(method, params)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    e = Env(tmp_path_factory.mktemp("web"))
    yield e
    e.web.stop()
    e.daemon.cleanup()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture()
def page(env: Env, browser: Any) -> Iterator[Any]:
    """A signed-in page (the token's link once, as a person opens it), collecting the
    console's errors and the page's own script errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))  # type: ignore[attr-defined]
    pg.goto(env.web.url)
    assert pg.url == env.web.base + "/"  # the token left the address bar
    yield pg
    context.close()


def text_of(pg: Any, selector: str) -> str:
    return " ".join(str(pg.locator(selector).first.inner_text()).split())


def request(env: Env, path: str, *, host: str | None = None, cookie: bool = False,
            method: str = "GET") -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", env.web.port, timeout=30)
    headers = {"Host": host or f"127.0.0.1:{env.web.port}"}
    if cookie:
        headers["Cookie"] = f"agentsrc_web_{env.web.port}={env.web.token}"
    conn.request(method, path, headers=headers)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp


# ---- who may read ---------------------------------------------------------------------


def test_the_token_the_host_and_the_method_are_checked_on_every_request(env: Env) -> None:
    for path in ("/", "/sessions", "/static/app.css", "/live/now", "/nope"):
        r = request(env, path)
        assert r.status == 401, path  # no token, no data, static files included
        assert "default-src 'self'" in (r.getheader("content-security-policy") or "")
    r = request(env, f"/sessions?token={env.web.token}&agent=codex")
    assert r.status == 303
    assert r.getheader("location") == "/sessions?agent=codex"  # the token leaves the URL
    cookie = r.getheader("set-cookie") or ""
    assert cookie.startswith(f"agentsrc_web_{env.web.port}={env.web.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert request(env, "/?token=wrong").status == 401
    assert request(env, "/", cookie=True).status == 200
    # DNS rebinding: a page of another site whose name resolves to 127.0.0.1 sends its
    # own Host; refused even with the cookie.
    for host in (f"evil.example:{env.web.port}", "127.0.0.1", f"127.0.0.1:{env.web.port + 1}"):
        r = request(env, "/", host=host, cookie=True)
        assert r.status == 403, host
        assert r.getheader("x-frame-options") == "DENY"
    assert request(env, "/", host=f"localhost:{env.web.port}", cookie=True).status == 200
    r = request(env, "/", cookie=True, method="POST")
    assert r.status == 405 and r.getheader("allow") == "GET, HEAD"
    r = request(env, "/", cookie=True)
    assert r.getheader("cache-control") == "no-store"
    assert r.getheader("referrer-policy") == "no-referrer"


def test_another_user_is_refused_even_with_the_token(env: Env) -> None:
    """The loopback peer's uid (Linux): a process of another user on the machine gets
    403 with the right cookie."""
    runuser = shutil.which("runuser")
    python = shutil.which("python3", path="/usr/bin:/bin")  # the venv's: not theirs to run
    if (os.geteuid() != 0 or runuser is None or python is None
            or not Path("/proc/net/tcp").exists()):
        pytest.skip("needs root, runuser and /proc/net/tcp to connect as another user")
    code = (
        "import http.client,sys\n"
        f"c=http.client.HTTPConnection('127.0.0.1',{env.web.port},timeout=20)\n"
        f"c.request('GET','/',headers={{'Cookie':'agentsrc_web_{env.web.port}={env.web.token}'}})\n"
        "print(c.getresponse().status)\n"
    )
    out = subprocess.run([runuser, "-u", "nobody", "--", python, "-c", code],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "403", out.stderr
    assert request(env, "/", cookie=True).status == 200  # its owner still reads


# ---- exact values on each page ------------------------------------------------------------


def test_sessions_page_counts_filters_and_pages_as_the_socket_does(env: Env, page: Any) -> None:
    total = env.call("sessions.count")["sessions"]
    assert total == env.call("status")["sessions"]
    page.goto(env.web.base + "/sessions")
    assert text_of(page, "#session-count").startswith(f"{total:,} sessions match")
    first = env.call("sessions.list", {"limit": 50})
    rows = page.locator("#sessions tbody tr")
    assert rows.count() == len(first["sessions"])
    assert rows.first.locator("a.sid").get_attribute("title") == first["sessions"][0]["id"]
    # Filters: has findings, has failed commands, an agent.
    with_findings = env.call("sessions.count", {"has_findings": True})["sessions"]
    assert with_findings > 0
    page.check("input[name=findings]")
    page.click("form.filters button[type=submit]")
    assert "findings=1" in page.url
    assert text_of(page, "#session-count").startswith(f"{with_findings:,} session")
    listed = {a.get_attribute("title") for a in page.locator("#sessions a.sid").all()}
    assert listed == {s["id"] for s in env.call(
        "sessions.list", {"has_findings": True, "limit": 50})["sessions"]}
    failed = env.call("sessions.count", {"failed_commands": True, "agent": "codex"})["sessions"]
    page.goto(env.web.base + "/sessions?failed=1&agent=codex")
    assert text_of(page, "#session-count").startswith(f"{failed:,} session")
    # The next page follows the cursor.
    if first["next_cursor"]:
        page.goto(env.web.base + "/sessions")
        page.click("a[rel=next]")
        second = env.call("sessions.list", {"limit": 50, "cursor": first["next_cursor"]})
        assert page.locator("#sessions a.sid").first.get_attribute("title") == \
            second["sessions"][0]["id"]


def test_a_session_page_shows_its_facts_turns_and_failed_commands(env: Env, page: Any) -> None:
    failed = env.call("commands.list", {"failed": True, "limit": 1})["events"][0]
    sid = failed["session_id"]
    s = env.call("sessions.get", {"id": sid})["session"]
    page.goto(env.web.base + f"/sessions/{sid}?at={failed['id']}")
    facts = text_of(page, "#facts")
    assert f"prompts {s['prompts']:,}" in facts
    assert f"tool calls {s['tool_calls']:,}" in facts
    assert f"tokens {s['tokens']['total_tokens']:,}" in facts
    assert s["id"] in facts
    # Its failed commands counted on its row (schema 21), as commands.list lists them.
    failures = env.call("commands.list", {"session_id": sid, "failed": True, "limit": 1000})
    assert s["failed_commands"] == len(failures["events"]) > 0
    assert text_of(page, "#failed-commands") == f"{s['failed_commands']:,}"
    # The failed command, at its anchor, with its exit code marked as failed.
    cmd = page.locator(f"#e{failed['id']}")
    assert cmd.count() == 1
    assert "failed" in (cmd.get_attribute("class") or "")
    if failed["exit_code"] is not None:
        assert cmd.locator(".exit.failed").inner_text().strip() == str(failed["exit_code"])
    # The first page: as many turns as sessions.timeline's first page, numbered.
    page.goto(env.web.base + f"/sessions/{sid}")
    timeline = env.call("sessions.timeline", {"id": sid, "limit": TURNS_PER_PAGE})
    turns = page.locator("#turns article.turn")
    assert turns.count() == len(timeline["turns"])
    assert turns.first.get_attribute("id") == f"t{timeline['turns'][0]['first_event_id']}"
    assert turns.first.locator("header .anchor").inner_text().strip() == "turn 1"
    if timeline["next_after_id"]:
        page.click("a[rel=next]")
        nxt = env.call("sessions.timeline", {"id": sid, "limit": TURNS_PER_PAGE,
                                             "after_id": timeline["next_after_id"]})
        assert page.locator("#turns article.turn").first.get_attribute("id") == \
            f"t{nxt['turns'][0]['first_event_id']}"
    assert page.errors == []


def test_search_highlights_hits_counts_facets_and_links_each_to_its_turn(
    env: Env, page: Any
) -> None:
    q = "test"
    hits = env.call("search.query", {"q": q, "limit": 50})["hits"]
    facets = env.call("search.facets", {"q": q})
    page.goto(env.web.base + "/search?q=" + q)
    items = page.locator("#hits li.hit")
    assert items.count() == len(hits) > 0
    assert page.locator("#hits mark").count() >= len(hits)
    by_kind = {r["value"]: r["hits"] for r in facets["by_kind"]}
    shown = page.locator("#facets ul").first.locator("li")
    assert shown.count() == len(by_kind)
    first_kind = facets["by_kind"][0]
    assert f"{first_kind['value']} {first_kind['hits']:,}" in text_of(page, "#facets")
    event_hit = next(h for h in hits if h["event_id"])
    idx = hits.index(event_hit)
    items.nth(idx).locator(".hit-head a").last.click()
    page.wait_for_load_state()
    assert page.url.endswith(f"#e{event_hit['event_id']}")
    assert page.locator(f"#e{event_hit['event_id']}").count() == 1
    # A query that does not parse says why, as the CLI does.
    page.goto(env.web.base + '/search?q="unclosed')
    assert "unclosed quote" in text_of(page, "#search-error")


def test_files_usage_findings_and_health_show_the_socket_s_numbers(env: Env, page: Any) -> None:
    edit = env.call("files.edits", {"order": "desc", "limit": 1})["events"][0]
    path = edit["path"]
    reads = env.call("files.reads", {"path": path, "limit": 200})["events"]
    edits = env.call("files.edits", {"path": path, "limit": 200})["events"]
    page.goto(env.web.base + "/files?" + _qs(path=path))
    assert page.locator("#history tbody tr").count() == len(reads) + len(edits)
    top = env.call("files.top", {"since": "36500d", "limit": 25})
    page.goto(env.web.base + "/files?days=all")
    assert page.locator("#most-changed tbody tr").count() == len(top["most_changed"])
    assert page.locator("#failing tbody tr").count() == len(top["failing_commands"])
    projects = env.call("projects.list", {"limit": 30})["projects"]
    assert [a.get_attribute("title") for a in page.locator("ul.projects li a").all()] == \
        [p["project"] for p in projects] != []

    totals = env.call("usage.summary")["totals"]
    page.goto(env.web.base + "/usage?days=all")
    usage = text_of(page, "#usage-totals")
    assert f"tokens {totals['total_tokens']:,}" in usage
    assert f"model responses {totals['responses']:,}" in usage
    assert page.locator("#chart-days svg rect.bar").count() == \
        len(env.call("usage.summary")["by_day"])
    spent = totals["cost"]  # the corpus: estimates, OpenCode's own costs, an unpriced rollout
    assert spent["kind"] == "mixed"
    assert f"cost ${spent['usd']:,.2f} mixed" in usage

    report = env.call("findings.report")
    page.goto(env.web.base + "/findings")
    assert f"findings {report['findings']:,}" in text_of(page, "#findings-totals")
    assert f"sessions {report['sessions']:,}" in text_of(page, "#findings-totals")
    assert report["sessions"] == len(report["by_session"]) > 0
    assert page.locator("#by-type tbody tr").count() == len(report["by_type"])
    newest = env.call("findings.list", {"order": "desc", "limit": 100})["findings"]
    assert page.locator("#findings tbody tr").count() == len(newest)
    # A finding's link opens its turn at the finding: its kind and place, no value.
    page.locator("#findings tbody tr").first.locator("a").first.click()
    page.wait_for_load_state()
    at = page.locator(f"#e{newest[0]['id']}")
    assert newest[0]["type"] in at.inner_text()

    status = env.call("status")
    store = env.call("store.info")
    page.goto(env.web.base + "/health")
    assert text_of(page, "#health-state") == status["state"]
    assert text_of(page, "#health-events") == f"{status['events']:,}"
    assert page.locator("#roots tbody tr").count() == len(status["roots"])
    assert str(store["schema_version"]) in text_of(page, "#health-store")
    skipped = text_of(page, "#skipped")
    assert f"invalid_utf8: {status['skipped']['invalid_utf8']:,}" in skipped  # the planted line
    assert page.errors == []


def _qs(**params: str) -> str:
    from urllib.parse import urlencode

    return urlencode(params)


def test_navigation_and_the_keyboard(env: Env, page: Any) -> None:
    for label, path in (("Sessions", "/sessions"), ("Search", "/search"), ("Files", "/files"),
                        ("Usage", "/usage"), ("Findings", "/findings"),
                        ("Health", "/health"), ("Now", "/")):
        with page.expect_navigation():
            page.click(f"header nav a:text-is('{label}')")
        assert page.url == env.web.base + path
        assert page.locator("header nav a[aria-current=page]").inner_text() == label
    page.goto(env.web.base + "/sessions")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "quick-q"
    page.keyboard.type("flaky")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.startswith(env.web.base + "/search?q=flaky")
    page.goto(env.web.base + "/sessions")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.locator("#sessions tbody tr.kbd-current").count() == 1
    href = page.locator("#sessions tbody tr.kbd-current a.sid").get_attribute("href")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(str(href))
    # Narrow windows keep the layout: nothing wider than the viewport.
    page.set_viewport_size({"width": 420, "height": 900})
    for path in ("/", "/sessions", "/usage", "/findings"):
        page.goto(env.web.base + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 420, path


# ---- hostile transcripts ------------------------------------------------------------------


def test_hostile_transcripts_show_as_text_and_nothing_runs(env: Env, page: Any) -> None:
    s = env.call("sessions.get", {"id": HOSTILE_SID})["session"]
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    for path in (f"/sessions/{s['id']}", "/sessions", "/search?q=SCRIPT-PROMPT",
                 "/?minutes=10080", "/files?project=/work/hostile"):
        page.goto(env.web.base + path)
        page.mouse.move(300, 300)
        assert page.evaluate(f"typeof {PWN}") == "undefined", path
        assert page.locator("body").is_visible()
        # Only our own script; no image, frame or style element from a transcript.
        scripts = [page.locator("script").nth(i).get_attribute("src")
                   for i in range(page.locator("script").count())]
        assert scripts == ["/static/app.js"], path
        assert page.locator("main img, main iframe, main style").count() == 0, path
        assert page.locator("a[href^='javascript:' i]").count() == 0, path
    page.goto(env.web.base + f"/sessions/{s['id']}")
    body = page.locator("main").inner_text()
    assert f"<script>{PWN}='script'</script> SCRIPT-PROMPT" in body  # shown as text
    assert "HIDDEN-TEXT" in body and "ANSWER-END" in body  # no CSS from a transcript
    assert "invoice\u27e6U+202E\u27e7gpj.exe RTL-PROMPT" in body  # the override shown
    assert "\u202e" not in page.content()
    # The only link the answer keeps is the http(s) one, which opens nothing of ours.
    links = page.locator(".answer .md a")
    assert [links.nth(i).get_attribute("href") for i in range(links.count())] == [
        "https://example.org/x", "https://example.org/p.png"]
    assert links.first.get_attribute("rel") == "noopener noreferrer"
    # The failed command of the hostile session, its exit code marked.
    cmd = page.locator(".cmd.failed")
    assert cmd.count() == 1 and cmd.locator(".exit").inner_text().strip() == "3"
    # The 10 MB line: stored cut (256 KiB), shown folded; the page stays small.
    big = page.locator(".prompt", has_text="BIG-PROMPT")
    assert big.locator("details.rest").count() == 1
    html = page.content()
    assert len(html.encode()) < 1_000_000
    assert not [u for u in seen if not u.startswith(env.web.base)]  # nothing from outside
    assert page.errors == []


# ---- costs --------------------------------------------------------------------------------


def cost_text(cost: dict[str, Any]) -> str:
    """What web/present.cost prints for a cost object (its visible text)."""
    if cost["kind"] == "unpriced":
        return "—" if cost.get("reason") == "no usage recorded" else "unpriced"
    usd = cost["usd"]
    return (f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}") + f" {cost['kind']}"


E2E4 = "claude-code:e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06"


def test_costs_on_every_page_as_the_socket_gives_them(env: Env, page: Any) -> None:
    # Now: the live session's cost so far, and today's (the live session alone: the
    # corpus is older than today).
    page.goto(env.web.base + "/")
    row = page.locator(f"#active tr[data-session='claude-code:{LIVE_SID}']")
    assert row.locator("td").last.inner_text() == "$0.01 estimated"  # $0.0105
    today = text_of(page, "#today")
    assert "cost $0.01 estimated" in today
    # Sessions: a cost column, each row the socket's.
    page.goto(env.web.base + "/sessions?model=claude-opus-4-6")
    (listed,) = env.call("sessions.list", {"model": "claude-opus-4-6"})["sessions"]
    assert listed["id"] == E2E4 and listed["cost"] == {"usd": 4.086012, "kind": "estimated"}
    assert page.locator("#sessions tbody tr").count() == 1
    assert page.locator("#sessions tbody tr td").last.inner_text() == "$4.09 estimated"
    page.goto(env.web.base + "/sessions")
    shown = env.call("sessions.list", {"limit": 50})["sessions"]
    cells = page.locator("#sessions tbody tr td:last-child").all_inner_texts()
    assert cells == [cost_text(s["cost"]) for s in shown]
    assert "—" in cells and "unpriced" in cells  # no usage recorded; a model not priced
    # A session's page: its facts, the no-model rollout unpriced with why in its title.
    page.goto(env.web.base + f"/sessions/{E2E4}")
    assert "cost $4.09 estimated" in text_of(page, "main dl.facts")
    page.goto(env.web.base + "/sessions/codex:97b66f6c-a160-40e0-bd0f-1fdcbbb9498b")
    unpriced = page.locator("main dl.facts .cost-unpriced")
    assert unpriced.inner_text() == "unpriced"
    assert unpriced.get_attribute("title") == "no model recorded"
    # Usage: the totals, a bar per day with a cost, by model, agent and project.
    summary = env.call("usage.summary", {})
    page.goto(env.web.base + "/usage?days=all")
    priced_days = [d for d in summary["by_day"] if d["cost"]["usd"] is not None]
    assert page.locator("#chart-cost svg rect.bar").count() == len(priced_days)
    for key in ("model", "agent", "project"):
        cells = page.locator(f"#by-{key} tbody tr td:last-child").all_inner_texts()
        assert cells == [cost_text(r["cost"]) for r in summary[f"by_{key}"]], key
    opus = page.locator("#by-model tbody tr", has_text="claude-opus-4-6")
    assert opus.locator("td").last.inner_text() == "$4.09 estimated"
    # The 5-hour blocks: the live session's block is active, with its burn rate.
    page.goto(env.web.base + "/usage")
    blocks = env.call("usage.blocks", {})["blocks"]
    assert blocks and blocks[0]["active"] and blocks[0]["cost"] == {"usd": 0.0105, "kind": "estimated"}
    first = page.locator("#blocks tbody tr").first
    assert first.get_attribute("class") == "active"
    assert first.locator("td").last.inner_text().startswith("$0.01 estimated")
    assert page.errors == []


def test_health_shows_the_prices_and_a_reprice(env: Env, page: Any) -> None:
    status = env.call("status")
    page.goto(env.web.base + "/health")
    prices = text_of(page, "#health-prices")
    table = status["prices"]["table"]
    assert prices == f"Prices: genai-prices {table['version']} (bundled)."
    assert status["reprice"] is None and page.locator("#health-reprice").count() == 0


# ---- live -------------------------------------------------------------------------------


def test_a_live_append_is_on_the_session_page_within_a_second(env: Env, page: Any) -> None:
    page.goto(env.web.base + f"/sessions/claude-code:{LIVE_SID}")
    assert "LIVE-FIRST-PROMPT" in page.locator("#turns").inner_text()
    page.wait_for_timeout(500)  # the stream is open
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    with env.live.open("ab") as fh:
        fh.write(_user(LIVE_SID, "l2", now, "LIVE-SECOND-PROMPT", cwd="/work/live"))
    t0 = time.monotonic()
    page.locator("#turns", has_text="LIVE-SECOND-PROMPT").wait_for(timeout=5000)
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0, f"the append took {elapsed:.2f} s to show"
    assert page.locator("#turns article.turn").count() == 2
    # "Now" lists it as active, with its latest prompt's turn.
    page.goto(env.web.base + "/")
    row = page.locator(f"#active tr[data-session='claude-code:{LIVE_SID}']")
    assert row.count() == 1
    live = env.call("sessions.live", {"since": "15m"})["sessions"]
    assert text_of(page, "#active-count") == str(len(live))


# ---- the daemon down, then catching up ---------------------------------------------------


def test_the_daemon_down_then_catching_up_then_live(env: Env, page: Any) -> None:
    page.goto(env.web.base + "/")
    assert text_of(page, "#daemon-state") == "live"
    env.daemon.stop()
    page.locator("#daemon-state", has_text="daemon down").wait_for(timeout=10_000)
    r = request(env, "/sessions", cookie=True)
    assert r.status == 503
    page.goto(env.web.base + "/sessions")
    assert "is not answering" in page.locator("main h1").inner_text()
    assert "not running" in text_of(page, "p.down")
    # A new daemon on a fresh database reads the whole home again: catching up. The
    # home is read in a second or two, too quick for the page to be sure to meet that
    # state, so the loop is held before its first round by the stall fake
    # (tests/daemon_with_fakes.py, a stand-in: the real daemon, its loop paused while
    # the file exists) until the page has shown it.
    shutil.rmtree(env.daemon.data_dir)
    hold = env.daemon.run_dir / "hold-catch-up"
    hold.touch()
    page.goto(env.web.base + "/")
    env.daemon.fakes = ["--stall-file", str(hold)]
    env.daemon.start(wait=False)
    env.daemon.fakes = []
    page.locator("#daemon-state", has_text="catching up").wait_for(timeout=30_000)
    page.reload()
    assert page.locator("#progress-bar").count() == 1
    p = env.call("status")["progress"]
    assert p["bytes_total"] > 0 and p["bytes_done"] == 0
    assert int(page.locator("#progress-bar").get_attribute("max") or 0) == p["bytes_total"]
    hold.unlink()
    # Live again, said by the stream without a reload.
    page.locator("#daemon-state", has_text="live").wait_for(timeout=300_000)
    wait_for(lambda: env.call("status")["state"] == "live", timeout=30)
    assert request(env, "/sessions", cookie=True).status == 200
