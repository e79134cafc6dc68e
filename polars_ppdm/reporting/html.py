"""A :class:`~polars_ppdm.reporting.model.Report` rendered as one self-contained HTML page.

No script, no web font, no external reference: plots are SVG images embedded as data
URIs, styles are inline, so the page opens offline and can be mailed or archived as
one file.  It reads on a phone (one column, wide tables scroll inside their own box)
and on a laptop (at most ~1100 px wide).  Every text enters the page through
:func:`_h`: bidi controls shown (:func:`~polars_ppdm.reporting._shown.text`), then escaped.

The page opens with a verdict that puts the risks side by side: the rows the columns
published unchanged single out, beside each perturbed column's own risk and the budget.
"""

from __future__ import annotations

import base64
import re
import weakref
from collections.abc import Iterable, Sequence
from html import escape

from polars_ppdm.reporting._shown import share, text
from polars_ppdm.reporting.model import (
    Budget,
    ColumnSection,
    Figure,
    Plot,
    ReleaseSection,
    Report,
    Uniqueness,
)
from polars_ppdm.reporting.plots import plot_svg

__all__ = ["BANNERS", "render"]

BANNERS = {
    "internal": "Internal: shows statistics of the original data. Do not publish.",
    "public": "Public: computed from the released data, the releases and the parameters only.",
}
PAPERS = (
    "Papers: ECDF resampling with rank re-linking (000); log-spiral perturbation, LSDP (002); "
    "randomized response for mining, Wen Han 2006 (003); DPQT k-means, Zhang and Cheng (004). "
    "Report after sdcMicro's (Templ, Kowarik and Meindl 2015)."
)

_CSS = """
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:16px}
h1{font-size:1.6em;margin:.4em 0}
h2{font-size:1.3em;margin:0 0 .3em;overflow-wrap:anywhere}
h3{font-size:1em;margin:1em 0 .3em}
.banner{padding:10px 14px;border-radius:6px;font-weight:600;margin:12px 0}
.banner.internal{background:#fde8e8;border:1px solid #d93025;color:#8a1c14}
.banner.public{background:#e6f4ea;border:1px solid #1e8e3e;color:#0d5225}
section{background:#fff;border:1px solid #e2e2e2;border-radius:8px;padding:14px 16px;margin:16px 0}
.verdict{font-size:1.05em;margin:.2em 0 .6em}
.method{color:#555;font-size:.9em;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.9em;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eee;vertical-align:top}
th{background:#f3f3f3}
td.num{text-align:right;white-space:nowrap}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:8px}
.figure{border:1px solid #eee;border-radius:6px;padding:8px}
.figure .value{font-size:1.3em;font-weight:600}
.figure .name{font-size:.85em;color:#555;text-transform:uppercase;letter-spacing:.03em}
.figure .why{font-size:.85em;color:#444}
.figure.risk{border-left:4px solid #d9730d}
.figure.utility{border-left:4px solid #1f6fb4}
figure{margin:10px 0}
figure img{width:100%;max-width:680px;height:auto;display:block}
figcaption{font-size:.85em;color:#555}
.note{font-size:.9em;color:#555}
footer{font-size:.8em;color:#666;margin:24px 0}
section.overview{border:2px solid #d9730d}
@media (max-width:700px){
.cards table,.cards tbody,.cards tr,.cards td{display:block}
.cards thead{display:none}
.cards tr{border-bottom:2px solid #e2e2e2;padding:6px 0}
.cards td{border:0;padding:2px 4px;overflow-wrap:anywhere}
.cards td:empty{display:none}
.cards td::before{content:attr(data-label) ": ";font-weight:600;color:#555}
}
"""


def _h(value: object) -> str:
    """Any text as HTML: the one way text enters the page (bidi controls shown, escaped)."""
    return escape(text(value))


