"""The report's section of each column a ``[[perturb]]`` step names.

Per method, the utility figure that fits it and the attack that exists for it:

============== ================================================ ==========================================
method         utility                                          risk
============== ================================================ ==========================================
rr_disguise    corrected shares with 95% error bars (paper 003)  the local-DP epsilon of the disguise
                                                                (whole record: no finite epsilon)
ecdf_resample  KS distance, rank correlation (paper 000)        rank linkage
add_noise      the reconstructed distribution (Agrawal-Srikant) noise scale; PCA noise stripping
spiral         distance preservation (paper 002)                the known input/output attack
keep / drop    --                                               none / not published
============== ================================================ ==========================================

Everything computed from ``original`` (true shares, KS, linkage, attacks) appears only
when it is given, i.e. in the internal version; the public version's figures come from
the released table and the steps' parameters.  Figures that cost more than linear time
use the same systematic sample of both tables (at most ``sample_rows`` rows).  A
section's first risk figure is its headline (the summary and the verdict show it): the
measured attack when the version has one, else what the method guarantees.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.reporting._shown import number, parameter, share, shares_outside_unit
from polars_ppdm.reporting._table import Table
from polars_ppdm.reporting.model import ColumnSection, Figure, Plot, PlotSeries

__all__ = ["column_sections"]

_FUNC = "report"
_Z95 = 1.959963984540054
_BINS = 30
_TOP = 15  # categories shown of a column with many
_PAIR_ROWS = 2000  # rows whose pairwise distances are compared (2M pairs)


@dataclass
class _Tables:
    """The released table, the original (internal only) and their shared sample."""

    released: Table
    original: Table | None
    sample_rows: int
    _rows: np.ndarray | None = field(default=None, init=False)
    _finite: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, init=False)

    def finite(self, which: str, column: str) -> np.ndarray:
        """The finite values of ``column`` of the ``"released"`` or ``"original"`` table,
        as floats: converted once for the column's section (its histogram, the noise's
        figures), kept for that column only."""
        if not any(c == column for _, c in self._finite):
            self._finite.clear()
        key = (which, column)
        if key not in self._finite:
            frame = self.released if which == "released" else self.original
            assert frame is not None
            self._finite[key] = _finite(frame[column])
        return self._finite[key]

    def of_released(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``, a figure of the released table alone, remembered on that table
        (:attr:`Table.memo`) under ``key`` -- its name, column and every parameter it
        depends on: the other version of the same run's report finds it there.  Nothing
        that reads the original is kept there."""
        memo = self.released.memo
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def rows(self) -> np.ndarray:
        """A systematic sample of row positions: every (n / sample_rows)-th row."""
        if self._rows is None:
            n = self.released.height
            m = min(n, self.sample_rows)
            self._rows = np.unique(np.linspace(0, n - 1, m).astype(np.int64)) if n else np.zeros(0, np.int64)
        return self._rows

    @property
    def sampled(self) -> bool:
        return self.released.height > self.sample_rows

    def sample(self, frame: Table, columns: Sequence[str]) -> pl.DataFrame:
        return frame.gather(columns, self.rows()) if self.sampled else frame.select(columns)

    def sample_note(self) -> tuple[str, ...]:
        if not self.sampled:
            return ()
        return (
            f"Rank, linkage and attack figures use a systematic sample of {len(self.rows()):,} of the "
            f"{self.released.height:,} rows (every {self.released.height / len(self.rows()):.1f}th).",
        )


