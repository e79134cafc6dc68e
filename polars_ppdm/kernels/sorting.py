"""The kernels' large sorts, on whichever of NumPy's, Polars' and the compiled sort is fast on this CPU.

Why not just ``np.sort``: NumPy dispatches its sort on the CPU's instruction sets
(x86-simd-sort for AVX-512 or AVX2, else its own introsort), and its speed swings with
that by 3-6x from machine to machine -- 10M float64 in 0.70 s with AVX-512 dispatch and
0.11 s without on one VM, 0.22 s with AVX2 and 0.81 s without on another -- while Polars'
sort (Rust, the same code everywhere) took 0.2-0.4 s on both.  So :func:`sort_words` times
both once per process on a sample and keeps the faster; :func:`stable_arg_sort` uses
Polars, whose stable arg-sort beat NumPy's timsort on every machine measured.

The ECDF sorts *prefixed* words: a value's key prefix above the row index, written in
row order, so that the low bits already ascend along the array.  The compiled kernels
(when installed) add a third path for those, a radix sort by the prefix alone (four
passes for 10M rows, the same code on every CPU): 0.28 s for 10M words on this project's
VM, where NumPy took 0.24 s with its AVX2 sort and 0.8-1.2 s without, and Polars 0.45 s.
Prefixed sorts are timed on a prefixed sample, among all three.

The bits never depend on the choice: :func:`sort_words` sorts integers (every correct
sort gives the same array), and :func:`stable_arg_sort` is stable by contract
(``maintain_order=True``), so equal keys keep their positions, as NumPy's
``kind="stable"`` keeps them.  Arrays go in and come out as NumPy arrays; Polars only
borrows the buffers (``pl.Series`` of a NumPy array copies nothing).

``PPDM_SORT=numpy``, ``polars`` or ``radix`` forces one path (read at call time: tests
and benchmarks compare them; ``radix`` serves prefixed sorts with the compiled kernels
installed); anything else, or unset, measures.

Examples
--------
>>> words = np.array([5, 1, 4, 1], dtype=np.uint64)
>>> sort_words(words)
>>> words.tolist()
[1, 1, 4, 5]
>>> stable_arg_sort(np.array([3, 1, 3, 1])).tolist()
[1, 3, 0, 2]
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from polars_ppdm.kernels import _native

__all__ = ["SMALL", "sort_path", "sort_words", "stable_arg_sort"]

#: Below this many elements NumPy sorts without asking: a sort of fewer takes under ~50 ms
#: on any path, and the one-time measurement (~25 ms on an idle 2-core VM) would not pay.
SMALL = 1 << 20

#: Elements of the calibration sample: large enough to leave the caches, small enough
#: (a few ms per sort) to be paid once per process without notice.
_SAMPLE = 1 << 18

_lock = threading.Lock()
_measured: dict[bool, str] = {}  # prefixed or not -> the path measured fastest

#: Low bits of the prefixed calibration sample (its row index): _SAMPLE rows.
_SAMPLE_BITS = (_SAMPLE - 1).bit_length()


def sort_path(*, prefixed: bool = False) -> str:
    """``"numpy"``, ``"polars"`` or (for prefixed words, with the compiled kernels)
    ``"radix"``: the path :func:`sort_words` takes for large arrays (``PPDM_SORT`` when it
    names one available, else the fastest one measured on this machine).

    Examples
    --------
    >>> sort_path() in ("numpy", "polars")
    True
    """
    paths = _paths(prefixed)
    forced = os.environ.get("PPDM_SORT", "").strip().lower()
    if forced in paths:
        return forced
    measured = _measured.get(prefixed)
    if measured is None or measured not in paths:
        # Measured outside the lock: Polars' sort runs on Polars' thread pool, whose workers
        # may be the very threads waiting here (map_batches), so holding the lock over it
        # could deadlock.  Threads that ask together may each measure; the first published
        # result stands (any answer gives the same bits).
        measured = _calibrate(paths, _SAMPLE_BITS if prefixed else 0)
        with _lock:
            if _measured.get(prefixed) in paths:
                measured = _measured[prefixed]
            else:
                _measured[prefixed] = measured
    return measured


def _paths(prefixed: bool) -> tuple[str, ...]:
    return ("numpy", "polars", "radix") if prefixed and _native.NATIVE is not None else ("numpy", "polars")


def _calibrate(paths: tuple[str, ...], low_bits: int) -> str:
    """Time the sorts on the same random words (prefixed by their index above ``low_bits``
    when it is not 0), in turn, best of two each (a shared machine's noise hits all alike)."""
    words = np.random.default_rng(0).integers(0, 2**63, _SAMPLE, dtype=np.uint64)
    if low_bits:
        words = (words >> np.uint64(low_bits) << np.uint64(low_bits)) | np.arange(_SAMPLE, dtype=np.uint64)
    best = dict.fromkeys(paths, float("inf"))
    for _ in range(2):
        for path in best:
            trial = words.copy()
            started = time.perf_counter()
            _SORTS[path](trial, low_bits, None)
            best[path] = min(best[path], time.perf_counter() - started)
    return min(best, key=best.__getitem__)


def _numpy_sort(words: np.ndarray, low_bits: int, scratch: np.ndarray | None) -> None:
    words.sort()


def _polars_sort(words: np.ndarray, low_bits: int, scratch: np.ndarray | None) -> None:
    # Imported here: the kernels borrow Polars' sort on NumPy buffers and know nothing
    # else of it (DESIGN.md: kernels import no dataframe library at module level).
    import polars as pl

    words[:] = pl.Series(words).sort().to_numpy()


def _radix_sort(words: np.ndarray, low_bits: int, scratch: np.ndarray | None) -> None:
    native = _native.NATIVE
    if native is None or words.dtype != np.uint64 or not words.flags.c_contiguous:
        words.sort()  # the kernels were switched off since the path was chosen
        return
    scratch = np.empty_like(words) if scratch is None else scratch
    native.radix_sort_words(words, scratch, low_bits)


_SORTS = {"numpy": _numpy_sort, "polars": _polars_sort, "radix": _radix_sort}


def sort_words(words: np.ndarray, *, low_bits: int = 0, scratch: np.ndarray | None = None) -> None:
    """Sort the 1-D integer array ``words`` ascending, in place, on the fastest path
    (:func:`sort_path`); arrays below :data:`SMALL` always on NumPy.

    ``low_bits``: the words' lowest ``low_bits`` bits already ascend along the array (a
    row index below a key's prefix); then the compiled radix sort is a candidate, sorting
    by the bits above them alone.  Any correct sort gives the same
    array when that holds; the caller guarantees it.  ``scratch``: a uint64 array as long
    as ``words`` the radix sort may use (it allocates one otherwise).

    Examples
    --------
    >>> words = np.random.default_rng(1).integers(0, 2**63, 100_000, dtype=np.uint64)
    >>> want = np.sort(words)
    >>> sort_words(words)
    >>> bool((words == want).all())
    True
    """
    path = "numpy" if len(words) < SMALL else sort_path(prefixed=low_bits > 0)
    _SORTS[path](words, low_bits, scratch if scratch is None or scratch.dtype == np.uint64 else None)


def stable_arg_sort(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` (int64 indices) of the 1-D integer ``keys``,
    from Polars' stable arg-sort for large arrays (floats go to NumPy: Polars orders
    -0.0 before 0.0, NumPy counts them equal).

    Examples
    --------
    >>> keys = np.random.default_rng(2).integers(0, 50, 100_000)
    >>> bool((stable_arg_sort(keys) == np.argsort(keys, kind="stable")).all())
    True
    """
    if (
        len(keys) < SMALL
        or keys.dtype.kind not in "iu"
        or os.environ.get("PPDM_SORT", "").strip().lower() == "numpy"
    ):
        return np.argsort(keys, kind="stable")
    import polars as pl

    frame = pl.DataFrame({"k": keys})
    order = frame.select(pl.arg_sort_by("k", maintain_order=True)).to_series()
    return order.cast(pl.Int64).to_numpy()
