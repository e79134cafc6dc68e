"""Audits for ECDF resampling: privacy Q (mutual information), rank linkage, noise baselines."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
from _helpers import Z

import polars_ppdm as ppdm
from polars_ppdm.audit import information
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.ecdf import smoothed_cdf
from polars_ppdm.kernels.noise import gaussian_noise, scale_for_snr, uniform_noise

N = 20_000


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(12)
    a = rng.normal(size=N)
    return pl.DataFrame({"id": np.arange(N), "a": a, "b": np.exp(a) + rng.normal(0, 0.5, N)})


def relinked_floor(table: pl.DataFrame, bins: int, columns: tuple[str, ...] = ("a", "b")) -> float:
    """Least rank linkage of a rank-relinked release of ``columns``, up to Z SE.

    Every rank survives except among draws on the smoothed ECDF's point mass at the
    minimum (paper 000), which tie: m such draws in a column lose at most m rows.  Per
    column m ~ Binomial(N, F(x_0)), so m <= N F(x_0) + Z sqrt(N F(x_0)) + 1.
    """
    lost = 0.0
    for column in columns:
        mean = N * smoothed_cdf(table[column].to_numpy(), bins)[1][0]
        lost += mean + Z * math.sqrt(mean) + 1
    return 1 - lost / N


def test_mutual_information_of_independent_columns_is_near_zero(table, monkeypatch):
    # The classes the default estimator cuts each column into, read off the code as it
    # runs (a copy of its rule here could drift from it).
    classes = []
    cut = information._quantile_bins

    def counted(values, bins):
        codes = cut(values, bins)
        classes.append(len(np.unique(codes)))
        return codes

    monkeypatch.setattr(information, "_quantile_bins", counted)
    other = np.random.default_rng(99).normal(size=N)
    mi = ppdm.audit.mutual_information(table["a"], other)
    assert len(classes) == 2 and min(classes) >= 2
    # Independent columns: 2 n ln(2) x the plug-in (bits) is a G statistic, ~ chi-square
    # with df = (bx - 1)(by - 1); the bias correction removes its mean df, so what is left
    # has a spread of sqrt(2 df) / (2 n ln 2) bits.
    df_ = (classes[0] - 1) * (classes[1] - 1)
    assert mi < Z * math.sqrt(2 * df_) / (2 * N * math.log(2))


def test_privacy_q_of_a_rank_preserving_release_is_the_estimators_ceiling(table):
    released = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4)
    q = ppdm.audit.privacy_q(table["a"], released["a"], bins=20)
    ceiling = 1 - 2 ** -(math.log2(20) - 19 * 19 / (2 * N * math.log(2)))
    assert q == pytest.approx(ceiling, abs=1e-9)


def test_privacy_q_falls_as_noise_grows(table):
    x = table["a"].to_numpy()
    keys = np.arange(N)
    qs = [
        ppdm.audit.privacy_q(
            x, x + gaussian_noise(bytes(16), 1, keys, scale_for_snr(x.var(), snr, "gaussian"))
        )
        for snr in (16.0, 4.0, 1.0, 0.25)
    ]
    assert all(a > b for a, b in itertools.pairwise(qs))


@pytest.mark.parametrize("dist", ["uniform", "gaussian"])
def test_noise_has_the_variance_the_snr_asks_for(dist):
    draw = uniform_noise if dist == "uniform" else gaussian_noise
    r = draw(bytes(32), 7, np.arange(200_000), scale_for_snr(9.0, 4.0, dist))
    target = 9.0 / 4.0
    # SE of a sample variance: sqrt((mu4 - sigma^4) / n); mu4 = 1.8 s^4 (uniform), 3 s^4 (normal).
    kurtosis = 1.8 if dist == "uniform" else 3.0
    assert abs(r.var() - target) < 5 * target * math.sqrt((kurtosis - 1) / len(r))
    assert abs(r.mean()) < 5 * math.sqrt(target / len(r))


def test_rank_linkage_is_total_for_rank_relinking_and_near_zero_otherwise(table):
    relinked = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4)
    independent = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4, link="none")
    assert ppdm.audit.rank_linkage(table, relinked, ["a", "b"]) >= relinked_floor(table, 50)
    # link='none': a row keeps its rank in a column with probability 1 / N, so the rows
    # linked by one column are ~ Poisson(1) (fixed points of a random permutation),
    # P(10 or more) = 1.1e-7 per column; both columns: the rows that keep both, fewer.
    assert ppdm.audit.rank_linkage(table, independent, ["a", "b"]) < 10 / N


def test_rank_linkage_survives_the_shuffle_through_an_id(table):
    shuffled = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4, shuffle=True)
    assert ppdm.audit.rank_linkage(table, shuffled, ["a", "b"], on="id") >= relinked_floor(table, 50)
    # Without the id the rows are misaligned: the audit is then about the wrong rows; a
    # row is linked only where the shuffle left it in place, ~ Poisson(1) rows: P(10 or
    # more) = 1.1e-7.
    assert ppdm.audit.rank_linkage(table, shuffled, ["a", "b"]) < 10 / N


def test_rank_linkage_guesses_uniformly_among_ties():
    original = pl.DataFrame({"x": [1.0, 1.0, 2.0, 3.0]})
    assert ppdm.audit.rank_linkage(original, original, "x") == pytest.approx((0.5 + 0.5 + 1 + 1) / 4)


@pytest.fixture(scope="module")
def people() -> pl.DataFrame:
    """Agrawal et al.'s synthetic people: continuous salary, integer age (61 values), a
    commission that is 0 for everyone earning 75k or more (a tie of ~57% of the rows)."""
    return ppdm.datasets.agrawal(N, 1, seed=5).with_row_index("id")


def test_ties_in_one_column_do_not_hide_the_others(people):
    # The finding: income alone re-identified every row, income + an integer age 0.0003
    # (rank vectors with ties never matched exactly).  The attacker who knows both
    # columns does at least as well as with income alone.
    for round_integers in (False, True):
        released = ppdm.ecdf_resample(
            people, ["salary", "age"], bins=100, secret=4, round_integers=round_integers
        )
        salary = ppdm.audit.rank_linkage(people, released, "salary")
        assert salary >= relinked_floor(people, 100, ("salary",))
        assert ppdm.audit.rank_linkage(people, released, ["salary", "age"]) >= salary
        report = ppdm.audit.rank_linkage_report(people, released, ["salary", "age"])
        linkage = dict(
            zip(report["attack"] + ":" + report["columns"].list.join("+"), report["linkage"], strict=True)
        )
        assert linkage["column:salary"] == salary
        assert linkage["all:salary+age"] >= salary
        assert report.filter(attack="best")["linkage"].item() == report["linkage"].max()


def test_per_column_linkage_of_an_integer_column_is_its_values_over_n(people):
    # Rank re-linking keeps each row's rank, a point inside the tie of its original age:
    # the candidates are that tie (m rows, 1/m each), so each of the G ages scores 1 / N.
    # Except the m' draws on the ECDF's point mass at the minimum (paper 000), released
    # tied: if m' exceeds the m_0 original minimums, the released tie reaches into the
    # next age's m_1 rows (m' ~ Binomial(N, m_0 / N) < m_0 + m_1 by 17 SD), and these two
    # ages score m' / (m_0 + m_1) + (m_0 + m_1 - m') / m_1, between 1 and 2.
    released = ppdm.ecdf_resample(people, ["salary", "age"], bins=100, secret=4)
    report = ppdm.audit.rank_linkage_report(people, released, ["salary", "age"])
    assert report["attack"].to_list() == ["column", "column", "all", "best"]
    assert report["columns"].to_list()[:3] == [["salary"], ["age"], ["salary", "age"]]
    age = report.row(1, named=True)
    ages = people["age"].n_unique()
    assert (ages - 1) / N <= age["linkage"] <= ages / N
    assert age["unique"] == 0.0  # every age is shared
    assert (report["unique"] <= report["linkage"]).all()
    assert report.filter(attack="best")["linkage"].item() == report["linkage"].max()


def test_a_tie_heavy_column_scores_its_tie_once_and_the_next_column_splits_it(people):
    # A rank-keeping release (here a monotone map): the m rows with commission 0 share one
    # tie, worth 1 together, every other commission is unique: (N - m + 1) / N.  With age
    # too, the tie splits into one tie per age among them: (N - m + ages) / N.
    released = people.with_columns(pl.col("commission") * 2 + 1, pl.col("age") - 20)
    zero = people.filter(pl.col("commission") == 0)
    m = zero.height
    assert 0.3 * N < m < 0.8 * N
    report = ppdm.audit.rank_linkage_report(people, released, ["commission", "age"])
    commission, _, both, best = report.iter_rows(named=True)
    assert commission["linkage"] == pytest.approx((N - m + 1) / N, rel=1e-12)
    assert commission["unique"] == pytest.approx((N - m) / N, rel=1e-12)
    assert both["linkage"] == pytest.approx((N - m + zero["age"].n_unique()) / N, rel=1e-12)
    assert best["columns"] == ["commission", "age"] and best["linkage"] == both["linkage"]
    # The same through ECDF resampling: every kept rank keeps the true row a candidate in
    # each column, so adding a column never lowers the linkage.
    resampled = ppdm.ecdf_resample(people, ["commission", "age"], bins=100, secret=4)
    report = ppdm.audit.rank_linkage_report(people, resampled, ["commission", "age"])
    assert report.filter(attack="all")["linkage"].item() >= report.filter(attack="column")["linkage"].max()


def test_the_attacker_leaves_out_a_column_whose_ranks_were_redrawn(people):
    released = ppdm.ecdf_resample(people, "salary", bins=100, secret=4).with_columns(
        age=pl.col("age").shuffle(seed=3)
    )
    assert ppdm.audit.rank_linkage(people, released, ["salary", "age"]) >= relinked_floor(
        people, 100, ("salary",)
    )
    report = ppdm.audit.rank_linkage_report(people, released, ["salary", "age"])
    assert report.filter(attack="all")["linkage"].item() < 0.1  # the shuffled age loses the true row
    assert report.filter(attack="best")["columns"].item().to_list() == ["salary"]


def test_an_independent_shuffle_scores_one_in_n(people):
    # Each column shuffled on its own: a row's released value falls in its own tie of m
    # rows with probability m / N and then scores 1 / m, so the mean is 1 / N whatever
    # the ties, with variance sum_i (1 / (N m_i) - 1 / N^2) / N^2 ~ G / N^3 for G values
    # (the shuffle's dependence between rows is O(1/N) smaller).  Over several columns the
    # mean is at most 1 / N and a credit is at most 1, so the SE is at most 1 / N.
    columns = ["age", "elevel", "car", "zipcode", "hyears"]
    rng = np.random.default_rng(8)
    released = people.with_columns(pl.col(c).gather(rng.permutation(N)) for c in columns)
    report = ppdm.audit.rank_linkage_report(people, released, columns)
    for row in report.filter(attack="column").iter_rows(named=True):
        groups = people[row["columns"][0]].n_unique()
        assert abs(row["linkage"] - 1 / N) < Z * math.sqrt(groups / N**3), row
    assert report["linkage"].max() < (1 + Z) / N


def brute_force_linkage(original: pl.DataFrame, released: pl.DataFrame, columns: list[str]) -> float:
    """The attack of the docs, row by row: candidates whose rank ranges overlap in every column."""

    def ranges(values: list) -> list[tuple[int, int]]:
        key = [-math.inf if v is None else v for v in values]
        return [(1 + sum(o < v for o in key), sum(o <= v for o in key)) for v in key]

    orig = {c: ranges(original[c].to_list()) for c in columns}
    rel = {c: ranges(released[c].to_list()) for c in columns}
    credit = 0.0
    for i in range(original.height):
        candidates = [
            o
            for o in range(original.height)
            if all(orig[c][o][0] <= rel[c][i][1] and rel[c][i][0] <= orig[c][o][1] for c in columns)
        ]
        credit += 1 / len(candidates) if i in candidates else 0.0
    return credit / original.height


def test_rank_linkage_report_is_the_attack_it_documents(monkeypatch):
    # Small tables with ties, nulls and coarsened releases, against the row-by-row attack;
    # a tiny chunk makes the joint count walk in many pieces.
    from polars_ppdm.audit import linkage

    monkeypatch.setattr(linkage, "_CHUNK", 7)
    rng = np.random.default_rng(21)

    def column(n: int) -> list:
        values = [rng.normal(size=n), rng.integers(0, 4, n), np.round(rng.normal(size=n), 1)][rng.integers(3)]
        out: list = values.astype(float).tolist()
        for i in rng.choice(n, size=n // 4 if rng.random() < 0.3 else 0, replace=False):
            out[i] = None
        return out

    for _ in range(120):
        n, k = int(rng.integers(1, 30)), int(rng.integers(1, 4))
        cols = [f"c{j}" for j in range(k)]
        original = pl.DataFrame({c: column(n) for c in cols}, schema=dict.fromkeys(cols, pl.Float64))
        released = [
            original.with_columns(pl.all() * 3),
            pl.DataFrame({c: column(n) for c in cols}, schema=dict.fromkeys(cols, pl.Float64)),
            original.with_columns((pl.col(c) + pl.Series(rng.normal(0, 0.5, n))).round(0) for c in cols),
        ][rng.integers(3)]
        report = ppdm.audit.rank_linkage_report(original, released, cols)
        for row in report.iter_rows(named=True):
            assert row["linkage"] == pytest.approx(
                brute_force_linkage(original, released, row["columns"]), abs=1e-12
            )


def test_compare_to_additive_noise_reports_every_method_and_snr(table):
    released = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4)
    out = ppdm.audit.compare_to_additive_noise(table, released, ["a", "b"], snr=[1.0, 10.0], secret=3)
    assert out.columns == ["method", "snr", "rank_linkage", "privacy_q_a", "privacy_q_b"]
    assert out["method"].to_list() == ["released"] + ["uniform noise", "gaussian noise"] * 2
    assert out["rank_linkage"][0] >= relinked_floor(table, 50)
    noisy = out.filter(pl.col("snr").is_not_null())
    assert (noisy["privacy_q_a"] < out["privacy_q_a"][0]).all()


@pytest.mark.parametrize("func", [ppdm.audit.mutual_information, ppdm.audit.privacy_q])
@pytest.mark.parametrize(
    "x",
    [
        np.array([1j, 2j, 3j]),
        ["a", "b", "c"],
        pl.Series(["a", "b", "c"]),
        None,
        [None, 1.0, 2.0],
        [[1, 2], [3]],
        [10**400, 1, 2],
    ],
    ids=["complex", "strings", "string series", "None", "a null", "ragged", "an int beyond floats"],
)
def test_values_that_are_not_real_numbers_are_refused_by_name(func, x):
    # Complex input was cast with NumPy's ComplexWarning (imaginary part dropped), strings parsed.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            InvalidParameterError, match=f"The 'x' parameter of {func.__name__} must be a 1-D"
        ):
            func(x, np.array([1.0, 2.0, 3.0]), bins=2)


def test_more_classes_than_rows_cut_no_finer_and_stay_bounded():
    # bins = 1e11 built 1e11 quantile edges (745 GiB) and an n-by-n table at bins = n;
    # from bins = n on, every distinct value has its own class already.
    rng = np.random.default_rng(5)
    x = rng.normal(size=300)
    y = np.round(x + rng.normal(size=300), 1)  # ties: fewer classes than rows
    at_n = ppdm.audit.mutual_information(x, y, bins=300)
    assert ppdm.audit.mutual_information(x, y, bins=10**11) == at_n
    assert ppdm.audit.mutual_information(x, y, bins=3000) == at_n


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: ppdm.audit.mutual_information([1.0, 2.0], [1.0, 2.0, 3.0]), "same length"),
        (lambda t: ppdm.audit.mutual_information([1.0, float("nan")], [1.0, 2.0]), "finite"),
        (lambda t: ppdm.audit.privacy_q([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], bins=1), "'bins' parameter"),
        (lambda t: ppdm.audit.rank_linkage(t, t.head(10), "a"), "same height"),
        (lambda t: ppdm.audit.rank_linkage(t, t, "zz"), "'columns' parameter"),
        (lambda t: ppdm.audit.rank_linkage(t, t.with_columns(id=pl.lit(1)), "a", on="id"), "no repeats"),
        (
            lambda t: ppdm.audit.rank_linkage_report(t, t.with_columns(pl.col("id") + 1), "a", on="id"),
            "holds released ids that are not in original",
        ),
        (lambda t: ppdm.audit.compare_to_additive_noise(t, t, "a", snr=0), "'snr' parameter"),
        (
            lambda t: ppdm.audit.compare_to_additive_noise(t, t.head(10), "a"),
            "aligned row by row \\(the same number of rows",
        ),
        (
            lambda t: ppdm.audit.compare_to_additive_noise(
                t.with_columns(a=pl.lit(None, pl.Float64)), t, "a"
            ),
            "original columns \\['a'\\] hold nulls",
        ),
        (
            lambda t: ppdm.audit.pca_noise_stripping(t.drop("a"), t, list(t.columns), scale=1.0),
            "'columns'",
        ),
        (lambda t: ppdm.audit.pca_noise_stripping(t, t, list(t.columns), scale=0), "'scale'"),
    ],
)
def test_bad_audit_input(table, call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call(table)


def test_noise_stripping_refuses_a_scale_whose_noise_variance_overflows():
    """scale=1e308 raised a raw OverflowError (fuzz finding audit-pca-stripping-overflow)."""
    df = pl.DataFrame({"x": [0.0, 1.0, 2.0]})
    with pytest.raises(
        InvalidParameterError, match=r"'scale' parameter of pca_noise_stripping .* finite floats"
    ):
        ppdm.audit.pca_noise_stripping(df, df, ["x"], scale=1e308)


def test_noise_stripping_of_a_release_equal_to_the_original_is_nan_and_a_leak_warning():
    """noise_rms 0 raised ZeroDivisionError (fuzz finding chain-noise-stripping-zero-noise):
    values of 1e20 absorb noise of scale 0.5, so the release is the original."""
    df = pl.DataFrame({"x": [1e20, 2e20, 3e20], "y": [1.0, 3.0, 2.0]})
    noisy = ppdm.add_noise(df, ["x", "y"], scale=0.5, secret=1)
    assert noisy["x"].equals(df["x"]) and not noisy["y"].equals(df["y"])
    with pytest.warns(ppdm.PrivacyLeakWarning, match="released column 'x' equals the original"):
        report = ppdm.audit.pca_noise_stripping(df, noisy, ["x", "y"], scale=0.5)
    assert report["noise_rms"][0] == 0 and math.isnan(report["stripped"][0])
    assert report["noise_rms"][1] > 0 and math.isfinite(report["stripped"][1])


def test_noise_stripping_rms_of_large_values_without_overflow():
    """Differences of 1.2e154 square to 1.44e308: the mean of four of them overflowed
    ('overflow encountered in reduce'); the RMS is taken on scaled values."""
    df = pl.DataFrame({"x": [0.0, 1e150, 2e150, 3e150], "y": [1.0, 0.0, 2.0, 5.0]})
    noisy = df.with_columns(pl.col("x") + 1.2e154, pl.col("y") - 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ppdm.EstimateWarning)  # the declared noise exceeds y's variance
        report = ppdm.audit.pca_noise_stripping(df, noisy, ["x", "y"], scale=1.0)
    assert report["noise_rms"].to_list() == pytest.approx([1.2e154, 1.0], rel=1e-12)


@pytest.mark.parametrize("snr", [5e-324, [1.0, 1e-310]])
def test_compare_refuses_an_snr_whose_noise_variance_overflows(table, snr):
    """snr=5e-324 gave NumPy's 'overflow encountered in scalar divide' (fuzz finding
    audit-compare-snr-overflow)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            InvalidParameterError, match=r"'snr' parameter of compare_to_additive_noise .* column 'a'"
        ):
            ppdm.audit.compare_to_additive_noise(table, table, "a", snr=snr, secret=1)


def test_compare_refuses_a_column_whose_variance_overflows():
    df = pl.DataFrame({"x": [-1e307, 1e307, 0.0, 5.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidParameterError, match="variance of column 'x' is not a finite float"):
            ppdm.audit.compare_to_additive_noise(df, df, "x", snr=1.0, secret=1)
