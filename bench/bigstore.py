"""A store at scale, built by the daemon's own code: by default 10 million events from
the corpus replicated with every id rewritten per copy (bench/replicate.py), and 20,000
source files on disk, consistent with the store.

    .venv/bin/python bench/bigstore.py [--events 10000000] [--files 20000] [--out DIR] [--migrated DIR]

How it is built:

1. copy 0 (the corpus itself) is written into the build's home and read in this process
   by the daemon's ingest path: its Ingestor (adapters, derive, scan, stages built from
   the config as the daemon builds them) fills one Batch per file, committed by the
   real ``Store.commit``. Each batch is kept, with the keys of its events, as the
   template of the copies;
2. every further copy is that capture with its ids rewritten (the substitutes
   replicate.py writes into the copy's files: same ids, same lengths, same offsets),
   keys hashed again, committed by ``Store.commit`` as one Batch per copy (so
   ownership, counters, event copies and the search index are the commit's own work).
   Parsing 17 GB of transcripts again would take an hour on this machine;
3. the copies' files are written only for the first ``--files`` sources (copy by copy,
   with their sidecars); the cursors of those files take their real stat and head hash,
   the others are committed as gone (as an agent's clean-up of old transcripts leaves
   them); OpenCode's database, copied once by replicate.py, is in copy 0 only;
4. the real daemon (``agentsrc run``) is started on the result and must go live with
   nothing queued by its stat reconcile but the database it polls after every start.

What differs from reading every copy's files: keys made of a line's checksum (``path@
offset.index#crc``) or of a Codex payload's hash keep copy 0's checksum under the copy's
path, so a copy's file read again from 0 (a reset cursor) would not meet all of its
stored keys. Nothing else (counts, text, paths, times) differs.

The build is cached under ``--out`` (or $AGENTSRC_BIGSTORE) in a directory named by
the generator version, SCHEMA_VERSION and the sizes, and reused while it is complete
(``meta.json`` is written last). The home must stay where it was built: sources, cwds
and paths in the store are absolute. A benchmark works on a copy of the data dir
(``checkout``) with the build's home in place, and puts back any file it appended to
(``Appended``) and removes any file it created, so the cache stays consistent.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Any

import apsw
import orjson

from agentsrc_daemon.config import Config, load_config
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.errors import DaemonNotRunning
from agentsrc_daemon.events import key_digest
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.fingerprint import content_hash
from agentsrc_daemon.ingest.round import SIDECAR_KEY, Ingestor
from agentsrc_daemon.ingest.stages import build_stages
from agentsrc_daemon.pricing.stage import PriceStage
from agentsrc_daemon.rpc.client import Client
from agentsrc_daemon.store import Batch, Store, packing, utc_now
from agentsrc_daemon.store.batch import Row, prepare
from agentsrc_daemon.store.connection import compact
from agentsrc_daemon.store.migrations.versions import SCHEMA_VERSION
from agentsrc_daemon.system.price_table import ensure_table, table_path

# bench/ is this script's own directory (on the path)
from replicate import _SPLIT, CorpusFile, _render, _substitute, copy_rel, load_corpus, write_copy  # noqa: E501

# Bump when what the generator builds changes: a cached build of another version is
# not reused.
GENERATOR_VERSION = 5  # 5: the requests priced (usage_costs) and prices.json in the data dir

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("AGENTSRC_CORPUS", REPO.parent / "shared" / "corpus" / "home"))
DEFAULT_OUT = Path(os.environ.get("AGENTSRC_BIGSTORE", "/tmp/agentsrc-bigstore"))
DB_NAME = "agentsrc.db"
LIVE_TIMEOUT_S = 3600.0
ROUND_BYTES = 64 << 20  # per round of copy 0's files (the daemon reads 4 MiB at a time)
_SPLIT_STR = re.compile(_SPLIT.pattern.decode())
_FINDING_KINDS = frozenset({"secret", "sensitive_read"})


@dataclass(slots=True)
class BigStore:
    """A complete build: where it is and what it holds (meta.json)."""

    dir: str
    home: str
    data_dir: str
    generator_version: int
    schema_version: int
    commit: str
    copies: int
    events: int
    sessions: int
    files: int  # source files on disk (sources not gone)
    files_gone: int
    db_bytes: int
    wal_bytes: int
    build_seconds: float

    @property
    def db_path(self) -> Path:
        return Path(self.data_dir) / DB_NAME


def build_key(events: int, files: int) -> str:
    return f"g{GENERATOR_VERSION}-s{SCHEMA_VERSION}-e{events}-f{files}"


def _commit_id() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "agentsrc_daemon"], capture_output=True, text=True)
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


class DaemonRun:
    """The real daemon on a home and data dir, asked over its socket."""

    def __init__(
        self, home: Path, data_dir: Path, env: dict[str, str] | None = None, code: Path | None = None
    ) -> None:
        # code: another tree's agentsrc_daemon to run (a baseline); this one by default.
        self.code = code or REPO
        self.run_dir = Path(tempfile.mkdtemp(prefix="asbig-", dir="/tmp"))  # short socket path
        self.sock = self.run_dir / "s" / "agentsrc.sock"
        self.log = self.run_dir / "daemon.log"
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "AGENTSRC_DATA_DIR": str(data_dir),
            "AGENTSRC_SOCKET": str(self.sock),
            "XDG_CONFIG_HOME": str(self.run_dir / "cfg"),
            **(env or {}),
        }
        if code is not None:
            self.env["PYTHONPATH"] = str(code)
        if os.environ.get("AGENTSRC_WORKERS"):
            self.env.setdefault("AGENTSRC_WORKERS", os.environ["AGENTSRC_WORKERS"])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> DaemonRun:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agentsrc_daemon.cli", "run", "--json-logs", "--log-level", "warning"],
                env=self.env, stdout=subprocess.DEVNULL, stderr=log, cwd=str(self.code), start_new_session=True,
            )
        return self

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with Client(self.sock, timeout=120) as c:
            return c.call(method, params or {})

    def wait_live(self, timeout: float = LIVE_TIMEOUT_S, say: bool = False) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        said = 0.0
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited {self.proc.returncode}: {self.log.read_text()[-4000:]}")
            try:
                st = self.call("status")
            except DaemonNotRunning:
                time.sleep(0.05)
                continue
            if st["state"] == "live":
                return dict(st)
            if say and time.monotonic() - said > 30:
                said = time.monotonic()
                p = st.get("progress")
                if st["state"] != "catching_up" or not p:  # migrating, indexing: no bytes
                    print(f"  ... {st['state']}", flush=True)
                else:
                    print(f"  ... {st['events']:,} events, {p['bytes_done'] / 1e9:.1f} of"
                          f" {p['bytes_total'] / 1e9:.1f} GB, eta {p['eta_s']:.0f} s", flush=True)
            time.sleep(0.5 if say else 0.05)
        raise TimeoutError("the daemon did not become live")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> DaemonRun:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _query(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    packing.register(conn)  # events.data unpacks
    try:
        return list(conn.execute(sql, args))
    finally:
        conn.close()


@dataclass(slots=True)
class _FileCapture:
    """One source of copy 0 as its round gave it to the commit."""

    spec: sources.SourceSpec
    rel: str  # relative to the home
    keys: list[str]  # the keys of batch.rows, in order
    data_parts: list[list[bytes]]  # each row's data split at its ids
    batch: Batch  # prepared (rows), as committed
    cursor: Cursor  # after its last round


class _Copy:
    """Rewrites copy 0's strings for one copy: every id as replicate.py rewrites it in
    the copy's files, and the files replicate.py renames (copy_rel) by their paths."""

    def __init__(self, copy: int, renamed: dict[str, str], cache: dict[str, list[str]]) -> None:
        self.copy = copy
        self.renamed = renamed  # copy 0's source paths -> this copy's
        self.cache = cache  # shared between copies: a string split at its ids, once
        self.subs: dict[str, str] = {}
        self.bsubs: dict[bytes, bytes] = {}

    def s(self, value: str | None) -> str | None:
        if value is None:
            return None
        parts = self.cache.get(value)
        if parts is None:
            parts = self.cache[value] = _SPLIT_STR.split(value)
        if len(parts) == 1:
            return value
        out = parts[:]
        for i in range(1, len(out), 2):
            sub = self.subs.get(out[i])
            if sub is None:
                sub = self.subs[out[i]] = _substitute(out[i].encode(), self.copy).decode()
            out[i] = sub
        return "".join(out)

    def path(self, value: str) -> str:
        """A source's path is the copy's file (copy_rel); any other path, rewritten."""
        return self.renamed.get(value) or str(self.s(value))

    def key(self, key: str, source_path: str) -> str:
        """A key names its file when it is a line's place in it (``path@offset...``)."""
        if source_path in self.renamed and key.startswith(source_path):
            return self.renamed[source_path] + str(self.s(key[len(source_path):]))
        return str(self.s(key))

    def b(self, parts: list[bytes]) -> bytes:
        if len(parts) == 1:
            return parts[0]
        out = parts[:]
        for i in range(1, len(out), 2):
            sub = self.bsubs.get(out[i])
            if sub is None:
                sub = self.bsubs[out[i]] = _substitute(out[i], self.copy)
            out[i] = sub
        return b"".join(out)

    def json(self, value: Any) -> Any:
        return orjson.loads(self.b(_SPLIT.split(orjson.dumps(value))))

    def record(self, rec: Any) -> Any:
        """SessionFacts, TurnFacts, SpawnPoint, DocumentFacts: their strings rewritten."""
        changes = {}
        for f in fields(rec):
            v = getattr(rec, f.name)
            if f.name in ("agent", "adapter"):
                continue
            if isinstance(v, str):
                changes[f.name] = self.path(v) if f.name == "path" else self.s(v)
            elif isinstance(v, dict):
                changes[f.name] = self.json(v)
        return dc_replace(rec, **changes)


