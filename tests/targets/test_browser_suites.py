"""The browser target's mocks, recording and agentic parts checked for their effects: mocks seen
by the page's own fetch, ``recording: auto`` with and without ffmpeg, and suites that set
``models.browser_agent``, ``defaults.max_goal_steps`` and a persona talking to the chat widget,
all against the web shop on loopback and the scripted model server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="pip install 'tamesu[browser]'")

from tamesu import run_async
from tamesu.extras import chromium_path
from tamesu.kernel.events import BrowserMocked, BrowserRecording
from tamesu.targets.browser.browser_session import shared_browser
from tamesu.testing.model_server import ModelServer, Reply, serve_model_server
from tamesu.testing.web_shop import WebShop

from ..stored import stored_transcripts
from .conftest import Harness
from .test_browser import Page, events_of, shop, steps_of

__all__ = ["shop"]  # the web shop fixture of the browser tests

try:
    chromium_path()
except Exception:
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

pytestmark = pytest.mark.integration


PROBE = """(async () => {
  const began = performance.now();
  const r = await fetch('/api/stock', { method: '%s' });
  const body = await r.text();
  return [r.status, r.headers.get('x-mocked-by'), r.headers.get('retry-after'), body,
          performance.now() - began];
})()"""


async def test_a_mock_answers_with_its_status_headers_and_delay_and_only_for_its_method(
    harness: Harness, shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    web, url = shop
    mock = {
        "url": "**/api/stock",
        "method": "POST",
        "status": 503,
        "body": {"stock": "busy"},
        "headers": {"X-Mocked-By": "tamesu", "Retry-After": "7"},
        "delay_ms": 400,
    }
    config = {"url": url, "browser": {"mocks": [mock], "recording": "off"}}
    steps = [{"action": {"eval_js": PROBE % "POST"}}, {"action": {"eval_js": PROBE % "GET"}}]
    page = Page(harness, config, steps, tmp_path)
    out = await page.open()
    posted, got = (e["result"] for e in steps_of(out))
    assert posted[:4] == [503, "tamesu", "7", '{"stock": "busy"}']
    assert posted[4] >= 400, "the answer waits delay_ms"
    assert got[:4] == [200, None, None, '{"stock": 12}'], "a GET is not the mock's method"
    assert "POST 127.0.0.1" not in " ".join(web.requests)
    assert sum(r.endswith("/api/stock") and r.startswith("GET") for r in web.requests) == 2
    assert [(m.pattern, m.method) for m in events_of(out, BrowserMocked)] == [("**/api/stock", "POST")]


@pytest.mark.parametrize("ffmpeg", [True, False], ids=["ffmpeg", "no-ffmpeg"])
async def test_recording_auto_is_webm_with_ffmpeg_and_a_gif_without(
    harness: Harness,
    shop: tuple[WebShop, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ffmpeg: bool,
) -> None:
    import shutil

    assert shutil.which("ffmpeg"), "the ffmpeg case needs ffmpeg installed (.ci/run installs it)"
    if not ffmpeg:
        pytest.importorskip("PIL")
        monkeypatch.setenv("TAMESU_CHROMIUM", chromium_path())
        await shared_browser()  # launched before ffmpeg's folder leaves PATH
        empty = tmp_path / "bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
        assert shutil.which("ffmpeg") is None
    _, url = shop
    page = Page(
        harness,
        {"url": url, "browser": {"recording": "auto"}},
        [{"action": {"click": "#subscribe"}}],
        tmp_path,
    )
    out = await page.open()
    [announced] = events_of(out, BrowserRecording)
    await page.adapter.stop()
    video = Path(announced.path)
    fmt = "webm" if ffmpeg else "gif"
    assert video.name == f"recording.{fmt}" and video.stat().st_size > 0
    assert video.read_bytes()[:4] == (b"\x1aE\xdf\xa3" if ffmpeg else b"GIF8")


def write_project(tmp_path: Path, server: ModelServer) -> None:
    (tmp_path / "tamesu.yaml").write_text(f'providers:\n  scripted: {{ base_url: "{server.base_url}" }}\n')


AGENT_SUITE = """
suite: agentic
models: {{ default: scripted/main, browser_agent: scripted/navigator }}
targets:
  shop: {{ type: browser, url: "{url}", browser: {{ recording: "off" }} }}
tests:
  - name: subscribe
    target: shop
    steps:
      - goal: "Subscribe to the newsletter as marta@example.com"
      - action: {{ assert_text: {{ ref: "#thanks", text: "Thanks, marta@example.com" }} }}
