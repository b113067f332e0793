"""The files kept open between reads (ingest/open_files.py): a file read again is the
same descriptor after one stat of its path; another file at the path, no file, or no
regular file closes it; the oldest are closed past the bound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.ingest import tail
from agentsrc_daemon.ingest.open_files import NOT_REGULAR, OpenFiles


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def open_count() -> int:
    """The process's open descriptors (Linux's /proc)."""
    return len(os.listdir("/proc/self/fd"))


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd")


def test_a_file_read_again_is_the_descriptor_kept(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n')
    files = OpenFiles(size=4)
    fd, st = files.open(str(p))
    with p.open("ab") as fh:
        fh.write(b'{"b":2}\n')
    again, st2 = files.open(str(p))
    assert again == fd and len(files) == 1
    assert (st.st_size, st2.st_size) == (8, 16)  # the path's stat, taken again
    files.close()
    assert not is_open(fd)


@needs_proc
def test_another_file_at_the_path_closes_the_kept_one(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n')
    files = OpenFiles(size=4)
    before = open_count()
    c = Cursor(str(p), "codex", "jsonl")
    got: list[tail.Line] = []
    tail.read_new_lines(str(p), c, got.append, budget_bytes=1 << 20, max_line_bytes=1 << 20,
                        files=files)
    new = tmp_path / "a.tmp"
    new.write_bytes(b'{"z":9}\n{"y":8}\n')
    os.replace(new, p)
    res = tail.read_new_lines(str(p), c, got.append, budget_bytes=1 << 20,
                              max_line_bytes=1 << 20, files=files)
    assert res.reset == "replaced"
    assert [ln.obj for ln in got] == [{"a": 1}, {"z": 9}, {"y": 8}]
    new_fd, st = files.open(str(p))
    assert os.fstat(new_fd).st_ino == os.stat(p).st_ino == st.st_ino
    assert len(files) == 1 and open_count() == before + 1  # the old file's is closed
    files.close()
    assert open_count() == before


def test_a_deleted_file_is_gone_and_closed(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\n')
    files = OpenFiles(size=4)
    c = Cursor(str(p), "codex", "jsonl")
    tail.read_new_lines(str(p), c, lambda ln: None, budget_bytes=1 << 20,
                        max_line_bytes=1 << 20, files=files)
    assert len(files) == 1
    p.unlink()
    res = tail.read_new_lines(str(p), c, lambda ln: None, budget_bytes=1 << 20,
                              max_line_bytes=1 << 20, files=files)
    assert res.gone and len(files) == 0
    with pytest.raises(FileNotFoundError):
        files.open(str(p))


def test_no_regular_file_is_opened(tmp_path: Path) -> None:
    """A FIFO at a transcript's path: opening it for reading would block the loop."""
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    files = OpenFiles(size=4)
    fd, _ = files.open(str(fifo))
    assert fd == NOT_REGULAR and len(files) == 0
    c = Cursor(str(fifo), "codex", "jsonl")
    res = tail.read_new_lines(str(fifo), c, lambda ln: None, budget_bytes=1 << 20,
                              max_line_bytes=1 << 20, files=files)
    assert res.gone


@needs_proc
def test_the_oldest_are_closed_past_the_bound(tmp_path: Path) -> None:
    files = OpenFiles(size=2)
    before = open_count()
    fds = []
    for name in "abc":
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(b"{}\n")
        fds.append(files.open(str(p))[0])
    assert len(files) == 2 and open_count() == before + 2
    assert files.open(str(tmp_path / "c.jsonl"))[0] == fds[2]
    assert files.open(str(tmp_path / "b.jsonl"))[0] == fds[1]
    files.open(str(tmp_path / "a.jsonl"))  # opened again: c is the oldest now
    assert open_count() == before + 2
    assert files.open(str(tmp_path / "b.jsonl"))[0] == fds[1]
    files.close()
    assert open_count() == before
