"""The HTML report as a page: its markup (escaping, the content policy) and, in Chromium, what a
person sees (filters, the transcript, the recording playing, charts), with no console error."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tamesu.reports.html import render_html, write_html
from tamesu.reports.rundir import RunDirectory

from .runs import HOSTILE, shop_agent, shop_run, voice_run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
T = TypeVar("T")


def apart(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a thread of its own: once the ``browser`` fixture has started Playwright's
    sync API, its event loop counts as running in this thread and ``tamesu.run`` (``asyncio.run``)
    refuses to start here, so a run fixture set up after it (tests run in any order) runs apart."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> RunDirectory:
    with shop_agent() as url:
        result = apart(shop_run, tmp_path_factory.mktemp("shop"), url)
    assert result.run_dir is not None
    return RunDirectory.open(result.run_dir)


@pytest.fixture(scope="module")
def phone(tmp_path_factory: pytest.TempPathFactory) -> RunDirectory:
    pytest.importorskip("numpy", reason="the voice run is written with tamesu[voice]")
    return RunDirectory.open(apart(voice_run, tmp_path_factory.mktemp("phone")))


@pytest.fixture(scope="module")
def browser(shop: RunDirectory) -> Iterator[Any]:
    """Chromium, started after the shop run exists: the sync API runs an event loop of its own, in
    which ``tamesu.run`` (``asyncio.run``) cannot start (pytest may set fixtures up in any order)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"]
        )
        yield browser
        browser.close()


