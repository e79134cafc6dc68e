"""A report's plot drawn as SVG with matplotlib's object API (no pyplot, no global state).

SVG because it stays sharp on a phone's screen and a laptop's alike and is text, so the
page stays one file; the output is deterministic (a fixed hash salt for the element ids,
no date in the metadata, text as text rather than glyph paths), so the same report is
the same bytes.  Colours: original grey, released blue, estimates orange -- the same in
every plot, and told apart by line style too, for readers who do not see colour.

Every label is text: values and names from the data (``"$"``, ``"$$"``, ``"$x_1$"``) are
never read as math or TeX, and reach the figure through :func:`~polars_ppdm.reporting._shown.text`
(bidi controls shown, not obeyed).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from polars_ppdm.reporting._shown import text
from polars_ppdm.reporting.model import Plot, PlotSeries

__all__ = ["plot_svg"]

_STYLE = {
    "original": {"color": "#6b6b6b", "linestyle": "-", "hatch": "//"},
    "released": {"color": "#1f6fb4", "linestyle": "-", "hatch": ""},
    "estimate": {"color": "#d9730d", "linestyle": "--", "hatch": ""},
    "limit": {"color": "#1d1d1f", "linestyle": ":", "hatch": ""},
}
# Lines of one plot from the same source (a group's running totals each): told apart by
# colour and line style, in this order.
_CYCLE = (
    ("#1f6fb4", "-"),
    ("#d9730d", "--"),
    ("#2ca02c", "-."),
    ("#9467bd", ":"),
    ("#8c564b", "-"),
    ("#e377c2", "--"),
    ("#7f7f7f", "-."),
    ("#bcbd22", ":"),
)
_RC: Any = {  # Any: matplotlib types rc_context's keys as a Literal of every setting
    "svg.hashsalt": "polars_ppdm-report",
    "svg.fonttype": "none",
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # Labels are the data's text: no mathtext or TeX for any text artist made inside this
    # context (tick labels, axis labels, legends, titles, annotations), whatever the
    # user's matplotlibrc says; '$$' would otherwise be a math formula (or a parse error).
    "text.parse_math": False,
    "text.usetex": False,
    "axes.formatter.use_mathtext": False,
}


def _bars(ax: Any, plot: Plot) -> None:
    labels = [text(x) for x in plot.series[0].x]
    width = 0.8 / len(plot.series)
    positions = np.arange(len(labels))
    for i, series in enumerate(plot.series):
        style = _STYLE[series.source]
        ax.bar(
            positions + (i - (len(plot.series) - 1) / 2) * width,
            series.y,
            width,
            yerr=series.error,
            capsize=3 if series.error else 0,
            color=style["color"],
            alpha=0.85,
            hatch=style["hatch"],
            edgecolor="white",
            label=text(series.label),
        )
    ax.set_xticks(
        positions,
        labels,
        rotation=30 if max(map(len, labels), default=0) > 6 else 0,
        ha="right" if max(map(len, labels), default=0) > 6 else "center",
    )


def _histogram(ax: Any, series: PlotSeries) -> None:
    style = _STYLE[series.source]
    ax.stairs(
        series.y,
        series.x,
        color=style["color"],
        linestyle=style["linestyle"],
        linewidth=1.6,
        label=text(series.label),
    )
    if series.source != "estimate":
        ax.stairs(series.y, series.x, fill=True, color=style["color"], alpha=0.15)


def _ecdf(ax: Any, series: PlotSeries) -> None:
    style = _STYLE[series.source]
    ax.step(
        series.x,
        series.y,
        where="post",
        color=style["color"],
        linestyle=style["linestyle"],
        label=text(series.label),
    )


def _scatter(ax: Any, series: PlotSeries) -> None:
    style = _STYLE[series.source]
    big = series.source == "estimate"
    ax.scatter(
        series.x,
        series.y,
        s=60 if big else 4,
        marker="X" if big else "o",
        color=style["color"],
        alpha=1.0 if big else 0.35,
        linewidths=0,
        label=text(series.label),
    )


def _lines(ax: Any, plot: Plot) -> None:
    """Points joined by a line each series, its ``error`` half-widths a band around it."""
    sources = [s.source for s in plot.series]
    for i, series in enumerate(plot.series):
        style = _STYLE[series.source]
        color, linestyle = style["color"], style["linestyle"]
        if sources.count(series.source) > 1:
            color, linestyle = _CYCLE[sources[:i].count(series.source) % len(_CYCLE)]
        ax.plot(series.x, series.y, color=color, linestyle=linestyle, linewidth=1.6, label=text(series.label))
        if series.error is not None:
            low = np.asarray(series.y, dtype=float) - np.asarray(series.error, dtype=float)
            high = np.asarray(series.y, dtype=float) + np.asarray(series.error, dtype=float)
            ax.fill_between(series.x, low, high, color=color, alpha=0.15, linewidth=0)
    if "limit" in sources:  # an amount against its bound: from 0 up
        ax.set_ylim(bottom=0)


def plot_svg(plot: Plot) -> str:
    """The plot as an SVG document (text)."""
    with rc_context(_RC):
        figure = Figure(figsize=(4.8, 2.7), layout="constrained")
        FigureCanvasSVG(figure)
        ax = figure.add_subplot()
        if plot.kind == "bars":
            _bars(ax, plot)
        elif plot.kind == "line":
            _lines(ax, plot)
        else:
            draw = {"histogram": _histogram, "ecdf": _ecdf, "scatter": _scatter}[plot.kind]
            for series in plot.series:
                draw(ax, series)
        ax.set_xlabel(text(plot.x_label))
        ax.set_ylabel(text(plot.y_label))
        ax.grid(axis="y", alpha=0.3)
        if len(plot.series) > 1:
            ax.legend(frameon=False, fontsize=8)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()
