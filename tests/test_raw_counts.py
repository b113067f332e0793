"""The independent counters of tests/raw_counts.py, pinned on the fixtures and the new
corpus files. The fixture figures were worked out by hand from what each fixture was built
to hold (docs/formats.md, "The formats of July–October 2026"); the corpus figures were checked
against plain greps of the files (the 0.144 rollouts' code-mode scripts printed 22 and 15
shell results as the tool returned them, all exit 0; their other "Exit code: 1" lines are
the scripts' own errors, and their labelled, re-quoted results are the scripts' output).
tests/test_formats.py then checks the adapters against these counters exactly."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

from corpus import corpus_home
from raw_counts import USAGE_KEYS, Counts, claude_counts, codex_counts, gemini_counts

FIXTURE_HOME = Path(__file__).resolve().parent / "fixtures" / "formats" / "home"


class S(NamedTuple):
    prompts: int
    briefs: int
    messages: int
    tool_calls: int
    commands: dict[int | None, int]  # exit code -> commands
    edits: dict[str, int]  # operation -> edits
    usage: tuple[int, ...]  # USAGE_KEYS in order


def summary(c: Counts) -> S:
    return S(c.prompts, c.briefs, c.messages, c.tool_calls, dict(Counter(c.commands)),
             dict(Counter(op for _, op in c.edits)), tuple(c.usage[k] for k in USAGE_KEYS))


# fmt: off
FIXTURES: dict[str, S] = {
    ".codex/session_parts/01a08157-5e55-7157-8157-000000000157/part-0001.jsonl": S(1, 0, 0, 1, {0: 1}, {}, (8000, 40, 0, 7990, 0, 8040)),
    ".codex/session_parts/01a08157-5e55-7157-8157-000000000157/part-0002.jsonl": S(0, 0, 1, 1, {}, {}, (8100, 20, 8000, 90, 0, 8120)),
    ".codex/sessions/2026/08/06/rollout-2026-08-06T09-00-00-01a00147-5e55-7147-8147-000000000147.jsonl": S(2, 0, 2, 3, {1: 1}, {'update': 1}, (16080, 420, 10000, 0, 128, 16500)),
    ".codex/sessions/2026/08/22/rollout-2026-08-22T08-30-00-01a00148-5e55-7148-8148-000000000148.jsonl": S(1, 0, 2, 5, {0: 1}, {'move': 2}, (19000, 730, 13000, 0, 200, 19730)),
    ".codex/sessions/2026/08/28/rollout-2026-08-28T11-00-00-01a00149-5e55-7149-8149-000000000149.jsonl": S(1, 0, 2, 2, {1: 1}, {}, (16200, 510, 7000, 0, 184, 16710)),
    ".codex/sessions/2026/08/28/rollout-2026-08-28T11-00-20-01a00149-c41d-7149-8149-00000000c41d.jsonl": S(0, 1, 1, 1, {0: 1}, {}, (6100, 150, 3000, 0, 40, 6250)),
    ".codex/sessions/2026/09/20/rollout-2026-09-20T10-00-00-01a08153-5e55-7153-8153-000000000153.jsonl": S(2, 0, 3, 7, {0: 1, 2: 1}, {'add': 1}, (42113, 650, 24926, 17111, 96, 42763)),
    ".codex/sessions/2026/09/20/rollout-2026-09-20T10-00-12-01a08153-c41d-7153-8153-00000000c41d.jsonl": S(0, 1, 1, 1, {0: 1}, {}, (30400, 120, 27700, 2600, 20, 30520)),
    ".codex/sessions/2026/09/20/rollout-2026-09-20T10-00-30-01a08153-9a4d-7153-8153-000000009a4d.jsonl": S(0, 2, 2, 0, {}, {}, (13736, 194, 11564, 0, 111, 13930)),
    ".codex/sessions/2026/09/21/rollout-2026-09-21T09-00-00-01a08153-5e55-7153-8153-000000000153_01a0815a-5e55-7153-8153-0000000005e6.jsonl": S(1, 0, 1, 1, {0: 1}, {}, (8500, 47, 7200, 1240, 0, 8547)),
    ".codex/sessions/2026/09/30/rollout-2026-09-30T17-00-00-01a0a020-5e55-7020-8020-0000000a0202.jsonl": S(1, 0, 1, 1, {0: 1}, {}, (6200, 110, 2900, 0, 0, 6310)),
    ".codex/sessions/2026/10/09/rollout-2026-10-09T09-38-28-01a11f62-5e55-7119-8119-000000011192.jsonl": S(2, 0, 2, 5, {0: 1}, {'update': 1}, (51377, 387, 37887, 13461, 0, 51764)),
    "claude:5e0a2200-0000-4000-8000-00000000000a": S(2, 3, 6, 8, {None: 2}, {'update': 1}, (156, 471, 66020, 3190, 0, 69837)),
    "claude:5e0a2200-0000-4000-8000-00000000000b": S(1, 0, 1, 1, {}, {'write': 1}, (24, 27, 20500, 360, 0, 20911)),
    "claude:5e0a2200-0000-4000-8000-00000000000c": S(1, 0, 1, 1, {}, {}, (24, 41, 5200, 5270, 0, 10535)),
    "gemini": S(3, 0, 2, 4, {0: 1}, {'update': 2, 'write': 1}, (27200, 275, 21100, 0, 320, 27795)),
}
GEMINI_REWOUND = {"u4", "g4"}  # the prompt "$rewindTo" names and the answer after it

CORPUS: dict[str, S] = {
    ".codex/sessions/2026/07/11/rollout-2026-07-11T10-23-56-019f4efd-0137-7790-9622-c175e1415048.jsonl": S(0, 1, 3, 41, {0: 22}, {}, (1409060, 8826, 1289472, 0, 4498, 1417886)),
    ".codex/sessions/2026/07/11/rollout-2026-07-11T10-24-10-019f4efd-37a3-7730-acde-568b9592cea0.jsonl": S(0, 1, 2, 41, {0: 15}, {}, (2120760, 6467, 1988096, 0, 2820, 2127227)),
    "claude:5078d34e-e23c-45ab-899e-92ae7a71561b": S(0, 0, 5, 12, {None: 4}, {}, (133714, 2156, 160768, 0, 0, 296638)),
    "claude:a40d33bf-19ab-407b-b281-8395d3c17198": S(0, 1, 8, 40, {}, {}, (100660, 6074, 894464, 0, 0, 1001198)),
    "gemini": S(17, 0, 67, 95, {0: 15, 1: 5}, {'update': 21, 'write': 38}, (2915474, 26554, 2445241, 0, 12376, 2954404)),
}
# fmt: on


def counts_of(home: Path, key: str) -> S:
    if key.startswith("claude:"):
        return summary(claude_counts(home / ".claude" / "projects")[key.split(":", 1)[1]])
    if key == "gemini":
        return summary(gemini_counts(next((home / ".gemini").rglob("*.jsonl")))[0])
    return summary(codex_counts(home / key))


@pytest.mark.parametrize("key", sorted(FIXTURES), ids=lambda k: k.rsplit("/", 1)[-1][-24:])
def test_fixture_counts(key: str) -> None:
    assert counts_of(FIXTURE_HOME, key) == FIXTURES[key]


def test_every_fixture_transcript_is_counted() -> None:
    codex = {str(p.relative_to(FIXTURE_HOME)) for p in (FIXTURE_HOME / ".codex").rglob("*.jsonl")}
    assert codex == {k for k in FIXTURES if k.startswith(".codex/")}
    claude = set(claude_counts(FIXTURE_HOME / ".claude" / "projects"))
    assert {f"claude:{s}" for s in claude} == {k for k in FIXTURES if k.startswith("claude:")}
    assert gemini_counts(next((FIXTURE_HOME / ".gemini").rglob("*.jsonl")))[1] == GEMINI_REWOUND


@pytest.mark.parametrize("key", sorted(CORPUS), ids=lambda k: k.rsplit("/", 1)[-1][-24:])
def test_new_corpus_file_counts(key: str) -> None:
    home = corpus_home()
    if key == "gemini":
        path = next((home / ".gemini" / "tmp" / "ticketing-vc").rglob("*.jsonl"))
        assert summary(gemini_counts(path)[0]) == CORPUS[key]
        return
    assert counts_of(home, key) == CORPUS[key]
