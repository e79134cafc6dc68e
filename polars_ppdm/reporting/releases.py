"""The report's section of each ``[[release]]`` step: what it cost and what its numbers are worth.

A DP release shows its epsilon, the noise scale of a cell and the 95% interval of a
cell's noise (computed from the parameters, as OpenDP's ``summarize`` does); a
randomized-response release shows the local-DP epsilon already spent by the disguise
and the 95% interval of its corrected figures.  Every value shown is in the release
itself or follows from the parameters: nothing here reads the original table.  A
section is titled by what it releases (the step, its columns, its aggregates); its
output's path is said below the title.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from polars_ppdm.dp.accuracy import geometric_interval, geometric_sd
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.reporting._shown import number, parameter, share, shares_outside_unit
from polars_ppdm.reporting.model import Figure, Plot, PlotSeries, ReleaseSection

__all__ = ["release_sections"]

_FUNC = "report"
_Z95 = 1.959963984540054
_PREVIEW_ROWS = 20
_PLOT_BARS = 40


class _Found(NamedTuple):
    """What a release's builder finds: its figures, plots and notes."""

    figures: list[Figure]
    plots: list[Plot]
    notes: tuple[str, ...] = ()


def _preview(frame: pl.DataFrame) -> tuple[tuple[str, ...], ...]:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return number(value, 4)
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value)

    head = frame.head(_PREVIEW_ROWS)
    return (tuple(frame.columns), *(tuple(cell(v) for v in row) for row in head.iter_rows()))


def _disguise_cost(columns: Sequence[str], perturb: Sequence[Any], how: str) -> Figure:
    """A randomized-response release spends nothing: its epsilon is the disguise's."""
    disguised = {c: s for s in perturb if s.step == "rr_disguise" for c in s.columns}

    def shown(c: str) -> str:
        if getattr(disguised[c], "no_finite_epsilon", False):
            return "none finite (whole record: deniable only up to its complement)"
        return number(disguised[c].column_epsilon(c))

    epsilons = "; ".join(f"{c}: {shown(c)}" for c in columns if c in disguised)
    return Figure(
        "privacy cost",
        "none beyond the disguise",
        f"{how} the disguised table only (local DP epsilon {epsilons})",
    )


def _rr_support(step: Any, frame: pl.DataFrame, perturb: Sequence[Any]) -> _Found:
    figures = [_disguise_cost(step.columns, perturb, "computed from")]
    plots: list[Plot] = []
    notes: tuple[str, ...] = ()
    value = "frequency" if "frequency" in frame.columns else "support"
    if "std_error" in frame.columns and frame.height:
        se = frame["std_error"].cast(pl.Float64).to_numpy()
        figures.append(
            Figure(
                "95% interval of a typical figure",
                f"± {share(float(np.median(se)) * _Z95)}",
                f"median over the {frame.height} estimates of 1.96 standard errors of the disguise",
            )
        )
        keys = [c for c in frame.columns if c not in {"observed", value, "std_error"}]
        labels = tuple(
            " & ".join(f"{k}={v}" for k, v in zip(keys, row, strict=True))
            if value == "frequency"
            else "+".join(row[0])
            for row in frame.select(keys).iter_rows()
        )
        outside = shares_outside_unit(labels, frame[value].cast(pl.Float64).to_list(), (se * _Z95).tolist())
        notes = (outside,) if outside else ()
        if len(labels) <= _PLOT_BARS:
            series = (
                PlotSeries(
                    "corrected estimate",
                    labels,
                    tuple(float(v) for v in frame[value].to_list()),
                    error=tuple(float(s) * _Z95 for s in se),
                    source="estimate",
                ),
            )
            title = f"Corrected {value} of each {'pattern' if value == 'frequency' else 'itemset'} (95% intervals)"
            plots.append(Plot("bars", title, ", ".join(step.columns), value, series))
    return _Found(figures, plots, notes)


def _rr_apriori(step: Any, frame: pl.DataFrame, perturb: Sequence[Any]) -> _Found:
    figures = [
        _disguise_cost(step.columns, perturb, "mined from"),
        Figure(
            "rules found",
            frame.height,
            f"support >= {share(step.min_support)}, confidence >= {share(step.min_confidence)}",
        ),
    ]
    return _Found(figures, [])


def _dp_noise(step: Any, scale: float, cell: str) -> list[Figure]:
    return [
        Figure("epsilon", number(step.epsilon), "charged to the dataset's budget"),
        Figure(
            "noise scale",
            number(scale),
            f"two-sided geometric noise of scale max_contributions / epsilon{cell}; standard deviation "
            f"{number(geometric_sd(scale))}",
        ),
        Figure(
            "95% interval of a cell",
            f"± {geometric_interval(scale):,}",
            "a noisy count lies within this of the true one 95% of the time",
        ),
    ]