class Page:
    """A page opened from disk, with every console error, page error and request it made."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")

    def article(self, name: str) -> Any:
        return self.page.locator("article.test", has=self.page.locator("h3", has_text=name))


@pytest.mark.unit
def test_agent_markup_is_escaped_and_only_the_pages_own_script_and_style_are_allowed(
    shop: RunDirectory,
) -> None:
    page = render_html(shop)
    assert "<script>window.__pwned" not in page and "<img src=x" not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    [script] = re.findall(r"<script>(.*?)</script>", page, re.S)
    [style] = re.findall(r"<style>(.*?)</style>", page, re.S)
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert found is not None
    policy = html.unescape(found.group(1))

    def digest(text: str) -> str:
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src '{digest(script)}'" in policy
    assert f"style-src '{digest(style)}'" in policy
    assert "default-src 'none'" in policy


@pytest.mark.unit
def test_paths_in_a_run_directory_cannot_leave_it(shop: RunDirectory) -> None:
    assert shop.inside("transcripts/x.json") is not None
    assert shop.inside("../../etc/passwd") is None and shop.inside("/etc/passwd") is None


@pytest.mark.integration
def test_a_person_sees_every_test_and_the_failed_only_filter_hides_passed_ones(
    shop: RunDirectory, browser: Any, tmp_path: Path
) -> None:
    view = Page(browser, write_html(shop, tmp_path / "report.html"))
    page = view.page
    assert view.errors == []
    assert all(u.startswith(("file:", "data:")) for u in view.requests), view.requests
    for name in ("greets", "refund policy", "hostile reply"):
        assert view.article(name).is_visible()
    refund = view.article("refund policy")
    assert "2/4 passed, threshold 0.50" in refund.inner_text()
    assert "50% (95% CI 15%–85%), pass^3 0.00" in refund.inner_text()
    page.check("#f-failed")
    assert not view.article("greets").is_visible() and not view.article("refund policy").is_visible()
    assert view.article("hostile reply").is_visible()
    assert page.locator("#f-count").inner_text() == "1 of 3 tests shown"
    assert not page.locator("tr[data-test]", has_text="greets").is_visible()
    page.uncheck("#f-failed")
    page.select_option("#f-tag", "smoke")
    assert view.article("greets").is_visible() and not view.article("hostile reply").is_visible()
    page.select_option("#f-tag", "")
    page.fill("#f-search", "refund")
    assert page.locator("#f-count").inner_text() == "1 of 3 tests shown"
    assert view.errors == []


@pytest.mark.integration
def test_a_reply_with_markup_is_shown_as_text_and_never_runs(
    shop: RunDirectory, browser: Any, tmp_path: Path
) -> None:
    view = Page(browser, write_html(shop, tmp_path / "report.html"))
    hostile = view.article("hostile reply")
    assert hostile.locator(".turn.agent .text").inner_text() == HOSTILE.replace("\x1b", "\\x1b")
    assert view.page.evaluate("typeof window.__pwned") == "undefined"
    assert view.page.locator("article img").count() == 0
    assert view.errors == []


@pytest.mark.integration
def test_transcripts_show_tool_calls_and_assertion_evidence(
    shop: RunDirectory, browser: Any, tmp_path: Path
) -> None:
    view = Page(browser, write_html(shop, tmp_path / "report.html"))
    refund = view.article("refund policy")
    failing = refund.locator("details.run", has=view.page.locator("summary", has_text="FAIL")).first
    assert not failing.locator(".turns").is_visible()  # the test passed (2 of 4): its runs stay closed
    failing.locator("summary").click()
    text = failing.inner_text()
    assert "lookup_policy" in text and '"topic": "returns"' in text
    assert "FAIL" in text and "30 days" in text and "Returns are accepted within 60 days" in text
    hostile = view.article("hostile reply").locator("details.run")
    assert hostile.locator(".turns").is_visible()  # a failed test opens its failed runs


@pytest.mark.integration
def test_a_call_plays_with_its_waveform_and_turn_timeline(
    phone: RunDirectory, browser: Any, tmp_path: Path
) -> None:
    view = Page(browser, write_html(phone, tmp_path / "report.html"))
    page = view.page
    page.locator("details.run summary").first.click()
    voice = page.locator(".voice")
    assert voice.locator("svg.waveform path").count() == 2
    assert voice.locator(".seg-caller").count() == 2 and voice.locator(".seg-agent").count() == 2
    assert voice.locator(".barge-in").count() == 1
    assert "600 ms" in (voice.locator("svg.timeline").text_content() or "")
    duration = page.evaluate("document.querySelector('.voice audio').duration")
    assert duration == pytest.approx(6.0, abs=0.05)
    page.evaluate("document.querySelector('.voice audio').play()")
    deadline = time.monotonic() + 10
    while page.evaluate("document.querySelector('.voice audio').currentTime") < 0.3:
        assert time.monotonic() < deadline, "the recording did not play"
        page.wait_for_timeout(50)
    head = float(page.locator("svg.waveform .playhead").get_attribute("x1") or 0)
    assert head > 0
    box = voice.locator("svg.timeline").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + 10)
    at = page.evaluate("document.querySelector('.voice audio').currentTime")
    assert at == pytest.approx(4.5, abs=0.3)
    assert "order_id" in page.locator("dl.kv").first.inner_text()
    assert view.errors == []


@pytest.mark.integration
def test_a_load_test_shows_its_percentiles_over_time(browser: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    with shop_agent() as url:
        (tmp_path / "tamesu.yaml").write_text("history: { enabled: false }\n")
        (tmp_path / "shop.yaml").write_text(
            'suite: load\ntargets: { api: { type: rest, url: "'
            + url
            + '/chat", response: { text: $.reply } } }\n'
            "tests: [ { name: greets, target: api, scenario: { script: [ { say: hello } ] },"
            " assert: [ { contains: Hello } ] } ]\n"
        )
        proc = subprocess.run(
            [sys.executable, "-m", "tamesu", "load", "shop.yaml", "--calls", "60", "--rate", "30",
             "--window", "0.5s", "-q", "--output", "runs"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    view = Page(browser, write_html(RunDirectory.open(run_dir), tmp_path / "report.html"))
    load = view.page.locator("#load")
    assert load.locator(".chart").count() >= 3
    assert "Turn latency (ms)" in load.inner_text() and "Throughput (calls/s)" in load.inner_text()
    assert load.locator(".chart polyline").count() >= 3
    assert view.errors == []


@pytest.mark.unit
def test_passing_checks_leave_out_the_empty_seen_column_and_one_turn_shows_one_latency(
    shop: RunDirectory,
) -> None:
    articles = {
        re.sub(r"<[^>]+>", "", m.group(1)): m.group(0)
        for m in re.finditer(r"<article .*?<h3[^>]*>(.*?)</h3>.*?</article>", render_html(shop), re.S)
    }
    greets = next(text for name, text in articles.items() if "greets" in name)
    hostile = next(text for name, text in articles.items() if "hostile reply" in name)
    assert "<th>seen</th>" not in greets and "<th>seen</th>" in hostile
    assert ">turn_latency_ms<" in greets and "turn_latency_ms_p95" not in greets
