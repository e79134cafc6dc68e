"""The pipeline file: a TOML document, validated by a pydantic schema.

Every step's parameters carry the library's names (README, "Parameters across the
library"); the row key and the secret are given once, in ``[dataset]`` and ``[secret]``,
and passed to every step.  A bad file is refused with one line per problem naming the
step, the field, what is allowed and what was found (:class:`PipelineError`); the value
of anything under ``[secret]`` is never shown.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import stat
import tomllib
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from polars_ppdm.audit.ldp import rr_epsilon
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.jobs.errors import PipelineError

__all__ = [
    "NO_FINITE_EPSILON",
    "PERTURB_STEPS",
    "RELEASE_STEPS",
    "Pipeline",
    "load_pipeline",
    "parse_pipeline",
    "step_charge_note",
    "step_cost",
    "step_delta",
    "step_epsilon",
    "step_rho",
]

# A value a k-ary column may take (TOML has no null).
Scalar = str | int | float | bool
Columns = Annotated[list[str], Field(min_length=1)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
# A (low, high) pair: a TOML array of two numbers.
Bound = Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)]


def _listify(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class _Model(BaseModel):
    # extra="forbid": an unknown parameter is an error, never ignored.  strict: "1" is not 1.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Step(_Model):
    columns: Columns

    @field_validator("columns", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _listify(value)

    @field_validator("columns")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        twice = sorted({c for c in value if value.count(c) > 1})
        if twice:
            msg = f"names the column(s) {twice} more than once"
            raise ValueError(msg)
        return value

    @property
    def title(self) -> str:
        return f"{getattr(self, 'step', '?')}({', '.join(self.columns)})"

    def parameters(self) -> dict[str, Any]:
        """The step's parameters as given (None left out), for plans and manifests."""
        return self.model_dump(mode="json", exclude_none=True)


def _bounds_cover(bounds: dict[str, Bound], columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in bounds]
    extra = [c for c in bounds if c not in columns]
    if missing or extra:
        msg = (
            f"'bounds' needs one public [low, high] pair per column of 'columns' {list(columns)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; {extra} are not in 'columns'" if extra else "")
        )
        raise ValueError(msg)
    for column, (low, high) in bounds.items():
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            msg = f"'bounds' of column {column!r} must be finite with low < high. Got [{low:g}, {high:g}] instead"
            raise ValueError(msg)


# ---- perturb steps ---------------------------------------------------------------------


#: What whole-record randomized response over two or more columns protects, in words.
NO_FINITE_EPSILON = (
    "no finite epsilon: the record is deniable only up to its complement (whole-record randomized "
    "response flips every column of the step with one coin, so the XOR of any two released columns "
    "is the true XOR; paper 003, Du & Zhan)"
)


class RRDisguise(_Step):
    """Randomized response (:func:`polars_ppdm.rr_disguise`).

    What it is charged
        The coins are keyed by (privacy unit, column, value): a unit whose rows hold m
        distinct values of a column gets m independent epsilon-LDP releases of that
        column.  With a ``[dataset] key`` (a unit may have several rows) the step is
        charged ``epsilon x max_values_per_unit`` per column, where
        ``max_values_per_unit`` is a **declared public bound** (default 1): ``ppdm run``
        reads the key and the step's columns before it reserves anything and refuses data
        in which some unit has more distinct values of a column than the bound, with a
        message that carries no count from the data.  Without a key every row is its own
        unit (one value per column), and ``max_values_per_unit`` is refused.

    Whole record
        ``mode = "whole_record"`` over two or more columns (one coin for the whole record)
        is not epsilon-LDP for any finite epsilon: the record is deniable only up to its
        complement.  A pipeline (every pipeline has a budget) refuses it unless the step
        says ``accept_no_finite_epsilon = true``; it is then charged nothing, and the plan,
        manifest and report say what it protects (:data:`NO_FINITE_EPSILON`).  Its ``p``
        or ``epsilon`` is the coin's parameter, never the step's epsilon.
    """

    step: Literal["rr_disguise"]
    p: Probability | dict[str, Probability] | None = None
    epsilon: Positive | dict[str, Positive] | None = None
    mode: Literal["per_attribute", "whole_record"] = "per_attribute"
    categories: list[Scalar] | dict[str, list[Scalar]] | None = None
    accept_no_finite_epsilon: bool = False
    max_values_per_unit: Annotated[int, Field(ge=1)] | None = None

    @property
    def no_finite_epsilon(self) -> bool:
        """Whole-record randomized response over two or more columns: no finite epsilon."""
        return self.mode == "whole_record" and len(self.columns) >= 2

    @property
    def values_per_unit(self) -> int:
        """The declared bound on a unit's distinct values per column (1 if not declared)."""
        return self.max_values_per_unit or 1

    @model_validator(mode="after")
    def _one_of(self) -> RRDisguise:
        if (self.p is None) == (self.epsilon is None):
            msg = "needs exactly one of 'p' and 'epsilon' (the keep probability or the local-DP epsilon)"
            raise ValueError(msg)
        if self.accept_no_finite_epsilon and not self.no_finite_epsilon:
            msg = (
                "'accept_no_finite_epsilon' is only for mode = \"whole_record\" over two or more columns (the one "
                "randomized response without a finite epsilon); this step has a finite epsilon: leave it out"
            )
            raise ValueError(msg)
        for name in ("p", "epsilon", "categories"):
            value = getattr(self, name)
            if isinstance(value, dict):
                _per_column_keys(name, value, self.columns)
        return self

    def k(self, column: str) -> int:
        """The number of values of ``column``: its categories, else 2 (binary)."""
        cats = self.categories
        if isinstance(cats, dict):
            cats = cats.get(column)
        return len(cats) if cats else 2

    def column_epsilon(self, column: str) -> float:
        if self.epsilon is not None:
            return self.epsilon[column] if isinstance(self.epsilon, dict) else self.epsilon
        assert self.p is not None
        p = self.p[column] if isinstance(self.p, dict) else self.p
        return rr_epsilon(p, self.k(column))


