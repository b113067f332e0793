"""Full-text search: the query language, the index kept in the commit's transaction
(revisions, titles), the build of an existing store's index (resumable), pagination
while events are added, query plans; and on the real daemon: the corpus (English and
CJK prompts), redaction, kill -9 during the build."""

from __future__ import annotations

import random
import re
import signal
import string
import time
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.errors import RpcError
from agentsrc_daemon.rpc.methods import search_query
from agentsrc_daemon.store import Batch, Reader, Store
from agentsrc_daemon.store.queries.search import EVENT_HIT_JOINS
from agentsrc_daemon.store.search import QuerySyntaxError, compile_query, index_text, tokens
from agentsrc_daemon.store.search_index import SEARCH_CHUNK_IDS

from corpus import corpus_home
from fake_secrets import fragments
from harness import DaemonFactory, claude_line, claude_session, copy_tree, wait_for

_n = 0


def ev(kind: str, text: str | None = None, session: str = "codex:s1", **kw: Any) -> E.Event:
    global _n
    _n += 1
    data: dict[str, Any] = {}
    if kind in ("prompt", "message") and text is not None:
        data["text"] = text
    if kind == "command":
        data["command"] = text
    if kind in ("read", "edit"):
        data["path"] = text
    return E.Event(key=kw.pop("key", f"k{_n}"), session_id=session, kind=kind,
                   ts=kw.pop("ts", "2026-01-01T00:00:00.000Z"), adapter="codex",
                   source_path="/x/a.jsonl", offset=_n, data=data, **kw)


def commit(store: Store, *events: E.Event, facts: list[E.SessionFacts] | None = None) -> None:
    b = Batch(events=list(events), sessions=facts or [])
    b.cursors["/x/a.jsonl"] = Cursor("/x/a.jsonl", "codex", "jsonl", offset=_n)
    store.commit(b)


def ids(reader: Reader, q: str, **kw: Any) -> list[int | None]:
    return [h["event_id"] for h in reader.search(q, limit=1000, **kw)["hits"]]


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = Store(tmp_path / "db")
    yield s
    s.close()


def test_tokens_split_identifiers_and_cjk() -> None:
    assert tokens("RateLimiter") == ["Rate", "Limiter"]
    assert tokens("src/rate/limiter.py") == ["src", "rate", "limiter", "py"]
    assert tokens("rate_limiter") == ["rate", "limiter"]
    assert tokens("HTTPServer") == ["HTTP", "Server"]
    assert tokens("用数据库") == ["用数", "数据", "据库"]
    assert index_text("") == ""


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ('"open phrase', "unclosed quote"),
        ("(a OR b", "unclosed parenthesis"),
        ("a AND", "needs a term after it"),
        ("NOT a", "needs a term before it"),
        ("a )", "unexpected )"),
        ("()", "empty parentheses"),
        ("***", "no letters or digits"),
        ("   ", "empty"),
    ],
)
def test_bad_syntax_is_said_clearly(query: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError, match=re.escape(message)):
        compile_query(query)


def test_identifiers_are_found_by_their_pieces_and_whole(store: Store, tmp_path: Path) -> None:
    a, b, c, d = (ev("prompt", "fix the RateLimiter please"), ev("message", "call rate_limiter()"),
                  ev("edit", "/w/src/rate/limiter.py"), ev("prompt", "ratelimiting is other"))
    commit(store, a, b, c, d)
    r = Reader(tmp_path / "db")
    every = set(ids(r, "rate limiter"))
    assert len(every) == 3
    for q in ("RateLimiter", "rate_limiter", "src/rate/limiter.py", '"rate limiter"'):
        assert set(ids(r, q)) <= every and ids(r, q), q
    assert len(ids(r, "src/rate/limiter.py")) == 1
    assert len(ids(r, "ratelimit*")) == 1
    assert len(ids(r, "rate OR ratelimiting")) == 4
    assert len(ids(r, "rate NOT limiter")) == 0
    assert len(ids(r, "limiter", kinds=["edit"])) == 1


