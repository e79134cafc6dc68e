"""The standing attack suite: each attack a function that returns what it measured.

Every check runs an attack on a release or a perturbation through the public API and
returns a :class:`Measurement`: the figure measured, the bar the privacy claim sets and
whether it held.  The tests (``tests/test_attack_suite.py``, ``tests/test_dp_audit.py``,
``tests/spark/test_spark_attacks.py``) run each check on every release it applies to, as
river's ``check_estimator`` runs each check on every estimator, and fail with the figure.

The attacks, and the rule of ``DESIGN.md`` each one holds to account:

* :func:`replay_cells` -- the same secret over changed data (one row or unit added):
  two DP releases over different data must draw independent noise, so the difference of
  the releases must not be the exact change of the true values; the identical release
  over identical data reproduces its bits.
* :func:`lazy_recollect` -- a lazy DP release collected twice after its source grew:
  charged per evaluation, and the second evaluation does not reveal the new row.
* :func:`low_order_bits` (with :func:`impossible_outputs`) -- Mironov (2012): real-valued
  noise must live on a grid, so that the support of the release does not depend on the
  data; an output possible on one table and impossible on its neighbour identifies it.
* :func:`unit_rows_share` and :func:`changed_value_share` -- perturbations (randomized
  response, additive noise): the rows of one unit, and a value changed between two runs,
  must get fresh coins (the XOR of a unit's rows, or the change, is read off no more
  often than independent coins allow); an unchanged value reproduces its bits.
* :func:`whole_record_xor_share` -- whole-record randomized response keeps the XOR of
  two columns in every row: no finite epsilon, measured and said, never claimed.
* :func:`parallel_thread_charge` -- a spend from another thread during an open
  ``BudgetAccountant.parallel`` block is charged in full.
* :func:`refusal_before_charge`, :func:`data_bounds_leak`, :func:`guessable_secret` --
  a data-dependent refusal happens before any charge and names no figure of the data;
  ``bounds="data"`` does not publish the data's extremes; guessable secrets are refused
  (whoever guesses one recomputes the noise and subtracts it).

References
----------
Mironov, "On significance of the least significant bits for differential privacy", CCS
2012.  Ding, Wang, Wang, Zhang, Kifer, "Detecting violations of differential privacy", CCS
2018.  Erlingsson, Pihur, Korolova, "RAPPOR", CCS 2014 (memoisation: one coin per value).
River's estimator checks (``river.checks``).
"""

from __future__ import annotations

import math
import os
import re
import threading
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

__all__ = [
    "Measurement",
    "changed_value_share",
    "data_bounds_leak",
    "guessable_secret",
    "impossible_outputs",
    "lazy_recollect",
    "low_order_bits",
    "parallel_thread_charge",
    "recompute_noise",
    "refusal_before_charge",
    "replay_cells",
    "two_share_z",
    "unit_rows_share",
    "whole_record_xor_share",
]

Cells = dict[Hashable, float]

#: Epsilon large enough that the noise is below every tolerance: the "true" values.
EXACT_EPSILON = 1e9


@dataclass(frozen=True)
class Measurement:
    """What one attack measured on one target, and whether the privacy claim held.

    ``value`` is the figure (a share, a count, an epsilon), ``bar`` says what it must be,
    ``detail`` the rest of what was measured; ``str()`` is the test's failure message.
    """

    attack: str
    target: str
    value: float
    bar: str
    passed: bool
    detail: str = ""

    def __str__(self) -> str:
        verdict = "holds" if self.passed else "FAILS"
        return f"{self.attack} on {self.target}: measured {self.value:.6g} (bar: {self.bar}) -> {verdict}. {self.detail}"


def _test_secret(seed: int) -> Any:
    from polars_ppdm.secret import Secret

    return Secret.for_tests(seed)


def _close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= 1e-6 * (1.0 + scale)


# ---- changed data under one secret --------------------------------------------------------


