"""Pure geometry for the dashboard's charts, rendered as inline SVG by the templates: no chart
library, no external service, works offline (A2).

`stacked_bars` lays out counts per time bucket, one stacked colour per series (a tool), with
y-axis ticks at round numbers and at most a dozen x-axis labels, spaced so they never overlap. Values pass through the
templates' escaping, so a tool name cannot inject markup."""

import math
from dataclasses import dataclass

# Distinguishable on white and for the common colour-vision deficiencies (Okabe–Ito), then grey for "others".
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
OTHERS_COLOUR = "#9aa1ad"
MAX_X_LABELS = 12
FONT_SIZE = 11  # svg.chart in app.css
LABEL_GAP = 6.0


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str  # the tooltip: bucket, series, count


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: float
    top: float
    bottom: float  # y of the x axis
    right: float
    rects: list[Rect]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    legend: list[tuple[str, str]]  # (colour, series name)
    total: int


def nice_ceiling(value: int) -> int:
    """The smallest 1, 2 or 5 × 10^n at or above `value` (at least 1): a round top for the axis."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


def stacked_bars(*, labels: list[str], series: dict[str, list[int]], width: int = 760, height: int = 260,
                 others_name: str = "") -> Chart:
    """Bars per bucket (`labels`), stacked by series in the given order. The series named
    `others_name` (if any) is drawn grey."""
    widest = max((label_width(label) for label in labels), default=0.0)
    # Room for half a label beyond the first and last bars' middles, so no label leaves the viewBox.
    left, top, right, bottom_margin = max(44.0, widest / 2), 12.0, max(12.0, widest / 2), 28.0
    bottom = height - bottom_margin
    plot_width, plot_height = width - left - right, bottom - top
    buckets = len(labels)
    totals = [sum(values[i] for values in series.values()) for i in range(buckets)]
    top_value = nice_ceiling(max(totals, default=0))
    slot = plot_width / buckets if buckets else plot_width
    bar_width = max(1.0, slot * 0.8)
    colours = {}
    palette = iter(PALETTE)
    for name in series:
        colours[name] = OTHERS_COLOUR if name == others_name and others_name else next(palette, OTHERS_COLOUR)
    rects = []
    for i, label in enumerate(labels):
        y = bottom
        x = left + i * slot + (slot - bar_width) / 2
        for name, values in series.items():
            count = values[i]
            if not count:
                continue
            bar_height = plot_height * count / top_value
            y -= bar_height
            rects.append(Rect(round(x, 1), round(y, 1), round(bar_width, 1), round(bar_height, 1), colours[name],
                              f"{label} · {name}: {count}"))
    y_ticks = [Tick(round(bottom - plot_height * value / top_value, 1), str(value))
               for value in _tick_values(top_value)]
    # Every k-th label: at most a dozen, and each at least one label's width plus a gap apart.
    every = max(1, math.ceil(buckets / MAX_X_LABELS), math.ceil((widest + LABEL_GAP) / slot) if slot else 1)
    x_ticks = [Tick(round(left + i * slot + slot / 2, 1), label) for i, label in enumerate(labels) if i % every == 0]
    return Chart(width=width, height=height, left=left, top=top, bottom=bottom, right=width - right, rects=rects,
                 x_ticks=x_ticks, y_ticks=y_ticks, legend=[(colours[name], name) for name in series],
                 total=sum(totals))


def _tick_values(top_value: int) -> list[int]:
    """0, the top, and up to three round values between."""
    if top_value <= 4:
        return list(range(0, top_value + 1))
    step = top_value // 4 if top_value % 4 == 0 else top_value // 5 if top_value % 5 == 0 else top_value // 2
    return list(range(0, top_value + 1, max(1, step)))


def label_width(label: str) -> float:
    """A generous estimate of a label's drawn width, in viewBox units: the chart's font is 11
    units (app.css), and a character of the dashboard's sans-serif averages under 0.62 em."""
    return len(label) * FONT_SIZE * 0.62