class EcdfResample(_Step):
    """ECDF resampling (:func:`polars_ppdm.ecdf_resample`); needs a full pass (ranks)."""

    step: Literal["ecdf_resample"]
    bins: Annotated[int, Field(ge=1)] | dict[str, Annotated[int, Field(ge=1)]] = 100
    link: Literal["rank", "none"] = "rank"
    shuffle: bool = False
    round_integers: bool = False


class Spiral(_Step):
    """Log-spiral perturbation (:func:`polars_ppdm.spiral`); its key goes to ``path`` (0600)."""

    step: Literal["spiral"]
    bounds: dict[str, Bound]
    path: Annotated[str, Field(min_length=1)]
    rounds: Annotated[int, Field(ge=1)] = 7
    factors: Bound = [0.1, 5.0]
    angle: Bound = [0.01 * math.pi, 0.5 * math.pi]
    growth: Positive | None = None

    @model_validator(mode="after")
    def _check(self) -> Spiral:
        if len(self.columns) < 2:
            msg = "rotates at least 2 columns"
            raise ValueError(msg)
        _bounds_cover(self.bounds, self.columns)
        return self


class AddNoise(_Step):
    """Additive noise (:func:`polars_ppdm.add_noise`)."""

    step: Literal["add_noise"]
    scale: Positive | dict[str, Positive]
    dist: Literal["gaussian", "uniform"] = "gaussian"

    @model_validator(mode="after")
    def _check(self) -> AddNoise:
        if isinstance(self.scale, dict):
            _per_column_keys("scale", self.scale, self.columns)
        return self


class Keep(_Step):
    """Columns published as they are."""

    step: Literal["keep"]


class Drop(_Step):
    """Columns left out of the published table."""

    step: Literal["drop"]


PerturbStep = Annotated[
    RRDisguise | EcdfResample | Spiral | AddNoise | Keep | Drop, Field(discriminator="step")
]
PERTURB_STEPS = ("rr_disguise", "ecdf_resample", "spiral", "add_noise", "keep", "drop")
# Steps whose output depends on the whole column, not on each row alone.
FULL_PASS_STEPS = {"ecdf_resample": "ranks and the empirical distribution of the whole column"}

# ---- release steps ---------------------------------------------------------------------


class _Release(_Step):
    output: Annotated[str, Field(min_length=1)]


class RRSupport(_Release):
    """Corrected supports of disguised columns (:func:`polars_ppdm.rr_support`); the
    randomized-response parameters are those of the rr_disguise steps of the columns."""

    step: Literal["rr_support"]
    itemsets: list[list[str]] | None = None


class RRApriori(_Release):
    """Association rules from disguised binary columns (:func:`polars_ppdm.rr_apriori`)."""

    step: Literal["rr_apriori"]
    min_support: Probability
    min_confidence: Probability
    max_length: Annotated[int, Field(ge=1)] | None = None


class _DP(_Release):
    epsilon: Positive
    bounds: dict[str, Bound]
    max_contributions: Annotated[int, Field(ge=1)] = 1

    @model_validator(mode="after")
    def _check(self) -> _DP:
        _bounds_cover(self.bounds, self.columns)
        return self


class _Mechanism(_Model):
    """``mechanism = "laplace"`` (the default; ``epsilon``) or ``"gaussian"`` (``rho``, a
    zCDP cost: the dataset needs a zCDP budget)."""

    mechanism: Literal["laplace", "gaussian"] = "laplace"
    rho: Positive | None = None

    def _check_mechanism(self, epsilon: float | None) -> None:
        if self.mechanism == "gaussian" and (self.rho is None or epsilon is not None):
            msg = "mechanism = \"gaussian\" takes 'rho' (its zCDP cost) and no 'epsilon'"
            raise ValueError(msg)
        if self.mechanism == "laplace" and (epsilon is None or self.rho is not None):
            msg = "mechanism = \"laplace\" (the default) takes 'epsilon' and no 'rho' (rho is for mechanism = \"gaussian\")"
            raise ValueError(msg)


class DPHistogram(_Mechanism, _DP):
    """A differentially private histogram (:func:`polars_ppdm.dp_histogram`)."""

    step: Literal["dp_histogram"]
    epsilon: Positive | None = None  # type: ignore[assignment]
    bins: Annotated[int, Field(ge=1)] | dict[str, Annotated[int, Field(ge=1)]] = 10

    @model_validator(mode="after")
    def _check_noise(self) -> DPHistogram:
        self._check_mechanism(self.epsilon)
        return self


class DPQuadtree(_DP):
    """A differentially private quadtree (:func:`polars_ppdm.dp_quadtree`)."""

    step: Literal["dp_quadtree"]
    gamma: Annotated[float, Field(gt=0, lt=1)] = 0.3
    max_height: Annotated[int, Field(ge=0)] | None = None
    threshold: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    n: Positive | None = None


class DPKMeans(_DP):
    """Differentially private k-means centres (:func:`polars_ppdm.dp_kmeans`)."""

    step: Literal["dp_kmeans"]
    k: Annotated[int, Field(ge=1)]
    method: Literal["quadtree", "lloyd", "grid"] = "quadtree"
    gamma: Annotated[float, Field(gt=0, lt=1)] = 0.3
    max_height: Annotated[int, Field(ge=0)] | None = None
    threshold: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    n: Positive | None = None
    iterations: Annotated[int, Field(ge=1)] = 5


