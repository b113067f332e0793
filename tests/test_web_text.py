"""web/text.py without a browser: an answer's Markdown is safe HTML whatever the text,
and the same whether or not it was rendered before (its HTML is kept for the next
showing). The browser's own battery is tests/test_web.py's hostile transcripts."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.web import text

_PIECES = st.sampled_from([
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))",
    "[ok](https://example.com)", "\u202eexe.txt", "**bold**", "- item\n- item", "`code`",
    "| a | b |\n| - | - |\n| 1 | 2 |", "<style>p{display:none}</style>", "\n\n", "plain words",
    "![img](https://example.com/x.png)", "&amp;", "\ud800",
])
_TEXTS = st.lists(_PIECES | st.text(max_size=20), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_markdown_is_safe_and_the_same_when_kept(value: str) -> None:
    text._rendered.cache_clear()
    first = str(text.markdown(value))
    again = str(text.markdown(value))  # from the kept HTML
    assert again == first
    assert first == str(text._MARKDOWN.render(text.neutral(value)))
    lowered = first.lower()
    assert "<script" not in lowered and "<style" not in lowered and "<img" not in lowered
    assert not re.search(r"href=\"\s*javascript:", lowered)
    assert not re.search(r"<[a-z]+[^>]*\son[a-z]+=", lowered)  # no event handler attribute
    assert "\u202e" not in first and "\ud800" not in first
    for href in re.findall(r"<a [^>]*>", first):
        assert 'rel="noopener noreferrer"' in href


def test_long_answers_are_rendered_without_being_kept() -> None:
    text._rendered.cache_clear()
    long = "word " * (text.CACHED_CHARS // 5 + 1)
    text.markdown(long)
    text.markdown("short answer")
    assert text._rendered.cache_info().currsize == 1
    assert str(text.markdown("short answer")) == "<p>short answer</p>\n"
    assert text._rendered.cache_info().hits == 1
