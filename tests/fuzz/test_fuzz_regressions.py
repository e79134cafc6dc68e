"""The fuzz suite's findings that were fixed: each minimal case, kept as a plain test (each
failed before its fix), and the known findings still open (each must still reproduce: an
entry whose fix has landed must leave KNOWN_FINDINGS)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from fuzz_contract import ALLOWED_WARNINGS, KNOWN_FINDINGS, Finding, describe, violation_of_error

import polars_ppdm as ppdm
from polars_ppdm import InvalidParameterError

FIXED: dict[str, tuple[Any, str]] = {
    # Polars 1.34: Series.is_between (gt_eq) is missing for UInt128, and the out-of-range
    # message of a binary column failed inside ("does not have gt_eq operator").
    "a UInt128 binary column with a value above 2^127": (
        lambda: ppdm.rr_disguise(
            pl.DataFrame({"x": pl.Series([None, 2**127], dtype=pl.UInt128), "k": [1, 2]}),
            "x",
            p=0.8,
            secret=1,
            key="k",
        ),
        "'x' of rr_disguise",
    ),
    # Polars 1.34 (the declared minimum): is_in([0, 1]) on a UInt128 column above 2^127 raised
    # "conversion from u128 to i128 failed" from inside pattern_rules' binary check.
    "a UInt128 column above 2^127 as a binary item": (
        lambda: ppdm.pattern_rules(
            pl.DataFrame({"x": pl.Series([None, 2**127], dtype=pl.UInt128), "y": [True, None], "f": [0, 0]}),
            ["x", "y"],
            frequency="f",
            min_confidence=0.5,
        ),
        "'x' of pattern_rules has null values",
    ),
    "categories not a list": (
        lambda: ppdm.rr_disguise(pl.DataFrame({"x": [True, False]}), "x", p=0.7, secret=1, categories=True),
        "'categories' parameter of rr_disguise .* must be a list",
    ),
    "categories not of the column's dtype": (
        lambda: ppdm.rr_disguise(
            pl.DataFrame({"x": pl.Series([1, 2], dtype=pl.Int8)}),
            "x",
            epsilon=1.0,
            secret=1,
            categories=["a", "b"],
        ),
        "'categories' parameter of rr_disguise \\(column 'x'\\) must hold values of the column's dtype Int8",
    ),
    "categories not of the column's dtype, rr_support": (
        lambda: ppdm.rr_support(
            pl.DataFrame({"x": pl.Series([1], dtype=pl.Int8)}), "x", p=0.7, categories=["a", "b"]
        ),
        "'categories' parameter of rr_support",
    ),
    "a list as the key of a DP release": (
        lambda: ppdm.dp_histogram(
            pl.DataFrame({"x": [0.5], "k": [1]}), "x", bounds=(0, 1), epsilon=1.0, secret=1, key=["k"]
        ),
        "'key' parameter of dp_histogram",
    ),
    "an expression as a choice": (
        lambda: ppdm.dp_kmeans(
            pl.DataFrame({"a": [0.1], "b": [0.2]}),
            ["a", "b"],
            k=2,
            epsilon=1.0,
            bounds=[(0, 1)] * 2,
            method=pl.lit(1),
        ),
        "'method' parameter of dp_kmeans must be one of",
    ),
    "items not a list": (
        lambda: ppdm.transactions_to_onehot(pl.DataFrame({"t": [["a"]]}), "t", items=True),
        "'items' parameter of transactions_to_onehot",
    ),
    "bounds whose width overflows": (
        lambda: ppdm.dp_histogram(
            pl.DataFrame({"x": [0.5]}), "x", bounds=(-1e308, 1e308), epsilon=1.0, secret=1
        ),
        "'bounds' parameter of dp_histogram \\(column 'x'\\) must be finite with low < high",
    ),
    "bounds of strings": (
        lambda: ppdm.dp_histogram(
            pl.DataFrame({"x": [0.5]}), "x", bounds={"x": ("0", "1")}, epsilon=1.0, secret=1
        ),
        "'bounds' parameter of dp_histogram \\(column 'x'\\) must be a \\(low, high\\) pair of numbers",
    ),
    "a subnormal epsilon split over a DP tree": (
        lambda: ppdm.dp_quadtree(
            pl.DataFrame({"x": [0.1, 0.2], "y": [0.3, 0.4]}),
            ["x", "y"],
            epsilon=5e-324,
            bounds=[(0, 1)] * 2,
            secret=1,
        ),
        "'epsilon' parameter of dp_quadtree is too small",
    ),
    "a noise scale whose reach overflows": (
        lambda: ppdm.reconstruct_distribution(
            pl.DataFrame({"x": [0.0, 0.5]}), "x", scale=1e308, bounds=(0, 1)
        ),
        "'scale' parameter of reconstruct_distribution",
    ),
}


@pytest.mark.parametrize("case", FIXED)
def test_a_fixed_finding_is_a_clear_error(case: str) -> None:
    call, message = FIXED[case]
    with pytest.raises(InvalidParameterError, match=message):
        call()


def test_a_128_bit_binary_column_is_encoded() -> None:
    frame = pl.DataFrame({"a": pl.Series([1, 0, 1, 0], dtype=pl.Int128), "y": [True, False, True, False]})
    tree = ppdm.rr_id3(frame, ["a"], "y", p=1.0)
    assert ppdm.rr_accuracy(tree, frame, p=1.0) == 1.0


def test_far_points_in_tiny_bounds_do_not_overflow() -> None:
    frame = pl.DataFrame({"a": [1e10, -1e10, 0.0] * 5, "b": [0.0, 1e10, 5e-301] * 5})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        leaves = ppdm.dp_quadtree(
            frame,
            ["a", "b"],
            bounds=[(0, 1e-300)] * 2,
            epsilon=1e9,
            max_height=2,
            secret=ppdm.Secret.for_tests(1),
        )
    assert leaves.height > 0


def test_subnormal_noise_scale_reconstructs_without_warning() -> None:
    frame = pl.DataFrame({"x": [0.0, 0.0, 0.5]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ppdm.reconstruct_distribution(frame, "x", scale=5e-324, bins=8, bounds=(0, 1), max_iter=30)
    assert out["frequency"].to_list()[0] == pytest.approx(2 / 3)


def test_a_subnormal_variance_below_its_noise_warns_without_overflow() -> None:
    """The fuzz suite's slow profile found it: Var(Y) ~ 1e-322, so its standard error is
    subnormal and 'how many standard errors below 0' overflowed in NumPy's division."""
    frame = pl.DataFrame({"x": [0.0, 0.0], "a b": [0.0, 1.3058e-161]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ppdm.estimate_covariance(frame, ["x", "a b"], scale=1.0)
    assert [type(w.message) for w in caught] == [ppdm.EstimateWarning] * 2
    assert "inf standard errors below 0" in str(caught[1].message)


def test_a_value_near_the_float_maximum_gets_noise_without_warning() -> None:
    """The fast fuzz profile found it in SQL: ppdm_add_noise(1e308, 2.0, ...) raised
    NumPy's "overflow encountered in divide" from the grid rounding (1e308 / 2^-23)."""
    import duckdb

    import polars_ppdm.duckdb

    hex_secret = "'d1ce5eed3a9c1d7f2b4e6085a1c3d5e7f90b2d4c6e8f0a1b3c5d7e9f1a2b4c6d'"
    frame = pl.DataFrame({"x": [1e308, -1.7e308, 1.0]})
    con = polars_ppdm.duckdb.register(duckdb.connect())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ((value,),) = con.sql(f"SELECT ppdm_add_noise(1e308, 2.0, {hex_secret}, 1, 's')").fetchall()
        noisy = ppdm.add_noise(frame, "x", scale=2.0, secret=1)["x"].to_list()
        # The review's case: the sum itself overflows (a scale near the float maximum).
        ((summed,),) = con.sql(
            f"SELECT ppdm_add_noise(1.7976931348623157e308, 1e307, {hex_secret}, 1, 's')"
        ).fetchall()
        far = ppdm.add_noise(frame, "x", scale=1e307, secret=1)["x"].to_list()
    assert value == 1e308  # past 2^52 grid steps: kept as the float it is
    assert noisy[:2] == [1e308, -1.7e308] and noisy[2] != 1.0
    # A sum past the float maximum is released as the float it rounds to (inf), never NaN.
    assert not math.isnan(summed)
    assert not any(math.isnan(v) for v in far) and far[2] != 1.0


def test_a_numpy_unsigned_epsilon_does_not_wrap() -> None:
    frame = pl.DataFrame({"x": ["a", "b"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ppdm.rr_support(frame, "x", epsilon=np.uint64(2**64 - 1), categories=["a", "b", "c"])
    assert out["frequency"].to_list() == [0.5, 0.5, 0.0]


@pytest.mark.parametrize(
    "finding", [f for f in KNOWN_FINDINGS if not f.function.startswith("memory:")], ids=lambda f: f.id
)
def test_every_known_finding_still_reproduces(finding: Finding) -> None:
    """Delete the entry from KNOWN_FINDINGS when this fails: its fix has landed.  (The
    memory findings are re-run in a subprocess by test_fuzz_memory.py under the slow
    profile: a fixed one passes there, and its entry goes.)"""
    import polars_ppdm.duckdb  # noqa: F401 -- repros may use ppdm.duckdb

    namespace = {"ppdm": ppdm, "pl": pl, "np": np}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(finding.repro, namespace)
        except Exception as exc:
            raw = [w for w in caught if not issubclass(w.category, ALLOWED_WARNINGS)]
            why = violation_of_error(exc, expression=finding.function.startswith("expr."))
            assert why is not None or raw, (
                f"{finding.id} is fixed ({describe(exc)}): delete it from KNOWN_FINDINGS"
            )
            return
    raw = [w for w in caught if not issubclass(w.category, ALLOWED_WARNINGS)]
    assert raw, f"{finding.id} no longer reproduces: delete it from KNOWN_FINDINGS"


@pytest.mark.parametrize("dtype", [pl.Int128, pl.UInt128])
def test_a_128_bit_column_with_nulls_is_disguised_with_its_nulls(dtype) -> None:
    """Polars 1.34 has no Series.scatter for 128-bit integers ("not yet implemented for
    dtype: i128"): the nulls are put back by when/then."""
    frame = pl.DataFrame({"x": pl.Series([1, None, 0] * 3, dtype=dtype), "k": range(9)})
    out = frame.with_columns(pl.col("x").ppdm.rr_disguise(p=0.8, secret=ppdm.Secret.for_tests(1), key="k"))
    assert out["x"].dtype == dtype and out["x"].is_null().to_list() == [False, True, False] * 3
