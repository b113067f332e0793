"""A backfill worker process and the two pipes the daemon talks to it over.

The daemon starts ``python -c`` with this module's ``main`` and two pipes: tasks go
down one (the worker's initial arguments, then one file round at a time), and each
round comes back up the other piece by piece as it is read, then a mark that it is
done. Frames are a length and a pickle.

Not ``concurrent.futures.ProcessPoolExecutor``: with the spawn start method (the
daemon has threads) multiprocessing starts a resource tracker, a third process of 13
MB for the daemon's whole life to unlink the named semaphores of the executor's
queues, and its worker returns a round whole, pickled at once, so the worker held a
round's pieces and their pickle together (docs/performance.md, "Peak memory of the
backfill"). Here nothing is named, a piece is sent once it is read and dropped, and a
worker whose daemon is gone reads the end of its task pipe and exits.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, BinaryIO

_HEADER = struct.Struct("!Q")
# What comes back from the worker: a piece of the round in hand, its last piece (the
# round is done), or the round's failure.
PIECE, LAST, FAILED = 0, 1, 2
# Rounds handed to a worker's pipe at once: the one it reads and the next, so it never
# waits for the daemon between two; the rest wait in the daemon, where they can still
# be taken back (``cancel``).
SENT_PER_WORKER = 2

_BOOT = (
    "import sys; sys.path[:0] = sys.argv[3:]; "
    "from agentsrc_daemon.ingest.worker_process import main; "
    "main(int(sys.argv[1]), int(sys.argv[2]))"
)


class WorkerGone(RuntimeError):
    """The worker process exited (or its pipe broke) before its round was done."""


class RoundFailed(RuntimeError):
    """The worker's round raised: its type and message, as the worker saw them."""


def write_frame(out: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def read_frame(src: BinaryIO) -> Any:
    """The next frame's object; EOFError at the pipe's end (a frame cut short too)."""
    head = src.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(head)
    data = src.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class _Task:
    __slots__ = ("args", "future", "pieces")

    def __init__(self, args: tuple[Any, ...], future: Future[list[Any]]) -> None:
        self.args = args
        self.future = future
        self.pieces: list[Any] = []


class WorkerProcess:
    """One worker process: rounds sent to it in order, their pieces read back by a
    thread of the daemon, which completes each round's future with its pieces."""

    def __init__(self, init: tuple[Any, ...], on_idle: Callable[[], None]) -> None:
        tasks_r, self._tasks_w = os.pipe()
        self._results_r, results_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(tasks_r), str(results_w),
                 *[p for p in sys.path if p]],
                pass_fds=(tasks_r, results_w),
                stdin=subprocess.DEVNULL,
            )
        finally:
            os.close(tasks_r)
            os.close(results_w)
        self.sent: deque[_Task] = deque()  # in the worker's pipe or hands, in order
        self.gone = False
        self._on_idle = on_idle  # called (from the reader thread) when a round is done
        self._lock = threading.Lock()
        # Frames for the task pipe, written by a thread of their own: a write that
        # waits for the worker to read (a full pipe) holds no lock the reader needs.
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._outbox.put(init)
        self._writer = threading.Thread(target=self._write, name="backfill-worker-writer", daemon=True)
        self._reader = threading.Thread(target=self._read, name="backfill-worker-reader", daemon=True)
        self._writer.start()
        self._reader.start()

    def send(self, task: _Task) -> bool:
        """Hand ``task`` to the worker; False when it is gone."""
        with self._lock:
            if self.gone:
                return False
            self.sent.append(task)
        self._outbox.put(task.args)
        return True

    def _write(self) -> None:
        out = os.fdopen(self._tasks_w, "wb")
        try:
            while (args := self._outbox.get()) is not None:
                write_frame(out, args)
        except OSError:
            pass  # the worker is gone: the reader sees its pipe's end
        finally:
            with contextlib.suppress(OSError):  # a frame left in the buffer: the pipe broke
                out.close()

    def _read(self) -> None:
        with os.fdopen(self._results_r, "rb") as src:
            while True:
                try:
                    kind, payload = read_frame(src)
                except (EOFError, OSError, pickle.UnpicklingError):
                    break
                with self._lock:
                    task = self.sent[0] if self.sent else None
                    if task is None:
                        break  # a frame for no round: the pipe cannot be trusted
                    if kind == PIECE:
                        task.pieces.append(payload)
                        continue
                    self.sent.popleft()
                if kind == LAST:
                    task.pieces.append(payload)
                    task.future.set_result(task.pieces)
                else:
                    task.future.set_exception(RoundFailed(payload))
                self._on_idle()
        with self._lock:
            self.gone = True
            left, self.sent = list(self.sent), deque()
        for task in left:
            task.future.set_exception(WorkerGone(f"backfill worker exited ({self.proc.poll()})"))
        self._on_idle()

    def close(self) -> None:
        """The end of the task pipe: the worker exits after the rounds sent to it."""
        self._outbox.put(None)

    def join(self) -> None:
        self.proc.wait()
        self._writer.join()
        self._reader.join()


