"""Numbers and text as the report shows them: a few significant digits, shares as
percentages, and every text from the data with its control characters made visible."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

# Unicode's explicit bidi controls: embeddings and overrides (U+202A-U+202E), isolates
# (U+2066-U+2069) and marks (U+200E, U+200F, U+061C).  Obeyed, they reorder the text
# around them, so a value could read as another ("txt<U+202E>gnp.exe" as "txtexe.png").
# And the C0 and C1 controls (a line break or carriage return inside a CSV field), the
# Unicode line and paragraph separators, and the invisible ones (zero-width space, joiners,
# word joiner, BOM, soft hyphen): no font draws them, so two values differing by one
# would look the same, and a label with a break would read as two.
_HIDDEN = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200d\u2060\ufeff\u00ad]"
)


def text(value: object) -> str:
    """``value`` as the page's text: each bidi or other control character shown as its
    code point (``[U+202E]``, ``[U+000D]``).

    Shown rather than removed, so that two values differing only by a control stay apart.
    Both renderers (HTML and the plots' SVG) pass every text through here.
    """
    return _HIDDEN.sub(lambda found: f"[U+{ord(found.group()):04X}]", str(value))


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


def shares_outside_unit(
    labels: Sequence[str], estimates: Sequence[float], half_widths: Sequence[float]
) -> str | None:
    """The word a corrected share needs when it, or its 95% interval, leaves [0, 1].

    Randomized response's correction is unbiased: it is right on average, so a rare
    value's estimate lands below its (small) true share as often as above, and below 0
    when chance gave fewer disguised answers than the correction subtracts.  Clipping it
    would bias it; the page keeps it and says why.

    Parameters
    ----------
    labels
        What each share is of (``"vote=none"``).
    estimates, half_widths
        The corrected shares and the half-widths of their 95% intervals.

    Returns
    -------
    str or None
        A note naming each share concerned, or None when every interval lies in [0, 1].
    """
    outside = [
        f"{label}: {share(e)} (95% interval {share(e - h)} to {share(e + h)})"
        for label, e, h in zip(labels, estimates, half_widths, strict=True)
        if math.isfinite(e) and (e - h < 0 or e + h > 1)
    ]
    if not outside:
        return None
    return (
        f"Below 0 or above 100%: {'; '.join(outside)}. The correction for the disguise is unbiased, right on "
        "average: a share near 0 is estimated below its true value as often as above, and so can come out (or "
        "reach, with its interval) below 0, or above 100% near 1. A true share lies between 0 and 100%: read "
        "such an estimate as the part of its interval that does."
    )
