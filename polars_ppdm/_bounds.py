"""Public bounds of numeric columns: given by the caller, or read off the data with a
warning (the data's own extremes are not public)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._validation import is_real
from polars_ppdm.exceptions import InvalidParameterError, PrivacyLeakWarning

__all__ = ["DATA_BOUNDS", "check_bounds"]

DATA_BOUNDS = "data"


def check_bounds(
    bounds: Any, columns: Sequence[str], func: str, frame: pl.LazyFrame | None
) -> dict[str, tuple[float, float]]:
    """Public bounds per column: a mapping, one (low, high) pair per column in order, or
    a single pair for a single column.  ``"data"`` reads them off ``frame``, with a
    :class:`PrivacyLeakWarning`: the data's own min and max are not public."""
    if isinstance(bounds, str) and bounds == DATA_BOUNDS:
        if frame is None:
            msg = f"The 'bounds' parameter of {func} must be public (low, high) pairs here (there is no data to read). Got 'data'."
            raise InvalidParameterError(msg)
        warnings.warn(
            f"{func}: bounds='data' reads the min and max off the private data. They are not "
            "public, and what the result reveals of them is not protected. Pass public bounds.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        extremes = (
            frame.select(
                *(pl.col(c).min().alias(f"lo{i}") for i, c in enumerate(columns)),
                *(pl.col(c).max().alias(f"hi{i}") for i, c in enumerate(columns)),
            )
            .collect()
            .row(0)
        )
        bounds = {c: (extremes[i], extremes[len(columns) + i]) for i, c in enumerate(columns)}
    if bounds is None:
        # bounds='data' named only where it is taken (a DP release refuses it).
        msg = (
            f"The 'bounds' parameter of {func} is required: public (low, high) per column, e.g. "
            f"{{{columns[0]!r}: (0, 100)}}."
            + (" (bounds='data' reads them off the data, which leaks.)" if frame is not None else "")
        )
        raise InvalidParameterError(msg)
    if isinstance(bounds, Mapping):
        missing = [c for c in columns if c not in bounds]
        if missing:
            msg = f"The 'bounds' parameter of {func} has no (low, high) for column(s) {missing}. Got {dict(bounds)!r}."
            raise InvalidParameterError(msg)
        pairs = [bounds[c] for c in columns]
    elif isinstance(bounds, np.ndarray | pl.Series):
        return check_bounds(
            bounds.tolist() if isinstance(bounds, np.ndarray) else bounds.to_list(), columns, func, frame
        )
    elif not isinstance(bounds, Sequence) or isinstance(bounds, str):
        msg = (
            f"The 'bounds' parameter of {func} must be a (low, high) pair, one pair per column, or a "
            f"mapping of column to pair. Got {bounds!r} instead."
        )
        raise InvalidParameterError(msg)
    elif len(columns) == 1 and len(bounds) == 2 and not isinstance(bounds[0], Sequence):
        pairs = [bounds]
    else:
        pairs = list(bounds)
        if len(pairs) != len(columns):
            msg = f"The 'bounds' parameter of {func} needs one (low, high) per column ({len(columns)}). Got {bounds!r}."
            raise InvalidParameterError(msg)
    out = {}
    for c, pair in zip(columns, pairs, strict=True):
        try:
            if isinstance(pair, str | bytes) or not all(is_real(v) for v in pair):
                raise TypeError  # "01", (True, 2), ("0", "1"): not a pair of numbers
            low, high = (float(v) for v in pair)
        except (TypeError, ValueError):
            msg = f"The 'bounds' parameter of {func} (column {c!r}) must be a (low, high) pair of numbers. Got {pair!r} instead."
            raise InvalidParameterError(msg) from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high and math.isfinite(high - low)):
            msg = (
                f"The 'bounds' parameter of {func} (column {c!r}) must be finite with low < high "
                f"(and high - low finite). Got {pair!r} instead."
            )
            raise InvalidParameterError(msg)
        out[c] = (low, high)
    return out
