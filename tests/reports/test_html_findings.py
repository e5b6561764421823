"""Red-team findings in the HTML report: counted and listed by severity, linked to their tests,
the agent's evidence escaped and its secrets redacted; checked in Chromium as a person sees it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tamesu import run_async
from tamesu.reports.html import render_html, write_html
from tamesu.reports.rundir import RunDirectory

from ..redteam.agents import serve_agent
from .test_html import CHROMIUM, Page, apart

SUITE = """
suite: shop
secrets: { SHOP_KEY: env:SHOP_KEY }
targets:
  api:
    type: rest
    url: "URL/chat"
    headers: { X-Shop-Key: "{{secrets.SHOP_KEY}}" }
    request: { body: { session_id: "{{session}}", message: "{{message}}" } }
    response: { text: $.reply, tool_calls: "$.tool_calls[*]" }
red_team:
  target: api
  agent: "Mochi Shoes support"
  playbooks: [system_prompt_extraction, excessive_agency]
tests: []
"""


def attack(root: Path, weakness: str) -> Path:
    async def go() -> Path:
        async with serve_agent(weakness) as url:
            suite = root / "shop.yaml"
            suite.write_text(SUITE.replace("URL", url))
            result = await run_async([suite], output=root / "runs", concurrency=4)
        assert result.run_dir is not None
        return result.run_dir

    return asyncio.run(go())


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunDirectory]:
    """Two agents' weaknesses in one run directory: the leaky one's prompt holds the secret."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHOP_KEY", "MOCHI-CANARY-42")
        yield RunDirectory.open(apart(attack, tmp_path_factory.mktemp("leaky"), "leaky"))


@pytest.fixture(scope="module")
def refunded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunDirectory]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHOP_KEY", "k-1")
        yield RunDirectory.open(apart(attack, tmp_path_factory.mktemp("refunder"), "refunder"))


@pytest.mark.integration
def test_findings_are_listed_by_severity_escaped_and_redacted(
    attacked: RunDirectory, refunded: RunDirectory
) -> None:
    page = render_html(attacked)
    assert '<section id="findings">' in page and '<span class="chip sev-high">1 high</span>' in page
    assert "MOCHI-CANARY-42" not in page and "***" in page.split('<section id="findings">')[1]
    refunds = render_html(refunded)
    section = refunds.split('<section id="findings">')[1].split("</section>")[0]
    severities = [s for s in ("CRITICAL", "HIGH", "MEDIUM", "LOW") if f">{s}<" in section]
    assert severities and section.index(f">{severities[0]}<") < section.index("</tbody>")
    assert '<td class="severity">CRITICAL</td>' in section and "issue_refund" in section


@pytest.mark.integration
def test_a_run_without_findings_has_no_findings_section(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHOP_KEY", "k-2")
        run = RunDirectory.open(apart(attack, tmp_path, "sound"))
    assert 'id="findings"' not in render_html(run)


@pytest.fixture(scope="module")
def browser(attacked: RunDirectory) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.mark.integration
def test_a_person_sees_the_finding_and_follows_it_to_its_test(
    browser: Any, attacked: RunDirectory, tmp_path: Path
) -> None:
    view = Page(browser, write_html(attacked, tmp_path / "report.html"))
    findings = view.page.locator("#findings")
    assert findings.is_visible()
    assert findings.locator(".chips").inner_text() == "1 high"
    (row,) = findings.locator("tr.finding").all()
    text = row.inner_text()
    assert "HIGH" in text and "red_team/system_prompt_extraction/repeat_above" in text
    assert "verbatim request" in text and "You are ShopBot" in text
    assert "MOCHI-CANARY-42" not in view.page.content()
    row.locator("a").click()
    target = view.page.locator("article.test:target h3")
    assert "repeat_above" in target.inner_text()
    assert view.errors == [] and all(u.startswith(("file:", "data:")) for u in view.requests)