def test_cjk_two_and_three_characters(store: Store, tmp_path: Path) -> None:
    commit(store, ev("prompt", "我想用数据库存储会话"), ev("prompt", "数学"))
    r = Reader(tmp_path / "db")
    assert len(ids(r, "数据")) == 1
    assert len(ids(r, "数据库")) == 1
    assert len(ids(r, "据库存")) == 1
    assert ids(r, "库数") == []


def test_a_later_revision_replaces_the_indexed_text(store: Store, tmp_path: Path) -> None:
    commit(store, ev("message", "first words", key="m1", revision=1))
    commit(store, ev("message", "first words then more", key="m1", revision=2))
    commit(store, ev("message", "stale", key="m1", revision=1))
    r = Reader(tmp_path / "db")
    assert len(ids(r, "more")) == 1 and ids(r, "stale") == []


def test_titles_are_hits_and_follow_changes(store: Store, tmp_path: Path) -> None:
    facts = E.SessionFacts("codex:s1", "codex", "s1", title="Zebra migration")
    commit(store, ev("prompt", "hello"), facts=[facts])
    r = Reader(tmp_path / "db")
    hits = r.search("zebra")["hits"]
    assert [(h["kind"], h["event_id"], h["session_id"]) for h in hits] == [
        ("title", None, "codex:s1")]
    commit(store, facts=[E.SessionFacts("codex:s1", "codex", "s1", title="Yak shaving")])
    assert r.search("zebra")["hits"] == [] and len(r.search("yak")["hits"]) == 1


def test_pages_have_no_gaps_or_repeats_while_events_are_added(
    store: Store, tmp_path: Path
) -> None:
    rng = random.Random(7)
    commit(store, *[ev("prompt", "needle " + "x " * rng.randint(0, 30),
                       ts=f"2026-01-{rng.randint(1, 28):02d}T00:00:00.000Z") for _ in range(230)])
    r = Reader(tmp_path / "db")
    for order in ("rank", "recent"):
        before = set(ids(r, "needle"))
        seen: list[int] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"q": "needle", "limit": 17, "order": order}
            if cursor:
                params["cursor"] = cursor
            page = search_query(r, params)
            seen.extend(h["event_id"] for h in page["hits"])
            if order == "recent":  # rank's pages are exact only while nothing is added
                commit(store, ev("prompt", "needle new"), ev("prompt", "unrelated"))
            cursor = page["next_cursor"]
            if not cursor:
                break
        assert len(seen) == len(set(seen)), order
        assert set(seen) == before, order


def test_bad_query_is_a_json_rpc_error_not_sqlite(store: Store, tmp_path: Path) -> None:
    r = Reader(tmp_path / "db")
    with pytest.raises(RpcError) as info:
        search_query(r, {"q": 'say "hi'})
    assert info.value.code == -32602
    assert "unclosed quote" in info.value.message and "fts5" not in info.value.message.lower()
    with pytest.raises(RpcError, match="cursor"):
        search_query(r, {"q": "hi", "cursor": "garbage!"})


def test_query_plan_does_not_scan_events(store: Store, tmp_path: Path) -> None:
    commit(store, ev("prompt", "plan me"))
    r = Reader(tmp_path / "db")
    plans: list[str] = []
    real = r.conn.execute

    def spy(sql: str, *args: Any) -> Any:
        if "search_index f" in sql:
            plans.extend(str(row[3]) for row in real("EXPLAIN QUERY PLAN " + sql, *args))
        return real(sql, *args)

    r.conn = type("C", (), {"execute": staticmethod(spy),
                            "__enter__": lambda s: s, "__exit__": lambda s, *a: None})()
    for order in ("rank", "recent"):
        r.search("plan", agent="codex", session_id="codex:s1", kinds=["prompt"], since_ts="2020",
                 order=order)
        r.search("plan", order=order)
    assert plans
    assert not [p for p in plans if p.startswith("SCAN e") or p.startswith("SCAN s ")], plans


