"""The year ahead of a dataset run on a schedule: its budget over the runs to come.

From public figures only -- the ledger's budget and spends, the pipeline's parameters and
the noise's law -- never from the data: what the dataset has used so far, what each
future run of today's pipeline takes (a continual release's tree is charged once, by the
run that starts it: later runs take nothing for it), how many more runs the budget pays
for and so when it runs out, and for each continual release the standard deviation of
its running total on the night each future period is published
(:func:`polars_ppdm.dp.continual.expected_rmse`).

Runs are assumed to come one per period of the (first) continual release -- the night
after each period ends, as ``ppdm run --as-of`` publishes it -- and one per day when the
pipeline has no continual release.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from polars_ppdm.reporting._shown import number
from polars_ppdm.reporting.model import ContinualOutlook, Plot, PlotSeries, YearAhead

__all__ = ["ContinualSchedule", "ahead_text", "assumption", "pipeline_year_ahead", "sd_summary", "year_ahead"]

#: Runs shown ahead when nothing else bounds them (one a day: the year ahead).
YEAR = 365
#: Points a curve of the year ahead is drawn with at most (a horizon can be 2^26 periods).
_POINTS = 400
_DAYS = {"day": 1, "week": 7}


class ContinualSchedule(NamedTuple):
    """A continual release as the year ahead needs it: its parameters and the last period
    published so far."""

    label: str
    horizon: int
    through: int
    rho: float
    max_contributions: int = 1
    start: dt.date | None = None  # None: numbered periods
    every: str = "day"


def _sampled(first: int, last: int) -> list[int]:
    """The integers ``first .. last``, or at most :data:`_POINTS` of them evenly spread
    (both ends kept)."""
    if last < first:
        return []
    if last - first + 1 <= _POINTS:
        return list(range(first, last + 1))
    step = (last - first) / (_POINTS - 1)
    return sorted({first + round(i * step) for i in range(_POINTS)} | {last})


def _fits(left: float, per_run: float) -> int:
    """How many runs of ``per_run`` the budget ``left`` pays for, with the float slack a
    run's own check allows (``needed <= left (1 + 1e-12) + 1e-15``)."""
    bound = left * (1 + 1e-12) + 1e-15
    n = max(math.floor(left / per_run), 0)
    while (n + 1) * per_run <= bound:
        n += 1
    while n > 0 and n * per_run > bound:
        n -= 1
    return n


def _day(base: dt.date, days: int) -> str:
    """The day ``days`` after ``base``, ISO; past the calendar's end (a budget that pays
    for more than ~8,000 years of daily runs) it says so rather than failing the report."""
    if days > (dt.date.max - base).days:
        return f"after {dt.date.max.isoformat()}"
    return (base + dt.timedelta(days=days)).isoformat()


def year_ahead(
    *,
    unit: str,
    budget: float,
    spent: float,
    per_run: float,
    continual: Sequence[ContinualSchedule] = (),
    today: dt.date,
    epsilon_delta: float = 0.0,
    delta_left: float | None = None,
    delta_per_run: float = 0.0,
) -> YearAhead:
    """The year ahead of a dataset (:class:`~polars_ppdm.reporting.model.YearAhead`).

    ``spent`` is what the ledger holds so far (this run included), ``per_run`` what each
    future run of today's pipeline takes, ``continual`` its continual releases (the first
    sets the schedule: one run per period), ``today`` the day of this run (the schedule
    of a pipeline without a continual release: one run a day from tomorrow).
    ``delta_left`` (this run included) and ``delta_per_run``: a pure-DP dataset's delta,
    which partition selection spends: the runs that fit are those both budgets pay for."""
    from polars_ppdm.dp.continual import expected_rmse

    first = continual[0] if continual else None
    if first is None:
        cadence = "day"

        def when(k: int) -> str:
            return _day(today, k)

    elif first.start is None:
        cadence = "period"

        def when(k: int) -> str:
            return f"--as-of {first.through + 1 + k}"

    else:
        cadence = first.every
        start, days = first.start, _DAYS[first.every]

        def when(k: int) -> str:
            # Period p is published once it is over: as of the first day of period p + 1.
            return _day(start, (first.through + 1 + k) * days)

    possible = min((c.horizon - 1 - c.through for c in continual), default=None)
    if possible is not None:
        possible = max(possible, 0)
    left = max(budget - spent, 0.0)
    fit = None if per_run <= 0 else _fits(left, per_run)
    delta_fit = (
        None if delta_left is None or delta_per_run <= 0 else _fits(max(delta_left, 0.0), delta_per_run)
    )
    delta_binds = delta_fit is not None and (fit is None or delta_fit < fit)
    if delta_binds:
        fit = delta_fit
    binds = fit is not None and (possible is None or fit < possible)
    outlooks = []
    for c in continual:
        periods = _sampled(c.through + 1, c.horizon - 1)
        sd = [expected_rmse(c.rho, c.horizon, p, c.max_contributions) for p in periods]
        outlooks.append(ContinualOutlook(c.label, c.horizon, c.through, c.rho, tuple(periods), tuple(sd)))
    shown = possible if possible is not None else YEAR
    runs = _sampled(0, shown)
    if fit is not None and fit < shown:
        runs = sorted({*runs, fit, fit + 1})
    paid = [spent + min(k, fit if fit is not None else k) * per_run for k in runs]
    plots = [
        Plot(
            "line",
            f"Budget spent over the runs ahead (one run per {cadence})",
            "runs from now",
            f"{unit} spent (cumulative)",
            (
                PlotSeries(f"{unit} spent", tuple(float(k) for k in runs), tuple(paid), source="estimate"),
                PlotSeries(
                    f"{unit} budget",
                    (float(runs[0]), float(runs[-1])),
                    (budget, budget),
                    source="limit",
                ),
            ),
            caption="at today's pipeline; a run the budget left cannot pay is refused and spends nothing",
        )
    ]
    for o in outlooks:
        if o.periods:
            plots.append(
                Plot(
                    "line",
                    f"{o.release}: SD of a running total on the night each period is published",
                    "period",
                    "SD of a running total",
                    (
                        PlotSeries(
                            "SD (every group)",
                            tuple(float(p) for p in o.periods),
                            o.sd,
                            source="released",
                        ),
                    ),
                    caption="from the noise's law only (rho, horizon, contributions): the same in every group",
                )
            )
    return YearAhead(
        unit=unit,
        budget=budget,
        spent=spent,
        per_run=per_run,
        cadence=cadence,
        when_next=when(1),
        runs_fit=fit,
        runs_possible=possible,
        last_fit=when(fit) if binds and fit else None,
        refused=when(fit + 1) if binds and fit is not None else None,
        epsilon_delta=epsilon_delta,
        continual=tuple(outlooks),
        plots=tuple(plots),
        delta_left=max(delta_left, 0.0) if delta_binds and delta_left is not None else None,
        over=spent > budget * (1 + 1e-12) or (delta_left is not None and delta_left < 0),
    )


