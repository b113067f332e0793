"""The real daemon with a fault or an order that only a test wants, injected here from
outside instead of read by production code: ``python tests/daemon_with_fakes.py
[--stall-file F] [--disk-full-file F] [--reverse-order] run [run's options]``.

* ``--stall-file F``: each pass of the ingest loop stalls while F exists (a hung loop:
  the service manager's watchdog pings must stop; tests/test_lifecycle.py).
* ``--disk-full-file F``: while F exists every commit fails as SQLite fails on a full
  disk (apsw.FullError), for a machine where the test cannot mount a small filesystem
  (tests/test_disk_full.py).
* ``--reverse-order``: after each reconcile the queue is read in reverse order (the
  ownership of records copied across sessions must not depend on it;
  tests/test_ownership_e2e.py).

Everything else is ``agentsrc run`` as cli/launch.py starts it. These are stand-ins for
a hung loop and a full disk, which a test cannot always make for real; the tests that
use them say so.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import OrderedDict
from typing import Any

import apsw

from agentsrc_daemon import lean_imports
from agentsrc_daemon.cli import launch


def faked_daemon(args: argparse.Namespace) -> type:
    from agentsrc_daemon.daemon import Daemon

    class FakedDaemon(Daemon):
        def _housekeeping(self, due: Any) -> None:
            while (args.stall_file and os.path.exists(args.stall_file)
                   and not self.stop_event.is_set()):
                time.sleep(0.05)
            super()._housekeeping(due)

        def _wire(self, *a: Any) -> None:
            super()._wire(*a)
            if args.disk_full_file:
                store = self.components.store
                commit = store.commit

                def full_commit(batch: Any, **kw: Any) -> Any:
                    if os.path.exists(args.disk_full_file):
                        raise apsw.FullError("database or disk is full (test fake)")
                    return commit(batch, **kw)

                store.commit = full_commit  # type: ignore[method-assign]
            if args.reverse_order:
                queue = self.queue
                reconcile = queue.reconcile

                def reversed_reconcile(*b: Any) -> int:
                    queued = reconcile(*b)
                    queue.pending = OrderedDict(reversed(queue.pending.items()))
                    return queued

                queue.reconcile = reversed_reconcile  # type: ignore[method-assign]

    return FakedDaemon


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stall-file")
    ap.add_argument("--disk-full-file")
    ap.add_argument("--reverse-order", action="store_true")
    args, rest = ap.parse_known_args()
    run = launch.parse(rest)
    if run is None:
        sys.exit(f"not a run command line: {rest}")
    lean_imports.import_structlog()
    from agentsrc_daemon.config import load_config
    from agentsrc_daemon.logs import configure

    configure(run.log_level, run.json_logs)
    cfg = load_config(**run.overrides)
    daemon = faked_daemon(args)(cfg, cli_overrides=dict(run.overrides),
                                log_level=run.log_level, json_logs=run.json_logs)
    return int(daemon.run())


if __name__ == "__main__":
    sys.exit(main())
