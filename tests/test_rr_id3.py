"""ID3 on randomized-response data (paper 003, section 5.2): Mushroom and Agrawal data in
whole-record mode, the complement-based accuracy estimate, k-ary per-attribute mode, and
bad input."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from _helpers import Z

import polars_ppdm as ppdm
from polars_ppdm.binary_datasets import agrawal_binary
from polars_ppdm.binary_datasets import mushroom as mushroom_data
from polars_ppdm.exceptions import InvalidParameterError


@pytest.fixture(scope="module")
def mushroom():
    if ppdm.datasets.find_shared_data("mushroom.dat") is None:
        pytest.skip("../shared/data/mushroom.dat is not beside the project")
    return mushroom_data()


def whole_record_holdout(frame: pl.DataFrame, attributes: list[str], label: str, p: float, secret: int):
    """Paper 003's protocol (as ``benchmarks/rr_id3_accuracy.py``): two thirds for
    training; ID3 on the original training set is the baseline; both sets disguised
    (whole record, label included); the RR tree scored on the original test set (true
    accuracy) and estimated from the disguised one (``rr_accuracy``).

    Also the estimate's exact standard error given the tree and the test set.  Per row,
    with c = 1 when the tree is right on the row and c' = 1 when it is right on the
    row's complement, the estimator's term ``(p 1{right on y} - (1 - p) 1{right on
    y's complement}) / (2p - 1)`` takes ``(p c - (1 - p) c') / (2p - 1)`` with
    probability p (record kept) and ``(p c' - (1 - p) c) / (2p - 1)`` with 1 - p
    (record negated): mean c, variance ``p (1 - p) (c - c')^2 / (2p - 1)^2``.
    """
    frame = frame.with_row_index("row_id")
    order = np.random.default_rng(0).permutation(frame.height)
    train, test = frame[order[: 2 * frame.height // 3]], frame[order[2 * frame.height // 3 :]]
    baseline = float((ppdm.rr_id3(train, attributes, label, p=1.0).predict(test) == test[label]).mean())
    columns = [*attributes, label]
    assert all(test.schema[c] == pl.Boolean for c in columns)
    disguised = {
        name: ppdm.rr_disguise(part, columns, p=p, mode="whole_record", secret=secret, key="row_id")
        for name, part in (("train", train), ("test", test))
    }
    tree = ppdm.rr_id3(disguised["train"], attributes, label, p=p, mode="whole_record")
    right = (tree.predict(test) == test[label]).to_numpy()
    complement = test.with_columns(~pl.col(c) for c in columns)
    right_on_complement = (tree.predict(complement) == complement[label]).to_numpy()
    estimate = ppdm.rr_accuracy(tree, disguised["test"], p=p)
    variance = p * (1 - p) * np.mean(right != right_on_complement) / (2 * p - 1) ** 2 / test.height
    return baseline, float(right.mean()), estimate, math.sqrt(variance)


def test_mushroom_whole_record_p08_matches_plain_id3_and_estimates_its_accuracy(mushroom):
    frame, attributes, label = mushroom
    for secret in (2006, 2007):
        baseline, true, estimate, se = whole_record_holdout(frame, attributes, label, 0.8, secret)
        assert true >= baseline - 0.03, (true, baseline)  # the bar: within 3 points of ID3
        assert abs(estimate - true) <= Z * se, (estimate, true, se)


def test_agrawal_discretised_whole_record_p08():
    frame, attributes, label = agrawal_binary(1, rows=9_000)
    baseline, true, estimate, se = whole_record_holdout(frame, attributes, label, 0.8, 2006)
    assert true >= baseline - 0.03, (true, baseline)  # the bar: within 3 points of ID3
    assert abs(estimate - true) <= Z * se, (estimate, true, se)


def test_plain_id3_learns_a_known_rule_and_prints():
    df = pl.DataFrame({"a": [True, True, False, False] * 50, "b": [True, False] * 100}).with_columns(
        (pl.col("a") & ~pl.col("b")).alias("y")
    )
    tree = ppdm.rr_id3(df, ["a", "b"], "y", p=1.0)
    assert (tree.predict(df) == df["y"]).all()
    assert "a = True:" in str(tree) and "-> y = True" in str(tree)
    assert len(tree.leaves()) == 3


def test_per_attribute_mode_handles_k_ary_attributes_and_labels():
    rng = np.random.default_rng(3)
    n = 60_000
    colour = rng.integers(0, 3, n)
    size = rng.integers(0, 2, n)
    kind = np.where(colour == 0, 0, np.where(size == 1, 1, 2))
    domains = {"colour": ["red", "green", "blue"], "size": ["small", "large"], "kind": ["x", "y", "z"]}
    df = pl.DataFrame(
        {c: [domains[c][i] for i in v] for c, v in (("colour", colour), ("size", size), ("kind", kind))}
    )
    disguised = ppdm.rr_disguise(df, ["colour", "size", "kind"], p=0.8, secret=4, categories=domains)
    tree = ppdm.rr_id3(disguised, ["colour", "size"], "kind", p=0.8, mode="per_attribute", categories=domains)
    assert (tree.predict(df) == df["kind"]).mean() == 1.0
    estimate = ppdm.rr_accuracy(tree, disguised, p=0.8)
    # The estimate is the mean over rows of W(y) = sum over true patterns x' of
    # 1{tree right on x'} prod_j Minv_j[x'_j, y_j] (Minv_j the inverse disguise matrix of
    # column j; y the disguised row).  Given the true row x, E[W] = 1{tree right on x} and
    # Var(W) = sum_y P(y | x) W(y)^2 - E[W]^2: the estimate's exact SE given the data.
    columns = ["colour", "size", "kind"]
    ks = [len(domains[c]) for c in columns]
    disguise = [np.full((k, k), (1 - 0.8) / (k - 1)) + (0.8 - (1 - 0.8) / (k - 1)) * np.eye(k) for k in ks]
    inverse = [np.linalg.inv(m) for m in disguise]
    grid = pl.DataFrame(
        [(a, b, y) for a in domains["colour"] for b in domains["size"] for y in domains["kind"]],
        schema=columns,
        orient="row",
    )
    right = (tree.predict(grid) == grid["kind"]).to_numpy().astype(float).reshape(ks)
    w = np.einsum("abc,ad,be,cf->def", right, *inverse)
    mean_w = np.einsum("ad,be,cf,def->abc", *disguise, w)
    assert np.allclose(mean_w, right)  # W is unbiased for the indicator
    var_w = np.einsum("ad,be,cf,def->abc", *disguise, w**2) - right**2
    true_counts = np.zeros(ks)
    np.add.at(true_counts, (colour, size, kind), 1)
    se = math.sqrt((true_counts * var_w).sum()) / n
    code = {c: {v: i for i, v in enumerate(domains[c])} for c in columns}
    seen = tuple(disguised[c].replace_strict(code[c], return_dtype=pl.Int64).to_numpy() for c in columns)
    assert estimate == pytest.approx(w[seen].mean(), rel=1e-9)  # rr_accuracy is that mean
    assert abs(estimate - 1.0) <= Z * se, (estimate, se)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(p=0.5), "other than 1/k = 0.5"),
        (dict(p=1.5), "'p'"),
        (dict(), "exactly one of 'p' and 'epsilon'"),
        (dict(p=0.8, epsilon=1.0), "exactly one of 'p' and 'epsilon'"),
        (dict(epsilon=0.0), "'epsilon'"),
        (dict(p=0.8, label="nope"), "'label' parameter of rr_id3 must name a column"),
        (dict(p=0.8, columns=["a", "zz"]), "zz"),
        (dict(p=0.8, mode="per_row"), "'mode'"),
        (dict(p=0.8, label="three", mode="whole_record"), "needs binary columns"),
        (dict(p={"a": 0.8, "y": 0.7}, mode="whole_record"), "one coin per record, so one 'p'"),
        (dict(p=0.8, columns=["a", "y"]), "'columns' parameter of rr_id3 must not hold the label"),
        (dict(p=0.8, columns=["s"]), "'categories' parameter of rr_id3 \\(column 's'\\) is required"),
        (dict(p=0.8, max_depth=-1), "'max_depth'"),
        (dict(p=0.8, label_disguised="no"), "'label_disguised' parameter of rr_id3 must be True or False"),
        (dict(p=0.8, categories=["u", "v"]), "'categories' parameter of rr_id3 must map columns"),
        (dict(p=0.8, categories={"typo": [0, 1]}), "'categories' parameter of rr_id3 must map columns"),
    ],
)
def test_bad_input(kwargs, message):
    df = pl.DataFrame(
        {
            "a": [True, False, True],
            "y": [True, True, False],
            "three": pl.Series(["u", "v", "w"], dtype=pl.Enum(["u", "v", "w"])),
            "s": ["p", "q", "p"],
        }
    )
    args = {"columns": ["a"], "label": "y"} | kwargs
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.rr_id3(df, args.pop("columns"), args.pop("label"), **args)


def test_epsilon_is_the_p_it_stands_for_and_p_may_differ_per_column():
    rng = np.random.default_rng(5)
    n = 20_000
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.5
    df = pl.DataFrame({"a": a, "b": b, "y": a & ~b})
    p = ppdm.rr_p_from_epsilon(1.5)
    disguised = ppdm.rr_disguise(df, ["a", "b", "y"], p=p, secret=3)
    by_p = ppdm.rr_id3(disguised, ["a", "b"], "y", p=p)
    by_epsilon = ppdm.rr_id3(disguised, ["a", "b"], "y", epsilon=1.5)
    assert str(by_p) == str(by_epsilon)
    assert ppdm.rr_accuracy(by_p, disguised, p=p) == ppdm.rr_accuracy(by_epsilon, disguised, epsilon=1.5)
    mixed = ppdm.rr_disguise(df, ["a", "b", "y"], p={"a": 0.9, "b": 0.8, "y": 0.85}, secret=3)
    tree = ppdm.rr_id3(mixed, ["a", "b"], "y", p={"a": 0.9, "b": 0.8, "y": 0.85})
    assert (tree.predict(df) == df["y"]).all()


def test_nulls_are_refused():
    df = pl.DataFrame({"a": [True, None], "y": [True, False]})
    with pytest.raises(InvalidParameterError, match="nulls"):
        ppdm.rr_id3(df, ["a"], "y", p=0.8)


def test_predict_and_accuracy_check_the_frame_they_get():
    df = pl.DataFrame({"a": [True, True, False, False] * 50, "b": [True, False] * 100}).with_columns(
        (pl.col("a") & ~pl.col("b")).alias("y")
    )
    tree = ppdm.rr_id3(df, ["a", "b"], "y", p=1.0)
    with pytest.raises(
        InvalidParameterError, match="column 'a' has dtype Int64; the tree was fitted on Boolean"
    ):
        tree.predict(pl.DataFrame({"a": [5, 7], "b": [3, 3]}))  # 5 would pass for True
    with pytest.raises(InvalidParameterError, match="Got \\['b'\\]"):
        tree.predict(df.select("a"))
    with pytest.raises(InvalidParameterError, match="rr_id3 needs at least one row"):
        ppdm.rr_id3(df.clear(), ["a", "b"], "y", p=0.8)
    with pytest.raises(InvalidParameterError, match="rr_accuracy needs at least one row"):
        ppdm.rr_accuracy(tree, df.clear(), p=0.8)


def test_a_value_without_a_branch_gets_the_majority_class_of_its_node():
    from polars_ppdm.mine.rr_id3 import RRTree, _Node

    domain = ppdm._encoding.Domain.of(pl.Boolean, None, func="t", column="a")
    # The split on 'a' has a child for False only: rows with a = True stop at the root.
    root = _Node(np.array([1.0, 3.0]), attribute=0, children={0: _Node(np.array([5.0, 1.0]))})
    tree = RRTree(root, ["a"], "y", {"a": domain, "y": domain}, "whole_record")
    assert tree.predict(pl.DataFrame({"a": [False, True]})).to_list() == [False, True]


def test_predict_accepts_the_same_values_in_a_sibling_dtype():
    text = pl.DataFrame({"s": ["u", "v"] * 20, "y": [True, False] * 20})
    tree = ppdm.rr_id3(text, ["s"], "y", p=1.0, categories={"s": ["u", "v"]})
    as_enum = text.with_columns(pl.col("s").cast(pl.Enum(["u", "v"])))
    assert tree.predict(as_enum).equals(tree.predict(text))
    numbers = pl.DataFrame({"a": [0, 1] * 20, "y": [True, False] * 20})
    assert ppdm.rr_id3(numbers, ["a"], "y", p=1.0).predict(pl.DataFrame({"a": [False, True]})).to_list() == [
        True,
        False,
    ]