class Aggregate(_Model):
    """One aggregate of a dp_group_by step: ``{ aggregate = "count" | "count_units" }``,
    ``{ aggregate = "sum" | "mean" | "variance" | "std", column = "...", bounds = [low,
    high] }`` or ``{ aggregate = "quantile", column = "...", q = 0.9 (or [0.25, 0.75]),
    bounds = [low, high], candidates = 1001 (or a list) }`` (``"median"``: q = 0.5), with
    an optional ``name`` and ``epsilon`` (its share; default an even share)."""

    aggregate: Literal["count", "count_units", "sum", "mean", "variance", "std", "quantile", "median"]
    column: Annotated[str, Field(min_length=1)] | None = None
    bounds: Bound | None = None
    # Checked by dp.quantile, with its messages ("a number in [0, 1]", "at most six decimals").
    q: Any = None
    candidates: Any = None
    name: Annotated[str, Field(min_length=1)] | None = None
    epsilon: Positive | None = None

    @model_validator(mode="after")
    def _check(self) -> Aggregate:
        ranked = self.aggregate in ("quantile", "median")
        if self.aggregate in ("count", "count_units"):
            if self.column is not None or self.bounds is not None:
                what = "rows" if self.aggregate == "count" else "privacy units"
                msg = f"a {self.aggregate} takes no 'column' or 'bounds' (it counts {what})"
                raise ValueError(msg)
        elif self.column is None or self.bounds is None:
            msg = (
                f"a {self.aggregate} needs 'column' and 'bounds' = [low, high] (public bounds of the values)"
            )
            raise ValueError(msg)
        elif not self.bounds[0] < self.bounds[1]:
            msg = f"'bounds' must have low < high. Got [{self.bounds[0]:g}, {self.bounds[1]:g}] instead"
            raise ValueError(msg)
        if (self.q is None) == (self.aggregate == "quantile"):
            msg = (
                "a quantile needs 'q' (in [0, 1], or a list)"
                if self.aggregate == "quantile"
                else f"a {self.aggregate} takes no 'q'"
            )
            raise ValueError(msg)
        if self.candidates is not None and not ranked:
            msg = f"a {self.aggregate} takes no 'candidates' (only a quantile or median chooses among them)"
            raise ValueError(msg)
        if ranked:
            self.to_dp()  # the candidates within the bounds, increasing; q not repeated
        return self

    def to_dp(self) -> Any:
        """The library's :class:`~polars_ppdm.dp.DPAggregate` of this table (a list of
        them for a quantile of several q)."""
        from polars_ppdm import dp

        if self.aggregate == "count":
            return dp.count(name=self.name, epsilon=self.epsilon)
        if self.aggregate == "count_units":
            return dp.count_units(name=self.name, epsilon=self.epsilon)
        assert self.column is not None and self.bounds is not None  # checked above
        bounds = (self.bounds[0], self.bounds[1])
        if self.aggregate in ("quantile", "median"):
            try:
                if self.aggregate == "median":
                    return dp.median(
                        self.column,
                        bounds=bounds,
                        candidates=self.candidates,
                        name=self.name,
                        epsilon=self.epsilon,
                    )
                assert self.q is not None
                return dp.quantile(
                    self.column,
                    self.q,
                    bounds=bounds,
                    candidates=self.candidates,
                    name=self.name,
                    epsilon=self.epsilon,
                )
            except InvalidParameterError as error:
                raise ValueError(str(error).rstrip(".")) from None
        make = {"sum": dp.sum, "mean": dp.mean, "variance": dp.variance, "std": dp.std}[self.aggregate]
        return make(self.column, bounds=bounds, name=self.name, epsilon=self.epsilon)

    def names(self) -> list[str]:
        """The output columns it makes."""
        made = self.to_dp()
        return [a.name for a in (made if isinstance(made, list) else [made])]


# A public group: one value per group-key column.
PublicGroup = dict[str, Scalar]


