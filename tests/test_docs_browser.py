"""The documentation site, looked at as a reader would: built with ``mkdocs build --strict``,
served over HTTP and rendered by headless Chromium (the pages docs/img shows: a method page
and the API reference). Each page has its title and heading, its images load, and no page
it links to within the site is missing.

Needs the docs extra (mkdocs), Playwright (the test extra) and Chromium; skipped with the
reason otherwise. The browser tier (``make test-browser``) runs it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from urllib.parse import urljoin

import pytest

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _site_tools():
    spec = importlib.util.spec_from_file_location("docs_screenshot_site", DOCS / "screenshot_site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SITE = _site_tools()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("the docs site needs mkdocs: pip install -e '.[docs]' (make docs)")
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("the browser test needs Playwright: pip install -e '.[test]'")
    if SITE.chromium() is None:
        pytest.skip("the browser test needs Chromium: apt-get install chromium (or set PPDM_CHROMIUM)")
    site = tmp_path_factory.mktemp("site")
    SITE.build_site(site)
    with SITE.serve(site) as base:
        yield base


@pytest.fixture(scope="module")
def browser(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=SITE.chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


@pytest.mark.parametrize("name", sorted(SITE.PAGES))
def test_the_page_renders_in_chromium(served, browser, name):
    import urllib.error
    import urllib.request

    path, heading = SITE.PAGES[name]
    page = browser.new_page(viewport={"width": SITE.WIDTH, "height": SITE.HEIGHT})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    response = page.goto(served + path)
    assert response is not None and response.status == 200, f"{path}: HTTP {response and response.status}"
    page.wait_for_load_state("networkidle")
    assert page.title().endswith("polars_ppdm"), page.title()
    assert "404" not in page.title()
    assert page.locator("article h1").first.inner_text().rstrip("¶").strip() == heading  # ¶: the permalink
    assert page.locator("article h2, article h3").count() >= 1, f"{path}: no section headings"
    broken_images = page.evaluate(
        "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).length"
    )
    assert broken_images == 0
    # Every link within the site that the page shows leads to a page that exists.
    links = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
    for link in {urljoin(served + path, href).split("#")[0] for href in links}:
        if link.startswith(served):
            try:
                with urllib.request.urlopen(link) as got:
                    assert got.status == 200, link
            except urllib.error.HTTPError as error:
                pytest.fail(f"{path} links to {link}: HTTP {error.code}")
    assert not errors, errors
    page.close()
