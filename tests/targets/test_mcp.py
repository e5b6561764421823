"""The mcp target against real MCP servers: our own (tests/targets/fixtures/mcp_orders.py) as a
stdio subprocess and over streamable HTTP on loopback, and mcp-server-time and mcp-server-git from
PyPI; the model is the scripted OpenAI-wire model server."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tamesu import run_async
from tamesu.config import Models
from tamesu.config.target import parse_target
from tamesu.errors import TargetError
from tamesu.kernel.messages import RawResponse, ToolCall, ToolResult
from tamesu.limits import LimitExceeded, Limits
from tamesu.models import ModelRouter, UsageLedger
from tamesu.models.refs import custom_provider
from tamesu.targets.base import TargetAdapter, targets
from tamesu.targets.mcp import adapter as mcp_target
from tamesu.testing.model_server import ModelServer, Reply, serve_model_server

from ..stored import stored_transcripts

pytestmark = pytest.mark.integration

SERVER = Path(__file__).parent / "fixtures" / "mcp_orders.py"
BROKEN = Path(__file__).parent / "fixtures" / "mcp_broken.py"
STDIO = {"command": sys.executable, "args": [str(SERVER), "stdio"]}


@pytest.fixture
async def model() -> AsyncIterator[ModelServer]:
    async with serve_model_server() as s:
        yield s


@pytest.fixture
async def http_server() -> AsyncIterator[str]:
    """mcp_orders.py serving streamable HTTP in a process of its own; its /mcp URL."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), "http", stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    assert line.startswith("listening "), line
    yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    proc.terminate()
    await proc.wait()


class Rig:
    def __init__(self, harness: Any, model: ModelServer) -> None:
        self.harness = harness
        self.model = model
        self.ledger = UsageLedger()

    async def target(
        self,
        config: dict[str, Any],
        *,
        fuzz: dict[str, Any] | None = None,
        suite_dir: Path | None = None,
        **ctx_kw: Any,
    ) -> TargetAdapter:
        models = Models.model_validate(
            {"default": "scripted/main", "retry": {"attempts": 1, "backoff": "1ms", "max_backoff": "1ms"}}
        )
        router = ModelRouter(
            models, custom_providers={"scripted": custom_provider("scripted", self.model.base_url)}
        )
        ctx = self.harness.context(**ctx_kw)
        ctx.models, ctx.ledger, ctx.fuzz = router, self.ledger, fuzz or {}
        if suite_dir is not None:
            ctx.suite_dir = str(suite_dir)
        cfg = parse_target({"type": "mcp", "system": "You help with orders.", **config})
        adapter = targets.adapter("mcp")(cfg, ctx)
        self.harness.started.append(adapter)
        await adapter.start()
        return adapter

    def offered(self, index: int = 0) -> list[str]:
        return [t["function"]["name"] for t in self.model.requests[index].get("tools", [])]

    def tool_messages(self, index: int = -1) -> list[dict[str, Any]]:
        return [m for m in self.model.requests[index]["messages"] if m["role"] == "tool"]


@pytest.fixture
def rig(harness: Any, model: ModelServer) -> Rig:
    return Rig(harness, model)


async def test_a_stdio_server_s_tools_are_offered_and_its_answers_reach_the_model_and_the_transcript(
    rig: Rig, harness: Any
) -> None:
    rig.model.queue(
        Reply(tool_calls=[("lookup_order", {"id": "A1"})]), Reply(text="Your order A1 has shipped.")
    )
    t = await rig.target(STDIO)
    out = await harness.say(t, "where is order A1?")
    assert {"lookup_order", "cancel_order", "whoami", "hang"} <= set(rig.offered())
    params = next(
        x["function"]["parameters"]
        for x in rig.model.requests[0]["tools"]
        if x["function"]["name"] == "lookup_order"
    )
    assert params["required"] == ["id"], "the server's input schema is what the model sees"
    (call,) = harness.of_type(out, ToolCall)
    (result,) = harness.of_type(out, ToolResult)
    assert (call.name, call.args) == ("lookup_order", {"id": "A1"})
    assert result.result == {"id": "A1", "status": "shipped", "eta": "2026-03-02"} and result.id == call.id
    (tool_msg,) = rig.tool_messages()
    assert json.loads(tool_msg["content"])["status"] == "shipped"
    assert out[-1].text == "Your order A1 has shipped."


