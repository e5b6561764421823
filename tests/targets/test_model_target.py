"""The model target over real HTTP against the scripted OpenAI-compatible model server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tamesu.clock import VirtualClock
from tamesu.config import Models
from tamesu.config.target import parse_target
from tamesu.errors import TargetError
from tamesu.fuzz import HOSTILE_PAYLOADS, HUGE_BYTES
from tamesu.kernel.messages import RawResponse, ToolCall, ToolResult, UserTurn
from tamesu.models import ModelRouter, UsageLedger
from tamesu.models.refs import custom_provider
from tamesu.targets.base import TargetAdapter, targets
from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

pytestmark = pytest.mark.integration

POLICY = {
    "name": "lookup_policy",
    "description": "The store policy for a topic",
    "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
    "result": {"topic": "{{args.topic}}", "window_days": 30},
}


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with serve_model_server() as s:
        yield s


class Rig:
    """A model target wired to the scripted server: router, ledger, context, and its requests."""

    def __init__(self, harness: Any, server: ModelServer) -> None:
        self.harness = harness
        self.server = server
        self.ledger = UsageLedger()

    async def target(
        self,
        config: dict[str, Any],
        *,
        models: dict[str, Any] | None = None,
        fuzz: dict[str, Any] | None = None,
        clock: Any = None,
        suite_dir: Path | None = None,
        **ctx_kw: Any,
    ) -> TargetAdapter:
        m = Models.model_validate(
            {"default": "scripted/main", "retry": {"attempts": 1, "backoff": "1ms", "max_backoff": "1ms"}}
            | (models or {})
        )
        router = ModelRouter(
            m, custom_providers={"scripted": custom_provider("scripted", self.server.base_url)}
        )
        ctx = self.harness.context(**ctx_kw)
        ctx.models, ctx.ledger, ctx.fuzz = router, self.ledger, fuzz or {}
        if clock is not None:
            ctx.clock = clock
        if suite_dir is not None:
            ctx.suite_dir = str(suite_dir)
        cfg = parse_target({"type": "model", **config})
        adapter = targets.adapter("model")(cfg, ctx)
        self.harness.started.append(adapter)
        await adapter.start()
        return adapter

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        return list(self.server.requests[index]["messages"])

    def tool_messages(self, index: int = -1) -> list[dict[str, Any]]:
        return [m for m in self.messages(index) if m["role"] == "tool"]


@pytest.fixture
def rig(harness: Any, server: ModelServer) -> Rig:
    return Rig(harness, server)


async def test_three_turns_keep_history_under_the_rendered_system_prompt(rig: Rig, harness: Any) -> None:
    rig.server.queue(Reply(text="Hello from Mochi"), Reply(text="30 days"), Reply(text="Bye then"))
    t = await rig.target(
        {"system": "You support {{vars.shop}}. Key {{secrets.SHOP_KEY}}."},
        vars={"shop": "Mochi Shoes"},
        secrets={"SHOP_KEY": "k-secret-9"},
    )
    texts = []
    for said in ("hi", "returns?", "thanks"):
        out = await harness.say(t, said)
        texts.append(out[-1].text)
    assert texts == ["Hello from Mochi", "30 days", "Bye then"]
    assert len(rig.server.requests) == 3
    assert rig.messages(0)[0] == {"role": "system", "content": "You support Mochi Shoes. Key k-secret-9."}
    assert [(m["role"], m["content"]) for m in rig.messages(2)] == [
        ("system", "You support Mochi Shoes. Key k-secret-9."),
        ("user", "hi"),
        ("assistant", "Hello from Mochi"),
        ("user", "returns?"),
        ("assistant", "30 days"),
        ("user", "thanks"),
    ]
    assert "tools" not in rig.server.requests[0]
    raw = harness.of_type(out, RawResponse)
    assert raw[0].body["model"] == "scripted/main" and raw[0].body["usage"]["role"] == "target"
    turn = out[-1]
    assert not turn.done and turn.sent_at <= turn.first_byte_at <= turn.end_at
    assert rig.ledger.by_role()["target"]["calls"] == 3


async def test_tool_call_answered_from_result_with_args_rendered(rig: Rig, harness: Any) -> None:
    rig.server.when("returns", Reply(tool_calls=[("lookup_policy", {"topic": "returns"})]), times=1)
    rig.server.queue(Reply(text="You have 30 days."))
    tools = [POLICY, {"name": "ping"}]
    t = await rig.target({"system": "Support agent", "tools": tools})
    out = await harness.say(t, "what about returns")
    calls, results = harness.of_type(out, ToolCall), harness.of_type(out, ToolResult)
    assert [(c.name, c.args) for c in calls] == [("lookup_policy", {"topic": "returns"})]
    assert results[0].result == {"topic": "returns", "window_days": 30} and results[0].id == calls[0].id
    assert out[-1].text == "You have 30 days." and len(rig.server.requests) == 2
    offered = {f["function"]["name"]: f["function"] for f in (x for x in rig.server.requests[0]["tools"])}
    assert offered["lookup_policy"]["parameters"]["properties"] == {"topic": {"type": "string"}}
    ping = offered["ping"]["parameters"]
    assert (ping["type"], ping["properties"]) == ("object", {})
    tool_msg = rig.tool_messages(1)
    assert json.loads(tool_msg[0]["content"]) == {"topic": "returns", "window_days": 30}
    assert tool_msg[0]["tool_call_id"] == calls[0].id
    assistant = next(m for m in rig.messages(1) if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["name"] == "lookup_policy"


async def test_max_tool_rounds_ends_the_turn_and_keeps_history_valid(rig: Rig, harness: Any) -> None:
    rig.server.default = Reply(text="checking", tool_calls=[("lookup_policy", {"topic": "x"})])
    t = await rig.target({"system": "s", "tools": [POLICY], "max_tool_rounds": 2})
    out = await harness.say(t, "loop please")
    assert len(rig.server.requests) == 3
    results = harness.of_type(out, ToolResult)
    assert [r.result for r in results[:2]] == [{"topic": "x", "window_days": 30}] * 2
    assert "tool rounds" in results[2].result["error"]
    assert {"event": "max_tool_rounds", "limit": 2} in [r.body for r in harness.of_type(out, RawResponse)]
    assert out[-1].text == "checking" and not out[-1].done
    rig.server.default = Reply(text="plain")
    out = await harness.say(t, "stop")
    assert out[-1].text == "plain"
    last = rig.messages()
    ids = {c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    assert ids == {m["tool_call_id"] for m in last if m["role"] == "tool"} and len(ids) == 3


async def test_done_tool_ends_the_session(rig: Rig, harness: Any) -> None:
    rig.server.queue(Reply(text="Goodbye!", tool_calls=[("hang_up", {})]))
    t = await rig.target({"system": "s", "tools": [POLICY, {"name": "hang_up"}], "done_tool": "hang_up"})
    out = await harness.say(t, "bye")
    assert out[-1].done and out[-1].text == "Goodbye!"
    assert harness.of_type(out, ToolResult)[0].result == {"ok": True}
    assert len(rig.server.requests) == 1


async def test_default_done_tool_without_a_definition(rig: Rig, harness: Any) -> None:
    rig.server.queue(Reply(text="Done here", tool_calls=[("end_session", {"reason": "solved"})]))
    t = await rig.target({"system": "s"})
    out = await harness.say(t, "bye")
    assert out[-1].done and harness.of_type(out, ToolCall)[0].args == {"reason": "solved"}


async def test_unknown_tool_gets_an_error_result(rig: Rig, harness: Any) -> None:
    rig.server.queue(Reply(tool_calls=[("delete_everything", {})]), Reply(text="Sorry, I cannot."))
    t = await rig.target({"system": "s", "tools": [POLICY]})
    out = await harness.say(t, "wipe it")
    assert harness.of_type(out, ToolCall)[0].name == "delete_everything"
    assert harness.of_type(out, ToolResult)[0].result == {"error": "unknown tool delete_everything"}
    assert {"event": "unknown_tool", "name": "delete_everything"} in [
        r.body for r in harness.of_type(out, RawResponse)
    ]
    assert json.loads(rig.tool_messages()[0]["content"]) == {"error": "unknown tool delete_everything"}
    assert out[-1].text == "Sorry, I cannot."


async def test_falls_back_to_the_next_model_and_records_which_answered(rig: Rig, harness: Any) -> None:
    rig.server.when(lambda req: req["model"] == "tuned", Reply(status=500))
    rig.server.queue(Reply(text="from backup"))
    t = await rig.target({"system": "s", "model": "scripted/tuned", "fallback": ["scripted/backup"]})
    out = await harness.say(t, "hi")
    assert out[-1].text == "from backup"
    assert [r["model"] for r in rig.server.requests] == ["tuned", "backup"]
    assert harness.of_type(out, RawResponse)[0].body["model"] == "scripted/backup"


async def test_every_model_failing_is_a_target_error_naming_them(rig: Rig, harness: Any) -> None:
    rig.server.default = Reply(status=500)
    t = await rig.target(
        {"system": "s", "fallback": ["scripted/second"]}, models={"fallback": {"default": ["scripted/third"]}}
    )
    with pytest.raises(TargetError) as info:
        await harness.say(t, "hi")
    assert info.value.retryable and info.value.kind == "model"
    assert "tried scripted/main, scripted/second, scripted/third" in str(info.value)
    assert [r["model"] for r in rig.server.requests] == ["main", "second", "third"]


async def test_temperature_and_max_tokens_reach_the_request(rig: Rig, harness: Any) -> None:
    t = await rig.target({"system": "s", "temperature": 0.2, "max_tokens": 123})
    await harness.say(t, "hi")
    request = rig.server.requests[0]
    assert request["temperature"] == 0.2
    assert 123 in (request.get("max_tokens"), request.get("max_completion_tokens"))


async def test_system_file_next_to_the_suite_with_a_var(rig: Rig, harness: Any, tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "support.md").write_text("You help {{vars.shop}} customers.\n")
    t = await rig.target({"system_file": "prompts/support.md"}, vars={"shop": "Mochi"}, suite_dir=tmp_path)
    await harness.say(t, "hi")
    assert rig.messages(0)[0] == {"role": "system", "content": "You help Mochi customers.\n"}


async def test_missing_system_file_and_missing_router_are_config_errors(
    rig: Rig, harness: Any, tmp_path: Path
) -> None:
    with pytest.raises(TargetError, match="system_file") as info:
        await rig.target({"system_file": "nope.md"}, suite_dir=tmp_path)
    assert not info.value.retryable
    cfg = parse_target({"type": "model", "system": "s"})
    with pytest.raises(TargetError, match=r"models\.default"):
        await targets.adapter("model")(cfg, harness.context()).start()


NORMAL = {"topic": "returns", "window_days": 30}


def _malformed(content: str) -> bool:
    try:
        json.loads(content)
    except ValueError:
        return content.startswith('{"topic": ') and len(content) < len(json.dumps(NORMAL))
    return False


@pytest.mark.parametrize(
    ("fuzz", "check"),
    [
        (
            "error",
            lambda c: (
                json.loads(c) == {"error": "internal server error", "code": 500, "tool": "lookup_policy"}
            ),
        ),
        ("empty", lambda c: c == "{}"),
        ("null", lambda c: c == "null"),
        ("malformed", _malformed),
        (
            "hostile",
            lambda c: json.loads(c)["note"] in HOSTILE_PAYLOADS and json.loads(c)["window_days"] == 30,
        ),
        ("huge", lambda c: len(c) >= HUGE_BYTES and json.loads(c)["topic"] == "returns"),
        ("wrong_type", lambda c: json.loads(c) == {"topic": 7, "window_days": "30"}),
        ({"mode": "custom", "result": {"ok": False}}, lambda c: json.loads(c) == {"ok": False}),
    ],
    ids=["error", "empty", "null", "malformed", "hostile", "huge", "wrong_type", "custom"],
)
async def test_fuzz_mode_is_what_the_model_receives(rig: Rig, harness: Any, fuzz: Any, check: Any) -> None:
    rig.server.queue(Reply(tool_calls=[("lookup_policy", {"topic": "returns"})]), Reply(text="ok"))
    t = await rig.target({"system": "s", "tools": [POLICY]}, fuzz={"lookup_policy": fuzz})
    out = await harness.say(t, "returns?")
    content = rig.tool_messages(1)[0]["content"]
    assert check(content), content[:300]
    mode = fuzz if isinstance(fuzz, str) else fuzz["mode"]
    assert {"event": "fuzz", "tool": "lookup_policy", "mode": mode} in [
        r.body for r in harness.of_type(out, RawResponse)
    ]


async def test_fuzz_delay_holds_the_normal_answer_on_the_run_clock(rig: Rig, harness: Any) -> None:
    clock = VirtualClock()
    rig.server.queue(Reply(tool_calls=[("lookup_policy", {"topic": "returns"})]), Reply(text="ok"))
    t = await rig.target(
        {"system": "s", "tools": [POLICY]},
        fuzz={"lookup_policy": {"mode": "delay", "delay": "8s"}},
        clock=clock,
    )
    out = await harness.say(t, "returns?")
    assert json.loads(rig.tool_messages(1)[0]["content"]) == NORMAL
    result = harness.of_type(out, ToolResult)[0]
    assert result.at == pytest.approx(8.0) and out[-1].end_at == pytest.approx(8.0)


async def test_a_model_target_sends_the_data_as_json_after_the_words(rig: Rig) -> None:
    rig.server.queue(Reply(text="noted"))
    t = await rig.target({"system": "You help."})
    out = [m async for m in t.turn(UserTurn(text="my order", data={"id": "ORD-1", "n": 2}))]
    assert out[-1].text == "noted"
    words, data = rig.messages()[-1]["content"].split("\n")
    assert words == "my order" and json.loads(data) == {"id": "ORD-1", "n": 2}
