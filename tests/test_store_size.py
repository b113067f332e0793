"""The compact store (issue 10): packed event data, the schema 7 -> 8 migration run by a
real daemon (progress in status, kill -9 at several points, resumed, the result equal
to a store built fresh), and the WAL's bound during a big backfill."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import orjson
from answers import differences, socket_answers

from agentsrc_daemon.store import packing
from agentsrc_daemon.store.connection import WAL_LIMIT_BYTES, connect
from agentsrc_daemon.store.migrations.runner import run_migration
from agentsrc_daemon.store.migrations.versions import MIGRATIONS, SCHEMA_VERSION

from corpus import corpus_home
from harness import (
    REPO,
    SID,
    DaemonFactory,
    claude_line,
    copy_tree,
    insert_event_row,
    schema_copy,
    wait_for,
)


def test_pack_is_smaller_and_gives_back_the_same_bytes() -> None:
    short = b'{"chars":12}'
    assert packing.pack(short) == short  # under MIN_PACK_BYTES: as written
    cmd = orjson.dumps({"command": "git status && git diff --stat", "cwd": "/home/u/p",
                        "exit_code": 0, "interrupted": False, "duration_ms": 41,
                        "is_error": False, "output_chars": 123})
    packed = packing.pack(cmd)
    assert packed[:1] == packing.PACKED_V1
    assert len(packed) < len(cmd) * 0.75
    assert packing.unpack(packed) == cmd
    assert packing.unpack(cmd) == cmd  # unpacked values read as they are
    incompressible = orjson.dumps({"text": os.urandom(60).hex()[:60]})
    assert packing.unpack(packing.pack(incompressible)) == incompressible


def test_queries_read_the_packed_data_as_json(tmp_path: Path) -> None:
    conn = connect(tmp_path / "db")
    for v in range(SCHEMA_VERSION):
        run_migration(conn, MIGRATIONS[v])
    data = orjson.dumps({"command": "make test " * 20, "exit_code": 2})
    insert_event_row(conn, "s", key_hash=b"\x01", kind="command", adapter="codex", source_id=1,
                     offset=0, packed=packing.pack(data))
    row = conn.execute(
        "SELECT data, json_extract(data, '$.exit_code'), length(packed) < length(data)"
        " FROM events"
    ).fetchone()
    assert row == (data, 2, 1)


# ---- a store of schema 7, as main's code left it ------------------------------------------


def schema_7_copy(fresh_db: Path, out_db: Path) -> None:
    schema_copy(fresh_db, out_db, 7)


def test_the_schema_7_copy_is_the_old_schema(tmp_path: Path) -> None:
    """The helper above really makes what main's code made: the same columns as the
    old migrations give, the data unpacked JSON."""
    fresh = connect(tmp_path / "fresh.db")
    for v in range(SCHEMA_VERSION):
        run_migration(fresh, MIGRATIONS[v])
    data = orjson.dumps({"text": "hello " * 30})
    insert_event_row(fresh, "s", key_hash=b"\x01", kind="prompt", adapter="codex", source_id=1,
                     offset=0, packed=packing.pack(data))
    state = orjson.dumps({"turn": 3, "cwd": "/home/u/p", "pending": {"c1": ["shell", "git log"] * 4}})
    fresh.execute(
        "INSERT INTO sources(path, adapter, mode, state) VALUES('/a.jsonl', 'codex', 'jsonl', ?)",
        (packing.pack(state),),
    )
    assert packing.pack(state)[:1] == packing.PACKED_V1
    fresh.close()
    schema_7_copy(tmp_path / "fresh.db", tmp_path / "v7.db")
    old = apsw.Connection(str(tmp_path / "v7.db"), flags=apsw.SQLITE_OPEN_READONLY)
    cols = [r[1] for r in old.execute("PRAGMA table_xinfo(events)")]
    assert cols[13] == "data" and "packed" not in cols
    assert old.execute("SELECT data FROM events").fetchall() == [(data,)]
    assert old.execute("SELECT state FROM sources").fetchall() == [(state,)]
    assert isinstance(MIGRATIONS[6].body, str) and "sink_event_revised" in MIGRATIONS[6].body


def _status(d: Any) -> dict[str, Any] | None:
    try:
        return dict(d.call("status"))
    except Exception:  # noqa: BLE001 - between a kill and the restart's socket
        return None


def _migrate_killed(
    d: Any, db: Path, kill_at: tuple[float, ...], check: Callable[[apsw.Connection], None]
) -> list[dict[str, Any]]:
    """The daemon started on a store it must migrate and killed with SIGKILL once
    status says the migration under way has reached each fraction of ``kill_at``;
    ``check`` reads what each kill left; then started again until live. Returns what
    status said of the migration."""
    seen: list[dict[str, Any]] = []
    for fraction in kill_at:
        d.start(wait=False)
        while True:
            st = _status(d)
            if st is not None and st["state"] == "migrating":
                seen.append(st["migration"])
                if st["migration"]["fraction"] >= fraction:
                    break
            assert st is None or st["state"] == "migrating", st  # not done before the kill
            time.sleep(0.01)
        d.stop(signal.SIGKILL)
        conn = connect(db, readonly=True)
        try:
            check(conn)
        finally:
            conn.close()
    d.start(wait=False)
    wait_for(lambda: (st := _status(d)) is not None and st["state"] == "live", timeout=300)
    # Schema 19 brought the requests' costs: the stored history is priced again from its
    # stored usage (the store had no prices' fingerprint) before answers are compared.
    wait_for(lambda: d.call("status")["reprice"] is None, timeout=300)
    return seen


@dataclass
class _OldStore:
    """The corpus backfilled by a fresh daemon (its answers, its store), and a daemon
    set up on a copy of that store at an older schema, to migrate it in small chunks."""

    expected: dict[str, bytes]
    fresh_db: Path
    daemon: Any
    db: Path


def _old_store(
    tmp_path: Path, daemon_factory: DaemonFactory, version: int, chunk: int
) -> _OldStore:
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    fresh = daemon_factory(home, AGENTSRC_WORKERS="0").start()
    fresh.wait_live(timeout=300)
    expected = socket_answers(lambda m, p: fresh.call(m, p))
    fresh.stop()
    old = tmp_path / f"v{version}.db"
    schema_copy(fresh.data_dir / "agentsrc.db", old, version)
    d = daemon_factory(home, AGENTSRC_MIGRATE_CHUNK=str(chunk), AGENTSRC_WORKERS="0")
    d.data_dir.mkdir(mode=0o700, parents=True)
    db = d.data_dir / "agentsrc.db"
    shutil.copyfile(old, db)
    os.chmod(db, 0o600)
    return _OldStore(expected, fresh.data_dir / "agentsrc.db", d, db)


def test_a_schema_7_store_migrates_in_chunks_survives_kill_9_and_equals_a_fresh_one(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    chunk = 200
    old = _old_store(tmp_path, daemon_factory, 7, chunk)
    expected, d, db = old.expected, old.daemon, old.db

    def packed_up_to_the_mark(conn: apsw.Connection) -> None:
        # What the kill left: schema 7 still, the rows up to the high-water mark (a
        # chunk's end) packed, none after it: each chunk whole or not at all.
        assert conn.execute("PRAGMA user_version").fetchone() == (7,)
        counters = dict(conn.execute("SELECT name, value FROM counters"))
        done, target = counters["pack_done"], counters["pack_target"]
        # A whole number of chunks, or all of them (killed before the finish).
        assert 0 < done <= target and (done % chunk == 0 or done == target)
        assert conn.execute(
            "SELECT COUNT(*) FROM events WHERE id <= ? AND pack(packed) IS NOT packed", (done,)
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT COUNT(*) FROM events WHERE id > ? AND substr(packed, 1, 1) = x'01'", (done,)
        ).fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone() == (counters["events"],)

    seen = _migrate_killed(d, db, (0.05, 0.4, 0.8), packed_up_to_the_mark)
    fractions = [m["fraction"] for m in seen]
    assert fractions[-1] >= 0.8 and min(fractions) < 0.4
    # Before the migration has read its target (the first milliseconds) the total is 0.
    assert all(m["name"] == "pack" and m["done"] <= m["total"] for m in seen)
    assert all(m["fraction"] == round(m["done"] / m["total"], 4) for m in seen if m["total"])
    assert max(m["total"] for m in seen) == min(m["total"] for m in seen if m["total"]) > 0
    got = socket_answers(lambda m, p: d.call(m, p))
    assert differences(expected, got) == []
    conn = connect(db, readonly=True)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute(
        "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'pack_triggers'"
    ).fetchone() == (0,)
    trigger = conn.execute(
        "SELECT sql FROM sqlite_schema WHERE name = 'sink_event_revised'"
    ).fetchone()[0]
    assert "AFTER UPDATE OF packed, session_key, turn_key, subagent_id, ts ON event_rows" in trigger
    packed = conn.execute(
        "SELECT SUM(substr(packed, 1, 1) = x'01'), COUNT(*) FROM events"
    ).fetchone()
    assert packed[0] > packed[1] // 2  # most rows packed, the rest too short to gain
    # The states too (migrations/chunked.PACK_STATES, after the events'): the fresh store's, packed
    # as its writer packed them, but for the files the live daemon has saved since
    # (OpenCode's database is polled each round: a later updated_at).
    built = connect(old.fresh_db, readonly=True)
    states = {p: (s, t) for p, s, t in conn.execute("SELECT path, state, updated_at FROM sources")}
    want = {p: (s, t) for p, s, t in built.execute("SELECT path, state, updated_at FROM sources")}
    assert states.keys() == want.keys()
    saved = {p for p in states if states[p][1] != want[p][1]}
    assert all(states[p][1] > want[p][1] for p in saved)
    assert len(saved) < len(states) // 4, len(saved)
    assert {p: s for p, (s, _) in states.items() if p not in saved} == {
        p: s for p, (s, _) in want.items() if p not in saved}
    assert sum(1 for s, _ in states.values() if s and s[:1] == packing.PACKED_V1) > len(states) // 2
    built.close()
    conn.close()
    # Compacted (the daemon stopped): the file shrinks, the answers stay.
    d.stop()
    before = db.stat().st_size
    out = subprocess.run(
        [sys.executable, str(REPO / "tools" / "compact_store.py"), str(d.data_dir)],
        capture_output=True, text=True, check=True, env={**os.environ, **d.env},
    )
    assert db.stat().st_size < before * 0.85, out.stdout
    d.start()
    d.wait_live()
    assert differences(expected, socket_answers(lambda m, p: d.call(m, p))) == []


def test_a_schema_15_store_gets_integer_session_keys_in_chunks_through_kill_9(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    """15 -> 16: the rows keyed in place in id chunks, each whole or not at all across
    kill -9s; the store then answers every socket method as a fresh one, and its rows
    hold no text id."""
    chunk = 300
    old = _old_store(tmp_path, daemon_factory, 15, chunk)
    expected, d, db = old.expected, old.daemon, old.db
    fresh_db = connect(old.fresh_db, readonly=True)
    sessions, turns, adapters, events = fresh_db.execute(
        "SELECT COUNT(DISTINCT session_id), COUNT(DISTINCT turn_id), COUNT(DISTINCT adapter),"
        " COUNT(*) FROM events"
    ).fetchone()
    copies = fresh_db.execute(
        "SELECT event_id, session_id, turn_id, subagent_id FROM event_copies"
        " ORDER BY event_id, session_id"
    ).fetchall()
    turn_rows = fresh_db.execute("SELECT * FROM turns ORDER BY session_id, turn_id").fetchall()
    assert len(copies) > 100 and len(turn_rows) > 100
    # The adapters of the corpus's transcripts: Codex, Claude Code, Gemini, Copilot,
    # OpenCode, Qwen Code, Amp, Cursor, Cline and Continue.
    assert adapters == 10
    fresh_db.close()

    def keyed_up_to_the_mark(conn: apsw.Connection) -> None:
        assert conn.execute("PRAGMA user_version").fetchone() == (15,)
        counters = dict(conn.execute("SELECT name, value FROM counters"))
        done, target = counters["keys_done"], counters["keys_target"]
        # A whole number of chunks, or all of them (a kill after the last chunk, before
        # the finish's transaction: still version 15, no view).
        assert 0 < done <= target and (done % chunk == 0 or done == target)
        assert conn.execute(
            "SELECT COUNT(*) FROM event_rows WHERE id <= ?"
            " AND (session_key IS NULL OR adapter_key IS NULL OR session_id != ''"
            " OR turn_id IS NOT NULL OR adapter != '')", (done,)
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT COUNT(*) FROM event_rows WHERE id > ?"
            " AND (session_key IS NOT NULL OR turn_key IS NOT NULL OR adapter_key IS NOT NULL"
            " OR session_id = '' OR adapter = '')", (done,)
        ).fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM event_rows").fetchone() == (events,)
        # The turns move with the chunk of their events: turn_rows holds exactly the
        # turns the keyed events are in (and turns_text, until the finish, every turn).
        moved = conn.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT sk.id AS sid, tk.id AS tid"
            "  FROM event_rows r JOIN session_keys sk ON sk.key = r.session_key"
            "  JOIN turn_keys tk ON tk.key = r.turn_key WHERE r.id <= ?) c"
            " JOIN turns_text x ON x.session_id = c.sid AND x.turn_id = c.tid", (done,)
        ).fetchone()[0]
        assert 0 < moved <= len(turn_rows) and (moved < len(turn_rows) or done == target)
        assert conn.execute("SELECT COUNT(*) FROM turn_rows").fetchone() == (moved,)
        assert conn.execute("SELECT COUNT(*) FROM turns_text").fetchone() == (len(turn_rows),)
        # No query is served mid-way: the view comes with the version bump.
        assert conn.execute(
            "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'events'"
        ).fetchone() == (0,)

    seen = _migrate_killed(d, db, (0.1, 0.5, 0.9), keyed_up_to_the_mark)
    assert {m["name"] for m in seen} == {"keys"}
    assert max(m["fraction"] for m in seen) >= 0.9
    assert differences(expected, socket_answers(lambda m, p: d.call(m, p))) == []
    conn = connect(db, readonly=True)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT session_key), SUM(session_id = ''),"
        " SUM(turn_id IS NULL), COUNT(DISTINCT turn_key), COUNT(DISTINCT adapter_key),"
        " SUM(adapter = '') FROM event_rows"
    ).fetchone() == (events, sessions, events, events, turns, adapters, events)
    assert conn.execute("SELECT COUNT(*) FROM adapter_keys").fetchone() == (adapters,)
    # The copies and the turns, keyed, read back through their views as they were.
    assert conn.execute(
        "SELECT event_id, session_id, turn_id, subagent_id FROM event_copies"
        " ORDER BY event_id, session_id"
    ).fetchall() == copies
    assert conn.execute("SELECT * FROM turns ORDER BY session_id, turn_id").fetchall() == turn_rows
    assert conn.execute(
        "SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('event_copies_text', 'turns_text')"
    ).fetchone() == (0,)
    assert conn.execute("SELECT COUNT(*) FROM session_keys").fetchone() == (sessions,)
    assert conn.execute("SELECT COUNT(*) FROM turn_keys").fetchone() == (turns,)
    assert conn.execute(
        "SELECT COUNT(*) FROM counters WHERE name LIKE 'keys_%'"
    ).fetchone() == (0,)
    conn.close()
    d.stop()
    before = db.stat().st_size
    subprocess.run(
        [sys.executable, str(REPO / "tools" / "compact_store.py"), str(d.data_dir)],
        capture_output=True, text=True, check=True, env={**os.environ, **d.env},
    )
    assert db.stat().st_size < before * 0.9
    d.start()
    d.wait_live()
    assert differences(expected, socket_answers(lambda m, p: d.call(m, p))) == []


def test_queries_wait_for_the_migration_and_status_answers(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    fresh = daemon_factory(home, AGENTSRC_WORKERS="0").start()
    fresh.wait_live(timeout=300)
    n = fresh.call("status")["events"]
    fresh.stop()
    schema_7_copy(fresh.data_dir / "agentsrc.db", tmp_path / "v7.db")
    d = daemon_factory(home, AGENTSRC_MIGRATE_CHUNK="100", AGENTSRC_WORKERS="0")
    d.data_dir.mkdir(mode=0o700, parents=True)
    shutil.copyfile(tmp_path / "v7.db", d.data_dir / "agentsrc.db")
    d.start(wait=False)
    wait_for(lambda: (st := _status(d)) is not None and st["state"] == "migrating", timeout=60)
    # A query sent during the migration is answered once it is over, in full.
    listed = d.call("events.list", {"limit": 5})
    assert [e["id"] for e in listed["events"]] == [1, 2, 3, 4, 5]
    assert d.call("status")["events"] == n


# ---- the WAL's bound --------------------------------------------------------------------


def _big_home(home: Path, files: int, lines: int, text_bytes: int) -> int:
    """Claude sessions of long prompts that do not compress (random hex): the store's
    writes are close to the transcripts' size."""
    root = home / ".claude" / "projects" / "-work-proj"
    root.mkdir(parents=True)
    total = 0
    for f in range(files):
        sid = f"{f:08d}-2222-3333-4444-555555555555"
        with (root / f"{sid}.jsonl").open("wb") as out:
            for i in range(lines):
                line = claude_line(f"u{f}-{i}", text=os.urandom(text_bytes // 2).hex(),
                                   sessionId=sid)
                total += out.write(line)
    assert SID  # the harness's own session id is not one of these
    return total


def test_the_wal_stays_under_its_bound_during_a_big_backfill_and_is_emptied_when_idle(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    home = tmp_path / "home"
    written = _big_home(home, files=24, lines=500, text_bytes=12_000)
    assert written > 2 * WAL_LIMIT_BYTES
    d = daemon_factory(home, AGENTSRC_SCAN="0")  # random text: not what is measured here
    wal = d.data_dir / "agentsrc.db-wal"
    peak = 0
    samples = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak, samples
        while not stop.is_set():
            try:
                peak = max(peak, wal.stat().st_size)
                samples += 1
            except FileNotFoundError:
                pass
            time.sleep(0.005)

    reads = 0

    def read() -> None:  # readers on other connections the whole time
        nonlocal reads
        while not stop.is_set():
            if _status(d) is None:
                time.sleep(0.05)
                continue
            d.call("events.list", {"limit": 200})
            d.call("search.query", {"q": "hello", "limit": 50})
            reads += 1

    threads = [threading.Thread(target=sample), threading.Thread(target=read)]
    for t in threads:
        t.start()
    try:
        d.start()
        d.wait_live(timeout=600)
        # Per line a prompt and its turn's start; per file one turn end fewer than lines.
        assert d.call("status")["events"] == 24 * (500 + 500 + 499)
        # Idle: the WAL is truncated to nothing, once the search index's build (after
        # live: a backfill this large defers it) is done: 20-30 s on a loaded machine.
        wait_for(lambda: wal.exists() and wal.stat().st_size == 0, timeout=120)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert samples > 100 and reads > 10
    print(f"WAL peak {peak / 2**20:.1f} MiB over {samples} samples, {reads} reads")
    assert WAL_LIMIT_BYTES // 8 < peak <= WAL_LIMIT_BYTES, peak


def _counting_unpacks(monkeypatch: Any) -> tuple[apsw.Connection, list[int]]:
    """A connection with packing's SQL functions, and the stored lengths of the values
    packing.unpack inflates for it (in order)."""
    calls: list[int] = []
    real = packing.unpack

    def counted(stored: bytes | None) -> bytes | None:
        calls.append(len(stored or b""))
        return real(stored)

    monkeypatch.setattr(packing, "unpack", counted)
    conn = apsw.Connection(":memory:")
    packing.register(conn)
    return conn, calls


def test_a_row_read_field_by_field_is_unpacked_once(monkeypatch: Any) -> None:
    """packing's memo: several json_extracts of one row's data unpack it once; another
    value is unpacked afresh; a value past MEMO_MAX_BYTES is not kept."""
    conn, calls = _counting_unpacks(monkeypatch)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, packed BLOB,"
                 " data BLOB GENERATED ALWAYS AS (unpack(packed)) VIRTUAL)")
    small = [orjson.dumps({"a": i, "b": f"value {i}", "pad": "x" * 100}) for i in range(3)]
    big = orjson.dumps({"a": 9, "b": "big", "pad": os.urandom(packing.MEMO_MAX_BYTES).hex()})
    for value in (*small, big):
        assert packing.pack(value)[:1] == packing.PACKED_V1
        conn.execute("INSERT INTO t(packed) VALUES (?)", (packing.pack(value),))
    calls.clear()  # (inserting computes the generated column too)
    rows = list(conn.execute("SELECT json_extract(data, '$.a'), json_extract(data, '$.b'),"
                             " json_extract(data, '$.a') + 1 FROM t"))
    assert rows == [(0, "value 0", 1), (1, "value 1", 2), (2, "value 2", 3), (9, "big", 10)]
    # One unpack per small row; the big one once per field (not kept between them).
    assert calls == [len(packing.pack(v)) for v in small] + [len(packing.pack(big))] * 3
    assert list(conn.execute("SELECT json_extract(data, '$.b') FROM t WHERE id = 1")) == [("value 0",)]


def test_values_packed_in_a_commit_are_unpacked_from_their_json(monkeypatch: Any) -> None:
    """packing.known: inside it, the unpack of a value just packed is the JSON the
    writer holds (no inflating); the same bytes as unpacking; cleared after."""
    conn, calls = _counting_unpacks(monkeypatch)
    values = [orjson.dumps({"a": i, "b": f"value {i}", "pad": "y" * 80}) for i in range(4)]
    pairs = [(packing.pack(v), v) for v in values]
    with packing.known(pairs[:2]):
        got = [conn.execute("SELECT unpack(?)", (p,)).fetchone()[0] for p, _ in pairs]
    assert got == values
    assert calls == [len(pairs[2][0]), len(pairs[3][0])]  # only those not given
    assert not packing._KNOWN
    assert conn.execute("SELECT unpack(?)", (pairs[0][0],)).fetchone()[0] == values[0]
    assert len(calls) == 3
