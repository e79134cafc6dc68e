"""Numbers as the report shows them: a few significant digits, shares as percentages."""

from __future__ import annotations

import math


def number(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, thousands separated (``12,300``)."""
    if not math.isfinite(value):
        return "n/a" if math.isnan(value) else ("∞" if value > 0 else "-∞")
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits - 1:
        return f"{round(value, -(magnitude - digits + 1)):,.0f}"
    return f"{value:,.{digits - 1 - magnitude}f}".rstrip("0").rstrip(".")


def share(value: float) -> str:
    """A share in [0, 1] as a percentage with one decimal (``12.3%``)."""
    return "n/a" if not math.isfinite(value) else f"{100 * value:.1f}%"


def parameter(value: object) -> str:
    """A step's parameter as written in a pipeline file."""
    if isinstance(value, bool):
        return "true" if value else "false"  # as TOML writes them
    if isinstance(value, float):
        return number(value, 4)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(parameter(v) for v in value) + "]"
    return str(value)