class _Grouped(_Model):
    """A release per group: ``by`` (one column or several) and the public groups' check."""

    by: Columns

    @field_validator("by", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _listify(value)

    def _check_public_groups(self, groups: Sequence[PublicGroup] | None) -> None:
        for group in groups or ():
            if sorted(group) != sorted(self.by):
                msg = f"each of 'public_groups' must give a value for each column of 'by' {self.by}. Got {group} instead"
                raise ValueError(msg)


class DPGroupBy(_Mechanism, _Grouped):
    """Differentially private count / sum / mean per group (:func:`polars_ppdm.dp_group_by`).

    The privacy unit is the dataset's ``key`` (each row its own unit without one).
    ``public_groups`` lists the groups inline (``[{ region = "north" }, ...]``); without
    them the groups are chosen by DP partition selection, which needs ``delta``."""

    step: Literal["dp_group_by"]
    aggregates: Annotated[list[Aggregate], Field(min_length=1)]
    epsilon: Positive | None = None
    max_groups_contributed: Annotated[int, Field(ge=1)] = 1
    max_rows_per_group: Annotated[int, Field(ge=1)] = 1
    public_groups: Annotated[list[PublicGroup], Field(min_length=1)] | None = None
    delta: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = None
    intervals: bool = False
    non_negative: bool = False
    output: Annotated[str, Field(min_length=1)]

    @model_validator(mode="after")
    def _check(self) -> DPGroupBy:
        self._check_mechanism(self.epsilon)
        if (self.public_groups is None) == (self.delta is None):
            msg = (
                "needs exactly one of 'public_groups' (the groups to release, listed) and 'delta' (for DP "
                "partition selection, which releases only groups with enough people)"
            )
            raise ValueError(msg)
        self._check_public_groups(self.public_groups)
        return self

    def arguments(self, privacy_unit: str | None) -> dict[str, Any]:
        """The step's arguments of :func:`polars_ppdm.dp_group_by` (and of its checks),
        with the dataset's privacy unit."""
        import polars as pl

        return {
            "by": self.by,
            "aggregates": [a.to_dp() for a in self.aggregates],
            "epsilon": self.epsilon,
            "privacy_unit": privacy_unit,
            "max_groups_contributed": self.max_groups_contributed,
            "max_rows_per_group": self.max_rows_per_group,
            "public_groups": None
            if self.public_groups is None
            else pl.DataFrame(self.public_groups).select(self.by),
            "delta": self.delta,
            "mechanism": self.mechanism,
            "rho": self.rho,
        }

    @property
    def columns(self) -> list[str]:
        """Every input column the step reads: the group keys, then the aggregated columns."""
        read = [a.column for a in self.aggregates if a.column is not None]
        return list(dict.fromkeys([*self.by, *read]))

    @property
    def title(self) -> str:
        return f"dp_group_by({', '.join(self.by)})"

    def parameters(self) -> dict[str, Any]:
        """The step's parameters as given (None left out), for plans and manifests."""
        return self.model_dump(mode="json", exclude_none=True)


class DPContinualCounts(_Grouped):
    """Counts per public group of every period and their running totals, released
    continually by the binary tree mechanism (:func:`polars_ppdm.dp_continual_counts`).

    The privacy unit is the dataset's ``key`` (each row its own unit without one), with
    at most ``max_contributions`` events over the whole horizon.  The tree is charged
    ``rho`` once, by the run that starts it; every later run publishes the periods
    completed by its ``--as-of`` date (or period number) from the nodes the ledger keeps,
    charged nothing.  ``start`` (a TOML date) makes ``period`` a date column; without it
    ``period`` holds period numbers."""

    step: Literal["dp_continual_counts"]
    period: Annotated[str, Field(min_length=1)]
    start: dt.date | None = None
    every: Literal["day", "week"] = "day"
    horizon: Annotated[int, Field(ge=1, le=1 << 26)]
    rho: Positive
    max_contributions: Annotated[int, Field(ge=1)] = 1
    public_groups: Annotated[list[PublicGroup], Field(min_length=1)]
    output: Annotated[str, Field(min_length=1)]

    @model_validator(mode="after")
    def _check(self) -> DPContinualCounts:
        self._check_public_groups(self.public_groups)
        return self

    @property
    def columns(self) -> list[str]:
        """Every input column the step reads: the group keys and the period."""
        return list(dict.fromkeys([*self.by, self.period]))

    @property
    def title(self) -> str:
        return f"dp_continual_counts({', '.join(self.by)})"

    def parameters(self) -> dict[str, Any]:
        """The step's parameters as given (None left out), for plans and manifests."""
        return self.model_dump(mode="json", exclude_none=True)

    def through(self, as_of: dt.date | int | None) -> int:
        """The last period complete as of ``as_of`` (a date for a date ``period``, the
        current period's number otherwise): the periods before it.  Refused when none
        is complete yet, or when ``as_of`` is past the horizon's end."""
        if self.start is None:
            if not isinstance(as_of, int) or isinstance(as_of, bool):
                msg = (
                    f"{self.title} counts period numbers (no 'start'): give the current period's number, "
                    f"`ppdm run --as-of N` (periods 0 .. N-1 are published). Got {_as_of_text(as_of)}."
                )
                raise PipelineError(msg)
            current = as_of
        else:
            day = dt.datetime.now(dt.UTC).date() if as_of is None else as_of
            if not isinstance(day, dt.date):
                msg = f"{self.title} has dated periods (start = {self.start}): --as-of must be a date (YYYY-MM-DD). Got {_as_of_text(as_of)}."
                raise PipelineError(msg)
            current = (day - self.start).days // (7 if self.every == "week" else 1)
        if current < 1:
            msg = f"{self.title}: no period is complete as of {_as_of_text(as_of)} (period 0 ends later); nothing to publish yet."
            raise PipelineError(msg)
        if current > self.horizon:
            msg = (
                f"{self.title}: as of {_as_of_text(as_of)} the release's horizon of {self.horizon} periods is over; a "
                "continual release never publishes past its horizon (start a new release: a new step with its "
                "own output and budget)."
            )
            raise PipelineError(msg)
        return current - 1


def _as_of_text(as_of: dt.date | int | None) -> str:
    """``--as-of`` as the user wrote it (a date as YYYY-MM-DD; none: today)."""
    return "today (UTC)" if as_of is None else str(as_of)


ReleaseStep = Annotated[
    RRSupport | RRApriori | DPHistogram | DPQuadtree | DPKMeans | DPGroupBy | DPContinualCounts,
    Field(discriminator="step"),
]
RELEASE_STEPS = (
    "rr_support",
    "rr_apriori",
    "dp_histogram",
    "dp_quadtree",
    "dp_kmeans",
    "dp_group_by",
    "dp_continual_counts",
)

# ---- the file ----------------------------------------------------------------------------

_HEX_SECRET = re.compile(r"(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{64})")


class Dataset(_Model):
    """The data, its privacy unit and its budget: ``epsilon_budget`` (pure accounting),
    ``rho_budget`` (zCDP), or ``epsilon_budget`` with ``delta_budget`` and ``accounting =
    "zcdp"`` (converted, explicitly, to the largest rho within them)."""

    name: Annotated[str, Field(min_length=1)]
    inputs: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    epsilon_budget: Positive | None = None
    rho_budget: Positive | None = None
    accounting: Literal["pure", "zcdp"] | None = None
    # Pure: None is whatever the ledger holds (0 for a new dataset); a number is checked
    # against it.  zCDP: the delta at which the rho is stated as an epsilon (1e-6 if None).
    delta_budget: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] | None = None
    key: Annotated[str, Field(min_length=1)] | None = None
    format: Literal["parquet", "csv", "ipc"] | None = None
    ledger: Annotated[str, Field(min_length=1)] | None = None

    @field_validator("inputs", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _listify(value)

    @model_validator(mode="after")
    def _budget_kind(self) -> Dataset:
        if self.epsilon_budget is None and self.rho_budget is None:
            msg = (
                "needs a budget: 'epsilon_budget' (the total epsilon this dataset may ever spend, kept in the "
                "ledger) or 'rho_budget' (a zCDP budget)"
            )
            raise ValueError(msg)
        if self.epsilon_budget is not None and self.rho_budget is not None:
            msg = (
                "has both 'epsilon_budget' and 'rho_budget'; give one (for an (epsilon, delta) budget in zCDP, "
                'epsilon_budget with delta_budget and accounting = "zcdp")'
            )
            raise ValueError(msg)
        if self.rho_budget is not None and self.accounting == "pure":
            msg = 'has \'rho_budget\', a zCDP budget, with accounting = "pure"; leave accounting out or say "zcdp"'
            raise ValueError(msg)
        if self.accounting == "zcdp" and self.epsilon_budget is not None and not self.delta_budget:
            msg = (
                "accounting = \"zcdp\" with 'epsilon_budget' converts (epsilon, delta) to a rho: it needs "
                "'delta_budget' in (0, 1), e.g. 1e-6"
            )
            raise ValueError(msg)
        if self.zcdp and self.delta_budget == 0:
            msg = "'delta_budget' of a zCDP dataset is the delta of its epsilon: in (0, 1), e.g. 1e-6"
            raise ValueError(msg)
        return self

    @property
    def zcdp(self) -> bool:
        """Whether the budget is a rho (zero-concentrated DP)."""
        return self.rho_budget is not None or self.accounting == "zcdp"

    @property
    def unit(self) -> str:
        return "rho" if self.zcdp else "epsilon"

    @property
    def budget(self) -> float:
        """The total budget in :attr:`unit` (an (epsilon, delta) zCDP budget converted by
        :func:`polars_ppdm.dp.zcdp.rho_for`)."""
        if self.rho_budget is not None:
            return self.rho_budget
        assert self.epsilon_budget is not None
        if self.zcdp:
            from polars_ppdm.dp.zcdp import rho_for

            assert self.delta_budget is not None
            return rho_for(self.epsilon_budget, self.delta_budget)
        return self.epsilon_budget

    @property
    def budget_field(self) -> str:
        """The field the budget was given in (for messages)."""
        return "rho_budget" if self.rho_budget is not None else "epsilon_budget"


class SecretSource(_Model):
    env: Annotated[str, Field(min_length=1)] | None = None
    file: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one(self) -> SecretSource:
        if (self.env is None) == (self.file is None):
            msg = "needs exactly one of 'env' (an environment variable's name) and 'file' (a 0600 file)"
            raise ValueError(msg)
        for name, value in (("env", self.env), ("file", self.file)):
            if value is not None and _HEX_SECRET.fullmatch(value.strip()):
                what = "a variable's name" if name == "env" else "a file's path"
                msg = f"{name!r} holds 32 or 64 hex digits: that is a secret, not {what}; a literal secret is refused"
                raise ValueError(msg)
        return self


class Output(_Model):
    manifest: Annotated[str, Field(min_length=1)]
    table: Annotated[str, Field(min_length=1)] | None = None


#: Where a pipeline runs: the same steps and bits on either (``ppdm run --engine``).
ENGINES = ("polars", "spark")


class Pipeline(_Model):
    """A validated pipeline file.  Paths are as written; :attr:`base` resolves them."""

    engine: Literal["polars", "spark"] = "polars"
    dataset: Dataset
    secret: SecretSource
    output: Output
    perturb: list[PerturbStep] = []
    release: list[ReleaseStep] = []
    base: Path = Field(default=Path(), exclude=True)

    def resolve(self, path: str) -> Path:
        """``path`` relative to the pipeline file's folder (an absolute path as it is)."""
        return self.base / os.path.expanduser(path)

    @property
    def ledger_path(self) -> Path | None:
        return None if self.dataset.ledger is None else self.resolve(self.dataset.ledger)

    def steps(self) -> Iterator[tuple[str, int, Any]]:
        """``(section, index from 1, step)`` of every step in file order."""
        for i, perturb in enumerate(self.perturb, 1):
            yield "perturb", i, perturb
        for i, release in enumerate(self.release, 1):
            yield "release", i, release

    def epsilons(self) -> list[tuple[str, float]]:
        """``(step label, epsilon)`` of everything the run releases that spends budget:
        each rr_disguise step (:func:`step_epsilon`: the sum over its columns of epsilon
        per distinct value x ``max_values_per_unit``; whole-record over two or more columns
        has no finite epsilon and is not in the list) and each DP release."""
        return [(label, eps) for label, eps, _ in self.spends()]

    def spends(self, started: Collection[str] = ()) -> list[tuple[str, float, float]]:
        """``(step label, cost, delta)`` of everything that spends budget, the cost in
        the dataset's unit (:func:`step_cost`: epsilon, or rho for a zCDP dataset), with
        each release's delta (0 but for partition selection).  ``started``: the labels of
        the continual releases whose tree the ledger already holds (charged when it
        started: their later runs spend nothing)."""
        out = []
        for section, index, step in self.steps():
            if isinstance(step, DPContinualCounts) and step_label(section, index, step) in started:
                continue
            cost = step_cost(step, zcdp=self.dataset.zcdp)
            if cost is not None:
                out.append((step_label(section, index, step), cost, step_delta(step)))
        return out

    def canonical(self) -> dict[str, Any]:
        """The file's content after validation (defaults filled in), for the run id.

        Without the engine: both engines give the same bits, so a run on Spark is an
        identical re-run of the same run on Polars (and spends nothing).  The rr_disguise
        options added later (``accept_no_finite_epsilon``, ``max_values_per_unit``) appear
        only when given, so the run ids of pipelines written before them do not change."""
        dumped = self.model_dump(mode="json", exclude={"engine"})
        # Fields added with zCDP appear only when given (pure pipelines keep their run ids).
        for field in ("rho_budget", "accounting"):
            if dumped["dataset"].get(field) is None:
                dumped["dataset"].pop(field, None)
        for step in dumped.get("release", ()):
            for aggregate in step.get("aggregates", ()):  # fields added with quantiles (issue 29)
                for field in ("q", "candidates"):
                    if aggregate.get(field) is None:
                        aggregate.pop(field, None)
            if step.get("step") in ("dp_histogram", "dp_group_by") and step.get("mechanism") == "laplace":
                del step["mechanism"]
                if step.get("rho") is None:
                    step.pop("rho", None)
        for step in dumped.get("perturb", ()):
            if step.get("step") == "rr_disguise":
                if step.get("accept_no_finite_epsilon") is False:
                    del step["accept_no_finite_epsilon"]
                if step.get("max_values_per_unit") is None:
                    step.pop("max_values_per_unit", None)
        return dumped


def step_label(section: str, index: int, step: Any) -> str:
    """How a step is named in messages, plans, manifests and the ledger."""
    return f"[[{section}]] {index} {step.title}"


def step_epsilon(step: Any) -> float | None:
    """The epsilon a step spends, or None when it is not differentially private.

    rr_disguise: the sum over its columns of the column's epsilon (per distinct value)
    times the declared ``max_values_per_unit`` (1 if not declared); whole-record over two
    or more columns has no finite epsilon (None: it is never charged as one coin's)."""
    if isinstance(step, RRDisguise):
        if step.no_finite_epsilon:
            return None
        return step.values_per_unit * math.fsum(step.column_epsilon(c) for c in step.columns)
    if isinstance(step, _DP | DPGroupBy):
        return step.epsilon
    return None


def step_rho(step: Any) -> float | None:
    """The rho of a Gaussian release or of a continual release's whole tree (None for
    any other step)."""
    if isinstance(step, DPContinualCounts):
        return step.rho
    return step.rho if isinstance(step, _Mechanism) and step.mechanism == "gaussian" else None


def step_cost(step: Any, *, zcdp: bool) -> float | None:
    """What a step charges a dataset, in its unit, or None when it charges nothing.

    Pure accounting: the step's epsilon (:func:`step_epsilon`).  zCDP accounting: a
    Gaussian release's rho, and a pure epsilon-DP step's ``epsilon^2 / 2`` (Bun and
    Steinke 2016, Proposition 1.4; for rr_disguise, the epsilon of a unit's whole
    disguised record)."""
    rho = step_rho(step)
    if rho is not None:
        return rho if zcdp else None
    epsilon = step_epsilon(step)
    if epsilon is None:
        return None
    return epsilon * epsilon / 2 if zcdp else epsilon


def step_charge_note(step: Any, privacy_unit: str | None) -> str | None:
    """How a randomized-response step's charge was worked out (or why it has none), for
    plans, manifests and reports; None for other steps."""
    if not isinstance(step, RRDisguise):
        return None
    if step.no_finite_epsilon:
        return (
            f"{NO_FINITE_EPSILON}; accepted by accept_no_finite_epsilon = true; never charged as an epsilon"
        )
    per = " + ".join(f"{step.column_epsilon(c):g}" for c in step.columns)
    if privacy_unit is None:
        return f"epsilon per distinct value ({per}); each row is its own unit (no [dataset] key): one value per column"
    bound = (
        f"max_values_per_unit = {step.max_values_per_unit} (a declared public bound)"
        if step.max_values_per_unit is not None
        else "max_values_per_unit = 1 (the default: one value per unit and column)"
    )
    return (
        f"epsilon per distinct value ({per}) x {bound}: the coins are keyed by unit, column and value; the "
        f"run refuses, before it reserves anything, data in which a unit ({privacy_unit!r}) has more"
    )


def step_delta(step: Any) -> float:
    """The delta a step spends: partition selection's, else 0."""
    return step.delta if isinstance(step, DPGroupBy) and step.delta is not None else 0.0


def _per_column_keys(name: str, value: dict[str, Any], columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in value]
    extra = [c for c in value if c not in columns]
    if missing or extra:
        msg = (
            f"'{name}' as a table needs one entry per column of 'columns' {list(columns)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; {extra} are not in 'columns'" if extra else "")
        )
        raise ValueError(msg)


