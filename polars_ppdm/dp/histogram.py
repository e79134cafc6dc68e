"""Differentially private histograms over a public grid, as lazy Polars queries.

References
----------
Dwork, McSherry, Nissim, Smith, "Calibrating noise to sensitivity", TCC 2006.
Zhang, Cheng, DPQT k-means (paper 004): the noisy-count primitive of its quadtree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._frame import Frame, as_lazy, like, map_whole, schema_of
from polars_ppdm._validation import check_bool, check_columns, check_int, check_numeric, per_column
from polars_ppdm.dp._common import (
    NOT_CHARGED,
    bound_contributions,
    charge,
    check_accountant,
    check_bounds,
    check_max_contributions,
    check_unit_key,
    refuse_data_bounds,
    release_secret,
)
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock
from polars_ppdm.dp.mechanism import Mechanism, check_mechanism
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.release_key import query_label, release_key, table_digest
from polars_ppdm.secret import SecretLike

__all__ = [
    "BIN",
    "HistogramRequest",
    "bin_index",
    "check_histogram",
    "dp_histogram",
    "histogram_stream",
    "noisy_grid",
]

_FUNC = "dp_histogram"
#: The flat bin index column of the true counts handed to :func:`noisy_grid`.
BIN = "__ppdm_bin"
# Every cell is released, empty or not (leaving empty ones out would tell which are
# empty), so the grid is the size of the output: 50M rows is already gigabytes.
_MAX_CELLS = 50_000_000


def histogram_stream(columns: Sequence[str]) -> str:
    """Stream label of the noise of a histogram over ``columns`` (keyed by flat bin index)."""
    return "dp_histogram/" + "\x1f".join(columns)


def bin_index(column: str, low: float, high: float, bins: int) -> pl.Expr:
    """The bin of each value, computed arithmetically: ``floor((x - low) / width)``,
    clipped into ``[0, bins - 1]`` (finite values outside the bounds count in the edge
    bins); null, NaN and infinities give null (refused later, as every DP release
    refuses non-finite values)."""
    x = pl.col(column).cast(pl.Float64)
    index = ((x - low) * (bins / (high - low))).floor().clip(0, bins - 1)
    return pl.when(x.is_finite()).then(index).cast(pl.Int64, strict=False)


def _check_bins(bins: int | Sequence[int] | Mapping[str, int], columns: list[str]) -> dict[str, int]:
    spread = per_column("bins", bins, columns, _FUNC)
    for c, b in spread.items():
        check_int("bins", b, _FUNC, low=1, column=c)
    return {c: int(b) for c, b in spread.items()}


def dp_histogram(
    frame: Frame,
    columns: str | Sequence[str],
    *,
    bounds: Mapping[str, tuple[float, float]] | Sequence | str | None = None,
    bins: int | Sequence[int] | Mapping[str, int] = 10,
    epsilon: float | None = None,
    secret: SecretLike = None,
    key: str | None = None,
    max_contributions: int = 1,
    accountant: BudgetAccountant | ParallelBlock | None = None,
    non_negative: bool = False,
    mechanism: str = "laplace",
    rho: float | None = None,
) -> Frame:
    """Noisy counts of every bin of a public grid (1-D or d-D), empty bins included.

    A lazy query: bin indices computed arithmetically, a group-by count, a join onto
    the full grid, and exact integer noise on every count, drawn from the keyed PRF at
    the bin's flat index: two-sided geometric of scale ``max_contributions / epsilon``
    (``mechanism="laplace"``), or discrete Gaussian of sigma ``max_contributions /
    sqrt(2 rho)`` (``mechanism="gaussian"``, rho-zCDP: a unit's rows change the counts
    by at most ``max_contributions`` in L2).

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Returned as the same type.
    columns : str or sequence of str
        Numeric columns; nulls, NaN and infinities are refused, as by every DP release
        (drop or fill them first).
    bounds : mapping column -> (low, high), one pair per column, or "data"
        Public bounds: the grid spans them; finite values outside count in the edge
        bins (clipped).  Required; ``"data"`` is refused (the data's own extremes would
        be published, which no epsilon covers).
    bins : int or one per column
        Equal-width bins per column (>= 1); the grid has their product of cells, at most
        50 million (every cell is released, empty ones too).
    epsilon : float
        The release's budget (> 0), for ``mechanism="laplace"``.
    secret : Secret, bytes, hex str, 'env:NAME' or None
        The secret of the noise (and of which rows a unit keeps).  None: fresh OS
        entropy, not reproducible.  The noise is keyed by the secret and a digest of the
        released counts: the same secret over the same data reproduces the release, over
        any other data it draws independent noise.  Guessable secrets (an int, all-zero
        bytes) are refused; tests use ``ppdm.Secret.for_tests(seed)``.
    key : str, optional
        The column naming the privacy unit (a person).  Without it each row is its own
        unit, which assumes every person has at most one row.
    max_contributions : int
        Rows kept per unit (chosen by the keyed randomness); the sensitivity.
    accountant : BudgetAccountant, optional
        Charged ``epsilon`` each time the release is computed (a LazyFrame: at every
        collect), after the data is read and checked; bad data is refused uncharged.
    non_negative : bool
        Clip the noisy counts at 0: post-processing, no privacy cost.  Most empty cells
        of a sparse grid come out negative otherwise; clipping lowers their error (half
        of them become exact) but biases small counts upwards, and the total with them
        (``benchmarks/bench_dp_histogram.py`` prints both errors).
    mechanism : {"laplace", "gaussian"}
        The noise: Laplace (pure epsilon-DP; takes ``epsilon``) or Gaussian (rho-zCDP;
        takes ``rho``, charged as a rho to a zCDP accountant).
    rho : float, optional
        The zCDP cost of a Gaussian release (> 0).

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        One row per grid cell: for each column ``<c>_bin`` (Int64), ``<c>_low`` and
        ``<c>_high``, then ``count`` (Int64, noisy; unbiased and possibly negative unless
        ``non_negative``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"age": [23, 35, 35, 47, 61, 68]})
    >>> h = ppdm.dp_histogram(df, "age", bounds=(0, 100), bins=5, epsilon=1.0, secret=ppdm.Secret.for_tests(7))
    >>> h.columns, h.height
    (['age_bin', 'age_low', 'age_high', 'count'], 5)
    >>> g = ppdm.dp_histogram(df, "age", bounds=(0, 100), bins=5, mechanism="gaussian", rho=0.5,
    ...                       secret=ppdm.Secret.for_tests(7))
    >>> g["count"].dtype
    Int64

    References
    ----------
    Ghosh, Roughgarden, Sundararajan, STOC 2009 (geometric mechanism); Zhang, Cheng,
    DPQT k-means (paper 004).
    """
    schema = schema_of(frame, _FUNC)
    request = check_histogram(
        schema,
        columns,
        bounds=bounds,
        bins=bins,
        epsilon=epsilon,
        key=key,
        max_contributions=max_contributions,
        mechanism=mechanism,
        rho=rho,
    )
    non_negative = check_bool("non_negative", non_negative, _FUNC)
    check_accountant(accountant, _FUNC)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    secret = release_secret(secret, _FUNC)
    cols = request.columns
    lazy = bound_contributions(as_lazy(frame), key, request.contributions, secret, _FUNC, cols)
    counts = lazy.group_by(request.flat_bin().alias(BIN)).agg(pl.len().alias("count"))
    grid = noisy_grid(request, counts, secret, non_negative=non_negative, accountant=accountant)
    return like(frame, grid, engine="streaming")


@dataclass(frozen=True)
class HistogramRequest:
    """The checked parameters of a :func:`dp_histogram` call (any engine)."""

    columns: list[str]
    bounds: dict[str, tuple[float, float]]
    bins: dict[str, int]
    epsilon: float | None  # None: a Gaussian release (its budget is mechanism.budget, a rho)
    contributions: int
    mechanism: Mechanism
    unit: str | None = None  # the privacy unit's column (None: each row its own unit)

    @property
    def scale(self) -> float:
        """The noise's scale (the Laplace's) or sigma (the Gaussian's): a unit's rows
        change the counts by ``contributions`` in L1 and in L2."""
        return self.mechanism.scale(self.contributions, self.contributions)

    def strides(self) -> tuple[dict[str, int], int]:
        """The flat index's stride of every column (row-major: the last varies fastest)
        and the number of cells."""
        strides, total = {}, 1
        for c in reversed(self.columns):
            strides[c] = total
            total *= self.bins[c]
        return strides, total

    def flat_bin(self) -> pl.Expr:
        """The flat bin index of each row (Int64; null for a non-finite value), computed
        by the same float operations in every engine (:func:`bin_index`)."""
        strides, _ = self.strides()
        terms = [bin_index(c, *self.bounds[c], self.bins[c]) * strides[c] for c in self.columns]
        flat = terms[0]
        for term in terms[1:]:
            flat = flat + term  # '+' keeps nulls (sum_horizontal would skip them)
        return flat

    @property
    def label(self) -> str:
        """The release's name: in the accountant, and in its noise key (every engine)."""
        return f"{_FUNC}({', '.join(self.columns)})"

    @property
    def key_label(self) -> str:
        """The label of the noise's key: the release and its whole query (its bins' edges,
        what a unit contributes, the mechanism and budget), so that another query never
        shares its noise (:func:`~polars_ppdm.kernels.release_key.query_label`)."""
        return query_label(
            self.label,
            {
                "bounds": [tuple(map(float, self.bounds[c])) for c in self.columns],
                "bins": [int(self.bins[c]) for c in self.columns],
                "contributions": int(self.contributions),
                "unit": self.unit,
                "mechanism": self.mechanism.name,
                "budget": float(self.mechanism.budget),
            },
        )

    def charge(
        self, accountant: BudgetAccountant | ParallelBlock | None, *, check_only: bool = False
    ) -> None:
        """Spend the release's epsilon or rho on the accountant (when it is computed)."""
        noise = self.mechanism
        charge(
            accountant,
            noise.epsilon,
            self.label,
            _FUNC,
            check_only=check_only,
            rho=noise.rho,
            privacy_unit=self.unit,
        )


def check_histogram(
    schema: pl.Schema,
    columns: str | Sequence[str],
    *,
    bounds: Any,
    bins: Any,
    epsilon: Any,
    key: Any,
    max_contributions: Any,
    mechanism: Any = "laplace",
    rho: Any = None,
) -> HistogramRequest:
    """Every parameter of :func:`dp_histogram` checked against ``schema``, before any
    budget is spent (``bounds="data"`` is refused)."""
    cols = check_columns(columns, list(schema.names()), _FUNC)
    check_numeric(schema, cols, _FUNC)
    noise = check_mechanism(mechanism, epsilon, rho, _FUNC)
    bins_of = _check_bins(bins, cols)
    cells = int(np.prod([bins_of[c] for c in cols], dtype=object))
    if cells > _MAX_CELLS:
        msg = (
            f"The 'bins' parameter of {_FUNC}: {' x '.join(str(bins_of[c]) for c in cols)} = {cells:,} cells, "
            f"more than {_MAX_CELLS:,}; every cell is released (empty ones too), so use fewer bins or columns."
        )
        raise InvalidParameterError(msg)
    contributions = check_max_contributions(max_contributions, key, _FUNC)
    if key is not None:
        check_unit_key(key, schema, _FUNC)
    noise.check_scale(noise.scale(contributions, contributions), _FUNC)
    refuse_data_bounds(bounds)
    bounds_of = check_bounds(bounds, cols, _FUNC, None)
    for c in cols:
        low, high = bounds_of[c]
        # The bin of x is (x - low) * (bins / (high - low)): that factor must be finite,
        # or a value equal to low gives 0 x inf = NaN and the data decide the refusal.
        if not math.isfinite(bins_of[c] / (high - low)):
            msg = (
                f"The 'bins' and 'bounds' parameters of {_FUNC}: {bins_of[c]} bins over ({low!r}, {high!r}) for "
                f"column {c!r} are narrower than a float can index (bins / (high - low) overflows); widen the "
                "bounds or rescale the column."
            )
            raise InvalidParameterError(msg)
    epsilon_of = noise.budget if noise.name == "laplace" else None
    unit = None if key is None else str(key)
    return HistogramRequest(cols, bounds_of, bins_of, epsilon_of, contributions, noise, unit)


def noisy_grid(
    request: HistogramRequest,
    counts: pl.LazyFrame,
    secret: bytes,
    *,
    scale: float | None = None,
    non_negative: bool = False,
    accountant: BudgetAccountant | ParallelBlock | None = None,
) -> pl.LazyFrame:
    """Every cell of the grid with its noisy count, from the true counts of the non-empty
    cells (``counts``: columns ``BIN`` (Int64, null for non-finite values: refused) and
    ``count``, as any engine's group-by gives them).

    When the frame is computed: bad values are refused (nothing charged), the accountant
    is charged, and the noise is drawn under the release's key
    (:func:`~polars_ppdm.kernels.release_key.release_key` of the digest of the non-empty
    cells' (bin, count)), keyed within it by the cell's flat index: the same counts give
    the same bits in every engine, other counts independent noise."""
    cols, bounds_of, bins_of = request.columns, request.bounds, request.bins
    strides, total = request.strides()
    scale = request.scale if scale is None else scale
    stream = stream_id(histogram_stream(cols))

    def noisy(grid: pl.DataFrame) -> pl.DataFrame:
        if grid[BIN].null_count():
            msg = f"{_FUNC}: the columns {cols} hold null, NaN or infinite values; drop or fill them first ({NOT_CHARGED})."
            raise InvalidParameterError(msg)
        request.charge(accountant)
        bins, counts_ = grid[BIN].to_numpy(), grid["count"].to_numpy()
        filled = counts_ > 0
        key = release_key(secret, request.key_label, table_digest(secret, [bins[filled], counts_[filled]]))
        noise = request.mechanism.draw(key, stream, bins.astype(np.uint64), scale)
        noisy_count = pl.col("count") + pl.Series(noise)
        return grid.with_columns(noisy_count.clip(lower_bound=0) if non_negative else noisy_count)

    grid = pl.LazyFrame({BIN: pl.int_range(total, dtype=pl.Int64, eager=True)})
    counts = counts.select(pl.col(BIN).cast(pl.Int64), pl.col("count"))
    bad = counts.filter(pl.col(BIN).is_null())
    filled_grid = pl.concat(
        [
            bad,
            grid.join(counts, on=BIN, how="left", maintain_order="left").with_columns(
                pl.col("count").fill_null(0)
            ),
        ]
    ).with_columns(pl.col("count").cast(pl.Int64))
    joined = map_whole(filled_grid, noisy, {BIN: pl.Int64, "count": pl.Int64})
    described = []
    for c in cols:
        low, high = bounds_of[c]
        width = (high - low) / bins_of[c]
        index = (pl.col(BIN) // strides[c]) % bins_of[c]
        described += [
            index.alias(f"{c}_bin"),
            (low + index * width).alias(f"{c}_low"),
            pl.when(index == bins_of[c] - 1)
            .then(high)
            .otherwise(low + (index + 1) * width)
            .alias(f"{c}_high"),
        ]
    return joined.select(*described, "count")