def replay_cells(
    release: Callable[[Any, Any, float], Cells],
    small: Any,
    large: Any,
    *,
    epsilon: float,
    target: str,
    seeds: Iterable[int] = range(4),
    bar: float = 0.5,
) -> Measurement:
    """Release over ``small`` and ``large`` (one row or unit more) under one secret.

    Per secret (``Secret.for_tests(seed)``), the released change of every cell present in
    both releases (and in both exact releases) is compared with its true change (the
    release at epsilon 1e9).  Noise keyed by the secret and the cell only cancels: every
    cell shows its exact change (share 1).  Fresh noise shows it only by chance (never
    for real values; ``P(X = X')`` for counts, ~8% at scale 3).  The identical release
    over the identical table must reproduce its bits.

    Parameters
    ----------
    release : callable (table, secret, epsilon) -> {cell: value}
    small, large : the neighbouring tables, in whatever form ``release`` reads.
    epsilon : the release's epsilon.
    target : the release's name, for the message.
    seeds : the secrets (``Secret.for_tests(seed)``); the share is pooled over them.
    bar : the largest share of exact changes allowed.

    Returns
    -------
    Measurement
        ``value`` the share of cells whose released change is the exact change; passed
        when it is at most ``bar`` and every identical replay reproduced its bits.
    """
    exact = cells = 0
    reproduced = True
    for seed in seeds:
        secret = _test_secret(seed)
        before = release(small, secret, epsilon)
        after = release(large, secret, epsilon)
        again = release(small, secret, epsilon)
        reproduced &= again == before
        true_before = release(small, secret, EXACT_EPSILON)
        true_after = release(large, secret, EXACT_EPSILON)
        for cell in before:
            if cell in after and cell in true_before and cell in true_after:
                cells += 1
                size = abs(before[cell]) + abs(after[cell])
                exact += _close(after[cell] - before[cell], true_after[cell] - true_before[cell], size)
    share = exact / cells if cells else math.nan
    return Measurement(
        "same secret over changed data",
        target,
        share,
        f"<= {bar} of cells show their exact change; identical release reproduces its bits",
        cells > 0 and share <= bar and reproduced,
        f"{exact} of {cells} cells showed the exact change; identical replay reproduced its bits: {reproduced}.",
    )


# ---- lazy re-collect -------------------------------------------------------------------


def lazy_recollect(
    make: Callable[[pl.LazyFrame, Any], pl.LazyFrame],
    cells: Callable[[pl.DataFrame], Cells],
    exact: Callable[[pl.DataFrame], Cells],
    small: pl.DataFrame,
    large: pl.DataFrame,
    folder: str | Path,
    *,
    epsilon: float,
    target: str,
    zcdp: bool = False,
) -> Measurement:
    """A lazy DP release (``secret=None``, an accountant) collected, its source grown by
    a row, collected again.

    ``make(lazy_source, accountant)`` returns the lazy release; ``cells`` reads a
    collected release; ``exact(table)`` the true cells.  Two evaluations must be charged
    twice (``2 x epsilon``; with ``zcdp`` the accountant counts rho and ``epsilon`` is
    the release's rho), and the second minus the first must not be the exact change in
    every cell (noise drawn once, at the call, cancels).
    """
    from polars_ppdm.dp.accountant import BudgetAccountant

    # CSV: a scan re-reads the file at every collect (a parquet scan keeps its metadata).
    path = Path(folder) / "source.csv"
    small.write_csv(path)
    grown = Path(folder) / "grown.csv"
    large.write_csv(grown)
    accountant = BudgetAccountant(rho=100 * epsilon) if zcdp else BudgetAccountant(100 * epsilon)
    lazy = make(pl.scan_csv(path, schema=small.schema), accountant)
    first = cells(lazy.collect())
    os.replace(grown, path)  # the source grows between the evaluations
    second = cells(lazy.collect())
    charged = accountant.spent / epsilon
    true_small, true_large = exact(small), exact(large)
    common = [c for c in first if c in second and c in true_small and c in true_large]
    hits = sum(
        _close(second[c] - first[c], true_large[c] - true_small[c], abs(first[c]) + abs(second[c]))
        for c in common
    )
    share = hits / len(common) if common else math.nan
    return Measurement(
        "lazy re-collect after the source grew",
        target,
        share,
        "charged 2 x epsilon for 2 evaluations; <= 0.5 of cells show the exact change",
        math.isclose(charged, 2.0) and bool(common) and share <= 0.5,
        f"charged {charged:g} x epsilon for 2 evaluations; {hits} of {len(common)} cells showed the exact change.",
    )


# ---- low-order bits (Mironov 2012) ------------------------------------------------------------