# ---- loading and the messages ------------------------------------------------------------

_LITERAL_SECRET = (
    "a literal secret is refused: anyone who reads the pipeline file could undo the "
    'perturbation. Give [secret] env = "NAME" (an environment variable) or '
    'file = "PATH" (a file of mode 0600, e.g. from `ppdm secret --output PATH`)'
)


_MAX_PIPELINE_BYTES = 16 << 20  # a pipeline file is a few KB; a larger file is not one


def load_pipeline(path: str | os.PathLike[str]) -> Pipeline:
    """Read and validate a pipeline file.

    Raises
    ------
    PipelineError
        One line per problem, each naming the step and the field.
    InputError
        When the file itself cannot be read.
    """
    from polars_ppdm.jobs.errors import InputError

    source = Path(path)
    try:
        # A FIFO or a device would block the read (or never end): only a regular file.
        if not stat.S_ISREG(os.stat(source).st_mode):
            msg = f"The pipeline file {str(source)!r} is not a regular file (a FIFO, a device or a folder)."
            raise InputError(msg)
        if os.stat(source).st_size > _MAX_PIPELINE_BYTES:
            msg = f"The pipeline file {str(source)!r} is larger than {_MAX_PIPELINE_BYTES >> 20} MiB: not a pipeline."
            raise InputError(msg)
        text = source.read_bytes()
    except OSError as error:
        msg = f"The pipeline file {str(source)!r} cannot be read: {error.strerror or error}."
        raise InputError(msg) from None
    try:
        document = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        msg = f"{source}: not a TOML file: {error}"
        raise PipelineError(msg) from None
    except RecursionError:
        msg = f"{source}: not a pipeline file: its tables or arrays are nested too deeply to read."
        raise PipelineError(msg) from None
    return parse_pipeline(document, base=source.resolve().parent, name=str(source))


