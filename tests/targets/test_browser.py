"""The browser target in Chromium against a web shop on loopback: the context's options, the gate
on every request, deterministic steps, and a chat widget talking to the demo agent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

pytest.importorskip("playwright.async_api", reason="pip install 'tamesu[browser]'")

from playwright.async_api import Error as PlaywrightError

from tamesu.config.suite import Step
from tamesu.config.target import parse_target
from tamesu.errors import TargetError
from tamesu.extras import chromium_path
from tamesu.kernel.events import BrowserAction, BrowserBlocked, BrowserMocked, BrowserRecording, BrowserStep
from tamesu.kernel.messages import AgentTurn, Event, Message, UserTurn
from tamesu.targets.browser import browser_steps
from tamesu.targets.browser.adapter import BrowserAdapter
from tamesu.targets.browser.browser_session import close_shared_browsers
from tamesu.testing.web_shop import WebShop, serve_web_shop

from .conftest import Harness, Serve, load_demo_agent

try:
    chromium_path()
except Exception:
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

pytestmark = pytest.mark.integration


@pytest.fixture
async def shop(serve: Serve) -> AsyncIterator[tuple[WebShop, str]]:
    agent = await serve(load_demo_agent().create_app())
    shop = WebShop(agent)
    async with serve_web_shop(shop=shop) as url:
        yield shop, url
    await close_shared_browsers()


class Page:
    """One browser target built from a config and steps, with its turns' messages."""

    def __init__(
        self,
        harness: Harness,
        config: dict[str, Any],
        steps: list[dict[str, Any]],
        out: Path,
        *,
        update_golden: bool = False,
    ) -> None:
        ctx = harness.context(turn_timeout=10.0)
        ctx.suite_dir = str(out)
        ctx.test = SimpleNamespace(steps=[Step.model_validate(s) for s in steps])  # type: ignore[assignment]
        ctx.output_dir = out
        ctx.update_golden = update_golden
        self.adapter = BrowserAdapter(parse_target({"type": "browser", **config}), ctx)
        harness.started.append(self.adapter)

    async def open(self) -> list[Message]:
        await self.adapter.start()
        return await self.say(None)

    async def say(self, text: str | None) -> list[Message]:
        out = [m async for m in self.adapter.turn(None if text is None else UserTurn(text=text))]
        assert isinstance(out[-1], AgentTurn) and sum(isinstance(m, AgentTurn) for m in out) == 1
        return out


E = TypeVar("E")


def events_of(messages: list[Message], kind: type[E]) -> list[E]:
    return [m.event for m in messages if isinstance(m, Event) and isinstance(m.event, kind)]


def steps_of(messages: list[Message]) -> list[dict[str, Any]]:
    """Each step's event as one mapping: its index, action, passed, message and details."""
    return [
        {**e.details, "step": e.step, "action": e.action, "passed": e.passed, "message": e.message}
        for e in events_of(messages, BrowserStep)
    ]


