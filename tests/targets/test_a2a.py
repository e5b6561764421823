"""The a2a target against agents of our own on the a2a-sdk's server classes, on loopback."""

from __future__ import annotations

import pytest

from tamesu.errors import TargetError
from tamesu.kernel.events import Resubscribed
from tamesu.kernel.messages import AgentTurn, Event, FileRef, RawResponse, UserTurn
from tamesu.limits import Limits

pytest.importorskip("a2a.client", reason="the a2a extra is not installed")

from tamesu.testing.a2a_agent import serve_a2a_agent

pytestmark = pytest.mark.integration

TRANSPORTS = ("jsonrpc", "http", "grpc")


async def turn(adapter, text: str, **parts) -> list:
    out = [m async for m in adapter.turn(UserTurn(text=text, **parts))]
    assert isinstance(out[-1], AgentTurn) and sum(isinstance(m, AgentTurn) for m in out) == 1
    return out


def task_of(out: list) -> dict:
    return next(m.body for m in out if isinstance(m, RawResponse))


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_task_that_needs_input_is_continued_by_the_next_turn_on_every_transport(
    harness, transport: str, stream: bool
) -> None:
    async with serve_a2a_agent() as agent:
        t = await harness.target({"type": "a2a", "url": agent.url, "transport": transport, "stream": stream})
        assert t.conn.transport == transport
        asked = await turn(t, "ask me something")
        answered = await turn(t, "ORD-7")
    assert asked[-1].text == "Which order?"
    assert task_of(asked)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert answered[-1].text == "Order ORD-7 is on its way"
    first, second = agent.messages
    assert second.task_id == task_of(asked)["id"] and second.context_id == first.context_id


async def test_without_transport_the_cards_preferred_interface_is_used(harness) -> None:
    async with serve_a2a_agent(preferred="GRPC") as agent:
        t = await harness.target({"type": "a2a", "url": agent.url})
        out = await turn(t, "hi")
    assert t.conn.transport == "grpc"
    assert out[-1].text == "echo: hi"


async def test_a_grpc_url_reaches_an_agent_without_an_http_card(harness) -> None:
    async with serve_a2a_agent(extended_skills=("refund",)) as agent:
        t = await harness.target({"type": "a2a", "url": f"grpc://{agent.grpc_url}", "skill": "refund"})
        out = await turn(t, "hi")
    assert out[-1].text == "echo: hi" and t.conn.transport == "grpc"


async def test_data_files_and_metadata_travel_as_parts(harness, tmp_path) -> None:
    invoice = tmp_path / "invoice.pdf"
    invoice.write_bytes(b"%PDF-1.4 twelve")
    files = [
        FileRef(path=str(invoice), name="invoice.pdf", mime="application/pdf"),
        FileRef(uri="https://cdn.example.com/photo.jpg", name="photo.jpg", mime="image/jpeg"),
    ]
    async with serve_a2a_agent() as agent:
        t = await harness.target(
            {"type": "a2a", "url": agent.url, "metadata": {"tenant": "{{vars.tenant}}"}},
            vars={"tenant": "acme"},
        )
        out = await turn(t, "refund please", data={"order": "ORD-1001"}, files=files)
    sent = agent.messages[0]
    kinds = [p.WhichOneof("content") for p in sent.parts]
    assert kinds == ["text", "data", "raw", "url"]
    assert sent.parts[2].raw == b"%PDF-1.4 twelve" and sent.parts[2].filename == "invoice.pdf"
    assert (
        sent.parts[3].url == "https://cdn.example.com/photo.jpg" and sent.parts[3].media_type == "image/jpeg"
    )
    assert dict(sent.metadata) == {"tenant": "acme"}
    assert 'metadata: {"tenant": "acme"}' in out[-1].text
    artifact_parts = task_of(out)["artifacts"][0]["parts"]
    assert artifact_parts[1] == {"data": {"echo": {"order": "ORD-1001"}}}


async def test_a_missing_skill_fails_the_start_and_names_the_cards_skills(harness) -> None:
    async with serve_a2a_agent(skills=("echo", "orders")) as agent:
        await harness.target({"type": "a2a", "url": agent.url, "skill": "Orders"})
        with pytest.raises(TargetError, match=r"offers no skill 'refund' \(its skills: echo, orders\)"):
            await harness.target({"type": "a2a", "url": agent.url, "skill": "refund"})