class WorkerProcesses:
    """Rounds for ``size`` worker processes (started at the first round): each gets the
    next round waiting whenever fewer than SENT_PER_WORKER are in its pipe and hands.
    A worker calls ``init(*init_args)`` once, then ``run_round(*args)`` for each round,
    which yields its pieces, each with whether it is the last (module-level functions:
    they are sent by name)."""

    def __init__(
        self,
        size: int,
        init: Callable[..., None],
        init_args: tuple[Any, ...],
        run_round: Callable[..., Iterator[tuple[Any, bool]]],
    ) -> None:
        self.size = size
        self._init = (init, init_args, run_round)
        self._workers: list[WorkerProcess] = []
        self._waiting: deque[_Task] = deque()
        self._lock = threading.RLock()
        self.closed = False

    def submit(self, *args: Any) -> Future[list[Any]]:
        """A round for the next free worker; its future's result is the round's pieces.
        RuntimeError once every worker is gone or the processes are shut down."""
        with self._lock:
            if self.closed:
                raise RuntimeError("backfill workers shut down")
            if not self._workers:
                self._workers = [WorkerProcess(self._init, self._dispatch) for _ in range(self.size)]
            if all(w.gone for w in self._workers):
                raise WorkerGone("every backfill worker exited")
            future: Future[list[Any]] = Future()
            self._waiting.append(_Task(args, future))
            self._dispatch()
            return future

    def _dispatch(self) -> None:
        """Waiting rounds to workers with room (a round taken back meanwhile is
        skipped); when every worker is gone, the waiting rounds fail."""
        with self._lock:
            while self._waiting:
                free = [w for w in self._workers if not w.gone and len(w.sent) < SENT_PER_WORKER]
                if not free:
                    break
                task = self._waiting.popleft()
                if not task.future.set_running_or_notify_cancel():
                    continue  # taken back (cancelled) before it was sent
                if not min(free, key=lambda w: len(w.sent)).send(task):
                    task.future.set_exception(WorkerGone("backfill worker exited"))
            if self._workers and all(w.gone for w in self._workers):
                while self._waiting:
                    task = self._waiting.popleft()
                    if task.future.set_running_or_notify_cancel():
                        task.future.set_exception(WorkerGone("every backfill worker exited"))

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers]

    def shutdown(self) -> None:
        """Waiting rounds cancelled; each worker finishes the rounds in its pipe and
        exits."""
        with self._lock:
            self.closed = True
            for task in self._waiting:
                task.future.cancel()
            self._waiting.clear()
            workers = list(self._workers)
        for w in workers:
            w.close()
        for w in workers:
            w.join()


def main(tasks_fd: int, results_fd: int) -> None:
    """The worker: its initializer, its arguments and its round function (pickled by
    name: unpickling them imports their module, ``ingest/workers.py``, which imports
    structlog lean before anything logs), then rounds until the daemon closes the pipe
    (or dies), each sent back piece by piece."""
    tasks = os.fdopen(tasks_fd, "rb")
    results = os.fdopen(results_fd, "wb")
    try:
        init, init_args, run_round = read_frame(tasks)
    except EOFError:
        return
    init(*init_args)
    while True:
        try:
            args = read_frame(tasks)
        except EOFError:
            return
        try:
            _send_round(results, run_round(*args))
        except (BrokenPipeError, ConnectionResetError):
            return  # the daemon is gone


def _send_round(results: BinaryIO, pieces: Iterator[tuple[Any, bool]]) -> None:
    try:
        for piece, last in pieces:
            write_frame(results, (LAST if last else PIECE, piece))
    except (BrokenPipeError, ConnectionResetError):
        raise
    except Exception as exc:  # noqa: BLE001 - the round fails, the daemon reads it itself
        write_frame(results, (FAILED, f"{type(exc).__name__}: {exc}"))
