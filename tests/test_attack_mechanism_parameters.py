"""Attacks on the perturbations' parameters and on the floats they release.

* Two ``add_noise`` releases of one value at two scales shared their draw ``z``:
  ``x = (s2 y1 - s1 y2) / (s2 - s1)`` gave every value back exactly (to 1e-10).
* Two randomized-response releases of one value at two keep probabilities shared their
  uniform: where the two releases differed, the one with the larger p was always the
  truth (no finite epsilon).
* A uniform ``add_noise`` output ``y`` is ``x + (2u - 1) a`` with ``u`` on a 2**-53
  lattice: where ``x + r`` is exact, ``y - x`` must lie on the lattice ``a 2**-52``,
  which told two candidate originals apart in 95% of rows (the range alone: 30%).
* A computed expression without ``stream=`` took its first column's stream and shared
  that column's coins: ``income.clip(upper_bound=c)`` was released bit for bit as
  ``income`` exactly where ``income <= c``.

Each test runs the attack and checks that it does no better than the mechanism allows,
within 5 standard errors.
"""

from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError

SECRET = ppdm.Secret.for_tests(11)
HEX = "00112233445566778899aabbccddeeff"


def within_5_se(share: float, expected: float, n: int) -> bool:
    return abs(share - expected) <= 5 * math.sqrt(expected * (1 - expected) / n)


def _solve_two_scales(y1: np.ndarray, y2: np.ndarray, s1: float, s2: float) -> np.ndarray:
    return (s2 * y1 - s1 * y2) / (s2 - s1)


@pytest.mark.parametrize("dist", ["gaussian", "uniform"])
@pytest.mark.parametrize("path", ["frame", "expression"])
def test_two_scales_do_not_give_the_value_back(dist: str, path: str) -> None:
    n, s1, s2 = 4_000, 1.0, 3.0
    x = np.round(np.random.default_rng(1).normal(50, 10, n), 2)
    df = pl.DataFrame({"id": np.arange(n), "v": x})

    def release(scale: float) -> np.ndarray:
        if path == "frame":
            out = ppdm.add_noise(df, "v", dist=dist, scale=scale, secret=SECRET, key="id")
        else:
            out = df.with_columns(pl.col("v").ppdm.add_noise(dist=dist, scale=scale, secret=SECRET, key="id"))
        return out["v"].to_numpy()

    error = _solve_two_scales(release(s1), release(s2), s1, s2) - x
    # Independent draws: the error has sd s1 s2 sqrt(2) / (s2 - s1) (~2.1); |error| < 0.005
    # has probability < 0.002 (uniform: less). Shared draws: every row.
    assert float(np.mean(np.abs(error) < 0.005)) < 0.002 + 5 * math.sqrt(0.002 / n)


def test_two_scales_in_sql_do_not_give_the_value_back() -> None:
    n = 4_000
    df = pl.DataFrame({"id": np.arange(n), "v": np.round(np.random.default_rng(2).normal(50, 10, n), 2)})
    con = ppdm.duckdb.register(duckdb.connect())
    con.register("df", df)
    got = con.sql(
        f"SELECT v, ppdm_add_noise(v, 1.0, '{HEX}', id, 'v') AS y1, ppdm_add_noise(v, 3.0, '{HEX}', id, 'v') AS y2 "
        "FROM df"
    ).pl()
    error = _solve_two_scales(got["y1"].to_numpy(), got["y2"].to_numpy(), 1.0, 3.0) - got["v"].to_numpy()
    assert float(np.mean(np.abs(error) < 0.005)) < 0.002 + 5 * math.sqrt(0.002 / n)


P1, P2 = 0.6, 0.9
# Independent coins, a true value: where the releases differ, the p2 release is the
# truth with probability p2 (1 - p1) / (p2 (1 - p1) + p1 (1 - p2)).
TRUTHFUL_WHERE_THEY_DIFFER = P2 * (1 - P1) / (P2 * (1 - P1) + P1 * (1 - P2))


def _differing_truthful(first: np.ndarray, second: np.ndarray, truth: np.ndarray) -> tuple[float, int]:
    differ = first != second
    return float((second[differ] == truth[differ]).mean()), int(differ.sum())


