"""A goal-driven conversation: the scripted model plays the user against the demo agent, judges
grade it, and a rerun with ``--cache`` replays every model answer without calling the server."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tamesu import run_async
from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

from ..stored import stored_transcripts

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

PROJECT = """
providers:
  scripted: {{ base_url: "{base_url}" }}
models:
  simulator: scripted/sim
  judge: scripted/judge
"""

SUITE = """
suite: goals
targets:
  shop:
    type: rest
    url: "{url}/chat"
    request: { body: { session_id: "{{session}}", message: "{{message}}" } }
    response: { text: $.reply, tool_calls: "$.tool_calls[*]", done: $.end_session }
tests:
  - name: late return
    target: shop
    persona: { name: Marta, style: polite }
    scenario:
      goal: "Find out whether shoes bought 40 days ago can be returned"
      max_turns: 4
      stop_when: "the agent has given a clear yes or no"
    assert:
      - contains: "30 days"
      - judge: "The agent refuses the 40-day return and states the 30-day policy"
"""


def _demo_app() -> web.Application:
    spec = importlib.util.spec_from_file_location("demo_agent", ROOT / "examples/demo_agent/agent.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["demo_agent"] = module
    spec.loader.exec_module(module)
    return module.create_app()  # type: ignore[no-any-return]


@pytest.fixture
async def demo() -> AsyncIterator[str]:
    runner = web.AppRunner(_demo_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


def _script(server: ModelServer) -> None:
    def is_model(name: str) -> Any:
        return lambda req: req.get("model") == name

    server.when(is_model("sim"), Reply(json={"reasoning": "ask", "done": False,
                "message": "Hi, I bought shoes 40 days ago. Can I still return them?"}), times=1)  # fmt: skip
    server.when(is_model("sim"), Reply(json={"reasoning": "got my answer", "message": "", "done": True}))
    server.when(lambda r: r.get("model") == "judge" and "Condition:" in json.dumps(r),
                Reply(json={"stop": True, "reason": "the agent said no"}))  # fmt: skip
    server.when(is_model("judge"), Reply(json={"reason": "refuses and states 30 days", "passed": True}))


async def test_model_plays_the_user_and_the_cache_replays(demo: str, tmp_path: Path) -> None:
    async with serve_model_server() as server:
        _script(server)
        (tmp_path / "tamesu.yaml").write_text(PROJECT.format(base_url=server.base_url))
        suite = tmp_path / "goals.yaml"
        suite.write_text(SUITE.replace("{url}", demo))

        first = await run_async([suite], output=tmp_path / "runs", cache=True)
        assert first.exit_code == 0, [r.assertions for r in first.results]
        (result,) = first.results
        transcript = stored_transcripts(first.run_dir)[0]
        user = [t for t in transcript["turns"] if t["role"] == "user"]
        assert user[0]["source"] == "simulator" and user[0]["reasoning"] == "ask"
        assert "40 days" in user[0]["text"]
        agent = [t for t in transcript["turns"] if t["role"] == "agent"]
        assert "30 days" in agent[0]["text"]
        assert transcript["end_reason"] == "stop_when"
        assert result.metrics["llm_calls"] >= 3
        calls = len(server.requests)

        again = await run_async([suite], output=tmp_path / "runs", cache=True)
        assert again.exit_code == 0
        assert len(server.requests) == calls, "a rerun with --cache must not call the model"
        assert again.results[0].metrics["llm_cost_usd"] == 0


BUDGET_SUITE = """
suite: spend
budgets: { max_cost_usd: 0.01 }
models: { judge: openai/gpt-4.1-mini }
targets:
  shop:
    type: rest
    url: "{url}/chat"
    request: { body: { session_id: "{{session}}", message: "{{message}}" } }
    response: { text: $.reply }
tests:
"""


async def test_budget_exhaustion_stops_new_runs_and_exits_4(
    demo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve_model_server() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        # 100k input tokens of gpt-4.1-mini cost $0.04 by the price table: over the $0.01 cap at once.
        server.default = Reply(json={"reason": "fine", "passed": True}, usage=(100_000, 100))
        tests = "".join(
            f"  - name: t{i}\n    target: shop\n    scenario: {{ script: [ {{ say: hi }} ] }}\n"
            f"    assert: [ {{ judge: polite }} ]\n"
            for i in range(4)
        )
        suite = tmp_path / "spend.yaml"
        suite.write_text(BUDGET_SUITE.replace("{url}", demo) + tests)
        result = await run_async([suite], output=tmp_path / "runs", concurrency=1)
        assert result.exit_code == 4 and "max_cost_usd" in (result.budget_exceeded or "")
        assert len(server.requests) == 1, "no new run starts once the budget is spent"
        assert result.results[0].metrics["llm_cost_usd"] > 0.01


EXTRACT_SUITE = """
suite: extract
models: { judge: scripted/judge }
targets:
  shop:
    type: rest
    url: "{url}/chat"
    request: { body: { session_id: "{{session}}", message: "{{message}}" } }
    response: { text: $.reply }
tests:
  - name: order number
    target: shop
    capture: [ { name: order, extract: "the order number the agent mentioned" } ]
    scenario: { script: [ { say: "Where is ORD-1234?" }, { say: "Thanks, {{captured.order}} it is" } ] }
    assert:
      - captured: { name: order, equals: ORD-1234 }
      - contains: "ORD-1234"
"""


async def test_extract_capture_is_copied_by_the_model_and_used_later(demo: str, tmp_path: Path) -> None:
    async with serve_model_server() as server:
        server.when("copy exactly", Reply(json={"found": True, "value": "ORD-1234"}))
        (tmp_path / "tamesu.yaml").write_text(PROJECT.format(base_url=server.base_url))
        suite = tmp_path / "extract.yaml"
        suite.write_text(EXTRACT_SUITE.replace("{url}", demo))
        result = await run_async([suite], output=tmp_path / "runs")
        assert result.exit_code == 0, [(r.error, r.assertions) for r in result.results]
        transcript = stored_transcripts(result.run_dir)[0]
        assert transcript["captures"] == {"order": "ORD-1234"}
        assert [t["text"] for t in transcript["turns"] if t["role"] == "user"][1] == "Thanks, ORD-1234 it is"
        assert "Your order ORD-1234" in server.requests[0]["messages"][-1]["content"]
