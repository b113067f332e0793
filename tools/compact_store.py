"""Give back to the file system the space a migration freed inside the store's pages
(schema 7 -> 8 packs the rows in place, 15 -> 16 swaps their text ids for integer keys
in place, 16 -> 17 packs the adapter states; only a VACUUM shrinks the file). The
daemon must be stopped: this takes its lock. It needs free disk about the store's size.

    .venv/bin/python tools/compact_store.py [DATA_DIR]   (default: the configured one)
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from agentsrc_daemon.config import load_config
from agentsrc_daemon.store.connection import compact


def main() -> int:
    cfg = load_config()
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else cfg.data_dir
    db, lock = data_dir / "agentsrc.db", data_dir / "agentsrc.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"the daemon is running on {data_dir}: stop it first", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    before, after = compact(db)
    print(f"{db}: {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
