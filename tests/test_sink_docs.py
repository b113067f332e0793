"""Every query of docs/team.md, run against a real ClickHouse server on data two
daemons (two people, two machines) sent, each with its expected result."""

from __future__ import annotations

import random
import re
import string
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_sink import configure_sink, wait_synced

from clickhouse import ClickHouseServer
from fake_secrets import fragments
from harness import REPO, DaemonProcess

pytestmark = pytest.mark.slow

DAY = (datetime.now(UTC) - timedelta(days=2)).replace(hour=10, minute=0, second=0, microsecond=0)
rnd = random.Random(1313)
AWS = fragments("AK", "IA") + "".join(rnd.choice(string.ascii_uppercase + string.digits) for _ in range(16))
GITHUB = fragments("gh", "p_") + "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(36))


def ts(n: int) -> str:
    return (DAY + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class Transcript:
    """A Claude Code session, record by record."""

    def __init__(self, sid: str, cwd: str, model: str) -> None:
        self.sid, self.cwd, self.model = sid, cwd, model
        self.records: list[dict[str, Any]] = []

    def _rec(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        n = len(self.records) + 1
        self.records.append({"type": kind, "sessionId": self.sid, "uuid": f"{self.sid[:8]}-{n}",
                             "timestamp": ts(n), "cwd": self.cwd, "version": "2.1.0",
                             "isSidechain": False, "message": message, **extra})

    def prompt(self, text: str) -> None:
        self._rec("user", {"role": "user", "content": text})

    def tool(self, name: str, inp: dict[str, Any], result: str, *, error: bool = False,
             exit_code: int | None = None, tokens: tuple[int, int] = (100, 10)) -> None:
        n = len(self.records) + 1
        tid = f"toolu_{self.sid[:8]}_{n}"
        self._rec("assistant", {"id": f"msg_{self.sid[:8]}_{n}", "role": "assistant",
                                "model": self.model, "usage": {"input_tokens": tokens[0],
                                                               "output_tokens": tokens[1]},
                                "content": [{"type": "tool_use", "id": tid, "name": name,
                                             "input": inp}]})
        extra: dict[str, Any] = {}
        if exit_code is not None:
            extra["toolUseResult"] = {"stdout": result, "stderr": "", "exitCode": exit_code}
        self._rec("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": result, "is_error": error}]},
            **extra)

    def write(self, home: Path) -> None:
        proj = home / ".claude" / "projects" / ("-" + self.cwd.strip("/").replace("/", "-"))
        proj.mkdir(parents=True, exist_ok=True)
        (proj / f"{self.sid}.jsonl").write_bytes(
            b"".join(orjson.dumps(r) + b"\n" for r in self.records))


def ana_home(home: Path) -> None:
    a1 = Transcript("a1a1a1a1-0000-4000-8000-000000000001", "/work/shop", "m-large")
    a1.prompt(f"fix the checkout; the key is {AWS}")
    a1.tool("Edit", {"file_path": "/work/shop/app.py", "old_string": "a", "new_string": "b"},
            "ok", tokens=(100, 20))
    a1.tool("Edit", {"file_path": "/work/shop/config/production.yaml", "old_string": "a",
                     "new_string": "b"}, "ok", tokens=(200, 30))
    a1.tool("Bash", {"command": "make test"}, "2 tests failed", error=True, exit_code=2,
            tokens=(300, 40))
    a1.tool("Bash", {"command": "make test"}, "all passed", exit_code=0, tokens=(50, 10))
    a1.write(home)
    a2 = Transcript("a2a2a2a2-0000-4000-8000-000000000002", "/work/blog", "m-small")
    a2.prompt("write a post")
    a2.tool("Edit", {"file_path": "/work/blog/post.md", "old_string": "a", "new_string": "b"},
            "ok", tokens=(10, 5))
    a2.tool("Bash", {"command": "npm run build"}, "error", error=True, exit_code=1,
            tokens=(20, 5))
    a2.write(home)


