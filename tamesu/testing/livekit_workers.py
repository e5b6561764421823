"""The loopback LiveKit server's agent workers: the ``/agent`` websocket real LiveKit Agents workers use.

A worker (``livekit-agents``' ``AgentServer``, or anything speaking ``livekit.protocol.agent``)
connects with a token carrying the ``agent`` grant and registers (``RegisterWorkerRequest``, first
and once); the server answers with its id. A dispatch then goes as LiveKit sends it: an
``AvailabilityRequest`` with the job to one available worker of the dispatch's agent name (named
workers only by explicit dispatch, unnamed ones into every new room), and on ``available`` a
``JobAssignment`` with a token for the room, minted with the identity, name, metadata and
attributes the worker answered, of kind agent. A worker that refuses, or does not answer within
``AVAILABILITY_TIMEOUT``, is passed over for the next; a dispatch no worker takes waits for one
to register. Worker status updates (full, load) and job status updates are kept; pings are
answered; a room that closes terminates its jobs (``JobTermination``).

What a worker did wrong stays in the job's state as LiveKit keeps it (``ListDispatch`` shows
``state.jobs`` with their status and error) and in ``server.problems``, each naming the worker:
a message that does not parse, a second registration or a first message that is not one (the
connection is closed), an availability request left unanswered, a disconnection with jobs still
running (they fail). Every message is bounded (``MAX_MESSAGE_BYTES``), as are the workers
(``MAX_WORKERS``) and the jobs of each (``MAX_JOBS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web
from livekit.protocol import agent as agent_pb
from livekit.protocol import agent_dispatch, models

from .livekit_room import sid

if TYPE_CHECKING:
    from .livekit_server import LivekitServer

__all__ = ["AVAILABILITY_TIMEOUT", "Worker", "Workers"]

MAX_MESSAGE_BYTES = 1 << 20
"""The largest worker message the server reads."""
MAX_WORKERS = 64
"""Workers one loopback server takes; more are refused."""
MAX_JOBS = 256
"""Jobs one worker may hold at once; a dispatch beyond it goes to another worker or waits."""
AVAILABILITY_TIMEOUT = 10.0
"""Seconds a worker has to answer an availability request before it is passed over."""
REGISTER_TIMEOUT = 10.0
"""Seconds a connection has to send its registration."""
ENDED = (agent_pb.JS_SUCCESS, agent_pb.JS_FAILED)


@dataclass
class Worker:
    """One registered worker: its connection, what it said of itself, and its jobs."""

    id: str
    agent_name: str
    namespace: str
    version: str
    ws: web.WebSocketResponse
    permissions: models.ParticipantPermission
    status: int = agent_pb.WS_AVAILABLE
    load: float = 0.0
    jobs: dict[str, agent_pb.Job] = field(default_factory=dict)
    answers: dict[str, asyncio.Future[agent_pb.AvailabilityResponse]] = field(default_factory=dict)
    sending: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __str__(self) -> str:
        return f"worker {self.id} ({f'agent {self.agent_name}' if self.agent_name else 'automatic dispatch'})"

    @property
    def available(self) -> bool:
        running = sum(1 for job in self.jobs.values() if job.state.status not in ENDED)
        return self.status == agent_pb.WS_AVAILABLE and running < MAX_JOBS and not self.ws.closed

    async def send(self, message: agent_pb.ServerMessage) -> None:
        async with self.sending:
            if not self.ws.closed:
                await self.ws.send_bytes(message.SerializeToString())


class Workers:
    """The workers of one loopback server and the dispatches waiting for them."""

    def __init__(self, server: LivekitServer) -> None:
        self.server = server
        self.workers: dict[str, Worker] = {}
        self.waiting: list[agent_dispatch.AgentDispatch] = []
        """Dispatches no worker has taken yet, in order."""
        self.on_change: Callable[[], None] | None = None
        self.availability_timeout = AVAILABILITY_TIMEOUT
        self._tasks: set[asyncio.Task[None]] = set()

    def named(self, agent_name: str) -> bool:
        """Whether a worker for ``agent_name`` ('' for automatic dispatch) is registered."""
        return any(w.agent_name == agent_name for w in self.workers.values())

    def problem(self, text: str) -> None:
        self.server.problems.append(text)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # The websocket.

    async def serve(self, request: web.Request) -> web.StreamResponse:
        """``GET /agent``: one worker's connection, from its registration to its close."""
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or request.query.get(
            "access_token", ""
        )
        try:
            claims = self.server.verify(token)
        except Exception:
            raise web.HTTPUnauthorized(text="invalid token") from None
        if claims.video is None or not claims.video.agent:
            raise web.HTTPUnauthorized(text="the token lacks the agent grant")
        if len(self.workers) >= MAX_WORKERS:
            raise web.HTTPServiceUnavailable(text=f"the server takes {MAX_WORKERS} workers")
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES, heartbeat=None)
        await ws.prepare(request)
        worker = await self._register(ws)
        if worker is None:
            await ws.close()
            return ws
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY and await self._message(worker, msg.data):
                    continue
                if msg.type == WSMsgType.TEXT:
                    self.problem(f"{worker} sent a text message, not a protobuf")
                if msg.type in (WSMsgType.BINARY, WSMsgType.TEXT):
                    await ws.close(code=1003, message=b"unreadable message")
                    break
        finally:
            self._gone(worker)
        return ws

    async def _register(self, ws: web.WebSocketResponse) -> Worker | None:
        try:
            first = await ws.receive(timeout=REGISTER_TIMEOUT)
        except asyncio.TimeoutError:
            self.problem(f"a worker connection sent no registration within {REGISTER_TIMEOUT:g}s")
            return None
        message = agent_pb.WorkerMessage()
        try:
            message.ParseFromString(first.data if first.type == WSMsgType.BINARY else b"\xff")
        except Exception:
            self.problem("a worker connection sent an unreadable first message")
            return None
        if message.WhichOneof("message") != "register":
            self.problem(
                f"a worker connection's first message was {message.WhichOneof('message')}, not register"
            )
            return None
        register = message.register
        worker = Worker(
            id=sid("AW"),
            agent_name=register.agent_name,
            namespace=register.namespace,
            version=register.version,
            ws=ws,
            permissions=register.allowed_permissions,
        )
        info = models.ServerInfo(edition=models.ServerInfo.Standard, version="1.9.0", protocol=16)
        await worker.send(
            agent_pb.ServerMessage(
                register=agent_pb.RegisterWorkerResponse(worker_id=worker.id, server_info=info)
            )
        )
        self.workers[worker.id] = worker
        self._changed()
        for dispatch in list(self.waiting):
            if dispatch.agent_name == worker.agent_name:
                self.waiting.remove(dispatch)
                self._spawn(self.assign(dispatch))
        if not worker.agent_name:  # a worker started after its first rooms still gets them
            for room in self.server.rooms_without_agents():
                self.server.dispatch("", room)
        return worker

    async def _message(self, worker: Worker, data: bytes) -> bool:
        """Handle one message; False when it cannot be read (the connection is then closed)."""
        message = agent_pb.WorkerMessage()
        try:
            message.ParseFromString(data)
        except Exception:
            self.problem(f"{worker} sent an unreadable message ({len(data)} bytes)")
            return False
        kind = message.WhichOneof("message")
        if kind == "register":
            self.problem(f"{worker} registered twice on one connection")
            return False
        if kind == "availability":
            answer = message.availability
            waiting = worker.answers.pop(answer.job_id, None)
            if waiting is None or waiting.done():
                self.problem(
                    f"{worker} answered availability for job {answer.job_id}, which it was not asked"
                )
            else:
                waiting.set_result(answer)
        elif kind == "update_worker":
            worker.status, worker.load = message.update_worker.status, message.update_worker.load
            self._changed()
        elif kind == "update_job":
            update = message.update_job
            job = worker.jobs.get(update.job_id)
            if job is None:
                self.problem(f"{worker} updated job {update.job_id}, which is not its job")
            else:
                self._set_state(job, update.status, update.error)
        elif kind == "ping":
            now = int(time.time() * 1000)
            pong = agent_pb.WorkerPong(last_timestamp=message.ping.timestamp, timestamp=now)
            await worker.send(agent_pb.ServerMessage(pong=pong))
        return True

    def _gone(self, worker: Worker) -> None:
        """A worker's connection closed: its running jobs are lost, as LiveKit reports them."""
        self.workers.pop(worker.id, None)
        for waiting in worker.answers.values():
            if not waiting.done():
                waiting.set_exception(ConnectionError(f"{worker} disconnected before it answered"))
        for job in worker.jobs.values():
            if job.state.status not in ENDED:
                error = f"{worker} disconnected while the job ran"
                self._set_state(job, agent_pb.JS_FAILED, error)
                self.problem(f"job {job.id} in room {job.room.name}: {error}")
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # Dispatch.

    def dispatch(self, dispatch: agent_dispatch.AgentDispatch) -> None:
        """Give ``dispatch`` to a worker of its agent name, now or once one registers."""
        if not any(w.agent_name == dispatch.agent_name and w.available for w in self.workers.values()):
            self.waiting.append(dispatch)
            return
        self._spawn(self.assign(dispatch))

    async def assign(self, dispatch: agent_dispatch.AgentDispatch) -> None:
        """Offer the job to each available worker of the agent name in turn until one takes it."""
        job = dispatch.state.jobs.add()  # the dispatch's own copy: ListDispatch shows its state
        job.CopyFrom(
            agent_pb.Job(
                id=sid("AJ"),
                dispatch_id=dispatch.id,
                type=agent_pb.JT_ROOM,
                room=self.server.room(dispatch.room).info(),
                agent_name=dispatch.agent_name,
                metadata=dispatch.metadata,
                state=agent_pb.JobState(status=agent_pb.JS_PENDING, updated_at=_now_ns()),
            )
        )
        tried: set[str] = set()
        while True:
            worker = next(
                (
                    w
                    for w in self.workers.values()
                    if w.agent_name == dispatch.agent_name and w.available and w.id not in tried
                ),
                None,
            )
            if worker is None:
                if not tried:
                    self.waiting.append(dispatch)
                    dispatch.state.jobs.remove(job)
                else:
                    self._set_state(job, agent_pb.JS_FAILED, f"no worker took the job: {job.state.error}")
                return
            tried.add(worker.id)
            if await self._offer(worker, job, dispatch):
                return

    async def _offer(self, worker: Worker, job: agent_pb.Job, dispatch: agent_dispatch.AgentDispatch) -> bool:
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future[agent_pb.AvailabilityResponse] = loop.create_future()
        worker.answers[job.id] = waiting
        try:
            await worker.send(agent_pb.ServerMessage(availability=agent_pb.AvailabilityRequest(job=job)))
            answer = await asyncio.wait_for(waiting, self.availability_timeout)
        except asyncio.TimeoutError:
            error = f"{worker} did not answer the availability request within {self.availability_timeout:g}s"
            job.state.error = error
            self.problem(f"job {job.id} in room {dispatch.room}: {error}")
            return False
        except (ConnectionError, RuntimeError) as exc:
            job.state.error = str(exc) or f"{worker} disconnected before it answered"
            return False
        finally:
            worker.answers.pop(job.id, None)
        if not answer.available:
            job.state.error = f"{worker} declined the job"
            return False
        identity = answer.participant_identity or f"agent-{job.id}"
        token = self.server.token(
            identity,
            dispatch.room,
            kind="agent",
            name=answer.participant_name,
            metadata=answer.participant_metadata,
            attributes=dict(answer.participant_attributes),
            can_update_own_metadata=True,
            agent=True,
            hidden=worker.permissions.hidden,
        )
        job.state.participant_identity = identity
        job.state.worker_id = worker.id
        job.state.error = ""
        worker.jobs[job.id] = job
        self._set_state(job, agent_pb.JS_RUNNING, "")
        await worker.send(
            agent_pb.ServerMessage(
                assignment=agent_pb.JobAssignment(job=job, url=self.server.url, token=token)
            )
        )
        return True

    def _set_state(self, job: agent_pb.Job, status: int, error: str) -> None:
        now = _now_ns()
        job.state.status = status  # type: ignore[assignment]
        job.state.error = error or job.state.error
        job.state.updated_at = now
        if status == agent_pb.JS_RUNNING and not job.state.started_at:
            job.state.started_at = now
        if status in ENDED and not job.state.ended_at:
            job.state.ended_at = now
        self._changed()

    async def terminate(self, room: str) -> None:
        """The room closed: every worker ends its jobs there."""
        self.waiting = [d for d in self.waiting if d.room != room]
        for worker in list(self.workers.values()):
            for job in list(worker.jobs.values()):
                if job.room.name == room and job.state.status not in ENDED:
                    with contextlib.suppress(Exception):
                        await worker.send(
                            agent_pb.ServerMessage(termination=agent_pb.JobTermination(job_id=job.id))
                        )

    def jobs_in(self, room: str) -> list[agent_pb.Job]:
        return [j for w in self.workers.values() for j in w.jobs.values() if j.room.name == room]

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for worker in list(self.workers.values()):
            with contextlib.suppress(Exception):
                await worker.ws.close()


def _now_ns() -> int:
    return time.time_ns()