def _ingest_copy0(cfg: Config, store: Store) -> list[_FileCapture]:
    """Copy 0 through the daemon's ingest path, file by file, each committed: priced as
    the daemon prices (the table it would export into the data dir, no overrides), the
    store told the prices' fingerprint, so the daemon started on the build has nothing
    to price again."""
    derive, scan, project_root_for, _ = build_stages(cfg)
    price = PriceStage(ensure_table(table_path(cfg)), cfg.prices)
    store.pricing(price.fingerprint, price.cost_of, at_start=True)
    ingestor = Ingestor(max_line_bytes=cfg.max_line_bytes, derive=derive, scan=scan,
                        project_root_for=project_root_for, price=price)
    ingestor.cursors = store.cursors.load()
    roots, extra = cfg.roots(), cfg.extra_sources()
    captured = []
    try:
        for root in roots.values():
            if not root.is_dir():
                continue
            for spec, _ in sources.walk_sources(root, roots, extra):
                batch = Batch()
                while ingestor.ingest(spec, batch, ROUND_BYTES).more:
                    pass
                keys = [ev.key for ev in batch.events]
                prepare(batch)
                store.commit(batch)
                cursor = ingestor.cursors[spec.path]
                captured.append(_FileCapture(
                    spec, os.path.relpath(spec.path, cfg.home), keys,
                    [_SPLIT.split(r.data) for r in batch.rows], batch, copy.deepcopy(cursor),
                ))
    finally:
        ingestor.close()
    return captured


