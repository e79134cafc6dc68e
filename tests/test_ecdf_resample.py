"""ECDF resampling with rank re-linking (paper 000): the worked example, the distribution
drawn from, rank preservation, engines, and bad input."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import Z
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.ecdf import (
    Workspace,
    inverse_cdf,
    order_keys,
    rank_order,
    relink,
    shuffle_order,
    smoothed_cdf,
    sorted_sample,
    tie_words,
)
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.spacings import sorted_uniforms
from polars_ppdm.perturb.ecdf import column_key, ecdf_stream

SECRET = ppdm.resolve_secret(2012).key


def test_paper_worked_example_with_the_generated_values_injected():
    x1, x2, label = np.array([2.0, 6, 3, 9, 7]), np.array([4.0, 7, 1, 6, 8]), np.array([0, 1, 1, 0, 0])
    y1, y2 = np.array([1.0, 2, 8, 7, 5]), np.array([3.0, 4, 6, 9, 5])
    col1, drawn1 = relink(rank_order(x1, SECRET, 1, np.arange(5)), y1)
    col2, _ = relink(rank_order(x2, SECRET, 2, np.arange(5)), y2)
    published = np.argsort(drawn1, kind="stable")  # the paper lists rows in Y1's draw order
    assert col1[published].tolist() == [1, 2, 8, 7, 5]
    assert col2[published].tolist() == [4, 3, 5, 9, 6]
    assert label[published].tolist() == [0, 1, 0, 0, 1]


def test_frame_function_applies_the_kernels_column_by_column():
    df = pl.DataFrame({"x1": [2, 6, 3, 9, 7], "x2": [4.0, 7, 1, 6, 8], "label": [0, 1, 1, 0, 0]})
    out = ppdm.ecdf_resample(df, ["x1", "x2"], bins=3, secret=2012, shuffle=True)
    # The rows in the draw order of x1: slot s holds the row of rank draws[s].
    # Every draw of a column is under its own key, of its values (column_key).
    keys = {c: column_key(SECRET, c, 3, df[c].cast(pl.Float64).to_numpy()) for c in ("x1", "x2")}
    draws = shuffle_order(keys["x1"], stream_id(ecdf_stream("x1") + "/shuffle"), 5)
    for column in ("x1", "x2"):
        values = df[column].cast(pl.Float64).to_numpy()
        cuts, cdf = smoothed_cdf(values, 3)
        ranked = rank_order(values, keys[column], stream_id(ecdf_stream(column) + "/ties"), np.arange(5))
        released = np.empty(5)
        released[ranked] = sorted_sample(keys[column], stream_id(ecdf_stream(column)), 5, cuts, cdf)
        if column == "x1":
            rows = ranked[draws]
        assert out[column].to_list() == released[rows].tolist()
    assert out["label"].to_list() == df["label"].to_numpy()[rows].tolist()


def _ks_statistic(sample: np.ndarray, cuts: np.ndarray, cdf: np.ndarray) -> float:
    """sup |F_n - F| for the smoothed ECDF, whose only jump is the point mass at cuts[0]."""
    y = np.sort(sample)
    n = len(y)
    at = np.interp(y, cuts, cdf)  # F(y); equals cdf[0] at the minimum
    before = np.where(y == cuts[0], 0.0, at)  # F(y-): 0 just below the point mass
    i = np.arange(1, n + 1)
    return float(max((i / n - at).max(), (before - (i - 1) / n).max()))


DISTRIBUTIONS = {
    "normal": lambda rng, n: rng.normal(50, 10, n),
    "lognormal (skewed)": lambda rng, n: rng.lognormal(0, 1, n),
    "exponential (skewed)": lambda rng, n: rng.exponential(3, n),
    "poisson (discrete)": lambda rng, n: rng.poisson(4, n).astype(float),
    "bimodal": lambda rng, n: np.where(rng.random(n) < 0.3, rng.normal(0, 1, n), rng.normal(6, 1, n)),
}


@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_released_column_follows_the_smoothed_ecdf(name):
    """Kolmogorov-Smirnov against the ECDF drawn from.  The Dvoretzky-Kiefer-Wolfowitz
    inequality (Massart's constant, any F): P(sup |F_n - F| > t) <= 2 exp(-2 n t^2); t is
    set so that this is the two-sided normal tail of Z standard errors (5.7e-7)."""
    n, bins = 20_000, 50
    values = DISTRIBUTIONS[name](np.random.default_rng(7), n)
    out = ppdm.ecdf_resample(pl.DataFrame({"x": values}), "x", bins=bins, secret=11)
    cuts, cdf = smoothed_cdf(values, bins)
    alpha = math.erfc(Z / math.sqrt(2))
    assert _ks_statistic(out["x"].to_numpy(), cuts, cdf) <= math.sqrt(math.log(2 / alpha) / (2 * n))


def test_continuous_values_are_all_new_except_draws_on_the_point_mass():
    """Only the minimum can come back (the paper's point mass); any other match is a bug."""
    n = 50_000
    values = np.random.default_rng(3).gamma(2.0, 2.0, n)
    out = ppdm.ecdf_resample(pl.DataFrame({"x": values}), "x", bins=100, secret=5)["x"].to_numpy()
    repeated = np.isin(out, values)
    assert (out[repeated] == values.min()).all()
    # Draws on the point mass: Binomial(n, F(x_0)) with F(x_0) = 1 / (smoothed total).
    _, cdf = smoothed_cdf(values, 100)
    mean = n * cdf[0]
    assert abs(repeated.sum() - mean) <= 5 * np.sqrt(mean) + 1


def test_rank_link_keeps_every_rank_and_none_does_not():
    rng = np.random.default_rng(1)
    df = pl.DataFrame(
        {"a": rng.normal(size=5000), "b": rng.exponential(size=5000), "y": rng.integers(0, 2, 5000)}
    )
    out = ppdm.ecdf_resample(df, ["a", "b"], bins=40, secret=9)
    for column in ("a", "b"):
        order = np.argsort(df[column].to_numpy())
        assert (np.diff(out[column].to_numpy()[order]) >= 0).all()  # monotone in the original
        spearman = np.corrcoef(df[column].rank().to_numpy(), out[column].rank().to_numpy())[0, 1]
        assert spearman > 0.99999
    independent = ppdm.ecdf_resample(df, ["a", "b"], bins=40, secret=9, link="none")
    assert abs(np.corrcoef(df["a"].to_numpy(), independent["a"].to_numpy())[0, 1]) < 5 / np.sqrt(5000)
    assert independent["y"].equals(df["y"])


def test_ties_are_broken_by_the_keyed_randomness_not_by_position():
    df = pl.DataFrame({"id": [10, 11, 12, 13, 14, 15], "x": [1.0, 1.0, 1.0, 2.0, 5.0, 5.0]})
    out = ppdm.ecdf_resample(df, "x", bins=4, secret=3, key="id")
    reversed_in = ppdm.ecdf_resample(df.reverse(), "x", bins=4, secret=3, key="id")
    # The same row (by key) gets the same value whatever the input order.
    assert_frame_equal(out.sort("id"), reversed_in.sort("id"))
    released = out["x"].to_numpy()
    assert released[:3].max() <= released[3] <= released[4:].min()


def test_nulls_stay_null_and_are_left_out_of_the_ecdf():
    df = pl.DataFrame({"x": [3.0, None, 1.0, 8.0, None, 4.0], "k": list("abcdef")})
    out = ppdm.ecdf_resample(df, "x", bins=3, secret=1)
    assert out["x"].is_null().to_list() == df["x"].is_null().to_list()
    cuts, cdf = smoothed_cdf(np.array([3.0, 1.0, 8.0, 4.0]), 3)
    own = column_key(ppdm.resolve_secret(1).key, "x", 3, np.array([3.0, 1.0, 8.0, 4.0]))
    sample = sorted_sample(own, stream_id("ecdf_resample/x"), 4, cuts, cdf)
    assert sorted(out["x"].drop_nulls().to_list()) == sample.tolist()
    assert out["k"].equals(df["k"])


@pytest.mark.parametrize("link", ["rank", "none"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_eager_lazy_and_streaming_agree_bit_for_bit(link, shuffle):
    rng = np.random.default_rng(4)
    n = 30_000
    df = pl.DataFrame(
        {
            "id": [f"person-{i}" for i in rng.permutation(n)],
            "income": rng.lognormal(10, 1, n),
            "age": rng.integers(18, 90, n),
            "label": rng.integers(0, 3, n),
        }
    ).with_columns(pl.when(pl.int_range(pl.len()) % 97 == 0).then(None).otherwise(pl.col("age")).alias("age"))
    kwargs = dict(bins={"income": 60, "age": 20}, secret="0" * 31 + "1", key="id", link=link, shuffle=shuffle)
    eager = ppdm.ecdf_resample(df, ["income", "age"], **kwargs)
    lazy = df.lazy().ppdm.ecdf_resample(["income", "age"], **kwargs)
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(engine="in-memory"), eager)
    assert_frame_equal(lazy.collect(engine="streaming"), eager)
    assert_frame_equal(df.ppdm.ecdf_resample(["income", "age"], **kwargs), eager)
    assert eager.schema == {"id": pl.String, "income": pl.Float64, "age": pl.Float64, "label": pl.Int64}


def test_duckdb_macro_matches_polars_bit_for_bit():
    rng = np.random.default_rng(5)
    n = 5_000
    df = pl.DataFrame(
        {
            "id": rng.permutation(n) * 3 - 7_000,
            "email": [f"p{i}@example.org" for i in range(n)],
            "income": rng.lognormal(10, 1, n),
            "age": rng.integers(18, 90, n),  # many ties: broken by the keyed words
        }
    ).with_columns(pl.when(pl.col("id") % 13 == 0).then(None).otherwise(pl.col("age")).alias("age"))
    con = ppdm.duckdb.register(duckdb.connect())
    seed = "ab" * 16
    con.execute(f"CREATE TABLE t AS SELECT *, ppdm_key(email, '{seed}') AS email_key FROM df")
    con.execute(f"CREATE TEMP TABLE step1 AS FROM ppdm_ecdf_resample('t', 'income', 'id', 60, '{seed}')")
    sql = con.sql(f"FROM ppdm_ecdf_resample('step1', 'age', 'id', 20, '{seed}')").pl()
    # The table's columns in their order and its rows in theirs, as Polars keeps them (the
    # resampled column came last and the rows in rank order: a positional INSERT of the
    # result put one column's values into another).
    assert sql.columns == ["id", "email", "income", "age", "email_key"]
    polars = ppdm.ecdf_resample(df, ["income", "age"], bins={"income": 60, "age": 20}, secret=seed, key="id")
    assert_frame_equal(sql.drop("email_key"), polars)
    # A string key: DuckDB hashes it with ppdm_key, Polars does the same internally.
    by_email = con.sql(f"FROM ppdm_ecdf_resample('t', 'age', 'email_key', 20, '{seed}')").pl()
    expected = ppdm.ecdf_resample(df, "age", bins=20, secret=seed, key="email")
    assert_frame_equal(by_email.drop("email_key"), expected)


@pytest.mark.parametrize(
    ("column", "bins", "message"),
    [
        ("nope", 10, r"column 'nope' \(the 'col' argument\) not found in table 't'"),
        ("c", 10, "column c is constant \\(all its non-null values are equal\\)"),
        ("nan", 10, "NaN or infinite"),
        ("s", 10, "must be numeric, got VARCHAR"),
        ("x", 1, "bins must be an integer >= 2, got 1"),
        ("one", 10, "at least 2 non-null values to build an ECDF, and has fewer"),
    ],
)
def test_duckdb_macro_bad_input(column, bins, message):
    con = ppdm.duckdb.register(duckdb.connect())
    con.execute(
        "CREATE TABLE t AS SELECT i AS id, i * 1.0 AS x, 1.0 AS c, 'a' AS s, "
        "CASE WHEN i = 3 THEN 'nan'::DOUBLE ELSE i END AS nan, CASE WHEN i = 0 THEN 1 END AS one FROM range(10) r(i)"
    )
    with pytest.raises(duckdb.Error, match=message):
        con.sql(f"FROM ppdm_ecdf_resample('t', '{column}', 'id', {bins}, '1')").fetchall()


@pytest.mark.parametrize("link", ["rank", "none"])
def test_shuffle_publishes_the_unshuffled_release_in_the_keyed_row_order(link):
    """shuffle=True is the release without it, its rows permuted: the first column's
    non-null rows in rank order (draw order for link='none') taken in the keyed order of
    its shuffle stream, then its null rows in input order; every column, resampled or not,
    moves with its row."""
    rng = np.random.default_rng(5)
    n = 3000
    x1 = rng.normal(size=n)
    x2 = rng.gamma(2.0, size=n)
    df = pl.DataFrame(
        {
            "label": np.arange(n),
            "x1": np.where(rng.random(n) < 0.1, np.nan, x1),
            "x2": np.where(rng.random(n) < 0.2, np.nan, x2),
        }
    ).fill_nan(None)
    kwargs = dict(bins=20, secret=2012, link=link)
    out = ppdm.ecdf_resample(df, ["x1", "x2"], shuffle=True, **kwargs)
    kept = ppdm.ecdf_resample(df, ["x1", "x2"], **kwargs)
    valid = df["x1"].is_not_null().to_numpy()
    m = int(valid.sum())
    if link == "rank":
        values = df["x1"].drop_nulls().to_numpy()
        own = column_key(SECRET, "x1", 20, values)
        ranked = rank_order(values, own, stream_id(ecdf_stream("x1") + "/ties"), np.flatnonzero(valid))
        ranked = ranked[shuffle_order(own, stream_id(ecdf_stream("x1") + "/shuffle"), m)]
    else:
        ranked = np.arange(m)
    rows = np.concatenate((np.flatnonzero(valid)[ranked], np.flatnonzero(~valid)))
    assert_frame_equal(out, kept[rows])


def test_shuffle_moves_whole_rows():
    df = pl.DataFrame({"x": np.random.default_rng(2).normal(size=200), "row": range(200)})
    out = ppdm.ecdf_resample(df, "x", bins=10, secret=8, shuffle=True)
    assert sorted(out["row"].to_list()) == list(range(200))
    assert out["row"].to_list() != list(range(200))
    kept = ppdm.ecdf_resample(df, "x", bins=10, secret=8)
    assert_frame_equal(out.sort("row"), kept)


@pytest.mark.parametrize(
    ("frame", "kwargs", "message"),
    [
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "nope"}, "'columns' parameter of ecdf_resample"),
        (pl.DataFrame({"x": ["a", "b"]}), {"columns": "x"}, "must be numeric"),
        (pl.DataFrame({"x": [True, False]}), {"columns": "x"}, "must be numeric"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "x", "bins": 1}, "'bins' parameter"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "x", "bins": 2.5}, "'bins' parameter"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "x", "bins": {"y": 3}}, "'bins' parameter"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "x", "bins": 10**9}, r"in \[2, 10,000,000\]"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "x", "link": "sorted"}, "'link' parameter"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "x", "shuffle": 1}, "'shuffle' parameter"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": "x", "key": "id"}, "'key' parameter"),
        (pl.DataFrame({"x": [1.0, 2.0]}), {"columns": []}, "'columns' parameter"),
    ],
)
def test_bad_parameters_are_refused_when_the_plan_is_built(frame, kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.ecdf_resample(frame.lazy(), **kwargs)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1.0, float("nan"), 3.0], "NaN or infinite"),
        ([1.0, float("inf"), 3.0], "NaN or infinite"),
        ([4.0, 4.0, 4.0], "is constant"),
        ([None, None, 2.0], "at least 2 non-null values"),
        ([5.0], "at least 2 non-null values"),
    ],
)
def test_bad_data_is_a_clear_error(values, message):
    df = pl.DataFrame({"x": values}, schema={"x": pl.Float64})
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.ecdf_resample(df, "x", bins=3, secret=1)