def _amount(ahead: YearAhead, value: float) -> str:
    return f"{ahead.unit} {value:.4g}"


def assumption(ahead: YearAhead) -> str:
    """How the runs are assumed to come."""
    if ahead.cadence == "period":
        return "one run per period of the continual release (--as-of N publishing periods up to N - 1)"
    if ahead.continual:
        return f"one run per {ahead.cadence} of the continual release, as each period ends"
    return "one run per day"


def sd_summary(outlook: ContinualOutlook) -> str:
    """A continual release's running-total SD ahead: at its next period, its largest, and
    at the horizon's last period."""
    top = max(range(len(outlook.sd)), key=outlook.sd.__getitem__)
    return (
        f"{number(outlook.sd[0])} at period {outlook.periods[0]:,}, at most {number(outlook.sd[top])} "
        f"(period {outlook.periods[top]:,}), {number(outlook.sd[-1])} at the horizon's last period "
        f"{outlook.periods[-1]:,}"
    )


def ahead_text(ahead: YearAhead) -> str:
    """The year ahead in one line: what each run takes, how many more fit, when the
    budget runs out (under :func:`assumption`)."""
    left = ahead.left
    # Where the delta budget binds first (partition selection), the runs are counted in it.
    what_left = f"{left:.4g} left" if ahead.delta_left is None else f"delta {ahead.delta_left:g} left"
    used = f"used {_amount(ahead, ahead.spent)} of {ahead.budget:.4g}"
    if ahead.unit == "rho" and ahead.epsilon_delta > 0:
        used += (
            f" (epsilon {ahead.epsilon_at(ahead.spent):.4g} of {ahead.epsilon_at(ahead.budget):.4g} "
            f"at delta {ahead.epsilon_delta:g})"
        )
    head = f"year ahead, at {assumption(ahead)}: {used}; each run takes {_amount(ahead, ahead.per_run)}"
    if ahead.over:
        tail = "this run does not fit in the budget: it would be refused, and every run after it"
    elif ahead.runs_fit is None:
        tail = "the runs spend nothing: the budget does not run out" + (
            f" (the horizon ends after {ahead.runs_possible:,} more runs)"
            if ahead.runs_possible is not None
            else ""
        )
    elif ahead.refused is None:
        assert ahead.runs_possible is not None
        tail = (
            f"the {ahead.runs_possible:,} runs left before the horizon ends all fit "
            f"(leaving {max(left - ahead.runs_possible * ahead.per_run, 0.0):.4g})"
        )
    elif ahead.runs_fit == 0:
        tail = f"no more run fits in the {what_left}: the next ({ahead.refused}) would be refused"
    else:
        tail = (
            f"{ahead.runs_fit:,} more {'run fits' if ahead.runs_fit == 1 else 'runs fit'} in the {what_left}, "
            f"the last {ahead.last_fit}; "
            f"the budget runs out then: the run {ahead.refused} would be refused"
        )
    sds = "; ".join(f"{o.release}: running total's SD {sd_summary(o)}" for o in ahead.continual if o.periods)
    return f"{head}; {tail}" + (f"; {sds}" if sds else "")


def pipeline_year_ahead(
    pipeline: Any,
    *,
    spent: float,
    budget: float,
    throughs: Mapping[str, int],
    started: Collection[str],
    today: dt.date,
    epsilon_delta: float = 0.0,
    delta_left: float | None = None,
) -> YearAhead:
    """The year ahead of ``pipeline`` (a validated :class:`~polars_ppdm.jobs.config.Pipeline`):
    ``throughs`` the last period each continual release (by label) has published,
    ``started`` the labels of those whose tree is charged (their runs take nothing)."""
    from polars_ppdm.steps import DPContinualCounts, step_label

    continual = [
        ContinualSchedule(
            label,
            step.horizon,
            throughs[label],
            step.rho,
            step.max_contributions,
            step.start,
            step.every,
        )
        for index, step in enumerate(pipeline.release, 1)
        if isinstance(step, DPContinualCounts) and (label := step_label("release", index, step)) in throughs
    ]
    spends = pipeline.spends(started=started)
    per_run = math.fsum(cost for _, cost, _ in spends)
    return year_ahead(
        unit=pipeline.dataset.unit,
        budget=budget,
        spent=spent,
        per_run=per_run,
        continual=continual,
        today=today,
        epsilon_delta=epsilon_delta,
        delta_left=delta_left,
        delta_per_run=math.fsum(delta for _, _, delta in spends),
    )