@pytest.mark.parametrize("path", ["frame (compiled Boolean)", "expression", "k-ary", "sql"])
def test_two_keep_probabilities_do_not_tell_which_release_is_true(path: str) -> None:
    n = 20_000
    truth = np.random.default_rng(3).integers(0, 3, n)
    df = pl.DataFrame({"id": np.arange(n), "b": truth == 1, "k": truth})

    def release(p: float) -> np.ndarray:
        if path == "frame (compiled Boolean)":
            return ppdm.rr_disguise(df, "b", p=p, secret=SECRET, key="id")["b"].to_numpy()
        if path == "expression":
            return df.select(pl.col("b").ppdm.rr_disguise(p=p, secret=SECRET, key="id"))["b"].to_numpy()
        if path == "k-ary":
            return df.select(
                pl.col("k").ppdm.rr_disguise(p=p, secret=SECRET, key="id", categories=[0, 1, 2])
            )["k"].to_numpy()
        con = ppdm.duckdb.register(duckdb.connect())
        return con.sql(f"SELECT ppdm_rr_disguise(b, {p}, '{HEX}', id, 'b') AS b FROM df").pl()["b"].to_numpy()

    first, second = release(P1), release(P2)
    if path == "k-ary":
        # A lie is one of the 2 others: two independent releases differ where either lies
        # and not both to the same value.
        differ = first != second
        lie1, lie2 = 1 - P1, 1 - P2
        p_differ = 1 - (P1 * P2 + lie1 * lie2 / 2)
        assert within_5_se(float(differ.mean()), p_differ, n)
        share, count = _differing_truthful(first, second, truth)
        assert within_5_se(share, P2 * lie1 / p_differ, count)
        return
    share, count = _differing_truthful(first, second, truth == 1)
    assert within_5_se(share, TRUTHFUL_WHERE_THEY_DIFFER, count)


def _on_noise_lattice(y: float, x: float, a: float) -> bool:
    """Whether some uniform draw (2u - 1) a, u on the 2**-53 lattice, gives y from x
    exactly (the attack on unrounded outputs): y - x within y's half-ulp of a multiple
    of a 2**-52 inside [-a, a)."""
    step = Fraction(a) / 2**52
    half_ulp = Fraction(math.ulp(y)) / 2
    low = math.ceil((Fraction(y) - half_ulp - Fraction(x)) / step)
    high = math.floor((Fraction(y) + half_ulp - Fraction(x)) / step)
    return max(low, -(2**52)) <= min(high, 2**52 - 1)


def test_the_low_bits_of_uniform_noise_do_not_tell_two_candidates_apart() -> None:
    # The attack: say "c" where only the candidate c fits the noise lattice, on the rows
    # the range alone leaves open (both candidates within a of the output).  Without
    # information in the low bits, how often it says "0.1" or "0.7" cannot depend on the
    # truth, so its hit rates under the two truths add up to at most 1 (before the
    # rounding: 0.95 each).
    n, a, candidates = 4_000, 1.0, (0.1, 0.7)
    hits = []
    for truth in candidates:
        other = candidates[1] if truth == candidates[0] else candidates[0]
        df = pl.DataFrame({"id": np.arange(n), "v": np.full(n, truth)})
        y = ppdm.add_noise(df, "v", dist="uniform", scale=a, secret=SECRET, key="id")["v"].to_numpy()
        # Released on the grid 2**-24 of the scale's power of two.
        assert np.array_equal(y * 2.0**24, np.rint(y * 2.0**24))
        y = y[(np.abs(y - truth) <= a) & (np.abs(y - other) <= a)]
        fits_truth = np.array([_on_noise_lattice(float(v), truth, a) for v in y])
        fits_other = np.array([_on_noise_lattice(float(v), other, a) for v in y])
        hits.append((float(np.mean(fits_truth & ~fits_other)), len(y)))
    (first, n1), (second, n2) = hits
    assert first + second <= 1 + 5 * math.sqrt(0.25 / n1 + 0.25 / n2)