async def test_allow_tools_offers_only_those_and_a_call_of_another_never_reaches_the_server(
    rig: Rig, harness: Any
) -> None:
    rig.model.queue(Reply(tool_calls=[("die", {})]), Reply(text="I cannot do that."))
    t = await rig.target({**STDIO, "allow_tools": ["lookup_order", "cancel_order"]})
    out = await harness.say(t, "crash it")
    assert sorted(rig.offered()) == ["cancel_order", "lookup_order"]
    (result,) = harness.of_type(out, ToolResult)
    assert result.result == {"error": "unknown tool die"}, "die would have killed the server"
    assert out[-1].text == "I cannot do that."


async def test_allow_tools_naming_a_tool_the_server_lacks_is_a_config_error(rig: Rig) -> None:
    with pytest.raises(TargetError) as err:
        await rig.target({**STDIO, "allow_tools": ["lookup_order", "refund_everything"]})
    assert err.value.kind == "config" and not err.value.retryable
    assert "refund_everything" in str(err.value) and "lookup_order" in str(err.value)


async def test_env_renders_templates_and_secrets_and_the_server_gets_nothing_else(
    rig: Rig, harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_TOKEN", "leaked-from-parent")
    rig.model.queue(Reply(tool_calls=[("whoami", {})]), Reply(text="ok"))
    t = await rig.target(
        {**STDIO, "env": {"ORDERS_NOTE": "{{vars.shop}}/{{secrets.KEY}}"}},
        vars={"shop": "mochi"},
        secrets={"KEY": "k-123"},
    )
    out = await harness.say(t, "who are you?")
    (result,) = harness.of_type(out, ToolResult)
    assert result.result["note"] == "mochi/k-123"
    assert result.result["token"] is None, "tamesu's own environment does not reach the server"


async def test_a_tool_error_result_goes_back_to_the_model_as_an_error(rig: Rig, harness: Any) -> None:
    rig.model.queue(Reply(tool_calls=[("broken", {})]), Reply(text="The system is down, sorry."))
    t = await rig.target(STDIO)
    out = await harness.say(t, "status?")
    (result,) = harness.of_type(out, ToolResult)
    assert set(result.result) == {"error"} and "broken" in result.result["error"]
    assert out[-1].text == "The system is down, sorry."


SECRET_ENV = {"env": {"ORDERS_TOKEN": "{{secrets.LEDGER}}"}}
"""The server's stderr lines end with ORDERS_TOKEN, a secret the error messages must mask."""


def assert_tail(error: TargetError, line: str) -> None:
    """The error quotes the server's stderr, with the secret masked."""
    message = str(error)
    assert "--- its stderr ends ---" in message and f"{line} ***" in message, message
    assert "tok-secret-77" not in message


async def test_a_json_rpc_error_is_an_infrastructure_error_that_no_retry_fixes(
    rig: Rig, harness: Any
) -> None:
    rig.model.queue(Reply(tool_calls=[("refuse", {})]))
    t = await rig.target({**STDIO, **SECRET_ENV}, secrets={"LEDGER": "tok-secret-77"})
    with pytest.raises(TargetError) as err:
        await harness.say(t, "go")
    assert not err.value.retryable
    assert "error -32602" in str(err.value) and "refused on purpose" in str(err.value)
    assert_tail(err.value, "refuse: the ledger refused token")


async def test_a_hanging_tool_fails_the_turn_after_call_timeout(rig: Rig, harness: Any) -> None:
    rig.model.queue(Reply(tool_calls=[("hang", {})]))
    t = await rig.target(
        {**STDIO, **SECRET_ENV, "call_timeout": "500ms"}, secrets={"LEDGER": "tok-secret-77"}
    )
    began = time.monotonic()
    with pytest.raises(TargetError) as err:
        await harness.say(t, "wait")
    assert time.monotonic() - began < 5
    assert "no answer to tool hang within 500ms" in str(err.value) and err.value.retryable
    assert_tail(err.value, "hang: waiting for the ledger with token")


async def test_a_server_silent_in_the_handshake_is_an_error_with_its_stderr_tail(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_target, "OPEN_TIMEOUT", 3.0)  # a bare Python prints its line well before
    began = time.monotonic()
    with pytest.raises(TargetError) as err:
        await rig.target(
            {"command": sys.executable, "args": [str(BROKEN), "mute"], **SECRET_ENV},
            secrets={"LEDGER": "tok-secret-77"},
        )
    assert time.monotonic() - began < 8, "a session still in its handshake is cancelled at once"
    assert "no MCP handshake within 3s" in str(err.value) and err.value.retryable
    assert_tail(err.value, "mute: starting up with token")


async def test_a_server_that_exits_before_the_handshake_is_an_error_with_its_stderr_tail(
    rig: Rig,
) -> None:
    with pytest.raises(TargetError) as err:
        await rig.target(
            {"command": sys.executable, "args": [str(BROKEN), "crash"], **SECRET_ENV},
            secrets={"LEDGER": "tok-secret-77"},
        )
    assert "starting" in str(err.value)
    assert_tail(err.value, "crash: starting up with token")


async def test_a_server_that_dies_is_an_error_carrying_its_stderr_tail_redacted(
    rig: Rig, harness: Any
) -> None:
    rig.model.queue(Reply(tool_calls=[("die", {})]))
    t = await rig.target(
        {**STDIO, "env": {"ORDERS_TOKEN": "{{secrets.LEDGER}}"}}, secrets={"LEDGER": "tok-secret-77"}
    )
    with pytest.raises(TargetError) as err:
        await harness.say(t, "die")
    message = str(err.value)
    assert "connection closed" in message and "fatal: cannot reach the ledger" in message
    assert "tok-secret-77" not in message and "***" in message


async def test_a_command_that_does_not_exist_cannot_start(rig: Rig, tmp_path: Path) -> None:
    with pytest.raises(TargetError) as err:
        await rig.target({"command": "./no-such-server"}, turn_timeout=5)
    assert err.value.kind == "config" and "./no-such-server" in str(err.value)


async def test_a_relative_command_runs_in_the_suite_folder(rig: Rig, harness: Any, tmp_path: Path) -> None:
    script = tmp_path / "bin" / "orders-mcp"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {SERVER} stdio\n")
    script.chmod(0o755)
    rig.model.queue(Reply(tool_calls=[("lookup_order", {"id": "Z9"})]), Reply(text="unknown order"))
    t = await rig.target({"command": "./bin/orders-mcp"}, suite_dir=tmp_path)
    out = await harness.say(t, "Z9?")
    assert harness.of_type(out, ToolResult)[0].result == {"id": "Z9", "status": "unknown"}


async def test_fuzz_tools_answer_instead_of_the_server(rig: Rig, harness: Any) -> None:
    rig.model.queue(Reply(tool_calls=[("die", {})]), Reply(text="Something went wrong."))
    t = await rig.target(STDIO, fuzz={"die": "error"})
    out = await harness.say(t, "go")
    (result,) = harness.of_type(out, ToolResult)
    assert result.result == {"error": "internal server error", "code": 500, "tool": "die"}
    assert any(isinstance(m, RawResponse) and m.body.get("event") == "fuzz" for m in out)
    assert out[-1].text == "Something went wrong.", "the server, not killed, is still there"


async def test_an_answer_over_limits_answer_size_is_refused(rig: Rig, harness: Any) -> None:
    rig.model.queue(Reply(tool_calls=[("huge", {"kb": 50})]))
    t = await rig.target(STDIO, limits=Limits(answer_size=20_000))
    with pytest.raises(LimitExceeded):
        await harness.say(t, "big")


async def test_streamable_http_carries_headers_and_runs_tools(
    rig: Rig, harness: Any, http_server: str
) -> None:
    rig.model.queue(
        Reply(tool_calls=[("whoami", {}), ("lookup_order", {"id": "A1"})]), Reply(text="Shipped, Marta.")
    )
    t = await rig.target(
        {"url": http_server, "headers": {"Authorization": "Bearer {{secrets.T}}"}}, secrets={"T": "http-tok"}
    )
    out = await harness.say(t, "A1?")
    results = harness.of_type(out, ToolResult)
    assert results[0].result["authorization"] == "Bearer http-tok"
    assert results[1].result["status"] == "shipped"
    assert out[-1].text == "Shipped, Marta."


async def test_an_unreachable_http_server_is_retried_then_a_retryable_error(
    rig: Rig, closed_port: int
) -> None:
    with pytest.raises(TargetError) as err:
        await rig.target(
            {"url": f"http://127.0.0.1:{closed_port}/mcp", "connect": {"attempts": 2, "backoff": "10ms"}}
        )
    assert err.value.retryable and "after 2 attempts" in str(err.value)


async def test_mcp_server_time_from_pypi_answers_the_model(rig: Rig, harness: Any) -> None:
    pytest.importorskip("mcp_server_time")
    rig.model.queue(
        Reply(tool_calls=[("get_current_time", {"timezone": "Europe/Lisbon"})]), Reply(text="It is morning.")
    )
    t = await rig.target(
        {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    )
    out = await harness.say(t, "What time is it in Lisbon?")
    assert {"get_current_time", "convert_time"} <= set(rig.offered())
    (result,) = harness.of_type(out, ToolResult)
    assert result.result["timezone"] == "Europe/Lisbon" and "datetime" in result.result


SUITE = """
suite: mcp
models: {{ default: scripted/main }}
targets:
  orders:
    type: mcp
    command: "{python}"
    args: ["{server}", "stdio"]
    system: "You help with orders."
    allow_tools: [lookup_order, cancel_order]
tests:
  - name: cancel
    target: orders
    scenario: {{ script: [ {{ say: "cancel A1 please" }} ] }}
    assert:
      - tool_called: {{ name: cancel_order, args: {{ id: A1 }} }}
      - tool_sequence: {{ calls: [lookup_order, cancel_order], exact: true }}
      - tool_not_called: whoami
      - contains: cancelled
"""


async def run_with_model(tmp_path: Path, server: ModelServer, suite_text: str) -> Any:
    """``suite_text`` run in a project whose ``scripted`` provider is the model ``server``."""
    (tmp_path / "tamesu.yaml").write_text(f'providers:\n  scripted: {{ base_url: "{server.base_url}" }}\n')
    suite = tmp_path / "suite.yaml"
    suite.write_text(suite_text)
    return await run_async([suite], output=tmp_path / "runs")


async def test_a_suite_asserts_on_the_calls_an_mcp_target_recorded(tmp_path: Path) -> None:
    async with serve_model_server() as server:
        server.queue(
            Reply(tool_calls=[("lookup_order", {"id": "A1"})]),
            Reply(tool_calls=[("cancel_order", {"id": "A1"})]),
            Reply(text="Order A1 is cancelled."),
        )
        result = await run_with_model(tmp_path, server, SUITE.format(python=sys.executable, server=SERVER))
        assert result.exit_code == 0, [(r.error, r.assertions) for r in result.results]
        transcript = stored_transcripts(result.run_dir)[0]
        assert "order A1 cancelled" in json.dumps(transcript)


GIT_SUITE = """
suite: git
models: {{ default: scripted/main }}
targets:
  repo:
    type: mcp
    command: "{python}"
    args: ["-m", "mcp_server_git", "--repository", "{repo}"]
    system: "You answer questions about a git repository."
    allow_tools: [git_log, git_status, git_show]
tests:
  - name: last commit
    target: repo
    scenario: {{ script: [ {{ say: "What was the last change?" }} ] }}
    assert:
      - tool_called: {{ name: git_log, args: {{ repo_path: "{repo}" }} }}
      - contains: "return window"
"""


def git_repo(path: Path) -> Path:
    """A repository with one commit, made by the git program."""
    import subprocess

    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=Marta", "-c", "user.email=marta@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (path / "policy.md").write_text("Returns within 30 days.\n")
    subprocess.run([*git, "add", "policy.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Set the return window to 30 days"], check=True)
    return path


async def test_mcp_server_git_from_pypi_lists_its_tools_and_answers_through_a_suite(tmp_path: Path) -> None:
    pytest.importorskip("mcp_server_git")
    repo = git_repo(tmp_path / "shop")
    async with serve_model_server() as server:
        server.queue(
            Reply(tool_calls=[("git_log", {"repo_path": str(repo), "max_count": 1})]),
            Reply(text="The last change set the return window to 30 days."),
        )
        result = await run_with_model(tmp_path, server, GIT_SUITE.format(python=sys.executable, repo=repo))
    assert result.exit_code == 0, [(r.error, r.assertions) for r in result.results]
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert sorted(offered) == ["git_log", "git_show", "git_status"]
    (tool_msg,) = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "Set the return window to 30 days" in tool_msg["content"] and "Marta" in tool_msg["content"]
    transcript = stored_transcripts(result.run_dir)[0]
    assert "Set the return window to 30 days" in json.dumps(transcript)


GROUNDED_SUITE = """
suite: grounded
models: {{ default: scripted/main, judge: scripted/judge }}
targets:
  orders:
    type: mcp
    command: "{python}"
    args: ["{server}", "stdio"]
    system: "You help with orders."
tests:
  - name: eta
    target: orders
    scenario: {{ script: [ {{ say: "When does A1 arrive?" }} ] }}
    assert:
      - grounded: {{ context: {{ tool: lookup_order }} }}
"""


@pytest.mark.parametrize("answer", ["2026-03-02", "2026-04-15"])
async def test_grounded_judges_an_mcp_target_s_answer_against_the_server_s_results(
    tmp_path: Path, answer: str
) -> None:
    """The judge sees what the MCP server answered; its verdict here follows that context (the date
    is supported when it is there besides in the agent's answer)."""

    def judge(request: dict[str, Any]) -> Reply:
        prompt = request["messages"][-1]["content"]
        supported = prompt.count(answer) >= 2
        claim = {"claim": f"A1 arrives on {answer}", "reason": "per lookup_order", "supported": supported}
        return Reply(json={"claims": [claim]})

    async with serve_model_server() as server:
        server.when(lambda r: r.get("model") == "judge", judge)
        server.queue(
            Reply(tool_calls=[("lookup_order", {"id": "A1"})]), Reply(text=f"Order A1 arrives on {answer}.")
        )
        suite = GROUNDED_SUITE.format(python=sys.executable, server=SERVER)
        result = await run_with_model(tmp_path, server, suite)
    (run,) = result.results
    (grounded,) = run.assertions
    judged = [r for r in server.requests if r.get("model") == "judge"]
    assert len(judged) == 1 and '"eta": "2026-03-02"' in judged[0]["messages"][-1]["content"]
    assert grounded.expected["context_passages"] == 1
    if answer == "2026-03-02":
        assert grounded.passed and result.exit_code == 0, grounded.message
    else:
        assert not grounded.passed and grounded.actual["unsupported"] == [f"A1 arrives on {answer}"]
