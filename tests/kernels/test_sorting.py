"""The kernels' sorts: NumPy's and Polars' paths give the same bits (the rank order of
ecdf_resample with and without ties), whichever the machine picks."""

from __future__ import annotations

import numpy as np
import pytest

from polars_ppdm.kernels import sorting
from polars_ppdm.kernels.ecdf import rank_order, shuffle_order

SECRET = bytes(range(16))
N = 3 * 4096 + 17  # above SMALL as set below: the large-array paths run


@pytest.fixture(autouse=True)
def _small_is_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sorting, "SMALL", 4096)


def _lexsort_rank(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    from polars_ppdm.kernels.ecdf import tie_words

    return np.lexsort((tie_words(SECRET, 5, keys), values + 0.0))


@pytest.mark.parametrize("path", ["numpy", "polars"])
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


@pytest.mark.parametrize("path", ["numpy", "polars"])
def test_shuffle_order_same_bits_on_each_path(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    from polars_ppdm.kernels.prf import first_words

    monkeypatch.setenv("PPDM_SORT", path)
    want = np.argsort(first_words(SECRET, 9, np.arange(N, dtype=np.uint64)), kind="stable")
    assert (shuffle_order(SECRET, 9, N) == want).all()


@pytest.mark.parametrize("path", ["numpy", "polars"])
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
