"""Replicate the shared corpus N times into a home directory, giving every copy its own
session ids (and message, request and tool-call ids), so the copies are distinct
sessions rather than duplicates the daemon would rightly collapse. SQLite databases
(OpenCode's) are copied once, unchanged.

Ids are rewritten in file names and contents with same-length substitutes, so byte
offsets and line lengths are unchanged.

    python bench/replicate.py --copies 20 --out /tmp/agentsrc-bench-home
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
from pathlib import Path

ID_PATTERNS = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|(?:msg|toolu|tooluse|req|call|fc|rs|srvtoolu|ses|prt)_[A-Za-z0-9_-]{8,}"
    rb"|agent-a?[0-9a-f]{8,17}"
)
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


def replicate(src_home: Path, out_home: Path, copies: int) -> int:
    """Write ``copies`` copies of every corpus file; returns the bytes written."""
    total = 0
    for copy in range(copies):
        for path in sorted(src_home.rglob("*")):
            if not path.is_file():
                continue
            rel = path.relative_to(src_home).as_posix().encode()
            new_rel = ID_PATTERNS.sub(lambda m, c=copy: _substitute(m.group(0), c), rel).decode()
            if copy and ".codex/" in new_rel and new_rel == rel.decode():
                # Codex legacy files without a uuid in the name: suffix the copy number.
                stem, dot, ext = new_rel.rpartition(".")
                new_rel = f"{stem}-copy{copy}{dot}{ext}"
            data = path.read_bytes()
            if copy and (data.startswith(b"SQLite format 3\0") or path.name.endswith(("-wal", "-shm"))):
                # A database is not rewritten (its indexes would no longer match its
                # rows): every copy writes the same file, so there is one of it.
                continue
            if copy:
                data = ID_PATTERNS.sub(lambda m, c=copy: _substitute(m.group(0), c), data)
            dest = out_home / new_rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            total += len(data)
    return total


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
