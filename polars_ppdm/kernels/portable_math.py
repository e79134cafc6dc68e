"""Logarithm and cosine defined to the bit, the same on every machine (pure NumPy).

NumPy's ``np.log`` dispatches on the CPU: with AVX-512 it runs a vectorised approximation
whose last bit differs from the scalar libm's for a few percent of inputs (measured on
this project's AVX-512 machine), and ``np.cos`` is vectorised per CPU as well, so the same
secret could give different noise on a laptop, on a Spark executor and in DuckDB on
another machine.  These functions use only IEEE-754 ``+ - * /``, bit
operations and tables rounded from 40-digit decimal arithmetic: every operation is
correctly rounded, so every machine gives the same bits (a pure-Python evaluation of the
same steps agrees bit for bit; tested).

* :func:`minus_log` -- ``-ln v`` for v in [2**-54, 1]: ``v = 2**e * m``; the top 10 bits
  of m pick a cell of width 2**-10 with centre c, and
  ``-ln v = -ln(2**e c) - ln(1 + t)``, ``t = (v - 2**e c) / (2**e c)``, ``|t| < 2**-11``,
  ``ln(1 + t) = t - t^2/2 + t^3/3 - t^4/4`` to 2**-57.
* :func:`cos_two_pi` -- ``cos(2 pi u)`` for u in [0, 1): the quadrant ``q = floor(4u)``
  and ``r = 4u - q`` (both exact); r's cell of width 2**-10 with centre c and
  ``a = (pi/2)(r - c)``, ``|a| < 7.7e-4``; then the angle-sum formulas with ``sin`` and
  ``cos`` of ``(pi/2) c`` from a table and ``sin a``, ``cos a`` from their series to a^5
  and a^4 (the next terms are below 2**-60).

Both are within about 2e-16 of the exact value (relative to ``max(1, |value|)``).

References
----------
Muller, *Elementary Functions: Algorithms and Implementation*, 3rd ed., Birkhauser 2016,
chapter 6 (table-based methods).
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext

import numpy as np

from polars_ppdm.kernels._slices import slices

__all__ = ["cos_two_pi", "minus_log"]

_CELL_BITS = 10
_CELLS = 1 << _CELL_BITS

# minus_log: v = 2**e * m, e in [_LOWEST_E, 0].
_LOW_BITS = 52 - _CELL_BITS
_SHIFT = np.uint64(_LOW_BITS)
_KEEP = np.uint64(~((1 << _LOW_BITS) - 1) & 0xFFFF_FFFF_FFFF_FFFF)  # sign, exponent, cell
_HALF_CELL = np.uint64(1 << (_LOW_BITS - 1))
_LOWEST_E = -54  # v >= 2**-54: the smallest uniform of the DP noise is 2**-54
_FIRST_CELL = np.uint64((1023 + _LOWEST_E) << _CELL_BITS)  # biased exponent and cell of 2**-54

_HALF_PI = math.pi / 2  # the double nearest pi/2; a = t * _HALF_PI is off by < 2**-53 relative
# _QUADRANT_SIGN[q] and whether quadrant q takes the sine: cos(2 pi u) = cos((pi/2)(q + r)).
_QUADRANT_SIGN = np.array([1.0, -1.0, -1.0, 1.0])
_DIGITS = 40


@functools.cache
def _minus_log_centres() -> np.ndarray:
    """``-ln(2**e * c)`` for every exponent e in [-54, 0] and cell centre c, each the
    float nearest to the value computed in 40-digit decimal arithmetic.
    Index ``(e + 54) << 10 | cell``."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        ln2 = Decimal(2).ln()
        cells = [(1 + Decimal(2 * j + 1) / (2 * _CELLS)).ln() for j in range(_CELLS)]
        table = [float(-(e * ln2 + cell)) for e in range(_LOWEST_E, 1) for cell in cells]
    return np.array(table, dtype=np.float64)


