"""Log-spiral perturbation for clustering (LSDP, paper 002) on Polars frames.

References
----------
Huang et al., "LSDP: logarithmic-spiral data perturbation for privacy-preserving
clustering", Chinese Journal of Computers, 2012 (paper 002).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import polars as pl

from polars_ppdm._affine import held_affine_exprs
from polars_ppdm._bounds import DATA_BOUNDS, check_bounds
from polars_ppdm._frame import Frame, as_lazy, fresh_names, like, schema_of
from polars_ppdm._validation import check_bool, check_columns, check_int, check_numeric, is_real
from polars_ppdm.exceptions import InvalidParameterError, PrivacyLeakWarning
from polars_ppdm.kernels.release_key import query_label, release_key
from polars_ppdm.kernels.spiral import affine, compose, draw_rounds
from polars_ppdm.secret import SecretLike, resolve_secret
from polars_ppdm.secret_files import read_secret_text, write_secret_text

__all__ = ["SpiralKey", "apply_spiral_key", "invert_spiral_key", "spiral", "spiral_key"]

_FUNC = "spiral"
_FORMAT = "polars_ppdm.spiral_key/1"
# Rounds compose into one similarity, so more of them add no secret (see spiral's Notes);
# the cap keeps a key's drawing under a second (rounds=10**11 ran for hours).
MAX_ROUNDS = 1000


@dataclass(frozen=True, repr=False)
class SpiralKey:
    """The composed transform ``x -> A x + b`` (``A = scale * Q``) of a spiral run.

    A secret: anyone holding it undoes the perturbation (:meth:`invert`).  Its ``repr``
    shows only the columns and the scale; :meth:`to_json` writes it all -- store that as
    you store the secret.
    """

    columns: tuple[str, ...]
    matrix: np.ndarray
    offset: np.ndarray
    scale: float

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Rows of ``x`` (n_rows, n_columns) through the transform, one matrix product."""
        return affine(np.asarray(x, dtype=np.float64), self.matrix, self.offset)

    def inverse(self) -> tuple[np.ndarray, np.ndarray]:
        """``(A^-1, -A^-1 b)``: ``A = s Q`` with Q orthogonal, so ``A^-1 = A^T / s^2``."""
        inverse = self.matrix.T / self.scale / self.scale  # s^2 itself overflows for s > 1e154
        return inverse, -inverse @ self.offset

    def invert(self, y: np.ndarray) -> np.ndarray:
        """The original rows behind released ones."""
        return affine(np.asarray(y, dtype=np.float64), *self.inverse())

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": _FORMAT,
                "columns": list(self.columns),
                "matrix": self.matrix.tolist(),
                "offset": self.offset.tolist(),
                "scale": self.scale,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SpiralKey:
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            data = None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            msg = f"Not a spiral key (format {found!r}; expected {_FORMAT!r})."
            raise InvalidParameterError(msg)
        try:
            columns = tuple(str(c) for c in data["columns"])
            matrix = np.array(data["matrix"], dtype=np.float64)
            offset = np.array(data["offset"], dtype=np.float64)
            scale = float(data["scale"])
        except (KeyError, TypeError, ValueError) as err:
            msg = f"A damaged spiral key: {type(err).__name__}: {err}."
            raise InvalidParameterError(msg) from None
        m = len(columns)
        if (
            matrix.shape != (m, m)
            or offset.shape != (m,)
            or not np.isfinite(matrix).all()
            or not np.isfinite(offset).all()
            or not 0 < scale < math.inf
        ):
            msg = f"A damaged spiral key: {m} columns need a finite {m} x {m} matrix, {m} offsets and a scale > 0."
            raise InvalidParameterError(msg)
        return cls(columns, matrix, offset, scale)

    def save(self, path: str | Path, *, overwrite: bool = False) -> None:
        """Write the key to a new file of mode 0600, atomically (see
        :mod:`polars_ppdm.secret_files`); an existing file is replaced only with
        ``overwrite=True``."""
        write_secret_text(path, self.to_json(), overwrite=overwrite)

    @classmethod
    def load(cls, path: str | Path) -> SpiralKey:
        """Read a key saved by :meth:`save`; a file that group or others can read (or
        change), or that another user owns, is refused with the fix (``chmod 600 PATH``)."""
        return cls.from_json(read_secret_text(path))

    def __repr__(self) -> str:
        # The scale is secret too: released distances divided by it are the true ones.
        return f"SpiralKey(columns={list(self.columns)}, scale=<secret>, matrix=<secret>)"


