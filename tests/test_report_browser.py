"""The demo's report in a real browser: every figure decodes and shows, every caption renders.

Headless Chromium from Debian (`apt-get install -y chromium`, done by .ci/run) opens the report of the
finished smoke demo (fixture `demo_run`, tests/conftest.py); tests/report_browser.py drives it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import sync_playwright

from report_browser import ReportPage, caption_text

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(demo_run):
    with sync_playwright() as playwright:
        page = ReportPage(playwright, demo_run / "report.html")
        yield page
        page.close()


def test_the_report_lists_every_figure(report, demo_run):
    figures = {str(p.relative_to(demo_run)) for p in (demo_run / "results" / "figures").rglob("*.png")}
    images = {path for path, r in report.results().items() if r["mime_type"] == "image/png"}
    assert figures and images == figures


def test_every_figure_and_caption_renders(report):
    results = report.results()
    for path, result in sorted(results.items()):
        caption = caption_text(result["caption"] or "")
        # captions are templates: rendered means filled in, with no template syntax left over
        assert len(caption) > 40 and "{{" not in caption and "{%" not in caption, (path, caption)
        if result["mime_type"] == "image/png":
            assert report.show(path) > 100, path  # decoded by the browser, not a broken-image icon
        shown = report.info(path)
        assert caption in shown, (path, caption[:300], shown[:600])
    assert report.errors == []