def _stat_cursor(c: Cursor, spec: sources.SourceSpec) -> None:
    """The cursor of a written copy: its file's identity and head, its sidecar's stat."""
    st = os.stat(c.path)
    c.dev, c.ino, c.size, c.mtime_ns = st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
    if c.head_hash is not None:
        data = Path(c.path).read_bytes()
        c.head_hash = content_hash(data[: c.head_len] if c.mode == sources.JSONL else data)
    held = c.state.get(SIDECAR_KEY) if isinstance(c.state, dict) else None
    if isinstance(held, dict) and "sig" in held:
        side = sources.sidecar_of(spec)
        try:
            sst = os.stat(side) if side else None
        except OSError:
            sst = None
        held["sig"] = [sst.st_dev, sst.st_ino, sst.st_size, sst.st_mtime_ns] if sst else None


def _copy_batch(captured: list[_FileCapture], cp: _Copy, kept: set[str], roots: dict[str, Path]) -> Batch:
    """One copy as one Batch: copy 0's capture with its ids rewritten; the cursors of
    the kept files with their real stat, the others gone."""
    out = Batch()
    digests: dict[bytes, bytes] = {}
    now = utc_now()
    for fc in captured:
        b = fc.batch
        src = fc.spec.path
        new_src = cp.path(src)
        for key, parts, r in zip(fc.keys, fc.data_parts, b.rows, strict=True):
            kh = key_digest(cp.key(key, r.source_path))
            digests[r.key_hash] = kh
            data = cp.b(parts)
            out.rows.append(Row(
                kh, str(cp.s(r.session_id)), r.kind, r.ts, cp.s(r.turn_id), r.tool, cp.s(r.call_id),
                cp.s(r.subagent_id), r.adapter, r.offset, cp.path(r.path) if r.path else None,
                data, r.revision, r.claim, r.claim_since, cp.s(r.holder), packing.pack(data),
                cp.path(r.source_path), r.cost,  # the same request at the same time
            ))
        out.sessions += [cp.record(f) for f in b.sessions]
        out.turns += [cp.record(t) for t in b.turns]
        out.spawns += [cp.record(p) for p in b.spawns]
        out.drift += b.drift
        out.documents += [cp.record(d) for d in b.documents]
        out.session_sources |= {(str(cp.s(sid)), cp.path(p)) for sid, p in b.session_sources}
        out.project_roots.update({str(cp.s(k)): str(cp.s(v)) for k, v in b.project_roots.items()})
        c = copy.copy(fc.cursor)
        c.path, c.source_id, c.skipped = new_src, None, dict(c.skipped)
        c.state = cp.json(c.state) if c.state is not None else None
        if new_src in kept:
            spec = sources.classify(new_src, roots)
            assert spec is not None, new_src
            _stat_cursor(c, spec)
        else:
            c.gone_at = now
        out.cursors[new_src] = c
    # A finding names the event it was found in by its key's digest.
    for i, r in enumerate(out.rows):
        at = r.data.find(b'"of":"') if r.kind in _FINDING_KINDS else -1
        if at >= 0:
            old = r.data[at + 6 : at + 38]
            new = digests.get(bytes.fromhex(old.decode()))
            if new is not None:
                out.rows[i] = r._replace(data=r.data.replace(old, new.hex().encode()))
    return out


