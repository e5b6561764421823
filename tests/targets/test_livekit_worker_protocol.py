"""The loopback server's ``/agent`` websocket against workers that misbehave, spoken byte by byte.

Each worker here is a plain websocket client sending ``livekit.protocol.agent`` messages, so it can
do what a broken worker does: send garbage, register twice, never answer. The caller is the
livekit target with the real SDK, so what it reports is what a run would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

pytest.importorskip("livekit.rtc")
pytest.importorskip("aiortc")

from aiohttp import ClientSession, ClientWebSocketResponse, WSServerHandshakeError
from livekit import api
from livekit.protocol import agent as agent_pb

from tamesu.errors import TargetError
from tamesu.testing.livekit_server import LivekitServer

from ..voice.peers import Calls, calls
from .livekit_worker import keys, room, server

__all__ = ["calls", "server"]

pytestmark = [pytest.mark.integration]


def worker_token(server: LivekitServer, *, agent: bool = True) -> str:
    return (
        api.AccessToken(server.api_key, server.api_secret).with_grants(api.VideoGrants(agent=agent)).to_jwt()
    )


async def connect(
    http: ClientSession, server: LivekitServer, token: str | None = None
) -> ClientWebSocketResponse:
    return await http.ws_connect(
        server.url + "/agent", headers={"Authorization": f"Bearer {token or worker_token(server)}"}
    )


async def register(ws: ClientWebSocketResponse, agent_name: str = "") -> agent_pb.RegisterWorkerResponse:
    await ws.send_bytes(
        agent_pb.WorkerMessage(
            register=agent_pb.RegisterWorkerRequest(agent_name=agent_name)
        ).SerializeToString()
    )
    reply = agent_pb.ServerMessage()
    reply.ParseFromString(await ws.receive_bytes(timeout=10))
    assert reply.WhichOneof("message") == "register"
    return reply.register


async def next_message(ws: ClientWebSocketResponse) -> agent_pb.ServerMessage:
    message = agent_pb.ServerMessage()
    message.ParseFromString(await ws.receive_bytes(timeout=20))
    return message


def changed(server: LivekitServer, done: Callable[[], bool]) -> asyncio.Event:
    """An event set once ``done()`` holds after one of the server's worker or job changes."""
    event = asyncio.Event()

    def check() -> None:
        if done():
            event.set()

    server.workers.on_change = check
    return event


async def test_a_token_without_the_agent_grant_is_refused(server: LivekitServer) -> None:
    async with ClientSession() as http:
        with pytest.raises(WSServerHandshakeError) as err:
            await connect(http, server, worker_token(server, agent=False))
    assert err.value.status == 401
    assert server.workers.workers == {}


async def test_a_worker_registers_and_its_pings_are_answered(server: LivekitServer) -> None:
    async with ClientSession() as http:
        ws = await connect(http, server)
        registered = await register(ws, "returns-agent")
        assert registered.worker_id.startswith("AW_") and registered.server_info.protocol > 0
        assert [w.agent_name for w in server.workers.workers.values()] == ["returns-agent"]
        await ws.send_bytes(
            agent_pb.WorkerMessage(ping=agent_pb.WorkerPing(timestamp=1234)).SerializeToString()
        )
        pong = await next_message(ws)
        assert pong.pong.last_timestamp == 1234 and pong.pong.timestamp > 0
        await ws.close()
    assert server.problems == []


async def test_a_malformed_message_closes_the_worker_and_is_reported_with_its_id(
    server: LivekitServer,
) -> None:
    async with ClientSession() as http:
        ws = await connect(http, server)
        worker_id = (await register(ws)).worker_id
        gone = changed(server, lambda: not server.workers.workers)
        await ws.send_bytes(b"\xff\xff\xff not a protobuf")
        closed = await ws.receive(timeout=10)
        assert closed.type.name in ("CLOSE", "CLOSED", "CLOSING")
        await asyncio.wait_for(gone.wait(), 10)
    assert server.problems and worker_id in server.problems[0] and "unreadable message" in server.problems[0]
    assert server.workers.workers == {}


async def test_a_worker_that_registers_twice_is_closed_and_reported(server: LivekitServer) -> None:
    async with ClientSession() as http:
        ws = await connect(http, server)
        worker_id = (await register(ws)).worker_id
        gone = changed(server, lambda: not server.workers.workers)
        await ws.send_bytes(
            agent_pb.WorkerMessage(register=agent_pb.RegisterWorkerRequest()).SerializeToString()
        )
        closed = await ws.receive(timeout=10)
        assert closed.type.name in ("CLOSE", "CLOSED", "CLOSING")
        await asyncio.wait_for(gone.wait(), 10)
    assert [p for p in server.problems if worker_id in p and "registered twice" in p]


async def test_a_first_message_that_is_not_a_registration_is_refused(server: LivekitServer) -> None:
    async with ClientSession() as http:
        ws = await connect(http, server)
        await ws.send_bytes(agent_pb.WorkerMessage(ping=agent_pb.WorkerPing(timestamp=1)).SerializeToString())
        closed = await ws.receive(timeout=10)
        assert closed.type.name in ("CLOSE", "CLOSED", "CLOSING")
    assert server.problems == ["a worker connection's first message was ping, not register"]


