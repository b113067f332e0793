"""The model names a home's transcripts record, per agent, with how many records name
each: the coverage question a price table must answer. It prints model names and
counts only, never transcript content.

Usage: python tools/corpus_models.py [HOME]   (default: $AGENTSRC_CORPUS)

It reads the raw records, not our adapters' events, so it also covers agents agentsrc
has no adapter for yet: every JSON value under a key that names a model (``model``,
``modelID``, ``modelId``, ``model_id``, ``selectedModel``, ``currentModel``, ``api_model_id``)
in JSON, JSONL and SQLite text columns, and Aider's ``Model:`` lines. A record naming
the same model under two keys counts once."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MODEL_KEYS = frozenset(
    ("model", "modelID", "modelId", "model_id", "selectedModel", "currentModel", "api_model_id")
)

# The agent of a path under the home, by its first matching prefix.
AGENT_ROOTS = (
    (".codex/", "codex"),
    (".claude/", "claude-code"),
    (".gemini/", "gemini"),
    (".copilot/", "copilot"),
    (".local/share/opencode/", "opencode"),
    (".cursor/", "cursor"),
    (".config/Code/", "cline"),
    (".qwen/", "qwen"),
    (".local/share/amp/", "amp"),
    (".continue/", "continue"),
    ("code/", None),  # Aider and Crush write into the project: told apart by file name
)

_AIDER_MODEL = re.compile(r"^> (?:Main )?[Mm]odel: (\S+)", re.MULTILINE)


def agent_of(rel: str) -> str | None:
    for prefix, agent in AGENT_ROOTS:
        if rel.startswith(prefix):
            if agent is not None:
                return agent
            if "/.crush/" in rel:
                return "crush"
            if "/.aider" in rel:
                return "aider"
    return None


def models_in(value: Any) -> set[str]:
    """The model names anywhere in one decoded record (a string under a model key; a
    dict under one is searched for its ``id``/``name``/``modelID``)."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if key in MODEL_KEYS and isinstance(inner, str) and inner.strip()[:1] not in "{[":
                    found.add(inner.strip())
                else:
                    stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item[:1] in "{[" and len(item) < 1 << 20:
            with contextlib.suppress(ValueError):  # JSON in a string (Cline, SQLite)
                stack.append(json.loads(item))
    return found


def records(path: Path) -> Iterator[Any]:
    """Each decoded record of a file: JSONL lines, a JSON document, SQLite rows' text."""
    if path.name.endswith((".db", ".sqlite")):
        yield from _sqlite_rows(path)
        return
    raw = path.read_bytes()
    if path.suffix == ".jsonl":
        for line in raw.splitlines():
            try:
                yield json.loads(line)
            except ValueError:
                continue
    elif path.suffix == ".json":
        try:
            yield json.loads(raw)
        except ValueError:
            return
    elif path.name.startswith(".aider.chat"):
        for name in _AIDER_MODEL.findall(raw.decode("utf-8", "replace")):
            yield {"model": name}


def _sqlite_rows(path: Path) -> Iterator[Any]:
    """Rows of a copy of the database with its -wal (most of Crush's rows are there):
    SQLite writes beside a database it opens, even read-only, and the corpus is never
    written."""
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in ("", "-wal"):
            if Path(f"{path}{suffix}").exists():
                shutil.copyfile(f"{path}{suffix}", Path(tmp, path.name + suffix))
        yield from _rows(Path(tmp, path.name))


def _rows(path: Path) -> Iterator[Any]:
    try:
        conn = sqlite3.connect(path)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - names from the file
                cols = [d[0] for d in conn.execute(f'SELECT * FROM "{table}" LIMIT 0').description]
                yield {c: v for c, v in zip(cols, row, strict=True) if isinstance(v, str)}
        conn.close()
    except sqlite3.Error:
        return


def count(home: Path) -> dict[str, Counter[str]]:
    per_agent: dict[str, Counter[str]] = {}
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        agent = agent_of(path.relative_to(home).as_posix())
        if agent is None:
            continue
        counter = per_agent.setdefault(agent, Counter())
        for record in records(path):
            counter.update(models_in(record))
    return per_agent


def main() -> None:
    home = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ["AGENTSRC_CORPUS"])
    for agent, counter in sorted(count(home).items()):
        print(f"{agent}: {sum(counter.values())} records naming a model")
        for name, n in counter.most_common():
            print(f"  {n:6d}  {name}")


if __name__ == "__main__":
    main()
