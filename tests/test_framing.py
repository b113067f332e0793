"""The line framer: exact results, a property test that chunk boundaries never change
which lines come out, and the socket server's request framing built on it."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.framing import Line, NeedMore, TooLong, next_line, skip_past_newline
from agentsrc_daemon.rpc.transport import MAX_REQUEST_BYTES, Hub, Server
from agentsrc_daemon.store import Store


def test_complete_line_bounds() -> None:
    assert next_line(b'{"a":1}\n{"b"', 0, 100) == Line(0, 7)
    assert Line(0, 7).length == 7 and Line(0, 7).next_start == 8
    assert next_line(b'{"a":1}\n{"b"', 8, 100) == NeedMore(8)
    assert next_line(b"\n", 0, 0) == Line(0, 0)  # an empty line is a line
    assert next_line(bytearray(b"ab\r\ncd\n"), 4, 2) == Line(4, 6)  # CR is content


def test_line_exactly_at_the_cap_is_a_line() -> None:
    assert next_line(b"abcd\n", 0, 4) == Line(0, 4)
    assert next_line(b"abcde\n", 0, 4) == TooLong(0, 5)


def test_partial_over_the_cap_is_reported_before_its_newline() -> None:
    assert next_line(b"abcd", 0, 4) == NeedMore(0)  # could still end at the cap
    assert next_line(b"abcde", 0, 4) == TooLong(0, None)
    assert next_line(b"xx\nabcde", 3, 4) == TooLong(3, None)
    assert next_line(b"", 0, 4) == NeedMore(0)
    assert next_line(b"ab", 2, 0) == NeedMore(2)  # nothing left after start


def test_skip_past_newline() -> None:
    assert skip_past_newline(b"zzz\nnext", 0) == 4
    assert skip_past_newline(b"zzz\nnext\n", 4) == 9
    assert skip_past_newline(b"zzzz", 0) is None
    assert skip_past_newline(b"a\n", 2) is None


def frame_stream(chunks: list[bytes], max_len: int) -> list[bytes | None]:
    """Feed ``chunks`` one by one the way a reader does (append, frame, drop what is
    consumed, discard an over-cap line up to its newline); None stands for a line
    reported over the cap."""
    out: list[bytes | None] = []
    buf = bytearray()
    discarding = False
    peak = 0
    for chunk in chunks:
        buf += chunk
        peak = max(peak, len(buf))
        start = 0
        while True:
            if discarding:
                after = skip_past_newline(buf, start)
                if after is None:
                    start = len(buf)
                    break
                discarding = False
                start = after
                continue
            framed = next_line(buf, start, max_len)
            if isinstance(framed, NeedMore):
                break
            if isinstance(framed, TooLong):
                out.append(None)
                if framed.end is None:
                    discarding = True
                    start = len(buf)
                    break
                start = framed.end + 1
                continue
            out.append(bytes(buf[framed.start : framed.end]))
            start = framed.next_start
        del buf[:start]
        # The memory bound: what stays buffered between chunks is a partial line within the cap.
        assert len(buf) <= max_len
    return out


@settings(max_examples=300, deadline=None)
@given(
    content=st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n")),
    cuts=st.lists(st.integers(0, 300), max_size=12),
    max_len=st.integers(0, 40),
)
def test_chunk_boundaries_never_change_the_lines(
    content: bytes, cuts: list[int], max_len: int
) -> None:
    bounds = sorted({min(c, len(content)) for c in cuts} | {0, len(content)})
    chunks = [content[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    *lines, trailing = content.split(b"\n")
    expected: list[bytes | None] = [line if len(line) <= max_len else None for line in lines]
    if len(trailing) > max_len:
        expected.append(None)  # known to be over the cap before its newline comes
    assert frame_stream(chunks, max_len) == expected


def test_one_over_cap_line_spanning_many_chunks_is_reported_once() -> None:
    content = b"ok\n" + b"x" * 50 + b"\nafter\ntail"
    chunks = [content[i : i + 7] for i in range(0, len(content), 7)]
    assert frame_stream(chunks, 10) == [b"ok", None, b"after"]


# ---- the socket server frames requests with it ------------------------------------


def _exchange(tmp_path: Path, pieces: list[bytes]) -> list[dict[str, Any]]:
    """Send ``pieces`` (one sendall each) to a server connection; its replies."""
    db = tmp_path / "db.sqlite"
    Store(db).close()
    server = Server(
        tmp_path / "sock", db, {"ping": lambda reader, params: "pong"}, Hub(), lambda *a: []
    )
    client, served = socket.socketpair()
    thread = threading.Thread(target=server._serve_conn, args=(served,))
    thread.start()
    for piece in pieces:
        client.sendall(piece)
    client.shutdown(socket.SHUT_WR)
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    client.close()
    thread.join(timeout=10)
    return [orjson.loads(line) for line in data.splitlines()]


def _ping(rid: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % rid


OVER_1_MIB = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "request over 1 MiB"}}


def test_server_answers_each_over_cap_request_once_and_goes_on(tmp_path: Path) -> None:
    # Over the cap before its newline (the rest discarded across reads), then over the
    # cap with its newline in the same read, then blank lines; each is answered once.
    huge = b'{"x":"' + b"a" * (3 << 20) + b'"}\n'
    just_over = b"b" * (MAX_REQUEST_BYTES + 1) + b"\n"
    pieces = [_ping(1), huge[:100], huge[100 : 2 << 20], huge[2 << 20 :] + _ping(2)]
    pieces += [just_over + b"\n  \n" + _ping(3)]
    assert _exchange(tmp_path, pieces) == [
        {"jsonrpc": "2.0", "id": 1, "result": "pong"},
        OVER_1_MIB,
        {"jsonrpc": "2.0", "id": 2, "result": "pong"},
        OVER_1_MIB,
        {"jsonrpc": "2.0", "id": 3, "result": "pong"},
    ]


def test_server_takes_a_request_exactly_at_the_cap(tmp_path: Path) -> None:
    head = b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"pad":"'
    tail = b'"}}'
    request = head + b"p" * (MAX_REQUEST_BYTES - len(head) - len(tail)) + tail
    assert len(request) == MAX_REQUEST_BYTES
    assert _exchange(tmp_path, [request[:5000], request[5000:] + b"\n"]) == [
        {"jsonrpc": "2.0", "id": 4, "result": "pong"}
    ]
