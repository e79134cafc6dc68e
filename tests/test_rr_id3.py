"""ID3 on randomized-response data (paper 003, section 5.2): Mushroom and Agrawal data in
whole-record mode, the complement-based accuracy estimate, k-ary per-attribute mode, and
bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from rr_id3_accuracy import agrawal_binary, evaluate


@pytest.fixture(scope="module")
def mushroom():
    path = ppdm.datasets.find_shared_data("mushroom.dat")
    if path is None:
        pytest.skip("../shared/data/mushroom.dat is not beside the project")
    onehot = ppdm.transactions_to_onehot(ppdm.read_transactions(path))
    return onehot, [c for c in onehot.columns if c not in ("1", "2")], "1"


def test_mushroom_whole_record_p08_matches_plain_id3_and_estimates_its_accuracy(mushroom):
    frame, attributes, label = mushroom
    result = evaluate(frame, attributes, label, [0.8], secrets=2, first_secret=2006)
    assert (result["gap"] >= -3).all(), result
    assert (result["estimate error"].abs() <= 2).all(), result


def test_agrawal_discretised_whole_record_p08():
    frame, attributes, label = agrawal_binary(1, rows=9_000)
    result = evaluate(frame, attributes, label, [0.8], secrets=1, first_secret=2006)
    assert (result["gap"] >= -3).all(), result
    assert (result["estimate error"].abs() <= 2).all(), result


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
    assert estimate == pytest.approx(1.0, abs=0.03)


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