def build(out: Path, events: int, files: int, corpus: Path = CORPUS, say: bool = True) -> BigStore:
    """The cached build for these sizes, built first if it is missing or incomplete."""
    done = find(out, events, files)
    if done is not None:
        return done
    t0 = time.perf_counter()
    commit = _commit_id()  # the code that builds it, as it is now
    bdir = out / build_key(events, files)
    shutil.rmtree(bdir, ignore_errors=True)
    home, data = bdir / "home", bdir / "data"
    home.mkdir(parents=True)
    data.mkdir(mode=0o700)

    def log(msg: str) -> None:
        if say:
            print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    templates = load_corpus(corpus)
    write_copy(templates, home, 0, distinct_paths=True)
    cfg = load_config(env={"HOME": str(home), "XDG_CONFIG_HOME": str(bdir / "no-config")}, data_dir=data)
    store = Store(cfg.db_path)
    captured = _ingest_copy0(cfg, store)
    (copy0_events,) = store.conn.execute("SELECT value FROM counters WHERE name='events'").fetchone() or (0,)
    # Databases are copied once (replicate.py), and a file every copy writes under the
    # same name (a Gemini project's logs.json) is one source: neither is copied.
    by_rel = {f.rel: f for f in templates}
    repeated = [fc for fc in captured if fc.spec.mode != sources.SQLITE
                and copy_rel(by_rel[fc.rel], 1, {}, True) != fc.rel]
    per_copy = sum(len(fc.batch.rows) for fc in repeated)
    copies = 1 + max(0, math.ceil((events - copy0_events) / max(1, per_copy)))
    log(f"copy 0: {copy0_events:,} events, {len(captured)} sources; {copies} copies for {events:,}")
    # Copy 0's files all stay (``--files`` below their number is raised to it).
    quota = files - len(captured)
    cache: dict[str, list[str]] = {}
    roots = cfg.roots()
    expected = None
    for n in range(1, copies):
        subs: dict[bytes, bytes] = {}
        renamed = {fc.spec.path: str(home / copy_rel(by_rel[fc.rel], n, subs, True)) for fc in repeated}
        cp = _Copy(n, renamed, cache)
        kept = set()
        for fc in repeated:
            if quota > 0:
                kept.add(cp.path(fc.spec.path))
                quota -= 1
        if kept:
            _write_files(templates, home, n, kept, {str(home / fc.rel) for fc in repeated}, cp)
        batch = _copy_batch(repeated, cp, kept, roots)
        inserted = len(store.commit(batch))
        if expected is None:
            expected = inserted
        elif inserted != expected:
            raise RuntimeError(f"copy {n} inserted {inserted} events, copy 1 {expected}: ids collide")
        if say and n % 50 == 0:
            log(f"copy {n}: {n * per_copy + copy0_events:,} events")
    store.close()
    log("committed; checking with the daemon")
    with DaemonRun(home, data) as d:
        check = d.wait_live()
    (databases,) = _query(
        data / DB_NAME, "SELECT COUNT(*) FROM sources WHERE mode = 'sqlite' AND gone_at IS NULL"
    )[0]
    progress = check["progress"]
    # A database source is polled once after every start, by design (its reader asks
    # SQLite what changed); every other file must be left alone by the reconcile.
    on_disk = len(captured) + min(max(0, files - len(captured)), len(repeated) * (copies - 1))
    if progress["files_total"] != databases or progress["bytes_done"] or check["files"] != on_disk:
        raise RuntimeError(f"the store and the files disagree: {progress}, {check['files']} files")
    log(f"checked: {check['events']:,} events, {check['files']:,} files, {check['files_gone']:,} gone")
    db = data / DB_NAME
    wal = Path(str(db) + "-wal")
    meta = BigStore(
        dir=str(bdir), home=str(home), data_dir=str(data), generator_version=GENERATOR_VERSION,
        schema_version=SCHEMA_VERSION, commit=commit, copies=copies, events=check["events"],
        sessions=check["sessions"], files=check["files"],
        files_gone=check["files_gone"], db_bytes=db.stat().st_size,
        wal_bytes=wal.stat().st_size if wal.exists() else 0,
        build_seconds=round(time.perf_counter() - t0, 1),
    )
    (bdir / "meta.json").write_bytes(orjson.dumps(asdict(meta), option=orjson.OPT_INDENT_2))
    return meta


