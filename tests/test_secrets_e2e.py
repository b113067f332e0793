"""Never stored: the test that proves it.

Fake secrets of 20 detect-secrets types are planted across tool outputs, read results,
a spilled tool-results file, shell output, Write/Edit content, a patch, prompts and
assistant text, in all three agents' formats. The real daemon ingests them. Then:
every one is reported with the right type and file, and none of the values, nor their
base64 or hex forms, occurs anywhere in the database files (main, -wal, -shm), the
daemon's log, or any socket response.

The values are generated at run time (seeded), so no secret-looking string is
committed to the repository.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
import socket
import string
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsrc_daemon.secrets.engine import SecretScanner

from harness import DaemonProcess, wait_for

pytestmark = pytest.mark.slow

ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits


def planted_values(seed: int = 20261129) -> dict[str, str]:
    rnd = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(n))

    def b64url(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(orjson.dumps(obj)).decode().rstrip("=")

    key_body = base64.b64encode(rnd.randbytes(96)).decode()
    jwt = ".".join(
        [b64url({"alg": "HS256", "typ": "JWT"}), b64url({"sub": r(LOWER, 8), "iat": 1700000000}),
         r(ALNUM + "-_", 43)]
    )
    return {
        "aws": "AKIA" + r(UPPER, 16),
        "aws2": "AKIA" + r(UPPER, 16),
        "aws_live": "AKIA" + r(UPPER, 16),
        "github": "ghp" + "_" + r(ALNUM, 36),
        "private_key_body": key_body,
        "stripe": "sk" + "_live_" + r(ALNUM, 24),
        "slack": "xo" + "xb-" + r(string.digits, 12) + "-" + r(string.digits, 13) + "-" + r(LOWER, 24),
        "openai": "sk-" + r(ALNUM, 20) + "T3Blbk" + "FJ" + r(ALNUM, 20),
        "jwt": jwt,
        "sendgrid": "SG." + r(ALNUM, 22) + "." + r(ALNUM, 43),
        "twilio": "AC" + r(HEX, 32),
        "mailchimp": r(HEX, 32) + "-us14",
        "basic_password": r(ALNUM, 14),
        "keyword": r(ALNUM, 18),
        "hex": r(HEX, 40),
        "npm": "npm" + "_" + r(ALNUM, 36),
        "square": "sq0" + "csp-" + r(ALNUM, 43),
        "telegram": r(string.digits, 9) + ":AA" + r(ALNUM, 33),
        "gitlab": "gl" + "pat-" + r(ALNUM, 20),
        "pypi": "pypi-" + "AgEIcHlwaS5vcmc" + r(ALNUM, 72),
        "base64": base64.b64encode(rnd.randbytes(30)).decode(),
        "discord": "M" + r(ALNUM, 23) + "." + r(ALNUM, 6) + "." + r(ALNUM, 27),
    }


V = planted_values()
PRIVATE_KEY = (
    "-----BEGIN RSA " + "PRIVATE KEY-----\n" + V["private_key_body"] + "\n-----END RSA PRIVATE KEY-----"
)

SID = "5ec7e700-0000-4000-8000-00000000c1a0"
CODEX_ID = "5ec7e700-0000-4000-8000-0000000c0dec"
TS = "2026-11-01T10:00:%02d.000Z"


def claude_records() -> list[dict[str, Any]]:
    def rec(n: int, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"type": kind, "sessionId": SID, "uuid": f"u-{n}", "timestamp": TS % n,
                "cwd": "/work/proj", "version": "2.1.0", "isSidechain": False,
                "message": message, **extra}

    def use(n: int, tid: str, name: str, inp: dict[str, Any]) -> dict[str, Any]:
        return rec(n, "assistant", {"id": f"msg_{n}", "role": "assistant", "model": "m",
                                    "content": [{"type": "tool_use", "id": tid, "name": name,
                                                 "input": inp}]})

    def result(n: int, tid: str, text: str, **extra: Any) -> dict[str, Any]:
        return rec(n, "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": text}]}, **extra)

    env_text = f"STRIPE_KEY={V['stripe']}\nSLACK_BOT_TOKEN={V['slack']}\n"
    notes = f"OPENAI_API_KEY={V['openai']}\nAuthorization: Bearer {V['jwt']}\n"
    return [
        rec(1, "user", {"role": "user", "content": f"deploy with key {V['aws']} please"}),
        use(2, "toolu_write", "Write",
            {"file_path": "/work/proj/config.py",
             "content": f'GITHUB_TOKEN = "{V["github"]}"\nKEY = """\n{PRIVATE_KEY}\n"""\n'}),
        result(3, "toolu_write", "File created successfully"),
        use(4, "toolu_edit", "Edit", {"file_path": "/work/proj/app.py", "old_string": "x = 1",
                                       "new_string": f'aws_key = "{V["aws2"]}"'}),
        result(5, "toolu_edit", "The file has been updated"),
        use(6, "toolu_read", "Read", {"file_path": "/work/proj/.env"}),
        result(7, "toolu_read", env_text,
               toolUseResult={"type": "text", "file": {"filePath": "/work/proj/.env",
                                                       "content": env_text}}),
        use(8, "toolu_bash", "Bash", {"command": "cat /work/proj/notes.txt"}),
        result(9, "toolu_bash", notes, toolUseResult={"stdout": notes, "stderr": ""}),
        use(10, "toolu_spill", "WebFetch", {"url": "https://example.com/big"}),
        result(11, "toolu_spill",
               "<persisted-output>\nOutput too large. Full output saved to: somewhere\n"
               "Preview (first 2KB): nothing secret here\n</persisted-output>"),
        # One message written as two lines (one per block): the secret is in the first.
        rec(12, "assistant", {"id": "msg_12", "role": "assistant", "model": "m", "content": [
            {"type": "text", "text": f"Your bot token looks like {V['discord']}; rotate it."}]}),
        rec(13, "assistant", {"id": "msg_12", "role": "assistant", "model": "m", "content": [
            {"type": "text", "text": "Then restart the bot."}]}),
    ]


def spilled_text() -> str:
    return (
        "log line\n" * 50
        + f"SENDGRID_API_KEY={V['sendgrid']}\nTWILIO_ACCOUNT_SID={V['twilio']}\n"
        + f"MAILCHIMP_KEY={V['mailchimp']}\n"
    )


def codex_records() -> list[dict[str, Any]]:
    def env(n: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": TS % n, "type": kind, "payload": payload}

    creds = f'password = "{V["keyword"]}"\nchecksum = "{V["hex"]}"\n'
    patch = (
        "*** Begin Patch\n*** Add File: .npmrc\n"
        f"+//registry.npmjs.org/:_authToken={V['npm']}\n*** End Patch\n"
    )
    return [
        env(1, "session_meta", {"id": CODEX_ID, "cwd": "/work/app", "originator": "codex_cli_rs",
                                "cli_version": "0.60.0", "source": "cli",
                                "model_provider": "openai"}),
        env(2, "turn_context", {"cwd": "/work/app", "model": "gpt-5-codex"}),
        env(3, "event_msg", {"type": "user_message", "kind": "plain",
                             "message": f"use postgres://admin:{V['basic_password']}@db.example.com:5432/app"}),
        env(4, "response_item", {"type": "function_call", "name": "shell", "call_id": "call_1",
                                 "arguments": orjson.dumps({"command": ["bash", "-lc",
                                                                        "cat /work/app/creds.ini"],
                                                            "workdir": "/work/app"}).decode()}),
        env(5, "response_item", {"type": "function_call_output", "call_id": "call_1",
                                 "output": orjson.dumps({"output": creds, "metadata": {
                                     "exit_code": 0, "duration_seconds": 0.1}}).decode()}),
        env(6, "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                 "call_id": "call_2", "status": "completed", "input": patch}),
        env(7, "response_item", {"type": "custom_tool_call_output", "call_id": "call_2",
                                 "output": "Success. Updated the following files:\nA .npmrc\n"}),
        env(8, "response_item", {"type": "function_call", "name": "exec_command",
                                 "call_id": "call_3",
                                 "arguments": orjson.dumps({"cmd": "env | grep SQUARE"}).decode()}),
        env(9, "response_item", {"type": "function_call_output", "call_id": "call_3",
                                 "output": "Chunk ID: 1\nWall time: 0.1 seconds\n"
                                 f"Process exited with code 0\nOutput:\nSQUARE_SECRET={V['square']}\n"}),
    ]


def muse_records() -> list[dict[str, Any]]:
    def item(seq: int, it: dict[str, Any]) -> dict[str, Any]:
        return {"type": "item", "seq": seq, "source": "runtime", "created_at": TS % seq, "item": it}

    keys = f"gitlab={V['gitlab']}\npassword = {V['pypi']}\n"
    return [
        {"type": "session_header", "session_id": "muse-secret-1", "agent_id": "bot",
         "created_at": TS % 0},
        item(1, {"type": "message", "role": "user",
                 "text": f"the telegram token is {V['telegram']}"}),
        item(2, {"type": "function_call", "call_id": "m1", "name": "read",
                 "arguments": orjson.dumps({"path": "/srv/bot/keys.txt"}).decode()}),
        item(3, {"type": "function_call_output", "call_id": "m1", "output": keys, "success": True}),
        item(4, {"type": "function_call", "call_id": "m2", "name": "write",
                 "arguments": orjson.dumps({"path": "/srv/bot/blob.py",
                                            "content": f'blob = "{V["base64"]}"\n'}).decode()}),
        item(5, {"type": "function_call_output", "call_id": "m2", "output": "ok", "success": True}),
    ]


# (type, file path or None) for every planted secret; 21 secrets of 20 types.
EXPECTED = {
    ("AWS Access Key", None),  # Claude prompt
    ("GitHub Token", "/work/proj/config.py"),  # Claude Write content
    ("Private Key", "/work/proj/config.py"),
    ("AWS Access Key", "/work/proj/app.py"),  # Claude Edit new_string
    ("Stripe Access Key", "/work/proj/.env"),  # Claude Read result
    ("Slack Token", "/work/proj/.env"),
    ("OpenAI Token", "/work/proj/notes.txt"),  # Claude Bash output (cat)
    ("JSON Web Token", "/work/proj/notes.txt"),
    ("SendGrid API Key", None),  # Claude spilled tool-results file
    ("Twilio API Key", None),
    ("Mailchimp Access Key", None),
    ("Discord Bot Token", None),  # Claude assistant text
    ("Basic Auth Credentials", None),  # Codex prompt
    ("Secret Keyword", "/work/app/creds.ini"),  # Codex shell output (cat)
    ("Hex High Entropy String", "/work/app/creds.ini"),
    ("NPM tokens", None),  # Codex apply_patch content
    ("Square OAuth Secret", None),  # Codex exec_command output
    ("Telegram Bot Token", None),  # Muse prompt
    ("GitLab Token", "/srv/bot/keys.txt"),  # Muse read result
    ("PyPI Token", "/srv/bot/keys.txt"),
    ("Base64 High Entropy String", "/srv/bot/blob.py"),  # Muse write content
}


def write_home(home: Path) -> None:
    proj = home / ".claude" / "projects" / "-work-proj"
    (proj / SID / "tool-results").mkdir(parents=True)
    (proj / SID / "tool-results" / "toolu_spill.txt").write_text(spilled_text())
    (proj / f"{SID}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in claude_records()))
    codex = home / ".codex" / "sessions" / "2026" / "11" / "01"
    codex.mkdir(parents=True)
    (codex / f"rollout-2026-11-01T10-00-00-{CODEX_ID}.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in codex_records())
    )
    muse = home / "agents" / "bot" / "sessions"
    muse.mkdir(parents=True)
    (muse / "bot.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in muse_records()))


def needles() -> list[bytes]:
    """Every planted value and its base64 and hex forms, as bytes to search for."""
    out: list[bytes] = []
    for _name, value in V.items():
        raw = value.encode()
        out += [raw, base64.b64encode(raw), base64.urlsafe_b64encode(raw), raw.hex().encode()]
    return out


def raw_call(sock: Path, method: str, params: dict[str, Any] | None = None) -> bytes:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(str(sock))
    s.sendall(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})
              + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


def test_planted_values_are_secrets_to_the_engine() -> None:
    """Precondition: each planted line is a finding of its type for detect-secrets."""
    scanner = SecretScanner(None, {}, b"k" * 32)
    lines = {
        "AWS Access Key": V["aws"], "GitHub Token": V["github"], "Private Key": PRIVATE_KEY,
        "Stripe Access Key": V["stripe"], "Slack Token": V["slack"],
        "OpenAI Token": V["openai"], "JSON Web Token": V["jwt"],
        "SendGrid API Key": V["sendgrid"], "Twilio API Key": V["twilio"],
        "Mailchimp Access Key": V["mailchimp"], "Discord Bot Token": V["discord"],
        "Basic Auth Credentials": f"postgres://admin:{V['basic_password']}@db.example.com:5432",
        "Secret Keyword": f'password = "{V["keyword"]}"', "Hex High Entropy String":
        f'checksum = "{V["hex"]}"', "NPM tokens": f"//registry.npmjs.org/:_authToken={V['npm']}",
        "Square OAuth Secret": V["square"], "Telegram Bot Token": V["telegram"],
        "GitLab Token": V["gitlab"], "PyPI Token": V["pypi"],
        "Base64 High Entropy String": f'blob = "{V["base64"]}"',
    }
    for expected, line in lines.items():
        assert expected in {f.type for f in scanner.scan(line)}, expected
    assert len(lines) == 20


def test_every_planted_secret_is_reported_and_none_is_stored(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_home(home)
    d = DaemonProcess(home, env={"MUSE_AGENTS_DIR": str(home / "agents")})
    responses: list[bytes] = []
    try:
        d.start()
        d.wait_live()
        wait_for(lambda: len(orjson.loads(raw_call(d.socket_path, "findings.list"))["result"]
                             ["findings"]) >= len(EXPECTED), timeout=20)
        raw = raw_call(d.socket_path, "findings.list", {"limit": 1000})
        responses.append(raw)
        findings = orjson.loads(raw)["result"]["findings"]
        got = {(f["type"], f["path"]) for f in findings}
        missing = EXPECTED - got
        assert not missing, missing
        assert len(EXPECTED) >= 20 and len({t for t, _ in EXPECTED}) >= 12
        for f in findings:
            assert set(f) >= {"session_id", "event_id", "call_id", "path", "type", "line",
                              "hash", "ts"}
            assert f["event_id"] is not None and f["line"] >= 1
        # The hash is the keyed HMAC of the value: recognisable, not reversible.
        key = (d.data_dir / "hash.key").read_bytes()
        aws = [f for f in findings if f["type"] == "AWS Access Key" and f["path"] is None]
        assert aws[0]["hash"] == hmac.new(key, V["aws"].encode(), hashlib.sha256).hexdigest()
        gh = next(f for f in findings if f["type"] == "GitHub Token")
        assert gh["hash"] == hmac.new(key, V["github"].encode(), hashlib.sha256).hexdigest()
        assert {f["session_id"].split(":")[0] for f in findings} == {"claude-code", "codex", "muse"}

        # Sensitive reads are events even without a finding; the report counts them.
        report_raw = raw_call(d.socket_path, "findings.report")
        responses.append(report_raw)
        report = orjson.loads(report_raw)["result"]
        assert report["findings"] == len(findings)
        assert [s["path"] for s in report["sensitive_reads"]] == ["/work/proj/.env"]
        assert report["by_type"]["AWS Access Key"]["findings"] == 2

        # Stored prompts are redacted, not dropped.
        prompts_raw = raw_call(d.socket_path, "events.list", {"kinds": ["prompt"], "limit": 100})
        responses.append(prompts_raw)
        texts = [e["text"] for e in orjson.loads(prompts_raw)["result"]["events"]]
        assert "deploy with key [REDACTED:AWS Access Key] please" in texts
        messages_raw = raw_call(d.socket_path, "events.list", {"kinds": ["message"], "limit": 100})
        responses.append(messages_raw)
        claude_messages = [e["text"] for e in orjson.loads(messages_raw)["result"]["events"]
                           if e["adapter"] == "claude-code"]
        assert claude_messages == [
            "Your bot token looks like [REDACTED:Discord Bot Token]; rotate it.\n\n"
            "Then restart the bot."
        ]

        # A live alert: a subscriber to secret events sees a new finding as it lands.
        alerts: list[bytes] = []
        ready = threading.Event()

        def listen() -> None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(20)
            s.connect(str(d.socket_path))
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"kinds":["secret"]}}\n')
            buf = b""
            while b'"method":"event"' not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                ready.set()
            alerts.append(buf)
            s.close()

        t = threading.Thread(target=listen, daemon=True)
        t.start()
        assert ready.wait(10)
        live = {"type": "user", "sessionId": SID, "uuid": "u-live", "timestamp": TS % 30,
                "cwd": "/work/proj", "message": {"role": "user",
                                                 "content": f"and this one {V['aws_live']}"}}
        with (home / ".claude" / "projects" / "-work-proj" / f"{SID}.jsonl").open("ab") as fh:
            fh.write(orjson.dumps(live) + b"\n")
        t.join(15)
        assert alerts and b'"AWS Access Key"' in alerts[0]
        responses.extend(alerts)

        # Every other read method, for the leak check.
        for method, params in [
            ("events.list", {"limit": 10000}),
            ("sessions.list", {}),
            ("sessions.get", {"id": SID}),
            ("sessions.get", {"id": CODEX_ID}),
            ("sessions.files", {"id": SID}),
            ("commands.list", {}),
            ("files.reads", {"path": "/work/proj/.env"}),
            ("status", {}),
        ]:
            responses.append(raw_call(d.socket_path, method, params))
        time.sleep(0.5)
    finally:
        d.stop()
    files = [d.data_dir / n for n in ("agentsrc.db", "agentsrc.db-wal", "agentsrc.db-shm")]
    blobs = {str(p): p.read_bytes() for p in files if p.exists()}
    assert str(files[0]) in blobs
    blobs["daemon log"] = d.log_path.read_bytes()
    blobs["socket responses"] = b"".join(responses)
    for where, blob in blobs.items():
        for needle in needles():
            assert needle not in blob, f"a planted value (or its encoding) is in {where}"
    d.cleanup()


@pytest.mark.parametrize("store_text", [True, False])
def test_a_message_being_written_keeps_nothing_the_store_does_not(
    tmp_path: Path, store_text: bool
) -> None:
    """The adapter keeps the message it is assembling in the file's state, which is
    committed with the events: it holds the message as stored (redacted; no text when
    none is stored), never the secret or the text itself."""
    from agentsrc_daemon.config import ScanConfig
    from agentsrc_daemon.ingest.round import Ingestor
    from agentsrc_daemon.ingest.sources import SourceSpec
    from agentsrc_daemon.secrets.stage import SecretStage
    from agentsrc_daemon.store import Batch, Reader, Store

    home = tmp_path / "home"
    write_home(home)
    path = home / ".claude" / "projects" / "-work-proj" / f"{SID}.jsonl"
    whole = path.read_bytes()
    cut = whole.rindex(b"\n", 0, len(whole) - 1) + 1  # before the message's second line
    path.write_bytes(whole[:cut])
    stage = SecretStage(SecretScanner(None, {}, b"k" * 32), ScanConfig(store_text=store_text))
    ingestor = Ingestor(max_line_bytes=1 << 20, scan=stage)
    spec = SourceSpec(str(path), "claude-code", "jsonl", str(home / ".claude" / "projects"))
    store = Store(tmp_path / "db.sqlite")
    for content in (whole[:cut], whole):  # the first line, then the second appended
        path.write_bytes(content)
        batch = Batch()
        ingestor.ingest(spec, batch, 1 << 20)
        store.commit(batch)
        (state,) = store.conn.execute("SELECT unpack(state) FROM sources").fetchone()
        assert state[:1] == b"{"  # the JSON (stored packed: store/packing.py)
        assert V["discord"].encode() not in state
        assert (b"rotate it" in state) == store_text
    store.close()
    reader = Reader(tmp_path / "db.sqlite")
    (message,) = reader.events(kinds=["message"])
    expected = (
        {"text": "Your bot token looks like [REDACTED:Discord Bot Token]; rotate it.\n\n"
                 "Then restart the bot."}
        if store_text
        else {"text_omitted": True,
              "text_chars": len(f"Your bot token looks like {V['discord']}; rotate it.\n\n"
                                "Then restart the bot.")}
    )
    assert {k: message.get(k) for k in expected} == expected
    assert ("text" in message) == store_text
    assert reader.session(f"claude-code:{SID}")["messages"] == 1  # type: ignore[index]
    findings = reader.findings()
    assert [f["type"] for f in findings if f["of_kind"] == "message"] == ["Discord Bot Token"]
    reader.close()
