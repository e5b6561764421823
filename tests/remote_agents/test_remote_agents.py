"""Remote agents tamesu serves, spoken to by the a2a target (and plain HTTP) on loopback."""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
import pytest

from tamesu.errors import TargetError
from tamesu.kernel.events import RemoteMessage
from tamesu.kernel.messages import AgentTurn, RawResponse, UserTurn
from tamesu.limits import Limits
from tamesu.testing.a2a_agent import serve_a2a_agent

pytestmark = pytest.mark.integration

SCRIPT = {
    "name": "Billing",
    "skills": ["refund", {"id": "invoice-lookup", "name": "Invoice lookup", "tags": ["billing"]}],
    "replies": [
        {"when": "(?i)cancel", "say": "Which order should I cancel?", "state": "input-required"},
        {"when": r"ORD-\d+", "say": "Order cancelled", "data": {"reference": "C-1"}},
        {"when": "(?i)broken", "say": "cannot help with that", "state": "failed"},
    ],
    "reply": "I can help with cancellations.",
}


async def say(adapter, text: str, **parts) -> list:
    out = [m async for m in adapter.turn(UserTurn(text=text, **parts))]
    assert isinstance(out[-1], AgentTurn)
    return out


def remote_events(transcript) -> list[tuple[str, str, str | None]]:
    return [(e.direction, e.text, e.state) for e in transcript.events if isinstance(e, RemoteMessage)]


async def test_scripted_replies_answer_in_order_with_state_and_data_and_are_recorded_both_ways(
    harness, serve_remote
) -> None:
    served, transcript = await serve_remote({"billing": SCRIPT})
    t = await harness.target({"type": "a2a", "url": served.urls["billing"], "skill": "invoice-lookup"})
    asked = await say(t, "please cancel something")
    done = await say(t, "it is ORD-12")
    other = await say(t, "hello")
    assert [asked[-1].text, done[-1].text, other[-1].text] == [
        "Which order should I cancel?",
        "Order cancelled",
        "I can help with cancellations.",
    ]
    task = next(m.body for m in done if isinstance(m, RawResponse))
    assert task["artifacts"][0]["parts"][1] == {"data": {"reference": "C-1"}}
    assert t.conn.card.name == "Billing" and [s.id for s in t.conn.card.skills] == [
        "refund",
        "invoice-lookup",
    ]
    assert remote_events(transcript) == [
        ("received", "please cancel something", None),
        ("replied", "Which order should I cancel?", "input-required"),
        ("received", "it is ORD-12", None),
        ("replied", "Order cancelled", "completed"),
        ("received", "hello", None),
        ("replied", "I can help with cancellations.", "completed"),
    ]
    assert transcript.events[3].data == [{"reference": "C-1"}]
    with pytest.raises(TargetError, match="the agent's task ended failed: cannot help with that"):
        await say(t, "it is broken")


async def test_a_message_no_entry_matches_fails_when_there_is_no_reply(harness, serve_remote) -> None:
    served, _ = await serve_remote({"billing": {"replies": [{"when": "refund", "say": "done"}]}})
    t = await harness.target({"type": "a2a", "url": served.urls["billing"]})
    with pytest.raises(TargetError, match="no scripted reply matches this message"):
        await say(t, "hello")


