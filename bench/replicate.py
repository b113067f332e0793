"""Replicate the shared corpus N times into a home directory, giving every copy its own
session ids (and message, request and tool-call ids), so the copies are distinct
sessions rather than duplicates the daemon would rightly collapse. SQLite databases
(OpenCode's) are copied once, unchanged.

Ids are rewritten in file names and contents with same-length substitutes, so byte
offsets and line lengths are unchanged. The corpus is split at its ids once
(``load_corpus``); each copy is then a join of the pieces with that copy's substitutes
(``write_copy``), so a thousand copies cost a thousand joins, not a thousand regex
passes (about 5 s per copy).

    python bench/replicate.py --copies 20 --out /tmp/agentsrc-bench-home
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

ID_PATTERNS = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    # A prefix only at the start of a word: "tool_call_completed" (a Copilot record
    # type) is not the id "call_completed".
    rb"|(?<![A-Za-z0-9_])(?:msg|toolu|tooluse|req|call|fc|rs|srvtoolu|ses|prt)_[A-Za-z0-9_-]{8,}"
    rb"|agent-a?[0-9a-f]{8,17}"
)
# The same matches, kept by re.split: literal pieces at even indexes, ids at odd ones.
_SPLIT = re.compile(b"(" + ID_PATTERNS.pattern + b")")
_ALNUM = b"abcdefghijklmnopqrstuvwxyz0123456789"
_HEX = b"0123456789abcdef"


def _substitute(token: bytes, copy: int) -> bytes:
    if copy == 0:
        return token
    digest = hashlib.blake2b(token + copy.to_bytes(4, "little"), digest_size=64).digest()
    out = bytearray(token)
    # Keep the prefix (msg_, agent-, ...) and dashes; replace the rest with hash-derived
    # characters of the same class.
    start = token.find(b"_") + 1 if b"_" in token[:9] else (6 if token.startswith(b"agent-") else 0)
    is_hex = all(c in _HEX or c == ord("-") for c in token[start:])
    for i in range(start, len(token)):
        if token[i] == ord("-"):
            continue
        alphabet = _HEX if is_hex else _ALNUM
        out[i] = alphabet[digest[i % 64] % len(alphabet)]
    return bytes(out)


@dataclass(slots=True)
class CorpusFile:
    """One corpus file split at its ids (name and content)."""

    rel: str  # as in the corpus
    name_parts: list[bytes]
    data_parts: list[bytes]
    database: bool  # a SQLite database (or its -wal/-shm): written by copy 0 only


def load_corpus(src_home: Path) -> list[CorpusFile]:
    out = []
    for path in sorted(src_home.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(src_home).as_posix()
        data = path.read_bytes()
        database = data.startswith(b"SQLite format 3\0") or path.name.endswith(("-wal", "-shm"))
        out.append(CorpusFile(rel, _SPLIT.split(rel.encode()), [data] if database else _SPLIT.split(data), database))
    return out


def _render(parts: list[bytes], copy: int, subs: dict[bytes, bytes]) -> bytes:
    if copy == 0 or len(parts) == 1:
        return b"".join(parts)
    out = parts[:]
    for i in range(1, len(out), 2):
        token = out[i]
        sub = subs.get(token)
        if sub is None:
            sub = subs[token] = _substitute(token, copy)
        out[i] = sub
    return b"".join(out)


# Gemini chats and checkpoints have no id in their names (their directory is the hash of
# the project root): with ``distinct_paths`` each copy's get a suffix too, else every
# copy overwrites the one file (what replicate() has always done; tests count on it).
_GEMINI_NAMED = re.compile(r"^\.gemini/tmp/[^/]+/(?:chats/session-|checkpoint-)[^/]+$")


def copy_rel(f: CorpusFile, copy: int, subs: dict[bytes, bytes], distinct_paths: bool = False) -> str:
    """The file's path (relative to the home) in a copy."""
    new_rel = _render(f.name_parts, copy, subs).decode()
    if copy and new_rel == f.rel and (
        ".codex/" in new_rel or (distinct_paths and _GEMINI_NAMED.match(new_rel))
    ):
        # Codex legacy files without a uuid in the name: suffix the copy number.
        stem, dot, ext = new_rel.rpartition(".")
        new_rel = f"{stem}-copy{copy}{dot}{ext}"
    return new_rel


def write_copy(
    corpus: list[CorpusFile], out_home: Path, copy: int, distinct_paths: bool = False
) -> list[tuple[Path, int]]:
    """Write one copy of every corpus file; returns the paths written and their sizes.
    ``distinct_paths``: no two copies write the same source file (see _GEMINI_NAMED)."""
    subs: dict[bytes, bytes] = {}
    written = []
    for f in corpus:
        if copy and f.database:
            # A database is not rewritten (its indexes would no longer match its
            # rows): every copy writes the same file, so there is one of it.
            continue
        dest = out_home / copy_rel(f, copy, subs, distinct_paths)
        data = _render(f.data_parts, copy, subs)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        written.append((dest, len(data)))
    return written


def replicate(src_home: Path, out_home: Path, copies: int) -> int:
    """Write ``copies`` copies of every corpus file; returns the bytes written."""
    corpus = load_corpus(src_home)
    return sum(size for copy in range(copies) for _, size in write_copy(corpus, out_home, copy))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--corpus",
        type=Path,
        default=Path(os.environ.get("AGENTSRC_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus" / "home")),
    )
    args = ap.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    n = replicate(args.corpus, args.out, args.copies)
    print(f"wrote {n / 1e6:.1f} MB in {args.copies} copies to {args.out}")


if __name__ == "__main__":
    main()