@dataclass
class _Parts:
    """What a method's builder finds for one column."""

    verdict: str
    utility: list[Figure] = field(default_factory=list)
    risk: list[Figure] = field(default_factory=list)
    attack: Figure | None = None  # a measured attack (internal): the section's headline risk
    plots: list[Plot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _of(value: Any, column: str) -> Any:
    """A step's parameter for ``column``: per column (a dict) or one for all."""
    return value.get(column) if isinstance(value, dict) else value


def _kind(dtype: pl.DataType) -> str | None:
    """How a column is plotted: ``numeric``, ``categorical`` or None (no plot suits it)."""
    if dtype.is_numeric():
        return "numeric"
    if dtype == pl.Boolean or dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        return "categorical"
    return None


def _finite(series: pl.Series) -> np.ndarray:
    """The finite values of ``series`` as floats (read-only: a column of floats without
    nulls is not copied, nor filtered when every value is finite)."""
    values = (series.drop_nulls() if series.null_count() else series).cast(pl.Float64).to_numpy()
    finite = np.isfinite(values)
    return values if finite.all() else values[finite]


def _histogram(column: str, tables: _Tables, title: str) -> Plot | None:
    """Shares of rows per equal-width bin; the bins span the released values (and, in the
    internal version, the original's too)."""
    got = tables.finite("released", column)
    truth = tables.finite("original", column) if tables.original is not None else None
    spans = [(float(v.min()), float(v.max())) for v in (got, truth) if v is not None and v.size]
    if not spans:
        return None
    low, high = min(s[0] for s in spans), max(s[1] for s in spans)
    edges = _edges(low, high, integers=tables.released[column].dtype.is_integer())
    series = []
    if truth is not None:
        series.append(_stairs("original", truth, edges, "original"))
    series.append(_stairs("released", got, edges, "released"))
    return Plot("histogram", title, column, "share of rows", tuple(series))


def _edges(low: float, high: float, *, integers: bool) -> np.ndarray:
    """Equal-width bins from ``low`` to ``high`` (the values' smallest and largest); for
    integers spanning at most 2 x _BINS values, one bin per integer (or two), so that no
    bin holds one more integer than its neighbour."""
    if integers and high - low < 2 * _BINS:
        step = 1 if high - low < _BINS else 2
        return np.arange(low - 0.5, high + step, step)
    # NumPy's bins of the values themselves, which depend on their extremes alone.
    return np.histogram_bin_edges(np.array([low, high]), bins=_BINS)


def _stairs(label: str, values: np.ndarray, edges: np.ndarray, source: Any) -> PlotSeries:
    counts = _bin_counts(values, edges)
    heights = counts / max(values.size, 1)
    return PlotSeries(label, tuple(float(e) for e in edges), tuple(float(h) for h in heights), source=source)


_WIDEST_SUBNORMAL = float(np.finfo(np.float64).tiny) * 2.0**52


def _bin_counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram(values, bins=edges)``'s counts, without its sort.

    Given an array of edges, NumPy sorts the values (in blocks of 65,536) to count them,
    and its sort is the slow one on some CPUs (AVX-512: 2.4 of a 5M-row report's 6.9 s,
    issue 30).  Edges that are NumPy's own equal-width ones -- ``np.linspace`` of the
    first and last -- take its equal-width path: one pass, each value's bin computed and
    then checked against these same edges, so the counts are the same."""
    bins = edges.size - 1
    if bins >= 1 and edges[0] < edges[-1]:
        # The equal-width path corrects a bin by one at most: only for bins far wider than
        # the floats' spacing (not subnormal widths, not integers near 2**53, where
        # linspace's edges drift or repeat).  Equal first and last edges it would widen.
        width = (float(edges[-1]) - float(edges[0])) / bins
        largest = max(abs(float(edges[0])), abs(float(edges[-1])))
        wide = (
            math.isfinite(width)
            and width >= _WIDEST_SUBNORMAL
            and width > 2.0**10 * float(np.spacing(largest))
        )
        if wide and np.array_equal(edges, np.linspace(edges[0], edges[-1], bins + 1)):
            counts, _ = np.histogram(values, bins=bins, range=(float(edges[0]), float(edges[-1])))
            return counts
    counts, _ = np.histogram(values, bins=edges)
    return counts


def _bars(column: str, released: pl.Series, original: pl.Series | None, title: str) -> tuple[Plot, list[str]]:
    """Shares of rows per value: the most frequent released values (at most ``_TOP``)."""
    counts = released.value_counts(sort=True, name="n")
    notes = _bars_notes(counts.height)
    top = counts.head(_TOP)
    labels = [str(v) for v in top[released.name].to_list()]
    series = []
    if original is not None:
        truth = _counts(original)
        series.append(
            PlotSeries(
                "original",
                tuple(labels),
                tuple(truth.get(v, 0) / max(original.len(), 1) for v in top[released.name].to_list()),
                source="original",
            )
        )
    series.append(
        PlotSeries(
            "released", tuple(labels), tuple(n / max(released.len(), 1) for n in top["n"]), source="released"
        )
    )
    return Plot("bars", title, column, "share of rows", tuple(series)), notes


def _counts(values: pl.Series) -> dict[Any, int]:
    """How many rows hold each value (a null counted as one).

    A streaming group-by: ``value_counts`` (an in-memory group-by) built a table of
    every row's key, 10 bytes a row of a Boolean column (issue 30).  A Boolean column's
    counts are its sum and null count (the group-by took 0.8 s at 100M rows)."""
    if values.dtype == pl.Boolean:
        true, null = int(values.sum()), values.null_count()
        found = {True: true, False: values.len() - true - null, None: null}
        return {value: n for value, n in found.items() if n}
    frame = values.to_frame("value").lazy().group_by("value").agg(pl.len().alias("n"))
    return dict(frame.collect(engine="streaming").iter_rows())


def _bars_notes(distinct: int) -> list[str]:
    """The bars' note on a column of ``distinct`` values (a null counted as one)."""
    if distinct > _TOP:
        return [f"{distinct:,} distinct values; the {_TOP} most frequent released ones are shown."]
    return []


def _distribution(column: str, tables: _Tables, *, plot: bool = True) -> tuple[list[Plot], list[str]]:
    """The column's distribution plot and its notes; with ``plot`` False, only the notes
    (a section that draws the distribution its own way), as cheaply as they come."""
    released = tables.released[column]
    original = tables.original[column] if tables.original is not None else None
    kind = _kind(released.dtype)
    title = "Original and released distribution" if original is not None else "Released distribution"
    if kind == "numeric":
        if not plot:
            some = tables.finite("released", column).size or (
                original is not None and tables.finite("original", column).size
            )
            return [], ([] if some else ["No finite value to plot."])
        drawn = _histogram(column, tables, title)
        return ([drawn] if drawn else []), ([] if drawn else ["No finite value to plot."])
    if kind == "categorical":
        if not plot:
            return [], _bars_notes(released.n_unique())
        bars, notes = _bars(column, released, original, title)
        return [bars], notes
    return [], [f"A column of type {released.dtype}: no plot suits it, and no figure is computed for it."]


# ---- per method --------------------------------------------------------------------------


def _rr(step: Any, column: str, tables: _Tables) -> _Parts:
    from polars_ppdm.audit.ldp import rr_p_from_epsilon
    from polars_ppdm.mine.rr_support import rr_support

    k = step.k(column)
    epsilon = step.column_epsilon(column)
    p = _of(step.p, column)
    p = rr_p_from_epsilon(epsilon, k) if p is None else p
    categories = _of(step.categories, column)
    if getattr(step, "no_finite_epsilon", False):
        # One coin for the whole record (paper 003): not epsilon-LDP for any epsilon.
        others = ", ".join(c for c in step.columns if c != column)
        parts = _Parts(
            verdict=(
                f"The record is deniable only up to its complement: one coin flips this column together with "
                f"{others}, so the XOR of any two of them in a released row is the true XOR. No finite epsilon "
                "(whole-record randomized response, paper 003, Du & Zhan); it is charged nothing to the budget "
                "because no epsilon describes it."
            )
        )
        parts.risk.append(
            Figure(
                "local DP epsilon",
                "none (no finite epsilon)",
                f"the record is deniable only up to its complement; the coin keeps the true value with "
                f"probability {share(p)}",
            )
        )
    else:
        parts = _Parts(
            verdict=(
                f"Every released value is deniable: it is the true one with probability {share(p)}, so one row "
                f"changes the odds of any guess about its true value at most {number(math.exp(epsilon))}-fold "
                f"(local DP, epsilon {number(epsilon)} per distinct value)."
            )
        )
        parts.risk.append(
            Figure(
                "local DP epsilon",
                number(epsilon),
                f"per distinct value: whatever else an attacker knows, a released value changes the odds of a "
                f"guess at most e^epsilon = {number(math.exp(epsilon))} times",
            )
        )
        bound = getattr(step, "max_values_per_unit", None)
        if bound is not None:
            parts.risk.append(
                Figure(
                    "epsilon charged per privacy unit",
                    number(epsilon * bound),
                    f"epsilon x max_values_per_unit {bound} (a declared public bound: the coins are keyed by unit, "
                    "column and value, and a run refuses data in which a unit has more distinct values)",
                )
            )

    def corrected() -> tuple[int, int, pl.DataFrame]:
        released = tables.released.select(column)
        nulls = released[column].null_count()
        if nulls:
            released = released.drop_nulls()
        # Lazy in, lazy out: its group-by streams (in memory, a table of every row's key).
        estimate = rr_support(released.lazy(), column, p=p, categories=categories)
        return nulls, released.height, estimate.collect(engine="streaming")

    key = ("rr_support", column, p, None if categories is None else tuple(categories))
    nulls, height, estimate = tables.of_released(key, corrected)
    if nulls:
        parts.notes.append(
            f"{nulls:,} null values are left out of the shares (randomized response keeps nulls)."
        )
    labels = tuple(str(v) for v in estimate[column].to_list())
    observed = estimate["observed"].cast(pl.Float64) / max(height, 1)
    se = estimate["std_error"].to_numpy()
    widest = float(np.nanmax(se)) * _Z95 if se.size else math.nan
    outside = shares_outside_unit(
        [f"{column}={v}" for v in labels], estimate["frequency"].to_list(), (se * _Z95).tolist()
    )
    if outside:
        parts.notes.append(outside)
    parts.utility.append(
        Figure(
            "95% interval of a corrected share",
            f"± {share(widest)}",
            "the widest, over the column's values (paper 003)",
        )
    )
    series = [
        PlotSeries("released (observed)", labels, tuple(observed.to_list()), source="released"),
        PlotSeries(
            "corrected estimate",
            labels,
            tuple(estimate["frequency"].to_list()),
            error=tuple(float(s) * _Z95 for s in se),
            source="estimate",
        ),
    ]
    if tables.original is not None:
        truth = tables.original[column]
        counts = _counts(truth)
        true_shares = [counts.get(v, 0) / max(truth.len(), 1) for v in estimate[column].to_list()]
        series.insert(0, PlotSeries("original", labels, tuple(true_shares), source="original"))
        gaps = np.abs(np.asarray(true_shares) - estimate["frequency"].to_numpy())
        parts.utility.append(
            Figure(
                "largest error of a corrected share",
                share(float(gaps.max())) if gaps.size else "n/a",
                "corrected estimate vs the true share in the original",
            )
        )
        differs = ~tables.released[column].eq_missing(truth).to_numpy()
        changed = float(differs.mean()) if differs.size else math.nan
        parts.risk.append(
            Figure("rows changed", share(changed), "released value differs from the original one")
        )
        # A value is changed with probability 1 - p: far from it, the tables or the step do
        # not describe the same disguise.
        n = max(truth.len(), 1)
        if differs.size and abs(changed - (1 - p)) > 5 * math.sqrt(p * (1 - p) / n) + 1 / n:
            parts.notes.append(
                f"Warning: {share(changed)} of the rows changed, where this step's epsilon implies about "
                f"{share(1 - p)}: are the original's rows in the released order, and are the step's parameters "
                "those the column was disguised with?"
            )
    parts.plots.append(
        Plot(
            "bars",
            "Shares of each value: released, and corrected for the disguise (95% intervals)",
            column,
            "share of rows",
            tuple(series),
        )
    )
    return parts


def _ecdf(step: Any, column: str, tables: _Tables) -> _Parts:
    bins = _of(step.bins, column)
    if step.link == "rank":
        verdict = (
            f"Values re-drawn from the column's own distribution ({bins} bins), each row keeping its rank: "
            "distributions and rank statistics survive, but anyone who knows the original values of this "
            "column can re-identify rows by their rank order."
        )
        risk = Figure(
            "rank order",
            "kept" if not step.shuffle else "kept, rows shuffled",
            "the released ranks are the original ranks: rank linkage re-identifies rows whose values are distinct",
        )
    else:
        verdict = (
            f"Values re-drawn from the column's own distribution ({bins} bins), unlinked from the rows: "
            "the distribution survives, the rows' values do not; linking by rank succeeds by chance only."
        )
        risk = Figure(
            "rank order", "not kept", "released values are unrelated to the rows: linkage is about 1/n"
        )
    parts = _Parts(verdict=verdict, risk=[risk])
    if tables.original is not None:
        from polars_ppdm.audit.linkage import rank_linkage

        original = tables.sample(tables.original, [column])
        released = tables.sample(tables.released, [column])
        a, b = _finite(original[column]), _finite(released[column])
        parts.utility.append(
            Figure("KS distance", number(_ks(a, b)), "0 = the same distribution, 1 = disjoint")
        )
        spearman: float = pl.select(pl.corr(original[column], released[column], method="spearman")).item()
        parts.utility.append(
            Figure(
                "rank correlation",
                number(spearman),
                "Spearman, original vs released row by row; 1 = ranks kept",
            )
        )
        parts.attack = Figure(
            "rank linkage",
            share(rank_linkage(original, released, column)) if original.height else "n/a",
            "share of rows an attacker who knows the original column links to the right person",
        )
    return parts


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov distance: the largest gap between the ECDFs."""
    if a.size == 0 or b.size == 0:
        return math.nan
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    gap = np.searchsorted(a, grid, side="right") / a.size - np.searchsorted(b, grid, side="right") / b.size
    return float(np.abs(gap).max())


def _noise(step: Any, column: str, tables: _Tables) -> _Parts:
    from polars_ppdm.mine.reconstruct import reconstruct_distribution
    from polars_ppdm.perturb.noise import noise_std

    scale = _of(step.scale, column)
    sigma = noise_std(step.dist, scale)
    released = tables.finite("released", column)
    parts = _Parts(
        verdict=(
            f"{step.dist.capitalize()} noise of standard deviation {number(sigma)} on every value: a released value "
            f"pins the true one to ± {number(_Z95 * sigma)} (95%). Not differential privacy: correlated columns "
            "let an attacker strip part of the noise."
        )
    )
    parts.risk.append(
        Figure(
            "noise standard deviation",
            number(sigma),
            f"95% of true values lie within ± {number(_Z95 * sigma)} of the released one",
        )
    )
    if released.size >= 2:
        # The released variance is the original's plus the noise's: public arithmetic.
        variance = tables.of_released(("variance", column), lambda: float(released.var()))
        spread = math.sqrt(max(variance - sigma * sigma, 0.0))
        parts.utility.append(
            Figure(
                "estimated signal-to-noise ratio",
                number(spread / sigma),
                "the original's standard deviation (from the released variance minus the noise's) over the noise's; > 3: values stay informative",
            )
        )

    def reconstruction() -> tuple[np.ndarray, list[PlotSeries]] | None:
        if released.size < 2 or np.ptp(released) <= 0:
            return None
        low, high = (float(q) for q in np.quantile(released, [0.005, 0.995]))
        if high <= low:
            return None
        frame = pl.DataFrame({column: released})
        # The middle 99%, else (noise too small to reach the released values beyond it
        # from any interval: review 78, a run exited 7 without its public page, the
        # message quoting the quantiles) the whole released range, else no plot.
        for bounds in ((low, high), (float(released.min()), float(released.max()))):
            try:
                got = reconstruct_distribution(
                    frame, column, dist=step.dist, scale=scale, bins=_BINS, bounds=bounds
                )
                break
            except InvalidParameterError:
                continue
        else:
            return None
        edges = np.append(got["low"].to_numpy(), got["high"][-1])
        return edges, [
            _stairs("released", released, edges, "released"),
            PlotSeries(
                "reconstructed original",
                tuple(float(e) for e in edges),
                tuple(got["frequency"].to_list()),
                source="estimate",
            ),
        ]

    found = tables.of_released(("reconstruction", column, step.dist, scale), reconstruction)
    if found is not None:
        edges, shown = found
        series = list(shown)
        if tables.original is not None:
            series.insert(0, _stairs("original", tables.finite("original", column), edges, "original"))
        parts.plots.append(
            Plot(
                "histogram",
                "The distribution behind the noise, reconstructed from the released values",
                column,
                "share of rows",
                tuple(series),
                caption="Reconstruction by Agrawal and Srikant's iterative Bayes method (SIGMOD 2000).",
            )
        )
    if tables.original is not None:
        ours, theirs = released, tables.finite("original", column)
        if ours.size == theirs.size == tables.released.height:
            # No null, NaN or infinity in either column: its values, row by row, are
            # the ones converted already; NumPy's difference is Polars' (IEEE), and its
            # memory goes back when freed (Polars' stays with its allocator a while).
            error = ours - theirs
        else:
            truth = tables.original[column].cast(pl.Float64)
            gaps = tables.released[column].cast(pl.Float64) - truth
            error = (gaps.drop_nulls() if gaps.null_count() else gaps).to_numpy()
        finite = np.isfinite(error)
        error = error if finite.all() else error[finite]  # no copy of 8 bytes a row when all are finite
        # Squared in place where the array is this function's own (not a read-only view
        # of Polars' memory): the same values as error**2 without another 8 bytes a row.
        squared = np.square(error, out=error) if error.flags.writeable else np.square(error)
        rms = float(np.sqrt(np.mean(squared))) if error.size else math.nan
        parts.utility.append(Figure("RMS error", number(rms), "released vs original value, row by row"))
        truth_values = tables.finite("original", column)
        if truth_values.size >= 2:
            parts.utility.append(
                Figure(
                    "signal-to-noise ratio",
                    number(float(truth_values.std()) / sigma),
                    "original spread over the noise's",
                )
            )
    return parts


def _noise_stripping(step: Any, tables: _Tables) -> dict[str, Figure]:
    """PCA noise stripping over the step's columns (internal, 2+ columns)."""
    from polars_ppdm.audit.noise_stripping import pca_noise_stripping

    if tables.original is None or len(step.columns) < 2:
        return {}
    scale: dict[str, float] = {c: _of(step.scale, c) for c in step.columns}
    original = tables.sample(tables.original, step.columns)
    released = tables.sample(tables.released, step.columns)
    # The attack needs whole rows: a row with a null (or NaN, infinity) in any of the
    # columns, in either table, is left out of it, in both.
    complete = pl.all_horizontal(
        pl.col(c).cast(pl.Float64).is_finite().fill_null(False) for c in step.columns
    )
    whole = original.select(complete).to_series() & released.select(complete).to_series()
    partial = not whole.all()
    if partial:
        original, released = original.filter(whole), released.filter(whole)
        if original.height < len(step.columns) + 2:
            return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a column whose noise was rounded away shows 'n/a'
        found = pca_noise_stripping(original, released, step.columns, dist=step.dist, scale=scale)
    note = f"share of the noise an attacker removes using the correlation of {', '.join(step.columns)}"
    if partial:
        note += " (over the rows where all of them hold a finite value)"
    return {
        row["column"]: Figure("PCA noise stripping", share(row["stripped"]), note)
        for row in found.iter_rows(named=True)
    }


def _spiral_figures(step: Any, tables: _Tables) -> list[Figure]:
    """Distance preservation and the known input/output attack (internal)."""
    from polars_ppdm.audit.spiral_attack import known_io_attack

    if tables.original is None:
        return []
    rows = tables.rows()[:: max(1, len(tables.rows()) // _PAIR_ROWS)][:_PAIR_ROWS]
    x = tables.original.gather(step.columns, rows).cast(pl.Float64).to_numpy()
    y = tables.released.gather(step.columns, rows).cast(pl.Float64).to_numpy()
    ok = np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1)
    x, y = x[ok], y[ok]
    d = len(step.columns)
    if len(x) < d + 2:
        return []
    upper = np.triu_indices(len(x), k=1)
    before = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))[upper]
    after = np.sqrt(((y[:, None, :] - y[None, :, :]) ** 2).sum(-1))[upper]
    correlation = float(
        pl.DataFrame({"a": before, "b": after}).select(pl.corr("a", "b", method="spearman")).item()
    )
    preserved = Figure(
        "distance preservation",
        number(correlation),
        f"rank correlation of the pairwise distances of {len(x):,} rows, original vs released (1 = same order)",
    )
    known = _general_position(x, d)
    if known is None:  # the rows lie in a subspace: d of them do not pin the map
        return [preserved]
    rest = np.setdiff1d(np.arange(len(x)), known)
    with np.errstate(all="ignore"):
        attack = known_io_attack(x[known], y[known]).reconstruct(y[rest])
    span = np.ptp(x, axis=0)
    span[span == 0] = 1.0
    error = float(np.sqrt(np.mean(((attack - x[rest]) / span) ** 2)))
    return [
        preserved,
        Figure(
            "known-I/O attack error",
            share(error),
            f"RMS error of every other row rebuilt from {d} known pairs, as a share of each column's range",
        ),
    ]