def parse_pipeline(document: dict[str, Any], *, base: Path = Path(), name: str = "pipeline") -> Pipeline:
    """Validate a parsed TOML document (see :func:`load_pipeline`).

    Examples
    --------
    >>> doc = {"dataset": {"name": "d", "inputs": "d.parquet", "epsilon_budget": 1.0},
    ...        "secret": {"env": "PPDM_SECRET"}, "output": {"manifest": "m.json"},
    ...        "release": [{"step": "dp_histogram", "columns": "x", "bounds": {"x": [0, 1]},
    ...                     "epsilon": 0, "output": "h.parquet"}]}
    >>> parse_pipeline(doc)
    Traceback (most recent call last):
    ...
    polars_ppdm.jobs.errors.PipelineError: pipeline: [[release]] 1 (dp_histogram), field 'epsilon': must be greater than 0. Got 0 instead.
    """
    problems = list(_literal_secrets(document))
    if problems:
        raise _error(name, problems)
    try:
        pipeline = Pipeline.model_validate(document)
    except ValidationError as error:
        raise _error(name, _messages(document, error.errors())) from None
    pipeline = pipeline.model_copy(update={"base": base})
    problems = list(_cross_checks(pipeline))
    if problems:
        raise _error(name, problems)
    return pipeline


def _error(name: str, problems: list[str]) -> PipelineError:
    if len(problems) == 1:
        return PipelineError(f"{name}: {problems[0]}")
    return PipelineError(f"{name}: {len(problems)} problems:\n" + "\n".join(f"  {p}" for p in problems))


def _literal_secrets(document: dict[str, Any]) -> Iterator[str]:
    """A secret written into the file (anywhere a step could take ``secret=``)."""
    section = document.get("secret")
    if isinstance(section, dict):
        for field in section:
            if field not in ("env", "file"):
                yield f"[secret], field {field!r}: {_LITERAL_SECRET}."
    elif "secret" in document:
        yield f"'secret': {_LITERAL_SECRET}."
    for where in ("dataset", "output"):
        if isinstance(document.get(where), dict) and "secret" in document[where]:
            yield f"[{where}], field 'secret': {_LITERAL_SECRET}."
    for section_name in ("perturb", "release"):
        steps = document.get(section_name)
        if isinstance(steps, list):
            for i, step in enumerate(steps, 1):
                if isinstance(step, dict) and "secret" in step:
                    yield f"{_step_where(section_name, i, step)}, field 'secret': {_LITERAL_SECRET}."