def _range(name: str, value: Any, *, positive: bool) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        msg = f"The {name!r} parameter of {_FUNC} must be a (low, high) pair. Got {value!r} instead."
        raise InvalidParameterError(msg) from None
    if not (math.isfinite(low) and math.isfinite(high)) or low > high or (positive and low <= 0):
        allowed = "0 < low <= high" if positive else "low <= high"
        msg = f"The {name!r} parameter of {_FUNC} must be finite with {allowed}. Got {value!r} instead."
        raise InvalidParameterError(msg)
    return low, high


def _point(pair: Any) -> float | None:
    """The value of a zero-width range ``(c, c)``; None for anything else."""
    if isinstance(pair, str | bytes):
        return None
    try:
        low, high = (float(v) for v in pair)
    except (TypeError, ValueError):
        return None
    return low if math.isfinite(low) and low == high else None


def _spiral_bounds(bounds: Any, cols: list[str]) -> dict[str, tuple[float, float]]:
    """The bounds as :func:`check_bounds` reads them, except that a zero-width range
    ``(c, c)`` -- a constant column -- is allowed: its centres are all ``c``."""
    if isinstance(bounds, np.ndarray | pl.Series):
        bounds = bounds.tolist() if isinstance(bounds, np.ndarray) else bounds.to_list()
    pairs: dict[str, Any] | None = None
    if isinstance(bounds, Mapping) and all(c in bounds for c in cols):
        pairs = {c: bounds[c] for c in cols}
    elif isinstance(bounds, Sequence) and not isinstance(bounds, str) and len(bounds) == len(cols):
        pairs = dict(zip(cols, bounds, strict=True))
    points = {c: point for c, pair in (pairs or {}).items() if (point := _point(pair)) is not None}
    if pairs is None or not points:
        return check_bounds(bounds, cols, _FUNC, None)  # its messages for every other case
    rest = [c for c in cols if c not in points]
    checked = check_bounds({c: pairs[c] for c in rest}, rest, _FUNC, None) if rest else {}
    return {c: (points[c], points[c]) if c in points else checked[c] for c in cols}


def _data_pair_usable(pair: tuple[Any, Any]) -> bool:
    """A (min, max) read off a column that :func:`_spiral_bounds` takes (a constant column too)."""
    try:
        _spiral_bounds({"c": pair}, ["c"])
    except InvalidParameterError:
        return False
    return True


