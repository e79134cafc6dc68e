"""Mutual information between an original and a released column, and the privacy Q of paper 000."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_ppdm._validation import check_int
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["mutual_information", "privacy_q"]

# A 1-D numeric sequence: a Series, an array, or a sequence of numbers.
Values = pl.Series | np.ndarray | Sequence[float]


def _as_values(x: Values, name: str) -> np.ndarray:
    values = x.to_numpy() if isinstance(x, pl.Series) else np.asarray(x)
    try:
        values = values.astype(np.float64)
    except (TypeError, ValueError):
        values = np.full(0, np.nan)  # strings, objects: refused just below
    if values.ndim != 1 or len(values) < 2 or not np.isfinite(values).all():
        msg = f"The {name!r} argument must be a 1-D numeric sequence of 2 or more finite values (no nulls)."
        raise InvalidParameterError(msg)
    return values


def _quantile_bins(values: np.ndarray, bins: int) -> np.ndarray:
    # Edges at quantiles; equal values always share a bin (so discrete data get fewer bins).
    edges = np.unique(np.quantile(values, np.arange(1, bins) / bins))
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
    xs, ys = _as_values(x, "x"), _as_values(y, "y")
    if len(xs) != len(ys):
        msg = f"mutual_information needs x and y of the same length. Got {len(xs)} and {len(ys)}."
        raise InvalidParameterError(msg)
    n = len(xs)
    if bins is None:
        bins = int(min(64, max(2, round(n ** (1 / 3)))))
    classes = check_int("bins", bins, "mutual_information", low=2)
    bx, by = _quantile_bins(xs, classes), _quantile_bins(ys, classes)
    table = np.zeros((bx.max() + 1, by.max() + 1))
    np.add.at(table, (bx, by), 1.0)
    joint = table / n
    px, py = joint.sum(axis=1), joint.sum(axis=0)
    nonzero = joint > 0
    plug_in = float((joint[nonzero] * np.log2(joint[nonzero] / np.outer(px, py)[nonzero])).sum())
    bias = (np.count_nonzero(px) - 1) * (np.count_nonzero(py) - 1) / (2 * n * math.log(2))
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
    return 1.0 - 2.0 ** (-mutual_information(x, y, bins=bins))
