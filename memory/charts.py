"""Chart geometry for server-rendered SVG: pure Python in, coordinates and labels out.

No Django import; templates draw the shapes, so every label is escaped by the template engine.
Coordinates are SVG user units (px) inside a `width` by `height` viewBox.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape
from typing import Any

MARGIN_LEFT = 44.0
MARGIN_RIGHT = 14.0
MARGIN_TOP = 12.0
MARGIN_BOTTOM = 28.0
BAND_GUIDES: tuple[tuple[float, str], ...] = ((0.5, "active"), (0.3, "fading"), (0.1, "dormant"))
SCATTER_CELL = 7.0  # px: points closer than this share one dot
LOG_X_FROM = 50  # a surfaced maximum above this switches the x axis to log(1 + n)


@dataclass(frozen=True)
class Tick:
    pos: float
    label: str
    anchor: str = "middle"  # SVG text-anchor


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    anchor: str  # SVG text-anchor: start or end


@dataclass(frozen=True)
class Guide:
    """A horizontal or vertical reference line with a label at its end."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str


@dataclass(frozen=True)
class Frame:
    width: float
    height: float

    @property
    def left(self) -> float:
        return MARGIN_LEFT

    @property
    def right(self) -> float:
        return self.width - MARGIN_RIGHT

    @property
    def top(self) -> float:
        return MARGIN_TOP

    @property
    def bottom(self) -> float:
        return self.height - MARGIN_BOTTOM

    @property
    def plot_width(self) -> float:
        return self.right - self.left

    @property
    def plot_height(self) -> float:
        return self.bottom - self.top

    def y_of(self, unit: float) -> float:
        """y for a value in [0, 1] (0 at the bottom)."""
        return round(self.bottom - min(1.0, max(0.0, unit)) * self.plot_height, 2)


@dataclass(frozen=True)
class LineChart:
    frame: Frame
    past: str  # SVG path data
    future: str
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    guides: tuple[Guide, ...]
    now_x: float | None
    empty: bool


@dataclass(frozen=True)
class ScatterPoint:
    key: str  # what the dot links to (an engram id)
    x: float  # surfaced count
    y: float  # effectiveness in [0, 1]
    quadrant: str


@dataclass(frozen=True)
class Dot:
    cx: float
    cy: float
    r: float
    key: str
    quadrant: str
    count: int
    title: str