def _step_where(section: str, index: int, step: Any) -> str:
    kind = step.get("step") if isinstance(step, dict) else None
    return f"[[{section}]] {index}" + (f" ({kind})" if isinstance(kind, str) else "")


_ALLOWED: dict[str, type[BaseModel]] = {
    "dataset": Dataset,
    "secret": SecretSource,
    "output": Output,
    "rr_disguise": RRDisguise,
    "ecdf_resample": EcdfResample,
    "spiral": Spiral,
    "add_noise": AddNoise,
    "keep": Keep,
    "drop": Drop,
    "rr_support": RRSupport,
    "rr_apriori": RRApriori,
    "dp_histogram": DPHistogram,
    "dp_quadtree": DPQuadtree,
    "dp_kmeans": DPKMeans,
    "dp_group_by": DPGroupBy,
    "aggregates": Aggregate,
}


def _fields(model: type[BaseModel]) -> str:
    return ", ".join(name for name in model.model_fields if name != "step")


_KINDS = {
    "a valid dictionary": "a table (one value per column)",
    "a valid number": "a number",
    "a valid list": "a list",
    "a valid string": "a string",
    "a valid integer": "an integer",
    "a valid boolean": "true or false",
    "a valid tuple": "a [low, high] pair",
}


def _messages(document: dict[str, Any], errors: list[Any]) -> list[str]:
    """The errors in the project's words; the several errors of one union field (a
    number, or a table of one per column) become one line."""
    lines: dict[str, list[str]] = {}

    def field_of(error: Any) -> tuple[Any, ...]:
        loc = tuple(error["loc"])
        return loc[:4] if loc[:1] in (("perturb",), ("release",)) else loc[:2]

    fields = [field_of(e) for e in errors]
    for error in errors:
        if (
            isinstance(error.get("input"), dict)
            and error["type"].endswith("_type")
            and fields.count(field_of(error)) > 1
        ):
            continue  # a table was given: the "must be a number" branch says nothing
        line = _message(document, error)
        head, _, rest = line.partition(": must be ")
        if rest:
            lines.setdefault(head, []).append(rest)
        else:
            lines.setdefault(line, [])
    out = []
    for head, rests in lines.items():
        if not rests:
            out.append(head)
            continue
        kinds, got = [], ""
        for rest in rests:
            kind, _, tail = rest.partition(". Got ")
            kinds.append(_KINDS.get(kind, kind))
            got = got or (f" Got {tail}" if tail else "")
        unique = list(dict.fromkeys(kinds))
        out.append(f"{head}: must be {' or '.join(unique)}.{got}")
    return out


def _message(document: dict[str, Any], error: Any) -> str:
    """One pydantic error in the project's words: where, what is allowed, what was found."""
    loc = list(error["loc"])
    kind = error["type"]
    where = "the file"
    model: type[BaseModel] | None = None
    if loc and loc[0] in ("perturb", "release") and len(loc) >= 2 and isinstance(loc[1], int):
        section, index = loc[0], loc[1]
        step = document[section][index]
        where = _step_where(section, index + 1, step)
        loc = loc[2:]
        if loc and isinstance(loc[0], str) and loc[0] in _ALLOWED:
            model = _ALLOWED[loc[0]]
            loc = loc[1:]
    elif loc and loc[0] in ("dataset", "secret", "output"):
        where = f"[{loc[0]}]"
        model = _ALLOWED[str(loc[0])]
        loc = loc[1:]
    # The innermost field named (a union's member types are dropped from the path).
    names = [str(part) for part in loc if isinstance(part, str) and not _is_type_name(part)]
    field = names[0] if names else None
    where_field = f"{where}, field {field!r}" if field else where
    item = loc[1] if len(loc) > 1 and field == loc[0] and isinstance(loc[1], int) else None
    if item is not None:  # an item of a list of tables (an aggregate, a public group)
        where_field += f" item {item + 1}" + (f", field {names[1]!r}" if len(names) > 1 else "")
    elif len(names) > 1:
        where_field += f" for column {names[1]!r}"
    secret_value = error["loc"][:1] == ("secret",)
    got = "" if secret_value else f" Got {_shown_value(error.get('input'))} instead."
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden" and item is not None and field in _ALLOWED:
        return f"{where}, field {field!r} item {item + 1}: unknown parameter {names[-1]!r}; it takes: {_fields(_ALLOWED[field])}."
    if kind == "extra_forbidden":
        allowed = f"; {where.split('(')[-1].rstrip(')')} takes: {_fields(model)}" if model else ""
        if model is None and where == "the file":
            allowed = "; a pipeline file has [dataset], [secret], [output], [[perturb]] and [[release]]"
        return f"{where}: unknown parameter {field!r}{allowed}."
    if kind == "union_tag_invalid":
        section = error["loc"][0]
        steps = PERTURB_STEPS if section == "perturb" else RELEASE_STEPS
        return f"{where}: unknown step {ctx.get('tag')!r}; [[{section}]] steps are: {', '.join(steps)}."
    if kind == "union_tag_not_found":
        section = error["loc"][0]
        steps = PERTURB_STEPS if section == "perturb" else RELEASE_STEPS
        return f"{where}: has no 'step'; give step = one of: {', '.join(steps)}."
    if kind == "missing":
        return f"{where_field}: is required."
    if kind == "literal_error":
        return f"{where_field}: must be one of {ctx.get('expected')}.{got}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = next(iter(ctx.values()), "?")
        bound = f"{bound:g}" if isinstance(bound, float) else bound
        word = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }[kind]
        return f"{where_field}: must be {word} {bound}.{got}"
    text = str(error["msg"])
    text = text.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    text = text.replace("Input should be", "must be").replace("input should be", "must be")
    if kind == "value_error":
        return f"{where_field}: {text}."
    return f"{where_field}: {text[0].lower() + text[1:]}.{got}"


