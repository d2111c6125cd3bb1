"""Server-rendered chart geometry (memory.charts): pure, bounded, readable."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory import charts

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_the_chart_module_does_not_import_django() -> None:
    code = "import sys, memory.charts; print(any(m.startswith('django') for m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr


def test_a_line_chart_spans_the_plot_with_band_guides_and_a_now_line() -> None:
    past = [(T0 + timedelta(days=d), 0.7 - 0.01 * d) for d in range(11)]
    future = [(T0 + timedelta(days=10 + d), 0.6 - 0.01 * d) for d in range(31)]
    chart = charts.line_chart(past, future, now=T0 + timedelta(days=10), width=700, height=200)
    frame = chart.frame
    assert chart.past.startswith(f"M{frame.left:.1f},")
    assert chart.future.split(" L")[-1].startswith(f"{frame.right:.1f},")
    assert [g.label for g in chart.guides] == ["active", "fading", "dormant"]
    assert chart.guides[0].y1 == frame.y_of(0.5)
    assert chart.now_x is not None and frame.left < chart.now_x < frame.right
    assert [t.anchor for t in chart.x_ticks] == ["start", "middle", "middle", "middle", "end"]
    assert chart.x_ticks[0].label == "Mar 01"
    assert [t.label for t in chart.y_ticks] == ["0", "0.25", "0.5", "0.75", "1"]


def test_an_empty_line_chart_is_marked_empty() -> None:
    chart = charts.line_chart([], [], now=T0)
    assert chart.empty and chart.past == "" and chart.now_x is None


def test_values_outside_zero_one_are_clamped_to_the_plot() -> None:
    frame = charts.Frame(400, 200)
    assert frame.y_of(1.7) == frame.top and frame.y_of(-1) == frame.bottom


def point(key: str, x: float, y: float, quadrant: str = "working") -> charts.ScatterPoint:
    return charts.ScatterPoint(key=key, x=x, y=y, quadrant=quadrant)


def test_the_scatter_draws_the_quadrant_lines_at_the_median_and_50_percent() -> None:
    plot = charts.scatter(
        [point("A", 20, 0.8), point("B", 1, 0.1, "noise")], split_x=4, width=500, height=300
    )
    assert plot.split is not None and plot.split.label == "median 4"
    assert plot.threshold.y1 == plot.frame.y_of(0.5)
    a, b = sorted(plot.dots, key=lambda d: d.key)
    assert a.cx > plot.split.x1 > b.cx
    assert a.cy < plot.threshold.y1 < b.cy
    assert a.cx < plot.frame.right  # headroom: the largest dot is not cut off
    assert [label.text for label in plot.labels] == ["Working", "Leech", "Hidden Gem", "Noise"]
    assert plot.y_ticks[-1].label == "100%"
    assert not plot.log_x


def test_nearby_points_share_one_dot_so_big_stores_stay_small() -> None:
    points = [point(f"E{i}", 10 + (i % 2) * 0.01, 0.5) for i in range(500)]
    points.append(point("far", 0, 0.0, "noise"))
    plot = charts.scatter(points, split_x=5)
    assert len(plot.dots) == 2
    big = max(plot.dots, key=lambda d: d.count)
    assert big.count == 500 and "and 499 more" in big.title
    assert big.r > min(d.r for d in plot.dots)


def test_a_wide_range_of_counts_uses_a_log_axis() -> None:
    plot = charts.scatter([point("A", 5000, 0.9), point("B", 1, 0.9)], split_x=10)
    assert plot.log_x
    assert [t.label for t in plot.x_ticks][:4] == ["0", "1", "3", "10"]
    positions = [t.pos for t in plot.x_ticks]
    assert positions == sorted(positions)


def test_dot_markup_escapes_what_it_writes() -> None:
    dot = charts.Dot(cx=1, cy=2, r=3, key='E"1<', quadrant="working", count=1, title="<b>x</b>")
    markup = charts.dots_markup([dot], "/engrams/")
    assert '<a href="/engrams/E&quot;1&lt;/">' in markup
    assert "<title>&lt;b&gt;x&lt;/b&gt;</title>" in markup
    assert 'class="dot q-working" cx="1" cy="2" r="3"' in markup
