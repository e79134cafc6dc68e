"""The report's figures where issue 30 restructured their computation for speed and
memory: each new way against the way it replaced (kept here as the reference), on small
tables with the values that tell them apart (nulls, NaN, -0.0, infinities, one value)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from polars_ppdm.reporting._table import Table
from polars_ppdm.reporting.columns import _BINS, _bin_counts, _counts, _distribution, _edges, _finite, _Tables
from polars_ppdm.reporting.uniqueness import uniqueness


def _old_uniqueness(table: pl.DataFrame, columns: list[str]) -> tuple[int, int, int, int]:
    """The group-by the sort and run-length pass replaced."""
    sizes = table.group_by(columns).len()["len"]
    return table.height, sizes.len(), int((sizes == 1).sum()), int(sizes.min())  # type: ignore[arg-type]


def _table(seed: int, n: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    floats = rng.choice([0.0, -0.0, 1.5, np.nan, -np.nan, np.inf, -np.inf, 2.25], n)
    missing = rng.random((5, n)) < 0.2
    return pl.DataFrame(
        {
            "i": pl.Series(rng.integers(0, 4, n)).scatter(np.flatnonzero(missing[0]), None),
            "f": pl.Series(floats).scatter(np.flatnonzero(missing[1]), None),
            "s": pl.Series(rng.choice(["a", "b", "", "ä"], n)).scatter(np.flatnonzero(missing[2]), None),
            # Nulls scattered before the cast: Polars 1.34 cannot scatter None into a Categorical.
            "c": pl.Series(rng.choice(["x", "y", "z"], n))
            .scatter(np.flatnonzero(missing[3]), None)
            .cast(pl.Categorical),
            "b": pl.Series(rng.random(n) < 0.5).scatter(np.flatnonzero(missing[4]), None),
            "d": pl.Series([dt.date(2020, 1, 1) + dt.timedelta(days=int(k)) for k in rng.integers(0, 3, n)]),
            "u": np.arange(n),
        }
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "columns",
    [
        ["i"],
        ["f"],
        ["s"],
        ["c"],
        ["b"],
        ["d"],
        ["u"],
        ["i", "f"],
        ["f", "s", "b"],
        ["c", "d", "i"],
        ["u", "f"],
    ],
)
def test_uniqueness_is_the_group_by_s(seed: int, columns: list[str]) -> None:
    table = _table(seed, n=40 + 37 * seed)
    got = uniqueness(table, columns)
    assert (got.rows, got.groups, got.uniques, got.smallest_group) == _old_uniqueness(table, columns)


def test_uniqueness_counts_zero_and_minus_zero_as_one_value_and_nan_as_one() -> None:
    # The group-by's equality, which the verdict's counts have always used.
    table = pl.DataFrame({"f": [0.0, -0.0, float("nan"), -float("nan"), None, None, 1.0]})
    got = uniqueness(table, ["f"])
    assert (got.groups, got.uniques, got.smallest_group) == (4, 1, 1)
    both = pl.DataFrame({"f": [0.0, -0.0, float("nan"), float("nan")], "k": [1, 1, None, None]})
    got = uniqueness(both, ["f", "k"])
    assert (got.groups, got.uniques, got.smallest_group) == (2, 0, 2)


def test_uniqueness_of_a_type_the_sort_refuses_falls_back_to_the_group_by() -> None:
    table = pl.DataFrame({"o": pl.Series([object(), object()], dtype=pl.Object)})
    assert uniqueness(table, ["o"]).groups == 2


@pytest.mark.parametrize(
    "values",
    [
        np.array([3.0]),
        np.array([-2.5, -2.5]),
        np.random.default_rng(1).normal(0, 1, 1001),
        np.random.default_rng(2).lognormal(10, 2, 999),
        np.array([1e-300, 2e-300, 5e-301]),
        np.array([-1e300, 1e300]),
        np.array([0.1, 0.7, 0.3, 0.9]),
    ],
)
def test_bins_from_the_extremes_are_numpys_bins_of_the_values(values: np.ndarray) -> None:
    # The histogram's bins were NumPy's of the values of both tables concatenated.
    old = np.histogram_bin_edges(values, bins=_BINS)
    new = _edges(float(values.min()), float(values.max()), integers=False)
    assert new.dtype == old.dtype and np.array_equal(new, old)


@pytest.mark.parametrize(
    "values",
    [
        np.array([3.0]),
        np.array([-2.5, -2.5, 7.0]),
        np.random.default_rng(3).normal(0, 1, 200_001),
        np.random.default_rng(4).lognormal(10, 2, 999),
        np.random.default_rng(5).integers(-40, 41, 5_000).astype(np.float64),
        np.array([1e-300, 2e-300, 5e-301]),
        np.array([-1e300, 1e300, 0.0]),
        np.arange(36028797018963963, 36028797018963963 + 49).astype(np.float64),  # bins below the spacing
        2.2250738585072014e-308 + np.arange(50) * 1e-322,
    ],
)
def test_bin_counts_are_numpys_histogram_s(values: np.ndarray) -> None:
    # Every kind of edges a report counts in: equal-width bins of the extremes, one bin
    # per integer (or two), a reconstruction's, edges inside the values (the values on
    # and past them), and edges NumPy's equal-width path would not give.
    low, high = float(values.min()), float(values.max())
    middle = float(np.median(values))

    def equal_width(low: float, high: float, integers: bool) -> np.ndarray | None:
        try:
            return _edges(low, high, integers=integers)
        except ValueError:  # NumPy cannot make 30 finite-sized bins of so narrow a range
            return None

    cases = [
        equal_width(low, high, False),
        equal_width(low, high, True),
        equal_width(low, middle, False),
        np.append(low + (middle - low) / 7 * np.arange(7), middle),
        np.array([low, middle, high]) if low < middle < high else np.array([low - 1, high + 1]),
        np.array([low - 1, low - 0.5, middle, middle + 1e-9, high + 3]),
    ]
    for edges in (e for e in cases if e is not None):
        want, _ = np.histogram(values, bins=edges)
        got = _bin_counts(values, edges)
        assert got.dtype == want.dtype and np.array_equal(got, want), edges


@pytest.mark.parametrize(
    "values",
    [
        [True, False, None, True],
        [True, True],
        [False],
        [None, None],
        [],
        [None, False, False],
    ],
)
def test_boolean_counts_are_the_group_by_s(values: list[bool | None]) -> None:
    series = pl.Series("v", values, dtype=pl.Boolean)
    old = dict(series.to_frame("value").group_by("value").agg(pl.len().alias("n")).iter_rows())
    assert _counts(series) == old


def test_finite_values_are_the_old_copy_s() -> None:
    cases = [
        pl.Series([1.0, None, float("nan"), float("inf"), -2.0]),
        pl.Series([1.0, 2.0, 3.5]),
        pl.Series([4, None, 7], dtype=pl.Int32),
        pl.Series([None, None], dtype=pl.Float64),
        pl.Series([], dtype=pl.Float64),
    ]
    for series in cases:
        values = series.drop_nulls().cast(pl.Float64).to_numpy()
        old = values[np.isfinite(values)]
        new = _finite(series)
        assert new.dtype == old.dtype and np.array_equal(new, old)


def test_a_randomized_response_section_s_notes_are_those_of_the_plot_it_no_longer_draws() -> None:
    rng = np.random.default_rng(5)
    n = 500
    original = pl.DataFrame(
        {
            "many": rng.choice([f"v{i}" for i in range(25)], n),
            "few": rng.choice(["a", "b"], n),
            "code": rng.integers(0, 3, n),
            "none": pl.Series([None] * n, dtype=pl.Float64),
            "flag": pl.Series(rng.random(n) < 0.3).scatter([1, 2], None),
        }
    )
    released = original.with_columns(pl.col("many").shuffle(seed=1), pl.col("flag").shuffle(seed=2))
    for frame in (original, None):
        tables = _Tables(Table(released), None if frame is None else Table(frame), 100)
        for column in original.columns:
            _, notes = _distribution(column, tables)
            assert _distribution(column, tables, plot=False) == ([], notes)
    tables = _Tables(Table(released), Table(original), 100)
    assert _distribution("many", tables, plot=False)[1] == [
        "25 distinct values; the 15 most frequent released ones are shown."
    ]
    assert _distribution("none", tables, plot=False)[1] == ["No finite value to plot."]


# ---- the run's inputs read a column at a time -----------------------------------------


def test_a_table_over_a_scan_gives_the_columns_of_the_frame(tmp_path: Path) -> None:
    frame = _table(1, 300).with_columns(pl.col("f").alias("g"))
    frame.write_parquet(tmp_path / "t.parquet")
    scanned = Table(pl.scan_parquet(tmp_path / "t.parquet"))
    whole = Table(frame)
    assert scanned.lazy and not whole.lazy
    assert (scanned.height, scanned.width, scanned.columns, scanned.schema) == (
        whole.height,
        whole.width,
        whole.columns,
        whole.schema,
    )
    rows = np.array([0, 3, 4, 150, 299])
    for column in frame.columns:
        assert scanned[column].equals(whole[column]) and scanned[column] is scanned[column]  # kept
        assert scanned.select([column]).equals(whole.select([column]))
        assert scanned.gather([column], rows).equals(whole.gather([column], rows))
    assert scanned.gather(["g", "u", "s"], rows).equals(whole.gather(["g", "u", "s"], rows))
    assert scanned.select(["i", "s"]).equals(frame.select("i", "s"))


def test_a_table_s_read_error_becomes_the_job_s_error(tmp_path: Path) -> None:
    pl.DataFrame({"x": [1.0, 2.0]}).write_parquet(tmp_path / "t.parquet")
    table = Table(
        pl.scan_parquet(tmp_path / "t.parquet"), lambda error: ValueError(f"refused: {type(error).__name__}")
    )
    (tmp_path / "t.parquet").write_bytes(b"PAR1 not parquet any more PAR1")
    with pytest.raises(ValueError, match="refused"):
        table["x"]


def _parquet_survey(tmp_path: Path, name: str) -> Path:
    from test_pipeline_run import copy_example

    pipeline = copy_example("survey", tmp_path / name)
    pl.read_csv(pipeline.parent / "survey.csv").write_parquet(pipeline.parent / "survey.parquet")
    (pipeline.parent / "survey.csv").unlink()
    pipeline.write_text(
        pipeline.read_text().replace('inputs = ["survey.csv"]', 'inputs = ["survey.parquet"]')
    )
    return pipeline


def test_the_internal_report_of_parquet_inputs_read_a_column_at_a_time_is_the_one_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from test_pipeline_run import SECRET, copy_example

    from polars_ppdm.jobs.commands import main

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    pages = {}
    for name, pipeline in {
        "csv": copy_example("survey", tmp_path / "csv"),  # read whole, as before
        "parquet": _parquet_survey(tmp_path, "parquet"),  # a column at a time
    }.items():
        assert main(["run", "--quiet", str(pipeline)]) == 0
        page = (pipeline.parent / "out" / "report.internal.html").read_text()
        pages[name] = re.sub(r"\(run [0-9a-f]{12}\)|written [0-9T:+-]+", "", page)
    assert 'id="column-income"' in pages["csv"] and pages["csv"] == pages["parquet"]


def test_the_published_table_read_a_column_at_a_time_gives_the_page_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from test_pipeline_run import SECRET

    import polars_ppdm.jobs.report as job_report
    from polars_ppdm.jobs.commands import main

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    pipeline = _parquet_survey(tmp_path, "p")
    assert main(["run", "--quiet", "--no-report", str(pipeline)]) == 0
    pages = {}
    for way in ("a column at a time", "whole"):
        if way == "whole":  # as the report read it before issue 30
            monkeypatch.setattr(
                job_report, "_published", lambda path, types=None: (Table(pl.read_parquet(path)), {})
            )
        assert main(["report", str(pipeline)]) == 0
        for version in ("internal", "public"):
            page = (pipeline.parent / "out" / f"report.{version}.html").read_text()
            pages[way, version] = re.sub(r"written [0-9T:+-]+", "", page)
    for version in ("internal", "public"):
        assert pages["a column at a time", version] == pages["whole", version]


# (the file another process changes while the report reads it, the page being written
# then, the refusal's words)
_CHANGED_MEANWHILE = {
    "an input": ("survey.parquet", "internal", "changed while the internal report read it"),
    "the published table, internal page": (
        "out/survey_perturbed.parquet",
        "internal",
        "changed while the report read it (a run replaced the published table?)",
    ),
    "the published table, public page": (
        "out/survey_perturbed.parquet",
        "public",
        "changed while the report read it (a run replaced the published table?)",
    ),
}


@pytest.mark.parametrize("changed", _CHANGED_MEANWHILE)
def test_a_file_changed_while_the_report_reads_it_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], changed: str
) -> None:
    import os

    from test_pipeline_run import SECRET

    import polars_ppdm.reporting
    from polars_ppdm.jobs.commands import main
    from polars_ppdm.jobs.errors import EXIT_INPUT

    name, version, words = _CHANGED_MEANWHILE[changed]
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    pipeline = _parquet_survey(tmp_path, "p")
    assert main(["run", "--quiet", "--no-report", str(pipeline)]) == 0
    real = polars_ppdm.reporting.report

    def meanwhile(*args: Any, **kwargs: Any) -> str:
        page = real(*args, **kwargs)
        if kwargs["version"] == version:  # another process writes the file meanwhile
            path = pipeline.parent / name
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        return page

    monkeypatch.setattr(polars_ppdm.reporting, "report", meanwhile)
    assert main(["report", "--version", version, str(pipeline)]) == EXIT_INPUT
    assert words in capsys.readouterr().err
    assert not (pipeline.parent / "out" / f"report.{version}.html").exists()


def test_a_scanned_column_comes_in_one_piece_a_frame_s_is_not_touched(tmp_path: Path) -> None:
    chunked = pl.concat([pl.DataFrame({"x": [1.0, 2.0]}), pl.DataFrame({"x": [3.0]})], rechunk=False)
    assert chunked["x"].n_chunks() == 2
    frame = Table(chunked)
    assert frame["x"].n_chunks() == 2 and chunked["x"].n_chunks() == 2
    chunked.write_parquet(tmp_path / "x.parquet", row_group_size=1)
    scanned = Table(pl.scan_parquet(tmp_path / "x.parquet"))
    assert scanned["x"].n_chunks() == 1 and scanned["x"].to_list() == [1.0, 2.0, 3.0]


def test_a_multi_column_step_s_attack_figures_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import polars_ppdm as ppdm
    import polars_ppdm.reporting.columns as columns

    rng = np.random.default_rng(4)
    original = pl.DataFrame({"id": np.arange(400), "u": rng.normal(0, 1, 400), "v": rng.normal(0, 1, 400)})
    released = ppdm.add_noise(original, ["u", "v"], scale=0.5, secret="ab" + "cd" * 15, key="id")
    calls = []
    real = columns._noise_stripping
    monkeypatch.setattr(columns, "_noise_stripping", lambda *a: calls.append(1) or real(*a))
    got = ppdm.reporting.build_report(
        released, [{"step": "add_noise", "columns": ["u", "v"], "scale": 0.5}], original=original
    )
    assert len(calls) == 1
    assert [s.risk[0].name for s in got.columns if s.column in {"u", "v"}] == ["PCA noise stripping"] * 2


def test_a_plot_both_pages_show_is_drawn_once_while_it_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from polars_ppdm.reporting import html
    from polars_ppdm.reporting.model import Plot, PlotSeries

    gc.collect()
    before = len(html._DRAWN)
    drawn: list[Plot] = []
    monkeypatch.setattr(html, "plot_svg", lambda plot: drawn.append(plot) or f"<svg>{len(drawn)}</svg>")
    ahead = Plot(
        "line", "budget", "run", "epsilon", (PlotSeries("spent", (1.0, 2.0), (0.5, 1.0), source="estimate"),)
    )
    assert html._plot(ahead) == html._plot(ahead) and len(drawn) == 1
    other = Plot(
        "line", "budget", "run", "epsilon", (PlotSeries("spent", (1.0, 2.0), (0.5, 2.0), source="estimate"),)
    )
    html._plot(other)
    assert len(drawn) == 2
    del ahead, other, drawn[:]
    gc.collect()
    assert len(html._DRAWN) == before  # nothing kept once the plots are gone


@pytest.mark.parametrize("holes", [False, True])
def test_the_rms_error_is_the_old_polars_difference_s(holes: bool) -> None:
    from polars_ppdm.reporting._shown import number
    from polars_ppdm.reporting.columns import _noise
    from polars_ppdm.steps import AddNoise

    rng = np.random.default_rng(9)
    truth = pl.Series("v", rng.lognormal(3, 1, 5000))
    noisy = truth + pl.Series(rng.normal(0, 2, 5000))
    if holes:
        truth = truth.scatter([3, 9], None)
        noisy = noisy.scatter([5], None).scatter([7], float("inf"))
    gaps = (noisy.cast(pl.Float64) - truth.cast(pl.Float64)).drop_nulls().to_numpy()
    gaps = gaps[np.isfinite(gaps)]
    old = number(float(np.sqrt(np.mean(gaps**2))))
    tables = _Tables(Table(noisy.to_frame()), Table(truth.to_frame()), 1000)
    step = AddNoise(step="add_noise", columns=["v"], scale=2.0)
    (rms,) = [f.value for f in _noise(step, "v", tables).utility if f.name == "RMS error"]
    assert rms == old


def test_a_damaged_published_table_is_named_with_polars_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_pipeline_run import SECRET

    from polars_ppdm.jobs.commands import main
    from polars_ppdm.jobs.errors import EXIT_INPUT

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    pipeline = _parquet_survey(tmp_path, "p")
    assert main(["run", "--quiet", "--no-report", str(pipeline)]) == 0
    (pipeline.parent / "out" / "survey_perturbed.parquet").write_bytes(b"not a parquet file")
    assert main(["report", str(pipeline)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "survey_perturbed.parquet' cannot be read:" in err and "replace" not in err