def _slug(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _figures(figures: Iterable[Figure], kind: str) -> str:
    cells = [
        f'<div class="figure {kind}"><div class="name">{_h(f.name)}</div>'
        f'<div class="value">{_h(str(f.value))}{_h(" " + f.unit) if f.unit else ""}</div>'
        f'<div class="why">{_h(f.explanation)}</div></div>'
        for f in figures
    ]
    return f'<div class="figures">{"".join(cells)}</div>' if cells else ""


# Each plot's SVG while the plot itself is alive: the year ahead's plot (of the budget both
# versions of a run's report share) is drawn once for both pages (issue 30).
_DRAWN: weakref.WeakKeyDictionary[Plot, str] = weakref.WeakKeyDictionary()


def _svg(plot: Plot) -> str:
    try:
        return _DRAWN[plot]
    except KeyError:
        drawn = _DRAWN[plot] = plot_svg(plot)
        return drawn


def _plot(plot: Plot) -> str:
    data = base64.b64encode(_svg(plot).encode()).decode()
    caption = _h(plot.title + (f". {plot.caption}" if plot.caption else ""))
    return (
        f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{_h(plot.title)}" '
        f'width="640" height="360"><figcaption>{caption}</figcaption></figure>'
    )


def _table(rows: Iterable[Iterable[str]], header: Sequence[str]) -> str:
    # data-label: in a section of class "cards", on a phone each row becomes a card whose
    # cells name their column.
    head = "".join(f"<th>{_h(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td data-label="{_h(h)}">{_h(c)}</td>' for h, c in zip(header, row, strict=True))
        + "</tr>"
        for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _parameters(parameters: dict[str, str]) -> str:
    return "; ".join(f"{k} = {v}" for k, v in parameters.items())


def _notes(notes: Iterable[str]) -> str:
    return "".join(f'<p class="note">{_h(n)}</p>' for n in notes)


def _column(section: ColumnSection, slug: str) -> str:
    params = _parameters(section.parameters)
    return (
        f'<section class="column" id="column-{slug}"><h2>{_h(section.column)}</h2>'
        f'<p class="method">{_h(section.method)}{_h(": " + params) if params else ""}</p>'
        f'<p class="verdict">{_h(section.verdict)}</p>'
        + (f"<h3>Utility</h3>{_figures(section.utility, 'utility')}" if section.utility else "")
        + (f"<h3>Risk</h3>{_figures(section.risk, 'risk')}" if section.risk else "")
        + "".join(_plot(p) for p in section.plots)
        + _notes(section.notes)
        + "</section>"
    )


def _release(section: ReleaseSection, slug: str) -> str:
    preview = _table(section.preview[1:], section.preview[0]) if section.preview else ""
    return (
        f'<section class="release" id="release-{slug}"><h2>{_h(section.title or section.name)}</h2>'
        f'<p class="method">{_h(section.method)}, written to {_h(section.name)}'
        f"{_h('; ' + _parameters(section.parameters)) if section.parameters else ''}</p>"
        + _figures(section.figures, "utility")
        + "".join(_plot(p) for p in section.plots)
        + preview
        + _notes(section.notes)
        + "</section>"
    )


def _budget(budget: Budget | None) -> str:
    if budget is None:
        return (
            '<section class="budget" id="budget"><h2>Privacy budget</h2>'
            '<p class="note">No ledger: the budget of this release is not recorded.</p></section>'
        )
    repeats = (
        f'<p class="note">This run repeats an earlier identical run (same pipeline, data and secret; recorded '
        f"{_h(budget.repeats)}): it released the same bits, which the ledger has already charged, so it spent "
        "nothing.</p>"
        if budget.repeats
        else ""
    )
    if budget.unit == "rho":
        return _zcdp_budget(budget, repeats)
    rows = [
        ("total epsilon budget", f"{budget.total:g}"),
        ("spent before this run", f"{budget.spent_before:g}"),
        ("spent by this run", f"{budget.spent_after - budget.spent_before:g}"),
        ("spent after this run", f"{budget.spent_after:g}"),
        ("remaining", f"{budget.remaining:g}"),
    ]
    deltas = budget.delta_total > 0 or budget.delta_after > 0
    if deltas:
        rows += [
            ("total delta budget", f"{budget.delta_total:g}"),
            ("delta spent before this run", f"{budget.delta_before:g}"),
            ("delta spent by this run", f"{budget.delta_after - budget.delta_before:g}"),
            ("delta remaining", f"{budget.delta_remaining:g}"),
        ]
    body = "".join(f'<tr><th>{_h(k)}</th><td class="num">{_h(v)}</td></tr>' for k, v in rows)
    return (
        f'<section class="budget" id="budget"><h2>Privacy budget of {_h(budget.dataset)}</h2>'
        f'<div class="scroll"><table><tbody>{body}</tbody></table></div>{repeats}'
        f'<p class="note">{"Epsilon and delta" if deltas else "Epsilon"} of every run over this dataset add '
        f"up (basic composition), as kept in the ledger.</p></section>"
    )


def _zcdp_budget(budget: Budget, repeats: str) -> str:
    """A zCDP dataset's budget: its rho, and the (epsilon, delta) each rho means."""
    delta = f"{budget.epsilon_delta:g}"

    def eps(rho: float) -> str:
        return f"{budget.epsilon_at(rho):.4g}" if budget.epsilon_delta > 0 else "n/a (no delta given)"

    this_run = budget.spent_after - budget.spent_before
    remaining = max(budget.remaining, 0.0)
    rows = [
        ("total rho budget (zCDP)", f"{budget.total:g}", eps(budget.total)),
        ("rho spent before this run", f"{budget.spent_before:g}", eps(budget.spent_before)),
        ("rho spent by this run", f"{this_run:g}", eps(this_run)),
        ("rho spent after this run", f"{budget.spent_after:g}", eps(budget.spent_after)),
        ("rho remaining", f"{remaining:g}", eps(remaining)),
    ]
    head = f"<tr><th></th><th>rho</th><th>epsilon it means at delta {_h(delta)}</th></tr>"
    body = "".join(
        f'<tr><th>{_h(k)}</th><td class="num">{_h(v)}</td><td class="num">{_h(e)}</td></tr>'
        for k, v, e in rows
    )
    return (
        f'<section class="budget" id="budget"><h2>Privacy budget of {_h(budget.dataset)} (zCDP)</h2>'
        f'<div class="scroll"><table><thead>{head}</thead><tbody>{body}</tbody></table></div>{repeats}'
        '<p class="note">Rho of every run over this dataset adds up (zCDP composition), as kept in the ledger; '
        "Laplace and randomized-response steps enter as epsilon^2 / 2. Each rho is also stated as the "
        f"(epsilon, delta = {_h(delta)}) guarantee it implies (Canonne, Kamath and Steinke 2020): the dataset's "
        f"spends after this run mean ({_h(eps(budget.spent_after))}, {_h(delta)})-DP, its whole budget "
        f"({_h(eps(budget.total))}, {_h(delta)})-DP. The epsilon of the remaining rho is what it would mean "
        "alone: epsilons of parts do not add up, rho does.</p></section>"
    )


def _year_ahead(budget: Budget | None) -> str:
    """The year ahead: budget used, each future run's cost, the runs that fit, when the
    budget runs out, and each continual release's running-total SD to its horizon."""
    if budget is None or budget.ahead is None:
        return ""
    from polars_ppdm.reporting.ahead import assumption, sd_summary

    ahead = budget.ahead
    unit = ahead.unit
    zcdp = unit == "rho" and ahead.epsilon_delta > 0

    def amount(value: float) -> str:
        shown = f"{value:.4g}"
        if zcdp:
            shown += f" (epsilon {ahead.epsilon_at(value):.4g} at delta {ahead.epsilon_delta:g})"
        return shown

    rows = [
        (f"{unit} budget", amount(ahead.budget)),
        (f"{unit} used so far", amount(ahead.spent)),
        (f"{unit} left", f"{ahead.left:.4g}"),
        (f"{unit} each future run takes", f"{ahead.per_run:.4g}"),
        ("next run", ahead.when_next),
    ]
    if ahead.runs_possible is not None:
        rows.append(("runs left before the horizon ends", f"{ahead.runs_possible:,}"))
    if ahead.runs_fit is None:
        rows.append(("more runs the budget pays for", "no limit: the runs spend nothing"))
    else:
        rows.append(("more runs the budget pays for", f"{ahead.runs_fit:,}"))
        if ahead.delta_left is not None:  # partition selection's delta binds first
            rows.append(("delta left (binds first)", f"{ahead.delta_left:g}"))
    if ahead.refused is not None:
        if ahead.last_fit is not None:
            rows.append(("last run it pays for", ahead.last_fit))
        rows.append(("budget runs out: first run refused", ahead.refused))
    elif ahead.runs_fit is not None:
        rows.append(("budget runs out", "not before the horizon ends"))
    for o in ahead.continual:
        if o.periods:
            rows.append((f"{o.release}: SD of a running total ahead", sd_summary(o)))
    body = "".join(f'<tr><th>{_h(k)}</th><td class="num">{_h(v)}</td></tr>' for k, v in rows)
    note = (
        f"Assumed: {assumption(ahead)}, each run at today's pipeline; a continual release's tree was charged "
        "when it started, so its later runs take nothing for it. From public figures only: the budget and "
        "spends in the ledger, the pipeline's parameters and the noise's law."
    )
    return (
        '<section class="budget" id="year-ahead"><h2>The year ahead</h2>'
        f'<div class="scroll"><table><tbody>{body}</tbody></table></div>'
        + "".join(_plot(p) for p in ahead.plots)
        + f'<p class="note">{_h(note)}</p></section>'
    )


def _count(n: int, thing: str) -> str:
    return f"{n:,} {thing}{'' if n == 1 else 's'}"


def _summary(report: Report, slugs: list[str]) -> str:
    def first(figures: tuple[Figure, ...]) -> str:
        return f"{figures[0].name}: {figures[0].value}" if figures else ""

    # data-label: on a phone each row becomes a card whose cells name their column.
    rows = "".join(
        f'<tr><td data-label="column"><a href="#column-{slug}">{_h(s.column)}</a></td>'
        f'<td data-label="method">{_h(s.method)}</td>'
        f'<td data-label="parameters">{_h(_parameters(s.parameters))}</td>'
        f'<td data-label="utility">{_h(first(s.utility))}</td>'
        f'<td data-label="risk">{_h(first(s.risk))}</td><td data-label="verdict">{_h(s.verdict)}</td></tr>'
        for s, slug in zip(report.columns, slugs, strict=True)
    )
    head = "".join(f"<th>{h}</th>" for h in ("column", "method", "parameters", "utility", "risk", "verdict"))
    return (
        '<section class="summary cards" id="summary"><h2>Summary</h2>'
        f"<p>{_count(report.rows, 'row')} released; {_count(len(report.columns), 'column')} described, "
        f"{_count(len(report.releases), 'aggregate release')}.</p>"
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div></section>'
    )


def _singled_out(found: Uniqueness | None) -> str:
    """The verdict's first sentence: what the columns published unchanged single out."""
    if found is None:
        return "No table is published: what the releases reveal is bounded by their epsilon (budget below)."
    if not found.columns:
        return (
            "No column is published unchanged, so no combination of unchanged values singles out a row; "
            "each perturbed column's own risk is below."
        )
    columns = ", ".join(found.columns)
    if found.rows == 0:
        return f"No row is released; the columns published unchanged are {columns}."
    if found.uniques:
        return (
            f"{found.uniques:,} of {found.rows:,} released rows ({share(found.uniques / found.rows)}) are unique on "
            f"the columns published unchanged ({columns}): whoever knows these of a person in the table finds the "
            "person's row, and with it the row's perturbed values."
        )
    return (
        f"No released row is unique on the columns published unchanged ({columns}): each of their "
        f"combinations is shared by at least k = {found.smallest_group:,} rows."
    )


def _verdict(report: Report) -> str:
    """The risks side by side: unchanged columns together, each perturbed column, the budget."""
    rows: list[tuple[str, str, str]] = []
    found = report.uniqueness
    if found is not None and found.columns and found.rows:
        rows.append(
            (
                f"published unchanged: {', '.join(found.columns)}",
                f"{found.uniques:,} of {found.rows:,} rows unique; k = {found.smallest_group:,} "
                f"({_count(found.groups, 'combination')})",
                "sample uniques (as sdcMicro and ARX count them) and k-anonymity's k, a null counted as a value; "
                "a row unique here may have twins in the population the table was drawn from",
            )
        )
    for s in report.columns:
        if s.method in {"keep", "drop"}:
            continue
        headline = s.risk[0] if s.risk else None
        rows.append(
            (
                f"{s.column} ({s.method})",
                f"{headline.name}: {headline.value}{' ' + headline.unit if headline.unit else ''}"
                if headline
                else "not measured",
                headline.explanation if headline else s.verdict,
            )
        )
    budget = report.budget
    if budget is not None:
        spent = budget.spent_after - budget.spent_before
        rows.append(
            (
                f"privacy budget of {budget.dataset}",
                f"this run spent {budget.unit} {spent:g}{' (it repeats an earlier identical run)' if budget.repeats else ''}; "
                f"{budget.remaining:g} of {budget.total:g} left",
                "what every aggregate release of this dataset may reveal, added up over its runs",
            )
        )
    table = _table(rows, ("what", "risk", "meaning")) if rows else ""
    return (
        '<section class="overview cards" id="verdict"><h2>Verdict</h2>'
        f'<p class="verdict">{_h(_singled_out(found))}</p>{table}</section>'
    )


def render(report: Report) -> str:
    """The report as one HTML page."""
    from polars_ppdm import __version__

    taken: set[str] = set()
    column_slugs = [_slug(s.column, taken) for s in report.columns]
    release_slugs = [_slug(s.name, taken) for s in report.releases]
    title = f"{report.title} ({report.version})"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_h(title)}</title><style>{_CSS}</style></head><body><main>",
        f"<h1>{_h(report.title)}</h1>",
        f'<p class="banner {report.version}">{_h(BANNERS[report.version])}</p>',
        _verdict(report),
        _summary(report, column_slugs),
        *(_column(s, slug) for s, slug in zip(report.columns, column_slugs, strict=True)),
        *(_release(s, slug) for s, slug in zip(report.releases, release_slugs, strict=True)),
        _budget(report.budget),
        _year_ahead(report.budget),
        _notes(report.notes),
        f"<footer>polars_ppdm {_h(__version__)}; {_h(report.version)} version, written "
        f"{_h(report.created)}. {_h(PAPERS)}</footer>",
        "</main></body></html>",
    ]
    return "\n".join(parts)
