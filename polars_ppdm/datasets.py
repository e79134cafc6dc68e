"""Basket data for the demo, the notebook and the tests: the real groceries set or a generated one.

The real set (Hahsler et al.'s *Groceries*, 9,835 baskets, 169 items) lives in the shared
data folder beside the project and is never copied into it.  When that folder is absent,
:func:`generated_baskets` gives a set with the same shape of problem: a few dozen items of
skewed popularity and planted associations, so rules exist to be found.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._frame import Frame, as_lazy, schema_of
from polars_ppdm._validation import check_columns, check_int, check_numeric, check_real, is_count
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.prf import stream_id, uniform
from polars_ppdm.secret import Secret
from polars_ppdm.transactions import read_transactions, transactions_to_onehot

__all__ = [
    "AGRAWAL_ATTRIBUTES",
    "BREAST_CANCER_ATTRIBUTES",
    "SEGMENT_ATTRIBUTES",
    "agrawal",
    "breast_cancer",
    "find_shared_data",
    "generated_baskets",
    "groceries",
    "image_segmentation",
    "normalise",
]

# Paper 002 uses 8 attributes of Breast Cancer Wisconsin (Diagnostic) and 9 of Image
# Segmentation without naming them; these are ours: the first eight "mean" measurements,
# and the nine colour and intensity means (the pixel position and line densities are not
# measurements of the region).
BREAST_CANCER_ATTRIBUTES = (
    "mean radius",
    "mean texture",
    "mean perimeter",
    "mean area",
    "mean smoothness",
    "mean compactness",
    "mean concavity",
    "mean concave points",
)
SEGMENT_ATTRIBUTES = (
    "intensity-mean",
    "rawred-mean",
    "rawblue-mean",
    "rawgreen-mean",
    "exred-mean",
    "exblue-mean",
    "exgreen-mean",
    "value-mean",
    "saturation-mean",
)

# Item name, base popularity, and the shopper profile (0-3, or None) that favours it.
_ITEMS: tuple[tuple[str, float, int | None], ...] = (
    ("whole milk", 0.22, 0),
    ("other vegetables", 0.17, 1),
    ("rolls/buns", 0.16, 0),
    ("soda", 0.15, 2),
    ("yogurt", 0.12, 1),
    ("bottled water", 0.10, 2),
    ("root vegetables", 0.09, 1),
    ("tropical fruit", 0.09, 1),
    ("shopping bags", 0.08, None),
    ("sausage", 0.08, 3),
    ("pastry", 0.07, 0),
    ("citrus fruit", 0.07, 1),
    ("bottled beer", 0.07, 2),
    ("newspapers", 0.06, None),
    ("canned beer", 0.06, 2),
    ("pip fruit", 0.06, 1),
    ("fruit/vegetable juice", 0.05, 2),
    ("whipped/sour cream", 0.05, 3),
    ("brown bread", 0.05, 0),
    ("domestic eggs", 0.05, 3),
    ("frankfurter", 0.05, 3),
    ("margarine", 0.05, 0),
    ("coffee", 0.04, None),
    ("pork", 0.04, 3),
    ("butter", 0.04, 0),
    ("curd", 0.04, 1),
    ("beef", 0.04, 3),
    ("napkins", 0.04, None),
    ("chocolate", 0.04, 2),
    ("frozen vegetables", 0.04, 3),
)
_PROFILE_SHARE = (0.30, 0.30, 0.25, 0.15)
_PROFILE_BOOST = 0.25

# The most rows a generator makes in one call.  Drawing takes ~40 bytes a row for each
# column at once (the uniform draws and NumPy's one-byte booleans): 10^8 rows are a few
# GB already; more was a MemoryError (10^11 baskets asked for 745 GiB) after a long wait.
MAX_ROWS = 10**8
_ROWS_WHY = (
    " (the most one call generates: drawing takes tens of bytes a row per column; concatenate calls "
    "with different seeds for more)"
)


def _check_seed(seed: Any, func: str) -> int:
    if not is_count(seed):
        msg = f"The 'seed' parameter of {func} must be an int. Got {seed!r} instead."
        raise InvalidParameterError(msg)
    return int(seed)


def find_shared_data(name: str = "groceries.csv") -> Path | None:
    """The path of a shared data file, or None when no shared data folder is found.

    Looked for in ``$PPDM_DATA``, then ``../shared/data`` from the working directory, then
    beside the project checkout (``<repo>/../shared/data``).
    """
    here = Path(__file__).resolve().parents[2]
    candidates = [Path(os.environ["PPDM_DATA"])] if os.environ.get("PPDM_DATA") else []
    candidates += [Path.cwd().parent / "shared" / "data", here / "shared" / "data"]
    for folder in candidates:
        if (folder / name).is_file():
            return folder / name
    return None


def groceries(path: str | os.PathLike | None = None) -> pl.DataFrame:
    """The groceries baskets as a one-hot frame (one Boolean column per item, sorted).

    Parameters
    ----------
    path : path, optional
        The ``groceries.csv`` file; by default found by :func:`find_shared_data`.

    Raises
    ------
    FileNotFoundError
        When no file is given and the shared data folder is absent.
    """
    path = find_shared_data("groceries.csv") if path is None else Path(path)
    if path is None:
        msg = "groceries.csv not found: set PPDM_DATA to the shared data folder or pass its path."
        raise FileNotFoundError(msg)
    return transactions_to_onehot(read_transactions(path, sep=","))


def generated_baskets(n: int = 10_000, *, seed: int = 0) -> pl.DataFrame:
    """Synthetic baskets: 30 grocery items, skewed popularity, four shopper profiles.

    Each basket belongs to one profile (shares 30/30/25/15%); an item is bought with its
    base probability, plus 0.25 when the basket's profile favours it, so items of one
    profile co-occur and association rules exist.  Draws come from the keyed PRF under a
    public, guessable secret derived from ``seed``: this is test data, not a release.

    Examples
    --------
    >>> baskets = generated_baskets(1000)
    >>> baskets.shape
    (1000, 30)
    >>> generated_baskets(1000).equals(baskets)
    True
    """
    n = check_int("n", n, "generated_baskets", low=1, high=MAX_ROWS, why=_ROWS_WHY)
    secret = Secret.from_int(_check_seed(seed, "generated_baskets")).key
    rows = np.arange(n, dtype=np.uint64)
    profile = np.searchsorted(
        np.cumsum(_PROFILE_SHARE), uniform(secret, stream_id("generated_baskets/profile"), rows), side="right"
    )
    columns = {}
    for name, base, favoured_by in _ITEMS:
        chance = base + _PROFILE_BOOST * (profile == favoured_by)
        columns[name] = uniform(secret, stream_id("generated_baskets/" + name), rows) < chance
    return pl.DataFrame(columns)


AGRAWAL_ATTRIBUTES = ("salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan")


def _between(x: np.ndarray, low: float, high: float) -> np.ndarray:
    return (low <= x) & (x <= high)


def _agrawal_group_a(function: int, a: dict[str, np.ndarray]) -> np.ndarray:
    """Functions 1-5 of Agrawal, Imielinski & Swami (1993), as published."""
    age, salary, elevel, loan = a["age"], a["salary"], a["elevel"], a["loan"]
    young, middle, old = age < 40, (40 <= age) & (age < 60), age >= 60
    if function == 1:
        return young | old
    if function == 2:
        return (
            (young & _between(salary, 50_000, 100_000))
            | (middle & _between(salary, 75_000, 125_000))
            | (old & _between(salary, 25_000, 75_000))
        )
    if function == 3:
        return (young & (elevel <= 1)) | (middle & _between(elevel, 1, 3)) | (old & (elevel >= 2))
    if function == 4:
        return (
            (
                young
                & np.where(elevel <= 1, _between(salary, 25_000, 75_000), _between(salary, 50_000, 100_000))
            )
            | (
                middle
                & np.where(
                    _between(elevel, 1, 3),
                    _between(salary, 50_000, 100_000),
                    _between(salary, 75_000, 125_000),
                )
            )
            | (
                old
                & np.where(elevel >= 2, _between(salary, 50_000, 100_000), _between(salary, 25_000, 75_000))
            )
        )
    # Function 5 tests the loan in every branch (river's version tests salary in some).
    return (
        (
            young
            & np.where(
                _between(salary, 50_000, 100_000),
                _between(loan, 100_000, 300_000),
                _between(loan, 200_000, 400_000),
            )
        )
        | (
            middle
            & np.where(
                _between(salary, 75_000, 125_000),
                _between(loan, 200_000, 400_000),
                _between(loan, 300_000, 500_000),
            )
        )
        | (
            old
            & np.where(
                _between(salary, 25_000, 75_000),
                _between(loan, 300_000, 500_000),
                _between(loan, 100_000, 300_000),
            )
        )
    )


def agrawal(n: int, function: int, *, seed: int = 0) -> pl.DataFrame:
    """Agrawal et al.'s synthetic people table with the class of functions 1-5 (``group_a``).

    Attributes as in the 1993 paper: salary uniform in [20k, 150k]; commission 0 when
    salary >= 75k, else uniform in [10k, 75k]; age, an integer in [20, 80]; elevel in
    0..4; car in 1..20; zipcode in 0..8; hvalue uniform in [0.5, 1.5) x (9 - zipcode) x
    100k; hyears in 1..30; loan uniform in [0, 500k].  No attribute noise.  Draws come
    from the keyed PRF under a public, guessable secret derived from ``seed``.

    References
    ----------
    R. Agrawal, T. Imielinski, A. Swami, "Database mining: a performance perspective",
    IEEE TKDE 5(6), 1993; used by paper 000 for its Table 1.

    Examples
    --------
    >>> people = agrawal(1000, 1, seed=3)
    >>> people.columns[-1], people.height
    ('group_a', 1000)
    >>> bool(((people["age"] < 40) | (people["age"] >= 60) == people["group_a"]).all())
    True
    """
    n = check_int("n", n, "agrawal", low=1, high=MAX_ROWS, why=_ROWS_WHY)
    if not is_count(function) or function not in (1, 2, 3, 4, 5):
        msg = f"The 'function' parameter of agrawal must be one of 1, 2, 3, 4, 5. Got {function!r} instead."
        raise InvalidParameterError(msg)
    function = int(function)
    secret = Secret.from_int(_check_seed(seed, "agrawal")).key
    rows = np.arange(n, dtype=np.uint64)

    def u(name: str) -> np.ndarray:
        return uniform(secret, stream_id("agrawal/" + name), rows)

    def integer(name: str, low: int, high: int) -> np.ndarray:
        return low + np.floor(u(name) * (high - low + 1)).astype(np.int64)

    a: dict[str, np.ndarray] = {"salary": 20_000 + 130_000 * u("salary")}
    a["commission"] = np.where(a["salary"] >= 75_000, 0.0, 10_000 + 65_000 * u("commission"))
    a["age"] = integer("age", 20, 80)
    a["elevel"] = integer("elevel", 0, 4)
    a["car"] = integer("car", 1, 20)
    a["zipcode"] = integer("zipcode", 0, 8)
    a["hvalue"] = (9 - a["zipcode"]) * 100_000 * (0.5 + u("hvalue"))
    a["hyears"] = integer("hyears", 1, 30)
    a["loan"] = 500_000 * u("loan")
    return pl.DataFrame({**a, "group_a": _agrawal_group_a(function, a)})


def normalise(frame: Frame, columns: str | Iterable[str], low: float = 0.0, high: float = 10.0) -> Frame:
    """Min-max scale ``columns`` to [low, high] (paper 002 normalises to [0, 10]).

    Each column's minimum goes to ``low`` and its maximum to ``high``; nulls stay null.
    A column that cannot be scaled is refused by name: one with no two distinct values
    (no range), one holding an infinite value, or one whose range overflows a float.
    A LazyFrame stays lazy (its minima and maxima are collected first).

    Examples
    --------
    >>> import polars as pl
    >>> normalise(pl.DataFrame({"x": [2.0, 4.0, None, 6.0]}), "x", 0, 1)["x"].to_list()
    [0.0, 0.5, None, 1.0]
    """
    func = "normalise"
    schema = schema_of(frame, func)
    cols = check_columns(columns, list(schema), func)
    check_numeric(schema, cols, func)
    low = check_real("low", low, func)
    high = check_real("high", high, func)
    if not low < high or not math.isfinite(high - low):
        msg = f"normalise needs low < high with a finite high - low. Got low={low!r}, high={high!r}."
        raise InvalidParameterError(msg)
    stats = (
        as_lazy(frame)
        .select(
            *(pl.col(c).cast(pl.Float64).min().alias(f"min {i}") for i, c in enumerate(cols)),
            *(pl.col(c).cast(pl.Float64).max().alias(f"max {i}") for i, c in enumerate(cols)),
        )
        .collect()
        .row(0)
    )
    scaled = []
    for i, c in enumerate(cols):
        least, most = stats[i], stats[len(cols) + i]
        width = None if least is None else most - least
        if width is None or not math.isfinite(width) or width <= 0:
            msg = (
                f"The column {c!r} of normalise must hold finite values with a finite range max - min > 0, "
                "and does not (it is empty or all null, constant, or holds NaN, infinite or too large values)."
            )
            raise InvalidParameterError(msg)
        scaled.append((low + (pl.col(c) - least) / width * (high - low)).alias(c))
    return frame.with_columns(scaled)


def breast_cancer() -> pl.DataFrame:
    """Breast Cancer Wisconsin (Diagnostic), 569 rows: the attributes of
    :data:`BREAST_CANCER_ATTRIBUTES` and ``diagnosis`` (0 malignant, 1 benign).

    Needs scikit-learn (the ``eval`` extra), which ships the data.
    """
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    names = list(data.feature_names)
    frame = pl.DataFrame({a: data.data[:, names.index(a)] for a in BREAST_CANCER_ATTRIBUTES})
    return frame.with_columns(pl.Series("diagnosis", data.target))


def image_segmentation() -> pl.DataFrame:
    """Image Segmentation (UCI), 2,310 rows and 19 attributes plus ``category``.

    Read from the file river ships (``river/datasets/segment.csv.zip``; the ``eval``
    extra installs river), without importing river.
    """
    import importlib.util
    import io
    import zipfile

    spec = importlib.util.find_spec("river")
    if spec is None or spec.origin is None:
        msg = "image_segmentation() reads the file river ships: pip install 'polars_ppdm[eval]'"
        raise ImportError(msg)
    path = Path(spec.origin).parent / "datasets" / "segment.csv.zip"
    with zipfile.ZipFile(path) as archive:
        member = archive.namelist()[0]
        return pl.read_csv(io.BytesIO(archive.read(member)))
