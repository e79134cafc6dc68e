"""ppdm.report / build_report: the figures per method, the public version's safety, bad input."""

from __future__ import annotations

import math
import re

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.dp.accuracy import geometric_interval
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import discrete_laplace
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.reporting import build_report
from polars_ppdm.reporting._shown import share

SECRET = "ab4c2e9f1d3b5a7086c4e2f0a9b7d5c3"  # fixed for the tests; not a repeated pattern
N = 20_000
STEPS = [
    {"step": "rr_disguise", "columns": ["smoker"], "epsilon": 1.0},
    {"step": "rr_disguise", "columns": ["vote"], "epsilon": 1.5, "categories": ["green", "red", "blue"]},
    {"step": "add_noise", "columns": ["income", "rent"], "scale": 3000.0},
    {"step": "ecdf_resample", "columns": ["weight"], "bins": 50},
    {"step": "keep", "columns": ["region"]},
    {"step": "drop", "columns": ["id", "name"]},
]
# Values that exist only in the original: the public page must not hold them.
SECRETS_OF_THE_ORIGINAL = ["Zebulon Quixote", "987654.321", "987,654", "987654", "73.1234"]


def survey(seed: int = 0, n: int = N) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10.5, 0.4, n)
    income[17] = 987654.321
    weight = rng.normal(70, 12, n)
    weight[5] = 73.1234
    return pl.DataFrame(
        {
            "id": np.arange(n),
            "name": [f"person {i}" for i in range(n)],
            "smoker": rng.random(n) < 0.3,
            "vote": rng.choice(["green", "red", "blue"], n, p=[0.2, 0.5, 0.3]),
            "income": income,
            "rent": income * 0.3 + rng.normal(0, 2000, n),
            "weight": weight,
            "region": rng.choice(["north", "south"], n),
        }
    ).with_columns(pl.when(pl.col("id") == 3).then(pl.lit("Zebulon Quixote")).otherwise("name").alias("name"))


def release(original: pl.DataFrame) -> pl.DataFrame:
    out = ppdm.rr_disguise(original, "smoker", epsilon=1.0, secret=SECRET, key="id")
    out = ppdm.rr_disguise(
        out, "vote", epsilon=1.5, categories=["green", "red", "blue"], secret=SECRET, key="id"
    )
    out = ppdm.add_noise(out, ["income", "rent"], scale=3000.0, secret=SECRET, key="id")
    out = ppdm.ecdf_resample(out, "weight", bins=50, secret=SECRET, key="id")
    return out.drop("id", "name")


@pytest.fixture(scope="module")
def tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    original = survey()
    return original, release(original)


def section(report, column):
    (found,) = [s for s in report.columns if s.column == column]
    return found


def figure(figures, name):
    (found,) = [f for f in figures if f.name == name]
    return found


def without_time(page: str) -> str:
    return re.sub(r"written \S+\.", "written <time>.", page)


# ---- the public version ------------------------------------------------------------------


def test_public_page_holds_no_value_of_the_original(tables):
    original, released = tables
    page = ppdm.report(released, STEPS, version="public")
    for value in SECRETS_OF_THE_ORIGINAL:
        assert value not in page
    # ... while the internal one does show the original (its true shares, say).
    internal = build_report(released, STEPS, original=original)
    assert any(s.source == "original" for p in section(internal, "smoker").plots for s in p.series)


def test_public_page_never_reads_the_original(tables):
    """Same page whatever original is passed: nothing of it can leak."""
    original, released = tables
    pages = {
        without_time(ppdm.report(released, STEPS, version="public", original=other))
        for other in (None, original, survey(seed=1))
    }
    assert len(pages) == 1


def test_the_page_is_deterministic(tables):
    original, released = tables
    first = ppdm.report(released, STEPS, original=original)
    assert without_time(first) == without_time(ppdm.report(released, STEPS, original=original))


# ---- figures per method ------------------------------------------------------------------