def _general_position(x: np.ndarray, d: int) -> np.ndarray | None:
    """The first d rows (in sample order) in general position (their differences span d - 1
    dimensions: enough for the spiral's similarity map, ``known_io_attack``), as an
    attacker who knows a few people's rows would pick them; None when the rows lie in a
    smaller subspace."""
    from polars_ppdm.audit.spiral_attack import spanned_dimensions

    chosen = [0]
    for i in range(1, len(x)):
        trial = [*chosen, i]
        if spanned_dimensions(x[trial]) == len(trial) - 1:
            chosen = trial
            if len(chosen) == d:
                return np.asarray(chosen)
    return None


def _spiral(step: Any, column: str, tables: _Tables, figures: list[Figure]) -> _Parts:
    d = len(step.columns)
    parts = _Parts(
        verdict=(
            f"Rotated with {', '.join(step.columns)} by a secret log-spiral map ({step.rounds} rounds): distances "
            f"and clusters survive; anyone who knows {d} original rows and their released versions undoes it "
            "for every row."
        )
    )
    parts.risk.append(
        Figure(
            "known pairs that undo the map",
            d,
            "an attacker with this many (original, released) rows solves the map (paper 002)",
        )
    )
    for figure in figures:
        if figure.name == "known-I/O attack error":
            parts.attack = figure
        else:
            parts.utility.append(figure)
    return parts