def _write_files(templates: list[CorpusFile], home: Path, n: int, kept: set[str],
                 sources0: set[str], cp: _Copy) -> None:
    """Copy ``n``'s files: its kept sources, and every file of it that is not a source
    (sidecars, tool results); not the sources committed as gone, nor the databases."""
    subs: dict[bytes, bytes] = {}
    for f in templates:
        if f.database:
            continue
        rel = copy_rel(f, n, subs, True)
        if rel == f.rel:
            continue  # one file for every copy (written by copy 0)
        path = str(home / rel)
        if str(home / f.rel) in sources0 and path not in kept:
            continue
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(_render(f.data_parts, n, subs))


def load(build: Path) -> BigStore:
    """The build in directory ``build``, whatever its schema (its meta.json)."""
    return BigStore(**orjson.loads((build / "meta.json").read_bytes()))


def find(out: Path, events: int, files: int) -> BigStore | None:
    """A complete cached build, or None."""
    build = out / build_key(events, files)
    return load(build) if (build / "meta.json").exists() else None


def checkout(store: BigStore, dest: Path) -> Path:
    """A private copy of the build's data dir (the database, its WAL, the hash key) in ``dest``, for
    a daemon to open with the build's home; returns the data dir. Open it, not the
    cache: a daemon migrates and writes the database it is given."""
    data = dest / "data"
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    # The secret scanner's hash key too: findings made later hash values as the store's did.
    for name in (DB_NAME, DB_NAME + "-wal", "hash.key"):
        src = Path(store.data_dir) / name
        if src.exists():
            shutil.copyfile(src, data / name)
            os.chmod(data / name, 0o600)
    os.sync()  # written back before anything is measured on it (see bench/run.py latency)
    return data


