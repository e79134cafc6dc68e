"""The frame operations of polars_ppdm as fuzz targets: what columns each reads (by role),
a valid call to start from, the parameters to mutate and what a result must keep."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import polars as pl
from fuzz_contract import SECRET, collected, rows_kept, same_kind
from fuzz_strategies import CATEGORIES

import polars_ppdm as ppdm

Slots = dict[str, str]

# Parameters that size an allocation: in-process they get small hostile values only;
# test_fuzz_memory.py gives them huge ones in a subprocess under a memory limit.
SIZE_PARAMS = {
    "bins",
    "k",
    "max_height",
    "iterations",
    "rounds",
    "max_iter",
    "components",
    "max_length",
    "max_contributions",
    "max_depth",
    "n",
    "batch_rows",
}
# Parameters that name columns: they also get names that are not (or are the wrong) columns.
NAME_PARAMS = {"columns", "key", "label", "column", "frequency", "on"}


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    roles: dict[str, str]
    base: Callable[[Slots], dict[str, Any]]
    alts: dict[str, st.SearchStrategy[Any]] = dataclasses.field(default_factory=dict)
    function: Callable[..., Any] | None = None  # default: ppdm.<name>
    namespace: bool = True  # df.ppdm.<name> / lf.ppdm.<name> exists
    keeps_kind: bool = False  # lazy in, lazy out (documented in the README)
    changed: Callable[[Slots, dict[str, Any]], list[str]] | None = None  # a perturbation: rows kept
    nulls: str = "same"

    @property
    def func(self) -> Callable[..., Any]:
        return self.function or getattr(ppdm, self.name)

    def check_result(self, frame: pl.DataFrame | pl.LazyFrame, slots: Slots, kwargs: dict[str, Any]):
        def check(result: Any) -> None:
            if self.keeps_kind:
                same_kind(frame, result[0] if isinstance(result, tuple) else result)
            if self.changed is not None:
                out = collected(result[0] if isinstance(result, tuple) else result)
                shuffled = kwargs.get("shuffle") is True
                rows_kept(
                    collected(frame),
                    out,
                    self.changed(slots, kwargs),
                    nulls="any" if shuffled else self.nulls,
                    order=not shuffled,
                )

        return check


def _cols(kwargs: dict[str, Any], name: str = "columns") -> list[str]:
    value = kwargs.get(name)
    return [value] if isinstance(value, str) else list(value) if isinstance(value, list | tuple) else []


def _changed(slots: Slots, kwargs: dict[str, Any]) -> list[str]:
    return _cols(kwargs)


p_values = st.sampled_from([0.0, 0.2, 0.5, 0.7, 1.0, np.float32(0.8), np.float64(0.9)])
eps_values = st.sampled_from([1e-9, 0.1, 1.0, 50.0, float("inf"), np.float32(1.0)])
pos_values = st.sampled_from([1e-300, 0.1, 1.0, 1e6, np.float64(2.0)])
bounds_pair = st.sampled_from([(0, 1), (-1e308, 1e308), (0.0, 0.0), (1, 0), (0, 1e-300), "data", None])

TARGETS: list[Target] = [
    Target(
        "rr_disguise",
        {"c": "bool", "k": "key"},
        lambda s: {"columns": [s["c"]], "p": 0.7, "secret": SECRET, "key": s["k"]},
        {
            "p": p_values,
            "epsilon": eps_values,
            "mode": st.sampled_from(["per_attribute", "whole_record"]),
            "categories": st.sampled_from([None, [True, False], CATEGORIES]),
        },
        keeps_kind=True,
        changed=_changed,
    ),
    Target(
        "rr_disguise_k",
        {"c": "cat", "d": "cat", "k": "key"},
        lambda s: {
            "columns": [s["c"], s["d"]],
            "epsilon": 1.0,
            "secret": SECRET,
            "key": s["k"],
            "categories": CATEGORIES,
        },
        {
            "p": p_values,
            "epsilon": eps_values,
            "categories": st.sampled_from([CATEGORIES, ["a"], ["a", "a", "b"], [], [None, "a"], [1, 2, 3]]),
        },
        function=ppdm.rr_disguise,
        namespace=False,
        keeps_kind=True,
        changed=_changed,
    ),
    Target(
        "add_noise",
        {"c": "num", "k": "key"},
        lambda s: {"columns": s["c"], "scale": 1.0, "secret": SECRET, "key": s["k"]},
        {"scale": pos_values, "dist": st.sampled_from(["gaussian", "uniform", "laplace"])},
        keeps_kind=True,
        changed=_changed,
    ),
    Target(
        "ecdf_resample",
        {"c": "num", "d": "int", "k": "key"},
        lambda s: {"columns": [s["c"], s["d"]], "bins": 10, "secret": SECRET, "key": s["k"]},
        {
            "bins": st.sampled_from([2, 3, 100, {"x": 3}, [2, 5]]),
            "link": st.sampled_from(["rank", "none"]),
            "shuffle": st.booleans(),
            "round_integers": st.booleans(),
        },
        keeps_kind=True,
        changed=_changed,
    ),
    Target(
        "spiral",
        {"a": "num", "b": "num"},
        lambda s: {"columns": [s["a"], s["b"]], "bounds": {s["a"]: (0, 1), s["b"]: (0, 1)}, "secret": SECRET},
        {
            "rounds": st.sampled_from([1, 2, 7]),
            "factors": st.sampled_from([(0.1, 5.0), (1, 1), (5.0, 0.1)]),
            "angle": st.sampled_from([(0.0, 1.0), (1.0, 1.0)]),
            "growth": st.sampled_from([None, 0.1, 0.0]),
            "bounds": st.sampled_from(["data", None]),
            "return_key": st.booleans(),
        },
        keeps_kind=True,
        changed=_changed,
        nulls="row",
    ),
    Target(
        "rr_support",
        {"c": "bool", "d": "bool"},
        lambda s: {"columns": [s["c"], s["d"]], "p": 0.8},
        {
            "p": p_values,
            "epsilon": eps_values,
            "mode": st.sampled_from(["per_attribute", "whole_record"]),
            "itemsets": st.sampled_from([None, [["x"]], []]),
        },
        keeps_kind=True,
    ),
    Target(
        "rr_support_k",
        {"c": "cat"},
        lambda s: {"columns": s["c"], "epsilon": 1.0, "categories": CATEGORIES},
        {"categories": st.sampled_from([CATEGORIES, ["a"], [], ["a", "a"]]), "epsilon": eps_values},
        function=ppdm.rr_support,
        namespace=False,
        keeps_kind=True,
    ),
    Target(
        "rr_frequent_itemsets",
        {"a": "bool", "b": "bool"},
        lambda s: {"columns": [s["a"], s["b"]], "p": 0.8, "min_support": 0.1},
        {
            "p": p_values,
            "epsilon": eps_values,
            "min_support": st.sampled_from([0.0, 1.0, 1e-300]),
            "max_length": st.sampled_from([None, 1, 2]),
        },
    ),
    Target(
        "rr_apriori",
        {"a": "bool", "b": "bool", "c": "bool"},
        lambda s: {"columns": [s["a"], s["b"], s["c"]], "p": 0.8, "min_support": 0.1, "min_confidence": 0.5},
        {
            "p": p_values,
            "epsilon": eps_values,
            "min_confidence": st.sampled_from([0.0, 1.0]),
            "mode": st.sampled_from(["per_attribute", "whole_record"]),
        },
    ),
    Target(
        "pattern_rules",
        {"a": "bool", "b": "bool", "f": "num"},
        lambda s: {"columns": [s["a"], s["b"]], "frequency": s["f"], "min_confidence": 0.5},
        {"min_support": st.sampled_from([0.0, 0.5, 1.0])},
    ),
    Target(
        "rr_id3",
        {"a": "bool", "b": "bool", "y": "bool"},
        lambda s: {"columns": [s["a"], s["b"]], "label": s["y"], "p": 0.8},
        {
            "p": p_values,
            "epsilon": eps_values,
            "mode": st.sampled_from(["per_attribute", "whole_record"]),
            "label_disguised": st.booleans(),
            "max_depth": st.sampled_from([None, 0, 1]),
            "min_support": st.sampled_from([0.0, 1.0]),
        },
    ),
    Target(
        "reconstruct_distribution",
        {"c": "num"},
        lambda s: {"column": s["c"], "scale": 1.0, "bins": 8, "bounds": (0, 1), "max_iter": 30},
        {
            "dist": st.sampled_from(["gaussian", "uniform"]),
            "bounds": bounds_pair,
            "tol": st.sampled_from([0.0, 1.0]),
        },
    ),
    Target(
        "estimate_covariance",
        {"a": "num", "b": "num"},
        lambda s: {"columns": [s["a"], s["b"]], "scale": 1.0},
        {
            "scale": st.sampled_from([0.0, 1.0, [1.0, 0.0], {"x": 1.0}]),
            "dist": st.sampled_from(["gaussian", "uniform"]),
        },
    ),
    Target(
        "pca_reconstruct",
        {"a": "num", "b": "num"},
        lambda s: {"columns": [s["a"], s["b"]], "scale": 1.0},
        {"components": st.sampled_from([None, 0, 1, 2, 3])},
        keeps_kind=True,
    ),
    Target(
        "transactions_to_onehot",
        {"t": "basket"},
        lambda s: {"column": s["t"]},
        {"items": st.sampled_from([None, ["a"], [], ["a", "a"]])},
    ),
    Target(
        "dp_histogram",
        {"c": "num", "k": "key"},
        lambda s: {"columns": s["c"], "bounds": (0, 1), "bins": 4, "epsilon": 1.0, "secret": SECRET},
        {
            "key": st.none(),
            "max_contributions": st.sampled_from([1, 2]),
            "bounds": bounds_pair,
            "accountant": st.builds(lambda: ppdm.BudgetAccountant(0.5)),
            "epsilon": eps_values,
        },
        keeps_kind=True,
    ),
    Target(
        "dp_quadtree",
        {"a": "num", "b": "num"},
        lambda s: {
            "columns": [s["a"], s["b"]],
            "bounds": [(0, 1), (0, 1)],
            "epsilon": 1.0,
            "max_height": 3,
            "secret": SECRET,
        },
        {
            "gamma": st.sampled_from([0.0, 0.3, 1.0]),
            "threshold": st.sampled_from([None, 0.0, 5.0]),
            "n": st.sampled_from([None, 0.0, 10.0]),
            "bounds": bounds_pair,
        },
    ),
    Target(
        "dp_kmeans",
        {"a": "num", "b": "num"},
        lambda s: {
            "columns": [s["a"], s["b"]],
            "k": 2,
            "epsilon": 1.0,
            "bounds": [(0, 1), (0, 1)],
            "max_height": 3,
            "iterations": 2,
            "secret": SECRET,
        },
        {"method": st.sampled_from(["quadtree", "lloyd"]), "k": st.sampled_from([1, 2, 5])},
    ),
]

TARGETS_BY_NAME = {t.name: t for t in TARGETS}
