"""A scripted A2A agent to test against, on the a2a-sdk's own server classes, in all three transports.

    async with serve_a2a_agent() as agent:       # agent.url: http://127.0.0.1:PORT/ (card, JSON-RPC)
        ...                                      # agent.rest_url, agent.grpc_url (host:port)

What it answers, by the words of the message (first match wins):

- ``ask`` -> input-required "Which order?"; the next message on that task completes it with
  "Order <words> is on its way";
- ``fail`` -> the task fails with "cannot do that"; ``auth`` -> auth-required;
- ``slow`` -> a working update, then the answer (so polling, streams and pushes see the task at work);
- ``drop`` -> a working update, then the answer only once someone resubscribed to the task (the
  server cuts the first ``drop_streams`` streams after their first event, in every transport);
- ``big`` -> an artifact of ``big`` characters;
- ``delegate`` -> passes the words to the A2A agent whose URL is the message's ``metadata.delegate``
  (else the one ``POST /admin/delegate {"url": ...}`` set, as a hook configures an agent) and
  answers "<name> says: <its answer>";
- anything else -> "echo: <words>" with the data parts echoed back as a data part, the files as
  "files: name (mime, N bytes)" and the metadata as "metadata: {...}".

Every message is kept in ``agent.messages`` and every request's headers in ``agent.headers``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, Task, TaskState, TaskStatus

from tamesu.targets.a2a.a2a_parts import data_part, message_data, message_files, message_text

__all__ = ["A2AAgent", "serve_a2a_agent"]


class _Scripted(AgentExecutor):
    def __init__(self, agent: A2AAgent) -> None:
        self.agent = agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        msg = context.message
        self.agent.messages.append(msg)
        if context.current_task is None:
            status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(
                Task(id=context.task_id, context_id=context.context_id, status=status, history=[msg])
            )
        task = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        words = message_text(msg)
        say = task.new_agent_message
        if (
            context.current_task is not None
            and context.current_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        ):
            await task.add_artifact([Part(text=f"Order {words} is on its way")], name="answer")
            await task.complete()
        elif "ask" in words:
            await task.requires_input(say([Part(text="Which order?")]))
        elif "fail" in words:
            await task.failed(say([Part(text="cannot do that")]))
        elif "auth" in words:
            await task.requires_auth(say([Part(text="sign in first")]))
        elif "slow" in words or "drop" in words:
            await task.start_work(say([Part(text="working on it")]))
            if "drop" in words:
                await self.agent.resubscribed.wait()
            await task.add_artifact([Part(text=f"done: {words}")], name="answer")
            await task.complete()
        elif "big" in words:
            await task.add_artifact([Part(text="x" * self.agent.big)], name="answer")
            await task.complete()
        elif "delegate" in words:
            url = str(dict(msg.metadata).get("delegate") or self.agent.delegate)
            answer = await _delegate(url, words, context.context_id or "")
            await task.add_artifact([Part(text=answer)], name="answer")
            await task.complete()
        else:
            await task.add_artifact(_echo(msg), name="answer")
            await task.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def _echo(msg: Message) -> list[Part]:
    lines = [f"echo: {message_text(msg)}"]
    files = message_files(msg)
    if files:
        lines.append(
            "files: "
            + ", ".join(f"{f['name']} ({f['mime']}, {f.get('bytes', f.get('uri'))} bytes)" for f in files)
        )
    if msg.metadata:
        lines.append("metadata: " + json.dumps(dict(msg.metadata), sort_keys=True))
    parts = [Part(text="\n".join(lines))]
    parts += [data_part({"echo": d}) for d in message_data(msg)]
    return parts


async def _delegate(url: str, words: str, context_id: str = "") -> str:
    """Ask the agent at ``url`` (its card's first interface), in the conversation's context, and
    return its name and answer."""
    import uuid

    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, create_client
    from a2a.types.a2a_pb2 import Role, SendMessageRequest

    from tamesu.targets.a2a.a2a_parts import Answer

    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = await create_client(card, client_config=ClientConfig(httpx_client=http, streaming=False))
        message = Message(
            role=Role.ROLE_USER, message_id=uuid.uuid4().hex, context_id=context_id, parts=[Part(text=words)]
        )
        answer = Answer()
        async for event in client.send_message(SendMessageRequest(message=message)):
            answer.add(event)
        await client.close()
    return f"{card.name} says: {answer.text()}"


@dataclass
class A2AAgent:
    """A running scripted agent: where it listens and what it was sent."""

    url: str = ""
    rest_url: str = ""
    grpc_url: str = ""
    big: int = 10_000
    messages: list[Message] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    resubscribed: asyncio.Event = field(default_factory=asyncio.Event)
    drops: int = 0
    """Streams the server still has to cut after their first event."""
    delegate: str = ""
    """Where ``delegate`` goes without ``metadata.delegate``; set by ``POST /admin/delegate``."""
    admin: list[dict[str, Any]] = field(default_factory=list)
    """Every body posted to ``/admin/delegate``."""

    def card_url(self) -> str:
        return self.url + ".well-known/agent-card.json"


def _middleware(app: Any, agent: A2AAgent) -> Any:
    """Records headers, notices resubscriptions, and cuts the first ``drops`` streams."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        agent.headers.append({k.decode(): v.decode() for k, v in scope.get("headers", [])})
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if scope["path"] == "/admin/delegate":
            posted = json.loads(body or b"{}")
            agent.admin.append(posted)
            agent.delegate = str(posted.get("url") or "")
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if b"SubscribeToTask" in body or scope["path"].endswith(":subscribe"):
            agent.resubscribed.set()
        cut = agent.drops > 0 and (
            b"SendStreamingMessage" in body or scope["path"].endswith("message:stream")
        )
        if cut:
            agent.drops -= 1
        sent_events = 0

        async def guarded_send(message: dict[str, Any]) -> None:
            nonlocal sent_events
            if cut and message["type"] == "http.response.body" and message.get("body"):
                sent_events += 1
                if sent_events > 1:
                    raise ConnectionAbortedError("the test agent cut the stream")
            await send(message)

        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await app(scope, replay, guarded_send)

    return wrapped


def _grpc_cutter(agent: A2AAgent) -> Any:
    """The gRPC twin of ``_middleware``'s stream cutting: a server interceptor that notices
    SubscribeToTask and ends the first ``drops`` SendStreamingMessage calls with UNAVAILABLE after
    their first event."""
    import grpc

    class Cutter(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        async def intercept_service(self, continuation: Any, details: Any) -> Any:
            handler = await continuation(details)
            method = details.method.rsplit("/", 1)[-1]
            if method == "SubscribeToTask":
                agent.resubscribed.set()
            if method != "SendStreamingMessage" or handler is None or agent.drops <= 0:
                return handler
            agent.drops -= 1
            inner = handler.unary_stream

            async def cut(request: Any, context: Any) -> AsyncIterator[Any]:
                async for event in inner(request, context):
                    yield event
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "the test agent cut the stream")

            return grpc.unary_stream_rpc_method_handler(
                cut,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )

    return Cutter()


@asynccontextmanager
async def serve_a2a_agent(
    *,
    name: str = "Scripted agent",
    skills: tuple[str, ...] = ("echo",),
    extended_skills: tuple[str, ...] = (),
    streaming: bool = True,
    push: bool = False,
    grpc_transport: bool = True,
    preferred: str = "JSONRPC",
    drop_streams: int = 0,
    big: int = 10_000,
) -> AsyncIterator[A2AAgent]:
    """Serve the scripted agent on loopback: JSON-RPC at ``/``, HTTP+JSON under ``/rest``, gRPC on a
    port of its own; the card lists ``preferred`` first. With ``extended_skills`` the agent has an
    extended card that adds them; with ``push`` it sends push notifications."""
    import grpc
    import httpx
    import uvicorn
    from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
    from a2a.server.tasks import (
        BasePushNotificationSender,
        InMemoryPushNotificationConfigStore,
        InMemoryTaskStore,
    )
    from a2a.types import a2a_pb2_grpc
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette

    agent = A2AAgent(big=big, drops=drop_streams)
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    agent.url, agent.rest_url = f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/rest"
    grpc_server = grpc.aio.server(interceptors=[_grpc_cutter(agent)]) if grpc_transport else None
    if grpc_server is not None:
        agent.grpc_url = f"127.0.0.1:{grpc_server.add_insecure_port('127.0.0.1:0')}"
    interfaces = [
        AgentInterface(protocol_binding="JSONRPC", url=agent.url, protocol_version="1.0"),
        AgentInterface(protocol_binding="HTTP+JSON", url=agent.rest_url, protocol_version="1.0"),
    ]
    if grpc_server is not None:
        interfaces.append(AgentInterface(protocol_binding="GRPC", url=agent.grpc_url, protocol_version="1.0"))
    interfaces.sort(key=lambda i: i.protocol_binding != preferred)

    def skill(skill_id: str) -> AgentSkill:
        return AgentSkill(id=skill_id, name=skill_id.title(), description=skill_id, tags=[skill_id])

    card = AgentCard(
        name=name,
        description="A scripted agent for tests",
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=streaming, push_notifications=push, extended_agent_card=bool(extended_skills)
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[skill(s) for s in skills],
        supported_interfaces=interfaces,
    )
    extended = None
    if extended_skills:
        extended = AgentCard()
        extended.CopyFrom(card)
        extended.skills.extend(skill(s) for s in extended_skills)
    push_http = httpx.AsyncClient() if push else None
    store = InMemoryPushNotificationConfigStore() if push else None
    handler = DefaultRequestHandler(
        agent_executor=_Scripted(agent),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        extended_agent_card=extended,
        push_config_store=store,
        push_sender=BasePushNotificationSender(push_http, store) if push_http and store else None,
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/"),
            *create_rest_routes(handler, path_prefix="/rest"),
        ]
    )
    config = uvicorn.Config(_middleware(app, agent), lifespan="off", log_level="critical")
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    if grpc_server is not None:
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
        await grpc_server.start()
    try:
        yield agent
    finally:
        agent.resubscribed.set()
        if grpc_server is not None:
            await grpc_server.stop(grace=None)
        server.should_exit = True
        await server.shutdown(sockets=[sock])
        if push_http is not None:
            await push_http.aclose()
