"""Make docs/img/method_page.png and docs/img/api_reference.png: two pages of the
documentation site as Chromium shows them.

    python docs/screenshot_site.py     # needs the docs extra (mkdocs), Playwright (the test extra) and Chromium

Builds the site with ``mkdocs build --strict`` into a temporary folder, serves it over HTTP
on localhost (as a reader's browser gets it: the pages' links are folders) and takes the top
of each page at a laptop's width. tests/test_docs_browser.py uses the same functions to
check that the pages render.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The picture's name -> the page (a folder of the built site) and a heading it shows.
PAGES = {
    "method_page": ("methods/ecdf/", "ECDF resampling (paper 000)"),
    "api_reference": ("reference/", "API reference: polars_ppdm"),
}
WIDTH, HEIGHT = 1280, 900


def chromium() -> str | None:
    return os.environ.get("PPDM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def build_site(destination: Path) -> None:
    """``mkdocs build --strict`` of this checkout into ``destination``."""
    mkdocs = Path(sys.executable).with_name("mkdocs")
    command = [str(mkdocs)] if mkdocs.exists() else [sys.executable, "-m", "mkdocs"]
    done = subprocess.run(
        [*command, "build", "--strict", "--quiet", "--site-dir", str(destination)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    if done.returncode != 0:
        msg = f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
        raise RuntimeError(msg)


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free port of localhost; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # quiet: no line per request
        pass


def main() -> int:
    from playwright.sync_api import sync_playwright

    browser_path = chromium()
    if browser_path is None:
        print(
            "docs/screenshot_site.py needs Chromium: apt-get install chromium (or set PPDM_CHROMIUM)",
            file=sys.stderr,
        )
        return 1
    (HERE / "img").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        build_site(Path(folder))
        with serve(Path(folder)) as base, sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            for name, (path, _) in PAGES.items():
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(HERE / "img" / f"{name}.png"))
                print(f"wrote {HERE / 'img' / f'{name}.png'}")
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