def test_integer_sort_keys_order_floats_like_numpy():
    rng = np.random.default_rng(9)
    values = np.concatenate(
        [rng.normal(0, 1e6, 5000), rng.normal(0, 1e-300, 100), [0.0, -0.0, 1e308, -1e308, 5e-324, -5e-324]]
    )
    keys = order_keys(values)
    assert (np.sort(values) == values[np.argsort(keys, kind="stable")]).all()
    assert order_keys(np.array([-0.0]))[0] == order_keys(np.array([0.0]))[0]  # equal values tie


def test_round_integers_keeps_integer_dtypes_and_ranks():
    rng = np.random.default_rng(10)
    df = pl.DataFrame({"age": rng.integers(18, 90, 3000), "income": rng.lognormal(10, 1, 3000)})
    out = ppdm.ecdf_resample(df, ["age", "income"], bins=40, secret=3, round_integers=True)
    assert out.schema == {"age": pl.Int64, "income": pl.Float64}
    plain = ppdm.ecdf_resample(df, ["age", "income"], bins=40, secret=3)
    assert (out["age"] == plain["age"].round().cast(pl.Int64)).all()
    assert out["income"].equals(plain["income"])
    assert out["age"].min() >= 18 and out["age"].max() <= 89
    lazy = df.lazy().ppdm.ecdf_resample(["age", "income"], bins=40, secret=3, round_integers=True)
    assert lazy.collect_schema() == out.schema and lazy.collect().equals(out)
    with pytest.raises(InvalidParameterError, match="'round_integers'"):
        ppdm.ecdf_resample(df, "age", secret=3, round_integers="yes")


