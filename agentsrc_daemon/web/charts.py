"""Charts drawn on the server as SVG: no chart script, nothing to load, readable with
JavaScript off. Colours come from the page's CSS classes (light and dark), sizes from
presentation attributes (the Content-Security-Policy forbids inline styles). Every
label is escaped: model names, projects and finding types come from transcripts.

Each bar carries a ``<title>`` (its label and value) that browsers show on hover and
screen readers read."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markupsafe import Markup, escape


def _fmt(v: float) -> str:
    return f"{v:,.0f}"


def columns(
    points: Sequence[tuple[str, float]], *, height: int = 160, unit: str = "",
    fmt: Callable[[float], str] = _fmt, label: str = "chart",
) -> Markup:
    """Vertical bars, one per point (a day), in order, with the first, middle and last
    labels under the axis and the largest value beside it."""
    if not points:
        return Markup('<p class="empty">nothing in this range</p>')
    n = len(points)
    width = 1200
    top = max(v for _, v in points) or 1.0
    gap = 2 if n < 120 else 0
    bar_w = max(1.0, (width - 60) / n - gap)
    plot_h = height - 28
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img"'
             f' aria-label="{escape(label)}">']
    parts.append(f'<line class="axis" x1="56" y1="{plot_h}" x2="{width}" y2="{plot_h}"/>')
    parts.append(f'<text class="tick" x="52" y="12" text-anchor="end">{escape(fmt(top))}'
                 f'{escape(unit)}</text>')
    parts.append(f'<text class="tick" x="52" y="{plot_h}" text-anchor="end">0</text>')
    for i, (name, value) in enumerate(points):
        h = 0.0 if top <= 0 else max(0.0, value) / top * (plot_h - 8)
        x = 58 + i * (bar_w + gap)
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{plot_h - h:.1f}" width="{bar_w:.1f}"'
            f' height="{h:.1f}"><title>{escape(name)}: {escape(fmt(value))}{escape(unit)}'
            "</title></rect>")
    for i in sorted({0, n // 2, n - 1}):
        x = 58 + i * (bar_w + gap) + bar_w / 2
        anchor = "start" if i == 0 else ("end" if i == n - 1 else "middle")
        parts.append(f'<text class="tick" x="{x:.1f}" y="{height - 8}"'
                     f' text-anchor="{anchor}">{escape(points[i][0])}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def bars(
    rows: Sequence[tuple[str, float]], *, fmt: Callable[[float], str] = _fmt,
    label: str = "chart", limit: int = 12,
) -> Markup:
    """Horizontal bars, largest first as given, at most ``limit`` (the rest summed in
    one "other" bar)."""
    if not rows:
        return Markup('<p class="empty">nothing in this range</p>')
    shown = list(rows[:limit])
    if len(rows) > limit:
        shown.append((f"{len(rows) - limit} other", sum(v for _, v in rows[limit:])))
    top = max(v for _, v in shown) or 1.0
    row_h, width, text_w = 22, 640, 260
    height = row_h * len(shown) + 4
    parts = [f'<svg class="chart hbars" viewBox="0 0 {width} {height}" role="img"'
             f' aria-label="{escape(label)}">']
    for i, (name, value) in enumerate(shown):
        y = i * row_h + 2
        w = 0.0 if top <= 0 else max(0.0, value) / top * (width - text_w - 90)
        shown_name = name if len(name) <= 38 else "\u2026" + name[-37:]
        parts.append(
            f'<text class="tick" x="{text_w - 6}" y="{y + 15}" text-anchor="end">'
            f"{escape(shown_name)}</text>"
            f'<rect class="bar" x="{text_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}">'
            f"<title>{escape(name)}: {escape(fmt(value))}</title></rect>"
            f'<text class="tick" x="{text_w + w + 6:.1f}" y="{y + 15}">{escape(fmt(value))}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