_VERDICTS = {
    "keep": "Published unchanged: no protection.",
    "drop": "Not published.",
}


def _once(shared: dict[int, Any], step: Any, compute: Callable[[], Any]) -> Any:
    """A multi-column step's figures, computed for its first column only (``setdefault``
    computed them again for every column, to throw them away)."""
    if id(step) not in shared:
        shared[id(step)] = compute()
    return shared[id(step)]


def _section(step: Any, column: str, tables: _Tables, shared: dict[int, Any]) -> ColumnSection:
    method = step.step
    parameters = _parameters(step, column)
    if method == "drop":
        return ColumnSection(column, method, parameters, _VERDICTS["drop"])
    # randomized response's own plot shows the released shares (and the original's)
    plots, notes = _distribution(column, tables, plot=method != "rr_disguise")
    if _kind(tables.released.schema[column]) is None or method == "keep":
        verdict = _VERDICTS["keep"] if method == "keep" else f"Perturbed by {method}."
        return ColumnSection(column, method, parameters, verdict, plots=tuple(plots), notes=tuple(notes))
    builders: dict[str, Callable[[], _Parts]] = {
        "rr_disguise": lambda: _rr(step, column, tables),
        "ecdf_resample": lambda: _ecdf(step, column, tables),
        "add_noise": lambda: _noise(step, column, tables),
        "spiral": lambda: _spiral(
            step, column, tables, _once(shared, step, lambda: _spiral_figures(step, tables))
        ),
    }
    parts = builders[method]()
    if method == "add_noise":
        parts.attack = _once(shared, step, lambda: _noise_stripping(step, tables)).get(column)
    return ColumnSection(
        column,
        method,
        parameters,
        parts.verdict,
        utility=tuple(parts.utility),
        risk=(parts.attack, *parts.risk) if parts.attack else tuple(parts.risk),  # the headline first
        plots=tuple(plots + parts.plots),
        notes=tuple(notes + parts.notes)
        + (
            tables.sample_note()
            if tables.original is not None and method in {"ecdf_resample", "spiral", "add_noise"}
            else ()
        ),
    )