@contextmanager
def Appended(*paths: Path) -> Iterator[None]:  # noqa: N802 (used as a context like a class)
    """Files of the build's home a benchmark appends to: on exit they are cut back to
    their size and given back their mtime (same inode), so the cached store still
    matches them. Stop the daemon before leaving the block: a live daemon would see the
    file cut back and read it again from the start."""
    saved = {p: p.stat() for p in paths}
    try:
        yield
    finally:
        for p, st in saved.items():
            os.truncate(p, st.st_size)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


def migrated_copy(store: BigStore, dest: Path, say: bool = True) -> BigStore:
    """A copy of a build brought to this code's schema and VACUUMed, in ``dest`` (its
    data/ and meta.json; the home stays the build's, whose absolute paths the store
    holds): the starting point benchmarks share, so that each does not migrate the build
    again (7 -> 9 took 301 s at 10 million events, the VACUUM 81 s). Reused while its
    meta.json names this schema; ``bench/run.py scale --store DEST`` and the others take it
    as they take a build."""
    meta = dest / "meta.json"
    if meta.is_file():
        found = load(dest)
        if found.schema_version == SCHEMA_VERSION and found.events == store.events:
            return found
        meta.unlink()  # another schema's: made again
    for suffix in ("-wal", "-shm"):  # an earlier run's, cut short: not this copy's
        (dest / "data" / (DB_NAME + suffix)).unlink(missing_ok=True)
    data = checkout(store, dest)
    db = data / DB_NAME
    t0 = time.perf_counter()

    def progress(name: str, done: int, target: int) -> None:
        if say and (done == target or done % 1_000_000 < 10_000):
            print(f"  migration {name}: {done:,} of {target:,}", flush=True)

    Store(db, progress=progress).close()
    migrated_s = time.perf_counter() - t0
    before, after = compact(db)
    if say:
        print(f"migrated in {migrated_s:.0f} s; VACUUM {before / 2**20:.0f} -> {after / 2**20:.0f} MiB"
              f" in {time.perf_counter() - t0 - migrated_s:.0f} s", flush=True)
    wal = Path(str(db) + "-wal")
    out = dc_replace(
        store, dir=str(dest), data_dir=str(data), schema_version=SCHEMA_VERSION,
        commit=f"{store.commit}; migrated to schema {SCHEMA_VERSION} by {_commit_id()} and VACUUMed",
        db_bytes=after, wal_bytes=wal.stat().st_size if wal.exists() else 0,
    )
    meta.write_bytes(orjson.dumps(asdict(out), option=orjson.OPT_INDENT_2))
    return out


def write_ready(out: Path, store: BigStore) -> Path:
    ready = out / "READY"
    ready.write_text(
        f"data_dir: {store.data_dir}\n"
        f"home: {store.home}\n"
        f"schema_version: {store.schema_version}\n"
        f"generator_version: {store.generator_version}\n"
        f"commit: {store.commit}\n"
        f"events: {store.events}\nsessions: {store.sessions}\nfiles: {store.files}\n"
        f"files_gone: {store.files_gone}\ncopies: {store.copies}\n"
        f"db_bytes: {store.db_bytes}\nwal_bytes: {store.wal_bytes}\n"
        f"build_seconds: {store.build_seconds}\n"
        "note: copy the data dir before opening it (bench/bigstore.py checkout, or cp"
        " agentsrc.db and agentsrc.db-wal), above all with changed code: a daemon migrates"
        " and writes the database it opens. Use the home in place (paths in the store are"
        " absolute), with HOME=<home> and AGENTSRC_DATA_DIR=<your copy>; put back what you"
        " append to (bigstore.Appended) and delete files you create.\n"
    )
    return ready


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--ready", action="store_true", help="write <out>/READY describing the build")
    ap.add_argument("--migrated", type=Path, default=None,
                    help="also a copy in DIR at this code's schema, VACUUMed (what the benchmarks share)")
    args = ap.parse_args()
    store = build(args.out, args.events, args.files, args.corpus)
    if args.migrated:
        store = migrated_copy(store, args.migrated)
    print(orjson.dumps(asdict(store), option=orjson.OPT_INDENT_2).decode())
    if args.ready:
        print(f"wrote {write_ready(args.out, store)}")


if __name__ == "__main__":
    main()