def test_randomized_response_shows_the_corrected_shares_of_rr_support(tables):
    original, released = tables
    smoker = section(build_report(released, STEPS, original=original), "smoker")
    assert figure(smoker.risk, "local DP epsilon").value == "1"
    (plot,) = smoker.plots
    estimate = next(s for s in plot.series if s.source == "estimate")
    expected = ppdm.rr_support(released, "smoker", epsilon=1.0)
    assert estimate.y == tuple(expected["frequency"].to_list())
    assert estimate.error == tuple(1.959963984540054 * s for s in expected["std_error"].to_list())
    truth = next(s for s in plot.series if s.source == "original")
    # The estimate is unbiased: within 5 standard errors of the true share.
    for got, true, se in zip(estimate.y, truth.y, expected["std_error"], strict=True):
        assert abs(got - true) < 5 * se
    changed = float((original["smoker"] != released["smoker"]).mean())
    assert figure(smoker.risk, "rows changed").value == f"{100 * changed:.1f}%"


def test_ecdf_with_rank_link_keeps_the_ranks_and_is_linked(tables):
    original, released = tables
    weight = section(build_report(released, STEPS, original=original), "weight")
    assert figure(weight.utility, "rank correlation").value == "1"
    assert float(figure(weight.utility, "KS distance").value) < 0.05
    assert figure(weight.risk, "rank linkage").value == "100.0%"
    public = section(build_report(released, STEPS, version="public"), "weight")
    assert [f.name for f in public.risk] == ["rank order"] and public.utility == ()


def test_additive_noise_estimates_the_signal_to_noise_ratio_from_the_release_alone(tables):
    original, released = tables
    income = section(build_report(released, STEPS, original=original), "income")
    estimated = float(figure(income.utility, "estimated signal-to-noise ratio").value.replace(",", ""))
    true = float(figure(income.utility, "signal-to-noise ratio").value.replace(",", ""))
    # Var(released) = Var(x) + sigma^2; its sampling error at n = 20,000 is a few percent.
    assert estimated == pytest.approx(true, rel=0.1)
    stripping = figure(income.risk, "PCA noise stripping")
    assert 0 < float(stripping.value.rstrip("%")) < 100
    assert any(s.label == "reconstructed original" for p in income.plots for s in p.series)


def test_noise_stripping_over_columns_with_nulls_uses_the_whole_rows(tables):
    """A multi-column add_noise step whose columns hold nulls: the attack runs
    over the rows where every column holds a finite value, in both tables, and says so
    (it refused the nulls, and the internal page was not written)."""
    original, _ = tables
    holed = original.with_columns(
        pl.when(pl.col("id") % 7 == 0).then(None).otherwise(pl.col("income")).alias("income"),
        pl.when(pl.col("id") % 11 == 0).then(None).otherwise(pl.col("rent")).alias("rent"),
    )
    released = release(holed)
    income = section(build_report(released, STEPS, original=holed), "income")
    stripping = figure(income.risk, "PCA noise stripping")
    assert 0 < float(stripping.value.rstrip("%")) < 100
    assert "where all of them hold a finite value" in stripping.explanation
    whole = holed.select(pl.col("income").is_not_null() & pl.col("rent").is_not_null()).to_series()
    assert 0 < whole.sum() < holed.height
    want = ppdm.audit.pca_noise_stripping(
        holed.filter(whole), released.filter(whole), ["income", "rent"], dist="gaussian", scale=3000.0
    )
    assert stripping.value == share(want.filter(pl.col("column") == "income")["stripped"].item())


def test_spiral_is_undone_by_the_known_io_attack(tmp_path):
    rng = np.random.default_rng(3)
    original = pl.DataFrame({"x": rng.normal(0, 1, 5000), "y": rng.normal(5, 2, 5000), "z": rng.random(5000)})
    bounds = {"x": (-5.0, 5.0), "y": (-5.0, 15.0), "z": (0.0, 1.0)}
    released = ppdm.spiral(original, ["x", "y", "z"], bounds=bounds, secret=SECRET)
    step = {
        "step": "spiral",
        "columns": ["x", "y", "z"],
        "bounds": bounds,
        "path": str(tmp_path / "key.json"),
    }
    x = section(build_report(released, [step], original=original), "x")
    assert figure(x.risk, "known pairs that undo the map").value == 3
    assert float(figure(x.risk, "known-I/O attack error").value.rstrip("%")) == 0.0
    assert float(figure(x.utility, "distance preservation").value) > 0.9
    public = section(build_report(released, [step], version="public"), "x")
    assert [f.name for f in public.risk] == ["known pairs that undo the map"]
    assert "key.json" not in ppdm.report(released, [step], version="public")


