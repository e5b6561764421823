"""Screenshots of an HTML report for the README (docs/report-summary.png, docs/report-call.png).

    examples/quickstart/run.sh && tamesu report
    python docs/report_screenshots.py tamesu-runs/latest/report.html

Needs Playwright for Python and Debian's Chromium (apt-get install chromium); it never downloads a
browser.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).parent


def main(report: str, chromium: str = "/usr/bin/chromium") -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        page.goto(Path(report).resolve().as_uri())
        page.screenshot(path=str(HERE / "report-summary.png"))
        call = page.locator("article.test", has=page.locator(".voice")).first
        call.locator("details.run summary").first.click()
        call.locator(".voice").first.scroll_into_view_if_needed()
        call.screenshot(path=str(HERE / "report-call.png"))
        browser.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