def bo_home(home: Path) -> None:
    b1 = Transcript("b1b1b1b1-0000-4000-8000-000000000003", "/work/shop", "m-small")
    b1.prompt("deploy it")
    b1.tool("Read", {"file_path": "/srv/prod/.env"}, f"GITHUB_TOKEN={GITHUB}\n",
            tokens=(1000, 100))
    b1.tool("Edit", {"file_path": "/work/shop/app.py", "old_string": "a", "new_string": "b"},
            "ok", tokens=(500, 50))
    b1.tool("Bash", {"command": "make test"}, "1 test failed", error=True, exit_code=2,
            tokens=(100, 10))
    b1.write(home)


def doc_queries() -> dict[str, str]:
    """Title -> SQL of every query in docs/team.md's Queries section."""
    text = (REPO / "docs" / "team.md").read_text()
    section = text.split("\n## Queries\n", 1)[1]
    out: dict[str, str] = {}
    for block in re.split(r"\n### ", section)[1:]:
        title = block.split("\n", 1)[0].strip()
        sql = re.findall(r"```sql\n(.*?)```", block, re.S)
        assert len(sql) == 1, title
        out[title] = sql[0]
    return out


S_A1 = "claude-code:a1a1a1a1-0000-4000-8000-000000000001"
S_A2 = "claude-code:a2a2a2a2-0000-4000-8000-000000000002"
S_B1 = "claude-code:b1b1b1b1-0000-4000-8000-000000000003"
D = DAY.strftime("%Y-%m-%d")
# The made-up models' prices, per million tokens (docs/usage.md, "Overriding prices").
PRICES = """
[prices.models."m-large"]
input = 10
output = 40

[prices.models."m-small"]
input = 1
output = 2
"""

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "Findings by type and developer this week": [
        {"user": "ana", "secret_type": "AWS Access Key", "findings": "1", "distinct_values": "1"},
        {"user": "bo", "secret_type": "GitHub Token", "findings": "1", "distinct_values": "1"},
    ],
    "Where secrets reached a model": [
        {"secret_type": "AWS Access Key", "of_kind": "prompt", "findings": "1", "people": "1"},
        {"secret_type": "GitHub Token", "of_kind": "tool_result", "findings": "1", "people": "1"},
    ],
    "Sessions that touched production configs": [
        {"host": "laptop-ana", "user": "ana", "session_id": S_A1,
         "paths": ["/work/shop/config/production.yaml"]},
        {"host": "laptop-bo", "user": "bo", "session_id": S_B1, "paths": ["/srv/prod/.env"]},
    ],
    "Tokens per model per day": [
        {"day": D, "model": "m-large", "input": "650", "output": "100", "total": "750"},
        {"day": D, "model": "m-small", "input": "1630", "output": "170", "total": "1800"},
    ],
    # The two models priced by the daemons' [prices] (PRICES below): m-large at $10 in,
    # $40 out per million tokens, m-small at $1 and $2.
    "Cost per person and model": [
        {"user": "ana", "model": "m-large", "usd": 0.0105, "responses": "4", "unpriced": "0"},
        {"user": "bo", "model": "m-small", "usd": 0.00192, "responses": "3", "unpriced": "0"},
        {"user": "ana", "model": "m-small", "usd": 0.00005, "responses": "2", "unpriced": "0"},
    ],
    "Cost per day": [
        {"day": D, "usd": 0.01247, "unpriced_tokens": "0", "people": "2"},
    ],
    "Cost per project": [
        {"project_root": "/work/shop", "usd": 0.01242, "sessions": "2", "people": "2"},
        {"project_root": "/work/blog", "usd": 0.00005, "sessions": "1", "people": "1"},
    ],
    "Tokens per person and model": [
        {"user": "bo", "model": "m-small", "total": "1760", "responses": "3"},
        {"user": "ana", "model": "m-large", "total": "750", "responses": "4"},
        {"user": "ana", "model": "m-small", "total": "40", "responses": "2"},
    ],
    "The most-changed files": [
        {"path": "/work/shop/app.py", "edits": "2", "sessions": "2", "people": "2"},
        {"path": "/work/blog/post.md", "edits": "1", "sessions": "1", "people": "1"},
        {"path": "/work/shop/config/production.yaml", "edits": "1", "sessions": "1",
         "people": "1"},
    ],
    "Commands that keep failing": [
        {"command": "make test", "failures": "2", "runs": "3", "people": "2"},
        {"command": "npm run build", "failures": "1", "runs": "1", "people": "1"},
    ],
    "Sessions per project": [
        {"project_root": "/work/shop", "sessions": "2", "people": "2", "prompts": "2",
         "tokens": "2510"},
        {"project_root": "/work/blog", "sessions": "1", "people": "1", "prompts": "1",
         "tokens": "40"},
    ],
    "Findings in one project's sessions": [
        {"user": "ana", "secret_type": "AWS Access Key", "path": "", "of_kind": "prompt"},
        {"user": "bo", "secret_type": "GitHub Token", "path": "/srv/prod/.env",
         "of_kind": "tool_result"},
    ],
    "Active people and sessions per day": [
        {"day": D, "people": "2", "sessions": "3", "prompts": "3"},
    ],
    "Tools used, by agent": [
        {"agent": "claude-code", "tool": "Bash", "calls": "4"},
        {"agent": "claude-code", "tool": "Edit", "calls": "4"},
        {"agent": "claude-code", "tool": "Read", "calls": "1"},
    ],
    "Sessions with the most failed commands": [
        {"host": "laptop-ana", "user": "ana", "session_id": S_A1, "failed": "1",
         "commands": "2"},
        {"host": "laptop-ana", "user": "ana", "session_id": S_A2, "failed": "1",
         "commands": "1"},
        {"host": "laptop-bo", "user": "bo", "session_id": S_B1, "failed": "1", "commands": "1"},
    ],
    "Events once each, without FINAL": [
        {"host": "laptop-ana", "user": "ana", "events": None, "edits": "3"},
        {"host": "laptop-bo", "user": "bo", "events": None, "edits": "1"},
    ],
    "Freshness of each daemon": [
        {"host": "laptop-ana", "user": "ana", "sent_after_last_event": 1, "seen": 1},
        {"host": "laptop-bo", "user": "bo", "sent_after_last_event": 1, "seen": 1},
    ],
}