async def test_a_token_guards_every_request_but_the_public_card(harness, serve_remote) -> None:
    served, transcript = await serve_remote(
        {"billing": {**SCRIPT, "token": "{{secrets.BILLING}}"}}, secrets={"BILLING": "tok-123"}
    )
    url = served.urls["billing"]
    async with httpx.AsyncClient() as http:
        card = (await http.get(url + ".well-known/agent-card.json")).json()
        refused = await http.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        )
        rest = await http.get(url + "rest/tasks/x")
    assert card["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert rest.status_code == 401
    t = await harness.target({"type": "a2a", "url": url})
    with pytest.raises(TargetError, match="401") as refused_turn:
        await say(t, "hello")
    assert refused_turn.value.retryable is False
    t = await harness.target(
        {"type": "a2a", "url": url, "headers": {"Authorization": "Bearer {{secrets.T}}"}},
        secrets={"T": "tok-123"},
    )
    assert (await say(t, "hello"))[-1].text == "I can help with cancellations."
    assert remote_events(transcript)[-2:] == [
        ("received", "hello", None),
        ("replied", "I can help with cancellations.", "completed"),
    ]


async def test_the_extended_card_adds_skills_for_callers_with_credentials(harness, serve_remote) -> None:
    extended = {"skills": ["invoice-export"], "description": "Refunds, invoices and exports for partners"}
    served, _ = await serve_remote({"billing": {**SCRIPT, "extended": extended}})
    url = served.urls["billing"]
    with pytest.raises(TargetError, match="no skill 'invoice-export'"):
        await harness.target({"type": "a2a", "url": url, "skill": "invoice-export"})
    t = await harness.target(
        {"type": "a2a", "url": url, "skill": "invoice-export", "headers": {"Authorization": "Bearer partner"}}
    )
    assert t.conn.card.description == "Refunds, invoices and exports for partners"
    assert [s.id for s in t.conn.card.skills] == ["refund", "invoice-lookup", "invoice-export"]


async def test_forward_is_a_recording_proxy_in_front_of_a_real_agent(harness, serve_remote) -> None:
    async with serve_a2a_agent() as real:
        served, transcript = await serve_remote(
            {"billing": {"forward": real.url, "headers": {"X-Api-Key": "{{secrets.KEY}}"}}},
            secrets={"KEY": "k-9"},
        )
        t = await harness.target({"type": "a2a", "url": served.urls["billing"], "stream": True})
        echoed = await say(t, "hello there", data={"order": "ORD-1"})
        asked = await say(t, "ask me")
        answered = await say(t, "ORD-7")
    assert echoed[-1].text == "echo: hello there"
    assert [asked[-1].text, answered[-1].text] == ["Which order?", "Order ORD-7 is on its way"]
    assert real.headers[-1]["x-api-key"] == "k-9"
    assert real.messages[2].task_id == real.messages[1].task_id != ""
    events = [e for e in transcript.events if isinstance(e, RemoteMessage)]
    assert [(e.direction, e.text) for e in events] == [
        ("received", "hello there"),
        ("replied", "echo: hello there"),
        ("received", "ask me"),
        ("replied", "Which order?"),
        ("received", "ORD-7"),
        ("replied", "Order ORD-7 is on its way"),
    ]
    assert events[0].data == [{"order": "ORD-1"}] and events[1].data == [{"echo": {"order": "ORD-1"}}]


def _free_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


async def test_an_agent_with_a_fixed_address_answers_at_its_root_one_run_at_a_time(
    harness, serve_remote
) -> None:
    addr = _free_addr()
    first, _ = await serve_remote({"billing": {**SCRIPT, "addr": addr}})
    assert first.urls["billing"] == f"http://{addr}/"
    second = asyncio.create_task(serve_remote({"billing": {"reply": "second run", "addr": addr}}))
    t = await harness.target({"type": "a2a", "url": f"http://{addr}"})
    assert (await say(t, "hello"))[-1].text == "I can help with cancellations."
    assert not second.done()
    await first.close()
    _, transcript = await second
    t = await harness.target({"type": "a2a", "url": f"http://{addr}"})
    assert (await say(t, "hello"))[-1].text == "second run"
    assert remote_events(transcript) == [("received", "hello", None), ("replied", "second run", "completed")]


async def test_what_the_agent_under_test_sends_is_bounded(serve_remote) -> None:
    served, transcript = await serve_remote(
        {"billing": SCRIPT}, limits=Limits(answer_size=2_000, json_depth=8)
    )
    url = served.urls["billing"]
    async with httpx.AsyncClient() as http:
        big = await http.post(url, content=b"x" * 5_000)
        deep = await http.post(url, content=json.dumps({"a": [[[[[[[[[[1]]]]]]]]]]}))
    assert (big.status_code, deep.status_code) == (413, 400)
    assert remote_events(transcript) == []


async def test_servers_stop_when_their_last_run_leaves(serve_remote) -> None:
    served, _ = await serve_remote({"billing": SCRIPT})
    url = served.urls["billing"]
    async with httpx.AsyncClient() as http:
        assert (await http.get(url + ".well-known/agent-card.json")).status_code == 200
        await served.close()
    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(url + ".well-known/agent-card.json")


async def test_a_real_agent_that_cannot_be_reached_is_a_failed_task_and_is_recorded(
    harness, serve_remote, closed_port: int
) -> None:
    served, transcript = await serve_remote({"billing": {"forward": f"http://127.0.0.1:{closed_port}/"}})
    t = await harness.target({"type": "a2a", "url": served.urls["billing"]})
    with pytest.raises(TargetError, match="the agent's task ended failed: forwarding failed"):
        await say(t, "hello")
    (received, replied) = [e for e in transcript.events if isinstance(e, RemoteMessage)]
    assert received.text == "hello"
    assert replied.state == "failed" and replied.text.startswith("forwarding failed: ")


async def test_the_grpc_interface_answers_records_and_wants_the_token(harness, serve_remote) -> None:
    served, transcript = await serve_remote(
        {"billing": {**SCRIPT, "token": "{{secrets.BILLING}}"}}, secrets={"BILLING": "tok-123"}
    )
    url = served.urls["billing"]
    refused = await harness.target({"type": "a2a", "url": url, "transport": "grpc"})
    with pytest.raises(TargetError, match=r"UNAUTHENTICATED|this agent wants a bearer token"):
        await say(refused, "hello")
    auth = {"Authorization": "Bearer {{secrets.T}}"}
    t = await harness.target(
        {"type": "a2a", "url": url, "transport": "grpc", "headers": auth}, secrets={"T": "tok-123"}
    )
    assert t.conn.transport == "grpc"
    asked = await say(t, "please cancel something")
    done = await say(t, "it is ORD-12")
    assert [asked[-1].text, done[-1].text] == ["Which order should I cancel?", "Order cancelled"]
    assert remote_events(transcript) == [
        ("received", "please cancel something", None),
        ("replied", "Which order should I cancel?", "input-required"),
        ("received", "it is ORD-12", None),
        ("replied", "Order cancelled", "completed"),
    ]
    grpc_url = served.urls["billing"]
    card = json.loads((await harness.http.get(grpc_url + ".well-known/agent-card.json")).text)
    [grpc_interface] = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert grpc_interface["url"].startswith("127.0.0.1:")


async def test_the_extended_card_over_grpc_goes_only_to_callers_with_credentials(
    harness, serve_remote
) -> None:
    extended = {"skills": ["invoice-export"], "description": "Refunds, invoices and exports for partners"}
    served, _ = await serve_remote({"billing": {**SCRIPT, "extended": extended}})
    url = served.urls["billing"]
    t = await harness.target(
        {"type": "a2a", "url": url, "transport": "grpc", "skill": "invoice-export",
         "headers": {"Authorization": "Bearer partner"}}
    )  # fmt: skip
    assert [s.id for s in t.conn.card.skills] == ["refund", "invoice-lookup", "invoice-export"]
    assert (await say(t, "hello"))[-1].text == "I can help with cancellations."


@pytest.mark.parametrize("transport", ["jsonrpc", "grpc"])
async def test_a_caller_that_asks_for_push_gets_the_answer_pushed(harness, serve_remote, transport) -> None:
    served, transcript = await serve_remote({"billing": SCRIPT})
    t = await harness.target(
        {"type": "a2a", "url": served.urls["billing"], "transport": transport, "push": True}
    )
    pushed, read = [], t.push.next

    async def next_pushed():
        pushed.append(await read())
        return pushed[-1]

    t.push.next = next_pushed
    asked = await say(t, "please cancel something")
    done = await say(t, "it is ORD-12")
    assert [asked[-1].text, done[-1].text] == ["Which order should I cancel?", "Order cancelled"]
    assert pushed, "no notification was pushed"
    assert remote_events(transcript)[-1] == ("replied", "Order cancelled", "completed")
