"""The model router over real HTTP against the scripted OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tamesu.errors import ModelError
from tamesu.models import ChatMessage, ModelRouter, ResponseCache, ToolSpec, missing_credentials
from tamesu.models.refs import custom_provider
from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

pytestmark = pytest.mark.integration


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with serve_model_server() as s:
        yield s


def models(**kw: Any) -> NS:
    fallback = NS(default=kw.pop("fallback", None), judge=kw.pop("judge_fallback", None), embedder=None,
                  simulator=None)  # fmt: skip
    base = dict(default="scripted/main", judge=None, simulator=None, embedder=None, fallback=fallback,
                retry=NS(attempts=3, backoff="1ms", max_backoff="2ms"))  # fmt: skip
    base.update(kw)
    return NS(**base)


def router(server: ModelServer, m: NS | None = None, **kw: Any) -> ModelRouter:
    return ModelRouter(
        m or models(), custom_providers={"scripted": custom_provider("scripted", server.base_url)}, **kw
    )


async def test_text_tools_and_structured_output(server: ModelServer) -> None:
    r = router(server)
    server.queue(Reply(text="Hi, I bought shoes"))
    c = await r.complete("simulator", [ChatMessage("system", "You are Marta"), ChatMessage("user", "start")])
    assert c.text == "Hi, I bought shoes" and c.model == "scripted/main"
    assert server.requests[-1]["messages"][0] == {"role": "system", "content": "You are Marta"}

    server.when("weather", Reply(tool_calls=[("get_weather", {"city": "Paris"})]))
    tool = ToolSpec(
        "get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}}
    )
    c = await r.complete("default", [ChatMessage("user", "weather?")], tools=[tool])
    assert [(t["name"], t["args"]) for t in c.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert server.requests[-1]["tools"][0]["function"]["name"] == "get_weather"

    schema = {"type": "object", "properties": {"passed": {"type": "boolean"}}, "required": ["passed"]}
    server.queue(Reply(json={"passed": False}))
    c = await r.complete("judge", [ChatMessage("user", "grade")], output_schema=schema)
    assert c.data == {"passed": False}
    assert server.requests[-1]["response_format"]["type"] == "json_schema"


async def test_retries_rate_limits_then_succeeds(server: ModelServer) -> None:
    r = router(server)
    server.fail_next(2, status=429)
    server.queue(Reply(text="third time"))
    c = await r.complete("default", [ChatMessage("user", "x")])
    assert c.text == "third time" and c.usage.attempts == 3 and len(server.requests) == 3


async def test_attempts_one_retries_nothing_and_falls_back(server: ModelServer) -> None:
    m = models(fallback=["scripted/backup"], retry=NS(attempts=1, backoff="1ms", max_backoff="1ms"))
    r = router(server, m)
    server.fail_next(1, status=500)
    server.queue(Reply(text="backup answered"))
    c = await r.complete("default", [ChatMessage("user", "x")])
    assert c.text == "backup answered" and c.model == "scripted/backup"
    assert [q["model"] for q in server.requests] == ["main", "backup"]


async def test_every_model_failing_is_a_model_error(server: ModelServer) -> None:
    r = router(server, models(judge_fallback=["scripted/j2"]))
    server.fail_next(6, status=503)
    with pytest.raises(ModelError, match=r"scripted/main: HTTP 503.*after 3 attempts.*scripted/j2"):
        await r.complete("judge", [ChatMessage("user", "x")])


async def test_non_retryable_error_moves_to_fallback_at_once(server: ModelServer) -> None:
    r = router(server, models(fallback=["scripted/b"]))
    server.fail_next(1, status=400)
    server.queue(Reply(text="b"))
    assert (await r.complete("default", [ChatMessage("user", "x")])).model == "scripted/b"
    assert len(server.requests) == 2


async def test_cache_replays_without_calling(server: ModelServer, tmp_path: Path) -> None:
    server.queue(Reply(text="cached answer"))
    first = router(server, cache=ResponseCache(tmp_path))
    await first.complete("default", [ChatMessage("user", "same")])
    second = router(server, cache=ResponseCache(tmp_path))
    c = await second.complete("default", [ChatMessage("user", "same")])
    assert c.text == "cached answer" and c.usage.cached and c.usage.cost_usd == 0
    assert len(server.requests) == 1


async def test_cost_from_the_price_table(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    r = ModelRouter(models(default="openai/gpt-4.1-mini"))
    server.queue(Reply(text="priced", usage=(1000, 500)))
    c = await r.complete("default", [ChatMessage("user", "x")])
    assert c.usage.priced and c.usage.cost_usd == pytest.approx(0.0012)
    assert r.ledger.metrics()["llm_tokens"] == 1500
    assert r.ledger.metrics()["llm_cost_usd"] == pytest.approx(0.0012)


async def test_embeddings_and_default_embedder(server: ModelServer) -> None:
    r = router(server, models(embedder="scripted/emb"))
    a, b, c = await r.embed(["returns within 30 days", "30 days for returns", "the weather is nice"])
    assert sum(x * y for x, y in zip(a, b)) > sum(x * y for x, y in zip(a, c))
    assert (
        ModelRouter(models(default="openai/gpt-4.1-mini")).model_for("embedder")
        == "openai/text-embedding-3-small"
    )


def test_missing_model_and_credentials_say_what_to_set() -> None:
    with pytest.raises(ModelError, match=r"models\.simulator or models\.default"):
        ModelRouter(NS(default=None, simulator=None, fallback=None, retry=None)).chain("simulator")
    assert missing_credentials("openai/gpt-4.1-mini", environ={}) == (
        "openai/gpt-4.1-mini needs an API key: set OPENAI_API_KEY or models.credentials.openai"
    )
    assert missing_credentials("openai/gpt-4.1-mini", environ={"OPENAI_API_KEY": "k"}) is None
    assert missing_credentials("ollama/llama3.2", environ={}) is None
    assert "unknown model provider 'nope'" in (missing_credentials("nope/x", environ={}) or "")


async def test_a_model_without_its_key_fails_in_one_line_with_no_request_and_no_retry(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    r = ModelRouter(models(default="openai/gpt-4o-mini"))
    with pytest.raises(ModelError) as caught:
        await r.complete("browser_agent", [ChatMessage("user", "next action?")])
    assert str(caught.value) == (
        "the browser_agent cannot call a model here: openai/gpt-4o-mini needs an API key: set "
        "OPENAI_API_KEY or models.credentials.openai"
    )
    assert caught.value.retryable is False and server.requests == [], "no request with a placeholder key"


async def test_a_missing_models_extra_names_the_install_and_a_usable_fallback_still_answers(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import extras

    monkeypatch.setitem(extras.MODEL_CLIENTS, "anthropic", "tamesu_t_absent_sdk")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    r = router(server, models(default="anthropic/claude-sonnet-4-6"))
    with pytest.raises(
        ModelError, match=r"needs tamesu_t_absent_sdk, which is not installed: pip install 'tamesu\[models\]'"
    ):
        await r.complete("scenario_generator", [ChatMessage("user", "write tests")])
    server.queue(Reply(text="fine"))
    r = router(server, models(default="anthropic/claude-sonnet-4-6", fallback=["scripted/main"]))
    answer = await r.complete("simulator", [ChatMessage("user", "hi")])
    assert answer.text == "fine" and len(server.requests) == 1


def test_a_model_that_cannot_be_called_here_is_a_run_error_that_is_not_retried() -> None:
    from tamesu.actors.actor import error_message

    unusable = error_message(ModelError("the simulator cannot call a model here: ...", retryable=False))
    outage = error_message(ModelError("every model failed for the judge: HTTP 503"))
    assert (unusable.kind, unusable.retryable) == ("model", False)
    assert (outage.kind, outage.retryable) == ("model", True)
