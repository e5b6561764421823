"""The a11y step in Chromium: axe-core against pages of our own with known accessibility faults."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tamesu import extras
from tamesu.errors import TargetError
from tamesu.extras import axe_missing
from tamesu.targets.browser.browser_session import close_shared_browsers

from .conftest import Harness, Serve
from .test_browser import Page, steps_of

pytestmark = pytest.mark.integration
needs_axe = pytest.mark.skipif(axe_missing() is not None, reason=str(axe_missing()))

PIXEL = "data:image/gif;base64,R0lGODlhAQABAAAAACw="
PAGES = {
    "clean": f'<main><h1>Shoes</h1><img src="{PIXEL}" alt="Blue sneakers"><button>Buy</button></main>',
    "moderate": '<main><h1>Shoes</h1><button>Buy</button></main><p id="outside">Not in a landmark</p>',
    "faulty": (
        f'<main><h1>Shoes</h1><img id="shoe" src="{PIXEL}"><button id="buy"></button>'
        '<button id="tok-s3cr3t-v4lue"></button></main><p>Not in a landmark</p>'
    ),
}


@pytest.fixture
async def site(serve: Serve) -> AsyncIterator[str]:
    """Our own pages: a clean one, one with a moderate fault only, one with critical faults too."""

    async def page(request: web.Request) -> web.Response:
        body = PAGES[request.match_info["name"]]
        html = f'<!doctype html><html lang="en"><head><title>Shop</title></head><body>{body}</body></html>'
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{name}", page)
    yield await serve(app)
    await close_shared_browsers()


def check(harness: Harness, url: str, arg: object, out: Path) -> Page:
    return Page(harness, {"url": url, "browser": {"recording": "off"}}, [{"action": {"a11y": arg}}], out)


@needs_axe
async def test_violations_at_or_above_the_impact_fail_the_step_and_milder_ones_are_counted(
    harness: Harness, site: str, tmp_path: Path
) -> None:
    page = check(harness, f"{site}/faulty", {"impact": "serious"}, tmp_path)
    [event] = steps_of(await page.open())
    assert not event["passed"] and event["violations"] == 2 and event["milder"] == 1
    assert event["rules"] == ["button-name", "image-alt"]
    [result] = page.adapter.results()
    assert not result.passed and not result.error and result.kind == "a11y"
    assert result.expected == "no accessibility violations at or above serious"
    assert result.message.splitlines()[:2] == [
        "step 1 (a11y): 2 accessibility violations at or above serious",
        "- button-name (critical, 2 elements: #buy, #tok-s3cr3t-v4lue): Buttons must have discernible text",
    ]
    assert result.message.splitlines()[2].startswith("- image-alt (critical, 1 element: #shoe): ")
    assert [v["rule"] for v in result.actual] == ["button-name", "image-alt"]
    assert result.actual[1]["url"].startswith("https://dequeuniversity.com/rules/axe/")


@needs_axe
async def test_the_default_impact_fails_on_any_violation(harness: Harness, site: str, tmp_path: Path) -> None:
    page = check(harness, f"{site}/moderate", None, tmp_path)
    await page.open()
    [result] = page.adapter.results()
    assert not result.passed
    assert result.message == (
        "step 1 (a11y): 1 accessibility violation at or above minor\n"
        "- region (moderate, 1 element: #outside): All page content should be contained by landmarks"
    )


@needs_axe
async def test_a_clean_page_and_one_with_only_milder_faults_pass(
    harness: Harness, site: str, tmp_path: Path
) -> None:
    clean = check(harness, f"{site}/clean", {}, tmp_path)
    milder = check(harness, f"{site}/moderate", "serious", tmp_path)
    assert steps_of(await clean.open())[0]["passed"]
    assert steps_of(await milder.open())[0]["passed"]
    results = [clean.adapter.results()[0], milder.adapter.results()[0]]
    assert [(r.kind, r.passed) for r in results] == [("a11y", True), ("a11y", True)]
    assert results[0].message == "no accessibility violations at or above minor"
    assert results[1].message == "no accessibility violations at or above serious (1 milder)"


@needs_axe
async def test_rules_and_ref_narrow_what_axe_checks(harness: Harness, site: str, tmp_path: Path) -> None:
    only_images = check(harness, f"{site}/faulty", {"rules": ["image-alt"]}, tmp_path)
    one_button = check(harness, f"{site}/faulty", {"ref": "#buy"}, tmp_path)
    assert steps_of(await only_images.open())[0]["rules"] == ["image-alt"]
    assert steps_of(await one_button.open())[0]["rules"] == ["button-name"]
    assert one_button.adapter.results()[0].actual[0]["targets"] == ["#buy"]
    by_tag = check(harness, f"{site}/moderate", {"rules": ["wcag2a"]}, tmp_path)
    assert steps_of(await by_tag.open())[0]["passed"], "region is a best practice, not a WCAG rule"


@needs_axe
async def test_an_unknown_rule_is_a_config_error_rather_than_a_check_of_nothing(
    harness: Harness, site: str, tmp_path: Path
) -> None:
    page = check(harness, f"{site}/clean", {"rules": ["image-alt", "imgae-alt"]}, tmp_path)
    with pytest.raises(
        TargetError, match=r"a11y\.rules: axe-core 4\.12\.1 has no rule or tag imgae-alt"
    ) as err:
        await page.open()
    assert err.value.kind == "config"


@needs_axe
async def test_a_secret_on_the_page_is_masked_in_the_findings(
    harness: Harness, site: str, tmp_path: Path
) -> None:
    harness.redactor.add("s3cr3t-v4lue")
    page = check(harness, f"{site}/faulty", {"rules": ["button-name"]}, tmp_path)
    [event] = steps_of(await page.open())
    [result] = page.adapter.results()
    assert "s3cr3t" not in result.message + repr(result.actual) + repr(event)
    assert "#tok-***" in result.message


async def test_without_axe_core_the_step_is_an_error_naming_the_command(
    harness: Harness, site: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extras, "axe_file", lambda: None)
    page = check(harness, f"{site}/faulty", "serious", tmp_path)
    with pytest.raises(
        TargetError,
        match=r"axe-core is not installed: pip install 'tamesu\[browser\]' \(axe-playwright-python",
    ):
        await page.open()