async def test_credentials_read_the_extended_card_whose_skills_count(harness) -> None:
    async with serve_a2a_agent(extended_skills=("bulk-refund",)) as agent:
        with pytest.raises(TargetError, match="no skill 'bulk-refund'"):
            await harness.target({"type": "a2a", "url": agent.url, "skill": "bulk-refund"})
        t = await harness.target(
            {
                "type": "a2a",
                "url": agent.url,
                "skill": "bulk-refund",
                "headers": {"Authorization": "Bearer {{secrets.TOKEN}}"},
            },
            secrets={"TOKEN": "s3cret"},
        )
        await turn(t, "hi")
    assert agent.headers[-1]["authorization"] == "Bearer s3cret"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_stream_cut_short_is_resubscribed_and_read_to_its_end(harness, transport: str) -> None:
    async with serve_a2a_agent(drop_streams=1) as agent:
        t = await harness.target({"type": "a2a", "url": agent.url, "stream": True, "transport": transport})
        out = await turn(t, "drop it")
    assert out[-1].text == "done: drop it"
    notes = [m.event for m in out if isinstance(m, Event)]
    assert [type(n) for n in notes] == [Resubscribed] and notes[0].task == task_of(out)["id"]
    assert agent.resubscribed.is_set() and agent.drops == 0


async def test_without_streaming_on_the_card_stream_falls_back_to_send(harness) -> None:
    async with serve_a2a_agent(streaming=False, drop_streams=1) as agent:
        t = await harness.target({"type": "a2a", "url": agent.url, "stream": True})
        out = await turn(t, "slow")
    assert out[-1].text == "done: slow" and agent.drops == 1  # no stream was opened


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("push", [True, {"addr": "127.0.0.1:0"}], ids=["true", "addr"])
async def test_push_notifications_bring_the_answer_to_a_local_listener(harness, push, transport) -> None:
    async with serve_a2a_agent(push=True) as agent:
        t = await harness.target({"type": "a2a", "url": agent.url, "push": push, "transport": transport})
        assert t.conn.transport == transport
        first = await turn(t, "slow one")
        second = await turn(t, "slow two")
        config = agent.messages[0]
    assert first[-1].text == "done: slow one" and second[-1].text == "done: slow two"
    assert task_of(second)["status"]["state"] == "TASK_STATE_COMPLETED"
    assert config.context_id == agent.messages[1].context_id


async def test_push_url_is_where_the_agent_is_told_to_push_when_it_reaches_tamesu_another_way(
    serve, harness, closed_port: int
) -> None:
    """The listener on ``addr``; the agent is given ``url``, a forwarding proxy (as a tunnel or a
    NAT would be) that is the only way its notifications arrive."""
    import httpx
    from aiohttp import web

    forwarded: list[str] = []

    async def forward(request: web.Request) -> web.Response:
        forwarded.append(request.path)
        headers = {k: v for k, v in request.headers.items() if k.lower().startswith("x-a2a")}
        async with httpx.AsyncClient() as http:
            answer = await http.post(
                f"http://127.0.0.1:{closed_port}/",
                content=await request.read(),
                headers={**headers, "Content-Type": "application/json"},
            )
        return web.Response(status=answer.status_code, text=answer.text)

    app = web.Application()
    app.router.add_post("/tunnel/", forward)
    tunnel = await serve(app)
    push = {"addr": f"127.0.0.1:{closed_port}", "url": f"{tunnel}/tunnel/"}
    async with serve_a2a_agent(push=True) as agent:
        t = await harness.target({"type": "a2a", "url": agent.url, "push": push})
        assert t.push.url == f"{tunnel}/tunnel/" and t.push.listener.url.endswith(f":{closed_port}")
        out = await turn(t, "slow one")
    assert out[-1].text == "done: slow one"
    assert task_of(out)["status"]["state"] == "TASK_STATE_COMPLETED"
    assert forwarded and set(forwarded) == {"/tunnel/"}, "every notification came through the url"


