"""Aider's three files written as Aider writes them (aider/io.py: every record one write
of ``append_chat_history``; prompt_toolkit's FileHistory for the input history;
``log_llm_history`` for the LLM history), in the order Aider writes them: the input
history entry, then the typed line in the chat; the request, its response, then the
answer and the notes. The writing here is this test suite's own, from those rules.

``AiderSession.writes`` is the list of (file, bytes) in that order, so a test can replay
them whole or in pieces."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

CHAT = ".aider.chat.history.md"
INPUT = ".aider.input.history"
LLM = ".aider.llm.history"
T0 = datetime(2026, 1, 15, 10, 0, 0)


@dataclass
class AiderSession:
    folder: Path
    llm: bool = True
    inputs: bool = True
    writes: list[tuple[str, bytes]] = field(default_factory=list)
    now: datetime = T0

    def tick(self, seconds: float = 1.0) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def _chat(self, text: str) -> None:
        self.writes.append((CHAT, text.encode()))

    # -- the chat history

    def start(self, model: str = "anthropic/claude-sonnet-4", fmt: str = "diff") -> None:
        self._chat(f"\n# aider chat started at {self.now:%Y-%m-%d %H:%M:%S}\n\n")
        self.note("Aider v0.86.1")
        self.note(f"Main model: {model} with {fmt} edit format, infinite output")
        self.note("Git repo: .git with 12 files")

    def note(self, text: str) -> None:
        """tool_output: ``> `` on the first line, two spaces after the last."""
        self._chat("> " + text.strip() + "  \n")

    def typed(self, text: str, *, history: bool = True) -> None:
        """What the person typed: the input history entry, then the chat's lines."""
        if history and self.inputs:
            t = self.tick(0.5)
            lines = "".join(f"+{line}\n" for line in text.split("\n"))
            self.writes.append((INPUT, f"\n# {t:%Y-%m-%d %H:%M:%S.%f}\n{lines}".encode()))
        self._chat("\n#### " + "  \n#### ".join(text.split("\n")).rstrip() + "  \n")

    def request(self, prompt: str, response: str) -> None:
        if not self.llm:
            return
        sent = self.tick()
        body = "-------\nSYSTEM Act as an expert.\n-------\n" + "\n".join(
            f"USER {line}" for line in prompt.split("\n"))
        self.writes.append((LLM, f"TO LLM {sent:%Y-%m-%dT%H:%M:%S}\n{body}\n".encode()))
        answered = self.tick(2)
        content = "\n".join(f"ASSISTANT {line}" for line in response.split("\n"))
        self.writes.append((LLM, f"LLM RESPONSE {answered:%Y-%m-%dT%H:%M:%S}\n{content}\n".encode()))

    def answer(self, text: str) -> None:
        self._chat("\n" + text.strip() + "\n\n")

    def tokens(self, sent: str, received: str, cost: str | None = None,
               cache: tuple[str, str] | None = None) -> None:
        report = f"Tokens: {sent} sent"
        if cache:
            report += f", {cache[0]} cache write, {cache[1]} cache hit"
        report += f", {received} received."
        if cost is not None:
            # Both cache counts: the cost goes on a line of its own (base_coder.py).
            report += ("\n" if cache else " ") + f"Cost: ${cost} message, ${cost} session."
        self.note(report)

    def save(self) -> None:
        """Every write, whole, to the three files."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, data in self.writes:
            with (self.folder / name).open("ab") as fh:
                fh.write(data)
