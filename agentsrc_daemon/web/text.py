"""Transcript text made safe to show: hostile input everywhere it appears.

* ``neutral``: characters that change how text around them reads, not what it says,
  shown as visible marks instead: bidirectional overrides and isolates (a right-to-left
  override can make ``exe.txt`` read as ``txt.exe``, "Trojan Source"), zero-width
  characters, C0/C1 controls other than tab and newline, lone surrogates (an invalid
  UTF-8 sequence's escape). Nothing is removed, so a reader sees that they were there.
* ``markdown``: an answer's Markdown rendered with raw HTML off (it shows as text),
  links only to http(s) (anything else, ``javascript:`` included, stays text) with
  ``rel="noopener noreferrer"``, no images (nothing is loaded from outside the machine).
  Long texts render their first ``MARKDOWN_CHARS`` characters, the rest as plain text.

Jinja2's autoescape escapes every other string; these return ``Markup`` only for HTML
they built themselves from escaped pieces."""

from __future__ import annotations

import functools
import re
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup, escape

MARKDOWN_CHARS = 40_000  # past this, an answer's rest is shown as plain text
SHOWN_CHARS = 4_000  # a text's part shown before "show the rest"

_INVISIBLE = re.compile(
    "[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)


def _mark(m: re.Match[str]) -> str:
    return f"\u27e6U+{ord(m.group()):04X}\u27e7"  # ⟦U+202E⟧


def neutral(value: Any) -> str:
    """The text with its invisible and direction-changing characters shown as marks."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return _INVISIBLE.sub(_mark, text)


def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable(["image", "html_inline", "html_block"])
    md.validateLink = _http_only  # type: ignore[method-assign]
    def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer")
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def _http_only(url: str) -> bool:
    u = url.strip().lower()
    return u.startswith(("http://", "https://"))


_MARKDOWN = _md()
# An answer's HTML is kept for its next showing (a live session's page is shown again at
# each of its turns, a page of turns at each visit): rendering was about a third of the
# session page's time at 10 million events (markdown-it is pure Python). Answers of up
# to CACHED_CHARS, at most MARKDOWN_CACHE of them: a few MiB at most.
CACHED_CHARS = 8_000
MARKDOWN_CACHE = 256


@functools.lru_cache(maxsize=MARKDOWN_CACHE)
def _rendered(text: str) -> str:
    return str(_MARKDOWN.render(text))


def markdown(value: Any) -> Markup:
    """An answer's Markdown as HTML, safely (see the module's docstring)."""
    text = neutral(value)
    head, rest = text[:MARKDOWN_CHARS], text[MARKDOWN_CHARS:]
    html = _rendered(head) if len(head) <= CACHED_CHARS else _MARKDOWN.render(head)
    if rest:
        html += (f'<details class="rest"><summary>{len(rest):,} more characters</summary>'
                 f"<pre>{escape(rest)}</pre></details>")
    return Markup(html)


def clip(value: Any, n: int = SHOWN_CHARS) -> Markup:
    """Plain text (escaped, neutral), its first ``n`` characters shown and the rest in
    a disclosure: a 256 KiB prompt does not bury the page."""
    text = neutral(value)
    if len(text) <= n:
        return Markup(escape(text))
    return Markup(f'{escape(text[:n])}<details class="rest"><summary>'
                  f'{len(text) - n:,} more characters</summary>{escape(text[n:])}</details>')


def short(value: Any, n: int = 120) -> str:
    """One line of at most ``n`` characters (newlines as spaces), neutral."""
    text = " ".join(neutral(value).split())
    return text if len(text) <= n else text[: n - 1] + "\u2026"
