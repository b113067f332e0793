"""bench/bigstore.py: a store at scale built by the daemon's code. Built tiny here, with
exact counts: two copies of the corpus with every file kept equal the real daemon's
cold backfill of the same two copies (events by kind and type, sessions, files); three
copies with a few of the copies' files on disk keep exactly those as sources, the
others gone; and a daemon started on a copy of the store has nothing to read and goes
live on an append."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import apsw
import orjson
import pytest

from agentsrc_daemon.store import packing
from agentsrc_daemon.store.migrations.versions import SCHEMA_VERSION

from bigstore import DB_NAME, Appended, BigStore, build, checkout, migrated_copy
from corpus import corpus_home, source_files
from harness import DaemonFactory, claude_line, wait_for
from replicate import load_corpus, write_copy


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    packing.register(conn)  # events.data unpacks
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def _profile(db: Path) -> dict[str, object]:
    """What a store holds, counted: events by kind and finding type, sessions by agent
    (with and without events), sources on disk and gone."""
    return {
        "kinds": dict(_rows(db, "SELECT kind || ':' || COALESCE(json_extract(data, '$.type'), ''),"
                                " COUNT(*) FROM events GROUP BY 1")),  # type: ignore[arg-type]
        "agents": dict(_rows(db, "SELECT agent, COUNT(*) FROM sessions GROUP BY agent")),  # type: ignore[arg-type]
        "counters": _rows(db, "SELECT SUM(prompts), SUM(messages), SUM(tool_calls), SUM(errors),"
                              " SUM(input_tokens), SUM(output_tokens) FROM sessions"),
        "copies": _rows(db, "SELECT COUNT(*) FROM event_copies"),
        "turns": _rows(db, "SELECT COUNT(*), COUNT(ended_at) FROM turns"),
        "sources": _rows(db, "SELECT mode, COUNT(*), SUM(gone_at IS NULL) FROM sources GROUP BY mode"),
    }


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bigstore")


@pytest.fixture(scope="module")
def one(out: Path) -> BigStore:
    # Copy 0 alone: the sizes of the builds below are derived from it, so they hold as
    # the corpus grows.
    return build(out, events=1, files=100_000, corpus=corpus_home(), say=False)


@dataclass(frozen=True)
class Sizes:
    """The build arguments that give two and three copies of this corpus."""

    two_events: int  # one event past copy 0
    three_events: int  # half a copy past two copies
    three_files: int  # copy 0's sources, then copy 1's Codex files and 7 of Claude's


@pytest.fixture(scope="module")
def sizes(one: BigStore) -> Sizes:
    per_copy_approx = one.events  # a copy adds a little less than copy 0 (its databases)
    codex = len(source_files(corpus_home())["codex"])
    return Sizes(one.events + 1, one.events + per_copy_approx + per_copy_approx // 2,
                 one.files + codex + 7)


@pytest.fixture(scope="module")
def two(out: Path, sizes: Sizes) -> BigStore:
    # Two copies, every file kept.
    return build(out, events=sizes.two_events, files=100_000, corpus=corpus_home(), say=False)


@pytest.fixture(scope="module")
def three(out: Path, sizes: Sizes) -> BigStore:
    # Three copies; copy 0's sources and some of copy 1's on disk (Sizes.three_files,
    # in the roots' order), the rest gone.
    return build(out, events=sizes.three_events, files=sizes.three_files,
                 corpus=corpus_home(), say=False)


def test_two_copies_equal_the_daemons_backfill_of_them(
    two: BigStore, daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    corpus = load_corpus(corpus_home())
    for copy in range(2):
        write_copy(corpus, home, copy, distinct_paths=True)
    d = daemon_factory(home).start()
    st = d.wait_live(timeout=180)
    d.stop()
    assert (two.copies, two.files_gone) == (2, 0)
    assert (st["events"], st["sessions"], st["files"]) == (two.events, two.sessions, two.files)
    assert _profile(d.data_dir / DB_NAME) == _profile(two.db_path)


def test_copies_are_distinct(one: BigStore, two: BigStore, three: BigStore) -> None:
    """Each copy adds the same events and sessions as the one before: nothing collapsed
    (copy 0 has OpenCode's database besides, copied once by replicate.py)."""
    assert (one.copies, two.copies, three.copies) == (1, 2, 3)
    per_copy = two.events - one.events
    assert 0.9 * one.events < per_copy < one.events
    assert three.events - two.events == per_copy
    assert three.sessions - two.sessions == two.sessions - one.sessions


def test_files_on_disk_are_the_sources_not_gone(three: BigStore, sizes: Sizes) -> None:
    tracked = _rows(three.db_path, "SELECT path, gone_at IS NULL FROM sources")
    on_disk = [str(p) for p, live in tracked if live]
    gone = [str(p) for p, live in tracked if not live]
    assert len(on_disk) == three.files == sizes.three_files
    assert all(Path(p).is_file() for p in on_disk)
    assert len(gone) == three.files_gone == len(tracked) - sizes.three_files
    assert not any(Path(p).exists() for p in gone)
    (events,) = _rows(three.db_path, "SELECT COUNT(*) FROM events")[0]
    (counted,) = _rows(three.db_path, "SELECT value FROM counters WHERE name = 'events'")[0]
    assert events == counted == three.events
    # Cached: asking again builds nothing.
    assert build(Path(three.dir).parent, events=sizes.three_events, files=sizes.three_files,
                 say=False) == three


def test_a_daemon_on_a_checkout_reads_nothing_and_goes_live(
    one: BigStore, three: BigStore, sizes: Sizes, daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    data = checkout(three, tmp_path / "co")
    d = daemon_factory(Path(three.home), AGENTSRC_DATA_DIR=str(data)).start()
    st = d.wait_live(timeout=60)
    (databases,) = _rows(data / DB_NAME, "SELECT COUNT(*) FROM sources WHERE mode = 'sqlite' AND gone_at IS NULL")[0]
    # Only a database source is polled after a start (by design); no file is read.
    assert st["progress"]["files_total"] == databases == 2
    assert st["progress"]["bytes_done"] == 0
    assert (st["events"], st["files"], st["files_gone"]) == (
        three.events, sizes.three_files, three.files_gone)

    # A Claude transcript of a copy (its id rewritten), among the files kept (copy 0's
    # sources come first).
    (target,) = [
        Path(str(p)) for (p,) in _rows(data / DB_NAME, "SELECT path FROM sources WHERE gone_at IS NULL"
                                       f" AND adapter = 'claude-code' AND mode = 'jsonl' AND id > {one.files}"
                                       " AND path NOT LIKE '%/subagents/%' ORDER BY size DESC LIMIT 1")
    ]
    sid = next(orjson.loads(line)["sessionId"] for line in target.read_bytes().splitlines()
               if b'"sessionId"' in line)
    before = target.stat()
    (last_id,) = _rows(data / DB_NAME, "SELECT MAX(id) FROM events")[0]
    with Appended(target):
        with target.open("ab") as fh:
            fh.write(claude_line("bigstore-append-1", text="one more prompt", sessionId=sid))
        query = {"since_id": last_id, "kind": "prompt"}
        page = wait_for(lambda: (p := d.call("events.list", query))["events"] and p, timeout=30)
        (prompt,) = page["events"]
        assert (prompt["text"], prompt["source_path"]) == ("one more prompt", str(target))
        d.stop()  # before the file is put back (cut back, a live daemon would re-read it)
    after = target.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    # The cache itself was not touched.
    (cached,) = _rows(three.db_path, "SELECT value FROM counters WHERE name = 'events'")[0]
    assert cached == three.events


def test_a_migrated_copy_holds_the_same_and_is_reused(three: BigStore, tmp_path: Path) -> None:
    """bench/bigstore.py --migrated: a copy at this schema, VACUUMed, that the
    benchmarks share; the build itself untouched; asked again, reused; a WAL left by a
    run cut short is removed, not applied to the fresh copy."""
    original = three.db_path.read_bytes()
    dest = tmp_path / "migrated"
    (dest / "data").mkdir(parents=True)
    (dest / "data" / (DB_NAME + "-wal")).write_bytes(b"not a WAL of this copy")
    copy = migrated_copy(three, dest, say=False)
    assert copy.schema_version == SCHEMA_VERSION
    assert (copy.dir, copy.data_dir, copy.home) == (str(dest), str(dest / "data"), three.home)
    assert (copy.events, copy.sessions, copy.files, copy.files_gone) == (
        three.events, three.sessions, three.files, three.files_gone)
    assert _profile(copy.db_path) == _profile(three.db_path)
    assert _rows(copy.db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    wal = dest / "data" / (DB_NAME + "-wal")
    assert not wal.exists() or wal.read_bytes() != b"not a WAL of this copy"
    assert copy.db_bytes == copy.db_path.stat().st_size <= len(original)
    assert three.db_path.read_bytes() == original
    assert BigStore(**orjson.loads((dest / "meta.json").read_bytes())) == copy
    made = copy.db_path.stat().st_mtime_ns
    assert migrated_copy(three, dest, say=False) == copy
    assert copy.db_path.stat().st_mtime_ns == made

