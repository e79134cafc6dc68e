"""What a privacy and utility report holds, before it is rendered.

The report is built in two steps: :mod:`~polars_ppdm.reporting.columns` and :mod:`~polars_ppdm.reporting.releases` compute these
objects from the data (the released table, the releases, the steps' parameters, the
ledger and -- for the internal version only -- the original table), and
:mod:`polars_ppdm.reporting.html` renders them to one self-contained HTML page.  Nothing
here holds a frame: every value the page shows is in one of these objects, so what the
public version can disclose is exactly what its sections hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "VERSIONS",
    "Budget",
    "ColumnSection",
    "ContinualOutlook",
    "Figure",
    "Plot",
    "PlotSeries",
    "ReleaseSection",
    "Report",
    "Uniqueness",
    "Version",
    "YearAhead",
]

Version = Literal["internal", "public"]
VERSIONS: tuple[Version, ...] = ("internal", "public")

PlotKind = Literal["bars", "histogram", "ecdf", "scatter", "line"]


@dataclass(frozen=True)
class Figure:
    """One number (or short text) the report shows, with what it means in plain words.

    ``value`` is already rounded for display by whoever computes it; ``explanation`` is
    one sentence a data owner understands (``"0 = the same distribution, 1 = disjoint"``).
    """

    name: str
    value: float | int | str
    explanation: str
    unit: str = ""


@dataclass(frozen=True)
class PlotSeries:
    """One series of a plot: bars (``x`` categories or bin left edges, ``y`` heights and
    optional ``error`` half-widths), histogram (``x`` edges, len(y) + 1), ECDF (``x``
    sorted values, ``y`` cumulative shares), scatter (``x``, ``y`` points) or line (``x``,
    ``y`` points joined, ``error`` half-widths drawn as a band around them)."""

    label: str
    x: tuple[float | str, ...]
    y: tuple[float, ...]
    error: tuple[float, ...] | None = None
    # "original" series appear in the internal version only (the renderer colours them);
    # "limit": a public bound drawn as a reference line (a budget).
    source: Literal["original", "released", "estimate", "limit"] = "released"


@dataclass(frozen=True)
class Plot:
    kind: PlotKind
    title: str
    x_label: str
    y_label: str
    series: tuple[PlotSeries, ...]
    caption: str = ""


@dataclass(frozen=True)
class ColumnSection:
    """One published (or dropped) column: how it was perturbed, what it still serves,
    what an attacker can still learn, and a one-line verdict."""

    column: str
    method: str  # the step's name in the pipeline vocabulary: "rr_disguise", "keep", ...
    parameters: dict[str, str]  # the step's parameters for this column, as displayed
    verdict: str  # one plain-language sentence
    utility: tuple[Figure, ...] = ()
    # The first is the headline the summary and the verdict show: the measured attack
    # when this version has one (rank linkage, ...), else what the method guarantees.
    risk: tuple[Figure, ...] = ()
    plots: tuple[Plot, ...] = ()
    notes: tuple[str, ...] = ()  # e.g. "a column of type List(Int64): no plot suits it"


@dataclass(frozen=True)
class ReleaseSection:
    """One aggregate release (rr_support, rr_apriori, a DP release)."""

    name: str  # the release's output name or a label
    method: str
    columns: tuple[str, ...]
    parameters: dict[str, str]
    title: str = ""  # what it releases ("dp_group_by by channel: count, mean of amount"); "" -> name
    figures: tuple[Figure, ...] = ()  # epsilon, noise scale, 95% interval of a typical cell
    plots: tuple[Plot, ...] = ()
    preview: tuple[tuple[str, ...], ...] = ()  # header row, then up to 20 rows, as text
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContinualOutlook:
    """What a continual release will publish over the rest of its horizon: the standard
    deviation of its running total (the same in every group) on the night each future
    period is published.  Follows from its parameters only (the noise's law)."""

    release: str  # the step's label
    horizon: int
    through: int  # the last period published so far
    rho: float
    periods: tuple[int, ...]  # future periods (evenly sampled when there are many)
    sd: tuple[float, ...]  # the running total's SD at each of them


@dataclass(frozen=True)
class YearAhead:
    """The budget of a dataset run on a schedule: what it has used, what each future run
    of today's pipeline will take, and how many more runs it pays for.

    Runs are assumed one per period of the (first) continual release, else one per day;
    ``cadence`` says which.  ``when_next`` and ``last_fit`` / ``refused`` say the runs'
    dates (ISO) or, for numbered periods, their ``--as-of`` numbers."""

    unit: str  # "epsilon" or "rho"
    budget: float
    spent: float  # used so far, every run the ledger holds
    per_run: float  # what each future run of today's pipeline takes
    cadence: str  # "day", "week" or "period" (numbered periods)
    when_next: str  # when the next run runs
    runs_fit: int | None  # more runs the budget pays for; None: no limit (the runs spend nothing)
    runs_possible: int | None  # runs left before a continual release's horizon ends; None: no horizon
    last_fit: str | None = None  # when the last run the budget pays for runs
    refused: str | None = None  # when the first run it cannot pay would run (refused)
    epsilon_delta: float = 0.0  # zCDP: the delta at which rho is stated as an epsilon
    continual: tuple[ContinualOutlook, ...] = ()
    plots: tuple[Plot, ...] = ()
    delta_left: float | None = None  # the delta left, where it binds before the budget (partition selection)
    over: bool = False  # this run (counted as spent) does not fit in the budget or the delta itself

    @property
    def left(self) -> float:
        return max(self.budget - self.spent, 0.0)

    def epsilon_at(self, rho: float) -> float:
        """zCDP: the epsilon ``rho`` means at :attr:`epsilon_delta` (0 for rho 0)."""
        from polars_ppdm.dp.zcdp import rho_to_epsilon

        return rho_to_epsilon(rho, self.epsilon_delta) if rho > 0 else 0.0


@dataclass(frozen=True)
class Budget:
    """The dataset's privacy budget in the ledger around this run.

    ``unit`` "rho": a zCDP dataset, whose amounts are rho and whose ``epsilon_delta`` is
    the delta at which they are stated as an epsilon (:meth:`epsilon_at`); its delta
    fields stay 0 (zCDP spends no delta of its own)."""

    dataset: str
    total: float
    spent_before: float
    spent_after: float
    delta_total: float = 0.0  # the dataset's delta budget (0: none)
    delta_before: float = 0.0
    delta_after: float = 0.0
    # When the identical earlier run that this one repeats was recorded (ISO time): the
    # ledger already holds its charge, so this run spent nothing.  None: a run that spent.
    repeats: str | None = None
    unit: str = "epsilon"  # or "rho" (zCDP)
    epsilon_delta: float = 0.0  # zCDP: the delta of the (epsilon, delta) a rho means
    ahead: YearAhead | None = None  # the year ahead at this pipeline (None: not worked out)

    @property
    def remaining(self) -> float:
        return self.total - self.spent_after

    @property
    def delta_remaining(self) -> float:
        return max(self.delta_total - self.delta_after, 0.0)

    def epsilon_at(self, rho: float) -> float:
        """zCDP: the epsilon ``rho`` means at :attr:`epsilon_delta` (0 for rho 0)."""
        from polars_ppdm.dp.zcdp import rho_to_epsilon

        return rho_to_epsilon(rho, self.epsilon_delta) if rho > 0 else 0.0


@dataclass(frozen=True)
class Uniqueness:
    """How well the columns published unchanged single out a released row, taken together.

    They are quasi-identifiers: whoever knows them of a person (a region, an age band)
    looks the person up.  ``uniques`` are the sample uniques (as sdcMicro and ARX count
    them): rows whose combination of these columns no other released row has;
    ``smallest_group`` is k-anonymity's k.  Null counts as a value.  Computed from the
    released table only (its values are public), so both versions show it.
    """

    columns: tuple[str, ...]  # the columns published unchanged; () when there are none
    rows: int
    groups: int  # distinct combinations
    uniques: int
    smallest_group: int  # k; 0 when there is no row or no such column


@dataclass(frozen=True)
class Report:
    title: str
    version: Version
    created: str  # ISO time
    rows: int  # of the released table (its height is public)
    columns: tuple[ColumnSection, ...]
    releases: tuple[ReleaseSection, ...] = ()
    budget: Budget | None = None
    notes: tuple[str, ...] = field(default=())
    uniqueness: Uniqueness | None = None  # None: no table is published
