"""The report of the README's main job, looked at as a person would: rendered by headless
Chromium on a phone and on a laptop, with a screenshot, and checked for its title, one
section per column, no broken image, no console error and no sideways scrolling.

Needs Playwright (the test extra) and Debian's ``chromium`` (``.ci/run`` installs it);
elsewhere the test skips and says which is missing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_pipeline_run import copy_example

from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import EXIT_OK

# The columns in the order of the pipeline's steps (drop last).
SURVEY_COLUMNS = ["smoker", "vote", "income", "age", "region", "respondent_id", "name"]
PERTURBED = ["smoker", "vote", "income", "age"]
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1280, "height": 800}}
BANNERS = {
    "internal": "Internal: shows statistics of the original data. Do not publish.",
    "public": "Public: computed from the released data, the releases and the parameters only.",
}
# Chromium as the probe of this machine kind starts it: no network of its own.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    found = os.environ.get("PPDM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    return found if found and os.access(found, os.X_OK) else None


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the report's browser test needs Playwright: pip install -e '.[test]'")
    executable = _chromium()
    if executable is None:
        pytest.skip(
            "the report's browser test needs Chromium: apt-get install chromium (or set PPDM_CHROMIUM)"
        )
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def survey_reports(tmp_path_factory) -> dict[str, Path]:
    """`ppdm run` on a copy of examples/survey (the README's main job) writes both reports."""
    folder = tmp_path_factory.mktemp("survey")
    pipeline = copy_example("survey", folder)
    assert main(["run", "--quiet", str(pipeline)]) == EXIT_OK
    out = pipeline.parent / "out"
    return {version: out / f"report.{version}.html" for version in BANNERS}


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
@pytest.mark.parametrize("version", sorted(BANNERS))
def test_the_demo_report_reads_well_in_chromium(browser, survey_reports, version, viewport, tmp_path):
    page = browser.new_page(viewport=VIEWPORTS[viewport])
    problems: list[str] = []
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in {"error", "warning"} else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(survey_reports[version].resolve().as_uri())
    page.wait_for_load_state("load")

    assert "survey" in page.title() and version in page.title().lower()
    assert "survey" in page.inner_text("h1")
    assert BANNERS[version] in page.inner_text("body")
    # The verdict opens the page: the unchanged column's uniques and k beside each
    # perturbed column's own risk.
    assert page.eval_on_selector("main section", "s => s.id") == "verdict"
    verdict = page.inner_text("#verdict")
    assert "published unchanged: region" in verdict and "k = " in verdict
    for column in PERTURBED:
        assert f"{column} (" in verdict, column
    # One section per column the steps name, in the steps' order, the dropped ones included.
    headings = page.eval_on_selector_all("section.column h2", "hs => hs.map(h => h.textContent.trim())")
    assert headings == SURVEY_COLUMNS
    # Every image loaded and drawn; each perturbed column has at least one plot.
    images = page.evaluate(
        "Array.from(document.images).map(i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0,"
        " section: i.closest('section') ? i.closest('section').id : ''}))"
    )
    assert images and all(image["ok"] for image in images), [i for i in images if not i["ok"]]
    plotted = {image["section"] for image in images}
    for column in PERTURBED:
        assert f"column-{column}" in plotted, (column, sorted(plotted))
    # The smoker release (rr_support) and the budget are on the page.
    assert page.locator("section.release").count() == 1
    assert "budget" in page.inner_text("body").lower()
    # Readable on a phone: nothing wider than the screen (tables scroll inside their box).
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the page scrolls sideways by {overflow} px on a {viewport}"
    shot = tmp_path / f"report-{version}-{viewport}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert problems == []
    page.close()