def impossible_outputs(outputs: np.ndarray, other_true: float, grid: float | None = None) -> np.ndarray:
    """Which outputs could not come out of the same mechanism on the other table.

    With ``grid`` (the power-of-two grid a release reports): ``x`` is possible iff
    ``(x - other_true) / grid`` is an integer (exact rational arithmetic).  Without it,
    the floating-point test of Mironov (2012): ``x`` is possible iff some double ``n``
    gives ``fl(other_true + n) == x`` (the candidates are ``fl(x - other_true)`` and its
    neighbours, two ulps either side: addition rounds monotonically).  Float Laplace
    noise fails it (an output near 0 has low bits that no sum with 100 can have); noise
    on a grid coarse enough to hold ``other_true`` passes it.
    """
    x = np.asarray(outputs, dtype=np.float64)
    if grid is not None:
        g, exact = Fraction(grid), Fraction(other_true)
        return np.array([((Fraction(float(v)) - exact) / g).denominator != 1 for v in x], dtype=bool)
    t = np.float64(other_true)
    n = x - t
    candidates = [n]
    up = down = n
    for _ in range(2):
        up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        candidates += [up, down]
    possible = np.zeros(len(x), dtype=bool)
    for c in candidates:
        possible |= (t + c) == x
    return ~possible


def low_order_bits(
    side_a: np.ndarray,
    true_a: float,
    side_b: np.ndarray,
    true_b: float,
    *,
    target: str,
    grid: float | None = None,
) -> Measurement:
    """Outputs of one table impossible on the other, both ways (:func:`impossible_outputs`).

    ``side_a`` are independent outputs of the release on table A (true value ``true_a``),
    ``side_b`` on table B.  The bar is 0 on either side: one impossible output tells the
    tables apart with certainty, whatever epsilon says.
    """
    a = impossible_outputs(side_a, true_b, grid)
    b = impossible_outputs(side_b, true_a, grid)
    worst = max(float(a.mean()) if len(a) else 0.0, float(b.mean()) if len(b) else 0.0)
    return Measurement(
        "low-order bits (Mironov 2012)",
        target,
        float(worst),
        "0 outputs of either table impossible on the other",
        int(a.sum()) == 0 and int(b.sum()) == 0 and len(a) > 0 and len(b) > 0,
        f"{int(a.sum())} of {len(a)} outputs at true {true_a:g} impossible at {true_b:g} ({a.mean():.1%}); "
        f"{int(b.sum())} of {len(b)} outputs at true {true_b:g} impossible at {true_a:g} ({b.mean():.1%}).",
    )


# ---- perturbations: several rows per unit, a value changed between runs ------------------


def two_share_z(hits_a: int, n_a: int, hits_b: int, n_b: int) -> float:
    """The two-proportion z statistic (pooled binomial variance); inf when the shares
    differ and the pooled variance is 0, 0 when they agree."""
    pooled = (hits_a + hits_b) / (n_a + n_b)
    diff = hits_a / n_a - hits_b / n_b
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 0.0 if diff == 0 else math.inf
    return abs(diff) / se


def unit_rows_share(
    disguise: Callable[[pl.DataFrame, str], pl.DataFrame],
    table: pl.DataFrame,
    survives: Callable[[pl.DataFrame, pl.DataFrame], np.ndarray],
    *,
    target: str,
    z: float = 5.0,
) -> Measurement:
    """Units of two rows with different values: how often a relation of the two rows
    (``survives(true_pairs, released_pairs)``, e.g. the XOR) survives the disguise,
    against the same rows disguised as two units (independent coins: the baseline).

    ``table`` has columns ``unit``, ``row`` (a unique row id) and the value column(s),
    two rows per unit, sorted by unit; ``disguise(table, key)`` disguises it with the key
    column ``key``.  Passed when the two shares are within ``z`` standard errors.
    """
    truth = table.sort("unit", "row")
    as_units = disguise(truth, "unit").sort("unit", "row")
    as_rows = disguise(truth, "row").sort("unit", "row")
    kept_units = survives(truth, as_units)
    kept_rows = survives(truth, as_rows)
    n = len(kept_units)
    stat = two_share_z(int(kept_units.sum()), n, int(kept_rows.sum()), n)
    return Measurement(
        "several rows of one unit",
        target,
        float(kept_units.mean()),
        f"within {z:g} standard errors of independent coins ({kept_rows.mean():.1%})",
        stat <= z,
        f"the relation survived in {kept_units.mean():.1%} of {n} units keyed by unit, "
        f"{kept_rows.mean():.1%} with each row its own unit; z = {stat:.3g}.",
    )