@dataclass(frozen=True)
class Scatter:
    frame: Frame
    dots: tuple[Dot, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    split: Guide | None
    threshold: Guide
    labels: tuple[Label, ...]  # quadrant names in their corners
    log_x: bool


def _path(points: Sequence[tuple[float, float]]) -> str:
    if not points:
        return ""
    head, *rest = points
    return f"M{head[0]:.1f},{head[1]:.1f}" + "".join(f" L{x:.1f},{y:.1f}" for x, y in rest)


def _unit_ticks(frame: Frame, *, percent: bool = False) -> tuple[Tick, ...]:
    return tuple(
        Tick(frame.y_of(v), f"{v:.0%}" if percent else f"{v:.2f}".rstrip("0").rstrip("."), "end")
        for v in (0, 0.25, 0.5, 0.75, 1)
    )


def _date_label(when: datetime, span: timedelta) -> str:
    return when.strftime("%b %Y") if span > timedelta(days=400) else when.strftime("%b %d")


def line_chart(
    past: Sequence[tuple[datetime, float]],
    future: Sequence[tuple[datetime, float]],
    *,
    now: datetime,
    width: float = 720,
    height: float = 240,
    ticks: int = 5,
    guide_lines: Sequence[tuple[float, str]] = BAND_GUIDES,
) -> LineChart:
    """A value-in-[0, 1] over time chart: solid past, dashed future, guides, a now line."""
    frame = Frame(width, height)
    times = [t for t, _ in past] + [t for t, _ in future]
    if not times:
        return LineChart(frame, "", "", (), _unit_ticks(frame), (), None, True)
    start, end = min(times), max(times)
    span = max((end - start).total_seconds(), 1.0)

    def x_of(when: datetime) -> float:
        return round(frame.left + (when - start).total_seconds() / span * frame.plot_width, 2)

    x_ticks = tuple(
        Tick(
            x_of(start + timedelta(seconds=span * i / (ticks - 1))),
            _date_label(start + timedelta(seconds=span * i / (ticks - 1)), end - start),
            "start" if i == 0 else "end" if i == ticks - 1 else "middle",
        )
        for i in range(ticks)
    )
    guides = tuple(
        Guide(frame.left, frame.y_of(v), frame.right, frame.y_of(v), label)
        for v, label in guide_lines
    )
    now_x = x_of(now) if start <= now <= end else None
    return LineChart(
        frame=frame,
        past=_path([(x_of(t), frame.y_of(v)) for t, v in past]),
        future=_path([(x_of(t), frame.y_of(v)) for t, v in future]),
        x_ticks=x_ticks,
        y_ticks=_unit_ticks(frame),
        guides=guides,
        now_x=now_x,
        empty=False,
    )


def _x_tick_values(max_x: float, log_x: bool) -> list[float]:
    if log_x:
        values = [0.0]
        step = 1.0
        while step <= max_x:
            values.append(step)
            if step * 3 <= max_x:
                values.append(step * 3)
            step *= 10
        return values
    top = max(1.0, max_x)
    raw = top / 4
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(int(top // step) + 1)]


def scatter(
    points: Sequence[ScatterPoint],
    *,
    split_x: float | None,
    split_y: float = 0.5,
    width: float = 1000,
    height: float = 380,
) -> Scatter:
    """Surfaced count (x) against effectiveness (y) with the quadrant lines.

    Points that fall within SCATTER_CELL px of each other share one dot (radius grows with the
    count), so 10,000 engrams still draw as a few hundred shapes. The x axis is log(1 + n) when
    the largest count exceeds LOG_X_FROM.
    """
    frame = Frame(width, height)
    max_x = max([p.x for p in points] + [split_x or 0.0, 1.0])
    log_x = max_x > LOG_X_FROM
    # Headroom so the largest dot is not cut by the plot's right edge.
    top_x = math.expm1(math.log1p(max_x) * 1.04) if log_x else max_x * 1.04

    def x_of(value: float) -> float:
        scaled = math.log1p(value) / math.log1p(top_x) if log_x else value / top_x
        return round(frame.left + scaled * frame.plot_width, 2)

    # One pass with local arithmetic: this loop sees every engram of the owner.
    left, plot_w = frame.left, frame.plot_width
    bottom, plot_h = frame.bottom, frame.plot_height
    denominator = math.log1p(top_x) if log_x else top_x
    log1p = math.log1p
    cells: dict[tuple[int, int], list[Any]] = {}
    for point in points:
        px = left + (log1p(point.x) if log_x else point.x) / denominator * plot_w
        py = bottom - min(1.0, max(0.0, point.y)) * plot_h
        key = (int(px // SCATTER_CELL), int(py // SCATTER_CELL))
        acc = cells.get(key)
        if acc is None:
            cells[key] = [point, 1, px, py]
        else:
            acc[1] += 1
            acc[2] += px
            acc[3] += py
    dots = []
    for first, count, sum_x, sum_y in cells.values():
        title = f"{first.key}: surfaced {first.x:g}, effectiveness {first.y:.0%}"
        if count > 1:
            title += f" (and {count - 1} more here)"
        dots.append(
            Dot(
                cx=round(sum_x / count, 2),
                cy=round(sum_y / count, 2),
                r=round(5.0 + min(7.0, 1.5 * math.log2(count)), 2),
                key=first.key,
                quadrant=first.quadrant,
                count=count,
                title=title,
            )
        )
    dots.sort(key=lambda d: (d.cx, d.cy))
    x_ticks = tuple(Tick(x_of(v), f"{v:g}") for v in _x_tick_values(max_x, log_x))
    split = None
    if split_x is not None:
        sx = x_of(split_x)
        split = Guide(sx, frame.top, sx, frame.bottom, f"median {split_x:g}")
    ty = frame.y_of(split_y)
    threshold = Guide(frame.left, ty, frame.right, ty, f"{split_y:.0%}")
    left_x = frame.left + 8
    right_x = frame.right - 8
    top_y, bottom_y = frame.top + 14, frame.bottom - 8
    labels = (
        Label(right_x, top_y, "Working", "end"),
        Label(right_x, bottom_y, "Leech", "end"),
        Label(left_x, top_y, "Hidden Gem", "start"),
        Label(left_x, bottom_y, "Noise", "start"),
    )
    return Scatter(
        frame=frame,
        dots=tuple(dots),
        x_ticks=x_ticks,
        y_ticks=_unit_ticks(frame, percent=True),
        split=split,
        threshold=threshold,
        labels=labels,
        log_x=log_x,
    )


def dots_markup(dots: Sequence[Dot], href: str) -> str:
    """SVG for the scatter's dots, each a link to `href` + key + "/"; every value escaped.

    Built here rather than in a template loop: thousands of dots cost ~100x less as one join.
    """
    return "".join(
        f'<a href="{escape(href + d.key)}/"><circle class="dot q-{escape(d.quadrant)}" '
        f'cx="{d.cx}" cy="{d.cy}" r="{d.r}"><title>{escape(d.title)}</title></circle></a>'
        for d in dots
    )
