"""Sorted keyed uniforms without a sort: normalised exponential spacings (pure NumPy).

The order statistics of n independent uniforms have the law of partial sums of n + 1
independent standard exponentials, normalised by their total:
``U_(r) = S_r / S_n`` with ``S_r = x_0 + ... + x_r`` (ranks r = 0 .. n-1, draws i = 0 .. n).
So the r-th smallest of n keyed uniforms can be made in O(n), in rank order, from the
draw at key r and those before it -- no sort, and still a pure function of
``(secret, stream, rank)`` (and n).

Everything here is defined to the bit, so that every engine and every machine gives the
same values (Polars, DuckDB and Spark all call these functions, on whatever ranks they
hold):

* draw i is ``x_i = exponential(u_i)``, ``u_i = uniform(secret, stream, i)`` (word 0 of
  the PRF block, :func:`~polars_ppdm.kernels.prf.uniform`), for i = 0 .. n;
* :func:`exponentials` is ``-ln(1 - u)`` from IEEE-754 ``+ - * /`` and bit operations
  (each correctly rounded, so identical everywhere) and a table rounded from exact decimal
  arithmetic (:mod:`polars_ppdm.kernels.portable_math`) -- not ``np.log``, whose bits
  depend on the CPU (NumPy's AVX-512 and scalar logarithms differ in the last bit for a
  few percent of inputs);
* the sums are blocked, on three levels, every level a sequential sum (``a_j = a_{j-1} +
  y_j``, each addition rounded): draws in groups of :data:`GROUP` = 16, groups in blocks
  of :data:`BLOCK` = 2048.  ``q_i`` is the sequential sum of draw i's group up to i,
  ``G_k`` the group's total (its last ``q``); ``P_k`` the sequential sum of the totals of
  the block's groups before k (0 for its first), and ``c_i = P_k + q_i``; ``T_b`` the
  block's total (its last ``c``); block offsets ``O_0 = 0``, ``O_{b+1} = O_b + T_b``; and
  ``S_i = O_b + c_i``.  The total is ``S_n`` (the last block stops at draw n);
* ``U_r = min(S_r / S_n, 1 - 2**-53)``.

Blocked sums keep the rounding error of a sum of 10^8 terms to ~1e-12 of the total
(about ``16 + 128 + n / 2048`` roundings on the way to any ``S_i``), against up to ~1e-8
(a whole spacing) for one running sum; they let a caller that holds some ranks only (a
Spark task, a DuckDB vector) compute exactly the same bits from the block totals
(:func:`block_totals`, :func:`block_offsets`) and the draws of its own blocks
(:func:`sorted_uniforms_at`); and the groups make the sums from a few vectorised additions
that release the GIL (``np.cumsum`` holds it: two columns resampled in two threads then ran
one after the other).  Every ``x_i >= 0`` and every level is a running sum, so the ``U_r``
are nondecreasing in r, in [0, 1).

References
----------
Devroye, *Non-Uniform Random Variate Generation*, Springer 1986, section V.2 (uniform
spacings from exponential spacings).
"""

from __future__ import annotations

import numpy as np

from polars_ppdm.kernels import _native
from polars_ppdm.kernels.portable_math import _minus_log_centres, minus_log
from polars_ppdm.kernels.prf import CHUNK_ROWS, _check_secret, prf_words, uniform, unit_doubles

__all__ = [
    "BLOCK",
    "GROUP",
    "block_offsets",
    "block_totals",
    "block_uniforms",
    "exponentials",
    "normalise",
    "running_sums",
    "sorted_uniforms",
    "sorted_uniforms_at",
]

#: Ranks per summation block (a power of two; a chunk of the PRF holds whole blocks).
BLOCK = 1 << 11
#: Ranks per group inside a block.
GROUP = 16
_BLOCK_BITS = BLOCK.bit_length() - 1
assert CHUNK_ROWS % BLOCK == 0 and BLOCK % GROUP == 0

_ONE_MINUS = 1.0 - 2.0**-53  # the largest double below 1