def changed_value_share(
    disguise: Callable[[pl.DataFrame, Any], pl.DataFrame],
    before: pl.DataFrame,
    after: pl.DataFrame,
    changed: np.ndarray,
    read_off: Callable[[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame], np.ndarray],
    *,
    target: str,
    z: float = 5.0,
    expected: float | None = None,
) -> Measurement:
    """Two runs under one secret; between them some units' values changed.

    ``disguise(table, secret)`` disguises (key column ``unit``); ``changed`` flags the
    units (rows of ``before``/``after``, one per unit, same order) whose value changed;
    ``read_off(true_before, true_after, released_before, released_after)`` says per unit
    whether the released change reads off the true change exactly (e.g. the XOR).  The
    baseline: the second run under another secret (fresh coins).  Passed when the changed
    units' share is within ``z`` standard errors of the baseline and every unchanged
    unit reproduced its released value bit for bit.
    """
    secret, other = _test_secret(101), _test_secret(202)
    first = disguise(before, secret)
    second = disguise(after, secret)
    fresh = disguise(after, other)
    hits = read_off(before, after, first, second)[changed]
    base = read_off(before, after, first, fresh)[changed]
    value_columns = [c for c in before.columns if c != "unit"]
    same = ~changed
    stable = all(
        first.filter(pl.Series(same))[c].equals(second.filter(pl.Series(same))[c]) for c in value_columns
    )
    n = len(hits)
    stat = two_share_z(int(hits.sum()), n, int(base.sum()), n)
    note = f" (independent coins in theory: {expected:.1%})" if expected is not None else ""
    return Measurement(
        "a value changed between two runs",
        target,
        float(hits.mean()),
        f"within {z:g} standard errors of fresh coins ({base.mean():.1%}{note}); unchanged values reproduce",
        stat <= z and stable,
        f"{hits.mean():.1%} of {n} changes read off exactly under one secret, {base.mean():.1%} under a fresh "
        f"secret; z = {stat:.3g}; unchanged values reproduced their bits: {stable}.",
    )


def whole_record_xor_share(released: pl.DataFrame, truth: pl.DataFrame, a: str, b: str) -> float:
    """The share of rows whose released ``a XOR b`` equals the true one (binary columns).
    Whole-record randomized response negates every column of a row together: 1.0."""
    kept = (released[a].cast(pl.Boolean) ^ released[b].cast(pl.Boolean)) == (
        truth[a].cast(pl.Boolean) ^ truth[b].cast(pl.Boolean)
    )
    return float(cast(float, kept.mean()) or 0.0)


# ---- the accountant under threads -------------------------------------------------------------


def parallel_thread_charge(budget: float = 0.6, each: float = 0.5) -> Measurement:
    """A spend from another thread while this thread holds a ``parallel`` block open.

    The other thread's release is not part of the block (it does not touch the block's
    disjoint data by construction): it composes sequentially.  Measured: the epsilon
    accepted in all (the block's largest plus the other thread's, if accepted) against
    what the accountant charged.  Passed when the charge covers every accepted release
    and stays within the budget (the other thread's spend refused, or charged in full).
    """
    from polars_ppdm.dp.accountant import BudgetAccountant
    from polars_ppdm.exceptions import BudgetExceededError

    accountant = BudgetAccountant(budget)
    accepted: list[float] = []
    entered, done = threading.Event(), threading.Event()

    def other() -> None:
        entered.wait(10)
        try:
            accountant.spend(each, "another thread's release")
            accepted.append(each)
        except BudgetExceededError:
            pass
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with accountant.parallel("this thread's disjoint releases") as block:
        block.spend(each, "part 1")
        accepted.append(each)
        entered.set()
        done.wait(10)
    thread.join(10)
    released = sum(accepted)
    charged = accountant.spent
    return Measurement(
        "spend from another thread inside a parallel block",
        "BudgetAccountant.parallel",
        charged,
        f"charged >= accepted ({released:g}) and <= the budget ({budget:g})",
        charged + 1e-12 >= released and charged <= budget * (1 + 1e-9),
        f"accepted {released:g} of epsilon in {len(accepted)} release(s); charged {charged:g} of a {budget:g} budget.",
    )


# ---- refusals, data bounds, guessable secrets -----------------------------------------------


