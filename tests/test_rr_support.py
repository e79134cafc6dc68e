"""Corrected supports: the thesis's worked example, unbiasedness and honest standard errors."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from _helpers import Z, sample_variance_se_from
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError

REPLICATES = 200
N = 3000


def test_table_5_2_rule_confidences():
    """Paper 003, Table 5.2: P(000..111) for (A, B, C) and the six rules of {A, B, C}."""
    bits = [(i >> 2 & 1, i >> 1 & 1, i & 1) for i in range(8)]
    patterns = pl.DataFrame(
        {
            "A": [b[0] for b in bits],
            "B": [b[1] for b in bits],
            "C": [b[2] for b in bits],
            "frequency": [0.11, 0.13, 0.06, 0.17, 0.08, 0.10, 0.14, 0.21],
        }
    )
    rules = ppdm.pattern_rules(patterns, ["A", "B", "C"], min_confidence=0.0)
    full = {
        (tuple(a), tuple(c)): round(conf * 100)
        for a, c, _, conf in rules.filter(
            pl.col("antecedent").list.len() + pl.col("consequent").list.len() == 3
        ).rows()
    }
    assert full == {
        (("A", "B"), ("C",)): 60,
        (("A", "C"), ("B",)): 68,
        (("B", "C"), ("A",)): 55,
        (("A",), ("B", "C")): 40,
        (("B",), ("A", "C")): 36,
        (("C",), ("A", "B")): 34,
    }
    kept = ppdm.pattern_rules(patterns, ["A", "B", "C"], min_confidence=0.5)
    three = kept.filter(pl.col("antecedent").list.len() + pl.col("consequent").list.len() == 3)
    assert sorted((tuple(a), tuple(c)) for a, c in three.select("antecedent", "consequent").rows()) == [
        (("A", "B"), ("C",)),
        (("A", "C"), ("B",)),
        (("B", "C"), ("A",)),
    ]
    assert ppdm.pattern_rules(patterns.lazy(), ["A", "B", "C"], min_confidence=0.5).equals(kept)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (pl.lit("x").alias("frequency"), "'frequency' column of pattern_rules must be numeric"),
        (pl.Series("frequency", [0.5, None, 0.2, 0.3]), "null, NaN or infinite"),
        (pl.Series("A", [0, 2, 1, 1]), "must hold only 0 and 1"),
        (pl.Series("A", [0, None, 1, 1]), "null value"),
    ],
)
def test_pattern_rules_refuses_bad_tables(change, message):
    patterns = pl.DataFrame({"A": [0, 0, 1, 1], "B": [0, 1, 0, 1], "frequency": [0.3, 0.1, 0.2, 0.4]})
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.pattern_rules(patterns.with_columns(change), ["A", "B"], min_confidence=0.5)


def test_pattern_rules_refuses_what_is_not_a_frame():  # was a raw AttributeError
    with pytest.raises(
        InvalidParameterError, match=r"pattern_rules takes a polars DataFrame or LazyFrame\. Got dict"
    ):
        ppdm.pattern_rules({"A": [0, 1], "frequency": [0.5, 0.5]}, ["A"], min_confidence=0.5)


@pytest.fixture(scope="module")
def truth_frame() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    a = rng.random(N) < 0.4
    b = a ^ (rng.random(N) < 0.2)
    c = rng.random(N) < np.where(b, 0.7, 0.3)
    colour = np.where(
        a, rng.choice(["red", "green", "blue"], N, p=[0.6, 0.3, 0.1]), rng.choice(["red", "green", "blue"], N)
    )
    return pl.DataFrame({"id": np.arange(N), "a": a, "b": b.astype(np.int64), "c": c, "colour": colour})


def check_unbiased_with_honest_se(estimates: np.ndarray, errors: np.ndarray, truth: np.ndarray) -> None:
    """Over the replicates (rows), per cell (columns):

    * the mean estimate is within Z standard errors of the truth (SE of a mean of R
      replicates: s / sqrt(R));
    * the mean reported variance (std_error^2, an unbiased estimate of the disguise's
      variance) is within Z standard errors of the replicates' sample variance s^2.  The
      SE of s^2 is sqrt((mu4 - (R - 3) / (R - 1) s^4) / R) with s^2 and mu4 taken from
      the replicates; the SE of the mean reported variance is its spread / sqrt(R); the
      SE of their difference is at most the sum.
    """
    r = len(estimates)
    spread2 = estimates.var(axis=0, ddof=1)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= Z * np.sqrt(spread2 / r)), (
        estimates.mean(axis=0),
        truth,
    )
    reported = (errors**2).mean(axis=0)
    se = sample_variance_se_from(estimates) + (errors**2).std(axis=0, ddof=1) / np.sqrt(r)
    assert np.all(np.abs(reported - spread2) <= Z * se), ((reported - spread2) / se).tolist()


CASES = {
    "binary_per_attribute": dict(
        columns=["a", "b", "c"], p=[0.9, 0.75, 0.8], mode="per_attribute", categories=None
    ),
    "kary_per_attribute": dict(
        columns=["a", "colour"],
        p=[0.85, 0.7],
        mode="per_attribute",
        categories={"a": None, "colour": ["red", "green", "blue"]},
    ),
    "binary_whole_record": dict(columns=["a", "b", "c"], p=0.8, mode="whole_record", categories=None),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_patterns_unbiased_over_200_seeds(truth_frame, case):
    spec = CASES[case]
    truth = ppdm.rr_support(truth_frame, spec["columns"], p=1.0, categories=spec["categories"])[
        "frequency"
    ].to_numpy()
    estimates, errors = [], []
    for seed in range(REPLICATES):
        disguised = ppdm.rr_disguise(
            truth_frame,
            spec["columns"],
            p=spec["p"],
            mode=spec["mode"],
            secret=seed,
            key="id",
            categories=spec["categories"],
        )
        out = ppdm.rr_support(
            disguised.lazy(), spec["columns"], p=spec["p"], mode=spec["mode"], categories=spec["categories"]
        ).collect()
        estimates.append(out["frequency"].to_numpy())
        errors.append(out["std_error"].to_numpy())
    check_unbiased_with_honest_se(np.array(estimates), np.array(errors), truth)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["per_attribute", "whole_record"])
def test_itemset_supports_unbiased_over_200_seeds(truth_frame, mode):
    itemsets = [["a"], ["a", "b"], ["a", "b", "c"], ["b", "c"]]
    truth = ppdm.rr_support(truth_frame, ["a", "b", "c"], p=1.0, itemsets=itemsets)["support"].to_numpy()
    estimates, errors = [], []
    for seed in range(REPLICATES):
        disguised = ppdm.rr_disguise(truth_frame, ["a", "b", "c"], p=0.8, mode=mode, secret=seed, key="id")
        out = ppdm.rr_support(disguised, ["a", "b", "c"], p=0.8, mode=mode, itemsets=itemsets)
        estimates.append(out["support"].to_numpy())
        errors.append(out["std_error"].to_numpy())
    check_unbiased_with_honest_se(np.array(estimates), np.array(errors), truth)


def test_itemsets_agree_with_marginals_of_the_patterns(truth_frame):
    disguised = ppdm.rr_disguise(truth_frame, ["a", "b", "c"], p=[0.9, 0.8, 0.7], secret=1, key="id")
    patterns = ppdm.rr_support(disguised, ["a", "b", "c"], p=[0.9, 0.8, 0.7])
    from_patterns = patterns.filter(pl.col("a") & (pl.col("b") == 1))["frequency"].sum()
    itemset = ppdm.rr_support(disguised, ["a", "b", "c"], p=[0.9, 0.8, 0.7], itemsets=[["b", "a"]])
    assert itemset["itemset"].to_list() == [["a", "b"]]
    assert np.isclose(itemset["support"][0], from_patterns)
    assert np.isclose(patterns["frequency"].sum(), 1.0)


def test_full_grid_and_lazy_result(truth_frame):
    sparse = truth_frame.filter(pl.col("colour") != "blue")
    out = ppdm.rr_support(sparse.lazy(), ["colour"], p=0.9, categories=["red", "green", "blue"])
    assert isinstance(out, pl.LazyFrame)
    got = out.collect()
    assert got["colour"].to_list() == ["red", "green", "blue"]
    assert got.filter(pl.col("colour") == "blue")["observed"].item() == 0
    assert got.schema["observed"] == pl.Int64


def test_epsilon_instead_of_p(truth_frame):
    a = ppdm.rr_support(truth_frame, ["a"], epsilon=np.log(4.0))
    b = ppdm.rr_support(truth_frame, ["a"], p=0.8)
    assert np.allclose(a["frequency"].to_numpy(), b["frequency"].to_numpy())


def test_empty_frame_gives_empty_result():
    empty = pl.DataFrame(schema={"a": pl.Boolean, "b": pl.Boolean})
    assert ppdm.rr_support(empty, ["a", "b"], p=0.8).shape == (0, 5)
    assert ppdm.rr_support(empty, ["a", "b"], p=0.8, itemsets=[["a"]]).shape == (0, 3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": 0.5}, "other than 1/k"),
        ({"p": 1.2}, r"must be a float in \[0, 1\]"),
        ({"epsilon": -1.0}, "must be a float > 0"),
        # p rounds to 1/2: was a ZeroDivisionError / NaN frequencies with NumPy warnings
        ({"epsilon": 1e-300}, r"'epsilon' parameter of rr_support .*must be a float >= 4e-12"),
        ({"epsilon": 1e-13, "mode": "whole_record"}, r"'epsilon' parameter .*>= 4e-12"),
        ({"p": 0.8, "mode": "rows"}, "'mode' parameter of rr_support"),
        ({"p": [0.8, 0.9], "mode": "whole_record"}, "one 'p'"),
        ({"p": 0.8, "itemsets": [["a", "zzz"]]}, "'itemsets' parameter"),
        ({"p": 0.8, "itemsets": [[]]}, "'itemsets' parameter"),
        # were raw "'bool' object is not iterable" TypeErrors
        ({"p": 0.8, "itemsets": True}, "'itemsets' parameter .* Got True"),
        ({"p": 0.8, "itemsets": [True]}, "'itemsets' parameter .* Got the itemset True"),
        ({"p": 0.8, "itemsets": [[1]]}, r"'itemsets' parameter .* Got the itemset \[1\]"),
    ],
)
def test_bad_parameters(kwargs, message):
    df = pl.DataFrame({"a": [True, False], "b": [1, 0]})
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.rr_support(df, ["a", "b"], **kwargs)


@pytest.mark.parametrize("miner", ["rr_support", "rr_frequent_itemsets", "rr_apriori"])
def test_an_epsilon_too_small_to_invert_is_refused_not_divided_by(miner):
    df = pl.DataFrame({"a": [True, False, True, True], "b": [False, True, True, False]})
    extra = {"rr_support": {}, "rr_frequent_itemsets": {"min_support": 0.1}}
    kwargs = extra.get(miner, {"min_support": 0.1, "min_confidence": 0.1})
    with pytest.raises(InvalidParameterError, match=rf"'epsilon' parameter of {miner}"):
        getattr(ppdm, miner)(df, ["a", "b"], epsilon=1e-300, **kwargs)
    # Just above the bound: finite estimates (with standard errors that say what they are worth).
    result = ppdm.rr_support(df, ["a", "b"], epsilon=1e-11)
    assert np.isfinite(result["frequency"].to_numpy()).all()
    assert (result["std_error"] > 1e9).all()


def test_bad_values_fail_loudly():
    with pytest.raises(InvalidParameterError, match="null"):
        ppdm.rr_support(pl.DataFrame({"a": [True, None]}), ["a"], p=0.8)
    with pytest.raises(InvalidParameterError, match="only 0 and 1"):
        ppdm.rr_support(pl.DataFrame({"a": [0, 3]}), ["a"], p=0.8)
    with pytest.raises(InvalidParameterError, match="only 0 and 1"):
        ppdm.rr_support(pl.DataFrame({"a": [0, 3]}), ["a"], p=0.8, itemsets=[["a"]])
    with pytest.raises(InvalidParameterError, match="null"):
        ppdm.rr_support(pl.DataFrame({"a": [True, None]}), ["a"], p=0.8, itemsets=[["a"]])
    with pytest.raises(InvalidParameterError, match="binary"):
        ppdm.rr_support(
            pl.DataFrame({"a": ["x", "y"]}), ["a"], p=0.8, categories=["x", "y", "z"], itemsets=[["a"]]
        )


@pytest.mark.parametrize("name", ["observed", "frequency", "std_error"])
def test_a_pattern_column_named_like_an_output_is_refused_up_front(name):
    """Was a silent overwrite ('frequency', 'std_error': the estimates replaced the column's
    values, so no row said which share is True) or a raw DuplicateError ('observed')."""
    df = pl.DataFrame({"a": [True, False] * 50, "b": [True] * 30 + [False] * 70}).rename({"a": name})
    message = (
        rf"^The 'columns' parameter of rr_support must name no column called 'observed', 'frequency' or "
        rf"'std_error' \(its result's own columns\)\. Got '{name}'; rename it first, e\.g\. "
        rf"frame\.rename\(\{{'{name}': '{name}_1'\}}\)\.$"
    )
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.rr_support(df, [name, "b"], p=0.8)
    with pytest.raises(InvalidParameterError, match=message):  # lazy: refused before the plan is built
        ppdm.rr_support(df.lazy(), [name, "b"], p=0.8)
    # Itemsets name their items as values, not columns: no clash, the same supports.
    renamed = ppdm.rr_support(df.rename({name: "a"}), ["a", "b"], p=0.8, itemsets=[["a"], ["a", "b"]])
    got = ppdm.rr_support(df, [name, "b"], p=0.8, itemsets=[[name], [name, "b"]])
    assert got.drop("itemset").equals(renamed.drop("itemset"))
    assert got["itemset"].to_list() == [[name], [name, "b"]]


# ---- Boolean columns counted by sums (issue 30): the group-by's results, every case ----


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(0, 40),
    st.sampled_from(["per_attribute", "whole_record"]),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_boolean_patterns_counted_by_sums_are_the_group_by_s(
    width: int, n: int, mode: str, nulls: bool, lazy: bool, data: st.DataObject
) -> None:
    import sys

    module = sys.modules["polars_ppdm.mine.rr_support"]
    cells = st.one_of(st.none(), st.booleans()) if nulls else st.booleans()
    columns = [f"c{j}" for j in range(width)]
    frame = pl.DataFrame(
        {c: data.draw(st.lists(cells, min_size=n, max_size=n)) for c in columns},
        schema=dict.fromkeys(columns, pl.Boolean),
    )
    source = frame.lazy() if lazy else frame

    def support() -> pl.DataFrame | str:
        try:
            found = ppdm.rr_support(source, columns, p=0.8, mode=mode)
            return found.collect() if isinstance(found, pl.LazyFrame) else found
        except InvalidParameterError as error:
            return str(error)

    summed = support()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "boolean_pattern_counts", lambda design, schema: None)
        grouped = support()
    if isinstance(grouped, str):
        assert summed == grouped
    else:
        assert isinstance(summed, pl.DataFrame) and summed.equals(grouped)