@pytest.fixture(scope="module")
def team_db(clickhouse: ClickHouseServer, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[tuple[str, dict[str, int]]]:
    """Two daemons (ana on laptop-ana, bo on laptop-bo) sent their records; each then
    sent a part of it again (a restart that lost its saved position), so the queries
    meet duplicates. Yields the database and each host's event count."""
    db = "team_" + uuid.uuid4().hex[:8]
    base = tmp_path_factory.mktemp("team")
    made: list[DaemonProcess] = []
    events: dict[str, int] = {}
    try:
        for user, write in (("ana", ana_home), ("bo", bo_home)):
            home = base / user
            write(home)
            d = DaemonProcess(home)
            made.append(d)
            configure_sink(d, clickhouse.url, db, host_label=f"laptop-{user}", user_label=user)
            config = d.run_dir / "config" / "agentsrc" / "config.toml"
            config.write_text(config.read_text() + PRICES)
            d.start()
            wait_synced(d)
            events[f"laptop-{user}"] = d.call("status")["events"]
        # Resend: the same rows again (as after a crash before the position was saved).
        clickhouse.query(f"INSERT INTO {db}.events SELECT * FROM {db}.events")
        clickhouse.query(f"INSERT INTO {db}.findings SELECT * FROM {db}.findings")
        clickhouse.query(f"INSERT INTO {db}.sessions SELECT * FROM {db}.sessions")
        yield db, events
    finally:
        for d in made:
            d.cleanup()
        clickhouse.drop(db)


def test_every_query_has_an_expected_result() -> None:
    assert set(doc_queries()) == set(EXPECTED)
    assert len(EXPECTED) >= 12


@pytest.mark.parametrize("title", sorted(EXPECTED))
def test_doc_query(clickhouse: ClickHouseServer, team_db: tuple[str, dict[str, int]],
                   title: str) -> None:
    db, events = team_db
    raw = int(clickhouse.scalar(f"SELECT count() FROM {db}.events"))
    assert raw == 2 * sum(events.values())  # every row is there twice
    sql = doc_queries()[title].replace("agentsrc.", f"{db}.")
    got = clickhouse.rows(sql)
    expected = [dict(r) for r in EXPECTED[title]]
    for r in expected:
        if "events" in r and r["events"] is None:
            r["events"] = str(events[r["host"]])
    assert got == expected

