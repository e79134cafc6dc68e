"""Fuzz the functions that take no single frame: audits, metrics, the epsilon helpers,
secrets, baskets, data sets, the spiral key and the DuckDB helpers; and chains, where one
function's output is the next one's input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import hypothesis.strategies as st
import numpy as np
import polars as pl
import pytest
from fuzz_contract import SECRET, checked
from fuzz_strategies import frames, hostile
from hypothesis import given

import polars_ppdm as ppdm
import polars_ppdm.duckdb as ppdm_duckdb
from polars_ppdm.metrics import assign, f_measure, nicv, rcp

_A = pl.DataFrame({"x": np.linspace(0, 1, 20), "y": np.linspace(1, 0, 20) ** 2})
_B = _A.with_columns(pl.col("x") + 0.01, pl.col("y") * 2)
_KEY = ppdm.spiral_key(["x", "y"], bounds={"x": (0, 1), "y": (0, 1)}, secret=SECRET)
_RULES = pl.DataFrame({"antecedent": [["a"]], "consequent": [["b"]], "support": [0.5], "confidence": [0.9]})

# name -> (function, valid positional arguments, valid keyword arguments)
FUNCTIONS: dict[str, tuple[Callable[..., Any], list[Any], dict[str, Any]]] = {
    "audit.rank_linkage": (ppdm.audit.rank_linkage, [_A, _B, ["x", "y"]], {}),
    "audit.compare_to_additive_noise": (
        ppdm.audit.compare_to_additive_noise,
        [_A, _B, ["x"]],
        {"snr": [1.0], "secret": SECRET, "bins": 5},
    ),
    "audit.pca_noise_stripping": (ppdm.audit.pca_noise_stripping, [_A, _B, ["x", "y"]], {"scale": 0.1}),
    "audit.mutual_information": (ppdm.audit.mutual_information, [_A["x"], _A["y"]], {"bins": 4}),
    "audit.privacy_q": (ppdm.audit.privacy_q, [_A["x"].to_numpy(), _B["x"].to_numpy()], {"bins": 4}),
    "audit.known_io_attack": (ppdm.audit.known_io_attack, [_A.to_numpy()[:3], _B.to_numpy()[:3]], {}),
    "rr_epsilon": (ppdm.rr_epsilon, [0.75], {"k": 2}),
    "rr_p_from_epsilon": (ppdm.rr_p_from_epsilon, [1.0], {"k": 3}),
    "association_rules": (
        ppdm.association_rules,
        [{("a",): 0.5, ("b",): 0.6, ("a", "b"): 0.4}],
        {"min_confidence": 0.5},
    ),
    "rule_scores": (ppdm.rule_scores, [_RULES, _RULES], {}),
    "metrics.assign": (assign, [_A.to_numpy(), _A.to_numpy()[:2]], {}),
    "metrics.nicv": (nicv, [_A.to_numpy(), _A.to_numpy()[:2]], {}),
    "metrics.f_measure": (f_measure, [np.array([0, 1, 1]), np.array([1, 0, 0])], {}),
    "metrics.rcp": (rcp, [0.5, 0.4], {}),
    "resolve_secret": (ppdm.resolve_secret, [SECRET], {}),
    "Secret": (ppdm.Secret, [b"\x01" * 16], {}),
    "new_secret": (ppdm.new_secret, [], {"bits": 128}),
    "secret_from_env": (ppdm.secret_from_env, ["PPDM_FUZZ_UNSET"], {}),
    "read_transactions": (ppdm.read_transactions, [["a,b", "b", ""]], {"sep": ","}),
    "spiral_key": (ppdm.spiral_key, [["x", "y"]], {"bounds": {"x": (0, 1), "y": (0, 1)}, "secret": SECRET}),
    "apply_spiral_key": (ppdm.apply_spiral_key, [_A, _KEY], {}),
    "invert_spiral_key": (ppdm.invert_spiral_key, [_A, _KEY], {}),
    "BudgetAccountant": (ppdm.BudgetAccountant, [1.0], {}),
    "BudgetAccountant.spend": (ppdm.BudgetAccountant(1e9).spend, [0.1, "release"], {}),
    "datasets.agrawal": (ppdm.datasets.agrawal, [20, 1], {"seed": 0}),
    "datasets.generated_baskets": (ppdm.datasets.generated_baskets, [20], {"seed": 0}),
    "datasets.normalise": (ppdm.datasets.normalise, [_A, ["x"]], {"low": 0.0, "high": 1.0}),
    "duckdb.spiral_macro_sql": (ppdm_duckdb.spiral_macro_sql, [_KEY], {"name": "perturb"}),
    "duckdb.register_spiral_key": (
        lambda *a, **k: ppdm_duckdb.register_spiral_key(duckdb.connect(), *a, **k),
        [_KEY],
        {"name": "perturb"},
    ),
    "duckdb.rr_disguise_batches": (
        lambda *a, **k: ppdm_duckdb.rr_disguise_batches(
            duckdb.connect(), "SELECT true AS b, range AS id FROM range(5)", *a, **k
        ).read_all(),
        ["b"],
        {"p": 0.75, "secret": SECRET, "key": "id", "batch_rows": 2},
    ),
}

SMALL = {"bins", "k", "bits", "batch_rows"}


@pytest.mark.fuzz
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@given(data=st.data())
def test_function_keeps_the_contract(name: str, data: st.DataObject) -> None:
    function, args, kwargs = FUNCTIONS[name]
    args, kwargs = list(args), dict(kwargs)
    slots = [*range(len(args)), *kwargs]
    for slot in data.draw(st.lists(st.sampled_from(slots), max_size=2, unique=True)) if slots else []:
        small = slot in SMALL
        value = data.draw(st.sampled_from([None, 0, 1, -1, 2, "3", np.int64(2)]) if small else hostile())
        if isinstance(slot, int):
            args[slot] = value
        else:
            kwargs[slot] = value
    checked(name, lambda: function(*args, **kwargs), names=[*kwargs, "columns", "frame", "x", "y"])


@pytest.mark.fuzz
@given(data=st.data())
def test_chains_keep_the_contract(data: st.DataObject) -> None:
    """One function's output into the next: disguise -> support / itemsets -> rules -> scores;
    noise -> reconstruction / covariance / PCA -> stripping audit; ECDF -> linkage audit;
    spiral -> invert -> known-IO attack."""
    frame, slots = data.draw(frames({"a": "bool", "b": "bool", "x": "num", "y": "num"}))
    a, b, x, y = (slots[s] for s in "abxy")
    chain = data.draw(st.sampled_from(["rules", "noise", "ecdf", "spiral"]))

    def run() -> Any:
        if chain == "rules":
            published = ppdm.rr_disguise(frame, [a, b], p=0.8, secret=SECRET)
            frequent = ppdm.rr_frequent_itemsets(published, [a, b], p=0.8, min_support=0.0)
            rules = ppdm.association_rules(frequent, min_confidence=0.0)
            ppdm.rr_support(published, [a, b], p=0.8)
            return ppdm.rule_scores(
                rules, ppdm.rr_apriori(frame, [a, b], p=1.0, min_support=0.0, min_confidence=0.0)
            )
        if chain == "noise":
            noisy = ppdm.add_noise(frame, [x, y], scale=0.5, secret=SECRET)
            ppdm.reconstruct_distribution(noisy, x, scale=0.5, bins=5, bounds=(-1, 1), max_iter=20)
            ppdm.estimate_covariance(noisy, [x, y], scale=0.5)
            ppdm.pca_reconstruct(noisy, [x, y], scale=0.5)
            return ppdm.audit.pca_noise_stripping(frame, noisy, [x, y], scale=0.5)
        if chain == "ecdf":
            released = ppdm.ecdf_resample(frame, [x, y], bins=5, secret=SECRET)
            return ppdm.audit.rank_linkage(frame, released, [x, y])
        released, key = ppdm.spiral(frame, [x, y], bounds="data", secret=SECRET, return_key=True)
        restored = ppdm.invert_spiral_key(released, key)
        return ppdm.audit.known_io_attack(
            frame.select(pl.col(x, y).cast(pl.Float64)).to_numpy()[:3],
            restored.select(pl.col(x, y).cast(pl.Float64)).to_numpy()[:3],
        )

    checked(f"chain.{chain}", run, names=[a, b, x, y, "columns", "frame"])
