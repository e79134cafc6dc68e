"""ECDF resampling with rank re-linking: the pure NumPy kernel (paper 000).

A private column is replaced by n values drawn from its smoothed, piecewise-linear
empirical CDF; each row then gets the generated value whose rank equals the rank of its
original value.  Notation of the paper: k = ``bins + 1`` equal-width cut points
``x_0 = min < x_1 < ... < x_bins = max``; ``n_0`` counts the values equal to the minimum
(the point mass), ``n_j`` the values in ``(x_{j-1}, x_j]``; a zero count becomes 1;
``F(x_j) = (n_0 + ... + n_j) / sum(n)``, linear in between.

The re-linked sample needs the generated values in ascending order: the row of rank r
gets the r-th smallest.  The inverse CDF is monotone, so that is the inverse CDF of the
r-th smallest of n keyed uniforms, which :mod:`polars_ppdm.kernels.spacings` makes
directly in rank order from exponential spacings (no sort, O(n)): value r is a function
of the secret, the stream and the draws at keys 0 .. r (and n).

References
----------
Li, Wang, Su, "ECDF-based data perturbation with rank re-linking", *Computer
Engineering* 2012 (paper 000).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import overload

import numpy as np

from polars_ppdm.kernels._slices import slices
from polars_ppdm.kernels.prf import first_words, prf_words, uniform
from polars_ppdm.kernels.sorting import sort_words, stable_arg_sort
from polars_ppdm.kernels.spacings import normalise, running_sums

_MAGNITUDE = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_SIGN = np.uint64(1 << 63)

__all__ = [
    "Workspace",
    "cdf_of_counts",
    "cut_points",
    "draw_sample",
    "interval_counts",
    "inverse_cdf",
    "order_keys",
    "rank_order",
    "ranked_cdf",
    "relink",
    "relinked_sample",
    "sample_from_sorted_uniforms",
    "shuffle_order",
    "smoothed_cdf",
    "sorted_sample",
    "tie_words",
]


def smoothed_cdf(values: np.ndarray, bins: int, *, presorted: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Cut points and CDF values at them: ``(cuts, F)``, both of length ``bins + 1``.

    ``values`` are finite, at least two, and not all equal (``presorted``: ascending).

    Examples
    --------
    >>> cuts, F = smoothed_cdf(np.array([2.0, 6, 3, 9, 7]), 7)
    >>> cuts.tolist()
    [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    >>> (F * 8).tolist()  # counts 1, 1, 0, 0, 1, 1, 0, 1: the zeros become 1
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    """
    ordered = values if presorted else np.sort(values)
    cuts = cut_points(float(ordered[0]), float(ordered[-1]), bins)
    return cuts, cdf_of_counts(interval_counts(ordered, cuts))


def cut_points(low: float, high: float, bins: int) -> np.ndarray:
    """The ``bins + 1`` equal-width cut points of :func:`smoothed_cdf`, from the minimum
    ``low`` to the maximum ``high`` (the last one exactly ``high``).

    Examples
    --------
    >>> cut_points(2.0, 9.0, 7).tolist()
    [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    """
    cuts = low + (high - low) * (np.arange(bins + 1) / bins)
    cuts[-1] = high  # exactly the maximum, whatever the rounding
    return cuts


