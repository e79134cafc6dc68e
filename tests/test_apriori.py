"""Apriori on corrected supports: exact on plain data, close to the truth on disguised baskets."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError


def brute_force_frequent(df: pl.DataFrame, min_support: float, max_length: int) -> dict[tuple, float]:
    matrix = df.to_numpy().astype(bool)
    out = {}
    for size in range(1, max_length + 1):
        for combo in itertools.combinations(range(df.width), size):
            support = matrix[:, combo].all(axis=1).mean()
            if support >= min_support:
                out[tuple(df.columns[i] for i in combo)] = support
    return out


@pytest.fixture(scope="module")
def baskets() -> pl.DataFrame:
    rng = np.random.default_rng(8)
    n = 4000
    base = rng.random((n, 7)) < [0.5, 0.4, 0.3, 0.3, 0.2, 0.1, 0.05]
    base[:, 1] |= base[:, 0] & (rng.random(n) < 0.5)
    base[:, 2] |= base[:, 0] & base[:, 1] & (rng.random(n) < 0.6)
    return pl.DataFrame({f"i{j}": base[:, j] for j in range(7)})


def test_plain_apriori_equals_brute_force(baskets):
    found = ppdm.rr_frequent_itemsets(baskets, baskets.columns, p=1.0, min_support=0.05)
    got = {tuple(s): sup for s, sup, _ in found.rows()}
    expected = brute_force_frequent(baskets, 0.05, 7)
    assert got.keys() == expected.keys()
    assert all(np.isclose(got[s], expected[s]) for s in got)
    assert (found["std_error"] == 0).all()


def test_rules_are_every_split_of_frequent_itemsets(baskets):
    rules = ppdm.rr_apriori(
        baskets, baskets.columns, p=1.0, min_support=0.1, min_confidence=0.5, max_length=3
    )
    frequent = brute_force_frequent(baskets, 0.1, 3)
    expected = set()
    for itemset, both in frequent.items():
        for size in range(1, len(itemset)):
            for antecedent in itertools.combinations(itemset, size):
                if both / frequent[antecedent] >= 0.5:
                    expected.add((antecedent, tuple(i for i in itemset if i not in antecedent)))
    assert {(tuple(a), tuple(c)) for a, c in rules.select("antecedent", "consequent").rows()} == expected
    assert rules["confidence"].is_sorted(descending=True)


def test_max_length_limits_itemsets(baskets):
    found = ppdm.rr_frequent_itemsets(baskets, baskets.columns, p=1.0, min_support=0.01, max_length=2)
    assert found["itemset"].list.len().max() == 2


def test_whole_record_mode_mines_the_planted_rule(baskets):
    disguised = ppdm.rr_disguise(baskets, baskets.columns, p=0.85, mode="whole_record", secret=4)
    rules = ppdm.rr_apriori(
        disguised, baskets.columns, p=0.85, mode="whole_record", min_support=0.15, min_confidence=0.6
    )
    assert (["i0"], ["i1"]) in [tuple(r) for r in rules.select("antecedent", "consequent").rows()]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_support": 1.5, "min_confidence": 0.5}, "'min_support' parameter of rr_apriori"),
        ({"min_support": 0.1, "min_confidence": -0.1}, "'min_confidence' parameter of rr_apriori"),
        ({"min_support": 0.1, "min_confidence": 0.5, "max_length": 0}, "'max_length' parameter"),
        ({"min_support": 0.1, "min_confidence": 0.5, "p": 0.5}, "other than 1/k"),
        ({"min_support": 0.1, "min_confidence": 0.5, "mode": "x"}, "'mode' parameter"),
    ],
)
def test_bad_parameters(baskets, kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.rr_apriori(baskets, baskets.columns, **{"p": 0.9, **kwargs})


def test_bad_items_and_empty_frames(baskets):
    with pytest.raises(InvalidParameterError, match="'columns' parameter of rr_apriori"):
        ppdm.rr_apriori(baskets, ["i0", "nope"], p=0.9, min_support=0.1, min_confidence=0.5)
    with pytest.raises(InvalidParameterError, match="'columns' parameter of rr_apriori"):
        ppdm.rr_apriori(baskets, [], p=0.9, min_support=0.1, min_confidence=0.5)
    # No transactions: nothing is frequent, so empty results with their schemas.
    empty_rules = ppdm.rr_apriori(
        baskets.clear(), baskets.columns, p=0.9, min_support=0.1, min_confidence=0.5
    )
    assert empty_rules.height == 0 and empty_rules.columns == [
        "antecedent",
        "consequent",
        "support",
        "confidence",
    ]
    assert (
        ppdm.rr_frequent_itemsets(baskets.clear().lazy(), baskets.columns, p=0.9, min_support=0.1).height == 0
    )
    with pytest.raises(InvalidParameterError, match="binary"):
        ppdm.rr_apriori(
            pl.DataFrame({"e": pl.Series(["a"], dtype=pl.Enum(["a", "b", "c"]))}),
            ["e"],
            p=0.9,
            min_support=0.1,
            min_confidence=0.5,
        )


def test_association_rules_chain_from_frequent_itemsets(baskets):
    frequent = ppdm.rr_frequent_itemsets(baskets, baskets.columns, p=0.9, min_support=0.05)
    rules = ppdm.association_rules(frequent, min_confidence=0.3)
    direct = ppdm.rr_apriori(baskets, baskets.columns, p=0.9, min_support=0.05, min_confidence=0.3)
    assert rules.height > 0 and rules.equals(direct)
    with pytest.raises(InvalidParameterError, match="'frequent' parameter of association_rules must be"):
        ppdm.association_rules(None, min_confidence=0.5)
    with pytest.raises(InvalidParameterError, match="numeric supports"):
        ppdm.association_rules({("a",): "0.6"}, min_confidence=0.5)


def test_transactions_round_trip(tmp_path):
    path = tmp_path / "baskets.csv"
    path.write_text("milk,bread\nbread\n\nbeer,milk,milk\n", encoding="utf-8")
    tx = ppdm.read_transactions(path, sep=",")
    assert tx["items"].to_list() == [["milk", "bread"], ["bread"], [], ["beer", "milk", "milk"]]
    onehot = ppdm.transactions_to_onehot(tx)
    assert onehot.columns == ["beer", "bread", "milk"]
    assert onehot.rows() == [
        (False, True, True),
        (False, True, False),
        (False, False, False),
        (True, False, True),
    ]
    fimi = ppdm.read_transactions(["1 2 3", "2  3"])
    assert fimi["items"].to_list() == [["1", "2", "3"], ["2", "3"]]
    with pytest.raises(InvalidParameterError, match="not in 'items'"):
        ppdm.transactions_to_onehot(tx, items=["milk", "bread"])
    with pytest.raises(InvalidParameterError, match="null"):
        ppdm.transactions_to_onehot(pl.Series("items", [["a"], None]))
    with pytest.raises(InvalidParameterError, match="list column"):
        ppdm.transactions_to_onehot(pl.Series("items", ["a"]))
    with pytest.raises(InvalidParameterError, match=r"'column' parameter .* Got \['basket'\]"):
        ppdm.transactions_to_onehot(tx, "basket")
    empty = pl.Series("items", [[], []], dtype=pl.List(pl.String))
    assert ppdm.transactions_to_onehot(empty, items=["a"]).rows() == [(False,), (False,)]
    with pytest.raises(InvalidParameterError, match="all the transactions are empty"):
        ppdm.transactions_to_onehot(empty)


@pytest.mark.slow
def test_groceries_rules_from_disguised_data(shared_data):
    """Issue bar: p = 0.9 per attribute, min support 2%, min confidence 30%, itemsets up to 4.

    F1 of the rule set against the rules of the original data (37 rules), over 10 fixed
    seeds.  The per-seed spread is 0.039 (the unbiased estimator's own noise at
    n = 9,835: single-item SE about 0.004 against a 0.02 threshold), so the mean over 10
    seeds has a standard error of 0.012.  ``python benchmarks/groceries_rules.py --seeds
    1000``: mean 0.8497 (SE 0.0012), precision 0.828, recall 0.877; 52% of the hundred
    10-seed means reach 0.85, because the rules most often wrong sit on the thresholds
    (butter => other vegetables has support 0.0200 and is missed in 499 of 1000 seeds).
    We assert 0.80, four standard errors below that mean.
    """
    onehot = ppdm.transactions_to_onehot(ppdm.read_transactions(shared_data / "groceries.csv", sep=","))
    items = onehot.columns
    settings = dict(min_support=0.02, min_confidence=0.3, max_length=4)
    truth = ppdm.rr_apriori(onehot, items, p=1.0, **settings)
    scores = []
    for seed in range(10):
        disguised = ppdm.rr_disguise(onehot, items, p=0.9, secret=seed)
        scores.append(ppdm.rule_scores(ppdm.rr_apriori(disguised, items, p=0.9, **settings), truth))
    f1 = np.array([s["f1"] for s in scores])
    print(
        f"groceries p=0.9: F1 mean {f1.mean():.3f} (sd {f1.std(ddof=1):.3f}), "
        f"precision {np.mean([s['precision'] for s in scores]):.3f}, recall {np.mean([s['recall'] for s in scores]):.3f}"
    )
    assert f1.mean() >= 0.80


def test_transactions_and_rule_scores_refuse_bad_input():
    tx = pl.DataFrame({"items": [["a", "b"], ["b"]]})
    assert ppdm.transactions_to_onehot(tx.lazy()).equals(ppdm.transactions_to_onehot(tx))
    with pytest.raises(InvalidParameterError, match="'sep' parameter of read_transactions"):
        ppdm.read_transactions(["a b"], sep="")
    with pytest.raises(InvalidParameterError, match=r"'transactions' parameter .* Got list"):
        ppdm.transactions_to_onehot([["a"]])
    with pytest.raises(InvalidParameterError, match=r"'items' parameter .* Got 'ab'"):
        ppdm.transactions_to_onehot(tx, items="ab")  # not split into 'a' and 'b'
    rules = pl.DataFrame({"antecedent": [["a"]], "consequent": [["b"]]})
    assert ppdm.rule_scores(rules.lazy(), rules)["f1"] == 1.0
    with pytest.raises(InvalidParameterError, match="'found' parameter of rule_scores"):
        ppdm.rule_scores(pl.DataFrame({"x": [1]}), rules)


@pytest.mark.parametrize(
    ("source", "got"),
    [
        ([None], "Got a line of type NoneType instead"),
        (["a b", 1], "Got a line of type int instead"),
        (None, "Got None"),
        (3, "Got 3"),
        (b"a b", "Got b'a b'"),
    ],
)
def test_read_transactions_refuses_what_is_not_lines_by_name(source, got):
    # [None] raised AttributeError: 'NoneType' object has no attribute 'rstrip'.
    with pytest.raises(
        InvalidParameterError, match=f"'source' parameter of read_transactions must be .*{got}"
    ):
        ppdm.read_transactions(source)


def test_read_transactions_refuses_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "baskets.dat"
    path.write_bytes(b"milk \xff bread\n")
    with pytest.raises(
        InvalidParameterError, match="'source' parameter of read_transactions must be a UTF-8 text file"
    ):
        ppdm.read_transactions(path)


def test_numpy_supports_and_generator_items():
    rules = ppdm.association_rules(
        {("a",): np.float32(0.6), ("b",): np.float64(0.5), ("a", "b"): np.float32(0.4)}, min_confidence=0.7
    )
    assert rules.select("antecedent", "consequent").rows() == [(["b"], ["a"])]
    onehot = ppdm.transactions_to_onehot(pl.Series("items", [["a", "b"]]), items=(i for i in ["a", "b"]))
    assert onehot.columns == ["a", "b"]
