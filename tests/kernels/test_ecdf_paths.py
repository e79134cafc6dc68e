"""The ECDF resampling's fast paths give the bits they gave before them (issue 30).

The digests below were taken from ``ecdf_resample`` before the passes were fused (the
order keys packed in the same pass, the sample scattered slice by slice, the workspace's
sample sharing the keys' memory, one row index for every thread), and renewed once, with
the same bits on every path, when every draw came under the column's own key
(``perturb.ecdf.column_key``): any change of bits fails here.  The table is above :data:`polars_ppdm.kernels.sorting.SMALL`, so the large
sorts take the measured (or forced) path, and it has a mostly tied column (the tie-word
path), -0.0 and 0.0, nulls, a key column and several columns for the thread pool.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
import polars_ppdm.perturb.ecdf as front
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.ecdf import Workspace, ranked_cdf, relinked_sample, smoothed_cdf, sorted_sample

SECRET = bytes(range(100, 132))

DIGESTS = {
    "rank": "e4b6b863d38e7b44e02132f05d41076f2d46c5453883a1d6a766edcbab547d2c",
    "shuffle": "6faab0b1a0fd0960884c7171aa9f4e838e9bd48b84321a13c8ba3ae76405e6c8",
    "shuffle_nulls_first": "7c4d804bdc63d2c1e178d4ab0e6c7be4851038e16d22861b2d72707c13e75e0c",
    "key": "b629a86b710d39e5b94b1fe5d83d0d03723430586fb82fc2c1f392d1a5af93da",
    "none": "84950561bdc3c660b89c59e53d579226c707014d31c0a653ba1af437fe8d3552",
}

CASES = {
    "rank": {"columns": ["x", "t", "z", "w"]},
    "shuffle": {"columns": ["x", "t", "z", "w"], "shuffle": True},
    "shuffle_nulls_first": {"columns": ["w", "x"], "shuffle": True, "bins": [7, 1000]},
    "key": {"columns": ["t", "x"], "key": "k"},
    "none": {"columns": ["x", "w"], "link": "none", "shuffle": True},
}


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    n = 1_300_000
    rng = np.random.default_rng(2026)
    x = rng.normal(size=n)
    ties = rng.integers(0, 50, n).astype(np.float64)  # mostly tied: the tie-word path
    z = rng.lognormal(size=n)
    z[rng.random(n) < 0.01] = -0.0
    z[:5] = 0.0
    with_nulls = pl.Series("w", rng.exponential(size=n)).scatter(rng.integers(0, n, n // 10), None)
    keys = rng.permutation(n).astype(np.int64) * 7
    return pl.DataFrame({"x": x, "t": ties, "z": z, "k": keys}).with_columns(with_nulls)


def digest(frame: pl.DataFrame) -> str:
    h = hashlib.sha256()
    for series in frame.get_columns():
        h.update(series.name.encode())
        h.update(series.is_null().to_numpy().tobytes())
        h.update(series.fill_null(0).to_numpy().tobytes())
    return h.hexdigest()


def run(table: pl.DataFrame, case: str) -> pl.DataFrame:
    options = dict(CASES[case])
    return ppdm.ecdf_resample(table, options.pop("columns"), secret=SECRET, **options)


@pytest.mark.parametrize("path", ["numpy", "polars", "radix"])  # radix: the compiled kernels' (else measured)
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_bits_are_pinned(table, case, path, monkeypatch):
    monkeypatch.setenv("PPDM_SORT", path)
    assert digest(run(table, case)) == DIGESTS[case]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("case", ["rank", "shuffle"])
def test_the_bits_do_not_depend_on_the_threads(table, case, workers, monkeypatch):
    """One worker runs the columns one after the other; three run them in another
    interleaving (more threads than this CI's cores): the same bits."""
    monkeypatch.setattr(front, "_workers", lambda columns: workers)
    assert digest(run(table, case)) == DIGESTS[case]


def test_the_workers_follow_polars_thread_pool():
    assert front._workers(1) == 1
    assert front._workers(1000) == pl.thread_pool_size()


@pytest.mark.parametrize("fault", ["constant", "nan"])
def test_an_error_in_a_worker_surfaces_with_its_own_message(fault):
    n = 2000
    rng = np.random.default_rng(5)
    bad = np.full(n, 3.0) if fault == "constant" else np.where(np.arange(n) == 7, np.nan, rng.random(n))
    df = pl.DataFrame({"a": rng.random(n), "b": bad, "c": rng.random(n)})
    message = "constant" if fault == "constant" else "NaN or infinite"
    with pytest.raises(InvalidParameterError, match=rf"column 'b' of ecdf_resample .*{message}"):
        ppdm.ecdf_resample(df, ["a", "b", "c"], secret=SECRET)


def test_relinked_sample_is_the_scattered_sorted_sample():
    """Several slices, the order in the workspace the sample reuses, and a second column
    through the same workspace: ``out[order] = sorted_sample(...)`` bit for bit."""
    rng = np.random.default_rng(8)
    n = 300_000
    workspace = Workspace(n)
    for values in (rng.gamma(2.0, size=n), rng.normal(size=n)):
        order, cuts, cdf = ranked_cdf(values, 40, SECRET, 3, np.arange(n, dtype=np.uint64), workspace)
        want = np.empty(n)
        want[order] = sorted_sample(SECRET, 4, n, cuts, cdf)
        assert (relinked_sample(SECRET, 4, order, cuts, cdf, workspace) == want).all()
        assert (want == relinked_sample(SECRET, 4, order.copy(), *smoothed_cdf(values, 40))).all()


def test_a_shared_index_must_cover_the_rows():
    with pytest.raises(ValueError, match="at least n \\+ 1 = 11"):
        Workspace(10, index=np.arange(10, dtype=np.uint64))
    with pytest.raises(ValueError, match="uint64"):
        Workspace(10, index=np.arange(11))