def interval_counts(ordered: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Counts of the ascending ``ordered`` values at the minimum ``cuts[0]`` and in each
    interval ``(cuts[j-1], cuts[j]]`` (values above the last cut are not counted).

    Additive: the counts of a table are the sums of the counts of its parts, so they
    can be summed over batches or partitions (the Spark front-end does).

    Examples
    --------
    >>> interval_counts(np.array([2.0, 3, 6, 7, 9]), cut_points(2.0, 9.0, 7)).tolist()
    [1, 1, 0, 0, 1, 1, 0, 1]
    """
    return np.diff(np.searchsorted(ordered, cuts, side="right"), prepend=0)


def cdf_of_counts(counts: np.ndarray) -> np.ndarray:
    """The smoothed CDF at the cut points from :func:`interval_counts` (zero counts set
    to 1), as :func:`smoothed_cdf` returns it.

    Examples
    --------
    >>> (cdf_of_counts(np.array([1, 1, 0, 0, 1, 1, 0, 1])) * 8).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    """
    smoothed = np.maximum(counts, 1).astype(np.float64)
    cumulative = np.cumsum(smoothed)
    return cumulative / cumulative[-1]


def inverse_cdf(u: np.ndarray, cuts: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    """Inverse-transform sampling: uniforms in [0, 1) to values of the smoothed ECDF.

    ``u < F(x_0)`` gives the minimum itself (the paper's point mass); otherwise the value
    is interpolated linearly inside the interval whose CDF range holds ``u``.

    Examples
    --------
    >>> cuts, cdf = np.array([0.0, 1.0, 2.0]), np.array([0.25, 0.5, 1.0])
    >>> inverse_cdf(np.array([0.1, 0.375, 0.75]), cuts, cdf).tolist()
    [0.0, 0.5, 1.5]
    """
    return _interpolate(u, np.searchsorted(cdf, u, side="right"), cuts, cdf)


def _interpolate(u: np.ndarray, j: np.ndarray, cuts: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    point_mass = j == 0
    j = np.clip(j, 1, len(cuts) - 1)
    lower_f, upper_f = cdf[j - 1], cdf[j]
    lower_x, upper_x = cuts[j - 1], cuts[j]
    out = lower_x + (u - lower_f) / (upper_f - lower_f) * (upper_x - lower_x)
    out[point_mass] = cuts[0]
    return out


def sorted_sample(
    secret: bytes,
    stream: int,
    n: int,
    cuts: np.ndarray,
    cdf: np.ndarray,
    workspace: Workspace | None = None,
) -> np.ndarray:
    """The rank re-linked sample in ascending order: value r is the inverse CDF of the
    r-th smallest of n keyed uniforms, drawn in rank order without a sort
    (:func:`~polars_ppdm.kernels.spacings.sorted_uniforms`), then
    :func:`sample_from_sorted_uniforms`.  With a ``workspace`` of n rows no n-sized array
    is allocated and the result lives in it.

    The generated sample has the law of the sorted :func:`draw_sample` (n independent
    draws of the ECDF), but not its bits: its values come from other draws.

    Examples
    --------
    >>> cuts, cdf = smoothed_cdf(np.random.default_rng(0).gamma(2.0, size=1000), 20)
    >>> a = sorted_sample(bytes(16), 3, 1000, cuts, cdf)
    >>> bool((np.diff(a) >= 0).all() and a[0] >= cuts[0] and a[-1] <= cuts[-1])
    True
    """
    ws = _workspace_for(workspace, n)
    for _ in _sample_slices(secret, stream, n, cuts, cdf, ws):
        pass
    return ws.floats


def relinked_sample(
    secret: bytes,
    stream: int,
    order: np.ndarray,
    cuts: np.ndarray,
    cdf: np.ndarray,
    workspace: Workspace | None = None,
) -> np.ndarray:
    """The released values in row order: row ``order[r]`` gets value r of
    :func:`sorted_sample` (rank re-linking), that is ``out[order] = sorted_sample(...)``.

    Each slice of the sorted sample is scattered to its rows while it is still in the
    CPU's cache, so the sample is never read back from memory.  The result is a new
    array; ``order`` may live in the workspace (the sample does not use ``order``'s
    array).

    Examples
    --------
    >>> cuts, cdf = smoothed_cdf(np.array([2.0, 6, 3, 9, 7]), 4)
    >>> order = np.array([0, 2, 1, 4, 3])
    >>> want = np.empty(5)
    >>> want[order] = sorted_sample(bytes(16), 3, 5, cuts, cdf)
    >>> bool((relinked_sample(bytes(16), 3, order, cuts, cdf) == want).all())
    True
    """
    n = len(order)
    out = np.empty(n, dtype=np.float64)
    for start, stop, part in _sample_slices(secret, stream, n, cuts, cdf, _workspace_for(workspace, n)):
        out[order[start:stop]] = part
    return out


def _sample_slices(
    secret: bytes, stream: int, n: int, cuts: np.ndarray, cdf: np.ndarray, ws: Workspace
) -> Iterator[tuple[int, int, np.ndarray]]:
    """The sorted sample, slice by slice, in ``ws.floats``: ``(start, stop, values)``.

    The running sums go to ``ws.floats`` in one pass; each slice is then normalised and
    sampled in place (both element-wise, in cache): the same bits as
    :func:`~polars_ppdm.kernels.spacings.sorted_uniforms` then
    :func:`sample_from_sorted_uniforms` over all n."""
    u = ws.floats
    total = running_sums(secret, stream, n, u, keys=ws.index)
    for start, stop in _passes(n):
        part = normalise(u[start:stop], total)
        yield start, stop, sample_from_sorted_uniforms(part, cuts, cdf, out=part)


def shuffle_order(secret: bytes, stream: int, n: int, workspace: Workspace | None = None) -> np.ndarray:
    """A keyed random permutation of ``0 .. n-1``: the keys ordered by their PRF word,
    ``np.argsort(first_words(secret, stream, np.arange(n)), kind="stable")``, computed by
    the packed-word sort of :func:`rank_order`.  The published row order of
    ``shuffle=True``: slot s holds the row of rank ``order[s]``.  The result lives in
    ``workspace`` when one of n rows is given (where :func:`rank_order` puts its own).

    Examples
    --------
    >>> order = shuffle_order(bytes(16), 7, 1000)
    >>> bool((order == np.argsort(first_words(bytes(16), 7, np.arange(1000)), kind="stable")).all())
    True
    """
    ws = _workspace_for(workspace, n)

    def consume(start: int, stop: int, block: np.ndarray) -> None:
        _pack(block[:, 0], start, ws)

    prf_words(secret, stream, ws.index[:n], consume)
    order, collide, collisions = _sort_packed(ws)
    if collisions:  # 64-bit words rarely share their top bits, but may
        _exact_within_runs(
            order, collide, lambda rows: (first_words(secret, stream, rows.astype(np.uint64)),)
        )
    return order


def sample_from_sorted_uniforms(
    u: np.ndarray, cuts: np.ndarray, cdf: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """:func:`inverse_cdf` of ascending uniforms, interval by interval, bit for bit.

    Sorted uniforms fall in runs, one per interval: binary searches find the runs of the
    intervals the uniforms reach (a slice of a long sample reaches few of many bins), and
    each run is interpolated in place with its interval's constants -- the same
    floating-point operations as :func:`inverse_cdf`, without n-sized temporaries (which
    cost more than the arithmetic at 10M rows); ``out`` may be ``u``.
    """
    out = np.empty_like(u) if out is None else out
    if len(u) == 0:
        return out
    # Run j holds the uniforms in [F_{j-1}, F_j) (run 0: below F_0, the point mass at the
    # minimum); the first and last runs reached are those of the smallest and largest.
    first, last = np.searchsorted(cdf, (u[0], u[-1]), side="right").tolist()
    ends = [*np.searchsorted(u, cdf[first:last], side="left").tolist(), len(u)]
    start = 0
    for j, stop in enumerate(ends, start=first):
        if start == stop:
            continue
        run = out[start:stop]
        if j == 0:
            run[:] = cuts[0]
        else:
            lower_f, lower_x = cdf[j - 1], cuts[j - 1]
            np.subtract(u[start:stop], lower_f, out=run)
            run /= cdf[j] - lower_f
            run *= cuts[j] - lower_x
            run += lower_x
        start = stop
    return out


def draw_sample(secret: bytes, stream: int, n: int, cuts: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    """The generated sample of ``link='none'``, in draw order: value i is the inverse CDF
    of the uniform at key i, so batches and engines agree (row i gets it)."""
    return inverse_cdf(uniform(secret, stream, np.arange(n, dtype=np.uint64)), cuts, cdf)


def rank_order(
    values: np.ndarray,
    secret: bytes,
    tie_stream: int,
    row_keys: np.ndarray,
    workspace: Workspace | None = None,
) -> np.ndarray:
    """Row indices in ascending order of value; equal values ordered by a keyed PRF word.

    Never by position: a tie broken by row order would make the output depend on how
    the rows arrived, and would tell an attacker the original order (rows with equal
    keys have equal words: they keep their input order).  For finite float64 ``values``
    the result is ``np.lexsort((tie_words(secret, tie_stream, row_keys), values))``
    (integers above 2**53 would tie once converted), computed faster:
    one in-place sort of uint64 words that hold the top bits of each value's
    :func:`order_keys` above its row index (a sort of plain words is several times as
    fast as any arg_sort); rows whose top bits collide -- equal or nearly equal values
    -- are then put in exact order (value, tie word) among themselves.  Mostly tied data
    is ordered by tie word the same way, then by value with a stable sort.  With a
    ``workspace`` the result may live in it: copy it before the workspace's next use.

    Examples
    --------
    >>> x = np.array([2.0, 6.0, 3.0, 2.0, 7.0])
    >>> order = rank_order(x, bytes(16), 1, np.arange(5))
    >>> x[order].tolist(), sorted(order[:2].tolist())  # the two 2.0s in keyed order
    ([2.0, 2.0, 3.0, 6.0, 7.0], [0, 3])
    """
    return _rank_order(values, secret, tie_stream, row_keys, _workspace_for(workspace, len(values)))[0]


def _rank_order(
    values: np.ndarray, secret: bytes, tie_stream: int, row_keys: np.ndarray, ws: Workspace
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`rank_order`, and the sorted prefixes of the values' unsigned order keys
    (``key >> _index_bits(n)``, in ``ws.packed``) when the packed-word path made them."""
    n = len(values)
    bits, packed = ws.bits, ws.packed
    for start, stop in _passes(n):  # keys, then packed words, in one pass through the cache
        keys = order_keys(values[start:stop], bits[start:stop])
        part = np.bitwise_xor(keys.view(np.uint64), _SIGN, out=packed[start:stop])  # signed -> unsigned order
        _pack(part, start, ws)
    order, collide, collisions = _sort_packed(ws)
    if collisions > n // 20:  # mostly tied: order by tie word, then stably by value
        ties = tie_words(secret, tie_stream, row_keys)
        by_tie, collide, tie_collisions = _sorted_by_prefix(ties, ws)
        if tie_collisions:  # 64-bit words rarely share their top bits, but may
            _exact_within_runs(by_tie, collide, lambda rows: (ties[rows],))
        return by_tie[stable_arg_sort(bits[by_tie])], None
    if collisions:
        _exact_within_runs(
            order, collide, lambda rows: (tie_words(secret, tie_stream, row_keys[rows]), bits[rows])
        )
    return order, ws.packed


def ranked_cdf(
    values: np.ndarray,
    bins: int,
    secret: bytes,
    tie_stream: int,
    row_keys: np.ndarray,
    workspace: Workspace | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`rank_order` and :func:`smoothed_cdf` of ``values`` (with -0.0 counted as
    0.0): ``(order, cuts, F)``.

    The counts per interval come from the rank sort's sorted prefixes of the values'
    order keys -- a binary search per cut point, and the few values whose prefix equals a
    cut point's compared exactly -- instead of gathering all n values in rank order (a
    random gather costs about as much as the sort).  The order may live in ``workspace``.

    Examples
    --------
    >>> x = np.random.default_rng(0).gamma(2.0, size=10_000)
    >>> order, cuts, cdf = ranked_cdf(x, 50, bytes(16), 1, np.arange(10_000))
    >>> want = smoothed_cdf(x, 50)
    >>> bool((order == rank_order(x, bytes(16), 1, np.arange(10_000))).all())
    True
    >>> bool((cuts == want[0]).all() and (cdf == want[1]).all())
    True
    """
    n = len(values)
    ws = _workspace_for(workspace, n)
    order, tops = _rank_order(values, secret, tie_stream, row_keys, ws)
    cuts = cut_points(float(values[order[0]] + 0.0), float(values[order[-1]] + 0.0), bins)
    if tops is None:  # the mostly tied path sorted other words: gather the values
        ordered = np.take(values, order, out=ws.floats)
        ordered += 0.0
        return order, cuts, cdf_of_counts(interval_counts(ordered, cuts))
    shift = np.uint64(_index_bits(n))
    cut_tops = (order_keys(cuts).view(np.uint64) ^ _SIGN) >> shift
    below = np.searchsorted(tops, cut_tops, side="left")  # rows whose prefix is below the cut's
    lengths = np.searchsorted(tops, cut_tops, side="right") - below  # rows sharing it
    if lengths.any():
        cut_of = np.repeat(np.arange(len(cuts)), lengths)
        start = np.repeat(below - (np.cumsum(lengths) - lengths), lengths)
        rows = order[start + np.arange(len(cut_of))]
        at_or_below = values[rows] + 0.0 <= cuts[cut_of]
        below = below + np.bincount(cut_of[at_or_below], minlength=len(cuts))
    return order, cuts, cdf_of_counts(np.diff(below, prepend=0))


def _sorted_by_prefix(words: np.ndarray, ws: Workspace) -> tuple[np.ndarray, np.ndarray, int]:
    """Rows ascending by the top bits of the uint64 ``words`` (equal tops by row index),
    from one in-place sort of (top bits | row index) words -- a sort of plain words is
    several times as fast as any arg_sort -- the mask of adjacent sorted rows whose tops
    are equal, which still need putting in exact order, and how many there are.
    ``words`` may be ``ws.packed``; the arrays live in ``ws``."""
    for start, stop in _passes(len(words)):
        _pack(words[start:stop], start, ws)
    return _sort_packed(ws)


def _pack(words: np.ndarray, start: int, ws: Workspace) -> None:
    """``ws.packed`` from ``start`` on: the top bits of the uint64 ``words`` above their
    row index (``words`` may be that very slice of ``ws.packed``).  Called slice by slice
    by whoever makes the words, while they are in cache."""
    shift = np.uint64(_index_bits(ws.n))
    part = ws.packed[start : start + len(words)]
    np.right_shift(words, shift, out=part)
    np.left_shift(part, shift, out=part)
    np.bitwise_or(part, ws.index[start : start + len(words)], out=part)


def _sort_packed(ws: Workspace) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`_sorted_by_prefix` once every slice of ``ws.packed`` is :func:`_pack`-ed."""
    n = ws.n
    index_bits = _index_bits(n)
    shift, low = np.uint64(index_bits), np.uint64((1 << index_bits) - 1)
    packed, order, collide = ws.packed, ws.order.view(np.uint64), ws.collide
    # The fastest sort on this CPU; the row index below each prefix already ascends, and
    # ws.order is written only after the sort, so it lends the radix sort its scratch.
    sort_words(packed, low_bits=index_bits, scratch=order)
    collisions = 0
    for start, stop in _passes(n):
        part = packed[start:stop]
        np.bitwise_and(part, low, out=order[start:stop])
        np.right_shift(part, shift, out=part)  # the tops, in sorted order
        if start:  # the pair across the previous pass's end
            collide[start - 1] = packed[start - 1] == part[0]
        same = np.equal(part[1:], part[:-1], out=collide[start : stop - 1])
        collisions += int(np.count_nonzero(same)) + int(start > 0 and collide[start - 1])
    return ws.order, collide, collisions


def _passes(n: int) -> Iterator[tuple[int, int]]:
    """Slices of n elements for element-wise passes (:func:`~polars_ppdm.kernels._slices.slices`)."""
    return slices(n, _PASS)


#: Elements per pass (512 KB of uint64: a few such arrays stay in a 1 MB L2 cache).
_PASS = 1 << 16


def _index_bits(n: int) -> int:
    """Bits of the row index below the sort prefix in :func:`_sorted_by_prefix`."""
    return max(1, (n - 1).bit_length())


def _exact_within_runs(
    order: np.ndarray, collide: np.ndarray, keys_of: Callable[[np.ndarray], tuple[np.ndarray, ...]]
) -> None:
    """Reorder, in place, each run of rows with equal tops by ``np.lexsort(keys_of(rows))``
    (a stable sort: rows equal in every key keep their order)."""
    in_run = np.zeros(len(order), dtype=bool)
    in_run[1:] |= collide
    in_run[:-1] |= collide
    at = np.flatnonzero(in_run)
    run = np.cumsum(np.concatenate(([True], ~collide[at[:-1]] | (np.diff(at) > 1))))
    rows = order[at]
    order[at] = rows[np.lexsort((*keys_of(rows), run))]


def order_keys(values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Int64 keys in the order of the float values (-0.0 counted as 0.0), whose top bits
    make the sort prefix of :func:`rank_order`.  ``out``: an int64 buffer to write them to.

    Examples
    --------
    >>> x = np.array([1.5, -2.0, 0.0, -0.0, -1e-300])
    >>> np.argsort(order_keys(x), kind="stable").tolist()
    [1, 4, 2, 3, 0]
    """
    out = np.empty(len(values), dtype=np.int64) if out is None else out
    np.add(values, 0.0, out=out.view(np.float64))  # + 0.0 turns -0.0 into 0.0
    # Negative floats: magnitude bits reversed, so integer order is float order.
    np.bitwise_xor(out, (out >> 63) & _MAGNITUDE, out=out)
    return out


class _Scratch:
    """A Workspace array made on first use, then kept in the instance (whose attribute
    wins over this non-data descriptor from then on)."""

    def __init__(self, dtype: type, *, make: Callable[..., np.ndarray] = np.empty, extra: int = 0) -> None:
        self.dtype, self.make, self.extra = dtype, make, extra

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, workspace: None, owner: type) -> _Scratch: ...
    @overload
    def __get__(self, workspace: Workspace, owner: type) -> np.ndarray: ...
    def __get__(self, workspace: Workspace | None, owner: type) -> _Scratch | np.ndarray:
        if workspace is None:
            return self
        array = self.make(max(workspace.n + self.extra, 0), dtype=self.dtype)
        workspace.__dict__[self.name] = array
        return array


class Workspace:
    """Scratch arrays for one column of n values, reused from column to column: in a VM
    a fresh 80 MB array costs more in page faults than the arithmetic done in it.  Each
    array is made on first use, so a caller pays only for the ones its path needs.  Not
    shared between threads.

    ``floats`` (the sample) is ``bits`` (the ranks' order keys) viewed as float64: the
    ranking is done with its keys before the sample is drawn, and one 80 MB array less
    is one less to fault in.  ``index`` (``0 .. n`` as uint64, never written) may be
    given: threads can share one, as long as it has at least n + 1 elements.

    Examples
    --------
    >>> index = np.arange(11, dtype=np.uint64)
    >>> ws = Workspace(10, index=index)
    >>> bool(np.shares_memory(ws.index, index)), bool(np.shares_memory(ws.floats, ws.bits))
    (True, True)
    """

    bits = _Scratch(np.int64)
    packed = _Scratch(np.uint64)
    order = _Scratch(np.int64)
    index = _Scratch(np.uint64, make=np.arange, extra=1)  # 0 .. n: row numbers; the n + 1 draws' keys
    collide = _Scratch(bool, extra=-1)  # one flag per pair of neighbours

    def __init__(self, n: int, *, index: np.ndarray | None = None) -> None:
        self.n = n
        if index is not None:
            if index.dtype != np.uint64 or len(index) < n + 1:
                msg = f"Workspace index must be uint64 of at least n + 1 = {n + 1} elements. Got {index.dtype} of {len(index)}."
                raise ValueError(msg)
            self.index = index[: n + 1]

    @property
    def floats(self) -> np.ndarray:
        return self.bits.view(np.float64)


def _workspace_for(workspace: Workspace | None, n: int) -> Workspace:
    return workspace if workspace is not None and workspace.n == n else Workspace(n)


def tie_words(secret: bytes, stream: int, row_keys: np.ndarray) -> np.ndarray:
    """One PRF word per row key: the order among rows with equal values."""
    return first_words(secret, stream, row_keys)


def relink(order: np.ndarray, sample: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank re-linking: ``(released, draw_index)`` per row.

    The row of rank r (``order[r]``) gets the r-th smallest generated value; ``draw_index``
    says which draw that was (ties among generated values keep draw order), which gives
    the paper's output row order.  The definition on a given sample (the paper's worked
    example); the front-ends draw theirs in rank order instead (:func:`sorted_sample`).

    Examples
    --------
    The paper's worked example: X1 = [2, 6, 3, 9, 7] and generated Y1 = [1, 2, 8, 7, 5].

    >>> x, y = np.array([2.0, 6, 3, 9, 7]), np.array([1.0, 2, 8, 7, 5])
    >>> released, drawn = relink(np.argsort(x), y)
    >>> released.tolist(), drawn.tolist()
    ([1.0, 5.0, 2.0, 8.0, 7.0], [0, 4, 1, 2, 3])
    """
    by_value = np.argsort(sample, kind="stable")
    released = np.empty_like(sample)
    released[order] = sample[by_value]
    drawn = np.empty(len(sample), dtype=np.int64)
    drawn[order] = by_value
    return released, drawn