async def test_the_chat_widget_is_a_conversation_with_the_demo_agent(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    page = Page(harness, {"url": url}, [{"action": {"click": "#open-chat"}}], tmp_path)
    greeting = await page.open()
    assert greeting[-1].text == "Hi! I'm the Mochi Shoes assistant."
    answer = await page.say("Can I return shoes I bought 40 days ago?")
    assert answer[-1].text == (
        "I'm sorry, returns are accepted within 30 days of delivery, so a return after 40 days is not possible."
    )
    second = await page.say("Where is ORD-1234?")
    assert second[-1].text.startswith("Your order ORD-1234 is ")


async def test_a_page_without_a_chat_input_is_an_error_that_says_how_to_open_the_widget(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    page = Page(harness, {"url": f"{url}/account"}, [], tmp_path)
    await page.open()
    with pytest.raises(TargetError, match="no chat input"):
        await page.say("hello")


async def test_deterministic_steps_fill_a_form_and_check_the_page(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    steps = [
        {"action": {"fill": {"ref": "#email", "text": "marta@example.com"}}},
        {"action": {"click": "#subscribe"}},
        {"action": {"assert_text": {"ref": "#thanks", "text": "Thanks, marta@example.com"}}},
        {"action": {"screenshot": "after subscribing"}},
        {"action": {"eval_js": "document.title"}},
        {"action": {"press": {"ref": "#email", "key": "Tab"}}},
        {"action": {"wait": "#account"}},
        {"action": {"click": "#account"}},
        {"action": {"assert_url": "**/account"}},
        {"action": {"navigate": "/"}},
        {"action": {"assert_url": "/"}},
    ]
    page = Page(harness, {"url": url}, steps, tmp_path)
    events = steps_of(await page.open())
    assert [e["action"] for e in events] == [next(iter(s["action"])) for s in steps]
    assert all(e["passed"] for e in events)
    assert events[4]["result"] == "Mochi Shoes"
    shot = Path(events[3]["path"])
    assert shot.name == "after_subscribing.png" and shot.read_bytes()[:4] == b"\x89PNG"
    results = page.adapter.results()
    assert [(r.kind, r.passed) for r in results] == [
        ("assert_text", True),
        ("assert_url", True),
        ("assert_url", True),
    ]


async def test_a_failed_check_is_a_failed_assertion_and_ends_the_steps(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser_steps, "ASSERT_WAIT", 0.3)
    _, url = shop
    steps = [
        {"action": {"assert_text": "Out of stock"}},
        {"action": {"click": "#subscribe"}},
    ]
    page = Page(harness, {"url": url}, steps, tmp_path)
    out = await page.open()
    assert [e["passed"] for e in steps_of(out)] == [False]
    assert out[-1].done
    [result] = page.adapter.results()
    assert not result.passed and not result.error
    assert result.message == "step 1 (assert_text): 'Out of stock' is not on the page"
    assert "Stock of blue sneakers" in result.actual


async def test_a_click_on_a_missing_element_fails_the_step(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser_steps, "ACTION_TIMEOUT", 0.3)
    _, url = shop
    page = Page(harness, {"url": url}, [{"action": {"click": "#no-such-button"}}], tmp_path)
    await page.open()
    [result] = page.adapter.results()
    assert not result.passed and result.kind == "step" and "click #no-such-button" in result.message


async def test_mocks_answer_from_the_first_page_and_the_mock_step_adds_more(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    web, url = shop
    config = {
        "url": url,
        "browser": {"mocks": [{"url": "**/api/stock*", "method": "GET", "body": {"stock": 0}}]},
    }
    steps = [
        {"action": {"assert_text": {"ref": "#stock", "text": "0"}}},
        {"action": {"mock": {"url": "/api/stock", "abort": True}}},
        {"action": {"navigate": "/"}},
        {"action": {"assert_text": {"ref": "#stock", "text": "unavailable"}}},
        {
            "action": {
                "mock": {
                    "url": "/api/stock",
                    "status": 200,
                    "body": '{"stock": 7}',
                    "delay_ms": 50,
                    "headers": {"Content-Type": "application/json"},
                }
            }
        },
        {"action": {"navigate": "/"}},
        {"action": {"assert_text": {"ref": "#stock", "text": "7"}}},
    ]
    page = Page(harness, config, steps, tmp_path)
    out = await page.open()
    assert all(e["passed"] for e in steps_of(out)), steps_of(out)
    assert not any("/api/stock" in r for r in web.requests)
    mocked = events_of(out, BrowserMocked)
    assert [m.pattern for m in mocked] == ["**/api/stock*", "/api/stock", "/api/stock"]


async def test_requests_and_navigations_outside_the_allowed_domains_never_leave_the_browser(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    web, url = shop
    other = url.replace("127.0.0.1", "localhost")
    steps = [
        {"action": {"eval_js": f"fetch('{other}/api/stock').then(() => 'reached', () => 'blocked')"}},
        {"action": {"navigate": f"{other}/"}},
    ]
    page = Page(harness, {"url": url}, steps, tmp_path)
    out = await page.open()
    events = steps_of(out)
    assert events[0]["result"] == "blocked"
    assert [e["passed"] for e in events] == [True, False]
    assert "outside the allowed domains" in events[1]["message"]
    assert page.adapter.page is not None
    with pytest.raises(PlaywrightError, match="ERR_BLOCKED_BY_CLIENT"):
        await page.adapter.page.goto(f"{other}/account")
    blocked = [m.url for m in events_of(out, BrowserBlocked)]
    assert blocked == [f"{other}/api/stock"]
    assert page.adapter.gate is not None and page.adapter.gate.notes[-1][1]["url"] == f"{other}/account"
    assert not any(r.startswith("GET localhost") for r in web.requests), web.requests


async def test_allowed_domains_admit_other_hosts(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    web, url = shop
    other = url.replace("127.0.0.1", "localhost")
    config = {"url": url, "allowed_domains": ["127.0.0.1", "localhost"]}
    page = Page(harness, config, [{"action": {"navigate": f"{other}/account"}}], tmp_path)
    out = await page.open()
    assert steps_of(out)[0]["passed"]
    assert any(r.startswith("GET localhost") for r in web.requests)


async def test_viewport_locale_and_a_saved_sign_in_shape_the_context(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    state = {
        "cookies": [
            {
                "name": "shop_user",
                "value": "marta",
                "domain": "127.0.0.1",
                "path": "/",
                "expires": -1,
                "httpOnly": False,
                "secure": False,
                "sameSite": "Lax",
            }
        ],
        "origins": [],
    }
    (tmp_path / "auth").mkdir()
    (tmp_path / "auth" / "state.json").write_text(json.dumps(state))
    config = {
        "url": url,
        "browser": {"viewport": "800x600", "locale": "de-DE"},
        "auth": {"storage_state": "auth/state.json"},
    }
    steps = [
        {"action": {"eval_js": "[innerWidth, innerHeight, navigator.language]"}},
        {"action": {"navigate": "/account"}},
        {"action": {"assert_text": "Signed in as marta"}},
    ]
    page = Page(harness, config, steps, tmp_path)
    events = steps_of(await page.open())
    assert events[0]["result"] == [800, 600, "de-DE"]
    assert all(e["passed"] for e in events)


async def test_a_missing_storage_state_file_is_a_config_error(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    page = Page(harness, {"url": url, "auth": {"storage_state": "nope.json"}}, [], tmp_path)
    with pytest.raises(TargetError, match=r"auth\.storage_state: no file") as err:
        await page.adapter.start()
    assert err.value.kind == "config" and not err.value.retryable


async def test_an_unreachable_page_is_a_retryable_error(
    harness: Harness, closed_port: int, tmp_path: Path
) -> None:
    page = Page(harness, {"url": f"http://127.0.0.1:{closed_port}/"}, [], tmp_path)
    try:
        with pytest.raises(TargetError, match="did not load") as err:
            await page.adapter.start()
    finally:
        await close_shared_browsers()
    assert err.value.retryable


SUITE = """
suite: web shop
targets:
  shop:
    type: browser
    url: "{url}"
    browser: {{ viewport: 1024x700, mocks: [ {{ url: "**/api/stock*", body: {{ stock: 3 }} }} ] }}
tests:
  - name: the chat answers about returns
    target: shop
    steps:
      - action: {{ assert_text: {{ ref: "#stock", text: "3" }} }}
      - action: {{ click: "#open-chat" }}
    scenario: {{ script: [ {{ say: "Can I return shoes bought 40 days ago?" }} ] }}
    assert:
      - contains: "not possible"
      - regex: "30 days"
  - name: the stock is wrong
    target: shop
    steps:
      - action: {{ assert_text: {{ ref: "#stock", text: "12" }} }}
    assert:
      - not_contains: "anything"
"""


async def test_a_suite_runs_steps_and_a_chat_and_grades_them(
    shop: tuple[WebShop, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import run_async

    monkeypatch.setattr(browser_steps, "ASSERT_WAIT", 0.5)
    _, url = shop
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url=url))
    result = await run_async(suite, output=tmp_path / "out")
    by_name = {r.test_name: r for r in result.results}
    chat = by_name["the chat answers about returns"]
    assert chat.outcome == "passed", (chat.error, [a.message for a in chat.assertions])
    stock = by_name["the stock is wrong"]
    assert stock.outcome == "failed", stock.error
    failed = [a for a in stock.assertions if not a.passed]
    assert [a.name for a in failed] == ["steps[0].assert_text"]


@pytest.mark.parametrize("fmt", ["webm", "gif"])
async def test_a_run_is_recorded_and_a_failed_one_keeps_its_trace(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    monkeypatch.setattr(browser_steps, "ASSERT_WAIT", 0.3)
    _, url = shop
    steps = [
        {"action": {"fill": {"ref": "#email", "text": "a@b.c"}}},
        {"action": {"assert_text": "Sold out"}},
    ]
    page = Page(harness, {"url": url, "browser": {"recording": fmt}}, steps, tmp_path)
    out = await page.open()
    [announced] = events_of(out, BrowserRecording)
    await page.adapter.stop()
    video = Path(announced.path)
    assert video.name == f"recording.{fmt}" and video.stat().st_size > 0
    assert video.read_bytes()[:4] == (b"\x1aE\xdf\xa3" if fmt == "webm" else b"GIF8")
    assert (video.parent / "trace.zip").stat().st_size > 0


async def test_a_passing_run_keeps_no_trace_and_recording_off_records_nothing(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    page = Page(
        harness,
        {"url": url, "browser": {"recording": "off"}},
        [{"action": {"click": "#subscribe"}}],
        tmp_path,
    )
    out = await page.open()
    assert not events_of(out, BrowserRecording)
    await page.adapter.stop()
    assert [p.name for p in (tmp_path / "browser").rglob("*") if p.is_file()] == []


async def test_visual_steps_compare_the_page_with_a_baseline_that_update_golden_writes(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop

    def steps(stock: int, mask: list[str], tolerance: float = 0.0) -> list[dict[str, Any]]:
        return [
            {"action": {"mock": {"url": "**/api/stock", "body": {"stock": stock}}}},
            {"action": {"navigate": "/"}},
            {"action": {"assert_text": {"ref": "#stock", "text": str(stock)}}},
            {"action": {"visual": {"name": "home", "mask": mask, "tolerance": tolerance}}},
        ]

    config = {"url": url, "browser": {"viewport": "640x480", "recording": "off"}}
    writer = Page(harness, config, steps(12, []), tmp_path, update_golden=True)
    await writer.open()
    baseline = tmp_path / "visual" / "home.png"
    assert baseline.read_bytes()[:4] == b"\x89PNG"
    assert writer.adapter.results()[-1].passed

    same = Page(harness, config, steps(12, []), tmp_path)
    await same.open()
    assert [r.passed for r in same.adapter.results()] == [True, True]

    changed = Page(harness, config, steps(98765, []), tmp_path)
    await changed.open()
    result = changed.adapter.results()[-1]
    assert not result.passed and result.kind == "visual"
    assert "of the pixels differ from the baseline home" in result.message
    assert list((tmp_path / "browser").rglob("home.diff.png"))
    tolerant = Page(harness, config, steps(98765, [], tolerance=0.05), tmp_path)
    await tolerant.open()
    assert tolerant.adapter.results()[-1].passed

    masked_writer = Page(harness, config, steps(12, ["#stock"]), tmp_path, update_golden=True)
    await masked_writer.open()
    masked = Page(harness, config, steps(98765, ["#stock"]), tmp_path)
    await masked.open()
    assert masked.adapter.results()[-1].passed, masked.adapter.results()[-1].message


async def test_a_visual_step_without_a_baseline_fails_and_says_how_to_write_it(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    page = Page(
        harness, {"url": url, "browser": {"recording": "off"}}, [{"action": {"visual": "cart"}}], tmp_path
    )
    await page.open()
    [result] = page.adapter.results()
    assert not result.passed
    assert result.message == (
        f"step 1 (visual): no baseline at {tmp_path / 'visual' / 'cart.png'}: run tamesu run --update-golden to write it"
    )


async def test_expect_steps_ask_the_judge_about_the_page_and_keep_the_screenshot(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    from types import SimpleNamespace as NS

    from tamesu.models import ModelRouter
    from tamesu.models.refs import custom_provider
    from tamesu.testing.model_server import Reply, serve_model_server

    _, url = shop
    steps = [
        {"action": {"assert_text": {"ref": "#stock", "text": "12"}}},
        {"expect": "The page shows {{vars.what}} in stock"},
        {"expect": "The page offers a discount"},
        {"action": {"click": "#subscribe"}},
    ]
    async with serve_model_server() as server:
        models = NS(default="scripted/judge-model", judge=None, fallback=None,
                    retry=NS(attempts=1, backoff="1ms", max_backoff="1ms"))  # fmt: skip
        router = ModelRouter(
            models, custom_providers={"scripted": custom_provider("scripted", server.base_url)}
        )
        server.queue(
            Reply(json={"reason": "It shows 12 blue sneakers", "passed": True}),
            Reply(json={"reason": "No discount is mentioned", "passed": False}),
        )
        page = Page(harness, {"url": url, "browser": {"recording": "off"}}, steps, tmp_path)
        page.adapter.ctx.models = router
        page.adapter.ctx.scope.set("vars.what", "blue sneakers")
        out = await page.open()
    events = steps_of(out)
    assert [(e["action"], e["passed"]) for e in events] == [
        ("assert_text", True),
        ("expect", True),
        ("expect", False),
    ]
    assert Path(events[1]["screenshot"]).read_bytes()[:4] == b"\x89PNG"
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "The page shows blue sneakers in stock" in prompt and "Stock of blue sneakers: 12" in prompt
    results = page.adapter.results()
    assert [(r.kind, r.passed) for r in results] == [
        ("assert_text", True),
        ("expect", True),
        ("expect", False),
    ]
    assert results[1].message == "It shows 12 blue sneakers"
    assert results[2].message == "step 3 (expect): No discount is mentioned" and not results[2].error


async def test_an_expect_step_without_a_judge_is_an_error_result(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    page = Page(
        harness, {"url": url, "browser": {"recording": "off"}}, [{"expect": "Shoes are sold"}], tmp_path
    )
    await page.open()
    [result] = page.adapter.results()
    assert result.error and not result.passed and "needs a judge model" in result.message


def scripted_router(server: Any) -> Any:
    from types import SimpleNamespace as NS

    from tamesu.models import ModelRouter
    from tamesu.models.refs import custom_provider

    models = NS(default="scripted/agent-model", judge=None, browser_agent=None, fallback=None,
                retry=NS(attempts=1, backoff="1ms", max_backoff="1ms"))  # fmt: skip
    return ModelRouter(models, custom_providers={"scripted": custom_provider("scripted", server.base_url)})


async def test_a_goal_step_lets_the_browser_agent_act_on_the_accessibility_snapshot(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    from tamesu.testing.model_server import Reply, serve_model_server

    _, url = shop
    steps = [
        {"goal": "Subscribe to the newsletter as {{vars.email}}"},
        {"action": {"assert_text": {"ref": "#thanks", "text": "Thanks, marta@example.com"}}},
    ]
    async with serve_model_server() as server:
        server.queue(
            Reply(
                json={
                    "action": "fill",
                    "role": "textbox",
                    "name": "Email",
                    "text": "marta@example.com",
                    "reason": "type the address",
                }
            ),
            Reply(json={"action": "click", "role": "button", "name": "No such button", "reason": "try"}),
            Reply(json={"action": "click", "role": "button", "name": "Subscribe", "reason": "send the form"}),
            Reply(json={"action": "done", "reason": "The page thanks Marta"}),
        )
        page = Page(harness, {"url": url, "browser": {"recording": "off"}}, steps, tmp_path)
        page.adapter.ctx.models = scripted_router(server)
        page.adapter.ctx.scope.set("vars.email", "marta@example.com")
        out = await page.open()
    actions = events_of(out, BrowserAction)
    assert [(a.action, a.ok) for a in actions] == [("fill", True), ("click", False), ("click", True)]
    assert actions[0].details["chars"] == "17" and "text" not in actions[0].details
    first = server.requests[0]["messages"][-1]["content"]
    assert "Goal: Subscribe to the newsletter as marta@example.com" in first
    assert 'button "Subscribe"' in first
    assert '"ok": "false"' in server.requests[2]["messages"][-1]["content"]
    results = page.adapter.results()
    assert [(r.kind, r.passed) for r in results] == [("goal", True), ("assert_text", True)]
    assert results[0].message == "The page thanks Marta"


async def test_the_browser_agent_finds_elements_named_loosely_and_hears_what_the_page_has(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    from tamesu.testing.model_server import Reply, serve_model_server

    _, url = shop
    steps = [
        {"goal": "Subscribe to the newsletter as marta@example.com"},
        {"action": {"assert_text": {"ref": "#thanks", "text": "Thanks, marta@example.com"}}},
    ]
    async with serve_model_server() as server:
        server.queue(
            Reply(json={"action": "fill", "name": "EMAIL", "text": "marta@example.com", "reason": "no role"}),
            Reply(json={"action": "click", "role": "button", "name": "Sign up now", "reason": "guess"}),
            Reply(json={"action": "click", "role": "link", "name": "  subscribe ", "reason": "loosely"}),
            Reply(json={"action": "done", "reason": "The page thanks Marta"}),
        )
        page = Page(harness, {"url": url, "browser": {"recording": "off"}}, steps, tmp_path)
        page.adapter.ctx.models = scripted_router(server)
        out = await page.open()
    actions = events_of(out, BrowserAction)
    assert [(a.action, a.ok) for a in actions] == [("fill", True), ("click", False), ("click", True)]
    error = actions[1].error or ""
    assert error.startswith('no element on the page matches button "Sign up now"; the page has: ')
    assert 'button "Subscribe"' in error and 'link "Your account"' in error
    told = server.requests[2]["messages"][-1]["content"]
    assert "the page has: " in told, "the model's next prompt carries the candidates"
    results = page.adapter.results()
    assert [(r.kind, r.passed) for r in results] == [("goal", True), ("assert_text", True)]


async def test_a_goal_not_met_within_max_goal_steps_fails_the_run(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

    _, url = shop
    looking = ModelServer(default=Reply(json={"action": "press", "key": "Tab", "reason": "look"}))
    async with serve_model_server(looking) as server:
        page = Page(harness, {"url": url, "browser": {"recording": "off"}}, [{"goal": "Buy shoes"}], tmp_path)
        page.adapter.ctx.models = scripted_router(server)
        page.adapter.ctx.max_goal_steps = 2
        out = await page.open()
    assert len(events_of(out, BrowserAction)) == 2
    [result] = page.adapter.results()
    assert not result.passed and not result.error
    assert result.message == "step 1 (goal): the goal was not met within 2 actions"


async def test_runs_share_one_chromium_and_nothing_else(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    import asyncio

    from tamesu.targets.browser.browser_session import shared_browser

    launched = await asyncio.gather(shared_browser(), shared_browser())
    assert launched[0] is launched[1]
    _, url = shop
    config = {"url": url, "browser": {"recording": "off"}}
    first = Page(
        harness, config, [{"action": {"eval_js": "document.cookie = 'cart=3'; document.cookie"}}], tmp_path
    )
    second = Page(harness, config, [{"action": {"eval_js": "document.cookie"}}], tmp_path)
    a = await first.open()
    b = await second.open()
    assert steps_of(a)[0]["result"] == "cart=3" and steps_of(b)[0]["result"] == ""
    assert first.adapter.context is not None and second.adapter.context is not None
    assert first.adapter.context is not second.adapter.context
    assert first.adapter.context.browser is second.adapter.context.browser is launched[0]