def test_an_existing_store_is_indexed_in_resumable_chunks(tmp_path: Path) -> None:
    db = tmp_path / "db"
    s = Store(db)
    commit(s, *[ev("prompt", f"old {i}") for i in range(50)])
    s.close()
    # As a store of schema 4 would be when schema 5 arrives: nothing indexed.
    conn = apsw.Connection(str(db))
    with conn:
        conn.execute("DELETE FROM search_index")
        conn.execute("UPDATE counters SET value=(SELECT MAX(id) FROM events)"
                     " WHERE name='search_target'")
    conn.close()
    s = Store(db)
    r = Reader(db)
    assert r.search_progress()["state"] == "building"
    assert s.search_index.build_step(chunk=20) is True
    s.close()  # killed between chunks: the committed chunk stays, the rest resumes
    s = Store(db)
    assert r.search_progress()["indexed_upto"] == 20
    commit(s, ev("prompt", "old new"))  # indexed by its commit while the build goes on
    while s.search_index.build_step(chunk=20):
        pass
    assert r.search_progress() == {"state": "ready", "indexed_upto": 50, "target": 50}
    assert len(ids(r, "old")) == 51
    assert SEARCH_CHUNK_IDS > 1000
    s.close()


def _index_rows(db: Path) -> list[tuple[int, str]]:
    """What the index holds, as (rowid, the tokens an instance of each term maps to)."""
    conn = apsw.Connection(str(db))
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, search_index, instance)")
    rows = [(int(d), str(t)) for d, t in conn.execute("SELECT doc, term FROM temp.v ORDER BY doc, term, offset")]
    conn.close()
    return rows


def test_a_deferred_index_is_built_after_the_backfill_the_same(tmp_path: Path) -> None:
    """A cold backfill leaves its events to the build (SearchIndex.defer); built,
    the index holds exactly what indexing in every commit holds, a revision and a
    title included, and an event committed after the deferral ended is indexed by its
    commit."""

    def fill(s: Store) -> None:
        commit(s, ev("prompt", "deploy the RateLimiter", key="p1"), ev("command", "make test"),
               facts=[E.SessionFacts("codex:s1", "codex", "s1", title="deploy day")])
        commit(s, ev("message", "short", key="m1"), ev("read", "/src/rate_limiter.py"))
        commit(s, ev("message", "short and longer", key="m1", revision=2))

    inline = Store(tmp_path / "inline")
    fill(inline)
    commit(inline, ev("prompt", "after live", key="late"))
    inline.close()

    s = Store(tmp_path / "deferred")
    r = Reader(tmp_path / "deferred")
    assert s.search_index.defer() is True
    fill(s)
    assert ids(r, "deploy") == [None]  # the title only: indexed by its commit
    assert r.search_progress() == {"state": "building", "indexed_upto": 0, "target": 4}
    s.close()  # killed during the backfill: the backlog is in the store
    s = Store(tmp_path / "deferred")
    assert s.search_index.backlog() and s.search_index.defer() is False  # a build is pending
    s.search_index.end_deferral()
    commit(s, ev("prompt", "after live", key="late"))
    assert ids(r, "after live") == [6]  # (id 5 went to the ignored revision row)
    while s.search_index.build_step(chunk=2):
        pass
    assert r.search_progress() == {"state": "ready", "indexed_upto": 4, "target": 4}
    assert ids(r, "rate limiter", order="recent") == [4, 1]
    assert ids(r, "longer") == [3]
    s.close()
    built = _index_rows(tmp_path / "deferred")
    assert len(built) == 17 and built == _index_rows(tmp_path / "inline")