def test_figures_past_sample_rows_use_a_sample_and_say_so():
    original = pl.DataFrame({"w": np.random.default_rng(1).normal(size=3000)})
    released = ppdm.ecdf_resample(original, "w", secret=SECRET)
    step = [{"step": "ecdf_resample", "columns": ["w"]}]
    (w,) = build_report(released, step, original=original, sample_rows=1000).columns
    assert any("sample of 1,000 of the 3,000 rows" in note for note in w.notes)
    (w,) = build_report(released, step, original=original).columns
    assert w.notes == ()


def test_dp_histogram_release_interval_is_the_noise_quantile():
    ages = pl.DataFrame({"age": np.random.default_rng(2).integers(18, 90, 5000)})
    step = {
        "step": "dp_histogram",
        "columns": ["age"],
        "bounds": {"age": [0, 100]},
        "bins": 10,
        "epsilon": 0.5,
        "output": "h",
    }
    released = ppdm.dp_histogram(ages, "age", bounds=(0, 100), bins=10, epsilon=0.5, secret=SECRET)
    (got,) = build_report(pl.DataFrame(), [step], version="public", releases={"h": released}).releases
    assert figure(got.figures, "epsilon").value == "0.5"
    assert figure(got.figures, "noise scale").value == "2"
    t = geometric_interval(2.0)
    assert figure(got.figures, "95% interval of a cell").value == f"± {t}"
    noise = np.abs(discrete_laplace(bytes(16), stream_id("report-test"), np.arange(400_000), 2.0))
    # The smallest t with P(|X| <= t) >= 0.95; 400,000 draws pin the share to +-0.2%.
    assert (noise <= t).mean() > 0.945 and (noise <= t - 1).mean() < 0.955
    assert got.preview[0] == ("age_bin", "age_low", "age_high", "count") and len(got.preview) == 11


def test_geometric_interval_matches_the_closed_form():
    for scale in (0.3, 1.0, 2.0, 10.0, 250.0):
        alpha = math.exp(-1 / scale)
        t = geometric_interval(scale)

        def tail(k: int, alpha: float = alpha) -> float:  # P(|X| > k)
            return 2 * alpha ** (k + 1) / (1 + alpha)

        assert tail(t) <= 0.05 and (t == 0 or tail(t - 1) > 0.05)


def test_a_column_no_plot_suits_is_reported_not_a_crash():
    frame = pl.DataFrame({"tags": [[1, 2], [3], []], "x": [1.0, 2.0, 3.0]})
    page = ppdm.report(frame, [{"step": "keep", "columns": ["tags", "x"]}], original=frame)
    (tags, x) = build_report(frame, [{"step": "keep", "columns": ["tags", "x"]}], version="public").columns
    assert tags.plots == () and "List(Int64): no plot suits it" in tags.notes[0]
    assert len(x.plots) == 1 and "no plot suits it" in page


def test_text_from_the_data_is_escaped():
    frame = pl.DataFrame({"<script>alert(1)</script>": ["<b>", "x"]})
    page = ppdm.report(frame, [{"step": "keep", "columns": ["<script>alert(1)</script>"]}], version="public")
    assert "<script>" not in page and "&lt;script&gt;" in page


# ---- bad input ---------------------------------------------------------------------------


def test_tables_of_different_heights_are_refused(tables):
    original, released = tables
    with pytest.raises(
        InvalidParameterError, match="and the original have different numbers of rows"
    ) as refused:
        build_report(released.head(19_999), STEPS, original=original)
    assert "19,999" not in str(refused.value) and "20,000" not in str(refused.value)  # no row count


def test_a_column_missing_from_the_released_table_is_refused(tables):
    original, released = tables
    with pytest.raises(InvalidParameterError, match=r"names columns the released table lacks: \['smoker'\]"):
        build_report(released.drop("smoker"), STEPS, original=original)
    with pytest.raises(InvalidParameterError, match=r"original table lacks: \['vote'\]"):
        build_report(released, STEPS, original=original.drop("vote"))