def minus_log(
    v: np.ndarray,
    out: np.ndarray | None = None,
    *,
    scratch: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """``-ln v`` for v in [2**-54, 1], bit for bit the same on every machine; never
    negative (``v = 1`` gives 0).

    ``out`` may be ``v``; ``scratch`` is a float64 and a uint64 array of at least
    ``min(len(v), 16384)`` for the temporaries.  A value outside the domain (or NaN) is
    refused: the table lookup would give a wrong number, not an error.

    Examples
    --------
    >>> minus_log(np.array([1.0, 0.5, 0.25, 2.0**-53])).tolist()
    [0.0, 0.6931471805599453, 1.3862943611198908, 36.7368005696771]
    """
    v = np.asarray(v, dtype=np.float64)
    n = len(v)
    out = np.empty(n, dtype=np.float64) if out is None else out
    size = min(n, _PASS)
    t, bits = scratch if scratch is not None else (np.empty(size), np.empty(size, dtype=np.uint64))
    table = _minus_log_centres()
    for start, stop in slices(n, _PASS):
        part = v[start:stop]
        if not part.min() >= 2.0**_LOWEST_E or not part.max() <= 1.0:  # NaN fails too
            msg = f"minus_log takes values in [2**{_LOWEST_E}, 1]. Got {part.min()!r} to {part.max()!r}."
            raise ValueError(msg)
        _minus_log_pass(part, out[start:stop], t[: stop - start], bits[: stop - start], table)
    return out


def _minus_log_pass(
    v: np.ndarray, out: np.ndarray, t: np.ndarray, bits: np.ndarray, table: np.ndarray
) -> None:
    v_bits = v.view(np.uint64)
    np.bitwise_and(v_bits, _KEEP, out=bits)
    np.bitwise_or(bits, _HALF_CELL, out=bits)  # the centre of v's cell, 2**e * c
    centre = bits.view(np.float64)
    np.subtract(v, centre, out=t)  # exact: same binade, multiples of v's last place
    np.divide(t, centre, out=t)  # t
    np.right_shift(v_bits, _SHIFT, out=bits)  # biased exponent and cell
    np.subtract(bits, _FIRST_CELL, out=bits)  # the table index
    # ln(1 + t) = t + t^2 (-1/2 + t (1/3 - t/4)), into out (v is no longer needed)
    np.multiply(t, -0.25, out=out)
    out += 1.0 / 3.0
    out *= t
    out -= 0.5
    out *= t
    out *= t
    out += t
    minus_log_centre = np.take(table, bits.view(np.int64), out=t)
    np.subtract(minus_log_centre, out, out=out)
    np.maximum(out, 0.0, out=out)  # v = 1 rounds to +-1e-19: never below 0


def _decimal_sin_cos(x: Decimal) -> tuple[Decimal, Decimal]:
    """sin and cos of ``x`` (|x| <= 2) by their Taylor series, in the current context."""
    sin, cos, term, k = Decimal(0), Decimal(0), Decimal(1), 0
    while True:
        # term = x^k / k!
        if k % 4 == 0:
            cos += term
        elif k % 4 == 1:
            sin += term
        elif k % 4 == 2:
            cos -= term
        else:
            sin -= term
        k += 1
        term = term * x / k
        if k > 4 and abs(term) < Decimal(10) ** -(_DIGITS + 2):
            return sin, cos


@functools.cache
def _quarter_turn_cells() -> tuple[np.ndarray, np.ndarray]:
    """``sin`` and ``cos`` of ``(pi/2) c`` for every cell centre c of [0, 1), each the
    float nearest to the value computed in 40-digit decimal arithmetic."""
    with localcontext() as ctx:
        ctx.prec = _DIGITS + 5
        half_pi = Decimal("1.57079632679489661923132169163975144209858469968755")
        pairs = [_decimal_sin_cos(half_pi * Decimal(2 * j + 1) / (2 * _CELLS)) for j in range(_CELLS)]
    sines = np.array([float(s) for s, _ in pairs], dtype=np.float64)
    cosines = np.array([float(c) for _, c in pairs], dtype=np.float64)
    return sines, cosines


def cos_two_pi(u: np.ndarray) -> np.ndarray:
    """``cos(2 pi u)`` for u in [0, 1), bit for bit the same on every machine.

    Examples
    --------
    >>> cos_two_pi(np.array([0.0, 0.125, 0.5, 0.75])).tolist()
    [1.0, 0.7071067811865475, -1.0, 0.0]
    """
    u = np.asarray(u, dtype=np.float64)
    out = np.empty(len(u), dtype=np.float64)
    for start, stop in slices(len(u), _COS_PASS):
        part = u[start:stop]
        if not part.min() >= 0.0 or not part.max() < 1.0:  # NaN fails too
            msg = f"cos_two_pi takes values in [0, 1). Got {part.min()!r} to {part.max()!r}."
            raise ValueError(msg)
        out[start:stop] = _cos_two_pi_pass(part)
    return out


def _cos_two_pi_pass(u: np.ndarray) -> np.ndarray:
    sines, cosines = _quarter_turn_cells()
    r = u * 4.0  # exact
    quadrant = np.floor(r)
    r -= quadrant  # exact (Sterbenz), in [0, 1)
    cell = np.floor(r * _CELLS)  # exact scaling
    a = r - (cell + 0.5) / _CELLS  # exact for u = k * 2**-53 (|a| < 2**-11, 40 bits)
    a *= _HALF_PI
    cell_index = cell.astype(np.intp)
    s, c = sines[cell_index], cosines[cell_index]
    a2 = a * a
    cos_a_minus_1 = a2 * (a2 * (1.0 / 24.0) - 0.5)
    sin_a = a + a * a2 * (a2 * (1.0 / 120.0) - 1.0 / 6.0)
    quadrant_index = quadrant.astype(np.intp)
    odd = (quadrant_index & 1).astype(bool)
    # cos((pi/2)(q + r)): q even takes cos((pi/2) r), q odd sin((pi/2) r); the sign by q.
    sine = s + (s * cos_a_minus_1 + c * sin_a)
    cosine = c + (c * cos_a_minus_1 - s * sin_a)
    out = np.where(odd, sine, cosine)
    out *= _QUADRANT_SIGN[quadrant_index]
    return out


#: Elements per pass of minus_log: its two scratch arrays (128 KB each) stay in the CPU's
#: cache, where n-sized ones would cost a trip to memory per step.
_PASS = 1 << 14
#: Elements per pass of cos_two_pi, whose steps make temporaries: 64 KB each, under
#: glibc's 128 KB threshold above which every one would be fresh pages from the kernel.
_COS_PASS = 1 << 13
