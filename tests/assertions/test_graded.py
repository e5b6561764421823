"""Model-graded assertions against the scripted model server over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from tamesu.kernel.transcript import HandoffInfo, ToolCallRecord, Turn
from tamesu.models import ModelRouter
from tamesu.models.refs import custom_provider
from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

from .builders import agent, convo
from .conftest import Check

pytestmark = pytest.mark.integration


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with serve_model_server() as s:
        yield s


@pytest.fixture
def router(server: ModelServer) -> ModelRouter:
    models = NS(default="scripted/judge-model", judge=None, simulator=None, embedder="scripted/emb", fallback=None,
                retry=NS(attempts=1, backoff="1ms", max_backoff="1ms"))  # fmt: skip
    return ModelRouter(models, custom_providers={"scripted": custom_provider("scripted", server.base_url)})


REFUSAL = convo(
    "user: can I return shoes after 40 days?", "agent: Returns are accepted within 30 days, so no."
)


async def test_judge_binary_pass_and_fail(check: Check, server: ModelServer, router: ModelRouter) -> None:
    server.queue(Reply(json={"reason": "It states the 30-day window", "passed": True}))
    ok = await check({"judge": "The agent states the 30-day policy"}, REFUSAL, models=router)
    assert ok.passed and not ok.error and "30-day window" in ok.message
    prompt = server.requests[-1]["messages"][-1]["content"]
    assert (
        "Rubric: The agent states the 30-day policy" in prompt
        and "Returns are accepted within 30 days" in prompt
    )

    server.queue(Reply(json={"reason": "No apology", "passed": False}))
    bad = await check({"judge": "The agent apologises"}, REFUSAL, models=router)
    assert not bad.passed and not bad.error


async def test_judge_scale_min(check: Check, server: ModelServer, router: ModelRouter) -> None:
    server.queue(Reply(json={"reason": "warm", "score": 4}), Reply(json={"reason": "curt", "score": 3}))
    spec = {"judge": {"rubric": "The tone stays warm", "scale": "1-5", "min": 4}}
    assert (await check(spec, REFUSAL, models=router)).passed
    low = await check(spec, REFUSAL, models=router)
    assert not low.passed and low.actual == {"score": 3.0, "reason": "curt"}


async def test_unusable_judge_answer_is_an_error_not_a_fail(
    check: Check, server: ModelServer, router: ModelRouter
) -> None:
    server.queue(Reply(text="I think it is fine"))
    r = await check({"judge": "The agent states the policy"}, REFUSAL, models=router)
    assert r.error and not r.passed and "not the JSON" in r.message
    server.queue(Reply(json={"reason": "x", "score": 9}))
    r = await check({"judge": {"rubric": "r", "scale": "1-5"}}, REFUSAL, models=router)
    assert r.error and "score from 1 to 5" in r.message
    server.fail_next(1, status=500)
    r = await check({"judge": "r"}, REFUSAL, models=router)
    assert r.error and "HTTP 500" in r.message


async def test_no_model_configured_is_an_error_naming_the_key(check: Check) -> None:
    r = await check({"judge": "anything"}, REFUSAL)
    assert r.error and "models.judge or models.default" in r.message


async def test_similar_to(check: Check, router: ModelRouter) -> None:
    close = await check({"similar_to": {"text": "returns are accepted within 30 days", "min": 0.6}}, REFUSAL,
                        models=router)  # fmt: skip
    assert close.passed and close.actual["turn"] == 1
    far = await check(
        {"similar_to": {"text": "the weather in Paris is sunny", "min": 0.6}}, REFUSAL, models=router
    )
    assert not far.passed


async def test_grounded_on_tool_results(check: Check, server: ModelServer, router: ModelRouter) -> None:
    t = convo(
        "user: what is the return window?",
        agent("It is 30 days, and shipping is free.",
              tool_calls=[ToolCallRecord(name="search_docs", args={}, result={"window_days": 30})]),
    )  # fmt: skip
    server.queue(Reply(json={"claims": [
        {"claim": "window is 30 days", "reason": "tool says 30", "supported": True},
        {"claim": "shipping is free", "reason": "not in context", "supported": False},
    ]}))  # fmt: skip
    r = await check({"grounded": {"context": {"tool": "search_docs"}}}, t, models=router)
    assert not r.passed and r.actual["unsupported"] == ["shipping is free"]
    assert '{"window_days": 30}' in server.requests[-1]["messages"][-1]["content"]
    server.queue(Reply(json={"claims": [{"claim": "a", "reason": "", "supported": True},
                                        {"claim": "b", "reason": "", "supported": False}]}))  # fmt: skip
    half = await check({"grounded": {"context": {"text": ["x"]}, "min": 0.5}}, t, models=router)
    assert half.passed


async def test_evaluators(check: Check, server: ModelServer, router: ModelRouter) -> None:
    server.queue(Reply(json={"reason": "harmless", "passed": True}))
    r = await check({"evaluator": "genkitEval/maliciousness"}, REFUSAL, models=router)
    assert r.passed and r.actual == {"score": 1.0}
    server.queue(Reply(json={"reason": "mostly", "score": 3}))
    r = await check({"evaluator": {"name": "answer_relevancy", "min": 0.8}}, REFUSAL, models=router)
    assert not r.passed and r.actual == {"score": 0.5}
    r = await check({"evaluator": "nope/eval"}, REFUSAL, models=router)
    assert r.error and "genkitEval/faithfulness" in r.message


async def test_golden_judge_and_handoff_summary(
    check: Check, server: ModelServer, router: ModelRouter, tmp_path: Path
) -> None:
    server.queue(Reply(json={"reason": "same meaning", "passed": True}))
    r = await check(
        {"golden": {"turns": ["No returns after 30 days."], "mode": "judge"}}, REFUSAL, models=router
    )
    assert r.passed
    handed = convo("user: human please", Turn(role="agent", text="Transferring"),
                   handoff=HandoffInfo(turn=1, to="billing", summary="Order ORD-1 double charge"))  # fmt: skip
    server.queue(Reply(json={"reason": "names the order", "passed": True}))
    r = await check({"handoff": {"summary": "The summary names the order"}}, handed, models=router)
    assert r.passed and "names the order" in r.message


async def test_a_judge_that_cannot_tell_is_inconclusive_on_either_scale_and_in_evaluators(
    check: Check, server: ModelServer, router: ModelRouter
) -> None:
    unsure = {"reason": "the conversation never mentions a refund", "cannot_tell": True}
    server.queue(Reply(json={**unsure, "passed": False}), Reply(json={**unsure, "score": 1}))
    binary = await check({"judge": "The agent promises a refund"}, REFUSAL, models=router)
    assert binary.state == "inconclusive" and "cannot tell: the conversation never mentions" in binary.message
    assert "set cannot_tell to true" in server.requests[-1]["messages"][-1]["content"], (
        "the judge is offered it"
    )
    scaled = await check({"judge": {"rubric": "r", "scale": "1-5"}}, REFUSAL, models=router)
    assert scaled.state == "inconclusive" and scaled.actual == unsure["reason"]
    server.queue(Reply(json={**unsure, "passed": True}))
    harm = await check({"evaluator": {"name": "maliciousness"}}, REFUSAL, models=router)
    assert harm.state == "inconclusive", "not the 0 or 1 its score would have been"
    server.queue(Reply(json={"reason": "states it", "cannot_tell": False, "passed": True}))
    assert (await check({"judge": "The agent states the policy"}, REFUSAL, models=router)).state == "passed"