def test_output_in_a_folder_that_does_not_exist(tables, tmp_path):
    _, released = tables
    with pytest.raises(InvalidParameterError, match="folder that does not exist"):
        ppdm.report(released, STEPS, version="public", output=tmp_path / "nowhere" / "r.html")
    written = tmp_path / "r.html"
    page = ppdm.report(released, STEPS, version="public", output=written)
    assert written.read_text() == page


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"version": "secret"}, "version"),
        ({"version": "internal"}, "pass original="),
        ({"version": "public", "sample_rows": 10}, "sample_rows"),
        ({"version": "public", "title": " "}, "title"),
        (
            {
                "version": "public",
                "releases": {"x": pl.DataFrame()},
                "steps": [*STEPS, {"step": "rr_support", "columns": ["smoker"], "output": "s.csv"}],
            },
            "not in 'releases'",
        ),
        (
            {"version": "public", "steps": [{"step": "rr_disguise", "columns": ["smoker"]}]},
            "exactly one of 'p' and 'epsilon'",
        ),
        ({"version": "public", "steps": [{"step": "shuffle", "columns": ["smoker"]}]}, "no known 'step'"),
        ({"version": "public", "steps": "rr_disguise"}, "a list of steps"),
    ],
)
def test_bad_parameters_are_refused(tables, kwargs, match):
    _, released = tables
    kwargs = {"steps": STEPS, **kwargs}
    steps = kwargs.pop("steps")
    with pytest.raises(InvalidParameterError, match=match):
        build_report(released, steps, **kwargs)


def test_review_findings_are_reported_not_crashed(tables):
    """What a new user's review found: nulls in a disguised column, a column no step
    describes, a column named twice, steps that do not match the data."""
    original, released = tables
    with_nulls = released.with_columns(
        pl.when(pl.col("weight") > 80).then(None).otherwise("smoker").alias("smoker")
    )
    smoker = section(build_report(with_nulls, STEPS[:1], version="public"), "smoker")
    assert any("null values are left out of the shares" in note for note in smoker.notes)
    page = ppdm.report(released, STEPS[:1], version="public")
    assert "Published columns no step describes" in page and "income" in page
    with pytest.raises(InvalidParameterError, match=r"name columns twice: \['income'\]"):
        build_report(released, [*STEPS, {"step": "keep", "columns": ["income"]}], version="public")
    with pytest.raises(
        InvalidParameterError, match="perturbs numbers; its columns \\['region \\(String\\)'\\]"
    ):
        build_report(released, [{"step": "add_noise", "columns": ["region"], "scale": 1.0}], version="public")
    with pytest.raises(InvalidParameterError, match="needs its categories"):
        build_report(
            released, [{"step": "rr_disguise", "columns": ["vote"], "epsilon": 1.5}], version="public"
        )
    # The step claims epsilon 3 for data disguised at epsilon 1: the internal report says so.
    claimed = [{"step": "rr_disguise", "columns": ["smoker"], "epsilon": 3.0}]
    smoker = section(build_report(released, claimed, original=original), "smoker")
    assert any("Warning:" in note for note in smoker.notes)
    # ... and rows out of order too.
    shuffled = section(build_report(released, STEPS[:1], original=original.reverse()), "smoker")
    assert any("Warning:" in note for note in shuffled.notes)
    honest = section(build_report(released, STEPS[:1], original=original), "smoker")
    assert not any("Warning:" in note for note in honest.notes)


def test_an_empty_table_gives_a_page_without_warnings():
    empty = pl.DataFrame({"x": pl.Series([], dtype=pl.Float64), "s": pl.Series([], dtype=pl.Boolean)})
    steps = [
        {"step": "add_noise", "columns": ["x"], "scale": 1.0},
        {"step": "rr_disguise", "columns": ["s"], "epsilon": 1.0},
    ]
    assert "0 rows released" in ppdm.report(empty, steps, original=empty)  # warnings are errors in this suite


# ---- issue 27 ----------------------------------------------------------------------------

BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)]


def svgs(page: str) -> list[str]:
    """The text of every plot of the page (SVG images embedded as base64 data URIs)."""
    import base64

    return [
        base64.b64decode(data).decode()
        for data in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    ]


def test_labels_are_text_never_math():
    """Dollar signs in values and names are text: '$$' is no math formula (it crashed)."""
    n = 300
    frame = pl.DataFrame(
        {
            "id": np.arange(n),
            "price": [["$", "$$", "$$$"][i % 3] for i in range(n)],
            "$x_1$": np.linspace(0, 1, n),
        }
    )
    released = ppdm.rr_disguise(
        frame, "price", epsilon=1.0, categories=["$", "$$", "$$$"], secret=SECRET, key="id"
    )
    steps = [
        {"step": "rr_disguise", "columns": ["price"], "epsilon": 1.0, "categories": ["$", "$$", "$$$"]},
        {"step": "keep", "columns": ["$x_1$"]},
        {"step": "drop", "columns": ["id"]},
    ]
    for version in ("public", "internal"):
        plots = "".join(svgs(ppdm.report(released.drop("id"), steps, original=frame, version=version)))
        for label in ("$", "$$", "$$$", "$x_1$"):
            assert f">{label}</text>" in plots, label  # tick labels and axis labels, as written


