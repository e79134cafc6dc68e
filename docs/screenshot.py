"""Make docs/report.png: the internal report of the README's main job, as Chromium shows it.

    python docs/screenshot.py            # needs Playwright (the test extra) and Debian's chromium

Runs the survey pipeline (examples/survey) in a temporary folder with a fixed secret, so
the picture changes only when the report does, and keeps the top of the page (the
summary and the first columns) at a laptop's width.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET = "5e3b9a1cc0ffee0071d24f86a9e0b35c2d8e17f64a90c3b5e2718d6f09ab4c31"  # fixed and public (a picture, not a release); no guessable pattern
WIDTH, HEIGHT = 1100, 2300


def main() -> int:
    from playwright.sync_api import sync_playwright

    from polars_ppdm.jobs.commands import main as ppdm
    from polars_ppdm.secret_files import write_secret_text

    chromium = os.environ.get("PPDM_CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        print("docs/screenshot.py needs Chromium: apt-get install chromium (or set PPDM_CHROMIUM)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as folder:
        survey = Path(folder) / "survey"
        shutil.copytree(HERE.parent / "examples" / "survey", survey, ignore=shutil.ignore_patterns("out", "ppdm.secret"))
        write_secret_text(survey / "ppdm.secret", SECRET, overwrite=True)
        if ppdm(["run", "--quiet", str(survey / "pipeline.toml")]) != 0:
            return 1
        page_file = survey / "out" / "report.internal.html"
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(page_file.as_uri())
            page.screenshot(path=str(HERE / "report.png"), clip={"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT})
            browser.close()
    print(f"wrote {HERE / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