async def test_push_needs_an_agent_that_offers_it(harness) -> None:
    async with serve_a2a_agent(push=False) as agent:
        with pytest.raises(TargetError, match="does not offer push notifications"):
            await harness.target({"type": "a2a", "url": agent.url, "push": True})


async def test_a_failed_task_is_the_agents_error_with_its_reason(harness) -> None:
    async with serve_a2a_agent() as agent:
        t = await harness.target({"type": "a2a", "url": agent.url})
        seen = []
        with pytest.raises(TargetError, match="the agent's task ended failed: cannot do that"):
            async for msg in t.turn(UserTurn(text="fail now")):
                seen.append(msg)
    assert isinstance(seen[0], RawResponse) and seen[0].body["status"]["state"] == "TASK_STATE_FAILED"


async def test_an_answer_over_the_size_limit_ends_the_turn_with_the_setting_to_raise(harness) -> None:
    async with serve_a2a_agent(big=50_000) as agent:
        t = await harness.target({"type": "a2a", "url": agent.url}, limits=Limits(answer_size=20_000))
        with pytest.raises(TargetError, match=r"limits\.answer_size"):
            await turn(t, "big")
        s = await harness.target(
            {"type": "a2a", "url": agent.url, "stream": True}, limits=Limits(turn_text=1_000)
        )
        with pytest.raises(TargetError, match=r"limits\.turn_text"):
            await turn(s, "big")


async def test_an_unreachable_agent_is_retried_then_named(harness, closed_port: int) -> None:
    with pytest.raises(
        TargetError, match=r"agent card at http://127\.0\.0\.1:\d+/\.well-known.*after 2 attempts"
    ):
        await harness.target(
            {
                "type": "a2a",
                "url": f"http://127.0.0.1:{closed_port}",
                "connect": {"attempts": 2, "backoff": "10ms"},
            }
        )


async def test_the_push_listener_reads_only_its_sessions_notifications_within_the_limits(harness) -> None:
    import httpx

    async with serve_a2a_agent(push=True) as agent:
        t = await harness.target(
            {"type": "a2a", "url": agent.url, "push": True}, limits=Limits(answer_size=1_000)
        )
        token = {"X-A2A-Notification-Token": t.push.token}
        async with httpx.AsyncClient() as http:
            stranger = await http.post(t.push.url, json={"task": {"id": "x"}})
            too_big = await http.post(t.push.url, content=b"{" + b" " * 2_000 + b"}", headers=token)
            garbled = await http.post(t.push.url, json=[1, 2], headers=token)
        assert (stranger.status_code, too_big.status_code, garbled.status_code) == (401, 413, 400)
        with pytest.raises(TargetError, match=r"limits\.answer_size"):
            await t.push.next()
        with pytest.raises(TargetError, match="cannot read"):
            await t.push.next()


async def test_push_and_response_listen_share_one_listener_and_each_reads_its_own(serve, harness) -> None:
    import httpx

    from .test_rest_listen import CallbackAgent, listen_config

    rest_agent = CallbackAgent()
    rest_url = await serve(rest_agent.app())
    async with serve_a2a_agent(push=True) as agent:
        pushed = await harness.target({"type": "a2a", "url": agent.url, "push": True})
        listening = await harness.target(listen_config(rest_url), session="chat-1")
        assert pushed.push.url == listening.listener.url + "/"
        heard = await harness.say(listening, "hello")
        answered = await turn(pushed, "slow one")
        async with httpx.AsyncClient() as http:
            forged = await http.post(
                pushed.push.url, json={"task": {"id": "x"}}, headers={"X-A2A-Notification-Token": "forged"}
            )
    assert heard[-1].text == "HELLO" and answered[-1].text == "done: slow one"
    assert forged.status_code == 401 and pushed.push.queue.empty() and listening.listener.queue.empty()


@pytest.mark.unit
def test_doctor_reports_the_installed_a2a_sdk() -> None:
    from importlib.metadata import version

    from tamesu.commands.doctor import checks

    rows = {(r.part, r.name): r for r in checks()}
    assert rows["a2a", "a2a-sdk"].ok and rows["a2a", "a2a-sdk"].found == version("a2a-sdk")
    assert rows["extra", "a2a"].ok and "remote_agents" in rows["extra", "a2a"].enables
