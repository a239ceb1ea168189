"""Opening a Snakemake report in headless Chromium (Debian's `chromium`, driven by Playwright) and showing
each of its results the way a reader does: search for it, view it, open its info panel."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

CHROMIUM = ("chromium", "chromium-browser")


def chromium_path() -> str:
    for name in CHROMIUM:
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("no Chromium on PATH: install it (Debian: apt-get install -y chromium; .ci/run does)")


def caption_text(caption_html: str) -> str:
    """A caption's visible characters: its HTML without tags, entities decoded, whitespace removed
    (the browser lays out spaces around inline markup its own way)."""
    return "".join(html.unescape(re.sub(r"<[^>]+>", "", caption_html)).split())


class ReportPage:
    """One report.html open in Chromium; ``errors`` collects the page's JavaScript errors."""

    def __init__(self, playwright, report: Path):
        self.browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        self.page = self.browser.new_page(viewport={"width": 1600, "height": 1000})
        # a wait is a guard against a hang, not a speed test: the test runs beside other tests on a busy machine
        self.page.set_default_timeout(120_000)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.goto(report.resolve().as_uri())
        self.page.wait_for_selector("text=Workflow")

    def results(self) -> dict:
        """The report's own index of results: path -> {caption (HTML), mime_type, data_uri, ...}."""
        return self.page.evaluate("results")

    def _row(self, path: str):
        box = self.page.get_by_placeholder("Search...")
        box.fill("re:^" + re.escape(path) + "$")
        box.press("Enter")
        # search results show a result by its labels (or its path when it has none). Wait for the row that
        # shows this result's labels: until the page has applied the search, the previous search's row is
        # still there, and clicking it would show the previous result.
        rows = self.page.locator("tr", has=self.page.locator("a[iconname=eye]"))
        row = rows
        for text in self._shown_as(path):
            row = row.filter(has=self.page.get_by_text(text, exact=True))
        row.first.wait_for()
        assert rows.count() == 1, f"searching the report for {path} finds {rows.count()} results"
        return row

    def _shown_as(self, path: str) -> list[str]:
        """The texts that a result's row shows: its label values, or its path when it has no labels."""
        labels = self.page.evaluate("p => (results[p] || {}).labels || null", path)
        return [str(v) for v in labels.values()] if labels else [path]

    def show(self, path: str, tries: int = 4) -> int:
        """View ``path`` in the main panel; the natural width in pixels of the image the browser decoded.

        The page may re-render the search results just as the eye is clicked (on a loaded machine the click
        then lands on a row that is being replaced, and nothing is shown): the click is repeated, up to
        ``tries`` times, until an image of that name is visible."""
        name = Path(path).name
        img = self.page.locator(f"img[src*='filename={name};']").filter(visible=True)
        for attempt in range(tries):
            self._row(path).first.locator("a[iconname=eye]").click()
            try:
                img.first.wait_for(timeout=30_000)
            except PlaywrightTimeout:
                if attempt == tries - 1:
                    raise AssertionError(f"{path}: no image shown after {tries} clicks on its eye icon") from None
                continue
            return img.first.evaluate("e => e.complete ? e.naturalWidth : 0")
        raise AssertionError("tries must be at least 1")

    def info(self, path: str) -> str:
        """Open the info panel of ``path``; its visible characters (whitespace removed)."""
        self._row(path).first.locator("a[iconname=information-circle]").click()
        self.page.wait_for_selector("text=DESCRIPTION")
        return "".join(self.page.inner_text("#app").split())

    def screenshot(self, out: Path) -> None:
        self.page.screenshot(path=str(out))

    def close(self) -> None:
        self.browser.close()