def exponentials(
    u: np.ndarray,
    out: np.ndarray | None = None,
    *,
    scratch: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Standard exponential variates ``-ln(1 - u)`` of uniforms ``u = k * 2**-53`` in
    [0, 1) (as :func:`~polars_ppdm.kernels.prf.uniform` makes them), bit for bit the
    same on every machine: ``1 - u`` is exact, then
    :func:`~polars_ppdm.kernels.portable_math.minus_log`.

    Within about 2e-16 of the exact value (relative to ``max(1, value)``), and never
    negative: ``u = 0`` gives 0.  ``out`` may be ``u``; ``scratch`` is a float64 and a
    uint64 array of at least ``min(len(u), 16384)`` for the temporaries.

    Examples
    --------
    >>> exponentials(np.array([0.0, 0.5, 0.75, 1 - 2.0**-53])).tolist()
    [0.0, 0.6931471805599453, 1.3862943611198908, 36.7368005696771]
    """
    out = np.empty(len(u), dtype=np.float64) if out is None else out
    np.subtract(1.0, u, out=out)  # exact
    return minus_log(out, out=out, scratch=scratch)


def _block_sums(blocks: np.ndarray) -> np.ndarray:
    """In place: a (k, BLOCK) array of draws becomes the in-block sums ``c``.  Each
    ``c_i`` depends on the draws up to i only (so extra draws after a last one change
    nothing before them, and zeros after it repeat its sum)."""
    groups = blocks.reshape(-1, GROUP)
    for j in range(1, GROUP):  # q: running sums down the groups' columns, vectorised
        np.add(groups[:, j - 1], groups[:, j], out=groups[:, j])
    starts = np.cumsum(groups[:, -1].reshape(len(blocks), BLOCK // GROUP), axis=1)  # P of the next group
    blocks.reshape(len(blocks), BLOCK // GROUP, GROUP)[:, 1:, :] += starts[:, :-1, None]
    return blocks


def _sum_blocks(x: np.ndarray, carry: float) -> float:
    """In place: ``x``, the draws of whole blocks from a block's first (padded with zeros
    to whole blocks), becomes ``S = O_b + c``, the offset of its first block being
    ``carry``; returns the offset of the block after them."""
    blocks = _block_sums(x.reshape(-1, BLOCK))
    offsets = np.cumsum(np.concatenate(([carry], blocks[:, -1])))  # O_b of each block, then the next one's
    blocks += offsets[:-1, None]
    return float(offsets[-1])


def sorted_uniforms(
    secret: bytes, stream: int, n: int, out: np.ndarray | None = None, keys: np.ndarray | None = None
) -> np.ndarray:
    """``U_0 <= ... <= U_{n-1}``: the n sorted keyed uniforms of the module's definition,
    in one pass over the n + 1 draws (no sort): :func:`running_sums`, then
    :func:`normalise`.

    ``out``: a float64 array of n for the result; ``keys``: ``np.arange(n + 1)`` as
    uint64, when the caller has one (it is made otherwise).

    Examples
    --------
    >>> u = sorted_uniforms(bytes(16), 3, 5)
    >>> bool((np.diff(u) >= 0).all() and u[0] >= 0 and u[-1] < 1)
    True
    >>> bool((u == sorted_uniforms_at(bytes(16), 3, np.arange(5), *block_offsets(block_totals(bytes(16), 3, 5)))).all())
    True
    """
    out = np.empty(n, dtype=np.float64) if out is None else out
    return normalise(out, running_sums(secret, stream, n, out, keys))


def running_sums(
    secret: bytes, stream: int, n: int, out: np.ndarray, keys: np.ndarray | None = None
) -> float:
    """``S_0 .. S_{n-1}`` into ``out`` (a float64 array of n), and the total ``S_n``:
    the sorted uniforms before :func:`normalise`, which a caller may apply slice by
    slice (it is element-wise).  ``keys`` as for :func:`sorted_uniforms`.

    The compiled kernel, when installed, makes the same bits in one call without the GIL
    (in NumPy the logarithm's table lookup holds it).  It draws at keys ``0 .. n``
    itself, so an ``out`` of fewer than n values, or ``keys`` other than
    ``np.arange(m)`` (uint64, ``m >= n + 1``), is refused on both paths (review 64: the
    compiled call wrote ``len(out)`` sums and ignored the keys)."""
    _check_out(out, n)
    _check_keys(keys, n)
    secret = _check_secret(secret)
    native = _native.NATIVE
    if native is not None and out.dtype == np.float64 and out.flags.c_contiguous:
        return float(native.spacing_sums_into(secret, stream, _minus_log_centres(), out[:n]))
    keys = np.arange(n + 1, dtype=np.uint64) if keys is None else keys[: n + 1]
    x = np.empty(min(CHUNK_ROWS, -(-(n + 1) // BLOCK) * BLOCK))
    scratch = (np.empty(len(x)), np.empty(len(x), dtype=np.uint64))
    state = {"carry": 0.0, "total": 0.0}

    def consume(start: int, stop: int, words: np.ndarray) -> None:
        m = stop - start
        chunk = unit_doubles(words[:, 0], out=x[:m])
        exponentials(chunk, out=chunk, scratch=(scratch[0][:m], scratch[1][:m]))
        padded = x[: -(-m // BLOCK) * BLOCK]  # the last chunk may stop inside a block
        padded[m:] = 0.0
        state["carry"] = _sum_blocks(padded, state["carry"])
        kept = min(stop, n) - start
        out[start : start + kept] = chunk[:kept]
        if stop == n + 1:
            state["total"] = float(chunk[m - 1])

    prf_words(secret, stream, keys, consume)
    return state["total"]


def _check_out(out: np.ndarray, n: int) -> None:
    """Refuse an ``out`` that cannot hold the n sums (NumPy would fail mid-way, the
    compiled call would write fewer)."""
    if not isinstance(out, np.ndarray) or out.ndim != 1 or len(out) < n:
        got = f"shape {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        msg = f"running_sums: 'out' must be a 1-D array of at least n = {n} values (float64). Got {got}."
        raise ValueError(msg)


#: Keys per comparison of :func:`_check_keys` (a chunk of ``arange`` made once).
_KEY_CHECK_ROWS = 1 << 16
_KEY_STEPS = np.arange(_KEY_CHECK_ROWS, dtype=np.uint64)


def _check_keys(keys: np.ndarray | None, n: int) -> None:
    """Refuse ``keys`` that are not ``np.arange(m, dtype=np.uint64)`` with ``m >= n + 1``:
    the draws are at keys ``0 .. n`` by definition (the compiled kernel makes them
    itself; the keys only spare the NumPy path an array).  One read of the keys, chunk by
    chunk (~1 ms per million)."""
    if keys is None:
        return
    ok = isinstance(keys, np.ndarray) and keys.dtype == np.uint64 and keys.ndim == 1 and len(keys) >= n + 1
    got = f"dtype {keys.dtype}, shape {keys.shape}" if isinstance(keys, np.ndarray) else type(keys).__name__
    scratch = np.empty(max(0, min(_KEY_CHECK_ROWS, n + 1)), dtype=np.uint64)
    for start in range(0, n + 1 if ok else 0, _KEY_CHECK_ROWS):
        part = keys[start : min(start + _KEY_CHECK_ROWS, n + 1)]
        steps = np.subtract(part, np.uint64(start), out=scratch[: len(part)])  # wraps below start
        if not np.array_equal(steps, _KEY_STEPS[: len(part)]):
            at = start + int(np.flatnonzero(steps != _KEY_STEPS[: len(part)])[0])
            ok, got = False, f"keys[{at}] = {int(keys[at])}"
            break
    if not ok:
        msg = (
            f"running_sums: 'keys' must be None or np.arange(m, dtype=np.uint64) with m >= n + 1 = {n + 1} "
            f"(the draws are at keys 0 .. n). Got {got}."
        )
        raise ValueError(msg)


def normalise(s: np.ndarray, total: float) -> np.ndarray:
    """In place: ``U = min(s / total, 1 - 2**-53)`` (all n + 1 draws 0 -- odds 2**-53
    each -- give 0)."""
    if total > 0:
        np.divide(s, total, out=s)
    else:
        s[:] = 0.0
    return np.minimum(s, _ONE_MINUS, out=s)


def _draws_of_blocks(secret: bytes, stream: int, blocks: np.ndarray) -> np.ndarray:
    """The draws ``x`` of whole blocks (uint64 block numbers), as a (blocks, BLOCK) array
    of in-block sums ``c`` (a block past the draws' end holds extra draws after it, which
    no prefix of the draws depends on)."""
    native = _native.NATIVE
    if native is not None:
        sums = np.empty((len(blocks), BLOCK))
        numbers = np.ascontiguousarray(blocks, dtype=np.int64).view(np.uint64)
        native.block_sums_into(_check_secret(secret), stream, numbers, _minus_log_centres(), sums)
        return sums
    keys = (blocks.astype(np.uint64)[:, None] << np.uint64(_BLOCK_BITS)) + np.arange(BLOCK, dtype=np.uint64)
    x = uniform(secret, stream, keys.ravel())
    exponentials(x, out=x)
    return _block_sums(x.reshape(len(blocks), BLOCK))


def block_totals(secret: bytes, stream: int, n: int, blocks: np.ndarray | None = None) -> np.ndarray:
    """``T_b`` of the given blocks (default all ``n // BLOCK + 1`` of them): the sum, in
    order, of the block's draws among the n + 1.  Additive over blocks, so a Spark task
    or a DuckDB call can make the totals of some blocks and the driver join them.

    Examples
    --------
    >>> t = block_totals(bytes(16), 3, 5000)
    >>> len(t), bool((t == block_totals(bytes(16), 3, 5000, np.array([2, 0, 1]))[[1, 2, 0]]).all())
    (3, True)
    """
    count = n // BLOCK + 1
    blocks = np.arange(count, dtype=np.int64) if blocks is None else np.asarray(blocks, dtype=np.int64)
    totals = np.empty(len(blocks))
    step = CHUNK_ROWS // BLOCK
    for start in range(0, len(blocks), step):
        part = blocks[start : start + step]
        sums = _draws_of_blocks(secret, stream, part)
        last = np.minimum((part + 1) * BLOCK, n + 1) - 1 - part * BLOCK  # the last draw is n
        totals[start : start + step] = sums[np.arange(len(part)), last]
    return totals


def block_offsets(totals: np.ndarray) -> tuple[np.ndarray, float]:
    """``(O, S_n)``: the offset of every block (the sequential sum of the totals before
    it) and the total of all draws, from :func:`block_totals` of all blocks, in order.

    Examples
    --------
    >>> offsets, total = block_offsets(np.array([1.0, 2.0, 4.0]))
    >>> offsets.tolist(), total
    ([0.0, 1.0, 3.0], 7.0)
    """
    inclusive = np.cumsum(np.asarray(totals, dtype=np.float64))
    return np.concatenate(([0.0], inclusive[:-1])), float(inclusive[-1])


def block_uniforms(
    secret: bytes, stream: int, blocks: np.ndarray, offsets: np.ndarray, total: float
) -> np.ndarray:
    """The sorted uniforms of whole blocks, as a (blocks, BLOCK) array: row k holds
    ``U_r`` for ranks ``blocks[k] * BLOCK + (0 .. BLOCK-1)`` (ranks >= n are meaningless);
    ``offsets[k]`` is the offset of ``blocks[k]``, ``total`` is ``S_n``
    (:func:`block_offsets`)."""
    sums = _draws_of_blocks(secret, stream, np.asarray(blocks, dtype=np.int64))
    sums += np.asarray(offsets, dtype=np.float64)[:, None]
    normalise(sums.reshape(-1), total)
    return sums


def sorted_uniforms_at(
    secret: bytes, stream: int, ranks: np.ndarray, offsets: np.ndarray, total: float
) -> np.ndarray:
    """``U_r`` at the given ranks (any order, repeats allowed), bit for bit
    :func:`sorted_uniforms`: the draws of every block touched are made again, so
    consecutive ranks cost about one draw each.  ``offsets, total``: :func:`block_offsets`
    of all n // BLOCK + 1 block totals."""
    ranks = np.asarray(ranks, dtype=np.int64)
    if len(ranks) == 0:
        return np.empty(0, dtype=np.float64)
    blocks, where = np.unique(ranks >> _BLOCK_BITS, return_inverse=True)
    uniforms = block_uniforms(secret, stream, blocks, np.asarray(offsets)[blocks], total)
    return uniforms[where, ranks & (BLOCK - 1)]