def _parameters(step: Any, column: str) -> dict[str, str]:
    """The step's parameters for ``column`` (per-column values picked), as displayed; the
    spiral key's path is left out (where a secret lives is nobody's business)."""
    shown = {}
    for name, value in step.model_dump(exclude={"step", "columns", "path"}).items():
        if isinstance(value, dict) and name != "bounds":
            value = value.get(column)
        elif name == "bounds" and isinstance(value, dict):
            value = value.get(column)
        if value is not None and not (name == "accept_no_finite_epsilon" and value is False):
            shown[name] = parameter(value)
    if len(step.columns) > 1 and step.step in {"spiral", "add_noise"}:
        shown["with"] = ", ".join(c for c in step.columns if c != column)
    return shown


_NUMERIC_METHODS = ("add_noise", "spiral", "ecdf_resample")


def _check(perturb: Sequence[Any], tables: _Tables) -> None:
    released = tables.released
    named = [c for step in perturb for c in step.columns]
    twice = sorted({c for c in named if named.count(c) > 1})
    if twice:
        msg = f"The steps of {_FUNC} name columns twice: {twice}. Each column is perturbed, kept or dropped by one step."
        raise InvalidParameterError(msg)
    for index, step in enumerate(perturb):
        if step.step == "drop":
            continue
        missing = [c for c in step.columns if c not in released.columns]
        if missing:
            msg = (
                f"The {step.step} step {index} of {_FUNC} names columns the released table lacks: {missing}. "
                f"Its columns: {released.columns}."
            )
            raise InvalidParameterError(msg)
        schema = released.schema
        if step.step in _NUMERIC_METHODS:
            text = [f"{c} ({schema[c]})" for c in step.columns if not schema[c].is_numeric()]
            if text:
                msg = f"The {step.step} step {index} of {_FUNC} perturbs numbers; its columns {text} are not numeric."
                raise InvalidParameterError(msg)
        if step.step == "rr_disguise":
            for c in step.columns:
                textual = schema[c] in (pl.String, pl.Categorical)
                if textual and not _of(step.categories, c):
                    msg = (
                        f"The rr_disguise step {index} of {_FUNC}: column {c!r} holds {schema[c]} values, so the "
                        "step needs its categories (the public domain the values were disguised over)."
                    )
                    raise InvalidParameterError(msg)
    original = tables.original
    if original is None:
        return
    missing = [c for step in perturb for c in step.columns if c not in original.columns]
    if missing:
        msg = f"The steps of {_FUNC} name columns the original table lacks: {missing}. Its columns: {original.columns}."
        raise InvalidParameterError(msg)
    if original.height != released.height and any(s.step not in {"drop", "keep"} for s in perturb):
        msg = (
            f"The released table of {_FUNC} and the original have different numbers of rows: the "
            "internal figures pair each released row with its original row, so both must hold the same rows in "
            "the same order."
        )
        raise InvalidParameterError(msg)


def column_sections(
    perturb: Sequence[Any],
    released: pl.DataFrame | Table,
    original: pl.DataFrame | Table | None,
    *,
    sample_rows: int,
) -> tuple[ColumnSection, ...]:
    """One section per column the steps name, in the steps' order (validated step models)."""
    tables = _Tables(
        released if isinstance(released, Table) else Table(released),
        original if isinstance(original, Table) or original is None else Table(original),
        sample_rows,
    )
    _check(perturb, tables)
    shared: dict[int, Any] = {}  # per multi-column step: figures computed once
    return tuple(_section(step, column, tables, shared) for step in perturb for column in step.columns)