def _shown_value(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters: a message never echoes a huge value."""
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(shown):,} characters)"


def _is_type_name(part: str) -> bool:
    # pydantic puts a union member in the path: 'float', 'dict[str,float]', 'list[...]',
    # 'function-after[...]', 'constrained-float' and such.
    return bool(re.fullmatch(r"[a-z_-]+(\[.*\])?", part)) and (
        "[" in part
        or part in ("float", "int", "str", "bool", "list", "dict", "tuple")
        or part.startswith("constrained-")
    )


def _cross_checks(pipeline: Pipeline) -> Iterator[str]:
    """What one field cannot say alone: columns named twice, budget, paths."""
    named: dict[str, str] = {}
    for index, step in enumerate(pipeline.perturb, 1):
        label = step_label("perturb", index, step)
        for column in step.columns:
            if column in named:
                yield (
                    f"{label}, field 'columns': the column {column!r} is already named by "
                    f"{named[column]}; each column gets exactly one perturb step (a perturbation, keep or drop)."
                )
            else:
                named[column] = label
    for index, step in enumerate(pipeline.perturb, 1):
        if not isinstance(step, RRDisguise):
            continue
        label = step_label("perturb", index, step)
        if step.no_finite_epsilon and not step.accept_no_finite_epsilon:
            yield (
                f"{label}, field 'mode': whole_record over {len(step.columns)} columns has {NO_FINITE_EPSILON}. "
                "It cannot be charged to the budget as any epsilon, so a pipeline refuses it unless the step "
                'says so explicitly: accept_no_finite_epsilon = true (or use mode = "per_attribute", '
                "epsilon-LDP per column)."
            )
        if step.max_values_per_unit is not None and pipeline.dataset.key is None:
            yield (
                f"{label}, field 'max_values_per_unit': the dataset has no privacy unit ([dataset] key), so "
                "every row is its own unit with one value per column; give [dataset] key or leave it out."
            )
    disguised = {c: s for s in pipeline.perturb if isinstance(s, RRDisguise) for c in s.columns}
    for index, release in enumerate(pipeline.release, 1):
        if isinstance(release, RRSupport | RRApriori):
            label = step_label("release", index, release)
            plain = [c for c in release.columns if c not in disguised]
            if plain:
                yield (
                    f"{label}, field 'columns': {plain} are not disguised by an rr_disguise step; "
                    f"{release.step} estimates from randomized-response columns only."
                )
                continue
            modes = {disguised[c].mode for c in release.columns}
            kinds = {"p" if disguised[c].p is not None else "epsilon" for c in release.columns}
            if len(modes) > 1 or len(kinds) > 1:
                yield (
                    f"{label}, field 'columns': its columns were disguised with different "
                    f"{'modes' if len(modes) > 1 else 'kinds of parameter (p and epsilon)'}; give their rr_disguise "
                    "steps one mode and one of p or epsilon."
                )
            if isinstance(release, RRSupport) and release.itemsets:
                stray = sorted({c for s in release.itemsets for c in s} - set(release.columns))
                if stray:
                    yield f"{label}, field 'itemsets': {stray} are not in 'columns'."
    dataset = pipeline.dataset
    if not dataset.zcdp:
        for section, index, step in pipeline.steps():
            if step_rho(step) is not None:
                what = (
                    "'rho': a continual release"
                    if isinstance(step, DPContinualCounts)
                    else "'mechanism': \"gaussian\""
                )
                yield (
                    f"{step_label(section, index, step)}, field {what} costs a rho (zCDP), "
                    "which a pure epsilon budget does not count; give [dataset] rho_budget (or epsilon_budget with "
                    'delta_budget and accounting = "zcdp"), or use mechanism = "laplace" with epsilon.'
                )
    budget, field = dataset.budget, dataset.budget_field
    # zCDP amounts say they are rho; pure ones are epsilons, as the fields say.
    unit = "rho " if dataset.zcdp else ""
    spends = pipeline.epsilons()
    for label, eps in spends:
        if eps > budget * (1 + 1e-12):
            yield (
                f"{label}, field '{'rho' if dataset.zcdp else 'epsilon'}': spends {unit}{eps:g}, more than the "
                f"whole budget [dataset] {field} = {getattr(dataset, field):g}"
                + (f" (rho {budget:g})" if field != "rho_budget" and dataset.zcdp else "")
                + "; it could never run."
            )
    total = math.fsum(eps for _, eps in spends)
    if total > budget * (1 + 1e-12) and all(eps <= budget for _, eps in spends):
        yield (
            f"[dataset], field '{field}': one run spends {unit}{total:g} ("
            + " + ".join(f"{eps:g}" for _, eps in spends)
            + f") but the budget is {unit}{budget:g}; it could never run."
        )
    if dataset.zcdp:
        for label, _, delta in pipeline.spends():
            if delta:
                yield (
                    f"{label}, field 'delta': partition selection spends a delta, which a zCDP budget does not "
                    "compose; give the step public_groups."
                )
    # A zCDP dataset's delta_budget is the delta of its epsilon, not a budget of deltas.
    delta_budget = None if dataset.zcdp else dataset.delta_budget
    deltas = [(label, delta) for label, _, delta in pipeline.spends() if delta]
    total_delta = math.fsum(delta for _, delta in deltas)
    if delta_budget is not None and total_delta > delta_budget * (1 + 1e-12):
        yield (
            f"[dataset], field 'delta_budget': one run spends delta {total_delta:g} ("
            + ", ".join(f"{label}: {delta:g}" for label, delta in deltas)
            + f") but the delta budget is {delta_budget:g}; it could never run."
            + (" Give the dataset a delta_budget, or the steps public_groups." if delta_budget == 0 else "")
        )
    yield from _path_checks(pipeline)


def _path_checks(pipeline: Pipeline) -> Iterator[str]:
    """The written paths against each other and the inputs (:mod:`polars_ppdm.jobs.paths`,
    which ``ppdm plan`` and ``ppdm run`` call again with the pipeline file, the ledger and
    what is on disk)."""
    from polars_ppdm.jobs.paths import path_problems

    yield from path_problems(pipeline)