def refusal_before_charge(
    release: Callable[[pl.DataFrame, Any], Any],
    table: pl.DataFrame,
    figures: Sequence[float],
    *,
    target: str,
    zcdp: bool = False,
) -> Measurement:
    """A release over a table with NaN values, charged to an accountant (a zCDP one with
    ``zcdp``: a Gaussian release must be refused for its data, not for its kind of cost).

    It must be refused (any exception but a budget refusal) before the accountant is
    charged, and the message must carry none of ``figures`` (the NaN count, the row
    count, the data's values).  ``release(table, accountant)`` runs it, collecting a
    lazy result.
    """
    from polars_ppdm.dp.accountant import BudgetAccountant
    from polars_ppdm.exceptions import BudgetExceededError

    accountant = BudgetAccountant(rho=10.0) if zcdp else BudgetAccountant(10.0)
    message, refused = "", False
    try:
        out = release(table, accountant)
        if isinstance(out, pl.LazyFrame):
            out.collect()
    except BudgetExceededError as error:  # refused for its cost, not its data: not this test
        message = str(error)
    except Exception as error:
        refused, message = True, str(error)
    numbers = {float(v) for v in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?", message)}
    said = sorted(f for f in figures if float(f) in numbers)
    return Measurement(
        "a NaN refused before any charge, naming no figure of the data",
        target,
        accountant.spent,
        "refused; spent 0; the message names none of the data's figures",
        refused and accountant.spent == 0 and not said,
        f"refused: {refused}; spent {accountant.spent:g}; figures of the data in the message: {said}; "
        f"message: {message[:300]!r}",
    )


def data_bounds_leak(
    release: Callable[[pl.DataFrame], pl.DataFrame],
    table: pl.DataFrame,
    column: str,
    *,
    target: str,
) -> Measurement:
    """``bounds="data"``: does the release publish the data's exact minimum or maximum?

    ``release(table)`` runs the release with ``bounds="data"``; its output's
    ``<column>_low`` / ``<column>_high`` columns are compared with the true extremes.  A
    refusal passes; so does a bound estimated under its own budget (not the exact one).
    """
    from polars_ppdm.exceptions import InvalidParameterError, PrivacyLeakWarning

    true_low, true_high = float(cast(float, table[column].min())), float(cast(float, table[column].max()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        try:
            out = release(table)
        except InvalidParameterError as error:
            return Measurement(
                "bounds='data'", target, 0.0, "the exact extremes are not released", True, f"refused: {error}"
            )
    low = float(cast(float, out[f"{column}_low"].min()))
    high = float(cast(float, out[f"{column}_high"].max()))
    leaked = [name for name, got, true in (("min", low, true_low), ("max", high, true_high)) if got == true]
    return Measurement(
        "bounds='data'",
        target,
        float(len(leaked)),
        "neither exact extreme released",
        not leaked,
        f"the true min {true_low!r} and max {true_high!r}; released bounds {low!r}, {high!r}; exact: {leaked}.",
    )


def guessable_secret(
    release: Callable[[Any], Any],
    secrets: Sequence[Any] = (7, bytes(16), "00" * 16),
    *,
    target: str,
) -> Measurement:
    """Each guessable secret must be refused (a :class:`~polars_ppdm.exceptions.SecretError`
    or an error naming the secret) before anything is released."""
    from polars_ppdm.exceptions import SecretError

    accepted = []
    for secret in secrets:
        try:
            out = release(secret)
            if isinstance(out, pl.LazyFrame):
                out.collect()
            accepted.append(secret)
        except SecretError:
            pass
        except Exception as error:
            if "secret" not in str(error).lower():
                raise
    shown = [s if isinstance(s, int) else f"{type(s).__name__} of zeros" for s in accepted]
    return Measurement(
        "guessable secret",
        target,
        float(len(accepted)),
        "every guessable secret refused",
        not accepted,
        f"accepted: {shown} of {len(secrets)} guessable secrets.",
    )


def recompute_noise(
    release: Callable[[pl.DataFrame, Any, float], Cells],
    table: pl.DataFrame,
    empty: pl.DataFrame,
    secret: Any,
    *,
    epsilon: float,
    target: str,
) -> Measurement:
    """The attack on a guessable secret: release the *empty* table under the guessed
    secret (pure noise, when the noise is keyed by the secret and the cell only) and
    subtract it from the published release.  Measured: the share of cells recovered
    exactly (the truth: the release at epsilon 1e9 under a test secret).  A refusal of
    the guessable secret passes (nothing was published)."""
    from polars_ppdm.exceptions import SecretError

    try:
        published = release(table, secret, epsilon)
    except SecretError as error:
        return Measurement(
            "recompute the noise of a guessable secret", target, 0.0, "refused", True, str(error)[:120]
        )
    noise = release(empty, secret, epsilon)
    exact = release(table, _test_secret(0), EXACT_EPSILON)
    cells = [c for c in published if c in noise and c in exact]
    hits = sum(_close(published[c] - noise[c], exact[c], abs(published[c])) for c in cells)
    share = hits / len(cells) if cells else math.nan
    return Measurement(
        "recompute the noise of a guessable secret",
        target,
        share,
        "refused, or no cell recovered exactly",
        bool(cells) and hits == 0,
        f"published under a guessable secret; {hits} of {len(cells)} cells recovered exactly by subtracting the "
        "release of an empty table under the guessed secret.",
    )
