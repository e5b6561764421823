"""The grpc target against real gRPC servers on loopback: the reference agent in examples/grpc_agent
(as a process of its own, with and without server reflection) and small servicers of our own."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from tamesu import run_async
from tamesu.config.target import parse_target
from tamesu.errors import TargetError
from tamesu.kernel.messages import AgentPartial, Handoff, RawResponse, ToolCall, ToolResult, UserTurn
from tamesu.limits import LimitExceeded, Limits
from tamesu.targets.base import targets
from tamesu.targets.grpc.grpc_stubs import agent_pb2 as pb
from tamesu.targets.grpc.grpc_stubs import agent_pb2_grpc

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "examples" / "grpc_agent" / "server.py"

Behaviour = Callable[[Any, Any], AsyncIterator[pb.AgentEvent]]


async def _process(*args: str) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(sys.executable, *args, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    assert line.startswith("listening "), line
    return proc, int(line.split()[1])


@pytest.fixture
async def reference() -> AsyncIterator[Callable[..., Awaitable[str]]]:
    """Start the reference agent with some flags; its grpc:// URL."""
    procs: list[asyncio.subprocess.Process] = []

    async def start(*flags: str) -> str:
        proc, port = await _process(str(REFERENCE), "--port", "0", *flags)
        procs.append(proc)
        return f"grpc://127.0.0.1:{port}"

    yield start
    for proc in procs:
        proc.terminate()
        await proc.wait()