def test_session_turns_read_back_step_by_step(store: Store, tmp_path: Path) -> None:
    def call(cid: str, tool: str, **inp: Any) -> E.Event:
        e = ev("tool_call", call_id=cid, tool=tool, turn_id=turn)
        e.data = {"input": inp}
        return e

    turn = "t1"
    cmd = ev("command", "pytest -q", call_id="c1", turn_id=turn)
    cmd.data.update(exit_code=1, duration_ms=2500)
    usage = ev("usage", turn_id=turn)
    usage.data = {"total_tokens": 120}
    commit(store, ev("prompt", "run the tests", turn_id=turn), call("c1", "shell", command="x"),
           cmd, call("c2", "Grep", pattern="def main"), call("c3", "Task", description="look"),
           call("c4", "mcp__gh__list", q="x"), usage, ev("message", "they fail", turn_id=turn))
    turn = "t2"
    commit(store, ev("prompt", "fix it", turn_id=turn), ev("read", "/w/a.py", turn_id=turn),
           ev("message", "fixed", turn_id=turn))
    r = Reader(tmp_path / "db")
    page = r.session_turns("codex:s1")
    t1, t2 = page["turns"]
    assert (t1["prompt"], t1["answer"], t1["tokens"]) == ("run the tests", "they fail", 120)
    assert [(s_["kind"], s_["summary"]) for s_ in t1["steps"]] == [
        ("command", "pytest -q"), ("grep", "def main"), ("subagent", "look"),
        ("mcp", "mcp__gh__list")]
    assert t1["steps"][0]["exit_code"] == 1 and t1["steps"][0]["duration_ms"] == 2500
    assert [s_["kind"] for s_ in t2["steps"]] == ["read"] and t2["answer"] == "fixed"
    first = r.session_turns("codex:s1", limit=1)
    assert [t["prompt"] for t in first["turns"]] == ["run the tests"]
    rest = r.session_turns("codex:s1", after_id=first["next_after_id"], limit=1)
    assert [t["prompt"] for t in rest["turns"]] == ["fix it"] and rest["next_after_id"] is None
    plans = [str(row[3]) for row in r.conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM events WHERE session_id = ? AND id > ?"
        " AND subagent_id IS NULL AND kind IN ('prompt') ORDER BY id LIMIT 2000", ("x", 0))]
    # The session's key looked up (schema 16), then its events walked by events_session.
    assert [p for p in plans if p.startswith(("SCAN", "SEARCH"))] == [
        "SEARCH esk USING COVERING INDEX sqlite_autoindex_session_keys_1 (id=?)",
        "SEARCH er USING INDEX events_session (session_key=? AND rowid>?)",
    ], plans


def test_live_lines_name_the_session_and_summarize_the_step() -> None:
    from agentsrc_daemon.cli.search import step_line
    from agentsrc_daemon.cli.sessions import _live_line

    ev_ = {"kind": "command", "session_id": "codex:abcdef123456", "ts": "2026-01-01T10:11:12Z",
           "command": "pytest -q", "exit_code": 1, "duration_ms": 2500, "tool": "shell"}
    line = _live_line(ev_, ("abcdef12", "/w/proj", "/w/proj/sub"))
    assert line == "10:11:12  abcdef12  proj              $ pytest -q  [exit 1, 2.5s]"
    assert step_line({"kind": "edit", "tool": "Write", "summary": "a.py", "op": "create",
                      "depth": 1}) == "  Write a.py (create)"
    assert step_line({"kind": "read", "summary": "x" * 300}).endswith("…")
    assert len(step_line({"kind": "read", "summary": "x" * 300}, full=True)) == 305


# ---- the real daemon ------------------------------------------------------------------