def test_a_computed_expression_needs_its_own_stream() -> None:
    df = pl.DataFrame({"id": np.arange(8), "income": [10.0, 70.0, 20.0, 90.0, 30.0, 40.0, 80.0, 5.0]})
    clipped = pl.col("income").clip(upper_bound=60.0)
    with pytest.raises(InvalidParameterError, match=r"computed expression .* needs stream="):
        df.select(clipped.ppdm.add_noise(scale=1.0, secret=SECRET, key="id"))
    with pytest.raises(InvalidParameterError, match="the stream of the column 'income' itself"):
        df.select((pl.col("income") > 50).ppdm.rr_disguise(p=0.7, secret=SECRET, key="id"))
    # Named, it draws its own noise: no row equals the plain column's release.
    plain = df.select(pl.col("income").ppdm.add_noise(scale=1.0, secret=SECRET, key="id"))["income"]
    own = df.select(clipped.ppdm.add_noise(scale=1.0, secret=SECRET, key="id", stream="income clipped"))[
        "income"
    ]
    assert not (plain == own).any()
    # A renamed column is still the column: its default stream is its (new) name.
    renamed = df.select(pl.col("income").alias("pay").ppdm.add_noise(scale=1.0, secret=SECRET, key="id"))
    assert renamed.columns == ["pay"]


def _two_nights(n: int = 5_000) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(8)
    first = pl.DataFrame({"id": np.arange(n), "age": np.round(rng.normal(50, 12, n), 1)})
    # One respondent's age changed from 30 to 75 between the nights.
    second = first.with_columns(age=pl.when(pl.col("id") == 7).then(75.0).otherwise(pl.col("age")))
    return first.with_columns(age=pl.when(pl.col("id") == 7).then(30.0).otherwise(pl.col("age"))), second


@pytest.mark.parametrize("engine", ["polars", "sql"])
def test_two_nights_of_ecdf_resampling_do_not_show_the_changed_value(engine: str) -> None:
    # Under one key for all data the sorted releases were bit-identical outside the span
    # from the old value's bin to the new one's: the change, located. Keyed by the
    # column's values, the second night is a fresh sample (equal only where both draws
    # fell in the minimum's point mass), and the same night reproduces itself.
    first, second = _two_nights()

    def release(frame: pl.DataFrame) -> np.ndarray:
        if engine == "polars":
            return ppdm.ecdf_resample(frame, "age", bins=20, secret=SECRET, key="id")["age"].sort().to_numpy()
        con = ppdm.duckdb.register(duckdb.connect())
        con.register("survey", frame)
        return con.sql(f"FROM ppdm_ecdf_resample('survey', 'age', 'id', 20, '{HEX}')").pl()["age"].sort().to_numpy()

    one, other, again = release(first), release(second), release(first)
    assert np.array_equal(one, again)
    minimum = float(first["age"].min())
    shared = (one == other) & (one != minimum)
    assert int(shared.sum()) == 0


def test_categories_in_another_order_draw_independent_coins() -> None:
    # Keyed by the value's code (its position), b in [a, b, c] and in [c, b, a] shared its
    # keep coin and its replacement: the outputs (a, a) never came from a true b.
    n = 40_000
    truth = np.random.default_rng(9).choice(["a", "b", "c"], n)
    df = pl.DataFrame({"id": np.arange(n), "c": truth})

    def release(categories: list[str]) -> np.ndarray:
        return ppdm.rr_disguise(df, "c", p=0.5, categories=categories, secret=SECRET, key="id")["c"].to_numpy()

    first, second = release(["a", "b", "c"]), release(["c", "b", "a"])
    true_b = truth == "b"
    both_a = float(np.mean((first[true_b] == "a") & (second[true_b] == "a")))
    assert within_5_se(both_a, 0.25 * 0.25, int(true_b.sum()))  # a lie to a: 0.5 x 1/2, twice


@pytest.mark.parametrize("scale", [5e-324, 1e-320, 2.0**-999])
def test_a_scale_with_no_grid_below_it_is_refused(scale: float) -> None:
    # noise_grid(scale) is 0 or subnormal there: the values went out unrounded.
    df = pl.DataFrame({"id": [1, 2], "x": [1.0, 2.0]})
    with pytest.raises(InvalidParameterError, match=r"at least 2\*\*-998"):
        ppdm.add_noise(df, "x", scale=scale, secret=SECRET, key="id")
    with pytest.raises(InvalidParameterError, match=r"at least 2\*\*-998"):
        df.select(pl.col("x").ppdm.add_noise(scale=scale, secret=SECRET, key="id"))