@pytest.mark.parametrize("duplicates", [0.0, 0.02, 0.5])
def test_rank_order_is_the_lexsort_by_value_then_keyed_tie_word(duplicates):
    """The packed-word fast path, the patched collision runs (near-equal values whose top
    bits collide, 2% exact ties) and the mostly-tied path all give the definition."""
    rng = np.random.default_rng(11)
    n = 300_000
    values = rng.normal(0, 1, n)
    values[: n // 100] = values[n // 100 : 2 * (n // 100)] * (1 + 1e-15)  # near-equal: top bits collide
    copies = int(duplicates * n)
    values[n - copies :] = values[:copies]  # exact ties, broken by the keyed words
    keys = rng.permutation(n).astype(np.uint64) * 3
    definition = np.lexsort((tie_words(SECRET, 77, keys), values))
    assert (rank_order(values, SECRET, 77, keys) == definition).all()
    workspace = Workspace(n)
    assert (rank_order(values, SECRET, 77, keys, workspace) == definition).all()
    # A repeated row key gives an equal tie word: equal values with equal keys keep
    # their input order (the copies of the tied rows get their originals' keys).
    same_key = keys.copy()
    same_key[n - copies :] = keys[:copies]
    repeated = np.lexsort((tie_words(SECRET, 77, same_key), values))
    found = rank_order(values, SECRET, 77, same_key, workspace)
    assert (found == repeated).all()
    if copies:
        position = np.empty(n, dtype=np.int64)
        position[found] = np.arange(n)
        assert (position[:copies] + 1 == position[n - copies :]).all()  # original, then its copy
    # Reused workspace, rows in another order: the same rows come out in the same order.
    shuffled = rng.permutation(n)
    where = np.argsort(shuffled)  # where each original row went
    again = rank_order(values[shuffled], SECRET, 77, keys[shuffled], workspace)
    assert (again == where[definition]).all()


def test_sorted_sample_is_the_inverse_cdf_of_the_sorted_uniforms_with_a_heavy_point_mass():
    """The run-by-run interpolation against the definition, bit for bit: 30% of the values
    at the minimum put ~30% of the sorted uniforms in the point mass, all the minimum."""
    rng = np.random.default_rng(12)
    n = 200_000
    values = np.where(rng.random(n) < 0.3, 0.0, rng.exponential(1.0, n))
    cuts, cdf = smoothed_cdf(values, 30)
    sample = sorted_sample(SECRET, 9, n, cuts, cdf, Workspace(n))
    assert (sample == inverse_cdf(sorted_uniforms(SECRET, 9, n), cuts, cdf)).all()
    assert (sample == cuts[0]).mean() > 0.25
    assert (np.diff(sample) >= 0).all()


def test_shuffle_order_is_the_argsort_of_the_keyed_words():
    """The packed-word sort against its definition.  Stream 62 is one whose words share
    their top 44 bits somewhere among 2**20 keys (odds about 1/32 per stream), so the
    collision patch runs too."""
    from polars_ppdm.kernels.prf import first_words

    n = 1 << 20
    words = first_words(SECRET, 62, np.arange(n))
    tops = np.sort(words >> np.uint64(20))
    assert (tops[1:] == tops[:-1]).any()
    order = shuffle_order(SECRET, 62, n, Workspace(n))
    assert (order == np.argsort(words, kind="stable")).all()


def _on_cut_points(rng: np.random.Generator, n: int, bins: int) -> np.ndarray:
    """Continuous values, some exactly on cut points, some tied, some near-equal (their
    sort prefixes collide): few enough for the packed-word path."""
    values = rng.normal(0, 1, n)
    cuts = smoothed_cdf(values, bins)[0]
    values[:300] = cuts[rng.integers(0, bins + 1, 300)]
    values[300:600] = values[600:900] * (1 + 1e-15)
    values[900:1000] = values[1000:1100]
    return values


@pytest.mark.parametrize(
    "make",
    [
        lambda rng, n, bins: rng.normal(0, 1, n),
        _on_cut_points,
        lambda rng, n, bins: rng.integers(-50, 50, n).astype(float),  # mostly tied
        lambda rng, n, bins: np.where(rng.random(n) < 0.5, -0.0, 0.0) + (rng.random(n) < 0.01),
        lambda rng, n, bins: (
            np.where(rng.random(n) < 0.02, 0.0, rng.exponential(1, n)) * rng.choice([-1, 1], n)
        ),
    ],
)
@pytest.mark.parametrize("bins", [2, 97, 100_000])
def test_ranked_cdf_is_rank_order_and_smoothed_cdf(make, bins):
    """The counts read off the rank sort's prefixes against the definition, with cut
    points equal to values, signed zeros, colliding prefixes and the mostly tied path."""
    from polars_ppdm.kernels.ecdf import ranked_cdf

    n = 20_000
    values = make(np.random.default_rng(bins), n, bins)
    keys = np.arange(n, dtype=np.uint64)
    order, cuts, cdf = ranked_cdf(values, bins, SECRET, 3, keys, Workspace(n))
    assert (order == rank_order(values, SECRET, 3, keys)).all()
    want_cuts, want_cdf = smoothed_cdf(values + 0.0, bins)
    assert (cuts == want_cuts).all() and (cdf == want_cdf).all()


def test_range_beyond_float64_is_refused():
    with pytest.raises(
        InvalidParameterError, match=r"'x' of ecdf_resample has a range .* beyond float64"
    ) as refused:
        ppdm.ecdf_resample(pl.DataFrame({"x": [-1e308, 0.0, 1e308]}), "x", bins=2, secret=1)
    assert "e+308" not in str(refused.value)  # neither extreme of the data


@pytest.mark.parametrize("lazy", [False, True])
def test_empty_frame_gives_an_empty_frame_of_the_output_schema(lazy):
    df = pl.DataFrame({"id": [1, 2, 3], "x": [1.0, 2.0, 3.0], "age": [20, 30, 40]}).clear()
    out = ppdm.ecdf_resample(
        df.lazy() if lazy else df, ["x", "age"], bins=3, secret=1, key="id", round_integers=True
    )
    out = out.collect(engine="streaming") if lazy else out
    assert out.height == 0 and out.schema == {"id": pl.Int64, "x": pl.Float64, "age": pl.Int64}
    # A column named "" (DataFrame.cast skips it on an empty frame: the schema came out wrong)
    odd = pl.DataFrame({"x": pl.Series([], dtype=pl.Int8), "": pl.Series([], dtype=pl.Int8)})
    out = ppdm.ecdf_resample(odd.lazy() if lazy else odd, ["x", ""], bins=5, secret=1)
    out = out.collect(engine="streaming") if lazy else out
    assert out.height == 0 and out.schema == {"x": pl.Float64, "": pl.Float64}


def test_duckdb_macro_on_an_empty_table_gives_an_empty_table():
    con = ppdm.duckdb.register(duckdb.connect())
    con.execute("CREATE TABLE e (id BIGINT, x DOUBLE)")
    out = con.sql("FROM ppdm_ecdf_resample('e', 'x', 'id', 3, '1')").pl()
    assert out.shape == (0, 2) and out.columns == ["id", "x"]


def test_a_later_select_of_fewer_columns_works():
    # Polars 1.34 pushed the select's projection into the map and then failed its schema
    # check (the pipeline's published-columns select hit it).
    lf = pl.DataFrame({"id": [1, 2, 3, 4], "name": list("abcd"), "age": [20.0, 30, 40, 50]}).lazy()
    out = ppdm.ecdf_resample(lf, ["age"], secret=1, key="id").select("id", "age").collect()
    full = ppdm.ecdf_resample(lf, ["age"], secret=1, key="id").collect()
    assert out.equals(full.select("id", "age"))


@pytest.mark.parametrize(
    ("dtype", "extremes"),
    [
        (pl.UInt64, (2**64 - 2**12, 2**64 - 1)),
        (pl.Int64, (2**63 - 2**12, 2**63 - 1)),
        (pl.Int64, (-(2**63), -(2**63) + 2**12)),
        (pl.UInt64, (5, 2**64 - 1)),
    ],
)
def test_round_integers_at_the_ends_of_the_dtype(dtype, extremes):
    """Found by the slow fuzz profile: 2^64 - 1 is 2^64 as a float64, so a value released at
    the column's maximum failed its cast back to UInt64 with Polars' message, which quoted
    the values.  Released values are clipped to the floats the dtype holds."""
    low, high = extremes
    df = pl.DataFrame({"id": range(40), "x": pl.Series([high, low] * 20, dtype=dtype)})
    out = ppdm.ecdf_resample(df, "x", bins=4, secret=ppdm.Secret.for_tests(1), key="id", round_integers=True)
    assert out["x"].dtype == dtype and out.height == 40 and out["x"].null_count() == 0
    assert low <= out["x"].min() and out["x"].max() <= high