def _data_bounds(frame: pl.LazyFrame, cols: list[str]) -> dict[str, tuple[Any, Any]]:
    """Each column's (min, max), with the warnings that they are not public and, for a
    constant column, what the release shows of it."""
    warnings.warn(
        f"{_FUNC}: bounds='data' reads the min and max off the private data. They are not "
        "public, and what the result reveals of them is not protected. Pass public bounds.",
        PrivacyLeakWarning,
        stacklevel=3,
    )
    row = (
        frame.select(
            *(pl.col(c).min().alias(f"lo{i}") for i, c in enumerate(cols)),
            *(pl.col(c).max().alias(f"hi{i}") for i, c in enumerate(cols)),
        )
        .collect()
        .row(0)
    )
    found = {c: (row[i], row[len(cols) + i]) for i, c in enumerate(cols)}
    constant = [c for c, (low, high) in found.items() if low is not None and low == high]
    if constant:
        warnings.warn(
            f"{_FUNC}: column(s) {constant} hold one value (min == max): a zero-width range, so "
            "every centre sits on that value. The transform stays invertible and keeps distances; "
            "but the released rows lie on a hyperplane (one combination of the released columns "
            "is the same in every row), which shows that a column was constant and gives away "
            "one direction of the key (not the value). A constant column carries nothing for "
            "clustering: leave it out of the release.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
    return found


def spiral_key(
    columns: Sequence[str],
    *,
    bounds: Mapping[str, tuple[float, float]],
    rounds: int = 7,
    factors: tuple[float, float] | Sequence[float] = (0.1, 5.0),
    angle: tuple[float, float] = (0.01 * math.pi, 0.5 * math.pi),
    growth: float | None = None,
    secret: SecretLike = None,
) -> SpiralKey:
    """Draw the rounds (keyed PRF) and compose them into one :class:`SpiralKey`.

    Parameters are those of :func:`spiral`; ``bounds`` is required here.

    Examples
    --------
    >>> key = spiral_key(["a", "b", "c"], bounds={c: (0, 10) for c in "abc"}, rounds=3, secret=1)
    >>> key
    SpiralKey(columns=['a', 'b', 'c'], scale=<secret>, matrix=<secret>)
    >>> x = np.array([[1.0, 2, 3], [4, 5, 6]])
    >>> bool(np.allclose(key.invert(key.apply(x)), x))
    True
    """
    # No frame yet: only the form of the names is checked (strings, distinct).
    if not isinstance(columns, str | Iterable):
        check_columns(columns, [], _FUNC)  # raises: not a name or a list of names
    names = [columns] if isinstance(columns, str) else list(columns)
    cols = [str(c) for c in check_columns(names, names, _FUNC)]  # np.str_ -> str
    if len(cols) < 2:
        msg = f"The 'columns' parameter of {_FUNC} needs at least 2 columns (a rotation mixes a group of 2 or 3). Got {cols!r}."
        raise InvalidParameterError(msg)
    rounds = check_int(
        "rounds",
        rounds,
        _FUNC,
        low=1,
        high=MAX_ROUNDS,
        why=" (the rounds compose into one map: more add no secret)",
    )
    angle = _range("angle", angle, positive=False)
    scales: list[float] | tuple[float, float] | None
    if growth is not None:
        if not is_real(growth) or not abs(growth) * max(map(abs, angle)) < 700:
            msg = (
                f"The 'growth' parameter of {_FUNC} must be a finite float with |growth * dtheta| < 700 "
                f"(k = e^(growth * dtheta) must be a finite double). Got {growth!r} instead."
            )
            raise InvalidParameterError(msg)
        scales = None
    elif isinstance(factors, list):  # one k per round; a tuple is a range
        scales = [float(k) for k in factors] if all(is_real(k) for k in factors) else []
        if len(scales) != rounds or not all(k > 0 and math.isfinite(k) for k in scales):
            msg = f"The 'factors' parameter of {_FUNC}, as a list, needs one k > 0 per round ({rounds}). Got {factors!r} instead."
            raise InvalidParameterError(msg)
    else:
        scales = _range("factors", factors, positive=True)
    checked = _spiral_bounds(bounds, cols)
    lows = np.array([checked[c][0] for c in cols])
    highs = np.array([checked[c][1] for c in cols])
    # The rounds are drawn under a key of the secret and the whole query (the columns, the
    # bounds, the rounds' parameters): under the secret alone, every key of as many columns
    # had one matrix (and, with the same bounds, one offset), and d rows known in one
    # release undid every other release under the secret.
    label = query_label(
        f"{_FUNC}({', '.join(cols)})",
        {
            "bounds": [tuple(map(float, checked[c])) for c in cols],
            "rounds": int(rounds),
            "scales": scales,
            "angle": tuple(map(float, angle)),
            "growth": None if growth is None else float(growth),
        },
    )
    own = release_key(resolve_secret(secret).key, label, 0)
    drawn = draw_rounds(own, lows, highs, int(rounds), scales=scales, angle=angle, eps=growth)
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        A, b, s = compose(drawn, len(cols))
        key = SpiralKey(tuple(cols), A, b, s)
        inverse, back = key.inverse()
    if not all(np.isfinite(m).all() for m in (A, b, inverse, back)) or not 0 < s < math.inf:
        msg = (
            f"{_FUNC}: the composed key is not a finite float map (its scale, the product of the "
            f"{rounds} rounds' factors k, is {s:.3g}; its offset grows with the 'bounds' and the scale). "
            "Pass fewer 'rounds', 'factors' nearer 1, or smaller 'bounds'."
        )
        raise InvalidParameterError(msg)
    return key


def _transform(frame: Frame, key: SpiralKey, matrix: np.ndarray, offset: np.ndarray, func: str) -> Frame:
    schema = schema_of(frame, func)
    cols = check_columns(list(key.columns), list(schema.names()), func)
    check_numeric(schema, cols, func)
    x = {c: pl.col(c).cast(pl.Float64) for c in cols}

    def refuse_non_finite(bad: pl.Series) -> pl.Series:
        if bad.any():
            msg = f"The columns {cols} of {func} hold NaN or infinite values; replace them or make them null."
            raise InvalidParameterError(msg)
        return bad

    def refuse_overflow(bad: pl.Series) -> pl.Series:
        if bad.any():
            msg = (
                f"{func}: the columns {cols} hold values too large for the key: moved, they overflow "
                "a float (the key's scale and offset multiply and shift them)."
            )
            raise InvalidParameterError(msg)
        return bad

    bad = pl.any_horizontal(x[c].is_nan() | x[c].is_infinite() for c in cols)
    checked = bad.map_batches(refuse_non_finite, return_dtype=pl.Boolean, is_elementwise=True)
    # A null in a row nulls its every spiral column; the plan holds a handle to the key.
    # One struct column computes them all (each input read once), then its fields replace them.
    (moving,) = fresh_names(schema.names(), "__ppdm_spiral")  # apart from every column
    moved = [pl.col(moving).struct.field(c).alias(c) for c in cols]
    moved[0] = pl.when(checked).then(None).otherwise(moved[0]).alias(cols[0])
    # The input is finite (refused above): a non-finite output is an overflow.
    overflow = pl.any_horizontal(~pl.col(c).is_finite() for c in cols)
    refused = overflow.map_batches(refuse_overflow, return_dtype=pl.Boolean, is_elementwise=True)
    first = pl.when(refused).then(None).otherwise(pl.col(cols[0])).alias(cols[0])
    query = as_lazy(frame).with_columns(held_affine_exprs(cols, matrix, offset).alias(moving))
    return like(frame, query.with_columns(moved).drop(moving).with_columns(first), engine="streaming")


def _check_key(key: Any, func: str) -> SpiralKey:
    if not isinstance(key, SpiralKey):
        msg = f"The 'key' parameter of {func} must be a SpiralKey (spiral_key, or SpiralKey.load). Got {type(key).__name__} instead."
        raise InvalidParameterError(msg)
    return key


def apply_spiral_key(frame: Frame, key: SpiralKey) -> Frame:
    """Apply a key's transform to its columns (other columns untouched, row order kept)."""
    key = _check_key(key, "apply_spiral_key")
    return _transform(frame, key, key.matrix, key.offset, "apply_spiral_key")


def invert_spiral_key(frame: Frame, key: SpiralKey) -> Frame:
    """Undo :func:`apply_spiral_key`: the data owner's way back to the original values."""
    key = _check_key(key, "invert_spiral_key")
    return _transform(frame, key, *key.inverse(), "invert_spiral_key")


@overload
def spiral(
    frame: Frame,
    columns: Sequence[str],
    *,
    rounds: int = 7,
    factors: tuple[float, float] | Sequence[float] = (0.1, 5.0),
    angle: tuple[float, float] = (0.01 * math.pi, 0.5 * math.pi),
    growth: float | None = None,
    bounds: Mapping[str, tuple[float, float]] | str | None = None,
    secret: SecretLike = None,
    return_key: Literal[False] = False,
) -> Frame: ...
@overload
def spiral(
    frame: Frame,
    columns: Sequence[str],
    *,
    rounds: int = 7,
    factors: tuple[float, float] | Sequence[float] = (0.1, 5.0),
    angle: tuple[float, float] = (0.01 * math.pi, 0.5 * math.pi),
    growth: float | None = None,
    bounds: Mapping[str, tuple[float, float]] | str | None = None,
    secret: SecretLike = None,
    return_key: Literal[True],
) -> tuple[Frame, SpiralKey]: ...
@overload
def spiral(
    frame: Frame,
    columns: Sequence[str],
    *,
    rounds: int = 7,
    factors: tuple[float, float] | Sequence[float] = (0.1, 5.0),
    angle: tuple[float, float] = (0.01 * math.pi, 0.5 * math.pi),
    growth: float | None = None,
    bounds: Mapping[str, tuple[float, float]] | str | None = None,
    secret: SecretLike = None,
    return_key: bool,
) -> Frame | tuple[Frame, SpiralKey]: ...
def spiral(
    frame: Frame,
    columns: Sequence[str],
    *,
    rounds: int = 7,
    factors: tuple[float, float] | Sequence[float] = (0.1, 5.0),
    angle: tuple[float, float] = (0.01 * math.pi, 0.5 * math.pi),
    growth: float | None = None,
    bounds: Mapping[str, tuple[float, float]] | str | None = None,
    secret: SecretLike = None,
    return_key: bool = False,
) -> Frame | tuple[Frame, SpiralKey]:
    """Log-spiral perturbation: t rounds of random block rotations and scalings.

    Each round splits the columns at random into groups of 2 and 3, moves each group
    along a log spiral about a random centre (``A' = O + k R(dtheta)(A - O)``; in 3-D
    about a random axis) with one scale k for the round.  The rounds compose into one
    similarity transform, applied with one pass over the data.  Every pairwise distance
    is multiplied by the product of the k's, so clusterings (k-means, and DBSCAN with
    its radius scaled by that product) are preserved.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Returned as the same type (lazy stays lazy; the transform streams).
    columns : sequence of str
        At least 2 numeric columns; they come back as Float64.  A row with a null in any
        of them comes back null in all of them (a rotation mixes them).  NaN and
        infinities are refused.
    rounds : int
        t in [1, 1000] (paper: 7 on Breast Cancer, 4 on Image Segmentation).  The rounds
        compose into one map, so more add no secret (see Notes); a key whose scale (the
        product of the k's) or offset overflows a float is refused.
    factors : (low, high) tuple, or a list with one k per round
        The range of each round's scaling factor k, > 0 (paper: (0.1, 5) and (1, 10)).
    angle : (low, high)
        The range of dtheta in radians (paper: (0.01 pi, 0.5 pi) and (0.1 pi, pi)).
    growth : float, optional
        The log spiral's growth rate (the paper's epsilon, unrelated to a privacy
        epsilon) instead of ``factors``: each round draws one dtheta for all its groups and
        uses ``k = e^(growth * dtheta)``.
    bounds : mapping column -> (low, high), or "data"
        Public bounds inside which the centres are drawn: a mapping, or one pair per
        column.  ``"data"`` or None reads them off the data, with a
        :class:`~polars_ppdm.exceptions.PrivacyLeakWarning`.  A zero-width range
        ``(c, c)`` (a constant column) is allowed: see Notes.
    secret : Secret, bytes, hex str, 'env:NAME', int or None
        The secret the rounds are drawn from.
    return_key : bool
        Also return the :class:`SpiralKey` (a secret: it undoes the perturbation).

    Returns
    -------
    frame, or (frame, SpiralKey) with ``return_key``

    Notes
    -----
    Many rounds look like many secrets, but they compose into one similarity map (a
    rotation, one scale, an offset) with n(n - 1)/2 + n + 1 unknowns: an attacker who knows
    n original rows and their released rows (in general position) solves for it and
    undoes every other row (:func:`polars_ppdm.audit.known_io_attack`). More rounds do not
    help against this.

    A constant column (bounds ``(c, c)``, or read off data in which the column holds one
    value, with a second warning) has a zero-width range: every centre sits on ``c`` in
    that coordinate.  The centres only set the offset of the map, so it is still a
    similarity (invertible, every distance multiplied by the same factor).  The released
    rows then lie on a hyperplane, as the input rows did: one combination of the
    released columns, along the direction ``Q e_j`` of the key, is the same in every row.
    That shows a constant column and gives away that direction of the key; the constant
    itself is hidden behind the key's offset and scale (the released hyperplane sits at
    ``s c + (Q e_j) . b``).  It carries nothing for clustering: leave it out.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"a": [1.0, 2, 3], "b": [0.0, 5, 1], "label": ["x", "y", "x"]})
    >>> out, key = ppdm.spiral(df, ["a", "b"], rounds=3, bounds={"a": (0, 5), "b": (0, 5)}, secret=1, return_key=True)
    >>> out["label"].to_list(), out.height
    (['x', 'y', 'x'], 3)
    >>> ppdm.invert_spiral_key(out, key).select("a", "b").to_numpy().round(9).tolist()
    [[1.0, 0.0], [2.0, 5.0], [3.0, 1.0]]
    """
    schema = schema_of(frame, _FUNC)
    cols = check_columns(columns, list(schema.names()), _FUNC)
    check_numeric(schema, cols, _FUNC)
    check_bool("return_key", return_key, _FUNC)
    # Centres are drawn inside the bounds; read off the data, they leak its extremes.
    if bounds is None or (isinstance(bounds, str) and bounds == DATA_BOUNDS):
        found = _data_bounds(as_lazy(frame), cols)
        try:
            checked = _spiral_bounds(found, cols)
        except InvalidParameterError:
            # The data's own min and max are never shown (docs/privacy-model.md).
            bad = [c for c in cols if not _data_pair_usable(found[c])]
            msg = (
                f"The 'bounds' parameter of {_FUNC} is 'data' (or None), and the column(s) {bad} give no usable "
                "(low, high): empty or all null, NaN or infinite values, or a range beyond float64. "
                "Pass public bounds."
            )
            raise InvalidParameterError(msg) from None
    else:
        checked = _spiral_bounds(bounds, cols)
    key = spiral_key(
        cols, bounds=checked, rounds=rounds, factors=factors, angle=angle, growth=growth, secret=secret
    )
    out = apply_spiral_key(frame, key)
    return (out, key) if return_key else out