async def test_a_named_job_goes_to_a_worker_that_accepts_with_a_room_token(server: LivekitServer) -> None:
    async with ClientSession() as http:
        ws = await connect(http, server)
        worker_id = (await register(ws, "returns-agent")).worker_id
        server.room("auto-room")  # a named worker is not dispatched into new rooms
        dispatch = server.dispatch("returns-agent", "named-room", metadata='{"order": 1}')
        request = await next_message(ws)
        job = request.availability.job
        assert (
            job.room.name == "named-room"
            and job.agent_name == "returns-agent"
            and job.metadata == '{"order": 1}'
        )
        answer = agent_pb.AvailabilityResponse(
            job_id=job.id, available=True, participant_identity="agent-x", participant_attributes={"k": "v"}
        )
        await ws.send_bytes(agent_pb.WorkerMessage(availability=answer).SerializeToString())
        assignment = (await next_message(ws)).assignment
        claims = server.verify(assignment.token)
        assert assignment.job.id == job.id and assignment.url == server.url
        assert claims.identity == "agent-x" and claims.kind == "agent" and claims.attributes == {"k": "v"}
        assert claims.video is not None and claims.video.room == "named-room" and claims.video.room_join
        [state] = [j.state for j in dispatch.state.jobs]
        assert state.status == agent_pb.JS_RUNNING and state.worker_id == worker_id
        await server.close_room("named-room")
        assert (await next_message(ws)).termination.job_id == job.id, "the room closed: the job is ended"
        ended = changed(server, lambda: dispatch.state.jobs[0].state.status == agent_pb.JS_SUCCESS)
        update = agent_pb.UpdateJobStatus(job_id=job.id, status=agent_pb.JS_SUCCESS)
        await ws.send_bytes(agent_pb.WorkerMessage(update_job=update).SerializeToString())
        await asyncio.wait_for(ended.wait(), 10)
        await ws.close()
    assert "auto-room" not in server.dispatches


async def test_a_worker_that_never_answers_is_passed_over_and_the_caller_is_told(
    server: LivekitServer, calls: Calls
) -> None:
    server.workers.availability_timeout = 0.5
    async with ClientSession() as http:
        ws = await connect(http, server)
        worker_id = (await register(ws)).worker_id
        with pytest.raises(TargetError) as err:
            await calls.target(room(server, join_timeout="3s"), secrets=keys(server))
        await ws.close()
    message = str(err.value)
    assert "no agent (kind agent) joined room" in message
    assert (
        f"worker {worker_id} (automatic dispatch) did not answer the availability request within 0.5s"
        in message
    )
    assert err.value.retryable


async def test_a_dispatch_waits_for_a_worker_that_registers_later(server: LivekitServer) -> None:
    dispatch = server.dispatch("late-agent", "early-room")
    assert dispatch.state.jobs == [] and server.workers.waiting == [dispatch]
    async with ClientSession() as http:
        ws = await connect(http, server)
        await register(ws, "late-agent")
        request = await next_message(ws)
        assert request.availability.job.room.name == "early-room"
        failed = changed(server, lambda: dispatch.state.jobs[0].state.status == agent_pb.JS_FAILED)
        await ws.send_bytes(
            agent_pb.WorkerMessage(
                availability=agent_pb.AvailabilityResponse(
                    job_id=request.availability.job.id, available=False
                )
            ).SerializeToString()
        )
        await asyncio.wait_for(failed.wait(), 10)
        await ws.close()
    [job] = dispatch.state.jobs
    assert "no worker took the job" in job.state.error and "declined the job" in job.state.error


async def test_a_full_worker_is_passed_over_and_one_worker_takes_several_jobs(server: LivekitServer) -> None:
    async with ClientSession() as http:
        full, free = await connect(http, server), await connect(http, server)
        full_id = (await register(full)).worker_id
        await register(free)
        marked = changed(server, lambda: server.workers.workers[full_id].status == agent_pb.WS_FULL)
        status = agent_pb.UpdateWorkerStatus(status=agent_pb.WS_FULL, load=1.0)
        await full.send_bytes(agent_pb.WorkerMessage(update_worker=status).SerializeToString())
        await asyncio.wait_for(marked.wait(), 10)
        first, second = server.dispatch("", "room-1"), server.dispatch("", "room-2")
        asked = [(await next_message(free)).availability.job for _ in range(2)]
        assert sorted(job.room.name for job in asked) == ["room-1", "room-2"]
        for job in asked:
            answer = agent_pb.AvailabilityResponse(job_id=job.id, available=True)
            await free.send_bytes(agent_pb.WorkerMessage(availability=answer).SerializeToString())
        assigned = [(await next_message(free)).assignment for _ in range(2)]
        assert {a.job.id for a in assigned} == {job.id for job in asked}
        assert {server.verify(a.token).identity for a in assigned} == {f"agent-{job.id}" for job in asked}
        await full.close()
        await free.close()
    assert [j.state.worker_id for d in (first, second) for j in d.state.jobs] != []
    assert all(j.state.worker_id != full_id for d in (first, second) for j in d.state.jobs)