def _gaussian_noise(step: Any, l2: float) -> list[Figure]:
    """A Gaussian release's figures: its rho, its sigma and the exact 95% interval."""
    from polars_ppdm.dp.mechanism import Mechanism

    noise = Mechanism("gaussian", step.rho)
    sigma = noise.scale(l2, l2)
    return [
        Figure("rho", number(step.rho), "charged to the dataset's zCDP budget"),
        Figure(
            "noise sigma",
            number(sigma),
            f"discrete Gaussian noise of sigma max_contributions / sqrt(2 rho); standard deviation "
            f"{number(noise.sd(sigma))}",
        ),
        Figure(
            "95% interval of a cell",
            f"± {noise.half_width(sigma):,}",
            "a noisy count lies within this of the true one 95% of the time",
        ),
    ]


def _dp_histogram(step: Any, frame: pl.DataFrame, perturb: Sequence[Any]) -> _Found:
    if getattr(step, "mechanism", "laplace") == "gaussian":
        figures = _gaussian_noise(step, step.max_contributions)
    else:
        figures = _dp_noise(step, step.max_contributions / step.epsilon, "")
    counts = frame["count"]
    negative = int((counts < 0).sum())
    figures.append(
        Figure(
            "negative cells",
            f"{negative:,} of {frame.height:,}",
            "the noise is unbiased, so empty cells can come out below 0",
        )
    )
    plots = []
    if len(step.columns) == 1 and frame.height:
        (column,) = step.columns
        edges = [*frame[f"{column}_low"].to_list(), frame[f"{column}_high"][-1]]
        plots.append(
            Plot(
                "histogram",
                "Noisy counts per bin",
                column,
                "count",
                (
                    PlotSeries(
                        "noisy count", tuple(edges), tuple(float(c) for c in counts), source="released"
                    ),
                ),
            )
        )
    return _Found(figures, plots)


def _dp_quadtree(step: Any, frame: pl.DataFrame, perturb: Sequence[Any]) -> _Found:
    from polars_ppdm.dp.quadtree import N_SHARE

    # Leaves are counted with (1 - gamma) of what the estimate of N leaves (quadtree.plan_tree).
    rest = step.epsilon * (
        1 - N_SHARE if step.n is None and (step.max_height is None or step.threshold is None) else 1
    )
    figures = _dp_noise(step, step.max_contributions / ((1 - step.gamma) * rest), " of the leaves' share")
    figures[0] = Figure(
        "epsilon",
        number(step.epsilon),
        f"charged to the budget; the leaves' counts get {share(1 - step.gamma)} of it after N's estimate",
    )
    figures.append(Figure("leaves", f"{frame.height:,}", "cells of the released tree"))
    return _Found(figures, [])


def _dp_kmeans(step: Any, frame: pl.DataFrame, perturb: Sequence[Any]) -> _Found:
    figures = [
        Figure("epsilon", number(step.epsilon), "charged to the dataset's budget"),
        Figure("centres", frame.height, f"method {step.method}; from noisy counts only (paper 004)"),
    ]
    plots = []
    if len(step.columns) >= 2 and frame.height:
        x, y = step.columns[:2]
        plots.append(
            Plot(
                "scatter",
                "Released centres",
                x,
                y,
                (
                    PlotSeries(
                        "centre",
                        tuple(frame[x].to_list()),
                        tuple(frame[y].cast(pl.Float64).to_list()),
                        source="estimate",
                    ),
                ),
            )
        )
    return _Found(figures, plots)


