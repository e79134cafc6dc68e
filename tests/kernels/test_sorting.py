"""The kernels' sorts: NumPy's and Polars' paths give the same bits (the rank order of
ecdf_resample with and without ties), whichever the machine picks."""

from __future__ import annotations

import numpy as np
import pytest

from polars_ppdm.kernels import _native, sorting
from polars_ppdm.kernels.ecdf import rank_order, shuffle_order

SECRET = bytes(range(16))
PATHS = ["numpy", "polars", "radix"]  # radix: the compiled kernels' (measured otherwise)
NATIVE = _native.load()
N = 3 * 4096 + 17  # above SMALL as set below: the large-array paths run


@pytest.fixture(autouse=True)
def _small_is_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sorting, "SMALL", 4096)


def _lexsort_rank(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    from polars_ppdm.kernels.ecdf import tie_words

    return np.lexsort((tie_words(SECRET, 5, keys), values + 0.0))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", ["continuous", "few values", "mostly tied"])
def test_rank_order_same_bits_on_each_path(monkeypatch: pytest.MonkeyPatch, path: str, kind: str) -> None:
    monkeypatch.setenv("PPDM_SORT", path)
    rng = np.random.default_rng(3)
    values = {
        "continuous": rng.normal(size=N),
        "few values": rng.integers(0, 7, N).astype(np.float64) - 3.0,  # -0.0 never arises; 0.0 does
        "mostly tied": np.where(rng.random(N) < 0.5, 1.0, rng.normal(size=N)),
    }[kind]
    keys = np.arange(N, dtype=np.uint64)
    assert (rank_order(values, SECRET, 5, keys) == _lexsort_rank(values, keys)).all()


@pytest.mark.parametrize("path", PATHS)
def test_shuffle_order_same_bits_on_each_path(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    from polars_ppdm.kernels.prf import first_words

    monkeypatch.setenv("PPDM_SORT", path)
    want = np.argsort(first_words(SECRET, 9, np.arange(N, dtype=np.uint64)), kind="stable")
    assert (shuffle_order(SECRET, 9, N) == want).all()


@pytest.mark.parametrize("path", PATHS)
def test_stable_arg_sort_keeps_positions(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    monkeypatch.setenv("PPDM_SORT", path)
    keys = np.random.default_rng(4).integers(-5, 5, N)
    assert (sorting.stable_arg_sort(keys) == np.argsort(keys, kind="stable")).all()
    floats = np.where(keys > 0, 0.0, -0.0)  # floats stay on NumPy: -0.0 and 0.0 tie
    assert (sorting.stable_arg_sort(floats) == np.argsort(floats, kind="stable")).all()


def test_sort_path_measures_once_and_obeys_the_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PPDM_SORT", raising=False)
    first = sorting.sort_path()
    assert first in ("numpy", "polars") and sorting.sort_path() == first
    monkeypatch.setenv("PPDM_SORT", "polars")
    assert sorting.sort_path() == "polars"
    words = np.random.default_rng(5).integers(0, 2**64 - 1, N, dtype=np.uint64)
    want = np.sort(words)
    sorting.sort_words(words)
    assert (words == want).all()


@pytest.mark.parametrize("n", [0, 1, 2, 4097, 70_001])
@pytest.mark.parametrize("low_bits", [1, 14, 17, 24, 40])
def test_radix_sort_of_prefixed_words(monkeypatch: pytest.MonkeyPatch, n: int, low_bits: int) -> None:
    """Words whose low bits ascend along the array (a row index below a prefix) come out
    as np.sort's, also with a skewed prefix (few distinct values: passes skipped)."""
    if NATIVE is None:
        pytest.skip("the compiled kernels are not installed (or PPDM_NATIVE=0)")
    monkeypatch.setattr(_native, "NATIVE", NATIVE)
    monkeypatch.setenv("PPDM_SORT", "radix")
    rng = np.random.default_rng(n + low_bits)
    index = np.arange(n, dtype=np.uint64)
    shift = np.uint64(low_bits)
    for prefix in (
        rng.integers(0, 2**63, n, dtype=np.uint64),
        rng.integers(0, 3, n, dtype=np.uint64) << np.uint64(60),
    ):
        words = (prefix >> shift << shift) | index
        want = np.sort(words)
        sorting.sort_words(words, low_bits=low_bits, scratch=np.empty(n, dtype=np.uint64))
        assert (words == want).all()


def test_radix_path_without_the_compiled_kernels_still_sorts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The radix path chosen, then the kernels switched off (PPDM_NATIVE=0 in a test, or
    an extension refused): the words are sorted on NumPy, never left unsorted."""
    monkeypatch.setattr(_native, "NATIVE", None)
    words = np.random.default_rng(6).integers(0, 2**63, N, dtype=np.uint64)
    want = np.sort(words)
    sorting._radix_sort(words, 20, None)
    assert (words == want).all()
    monkeypatch.setenv("PPDM_SORT", "radix")
    assert sorting.sort_path(prefixed=True) in ("numpy", "polars")  # not offered: measured


def test_prefixed_sorts_are_measured_among_three_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    if NATIVE is None:
        pytest.skip("the compiled kernels are not installed (or PPDM_NATIVE=0)")
    monkeypatch.setattr(_native, "NATIVE", NATIVE)
    monkeypatch.delenv("PPDM_SORT", raising=False)
    monkeypatch.setattr(sorting, "_measured", {})
    timed: list[str] = []
    sorts = dict(sorting._SORTS)
    monkeypatch.setattr(
        sorting, "_SORTS", {k: (lambda w, b, s, k=k: (timed.append(k), sorts[k](w, b, s))) for k in sorts}
    )
    chosen = sorting.sort_path(prefixed=True)
    assert set(timed) == {"numpy", "polars", "radix"} and chosen in timed
    timed.clear()
    assert sorting.sort_path() in ("numpy", "polars") and set(timed) == {"numpy", "polars"}