"""


async def test_models_browser_agent_in_a_suite_is_the_model_that_pursues_goals(
    shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    async with serve_model_server() as server:
        server.queue(
            Reply(json={"action": "fill", "role": "textbox", "name": "Email", "text": "marta@example.com"}),
            Reply(json={"action": "click", "role": "button", "name": "Subscribe"}),
            Reply(json={"action": "done", "reason": "The page thanks Marta"}),
        )
        write_project(tmp_path, server)
        suite = tmp_path / "agentic.yaml"
        suite.write_text(AGENT_SUITE.format(url=url))
        result = await run_async([suite], output=tmp_path / "runs")
    (run,) = result.results
    assert run.outcome == "passed", (run.error, [a.message for a in run.assertions])
    assert [r["model"] for r in server.requests] == ["navigator"] * 3
    assert "Goal: Subscribe to the newsletter" in server.requests[0]["messages"][-1]["content"]


STEPS_SUITE = """
suite: patience
models: {{ default: scripted/main }}
defaults: {{ max_goal_steps: 2 }}
targets:
  shop: {{ type: browser, url: "{url}", browser: {{ recording: "off" }} }}
tests:
  - name: buy
    target: shop
    steps:
      - goal: "Buy shoes"
"""


async def test_defaults_max_goal_steps_in_a_suite_bounds_every_goal(
    shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop
    looking = ModelServer(default=Reply(json={"action": "press", "key": "Tab", "reason": "look"}))
    async with serve_model_server(looking) as server:
        write_project(tmp_path, server)
        suite = tmp_path / "patience.yaml"
        suite.write_text(STEPS_SUITE.format(url=url))
        result = await run_async([suite], output=tmp_path / "runs")
    (run,) = result.results
    assert run.outcome == "failed" and result.exit_code == 1
    (failed,) = [a for a in run.assertions if not a.passed]
    assert "the goal was not met within 2 actions" in failed.message
    assert len(server.requests) == 3, "two actions, then the request whose action is refused"
    transcript = stored_transcripts(result.run_dir)[0]
    assert json.dumps(transcript).count('"browser_action"') == 2


PERSONA_SUITE = """
suite: widget
models: {{ simulator: scripted/sim, judge: scripted/judge }}
targets:
  shop: {{ type: browser, url: "{url}", browser: {{ recording: "off" }} }}
tests:
  - name: late return
    target: shop
    steps:
      - action: {{ click: "#open-chat" }}
    persona: {{ name: Marta, style: polite }}
    scenario:
      goal: "Find out whether shoes bought 40 days ago can be returned"
      max_turns: 3
    assert:
      - contains: "30 days"
      - judge: "The agent refuses the 40-day return and states the 30-day policy"
"""


async def test_a_persona_talks_to_the_chat_widget_and_the_judge_grades_the_conversation(
    shop: tuple[WebShop, str], tmp_path: Path
) -> None:
    _, url = shop

    def judge(request: dict[str, Any]) -> Reply:
        said = "returns are accepted within 30 days" in json.dumps(request)
        return Reply(json={"reason": "states the 30-day policy" if said else "no policy", "passed": said})

    async with serve_model_server() as server:
        server.when(lambda r: r.get("model") == "sim", Reply(json={"reasoning": "ask", "done": False,
                    "message": "Hi, I bought shoes 40 days ago. Can I still return them?"}), times=1)  # fmt: skip
        server.when(
            lambda r: r.get("model") == "sim",
            Reply(json={"reasoning": "answered", "message": "", "done": True}),
        )
        server.when(lambda r: r.get("model") == "judge", judge)
        write_project(tmp_path, server)
        suite = tmp_path / "widget.yaml"
        suite.write_text(PERSONA_SUITE.format(url=url))
        result = await run_async([suite], output=tmp_path / "runs")
    (run,) = result.results
    assert run.outcome == "passed", (run.error, [a.message for a in run.assertions])
    assert [a.passed for a in run.assertions] == [True, True]
    simulated = [r for r in server.requests if r["model"] == "sim"]
    assert "Marta" in json.dumps(simulated[0]) and "40 days" in json.dumps(simulated[0])
    transcript = stored_transcripts(result.run_dir)[0]
    user = [t for t in transcript["turns"] if t["role"] == "user"]
    agent = [t for t in transcript["turns"] if t["role"] == "agent"]
    assert user[0]["source"] == "simulator" and "40 days" in user[0]["text"]
    assert any("returns are accepted within 30 days" in t["text"] for t in agent)
