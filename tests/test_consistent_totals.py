"""consistent_totals: least-squares consistency across levels of DP releases (issue 18)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.consistency import consistent_hierarchy


def generalised_least_squares(values, variances, parents):
    """The textbook estimate: x = (A'WA)^-1 A'Wy over the finest cells, every node A x."""
    n = len(values[0])
    rows, leaf_parent = [np.eye(n)], np.arange(n)
    for parent, level in zip(parents, values[1:], strict=True):
        leaf_parent = parent[leaf_parent]
        a = np.zeros((len(level), n))
        a[leaf_parent, np.arange(n)] = 1
        rows.append(a)
    a = np.vstack(rows)
    w = 1 / np.concatenate(variances)
    cov = np.linalg.inv(a.T @ (w[:, None] * a))
    x = cov @ a.T @ (w * np.concatenate(values))
    return a @ x, np.einsum("ij,jk,ik->i", a, cov, a)


@pytest.mark.parametrize("seed", range(5))
def test_the_two_passes_are_the_generalised_least_squares_estimate(seed):
    rng = np.random.default_rng(seed)
    sizes = [int(rng.integers(20, 60)), int(rng.integers(5, 15)), int(rng.integers(2, 5)), 1]
    parents = []
    for fine, coarse in itertools.pairwise(sizes):
        parent = np.concatenate(
            [np.arange(coarse), rng.integers(0, coarse, fine - coarse)]
        )  # no childless node
        parents.append(rng.permutation(parent))
    values = [rng.normal(50, 20, s) for s in sizes]
    variances = [rng.uniform(0.2, 30, s) for s in sizes]
    est, var = consistent_hierarchy(values, variances, parents)
    expected, expected_var = generalised_least_squares(values, variances, parents)
    np.testing.assert_allclose(np.concatenate(est), expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.concatenate(var), expected_var, rtol=1e-9, atol=1e-12)
    for parent, fine, coarse in zip(
        parents, est, est[1:], strict=False
    ):  # every parent the sum of its children
        np.testing.assert_allclose(
            np.bincount(parent, weights=fine, minlength=len(coarse)), coarse, rtol=1e-12
        )


def test_an_exact_level_is_kept_and_shared_out():
    est, var = consistent_hierarchy(
        [np.array([10.0, 20.0]), np.array([36.0])],
        [np.array([1.0, 3.0]), np.array([0.0])],
        [np.array([0, 0])],
    )
    assert est[1].tolist() == [36.0] and var[1].tolist() == [0.0]
    assert est[0].tolist() == [11.5, 24.5]  # the 6 shared 1 : 3, as the variances


SECRETS = [ppdm.Secret.for_tests(i) for i in range(300)]


def visits(seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = 4000
    return pl.DataFrame(
        {
            "person": np.arange(n),
            "region": rng.choice(["n", "s", "e", "w"], n),
            "day": rng.integers(1, 31, n),
        }
    )


REGIONS = pl.DataFrame({"region": ["n", "s", "e", "w"]})
CELLS = REGIONS.join(pl.DataFrame({"day": np.arange(1, 31)}), how="cross", maintain_order="left_right")


def two_levels(frame, secret):
    kwargs = {"epsilon": 0.5, "privacy_unit": "person", "secret": secret, "intervals": True}
    fine = ppdm.dp_group_by(frame, ["region", "day"], dp.count(), public_groups=CELLS, **kwargs)
    coarse = ppdm.dp_group_by(frame, "region", dp.count(), public_groups=REGIONS, **kwargs)
    return fine, coarse


@pytest.fixture(scope="module")
def repeated():
    frame = visits()
    true_fine = CELLS.join(
        frame.group_by("region", "day").len(), on=["region", "day"], how="left", maintain_order="left"
    )["len"].to_numpy()
    true_coarse = REGIONS.join(
        frame.group_by("region").len(), on="region", how="left", maintain_order="left"
    )["len"].to_numpy()
    raw, made = [], []
    for secret in SECRETS:
        fine, coarse = two_levels(frame, secret)
        raw.append((fine, coarse))
        made.append(ppdm.consistent_totals([fine, coarse], "count", by=["region", "day"]))
    return true_fine, true_coarse, raw, made


def test_the_levels_agree_and_keep_their_rows(repeated):
    _, _, raw, made = repeated
    for (fine, coarse), (fine_made, coarse_made) in zip(raw[:5], made[:5], strict=True):
        assert fine_made.select("region", "day").equals(fine.select("region", "day"))
        assert coarse_made.columns == coarse.columns and fine_made.height == fine.height
        sums = fine_made.group_by("region").agg(pl.col("count").sum())
        joined = coarse_made.join(sums, on="region", suffix="_cells")
        np.testing.assert_allclose(joined["count"], joined["count_cells"], rtol=1e-12)


def test_unbiased_and_more_accurate_totals_over_300_secrets(repeated):
    true_fine, true_coarse, raw, made = repeated
    coarse_raw = np.array([c["count"].to_numpy() for _, c in raw], dtype=float)
    coarse_made = np.array([c["count"].to_numpy() for _, c in made])
    fine_made = np.array([f["count"].to_numpy() for f, _ in made])
    for estimates, truth in ((coarse_made, true_coarse), (fine_made, true_fine)):
        error = estimates - truth
        standard_error = error.std(axis=0, ddof=1) / np.sqrt(len(SECRETS))
        assert (np.abs(error.mean(axis=0)) <= 5 * standard_error).all()
    # A total told by 30 noisy cells and by its own release: its variance is 1 / (1/30 + 1) of
    # one release's (the same scale for both levels), about 0.97; shown as a ratio of RMS errors.
    rms_raw = np.sqrt(((coarse_raw - true_coarse) ** 2).mean())
    rms_made = np.sqrt(((coarse_made - true_coarse) ** 2).mean())
    rms_summed = np.sqrt(
        (
            (
                np.array(
                    [
                        f.group_by("region", maintain_order=True).agg(pl.col("count").sum())["count"]
                        for f, _ in raw
                    ]
                )
                - true_coarse
            )
            ** 2
        ).mean()
    )
    assert rms_made < rms_raw < rms_summed


def test_the_new_sd_is_the_spread_and_the_intervals_cover(repeated):
    true_fine, true_coarse, _, made = repeated
    for level, truth in ((0, true_fine), (1, true_coarse)):
        estimates = np.array([m[level]["count"].to_numpy() for m in made])
        sd = made[0][level]["count_sd"].to_numpy()
        spread = (estimates - truth).std(axis=0, ddof=1).mean()
        # The SD of an SD estimate from 300 draws is about sd / sqrt(2 x 300); 5 of those.
        assert abs(spread - sd.mean()) <= 5 * sd.mean() / np.sqrt(2 * len(SECRETS)) + 0.05 * sd.mean()
        low = np.array([m[level]["count_ci_low"].to_numpy() for m in made])
        high = np.array([m[level]["count_ci_high"].to_numpy() for m in made])
        coverage = ((low <= truth) & (truth <= high)).mean()
        # Between a Laplace variable's cover of +-1.96 SD (93.7%) and a normal one's (95%),
        # give or take 5 binomial standard errors.
        cells = estimates.size
        slack = 5 * np.sqrt(0.94 * 0.06 / cells)
        assert 0.937 - slack <= coverage <= 0.95 + slack, (level, coverage)


def test_sd_given_per_level_and_lazy_frames():
    fine = pl.LazyFrame({"g": ["a", "a", "b"], "h": [1, 2, 1], "x": [10.0, 20.0, 5.0]})
    coarse = pl.LazyFrame({"g": ["a", "b"], "x": [33.0, 5.0]})
    total = pl.DataFrame({"x": [40.0]})
    out = ppdm.consistent_totals([fine, coarse, total], "x", by=["g", "h"], sd=[1.0, 1.0, 2.0])
    assert [round(sum(o["x"]), 9) for o in out] == [round(out[2]["x"][0], 9)] * 3
    assert out[0].columns == ["g", "h", "x"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda f, c: ([f], {}), "'levels' parameter of consistent_totals must be a list of at least two"),
        (lambda f, c: ([f, c.drop("count_sd")], {}), "'sd' parameter .*levels \\[1\\] lack it"),
        (lambda f, c: ([f, c], {"sd": [1.0]}), "list of 2 noise standard deviations"),
        (lambda f, c: ([f, c], {"sd": [1.0, -1.0]}), "finite standard deviations >= 0"),
        (
            lambda f, c: ([f, c.filter(pl.col("region") != "s")], {}),
            "have no parent in level 1, e.g. \\{'region': 's'\\}",
        ),
        (
            lambda f, c: ([f.filter(pl.col("region") != "s"), c], {}),
            "no group below them in level 0, e.g. \\{'region': 's'\\}",
        ),
        (
            lambda f, c: ([c, f], {}),
            "'by' parameter of consistent_totals must be the group columns of the finest level",
        ),
        (lambda f, c: ([f, f], {}), "level 1 must group by fewer of"),
        (lambda f, c: ([f, pl.concat([c, c])], {}), "level 1 lists a group twice"),
        (lambda f, c: ([f, c.with_columns(count=None)], {}), "'value' parameter|holds nulls"),
        (
            lambda f, c: ([f, c.with_columns(pl.col("count").cast(pl.Float64) * np.nan)], {}),
            "holds nulls, NaN",
        ),
        (
            lambda f, c: ([f, c.with_columns(count=pl.lit("x"))], {}),
            "'value' parameter of consistent_totals must be a numeric column",
        ),
    ],
)
def test_bad_input(change, match):
    fine, coarse = two_levels(visits(), SECRETS[0])
    levels, kwargs = change(fine, coarse)
    with pytest.raises(InvalidParameterError, match=match):
        ppdm.consistent_totals(levels, "count", by=["region", "day"], **kwargs)
