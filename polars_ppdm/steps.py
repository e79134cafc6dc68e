"""The pipeline's step vocabulary: the ``[[perturb]]`` and ``[[release]]`` steps as
validated pydantic models, and what each step spends.

It sits below both users of the words: :mod:`polars_ppdm.jobs` (the pipeline file,
``ppdm plan`` and ``ppdm run``) and :mod:`polars_ppdm.reporting` (the report describes
the steps in the same words).  It imports neither: a report never depends on the job
that runs it.  :mod:`polars_ppdm.jobs.config` re-exports every name here, and adds the
file around the steps (``[dataset]``, ``[secret]``, ``[output]``) and its messages.

Examples
--------
>>> from pydantic import TypeAdapter
>>> step = TypeAdapter(PerturbStep).validate_python(
...     {"step": "rr_disguise", "columns": "smoker", "epsilon": 1.0})
>>> step.title, step_label("perturb", 1, step), step_epsilon(step)
('rr_disguise(smoker)', '[[perturb]] 1 rr_disguise(smoker)', 1.0)
>>> step_cost(step, zcdp=True)
0.5
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from polars_ppdm.audit.ldp import rr_epsilon
from polars_ppdm.exceptions import InvalidParameterError

__all__ = [
    "FULL_PASS_STEPS",
    "NO_FINITE_EPSILON",
    "PERTURB_STEPS",
    "RELEASE_STEPS",
    "AddNoise",
    "Aggregate",
    "Bound",
    "Columns",
    "DPContinualCounts",
    "DPGroupBy",
    "DPHistogram",
    "DPKMeans",
    "DPQuadtree",
    "Drop",
    "EcdfResample",
    "Keep",
    "PerturbStep",
    "Positive",
    "Probability",
    "PublicGroup",
    "RRApriori",
    "RRDisguise",
    "RRSupport",
    "ReleaseStep",
    "Scalar",
    "Spiral",
    "StrictModel",
    "listify",
    "step_charge_note",
    "step_cost",
    "step_delta",
    "step_epsilon",
    "step_label",
    "step_rho",
]

# A value a k-ary column may take (TOML has no null).
Scalar = str | int | float | bool
Columns = Annotated[list[str], Field(min_length=1)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
# A (low, high) pair: a TOML array of two numbers.
Bound = Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)]


def listify(value: Any) -> Any:
    """One name or a list of them, as a list (``columns = "x"`` is ``columns = ["x"]``).

    Examples
    --------
    >>> listify("x"), listify(["x", "y"])
    (['x'], ['x', 'y'])
    """
    return [value] if isinstance(value, str) else value


class StrictModel(BaseModel):
    """A table of the pipeline file: the base of every step and section model."""

    # extra="forbid": an unknown parameter is an error, never ignored.  strict: "1" is not 1.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Step(StrictModel):
    columns: Columns

    @field_validator("columns", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return listify(value)

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


class _Perturbation(_Step):
    """A step that changes the values of its columns.

    Missing values
        A perturbation disguises values, not whether one is missing: a null is published
        as null (randomized response, additive noise, the ECDF's and the spiral's new
        values are drawn for the values there are), and no epsilon bounds that (one
        person's answer turned into a null changes the output with certainty).  ``ppdm
        run`` therefore refuses a null in the step's columns before it reserves anything
        (``nulls = "refuse"``, the default), unless the step says ``nulls = "keep"``: the
        nulls are then published as they are, and the plan and the manifest say so.
    """

    nulls: Literal["refuse", "keep"] = "refuse"


class RRDisguise(_Perturbation):
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

    Missing values
        As every perturbation's (``nulls``, :class:`_Perturbation`).
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


class EcdfResample(_Perturbation):
    """ECDF resampling (:func:`polars_ppdm.ecdf_resample`); needs a full pass (ranks)."""

    step: Literal["ecdf_resample"]
    bins: Annotated[int, Field(ge=1)] | dict[str, Annotated[int, Field(ge=1)]] = 100
    link: Literal["rank", "none"] = "rank"
    shuffle: bool = False
    round_integers: bool = False


class Spiral(_Perturbation):
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


class AddNoise(_Perturbation):
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


class _Mechanism(StrictModel):
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


class Aggregate(StrictModel):
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


class _Grouped(StrictModel):
    """A release per group: ``by`` (one column or several) and the public groups' check."""

    by: Columns

    @field_validator("by", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return listify(value)

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
    """How a randomized-response step's charge was worked out (or why it has none), and
    what another perturbation publishes undisguised (its nulls, if kept), for plans,
    manifests and reports; None for other steps."""
    nulls = (
        '; nulls = "keep": nulls are published as they are (whether a value is missing is not disguised)'
        if getattr(step, "nulls", None) == "keep"
        else ""
    )
    if not isinstance(step, RRDisguise):
        return nulls[2:] or None
    if step.no_finite_epsilon:
        return f"{NO_FINITE_EPSILON}; accepted by accept_no_finite_epsilon = true; never charged as an epsilon{nulls}"
    per = " + ".join(f"{step.column_epsilon(c):g}" for c in step.columns)
    if privacy_unit is None:
        return (
            f"epsilon per distinct value ({per}); each row is its own unit (no [dataset] key): one value per "
            f"column{nulls}"
        )
    bound = (
        f"max_values_per_unit = {step.max_values_per_unit} (a declared public bound)"
        if step.max_values_per_unit is not None
        else "max_values_per_unit = 1 (the default: one value per unit and column)"
    )
    return (
        f"epsilon per distinct value ({per}) x {bound}: the coins are keyed by unit, column and value; the "
        f"run refuses, before it reserves anything, data in which a unit ({privacy_unit!r}) has more "
        f"distinct values of a column than the bound{nulls}"
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
