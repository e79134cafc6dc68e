"""One audit loop over every differentially private release of the package.

Every DP release is listed once in :data:`DP_RELEASES`, with neighbouring data sets (a
table, and the same table plus one privacy unit with more than its maximum contributions)
and the L1 sensitivity it declares.  Two checks run on each (the test suite generates one
test per release and check, as river's ``check_estimator`` does per estimator):

* :func:`record_replay` -- the same secret over both tables: two releases over different
  data must draw independent noise (DESIGN.md, "Randomness", rule 2), so the share of
  cells whose released change is the exact change of the true values stays far below 1
  (noise keyed by the secret and the cell only cancels: share 1); and the identical
  release over the identical table reproduces its bits.
* :func:`privacy_loss_lower_bound` -- over many secrets, the frequency of a
  distinguishing event (a touched cell at or above the neighbour's true value) on both
  tables; a one-sided lower confidence bound (Clopper-Pearson) on the privacy loss
  ``ln(P'(E) / P(E))`` must stay at or below the claimed epsilon.  A mechanism with half
  the noise (twice the loss) fails it: the control the tests run.

References
----------
Ding, Wang, Wang, Zhang, Kifer, "Detecting violations of differential privacy", CCS 2018
(statistical testing of a distinguishing event); Gilbert and McMillan, "Property testing
for differential privacy", 2018.  River's estimator checks (``river.checks``).  The other
attacks of the standing suite are in :mod:`polars_ppdm.audit.attacks`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm.secret import Secret

__all__ = [
    "DP_RELEASES",
    "LDP_PERTURBATIONS",
    "AuditedPerturbation",
    "AuditedRelease",
    "ReplayResult",
    "clopper_pearson",
    "ldp_loss_lower_bound",
    "privacy_loss_lower_bound",
    "record_replay",
]

Cells = dict[Hashable, float]


@dataclass(frozen=True)
class AuditedRelease:
    """A DP release as the audit runs it.

    ``release(frame, secret, epsilon)`` returns the released cells (cell id -> value);
    ``neighbours()`` the table and the table plus one privacy unit; ``sensitivity`` the
    L1 distance the unit may move the released cells (None: not linear in the data, only
    the untouched cells are checked); ``touched`` the cell the distinguishing event looks
    at (None: no event test for this release).
    """

    name: str
    epsilon: float
    release: Callable[[pl.DataFrame, int, float], Cells]
    neighbours: Callable[[], tuple[pl.DataFrame, pl.DataFrame]]
    sensitivity: float | None
    touched: Hashable | None = None


@dataclass(frozen=True)
class ReplayResult:
    """What :func:`record_replay` measured, pooled over its secrets."""

    exact_share: float  # share of the cells compared whose released change is the exact change
    cells: int  # cells compared (in both releases and both exact releases)
    reproduced: bool  # the identical release over the identical table gave the same bits
    touched: int  # cells whose true value the new unit changed (or present in one release only)

    def __str__(self) -> str:
        return (
            f"{self.exact_share:.1%} of {self.cells} cells showed their exact change under one secret "
            f"({self.touched} touched by the unit); identical replay reproduced its bits: {self.reproduced}"
        )


def record_replay(audited: AuditedRelease, seeds: Sequence[int] = range(4)) -> ReplayResult:
    """Release over both neighbours with one secret (``Secret.for_tests(seed)``, per
    seed); compare every cell's released change with its true change (the release with
    noise too small to matter), and replay the first release."""
    small, large = audited.neighbours()
    exact = cells = 0
    touched: set = set()
    reproduced = True
    for seed in seeds:
        before = audited.release(small, seed, audited.epsilon)
        after = audited.release(large, seed, audited.epsilon)
        reproduced &= audited.release(small, seed, audited.epsilon) == before
        true_before = audited.release(small, seed, 1e9)
        true_after = audited.release(large, seed, 1e9)
        touched |= set(before) ^ set(after)
        for c in before:
            if c in after and c in true_before and c in true_after:
                cells += 1
                true_change = true_after[c] - true_before[c]
                if not math.isclose(true_change, 0.0, abs_tol=1e-3):
                    touched.add(c)
                size = abs(before[c]) + abs(after[c])
                exact += abs((after[c] - before[c]) - true_change) <= 1e-6 * (1 + size)
    return ReplayResult(exact / cells if cells else math.nan, cells, reproduced, len(touched))


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """One-sided exact bounds on a binomial proportion: (lower, upper), each at ``confidence``."""

    def tail_at_least(p: float, k: int) -> float:  # P(Bin(trials, p) >= k)
        if k <= 0:
            return 1.0
        if p <= 0:
            return 0.0
        if p >= 1:
            return 1.0
        ks = np.arange(k, trials + 1)
        log_pmf = (
            np.array([math.lgamma(trials + 1) - math.lgamma(j + 1) - math.lgamma(trials - j + 1) for j in ks])
            + ks * math.log(p)
            + (trials - ks) * math.log1p(-p)
        )
        return float(np.exp(log_pmf).sum())

    def solve(f: Callable[[float], float], target: float) -> float:
        low, high = 0.0, 1.0
        for _ in range(60):
            mid = (low + high) / 2
            if f(mid) < target:
                low = mid
            else:
                high = mid
        return (low + high) / 2

    alpha = 1 - confidence
    lower = 0.0 if successes == 0 else solve(lambda p: tail_at_least(p, successes), alpha)
    upper = 1.0 if successes == trials else solve(lambda p: tail_at_least(p, successes + 1), 1 - alpha)
    return lower, upper


def privacy_loss_lower_bound(
    audited: AuditedRelease, secrets: Sequence[int] = range(600), confidence: float = 0.999
) -> float:
    """A lower confidence bound on ``ln(P'(E) / P(E))`` for E = {the touched cell >= its
    true value on the larger table}: the loss a distinguisher sees, at most epsilon.
    ``secrets`` are seeds of ``Secret.for_tests``: one fresh secret per trial.

    ``confidence`` is per side (two one-sided Clopper-Pearson bounds).  The mechanisms
    are exactly tight for this event (a shift of the full sensitivity: the ratio is e^eps),
    so a bound at 95% per side exceeds epsilon by chance in a few percent of audits, once
    per ~20 releases in the loop (seen: ``dp_group_by sum`` at 1.008 over secrets 0-599,
    0.69-0.88 over the next three blocks of 600, 1.04 on all 2,400 -- the law as theory
    says); 99.9% per side keeps the family's false alarms rare, and a release with half
    the noise (loss 2) still fails at ~1.3."""
    if audited.touched is None:
        msg = f"{audited.name}: no distinguishing cell to test"
        raise ValueError(msg)
    small, large = audited.neighbours()
    # The true value on the larger table: the release with noise too small to matter.
    threshold = audited.release(large, 0, 1e9)[audited.touched]
    hits_small = sum(
        audited.release(small, s, audited.epsilon).get(audited.touched, -math.inf) >= threshold
        for s in secrets
    )
    hits_large = sum(
        audited.release(large, s, audited.epsilon).get(audited.touched, -math.inf) >= threshold
        for s in secrets
    )
    _, upper_small = clopper_pearson(int(hits_small), len(secrets), confidence)
    lower_large, _ = clopper_pearson(int(hits_large), len(secrets), confidence)
    return math.log(lower_large / upper_small) if lower_large > 0 else -math.inf


# ---- the releases ---------------------------------------------------------------------------

# Each unit of the base table has exactly its maximum of rows: the bounding cuts only the
# new unit, so the true values do not depend on the secret (the event test needs them fixed).
_UNITS, _ROWS_PER_UNIT, _CONTRIBUTIONS = 300, 3, 3


def _base(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = _UNITS * _ROWS_PER_UNIT
    return pl.DataFrame(
        {
            "unit": np.repeat(np.arange(_UNITS), _ROWS_PER_UNIT),
            "x": rng.uniform(0, 10, n),
            "y": rng.uniform(0, 10, n),
            "group": np.array(["a", "b", "c", "d"])[
                np.repeat(np.arange(_UNITS), _ROWS_PER_UNIT) % 4
            ],  # one per unit
            "value": rng.uniform(0, 100, n),
        }
    )


def _with_new_unit(base: pl.DataFrame, rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    return base, pl.concat(
        [base, rows.with_columns(pl.lit(10_000, dtype=base.schema["unit"]).alias("unit"))],
        how="diagonal_relaxed",
    )


def _point_unit() -> tuple[pl.DataFrame, pl.DataFrame]:
    """A new unit with more rows than it may contribute, all at one point (one cell)."""
    rows = _CONTRIBUTIONS + 3
    extra = pl.DataFrame(
        {"x": [9.9] * rows, "y": [9.9] * rows, "group": ["a"] * rows, "value": [100.0] * rows}
    )
    return _with_new_unit(_base(), extra)


def _secret(seed: int) -> Secret:
    """The test secret of a seed: DP releases refuse plain integers (guessable)."""
    return Secret.for_tests(seed)


#: The delta at which a Gaussian (rho-zCDP) release of the audit is calibrated to the
#: audit's epsilon: rho is the largest whose (epsilon, delta) conversion is within it.
GAUSSIAN_DELTA = 1e-6


def _budget(epsilon: float, mechanism: str) -> dict[str, Any]:
    """The release's budget arguments: epsilon (Laplace), or the rho that means epsilon at
    GAUSSIAN_DELTA (capped for the audit's noiseless truth, epsilon 1e9: the sampler's
    smallest sigma is 2^-7)."""
    if mechanism == "laplace":
        return {"epsilon": epsilon}
    from polars_ppdm.dp.zcdp import rho_for

    return {"mechanism": "gaussian", "rho": min(rho_for(epsilon, GAUSSIAN_DELTA), 1e4)}


def _histogram(frame: pl.DataFrame, secret: int, epsilon: float, mechanism: str = "laplace") -> Cells:
    from polars_ppdm.dp.histogram import dp_histogram

    out = dp_histogram(
        frame,
        ["x", "y"],
        bounds={"x": (0, 10), "y": (0, 10)},
        bins=5,
        secret=_secret(secret),
        key="unit",
        max_contributions=_CONTRIBUTIONS,
        **_budget(epsilon, mechanism),
    )
    return {(x, y): float(c) for x, y, c in out.select("x_bin", "y_bin", "count").iter_rows()}


def _gaussian_histogram(frame: pl.DataFrame, secret: int, epsilon: float) -> Cells:
    return _histogram(frame, secret, epsilon, "gaussian")


def _continual(frame: pl.DataFrame, secret: int, epsilon: float) -> Cells:
    """dp_continual_counts over 10 periods (``floor(x)``), groups a-d, each unit's first
    3 events: the running totals (a fresh release per call, as the audit needs)."""
    from polars_ppdm.dp.continual import dp_continual_counts

    out = dp_continual_counts(
        frame.with_columns(pl.col("x").floor().cast(pl.Int64).alias("period")),
        "group",
        period="period",
        through=9,
        horizon=10,
        public_groups=pl.DataFrame({"group": ["a", "b", "c", "d"]}),
        privacy_unit="unit",
        max_contributions=_CONTRIBUTIONS,
        secret=_secret(secret),
        rho=_budget(epsilon, "gaussian")["rho"],
    ).table
    return {(g, p): float(t) for g, p, t in out.select("group", "period", "running_total").iter_rows()}


def _leaves(frame: pl.DataFrame) -> Cells:
    return {
        (level, x, y): float(c)
        for level, x, y, c in frame.select("level", "x_low", "y_low", "count").iter_rows()
    }


# The trees' settings: a fixed shape (n, max_height, threshold given), so that the noisy
# counts alone decide the splits and most leaves are the same in both releases.
_TREE: dict = {
    "bounds": {"x": (0, 10), "y": (0, 10)},
    "key": "unit",
    "max_contributions": _CONTRIBUTIONS,
    "max_height": 2,
    "threshold": 0.0,
}


def _quadtree(frame: pl.DataFrame, secret: int, epsilon: float) -> Cells:
    from polars_ppdm.dp.quadtree import dp_quadtree

    out = dp_quadtree(
        frame, ["x", "y"], epsilon=epsilon, secret=_secret(secret), n=float(len(frame)), **_TREE
    )
    return _leaves(out)


def _quadtree_total(frame: pl.DataFrame, secret: int, epsilon: float) -> Cells:
    """The quadtree's leaves summed: post-processing of the release, whose privacy loss
    the event test bounds (a larger total with the new unit)."""
    return {"total": math.fsum(_quadtree(frame, secret, epsilon).values())}


def _lloyd(frame: pl.DataFrame, secret: int, epsilon: float) -> Cells:
    """DPLloyd's centres (x, y per centre) and, for the event test, their mean x: the new
    unit sits at (9.9, 9.9) and pulls a centre towards it."""
    from polars_ppdm.dp.kmeans import dp_kmeans

    fit = dp_kmeans(
        frame,
        ["x", "y"],
        k=2,
        epsilon=epsilon,
        secret=_secret(secret),
        bounds=_TREE["bounds"],
        key="unit",
        max_contributions=_CONTRIBUTIONS,
        method="lloyd",
        iterations=2,
    )
    centres = fit.centres.to_numpy()
    cells: Cells = {
        (i, axis): float(centres[i, j]) for i in range(len(centres)) for j, axis in enumerate("xy")
    }
    cells["mean x"] = float(centres[:, 0].mean())
    return cells


def _kmeans(method: str) -> Callable[[pl.DataFrame, int, float], Cells]:
    def release(frame: pl.DataFrame, secret: int, epsilon: float) -> Cells:
        from polars_ppdm.dp.kmeans import dp_kmeans

        fit = dp_kmeans(
            frame,
            ["x", "y"],
            k=2,
            epsilon=epsilon,
            secret=_secret(secret),
            n=float(len(frame)),
            method=method,
            **_TREE,
        )
        assert fit.buckets is not None  # the noisy leaves (bucket points and counts) the centres come from
        rows = fit.buckets.select("x", "y", "count").iter_rows()
        if method == "quadtree":  # the buckets are the leaves' public centres
            return {(x, y): float(c) for x, y, c in rows}
        # Refined: the bucket points are noisy centroids, in the leaves' order.
        cells: Cells = {}
        for i, (x, y, c) in enumerate(rows):
            cells.update({(i, "x"): float(x), (i, "y"): float(y), (i, "count"): float(c)})
        return cells

    return release


def _group_by(
    kind: str, *, unit: bool = True, selection: bool = False, mechanism: str = "laplace"
) -> Callable[[pl.DataFrame, int, float], Cells]:
    """``dp_group_by`` with one aggregate: with a privacy unit (or each row its own unit),
    over public groups (or with partition selection, delta 1e-6)."""

    def release(frame: pl.DataFrame, secret: int, epsilon: float) -> Cells:
        from polars_ppdm.dp import aggregates
        from polars_ppdm.dp.group_by import dp_group_by

        aggregate = {
            "count": aggregates.count(),
            "count_units": aggregates.count_units(),
            "sum": aggregates.sum("value", bounds=(0, 100)),
            "mean": aggregates.mean("value", bounds=(0, 100)),
            "variance": aggregates.variance("value", bounds=(0, 100)),
            # 101 candidates (every unit): the new unit's values (100) pull the median up.
            "median": aggregates.median("value", bounds=(0, 100), candidates=101),
        }[kind]
        groups: dict[str, Any] = (
            {"delta": 1e-6} if selection else {"public_groups": pl.DataFrame({"group": ["a", "b", "c", "d"]})}
        )
        bounding: dict[str, Any] = (
            {"privacy_unit": "unit", "max_groups_contributed": 1, "max_rows_per_group": _CONTRIBUTIONS}
            if unit
            else {}
        )
        out = dp_group_by(
            frame,
            "group",
            aggregate,
            secret=_secret(secret),
            **_budget(epsilon, mechanism),
            **bounding,
            **groups,
        )
        return {g: float(v) for g, v in out.select("group", aggregate.name).iter_rows()}

    return release


#: Every DP release of the package, each once (the audit's test suite checks the list is
#: complete against the package's dp_* functions).
DP_RELEASES: tuple[AuditedRelease, ...] = (
    AuditedRelease("dp_histogram", 1.0, _histogram, _point_unit, _CONTRIBUTIONS, touched=(4, 4)),
    AuditedRelease("dp_quadtree", 1.0, _quadtree, _point_unit, _CONTRIBUTIONS),
    AuditedRelease("dp_quadtree total", 1.0, _quadtree_total, _point_unit, None, touched="total"),
    AuditedRelease("dp_kmeans", 1.0, _kmeans("quadtree"), _point_unit, _CONTRIBUTIONS),
    # (method="grid" picks its grid from epsilon, so a release at epsilon 1e9 -- the audit's
    # truth -- has other cells: its counts are a histogram's, audited above.)
    AuditedRelease("dp_kmeans lloyd", 1.0, _lloyd, _point_unit, None, touched="mean x"),
    # Its buckets move with the data (noisy centroids): record-replay compares the leaves
    # the unit does not touch; their centroids and counts must not move.
    AuditedRelease("dp_kmeans refined", 1.0, _kmeans("quadtree_refined"), _point_unit, None),
    AuditedRelease("dp_group_by count", 1.0, _group_by("count"), _point_unit, _CONTRIBUTIONS, touched="a"),
    AuditedRelease(
        "dp_group_by sum", 1.0, _group_by("sum"), _point_unit, _CONTRIBUTIONS * 100.0, touched="a"
    ),
    AuditedRelease("dp_group_by mean", 1.0, _group_by("mean"), _point_unit, None, touched="a"),
    # Each row its own unit (the new unit's 6 rows are 6 units), and partition selection.
    AuditedRelease("dp_group_by count rows", 1.0, _group_by("count", unit=False), _point_unit, None),
    AuditedRelease("dp_group_by sum rows", 1.0, _group_by("sum", unit=False), _point_unit, None),
    AuditedRelease("dp_group_by mean rows", 1.0, _group_by("mean", unit=False), _point_unit, None),
    AuditedRelease("dp_group_by count selected", 1.0, _group_by("count", selection=True), _point_unit, None),
    AuditedRelease("dp_group_by sum selected", 1.0, _group_by("sum", selection=True), _point_unit, None),
    AuditedRelease("dp_group_by mean selected", 1.0, _group_by("mean", selection=True), _point_unit, None),
    # The Gaussian mechanism (rho-zCDP), calibrated to epsilon 1 at delta 1e-6.
    AuditedRelease("dp_histogram gaussian", 1.0, _gaussian_histogram, _point_unit, None, touched=(4, 4)),
    AuditedRelease(
        "dp_group_by count gaussian",
        1.0,
        _group_by("count", mechanism="gaussian"),
        _point_unit,
        None,
        touched="a",
    ),
    AuditedRelease(
        "dp_group_by sum gaussian",
        1.0,
        _group_by("sum", mechanism="gaussian"),
        _point_unit,
        None,
        touched="a",
    ),
    AuditedRelease("dp_continual_counts", 1.0, _continual, _point_unit, None, touched=("a", 9)),
    # Issue 29's aggregates: a unit counts once per group; a variance is not linear in the
    # data and a quantile is a choice (no sensitivity: the event test and the untouched
    # groups' replay only).
    AuditedRelease("dp_group_by count_units", 1.0, _group_by("count_units"), _point_unit, 1.0, touched="a"),
    AuditedRelease("dp_group_by variance", 1.0, _group_by("variance"), _point_unit, None, touched="a"),
    AuditedRelease("dp_group_by median", 1.0, _group_by("median"), _point_unit, None, touched="a"),
    AuditedRelease(
        "dp_group_by median selected", 1.0, _group_by("median", selection=True), _point_unit, None
    ),
    # Record-replay only: its event test passed (6 min: three discrete Gaussian figures
    # per release, 1,200 releases) and the count/sum Gaussian entries above test the sampler.
    AuditedRelease(
        "dp_group_by variance gaussian", 1.0, _group_by("variance", mechanism="gaussian"), _point_unit, None
    ),
)


# ---- local DP of the perturbations ----------------------------------------------------------


@dataclass(frozen=True)
class AuditedPerturbation:
    """A perturbation as the LDP audit runs it: ``disguise(values, secret)`` releases one
    record per privacy unit (``values``: a frame of the perturbed columns, one row per
    unit, units keyed by row position); ``value`` and ``other`` are two records a unit may
    hold; the event is {released record == ``value``}.  ``epsilon`` is what the library
    claims (None: no finite epsilon)."""

    name: str
    epsilon: float | None
    disguise: Callable[[pl.DataFrame, Secret], pl.DataFrame]
    value: dict
    other: dict


def ldp_loss_lower_bound(
    audited: AuditedPerturbation, units: int = 20_000, seed: int = 0, confidence: float = 0.95
) -> float:
    """A lower confidence bound on ``ln(P(E | value) / P(E | other))`` for E = {the released
    record equals ``value``}, from ``units`` units holding ``value`` and ``units`` holding
    ``other`` (each unit's own coin: they are distinct units), one-sided Clopper-Pearson
    bounds at ``confidence`` each.  At most the claimed epsilon for an epsilon-LDP
    perturbation; for one with no finite epsilon (an event impossible under ``other``) it
    grows with ``units`` without bound."""
    secret = Secret.for_tests(seed)
    columns = list(audited.value)

    def hits(record: dict, offset: int) -> int:
        frame = pl.DataFrame({c: [record[c]] * units for c in columns}).with_columns(
            (pl.int_range(pl.len(), dtype=pl.Int64) + offset).alias("unit")
        )
        out = audited.disguise(frame, secret)
        same = pl.all_horizontal(pl.col(c) == audited.value[c] for c in columns)
        return int(out.select(same.sum()).item())

    _, upper_other = clopper_pearson(hits(audited.other, units), units, confidence)
    lower_value, _ = clopper_pearson(hits(audited.value, 0), units, confidence)
    return math.log(lower_value / upper_other) if lower_value > 0 else -math.inf


def _rr(
    columns: Sequence[str], epsilon: float, **options: object
) -> Callable[[pl.DataFrame, Secret], pl.DataFrame]:
    def disguise(frame: pl.DataFrame, secret: Secret) -> pl.DataFrame:
        from polars_ppdm.perturb.rr import rr_disguise

        return rr_disguise(frame, list(columns), epsilon=epsilon, secret=secret, key="unit", **options)  # type: ignore[arg-type]

    return disguise


#: The perturbations that claim a local-DP epsilon, and whole-record randomized response,
#: which claims none (its loss is infinite: the XOR of two columns survives).
LDP_PERTURBATIONS: tuple[AuditedPerturbation, ...] = (
    AuditedPerturbation("rr_disguise binary", 1.0, _rr(["smoker"], 1.0), {"smoker": True}, {"smoker": False}),
    AuditedPerturbation(
        "rr_disguise k-ary",
        1.0,
        _rr(["diet"], 1.0, categories=["vegan", "vegetarian", "omnivore", "pescatarian"]),
        {"diet": "vegan"},
        {"diet": "omnivore"},
    ),
    AuditedPerturbation(
        "rr_disguise whole_record",
        None,
        _rr(["a", "b", "c"], 1.0, mode="whole_record"),
        {"a": False, "b": False, "c": False},
        {"a": False, "b": False, "c": True},
    ),
)