@pytest.mark.slow
def test_corpus_prompts_are_found_in_english_and_cjk(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    d = daemon_factory(home).start()
    d.wait_live()
    prompts = d.call("events.list", {"kinds": ["prompt"], "limit": 5000})["events"]
    cjk = [p for p in prompts if any("\u4e00" <= ch <= "\u9fff" for ch in p.get("text") or "")]
    assert cjk, "the corpus holds Chinese prompts"
    checked = 0
    for p in cjk[:10]:
        text = p["text"]
        run = next(text[i:i + 3] for i in range(len(text))
                   if all("\u4e00" <= ch <= "\u9fff" for ch in text[i:i + 3]))
        for q in (run[:2], run):
            hits = d.call("search.query", {"q": q, "session": p["session_id"], "kind": "prompt",
                                           "limit": 1000})["hits"]
            assert p["id"] in [h["event_id"] for h in hits], q
            checked += 1
    english = [p for p in prompts if len((p.get("text") or "").split()) >= 4
               and (p.get("text") or "").isascii()]
    assert english
    for p in english[:10]:
        words = [w for w in p["text"].split() if w.isalpha()][:3]
        if len(words) < 2:
            continue
        phrase = '"' + " ".join(words) + '"' if " ".join(words) in " ".join(p["text"].split()) \
            else " ".join(words)
        hits = d.call("search.query", {"q": phrase, "session": p["session_id"],
                                       "kind": "prompt", "limit": 1000})["hits"]
        assert p["id"] in [h["event_id"] for h in hits], phrase
        hit = next(h for h in hits if h["event_id"] == p["id"])
        assert hit["marks"] and hit["session_id"] == p["session_id"]
        checked += 1
    assert checked >= 10
    out = d.cli("search", "the", "--limit", "3").stdout
    assert len(out.splitlines()) == 3 and "\x1b[" not in out  # piped: plain
    # A session read back: log (and --json), show's turns.
    sid = max(d.call("sessions.list", {"limit": 100})["sessions"], key=lambda s: s["prompts"])["id"]
    turns = d.call("sessions.turns", {"id": sid, "limit": 1000})["turns"]
    assert len(turns) >= 10 and all(t["prompt"] for t in turns)
    as_json = orjson.loads(d.cli("log", sid, "--json").stdout)
    assert as_json["turns"] == turns
    text = d.cli("log", sid).stdout
    assert text.count("── turn ") == len(turns) and "$ " in text
    assert len(d.cli("log", sid, "--full").stdout) >= len(text)
    shown = d.cli("show", sid).stdout
    assert f"{len(turns):>3}. " in shown
    bad = d.cli("search", '"unclosed', check=False)
    assert bad.returncode == 2 and "unclosed quote" in bad.stderr


@pytest.mark.slow
def test_a_planted_secret_is_never_a_hit(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    rng = random.Random()
    secret = fragments("AK", "IA") + "".join(rng.choice(string.ascii_uppercase) for _ in range(16))
    f = claude_session(d.home)
    f.write_bytes(claude_line("u1", text=f"deploy with key {secret} please"))
    d.start()
    d.wait_live()
    wait_for(lambda: d.call("search.query", {"q": "deploy"})["hits"])
    assert d.call("search.query", {"q": secret})["hits"] == []
    assert d.call("search.query", {"q": secret[:8] + "*"})["hits"] == []
    assert d.call("search.query", {"q": "REDACTED"})["hits"]
    tailed = d.cli("tail", "--since-id", "0", "--count", "1", "--kind", "prompt", "--agent", "claude-code",
                   "--project", "/work/proj").stdout
    assert "REDACTED" in tailed and secret not in tailed


@pytest.mark.slow
def test_kill_9_during_the_index_build_resumes(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    d = daemon_factory(home).start()
    d.wait_live()
    expected = len(d.call("search.query", {"q": "the", "limit": 1000, "order": "recent"})["hits"])
    d.stop()
    db = d.data_dir / "agentsrc.db"
    conn = apsw.Connection(str(db))
    with conn:  # the store as schema 4 left it: no index yet
        conn.execute("DELETE FROM search_index")
        conn.execute("DELETE FROM search_titles")
        conn.execute("UPDATE counters SET value=(SELECT MAX(id) FROM events)"
                     " WHERE name='search_target'")
        conn.execute("UPDATE counters SET value=0 WHERE name IN ('search_done',"
                     " 'search_titles_done')")
    conn.close()
    d.env["AGENTSRC_SEARCH_CHUNK"] = "50"
    d.start()
    wait_for(lambda: d.call("status")["search_index"]["indexed_upto"] > 0, timeout=30)
    d.stop(signal.SIGKILL)
    d.start()
    st = wait_for(lambda: (s := d.call("status")["search_index"])["state"] == "ready" and s,
                  timeout=60)
    assert st["indexed_upto"] == st["target"]
    got = d.call("search.query", {"q": "the", "limit": 1000, "order": "recent"})["hits"]
    assert len(got) == expected
    assert len({h["event_id"] or h["session_id"] for h in got}) == expected


def test_status_says_indexing_until_the_deferred_build_is_done(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    """A cold backfill leaves the search index to a build that runs once every file is
    read (issue 31): status says "indexing", with what is left, until the build is
    done, and "live" only then: a person who sees live meets no slow answer."""
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    d = daemon_factory(home, AGENTSRC_SEARCH_DEFER_MIN_BACKLOG="1",
                       AGENTSRC_SEARCH_CHUNK="200").start()
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        st = d.call("status")
        seen.append(st)
        if st["state"] == "live":
            break
    states = [s["state"] for s in seen]
    assert states[-1] == "live"
    # In order: catching up, indexing, live; never back.
    order = [k for i, k in enumerate(states) if i == 0 or states[i - 1] != k]
    assert order == ["catching_up", "indexing", "live"], order
    indexing = [s for s in seen if s["state"] == "indexing"]
    for s in indexing:
        left = s["indexing"]["search_build_left"]
        progress = s["search_index"]
        # What is left is what the search index's progress says it has still to do
        # (both read in the one status: the build advances between the two reads).
        assert 0 <= progress["target"] - progress["indexed_upto"] <= left
        assert s["indexing"]["reprice"] is False
    assert indexing[0]["indexing"]["search_build_left"] > 0
    final = seen[-1]
    assert final["indexing"] is None
    assert final["search_index"]["state"] == "ready"
    assert final["search_index"]["indexed_upto"] == final["search_index"]["target"]
    # The ingest thread logs "indexed" just after the step that ended the work, which
    # status may have reported a moment before.
    wait_for(lambda: '"indexed"' in d.log(), timeout=10)
    log = [orjson.loads(line) for line in d.log().splitlines() if line.startswith("{")]
    live = [e for e in log if e.get("event") == "live"]
    assert [e["indexing"] for e in live] == [True]
    assert [e["event"] for e in log].count("indexed") == 1


def test_sessions_filters_sorts_and_pages(store: Store, tmp_path: Path) -> None:
    from agentsrc_daemon.rpc.methods import sessions_list

    for i in range(7):
        sid = f"codex:p{i}"
        commit(store, *[ev("tool_call", session=sid, tool="shell",
                           ts=f"2026-02-0{i + 1}T00:00:00.000Z") for _ in range(i)],
               ev("prompt", "zebra" if i % 2 else "yak", session=sid,
                  ts=f"2026-02-0{i + 1}T00:00:00.000Z"),
               facts=[E.SessionFacts(sid, "codex", f"p{i}", model="m1" if i < 3 else "m2",
                                     cwd="/w/a" if i < 4 else "/w/b")])
    r = Reader(tmp_path / "db")

    def listed(**p: Any) -> list[str]:
        return [s["id"] for s in sessions_list(r, {"limit": 100, **p})["sessions"]]

    assert listed() == [f"codex:p{i}" for i in range(6, -1, -1)]
    assert listed(sort="tools")[0] == "codex:p6"
    assert listed(model="m1") == ["codex:p2", "codex:p1", "codex:p0"]
    assert listed(cwd="/w/b") == ["codex:p6", "codex:p5", "codex:p4"]
    assert listed(search="zebra") == ["codex:p5", "codex:p3", "codex:p1"]
    assert listed(since="2026-02-05T00:00:00Z", until="2026-02-07T00:00:00Z") == [
        "codex:p5", "codex:p4"]
    seen: list[str] = []
    cursor = None
    while True:
        page = sessions_list(r, {"limit": 3, "sort": "tools", **({"cursor": cursor} if cursor else {})})
        seen.extend(s["id"] for s in page["sessions"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(listed()) and len(seen) == 7
    with pytest.raises(RpcError, match="sort must be"):
        sessions_list(r, {"sort": "size"})
    plan = [str(row[3]) for row in r.conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE id IN (SELECT COALESCE(ek.id,"
        f" t.session_id) FROM search_index f{EVENT_HIT_JOINS}"
        " LEFT JOIN search_titles t ON f.rowid < 0 AND t.id = -f.rowid"
        " WHERE search_index MATCH 'zebra')")]
    assert not [p for p in plan if p.startswith(("SCAN e", "MATERIALIZE"))], plan
    assert "SEARCH e USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN" in plan, plan


def test_times_for_a_person() -> None:
    from agentsrc_daemon.cli.render import local_time

    assert local_time("2026-04-09T14:16:00.000Z", relative=True,
                      now=1775744160.0 + 3 * 3600) == "3h ago"
    assert len(local_time("2026-04-09T14:16:00.000Z")) == len("2026-04-09 14:16")
    assert local_time(None) == ""