def test_bidi_controls_are_shown_not_obeyed():
    """A value with a right-to-left override must not reorder the page's text."""
    evil = "txt\u202egnp.exe"
    frame = pl.DataFrame({"file\u2066name": [evil, "a\u200fb", "plain"] * 10})
    page = ppdm.report(
        frame, [{"step": "keep", "columns": ["file\u2066name"]}], version="public", title="r\u061c"
    )
    for text in [page, *svgs(page)]:
        assert not any(c in text for c in BIDI)
    assert "txt[U+202E]gnp.exe" in "".join(svgs(page)) and "file[U+2066]name" in page


def test_control_characters_in_values_are_shown_not_drawn():
    """A CSV field may hold a line break (CRLF in a Windows export): no font has a glyph
    for a carriage return (matplotlib warned, and the report of a run failed), and a label
    with a line break would read as two values."""
    frame = pl.DataFrame({"note": ["a\r\nb", "a\nb", "tab\there", "plain"] * 10})
    page = ppdm.report(frame, [{"step": "keep", "columns": ["note"]}], version="public")
    plots = "".join(svgs(page))
    for shown in ("a[U+000D][U+000A]b", "a[U+000A]b", "tab[U+0009]here"):
        assert shown in plots, shown
    assert "\r" not in plots


def test_a_corrected_share_whose_interval_crosses_0_is_explained():
    """An unbiased estimate of a rare value's share can come out below 0 (or its interval
    reach below 0): the section says why, where it happens."""
    cats = ["green", "red", "blue", "none"]
    rng = np.random.default_rng(4)
    frame = pl.DataFrame({"id": np.arange(2000), "vote": rng.choice(cats, 2000, p=[0.3, 0.4, 0.29, 0.01])})
    released = ppdm.rr_disguise(frame, "vote", epsilon=0.5, categories=cats, secret=SECRET, key="id")
    support = ppdm.rr_support(released, "vote", epsilon=0.5, categories=cats)
    steps = [
        {"step": "rr_disguise", "columns": ["vote"], "epsilon": 0.5, "categories": cats},
        {"step": "rr_support", "columns": ["vote"], "output": "vote.csv"},
    ]
    got = build_report(released, steps, version="public", releases={"vote.csv": support})
    for notes in (section(got, "vote").notes, got.releases[0].notes):
        (note,) = [n for n in notes if "below 0" in n]
        assert "vote=none" in note and "unbiased" in note
        assert "green" not in note  # only the values where it happens


def test_dp_group_by_is_titled_by_what_it_releases_and_plots_every_aggregate():
    rng = np.random.default_rng(5)
    events = pl.DataFrame(
        {
            "user": rng.integers(0, 3000, 8000),
            "channel": rng.choice(["web", "app", "store"], 8000),
            "amount": rng.uniform(0, 500, 8000),
        }
    )
    aggregates = [
        {"aggregate": "count"},
        {"aggregate": "sum", "column": "amount", "bounds": [0.0, 500.0]},
        {"aggregate": "mean", "column": "amount", "bounds": [0.0, 500.0]},
    ]
    step = {
        "step": "dp_group_by",
        "by": ["channel"],
        "aggregates": aggregates,
        "epsilon": 1.0,
        "public_groups": [{"channel": c} for c in ("web", "app", "store")],
        "intervals": True,
        "output": "out/by_channel.csv",
    }
    frame = ppdm.dp_group_by(
        events,
        "channel",
        [ppdm.dp.count(), ppdm.dp.sum("amount", bounds=(0, 500)), ppdm.dp.mean("amount", bounds=(0, 500))],
        epsilon=1.0,
        privacy_unit="user",
        public_groups=pl.DataFrame({"channel": ["web", "app", "store"]}),
        secret=SECRET,
        intervals=True,
    )
    page = ppdm.report(pl.DataFrame(), [step], version="public", releases={"out/by_channel.csv": frame})
    assert "<h2>dp_group_by by channel: count, sum of amount, mean of amount</h2>" in page
    (got,) = build_report(
        pl.DataFrame(), [step], version="public", releases={"out/by_channel.csv": frame}
    ).releases
    assert [p.y_label for p in got.plots] == ["count", "amount_sum", "amount_mean"]
    mean = got.plots[2].series[0]
    assert mean.y == tuple(frame["amount_mean"].to_list())
    assert mean.error == tuple(1.959963984540054 * s for s in frame["amount_mean_sd"].to_list())