class Scripted(agent_pb2_grpc.AgentServicer):
    """A servicer whose Converse is the test's ``behaviour(requests, context)``."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour

    async def Converse(self, request_iterator: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for event in self.behaviour(request_iterator, context):
            yield event


@pytest.fixture
async def servicer() -> AsyncIterator[Callable[..., Awaitable[str]]]:
    """Serve a behaviour in this process (plaintext, or TLS with credentials); its URL."""
    servers: list[Any] = []

    async def start(behaviour: Behaviour | None, *, tls: Any = None, reflection: tuple[str, ...] = ()) -> str:
        server = grpc.aio.server()
        if behaviour is not None:
            agent_pb2_grpc.add_AgentServicer_to_server(Scripted(behaviour), server)
        if reflection:
            from grpc_reflection.v1alpha import reflection as grpc_reflection

            grpc_reflection.enable_server_reflection((*reflection, grpc_reflection.SERVICE_NAME), server)
        if tls is not None:
            port = server.add_secure_port("127.0.0.1:0", tls)
        else:
            port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        return f"{'grpcs' if tls is not None else 'grpc'}://{'localhost' if tls else '127.0.0.1'}:{port}"

    yield start
    for server in servers:
        await server.stop(None)


def text(value: str) -> pb.AgentEvent:
    return pb.AgentEvent(text=pb.TextDelta(text=value))


END = pb.AgentEvent(turn_end=pb.TurnEnd())


async def grpc_target(harness: Any, url: str, **config: Any) -> Any:
    ctx = {k: config.pop(k) for k in ("secrets", "turn_timeout", "limits", "session") if k in config}
    return await harness.target({"type": "grpc", "url": url, **config}, **ctx)


async def test_a_conversation_with_the_reference_agent(harness: Any, reference: Any) -> None:
    t = await grpc_target(harness, await reference())
    out = await harness.say(t, "I want to return shoes bought 40 days ago")
    partials = harness.of_type(out, AgentPartial)
    assert len(partials) > 3 and "".join(p.text for p in partials) == out[-1].text
    assert "within 30 days" in out[-1].text and not out[-1].done
    out = await harness.say(t, "Where is ORD-12?")
    (call,), (result,) = harness.of_type(out, ToolCall), harness.of_type(out, ToolResult)
    assert (call.name, call.args, call.id) == ("lookup_order", {"order_id": "ORD-12"}, "call-1")
    assert result.result == {"order_id": "ORD-12", "status": "delivered"} and result.id == "call-1"
    out = await harness.say(t, "Let me talk to a person about a refund")
    (handoff,) = harness.of_type(out, Handoff)
    assert handoff.to == "billing" and "refund" in (handoff.summary or "")
    out = await harness.say(t, "bye")
    assert out[-1].done and "Goodbye" in out[-1].text
    assert harness.of_type(out, RawResponse)[0].body == {"event": "session_end", "reason": "goodbye"}


async def test_headers_are_call_metadata_and_a_refusal_is_not_retried(harness: Any, reference: Any) -> None:
    url = await reference("--token", "s3cr3t-tok")
    ok = await grpc_target(
        harness, url, headers={"Authorization": "Bearer {{secrets.T}}"}, secrets={"T": "s3cr3t-tok"}
    )
    assert "ORD-1 is" in (await harness.say(ok, "ORD-1?"))[-1].text
    with pytest.raises(TargetError) as err:  # at the first write or the first read, whichever sees it
        refused = await grpc_target(harness, url, headers={"Authorization": "Bearer wrong"})
        await harness.say(refused, "hi")
    assert not err.value.retryable and "UNAUTHENTICATED: missing or wrong bearer token" in str(err.value)


async def test_the_session_id_metadata_and_data_reach_the_agent(harness: Any, servicer: Any) -> None:
    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        metadata = dict(context.invocation_metadata())
        async for event in requests:
            if event.HasField("start"):
                yield text(f"session={event.start.session_id} tenant={metadata.get('x-tenant')} ")
                deadline = context.time_remaining()
                yield text(f"deadline={deadline is not None and 100 < deadline <= 181} ")
            else:
                data = json.dumps(dict(event.user_turn.data), sort_keys=True)
                yield text(f"said={event.user_turn.text} data={data}")
                yield END

    config = parse_target({"type": "grpc", "url": await servicer(behaviour), "headers": {"X-Tenant": "acme"}})
    t = targets.adapter("grpc")(config, harness.context(session="sess-42"))
    t.ctx.run_timeout = 180.0
    harness.started.append(t)
    await t.start()
    out = [m async for m in t.turn(UserTurn(text="hi", data={"qty": 2}))]
    assert out[-1].text == 'session=sess-42 tenant=acme deadline=True said=hi data={"qty": 2.0}'


async def test_an_agent_that_returns_ends_the_session(harness: Any, servicer: Any) -> None:
    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for event in requests:
            if event.HasField("user_turn"):
                yield text("that is all")
                return

    t = await grpc_target(harness, await servicer(behaviour))
    out = await harness.say(t, "hi")
    assert out[-1].done and out[-1].text == "that is all"


async def test_a_turn_without_an_end_fails_after_turn_timeout(harness: Any, servicer: Any) -> None:
    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for _ in requests:
            yield text("thinking...")
        await asyncio.sleep(3600)

    t = await grpc_target(harness, await servicer(behaviour), turn_timeout=0.5)
    began = time.monotonic()
    with pytest.raises(TargetError) as err:
        await harness.say(t, "hi")
    assert time.monotonic() - began < 5 and "no end of the agent's turn within 500ms" in str(err.value)


@pytest.mark.parametrize(
    ("code", "retryable"),
    [
        (grpc.StatusCode.UNAVAILABLE, True),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, True),
        (grpc.StatusCode.INTERNAL, True),
        (grpc.StatusCode.INVALID_ARGUMENT, False),
        (grpc.StatusCode.PERMISSION_DENIED, False),
        (grpc.StatusCode.FAILED_PRECONDITION, False),
    ],
)
async def test_status_codes_are_errors_retryable_like_their_http_kin(
    harness: Any, servicer: Any, code: Any, retryable: bool
) -> None:
    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for event in requests:
            if event.HasField("user_turn"):
                await context.abort(code, "scripted failure")
        yield END

    t = await grpc_target(harness, await servicer(behaviour))
    with pytest.raises(TargetError) as err:
        await harness.say(t, "hi")
    assert err.value.retryable is retryable and f"with {code.name}: scripted failure" in str(err.value)


async def test_a_message_over_answer_size_is_refused(harness: Any, servicer: Any) -> None:
    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for event in requests:
            if event.HasField("user_turn"):
                yield text("x" * 50_000)
                yield END

    t = await grpc_target(harness, await servicer(behaviour), limits=Limits(answer_size=20_000))
    with pytest.raises(LimitExceeded) as err:
        await harness.say(t, "hi")
    assert "limits.answer_size" in str(err.value)


async def test_turn_text_bounds_a_turn_of_many_small_deltas(harness: Any, servicer: Any) -> None:
    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for event in requests:
            if event.HasField("user_turn"):
                while True:
                    yield text("y" * 1000)

    t = await grpc_target(harness, await servicer(behaviour), limits=Limits(turn_text=10_000))
    with pytest.raises(LimitExceeded) as err:
        await harness.say(t, "hi")
    assert "limits.turn_text" in str(err.value)


async def test_an_unreachable_agent_is_retried_then_a_retryable_error(harness: Any, closed_port: int) -> None:
    with pytest.raises(TargetError) as err:
        await grpc_target(
            harness, f"grpc://127.0.0.1:{closed_port}", connect={"attempts": 2, "backoff": "10ms"}
        )
    assert err.value.retryable and "after 2 attempts" in str(err.value)


async def test_a_url_that_is_not_grpc_is_a_config_error(harness: Any) -> None:
    with pytest.raises(TargetError) as err:
        await grpc_target(harness, "http://127.0.0.1:9/chat")
    assert err.value.kind == "config" and "grpc://host:port" in str(err.value)


async def test_the_reference_agent_with_reflection_talks_as_usual(harness: Any, reference: Any) -> None:
    pytest.importorskip("grpc_reflection")
    url = await reference("--reflection")
    from tamesu.targets.grpc.adapter import SERVICE, list_services

    t = await grpc_target(harness, url)
    assert "ORD-3" in (await harness.say(t, "ORD-3?"))[-1].text
    assert SERVICE in (await list_services(t.channel) or [])


async def test_a_server_without_the_protocol_names_what_it_serves_by_reflection(
    harness: Any, servicer: Any
) -> None:
    pytest.importorskip("grpc_reflection")
    url = await servicer(None, reflection=("shop.Orders",))
    t = await grpc_target(harness, url)
    with pytest.raises(TargetError) as err:
        await harness.say(t, "hi")
    message = str(err.value)
    assert "UNIMPLEMENTED" in message and not err.value.retryable
    assert "by reflection it serves: grpc.reflection.v1alpha.ServerReflection, shop.Orders" in message


async def test_grpcs_verifies_the_agent_against_ssl_cert_file(
    harness: Any, servicer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    tls = grpc.ssl_server_credentials(
        [(cert.private_key_pem.bytes(), b"".join(c.bytes() for c in cert.cert_chain_pems))]
    )

    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for event in requests:
            if event.HasField("user_turn"):
                yield text("secure hello")
                yield END

    url = await servicer(behaviour, tls=tls)
    untrusted = harness.target({"type": "grpc", "url": url, "connect": {"attempts": 1}}, turn_timeout=3)
    with pytest.raises(TargetError):
        await untrusted
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    t = await grpc_target(harness, url)
    assert (await harness.say(t, "hi"))[-1].text == "secure hello"


async def test_grpcs_shows_a_client_certificate_to_an_agent_that_wants_mutual_tls(
    harness: Any, servicer: Any, tmp_path: Path
) -> None:
    trustme = pytest.importorskip("trustme")  # certificates made here with cryptography
    ca = trustme.CA()
    server = ca.issue_cert("localhost")
    client = ca.issue_cert("client.example", common_name="tamesu client")
    tls = grpc.ssl_server_credentials(
        [(server.private_key_pem.bytes(), b"".join(c.bytes() for c in server.cert_chain_pems))],
        root_certificates=ca.cert_pem.bytes(),
        require_client_auth=True,
    )

    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        names = context.auth_context().get("x509_common_name", [b"?"])
        async for event in requests:
            if event.HasField("user_turn"):
                yield text(f"hello {names[0].decode()}")
                yield END

    url = await servicer(behaviour, tls=tls)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    client.cert_chain_pems[0].write_to_path(str(tmp_path / "client.pem"))
    client.private_key_pem.write_to_path(str(tmp_path / "client.key"))
    mutual = f"{url}?ca=ca.pem&cert=client.pem&key={{{{vars.key}}}}"
    config = parse_target({"type": "grpc", "url": mutual, "connect": {"attempts": 1}})
    ctx = harness.context(vars={"key": "client.key"}, turn_timeout=3)
    ctx.suite_dir = str(tmp_path)
    t = targets.adapter("grpc")(config, ctx)
    harness.started.append(t)
    await t.start()
    assert (await harness.say(t, "hi"))[-1].text == "hello tamesu client"
    anonymous = f"{url}?ca={tmp_path / 'ca.pem'}"
    with pytest.raises(TargetError):  # trusted, but the agent refuses a caller without a certificate
        refused = await grpc_target(harness, anonymous, connect={"attempts": 1}, turn_timeout=3)
        await harness.say(refused, "hi")
    missing = f"{anonymous}&cert={tmp_path / 'client.pem'}&key={tmp_path / 'nope.key'}"
    with pytest.raises(TargetError, match=r"the grpcs:// url.s key .*nope\.key") as err:
        await grpc_target(harness, missing)
    assert err.value.kind == "config" and not err.value.retryable


@pytest.mark.unit
def test_tls_parameters_need_a_grpcs_url_and_a_cert_needs_its_key() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="apply to a grpcs:// url, not grpc://"):
        parse_target({"type": "grpc", "url": "grpc://127.0.0.1:1?ca=ca.pem"})
    with pytest.raises(ValidationError, match="cert and key go together"):
        parse_target({"type": "grpc", "url": "grpcs://localhost:1?cert=c.pem"})
    with pytest.raises(ValidationError, match="takes the query parameters ca, cert, key, not cafile"):
        parse_target({"type": "grpc", "url": "grpcs://localhost:1?cafile=c.pem"})


def test_the_checked_in_stubs_are_what_the_proto_compiles_to() -> None:
    pytest.importorskip("grpc_tools")
    from tamesu.targets.grpc.grpc_stubs.compile_proto import HERE, stubs

    def unstamped(text: str) -> str:
        """The stub without the grpcio-tools version it stamps (a fresh install may have a newer patch)."""
        return re.sub(r"GRPC_GENERATED_VERSION = '[^']*'", "GRPC_GENERATED_VERSION = ...", text)

    for name, text in stubs().items():
        assert unstamped((HERE / name).read_text()) == unstamped(text), (
            f"{name} is stale: python -m tamesu.targets.grpc.grpc_stubs.compile_proto"
        )


async def test_the_example_suite_passes_against_the_reference_agent(
    reference: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRPC_AGENT_URL", await reference("--token", "demo-token"))
    monkeypatch.setenv("AGENT_TOKEN", "demo-token")
    result = await run_async([ROOT / "examples" / "grpc_agent" / "suite.yaml"], output=tmp_path / "runs")
    assert result.exit_code == 0, [(r.error, r.assertions) for r in result.results if r.outcome != "passed"]
    assert len(result.results) == 4


async def test_conversations_with_one_agent_share_a_channel(harness: Any, servicer: Any) -> None:
    async def behaviour(requests: Any, context: Any) -> AsyncIterator[pb.AgentEvent]:
        async for event in requests:
            if event.HasField("user_turn"):
                yield text(f"you said {event.user_turn.text}")
                yield END

    url = await servicer(behaviour)
    first, second = await grpc_target(harness, url), await grpc_target(harness, url)
    assert first.channel is second.channel
    said = [(await harness.say(t, word))[-1].text for t, word in ((first, "one"), (second, "two"))]
    assert said == ["you said one", "you said two"]
