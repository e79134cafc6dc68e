"""Mutual information between an original and a released column, and the privacy Q of paper 000."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_ppdm._validation import check_int, described, is_real
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["mutual_information", "privacy_q"]

# A 1-D numeric sequence: a Series, an array, or a sequence of numbers.
Values = pl.Series | np.ndarray | Sequence[float]


def _as_values(x: Values, name: str, func: str) -> np.ndarray:
    try:
        values = x.to_numpy() if isinstance(x, pl.Series) else np.asarray(x)
    except (TypeError, ValueError):
        values = np.full(0, np.nan)  # ragged nested lists: refused just below
    if values.dtype.kind == "O":
        # A list holding None, Decimals, ...: only real numbers pass (a bool is a number here).
        real = values.ndim == 1 and all(is_real(v) or isinstance(v, bool | np.bool_) for v in values)
        try:
            values = values.astype(np.float64) if real else np.full(0, np.nan)
        except OverflowError:
            values = np.full(0, np.nan)  # an int beyond the float range
    elif values.dtype.kind in "biuf":
        values = values.astype(np.float64)
    else:
        values = np.full(0, np.nan)  # complex numbers, strings, dates: refused just below
    if values.ndim != 1 or len(values) < 2 or not np.isfinite(values).all():
        msg = (
            f"The {name!r} parameter of {func} must be a 1-D sequence of 2 or more finite real numbers "
            f"(no nulls, no strings, no complex numbers). Got {described(x)} instead."
        )
        raise InvalidParameterError(msg)
    return values


def _quantile_bins(values: np.ndarray, bins: int) -> np.ndarray:
    """Class codes of ``values`` cut at their ``bins``-quantiles; equal values always share
    a class (so discrete data get fewer classes).

    The quantiles are NumPy's default (linear, Hyndman & Fan's type 7), read off one sort:
    ``np.quantile`` partitions once per quantile, O(n x bins), minutes at n = bins = 10^5.
    """
    ordered = np.sort(values)
    n = len(ordered)
    position = np.arange(1, bins) / bins * (n - 1)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, n - 1)
    weight = position - below
    edges = np.unique(ordered[below] + (ordered[above] - ordered[below]) * weight)
    return np.searchsorted(edges, values, side="right")


def mutual_information(x: Values, y: Values, *, bins: int | None = None) -> float:
    """Mutual information I(X; Y) in bits, by equal-frequency binning with bias correction.

    The estimator: both variables are cut into ``bins`` equal-frequency classes (default
    ``round(n ** (1/3))``, between 2 and 64); the plug-in estimate over the contingency
    table, minus the Miller-Madow bias ``(bx - 1)(by - 1) / (2 n ln 2)`` (bx, by: classes
    that occur), floored at 0.  It sees only what the classes see: the estimate is at
    most ``log2(bins)``, which a release that keeps every rank reaches.  Binning on
    quantiles makes it invariant to monotone transforms of either variable.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=10_000)
    >>> round(mutual_information(x, np.exp(x), bins=16), 4)  # monotone: log2(16) minus the correction
    3.9838
    >>> bool(mutual_information(x, np.random.default_rng(1).normal(size=10_000), bins=16) < 0.01)
    True
    """
    return _mutual_information(x, y, bins, "mutual_information")


def _mutual_information(x: Values, y: Values, bins: int | None, func: str) -> float:
    xs, ys = _as_values(x, "x", func), _as_values(y, "y", func)
    if len(xs) != len(ys):
        msg = f"{func} needs x and y of the same length; the two given differ."
        raise InvalidParameterError(msg)
    n = len(xs)
    if bins is None:
        bins = int(min(64, max(2, round(n ** (1 / 3)))))
    # More classes than rows cuts no finer: from bins = n on, the quantile edges already
    # part every two distinct values (their spacing, (n - 1) / bins rank steps, is < 1).
    classes = min(check_int("bins", bins, func, low=2), n)
    # Dense class codes, and the contingency table kept sparse (the pairs that occur):
    # memory O(n) whatever the number of classes.
    _, bx = np.unique(_quantile_bins(xs, classes), return_inverse=True)
    _, by = np.unique(_quantile_bins(ys, classes), return_inverse=True)
    px, py = np.bincount(bx) / n, np.bincount(by) / n
    cells, counts = np.unique(bx.astype(np.int64) * len(py) + by, return_counts=True)
    joint = counts / n
    plug_in = float((joint * np.log2(joint / (px[cells // len(py)] * py[cells % len(py)]))).sum())
    bias = (len(px) - 1) * (len(py) - 1) / (2 * n * math.log(2))
    return float(max(0.0, plug_in - bias))


def privacy_q(x: Values, y: Values, *, bins: int | None = None) -> float:
    """Paper 000's privacy measure ``Q(X|Y) = 1 - 2^(-I(X;Y))``: 0 = Y tells nothing of X.

    ``I`` is :func:`mutual_information` (bits).  Q grows towards 1 as Y reveals X; with
    the default estimator, a release that keeps every rank scores ``1 - 1/bins``, the
    most the estimator can see.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=10_000)
    >>> noise = np.random.default_rng(1).normal(size=10_000)
    >>> bool(privacy_q(x, x + noise) > privacy_q(x, x + 3 * noise))
    True
    """
    return 1.0 - 2.0 ** (-_mutual_information(x, y, bins, "privacy_q"))