def test_the_footer_numbers_the_papers_as_the_readme_does():
    from pathlib import Path

    from polars_ppdm.reporting.html import PAPERS

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for heading, footer in [
        ("ECDF resampling", "ECDF resampling with rank re-linking"),
        ("Log-spiral perturbation for clustering", "log-spiral perturbation, LSDP"),
        ("Differential privacy", "DPQT k-means, Zhang and Cheng"),
    ]:
        (number,) = re.findall(rf"### {heading} \(paper (\d{{3}})\)", readme)
        assert f"{footer} ({number})" in PAPERS


def _brute_force(rows: list[tuple]) -> tuple[int, int, int]:
    """Uniques, smallest group and groups, counted row by row (None equals None)."""
    sizes: dict[tuple, int] = {}
    for row in rows:
        sizes[row] = sizes.get(row, 0) + 1
    uniques = sum(1 for row in rows if sizes[row] == 1)
    return uniques, min(sizes.values()), len(sizes)


def test_the_verdict_counts_uniques_and_k_as_a_brute_force_count():
    rng = np.random.default_rng(6)
    n = 400
    original = pl.DataFrame(
        {
            "id": np.arange(n),
            "region": rng.choice(["north", "south", None], n, p=[0.6, 0.39, 0.01]),
            "age_band": rng.choice([20, 30, 40, 50, 60, 70, 80, 90], n).tolist(),
            "female": rng.choice([True, False, None], n, p=[0.5, 0.45, 0.05]),
            "weight": rng.normal(70, 10, n),
            "zip": [None if i % 50 == 0 else f"8{i % 97:03d}" for i in range(n)],
        }
    )
    released = ppdm.ecdf_resample(original, "weight", secret=SECRET, key="id").drop("id")
    steps = [
        {"step": "keep", "columns": ["region", "age_band"]},
        {"step": "ecdf_resample", "columns": ["weight"]},
        {"step": "drop", "columns": ["id"]},
    ]  # female and zip: no step names them, so they are published unchanged too
    unchanged = ["region", "age_band", "female", "zip"]
    uniques, k, groups = _brute_force(list(released.select(unchanged).iter_rows()))
    assert uniques > 0 and groups > 50  # a test with something to count
    for version in ("public", "internal"):
        got = build_report(released, steps, original=original, version=version)
        assert got.uniqueness is not None
        assert got.uniqueness.columns == tuple(unchanged)
        assert (got.uniqueness.uniques, got.uniqueness.smallest_group, got.uniqueness.groups) == (
            uniques,
            k,
            groups,
        )
        page = ppdm.report(released, steps, original=original, version=version)
        verdict = page[page.index('id="verdict"') : page.index('id="summary"')]
        assert f"{uniques:,} of {n:,} released rows" in verdict and f"k = {k}" in verdict
        assert "weight" in verdict  # each perturbed column's own risk, beside
    internal = ppdm.report(released, steps, original=original)
    verdict = internal[internal.index('id="verdict"') : internal.index('id="summary"')]
    assert "rank linkage" in verdict  # the measured attack, no longer only in its own section
    # Fewer columns, all shared: no row is unique, k is the smallest group.
    shared = released.select("region", "weight").fill_null("north")
    got = build_report(shared, [steps[1], {"step": "keep", "columns": ["region"]}], version="public")
    sizes = shared["region"].value_counts()["count"]
    assert (got.uniqueness.uniques, got.uniqueness.smallest_group) == (0, sizes.min())


def test_the_verdict_says_when_no_column_is_published_unchanged(tables):
    _, released = tables
    only_perturbed = released.select("smoker", "income", "rent")
    steps = [s for s in STEPS if s["step"] in {"rr_disguise", "add_noise"} and s["columns"] != ["vote"]]
    got = build_report(only_perturbed, steps, version="public")
    assert got.uniqueness is not None and got.uniqueness.columns == ()
    page = ppdm.report(only_perturbed, steps, version="public")
    assert "No column is published unchanged" in page[page.index('id="verdict"') : page.index('id="summary"')]