def _dp_group_by(step: Any, frame: pl.DataFrame, perturb: Sequence[Any]) -> _Found:
    from polars_ppdm.dp.group_by import noise_request, selection_threshold
    from polars_ppdm.dp.mechanism import Mechanism

    aggregates = dp_aggregates(step)
    gaussian = getattr(step, "mechanism", "laplace") == "gaussian"
    request = noise_request(
        aggregates,
        epsilon=step.epsilon,
        max_groups_contributed=step.max_groups_contributed,
        max_rows_per_group=step.max_rows_per_group,
        delta=step.delta,
        mechanism="gaussian" if gaussian else "laplace",
        rho=step.rho if gaussian else None,
    )
    split = ", ".join(f"{name.strip('_')} {number(eps)}" for name, eps in request.epsilons.items())
    if gaussian:
        figures = [
            Figure(
                "rho",
                number(step.rho),
                f"charged to the dataset's zCDP budget; split evenly over the aggregates: {split}",
            )
        ]
    else:
        figures = [
            Figure("epsilon", number(step.epsilon), f"charged to the dataset's budget; split: {split}")
        ]
    if step.delta is not None:
        threshold = selection_threshold(request.epsilons["__select"], step.delta, step.max_groups_contributed)
        figures += [
            Figure(
                "delta", number(step.delta), "charged to the dataset's delta budget (partition selection)"
            ),
            Figure(
                "groups released",
                f"{frame.height:,}",
                f"chosen by partition selection: a group is released when its noisy count of people reaches "
                f"{threshold} (a group of one person: probability <= delta)",
            ),
        ]
    else:
        figures.append(Figure("groups released", f"{frame.height:,}", "the public groups, every one of them"))
    plots = []
    labels = tuple(" & ".join(str(v) for v in row) for row in frame.select(step.by).iter_rows())
    for a in aggregates:
        errors: tuple[float, ...] | None
        if a.kind == "quantile":
            assert a.candidates is not None
            num, den = a.quantile_fraction()
            figures.append(
                Figure(
                    f"noise of {a.name}",
                    f"one of {len(a.candidates):,} public candidates",
                    f"report noisy max over the candidates' rank scores (q = {num}/{den}), one-sided geometric noise of "
                    f"scale {number(request.quantile_scale(a) / den)} ranks: its error is in ranks, not in the values",
                )
            )
            errors = None
        elif a.kind in ("count", "count_units", "sum"):
            # The noise is integer, in grid units for a sum: its scale and spread in the
            # figure's own units are the grid's multiples.
            units = request.scale(a)
            grid = a.grid("dp_group_by")
            if gaussian:
                noise = Mechanism("gaussian", request.epsilons[a.name])
                half = noise.half_width(units) * grid  # the grid of a count is 1
                law = "discrete Gaussian" + ("" if a.kind != "sum" else f" on a grid of {grid:.3g}")
                spread = f"sigma {number(units * grid)} (SD {number(noise.sd(units) * grid)})"
            else:
                half = geometric_interval(units) * grid
                law = "two-sided geometric" + ("" if a.kind != "sum" else f" on a grid of {grid:.3g}")
                spread = f"scale {number(units * grid)} (SD {number(geometric_sd(units) * grid)})"
            figures.append(
                Figure(
                    f"95% interval of {a.name}",
                    f"± {int(half):,}" if a.kind != "sum" else f"± {number(half)}",
                    f"{law} noise of {spread}, the same in every group"
                    + (" (exact quantile of the discrete law)" if gaussian else ""),
                )
            )
            errors = tuple(float(half) for _ in labels)
        elif f"{a.name}_sd" in frame.columns and frame.height:
            sd = frame[f"{a.name}_sd"].cast(pl.Float64)
            figures.append(
                Figure(
                    f"95% interval of {a.name}",
                    f"± {number(float(np.median(sd.to_numpy())) * _Z95)}",
                    f"median over the groups: a {a.kind}'s noise shrinks as its group grows (noisy sums / noisy count)",
                )
            )
            errors = tuple(float(v) * _Z95 for v in sd.to_list())
        else:
            figures.append(
                Figure(
                    f"noise of {a.name}",
                    "depends on the group's size",
                    "noisy sums / noisy count; intervals = true adds each group's SD and 95% interval",
                )
            )
            errors = None
        if 0 < frame.height <= _PLOT_BARS:
            series = PlotSeries(
                f"noisy {a.name}",
                labels,
                tuple(float(v) for v in frame[a.name].cast(pl.Float64).to_list()),
                error=errors,
                source="released",
            )
            title = f"Noisy {_aggregate(a)} per group" + (" (95% intervals)" if errors else "")
            plots.append(Plot("bars", title, ", ".join(step.by), a.name, (series,)))
    return _Found(figures, plots)


_LINES = 8  # groups a continual release's plot draws at most


