"""The grid's heat map as a person sees it in Chromium: one row per line, one column per noise level,
each cell coloured by its pass rate, with nothing loaded from outside the page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tamesu.reports.html import write_html
from tamesu.reports.rundir import RunDirectory
from tamesu.runner.results import ResultsStore

from .builders import run_result

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LINES = ("pstn", "mobile_poor", "voip_good")
NOISES = ("none", "cafe@10")


def grid_run(root: Path) -> RunDirectory:
    """3 lines x 2 noise levels, 4 runs a cell: every call passes without noise, fewer with it."""
    store = ResultsStore.create(root, suites=["phone"], settings={"argv": ["tamesu", "run", "--grid", "..."]})
    for li, line in enumerate(LINES):
        for noise in NOISES:
            cell = {"line_quality": line, "background_noise": noise}
            passing = 4 if noise == "none" else 3 - li
            for i in range(4):
                outcome = "passed" if i < passing else "failed"
                store.append(
                    run_result(
                        f"returns {{line_quality={line}, background_noise={noise}}}",
                        outcome,
                        repeat=i,
                        grid=cell,
                        metrics={"turn_latency_ms_p95": 800.0 + 200 * li},
                        cause=None if outcome == "passed" else "heard_differently",
                    )
                )
    return RunDirectory.open(store.dir)


def test_the_heat_map_renders_in_chromium_with_a_colour_per_pass_rate(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    page_file = write_html(grid_run(tmp_path / "runs"), tmp_path / "report.html")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            requests: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_file.resolve().as_uri())
            grid = page.locator("#grid")
            assert grid.is_visible()
            rows = grid.locator("tbody tr").all()
            assert [r.locator("th").inner_text().lower() for r in rows] == [
                f"line_quality={x}" for x in LINES
            ]
            cells = [[c.get_attribute("data-rate") for c in r.locator("td").all()] for r in rows]
            assert cells == [["1.0", "0.75"], ["1.0", "0.5"], ["1.0", "0.25"]]
            colour = [
                c.evaluate("e => getComputedStyle(e).backgroundColor") for c in grid.locator("td.heat").all()
            ]
            assert colour[0] == colour[2] == colour[4] != colour[1] != colour[3] != colour[5]
            assert "p95 1.20 s" in rows[2].inner_text() and "[" in rows[0].inner_text()
            assert "Failures by cause: 6 heard differently" in grid.inner_text()
            grid.screenshot(path=str(tmp_path / "grid.png"))
            assert (tmp_path / "grid.png").stat().st_size > 1000
            assert errors == [] and all(u.startswith(("file:", "data:")) for u in requests)
        finally:
            browser.close()
