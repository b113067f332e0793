"""Cost on the socket (issue 27, docs/protocol.md): ``usage.summary`` and
``usage.report`` (by day, week, month, session, project, model, agent) carry a ``cost``
object on every row and total, the 5-hour blocks theirs with the active block's burn
rate and projection, ``sessions.list``/``sessions.get`` each session's, and
``usage.statusline`` the status line's three figures. Every figure adds up to the same
dollars whichever way it is cut. The real daemon on a copy of the corpus."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from agentsrc_daemon.errors import RemoteError

from corpus import corpus_home
from harness import DaemonProcess, copy_tree, wait_for

pytestmark = pytest.mark.slow

E2E4 = "claude-code:e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06"


@pytest.fixture(scope="module")
def d(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    home = tmp_path_factory.mktemp("surfaces") / "home"
    copy_tree(corpus_home(), home)
    daemon = DaemonProcess(home)
    try:
        daemon.start()
        daemon.wait_live()
        yield daemon
    finally:
        daemon.cleanup()


def nano(cost: dict[str, Any]) -> int:
    return round((cost["usd"] or 0) * 1_000_000)  # micro-dollars: the JSON's precision


def test_every_grouping_adds_up_to_the_total(d: DaemonProcess) -> None:
    summary = d.call("usage.summary", {})
    total = summary["totals"]["cost"]
    # The corpus: OpenCode's own costs beside our estimates, the no-model Codex rollout.
    assert total["kind"] == "mixed" and total["unpriced_tokens"] > 50_000_000
    assert total["estimated_usd"] > 0
    for by in ("day", "week", "month", "session", "project", "model", "agent"):
        report = d.call("usage.report", {"by": by, "limit": 10_000})
        assert report["totals"]["cost"] == total, by
        rows = report["rows"]
        assert sum(r["responses"] for r in rows) == summary["totals"]["responses"], by
        # Each row's micro-dollars are rounded: the sum is within a micro-dollar a row.
        assert abs(sum(nano(r["cost"]) for r in rows) - nano(total)) <= len(rows), by
        assert sum(r["cost"].get("unpriced_tokens", 0) for r in rows) == total["unpriced_tokens"], by
        if by in ("day", "week", "month"):
            assert [r[by] for r in rows] == sorted((r[by] for r in rows), reverse=True)
        else:
            usd = [r["cost"]["usd"] or 0 for r in rows]
            assert usd == sorted(usd, reverse=True), by
    by_agent = {r["agent"]: r["cost"] for r in summary["by_agent"]}
    assert by_agent["opencode"] == {"usd": 1.7678, "kind": "reported", "estimated_usd": 1.977848}
    assert by_agent["claude-code"]["kind"] == "estimated"
    # The Amp thread's credits, a cent each, are exactly Anthropic's list price.
    assert by_agent["amp"] == {"usd": 0.045618, "kind": "reported", "estimated_usd": 0.045618}
    models = {r["model"]: r["cost"] for r in summary["by_model"]}
    # The tokens left out: the no-model Codex rollout's and the Qwen Code chat's, whose
    # coder-model (Qwen's OAuth alias) is in no price table.
    assert models[None] == {"usd": None, "kind": "unpriced", "unpriced_tokens": 53_077_637,
                            "reason": "no model recorded"}
    assert models["coder-model"] == {"usd": None, "kind": "unpriced", "unpriced_tokens": 8_511_618,
                                     "reason": "model not in the price table"}
    assert total["unpriced_tokens"] == 53_077_637 + 8_511_618


def test_a_report_by_week_month_and_session(d: DaemonProcess) -> None:
    days = d.call("usage.report", {"by": "day", "limit": 10_000})["rows"]
    weeks = d.call("usage.report", {"by": "week", "limit": 10_000})["rows"]
    for week in weeks:
        monday = datetime.fromisoformat(week["week"])
        assert monday.weekday() == 0
        inside = [r for r in days if monday.date().isoformat() <= r["day"]
                  < (monday + timedelta(days=7)).date().isoformat()]
        assert week["responses"] == sum(r["responses"] for r in inside)
        assert week["total_tokens"] == sum(r["total_tokens"] for r in inside)
    months = d.call("usage.report", {"by": "month", "limit": 10_000})["rows"]
    assert {m["month"] for m in months} == {r["day"][:7] for r in days}
    top = d.call("usage.report", {"by": "session", "limit": 3})["rows"]
    assert [r["session"] for r in top][0] == "claude-code:f84b640b-c091-44bf-9464-71a557d19a1d"
    assert len(top) == 3 and top[0]["agent"] == "claude-code" and top[0]["sessions"] == 1
    assert top[0]["cost"] == {"usd": 26.748669, "kind": "estimated"}
    ranged = d.call("usage.report", {"by": "day", "since": "2026-04-07T00:00:00Z",
                                     "until": "2026-04-08T00:00:00Z"})
    assert [r["day"] for r in ranged["rows"]] == ["2026-04-07"]
    assert ranged["totals"]["cost"] == {"usd": 4.086012, "kind": "estimated"}
    with pytest.raises(RemoteError, match="by must be one of"):
        d.call("usage.report", {"by": "year"})


def test_sessions_carry_their_cost(d: DaemonProcess) -> None:
    listing = d.call("sessions.list", {"limit": 200})["sessions"]
    costs = {s["id"]: s["cost"] for s in listing}
    assert costs[E2E4] == {"usd": 4.086012, "kind": "estimated"}
    nomodel = "codex:97b66f6c-a160-40e0-bd0f-1fdcbbb9498b"
    assert costs[nomodel]["kind"] == "unpriced" and costs[nomodel]["reason"] == "no model recorded"
    # Sessions whose transcripts record no usage at all: nothing to price, not $0.
    without = [s["id"] for s in listing if "usage" not in
               d.call("sessions.get", {"id": s["id"]})["session"]["kinds"]]
    assert without and all(costs[sid] == {"usd": None, "kind": "unpriced", "unpriced_tokens": 0,
                                          "reason": "no usage recorded"} for sid in without)
    assert d.call("sessions.get", {"id": E2E4})["session"]["cost"] == costs[E2E4]


def test_blocks_carry_their_cost(d: DaemonProcess) -> None:
    blocks = d.call("usage.blocks", {"since": "2026-04-07T00:00:00Z", "until": "2026-04-08T00:00:00Z"})
    (block,) = blocks["blocks"]
    # The hour of its first request, for 5 hours.
    assert block["first"].startswith("2026-04-07T02:") and block["last"].startswith("2026-04-07T03:")
    assert block["start"] == "2026-04-07T02:00:00.000Z" and block["end"] == "2026-04-07T07:00:00.000Z"
    assert block["cost"] == {"usd": 4.086012, "kind": "estimated"}
    assert not block["active"] and block["projected"] is None
    span_h = (datetime.fromisoformat(block["last"]) - datetime.fromisoformat(block["first"])
              ).total_seconds() / 3600
    assert block["burn_usd_per_hour"] == pytest.approx(4.086012 / span_h, abs=1e-6)


def _claude_line(uuid: str, message: str, ts: datetime, output: int) -> bytes:
    return orjson.dumps({
        "type": "assistant", "uuid": uuid, "sessionId": "live-block", "timestamp":
        ts.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "cwd": "/tmp/live",
        "message": {"id": message, "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": {"input_tokens": 1000, "output_tokens": output}},
    }) + b"\n"


def test_the_status_line_answers_the_session_today_and_the_block(d: DaemonProcess) -> None:
    now = datetime.now(UTC)
    path = d.home / ".claude" / "projects" / "-tmp-live" / "live-block.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two requests ten minutes apart, the second a minute ago: $0.003 + $0.0105 + $0.003
    # ($3 in, $15 out per million) = $0.0165 over ten minutes.
    path.write_bytes(_claude_line("a", "m1", now - timedelta(minutes=11), 0)
                     + _claude_line("b", "m2", now - timedelta(minutes=1), 700))
    local_midnight = now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    answer = wait_for(lambda: (a := d.call("usage.statusline", {
        "session_id": "live-block", "day_start": local_midnight.isoformat()})).get("session") and a)
    assert answer["session"] == {"cost": {"usd": 0.0165, "kind": "estimated"}, "tokens": 2700}
    block = answer["block"]
    start = (now - timedelta(minutes=11)).replace(minute=0, second=0, microsecond=0)
    assert block["start"] == start.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert block["active"] and block["cost"] == {"usd": 0.0165, "kind": "estimated"}
    assert block["burn_usd_per_hour"] == pytest.approx(0.0165 * 6, rel=1e-3)
    left_h = (datetime.fromisoformat(block["end"]) - datetime.now(UTC)).total_seconds() / 3600
    assert block["projected"]["usd"] == pytest.approx(0.0165 + 0.099 * left_h, abs=2e-4)
    # Today: the corpus is older than any real today, so the live session alone.
    assert answer["today"] == {"cost": {"usd": 0.0165, "kind": "estimated"}}
    # Our own id works too; a session with no usage yet is null.
    assert d.call("usage.statusline", {"session_id": "claude-code:live-block",
                                       "day_start": local_midnight.isoformat()})["session"] == answer["session"]
    assert d.call("usage.statusline", {"session_id": "nothing-yet"})["session"] is None