def _dp_continual_counts(step: Any, frame: pl.DataFrame, perturb: Sequence[Any]) -> _Found:
    """A continual release: its one rho charge over the horizon, the periods published so
    far, and the noise of its running totals at the last one (the table's own SDs)."""
    from polars_ppdm.kernels.binary_tree import tree_sigma

    periods = (
        "days"
        if step.start is not None and step.every == "day"
        else ("weeks" if step.start is not None else "periods")
    )
    figures = [
        Figure(
            "rho",
            number(step.rho),
            f"charged to the dataset's zCDP budget once, by the run that started the tree, for all "
            f"{step.horizon:,} periods: later runs publish from the same tree and are charged nothing",
        ),
        Figure(
            "horizon",
            f"{step.horizon:,} {periods}",
            "periods 0 .. horizon - 1"
            + (
                f", period 0 the {step.every} starting {step.start.isoformat()}"
                if step.start is not None
                else ""
            )
            + "; nothing is published past it",
        ),
    ]
    if frame.height == 0:
        return _Found(figures, [])
    through = int(frame["period"].cast(pl.Int64).max())  # type: ignore[arg-type]
    last = frame.filter(pl.col("period") == through)
    sd = float(last["running_total_sd"][0])
    count_sd = float(last["count_sd"][0])
    sigma = tree_sigma(step.rho, step.horizon, step.max_contributions)
    figures += [
        Figure(
            "periods published so far",
            f"{through + 1:,} of {step.horizon:,}",
            f"periods 0 .. {through}, each with its count and running total per group",
        ),
        Figure(
            f"SD of a running total at period {through}",
            number(sd),
            "exact, the same in every group: Honaker's estimate from the tree's nodes, each with discrete "
            f"Gaussian noise of sigma {number(sigma)}; a period's count: SD {number(count_sd)}",
        ),
        Figure(
            f"95% interval of a running total at period {through}",
            f"± {number(_Z95 * sd)}",
            "1.96 SD: a normal approximation (the estimate's noise is a sum of discrete Gaussians, close "
            "to normal); a noisy total lies within this of the true one about 95% of the time",
        ),
    ]
    by = list(step.by)
    plots = []
    groups = frame.select(by).unique(maintain_order=True)
    if 0 < groups.height <= _LINES:
        series = []
        for row in groups.iter_rows():
            mine = frame.filter(*(pl.col(c) == v for c, v in zip(by, row, strict=True))).sort("period")
            series.append(
                PlotSeries(
                    " & ".join(str(v) for v in row),
                    tuple(float(p) for p in mine["period"].to_list()),
                    tuple(float(v) for v in mine["running_total"].cast(pl.Float64).to_list()),
                    error=tuple(_Z95 * float(v) for v in mine["running_total_sd"].to_list()),
                    source="released",
                )
            )
        plots.append(
            Plot(
                "line",
                "Noisy running totals per group (95% bands)",
                "period",
                "running total",
                tuple(series),
                caption="bands: 1.96 SD, a normal approximation",
            )
        )
    notes = (
        () if groups.height <= _LINES else (f"{groups.height:,} groups: too many to plot, see the table.",)
    )
    return _Found(figures, plots, notes)


def dp_aggregates(step: Any) -> list[Any]:
    """A dp_group_by step's :class:`~polars_ppdm.dp.DPAggregate` list (a quantile of
    several q is one of each)."""
    made = [a.to_dp() for a in step.aggregates]
    return [b for a in made for b in (a if isinstance(a, list) else [a])]


def _aggregate(a: Any) -> str:
    """An aggregate as the title of its release says it: ``count``, ``mean of amount``,
    ``quantile 0.9 of amount``."""
    if a.kind == "quantile":
        return f"quantile {float(a.q):g} of {a.column}"
    return a.kind if a.column is None else f"{a.kind} of {a.column}"


def _title(step: Any) -> str:
    """What a release releases, as its section's title."""
    if step.step == "dp_group_by":
        return f"dp_group_by by {', '.join(step.by)}: {', '.join(_aggregate(a) for a in dp_aggregates(step))}"
    if step.step == "dp_continual_counts":
        return f"dp_continual_counts by {', '.join(step.by)}: counts per {step.period} and running totals"
    return f"{step.step} of {', '.join(step.columns)}"


_BUILDERS = {
    "rr_support": _rr_support,
    "rr_apriori": _rr_apriori,
    "dp_histogram": _dp_histogram,
    "dp_quadtree": _dp_quadtree,
    "dp_kmeans": _dp_kmeans,
    "dp_group_by": _dp_group_by,
    "dp_continual_counts": _dp_continual_counts,
}


def release_sections(
    release: Sequence[Any],
    perturb: Sequence[Any],
    releases: Mapping[str, pl.DataFrame],
) -> tuple[ReleaseSection, ...]:
    """One section per release step (validated models), from its frame in ``releases``."""
    sections = []
    for step in release:
        frame = releases.get(step.output)
        if frame is None:
            msg = (
                f"The {step.step} release {step.output!r} of {_FUNC} is not in 'releases' "
                f"(it holds {sorted(releases)}): pass each release step's frame by its output."
            )
            raise InvalidParameterError(msg)
        found = _BUILDERS[step.step](step, frame, perturb)
        shown = {
            name: parameter(value)
            for name, value in step.model_dump(exclude={"step", "columns", "output"}).items()
            if value is not None and name != "aggregates"
        }
        shown |= {
            f"aggregate {i}": ", ".join(f"{k} {parameter(v)}" for k, v in a.items() if v is not None)
            for i, a in enumerate(step.model_dump().get("aggregates") or (), 1)
        }
        sections.append(
            ReleaseSection(
                name=step.output,
                method=step.step,
                columns=tuple(step.columns),
                parameters=shown,
                title=_title(step),
                figures=tuple(found.figures),
                plots=tuple(found.plots),
                preview=_preview(frame),
                notes=found.notes
                + (
                    (f"{frame.height:,} rows; the first {_PREVIEW_ROWS} shown.",)
                    if frame.height > _PREVIEW_ROWS
                    else ()
                ),
            )
        )
    return tuple(sections)
