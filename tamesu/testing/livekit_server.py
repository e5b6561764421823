"""A loopback LiveKit server, for testing LiveKit agents and the ``livekit`` target without one.

It speaks LiveKit's own signalling (``livekit-protocol``'s ``SignalRequest`` / ``SignalResponse``
over the ``/rtc`` websocket, tokens verified with the API secret) and real WebRTC media on aiortc,
enough for rooms of a few participants: join, participant updates with kinds and attributes,
audio tracks published and forwarded, data packets (user data, SIP DTMF, text and byte
streams), and the ``RoomService`` and ``AgentDispatchService`` over Twirp (``livekit_twirp``).
Agents are registered in-process: a dispatch (explicit, from the token's room configuration, or
automatic for an agent registered without a name) calls the agent's function with the room's
url and a token of kind agent, and the function joins the room with the SDK.

Audio is forwarded as an SFU forwards it: the publisher's Opus packets go to each subscriber
unchanged, as they arrive (``rtp_relay``), so the room adds no buffering of its own.

It is not a LiveKit server: one process, no TURN, no simulcast or video forwarding, no
reconnection or migration, no egress or ingress, no recording, and no codec but Opus. Its SIP
service (``livekit_sip``) places outbound calls through trunks with tamesu's own SIP user agent;
inbound SIP is not served.

    async with serve_livekit_server() as server:
        server.register_agent("support-agent", my_agent)   # async (JobRequest) -> None
        ...  # a livekit target with url: server.url, api_key / api_secret: server.api_key / api_secret
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web
from livekit import api
from livekit.protocol import agent_dispatch, models
from livekit.protocol import rtc as proto

from .livekit_peer import Peer
from .livekit_room import Member, Room, sid
from .livekit_sip import LoopbackSip
from .livekit_workers import Workers
from .rtp_relay import AudioRelay

__all__ = ["JobRequest", "LivekitServer", "serve_livekit_server"]

MAX_SIGNAL_BYTES = 1 << 20
"""The largest signalling message the server reads."""
DEPARTURE_TIMEOUT = 2.0
"""Seconds a room of worker jobs stays open once only agents are left in it (LiveKit's is 20 s)."""
PROTOCOL = 16


@dataclass(frozen=True)
class JobRequest:
    """What a dispatched agent is given: where to join and as whom."""

    room: str
    url: str
    token: str
    agent_name: str
    dispatch_id: str
    metadata: str = ""


AgentFn = Callable[[JobRequest], Awaitable[None]]


class LivekitServer:
    """The rooms, the registered agents and the dispatches of one loopback server."""

    def __init__(self, *, api_key: str = "devkey", api_secret: str | None = None) -> None:
        self.api_key = api_key
        self.api_secret = api_secret or secrets.token_urlsafe(32)
        self.rooms: dict[str, Room] = {}
        self.agents: dict[str, AgentFn] = {}
        self.dispatches: dict[str, list[agent_dispatch.AgentDispatch]] = {}
        self.url = ""
        self.problems: list[str] = []
        """What the server refused or could not read (tests assert it stays empty)."""
        self.media_probe: Callable[[str, str, Any], None] | None = None
        """Called with (room, identity, RTP packet) for every audio packet the server forwards."""
        self._jobs: set[asyncio.Task[Any]] = set()
        self.sip = LoopbackSip(self)
        """Outbound SIP trunks and the calls bridged into rooms (``livekit_sip``)."""
        self.workers = Workers(self)
        """Agent workers connected on ``/agent`` and the dispatches waiting for them (``livekit_workers``)."""
        self.departure_timeout = DEPARTURE_TIMEOUT
        self._closing: dict[str, asyncio.TimerHandle] = {}

    def register_agent(self, name: str, fn: AgentFn) -> None:
        """An agent the server dispatches: by ``name`` on request, or into every new room when ''."""
        self.agents[name] = fn

    def token(
        self,
        identity: str,
        room: str,
        *,
        kind: str = "standard",
        name: str = "",
        metadata: str = "",
        attributes: dict[str, str] | None = None,
        **grants: Any,
    ) -> str:
        """A join token for ``identity`` in ``room`` signed with this server's secret."""
        token = api.AccessToken(self.api_key, self.api_secret).with_identity(identity).with_kind(kind)  # type: ignore[arg-type]
        token = token.with_name(name).with_metadata(metadata).with_attributes(attributes or {})
        return token.with_grants(api.VideoGrants(room_join=True, room=room, **grants)).to_jwt()

    def verify(self, token: str) -> api.access_token.Claims:
        return api.TokenVerifier(self.api_key, self.api_secret).verify(token)

    def room(self, name: str, *, metadata: str = "", automatic: bool = True) -> Room:
        """The room called ``name``, made (and its automatic agents dispatched, unless not
        ``automatic``) when new."""
        room = self.rooms.get(name)
        if room is None:
            room = self.rooms[name] = Room(name, metadata=metadata)
            if automatic and ("" in self.agents or self.workers.named("")):
                self.dispatch("", name)
        return room

    def dispatch(self, agent_name: str, room: str, metadata: str = "") -> agent_dispatch.AgentDispatch:
        """Record a dispatch of ``agent_name`` into ``room`` and start the agent: the in-process one
        registered by that name, else a worker's (now, or once one registers)."""
        self.room(room, automatic=agent_name != "")  # an explicit automatic-agent dispatch is that one
        dispatch = agent_dispatch.AgentDispatch(
            id=sid("AD"), agent_name=agent_name, room=room, metadata=metadata
        )
        self.dispatches.setdefault(room, []).append(dispatch)
        fn = self.agents.get(agent_name)
        if fn is not None:
            identity = f"agent-{sid('AJ')}"
            job = JobRequest(
                room=room,
                url=self.url,
                token=self.token(identity, room, kind="agent", can_update_own_metadata=True),
                agent_name=agent_name,
                dispatch_id=dispatch.id,
                metadata=metadata,
            )
            task = asyncio.ensure_future(self._run_job(fn, job))
            self._jobs.add(task)
            task.add_done_callback(self._jobs.discard)
        else:
            self.workers.dispatch(dispatch)
        return dispatch

    def rooms_without_agents(self) -> list[str]:
        """Rooms someone is waiting in that no dispatch and no agent reached."""
        return [
            name
            for name, room in self.rooms.items()
            if not self.dispatches.get(name)
            and room.members
            and all(m.info.kind != models.ParticipantInfo.AGENT for m in room.members.values())
        ]

    async def close_room(self, name: str) -> bool:
        """Close the room called ``name``: everyone is told to leave and workers end their jobs there."""
        pending = self._closing.pop(name, None)
        if pending is not None:
            pending.cancel()
        room = self.rooms.pop(name, None)
        if room is None:
            return False
        await self.workers.terminate(name)
        await room.close()
        return True

    def _left(self, room: Room) -> None:
        """Someone left: a room of worker jobs with only agents left closes after the departure
        timeout, as LiveKit closes it, so the jobs end rather than pile up in their workers."""
        if not self.workers.jobs_in(room.name) or room.name in self._closing:
            return
        if any(m.info.kind != models.ParticipantInfo.AGENT for m in room.members.values()):
            return

        def close() -> None:
            self._closing.pop(room.name, None)
            if not any(m.info.kind != models.ParticipantInfo.AGENT for m in room.members.values()):
                task = asyncio.ensure_future(self.close_room(room.name))
                self._jobs.add(task)
                task.add_done_callback(self._jobs.discard)

        self._closing[room.name] = asyncio.get_running_loop().call_later(self.departure_timeout, close)

    async def _run_job(self, fn: AgentFn, job: JobRequest) -> None:
        try:
            await fn(job)
        except Exception as exc:  # the agent is the test's code: its failure is reported, not raised here
            self.problems.append(f"agent {job.agent_name or '(automatic)'} failed: {exc!r}")

    # The signalling websocket.

    async def signal(self, request: web.Request) -> web.StreamResponse:
        token = request.query.get("access_token") or request.headers.get("Authorization", "").removeprefix(
            "Bearer "
        )
        try:
            claims = self.verify(token)
        except Exception:
            raise web.HTTPUnauthorized(text="invalid token") from None
        video = claims.video
        if video is None or not video.room_join or not video.room:
            raise web.HTTPUnauthorized(text="the token grants no room join")
        ws = web.WebSocketResponse(max_msg_size=MAX_SIGNAL_BYTES, heartbeat=None)
        await ws.prepare(request)
        room = self.room(video.room)
        for agent in getattr(getattr(claims, "room_config", None), "agents", None) or []:
            self.dispatch(agent.agent_name, room.name, agent.metadata)
        sending = asyncio.Lock()

        async def send(response: proto.SignalResponse) -> None:
            async with sending:
                if not ws.closed:
                    await ws.send_bytes(response.SerializeToString())

        member = Member(info=self._participant(claims), send=send)
        try:
            others = await room.join(member)
        except ValueError as exc:
            await ws.close(message=str(exc).encode())
            return ws
        member.peer = Peer(
            signal=lambda name, msg: send(proto.SignalResponse(**{name: msg})),
            on_data=lambda data, reliable: self._data(room, member, data, reliable),
            on_track=lambda relay: room.media_arrived(member, self._probed(room, member, relay)),
        )
        join = proto.JoinResponse(
            room=room.info(),
            participant=member.info,
            other_participants=others,
            server_version="1.9.0",
            subscriber_primary=False,
            ping_interval=5,
            ping_timeout=20,
            server_info=models.ServerInfo(
                edition=models.ServerInfo.Standard, version="1.9.0", protocol=PROTOCOL
            ),
        )
        await send(proto.SignalResponse(join=join))
        try:
            async for msg in ws:
                if msg.type != WSMsgType.BINARY:
                    continue
                await self._request(room, member, msg.data)
        finally:
            await room.leave(member)
            self._left(room)
        return ws

    def _probed(self, room: Room, member: Member, relay: AudioRelay) -> AudioRelay:
        if self.media_probe is not None:
            probe = self.media_probe
            relay.probe = lambda packet: probe(room.name, member.identity, packet)
        return relay

    def _participant(self, claims: Any) -> models.ParticipantInfo:
        kinds = {"standard": 0, "ingress": 1, "egress": 2, "sip": 3, "agent": 4}
        return models.ParticipantInfo(
            sid=sid("PA"),
            identity=claims.identity,
            name=claims.name or "",
            metadata=claims.metadata or "",
            attributes=dict(claims.attributes or {}),
            kind=kinds.get(str(claims.kind or "standard").lower(), 0),  # type: ignore[arg-type]
            state=models.ParticipantInfo.ACTIVE,
            permission=models.ParticipantPermission(
                can_subscribe=True, can_publish=True, can_publish_data=True
            ),
            joined_at=int(asyncio.get_running_loop().time()),
        )

    async def _request(self, room: Room, member: Member, data: bytes) -> None:
        req = proto.SignalRequest()
        try:
            req.ParseFromString(data)
        except Exception:
            self.problems.append(f"{member.identity}: an unreadable signal request")
            return
        kind = req.WhichOneof("message")
        peer = member.peer
        assert peer is not None
        if kind == "offer":
            answer = await peer.offered(req.offer.sdp)
            await member.send(
                proto.SignalResponse(answer=proto.SessionDescription(type="answer", sdp=answer))
            )
        elif kind == "answer":
            peer.answered(req.answer.sdp)
        elif kind == "trickle":
            await peer.trickle(req.trickle.candidateInit, int(req.trickle.target))
        elif kind == "add_track":
            track = room.add_track(member, req.add_track)
            await member.send(
                proto.SignalResponse(
                    track_published=proto.TrackPublishedResponse(cid=req.add_track.cid, track=track)
                )
            )
        elif kind == "ping_req":
            pong = proto.Pong(
                last_ping_timestamp=req.ping_req.timestamp,
                timestamp=int(asyncio.get_running_loop().time() * 1000),
            )
            await member.send(proto.SignalResponse(pong_resp=pong))
        elif kind == "ping":
            await member.send(proto.SignalResponse(pong=req.ping))
        elif kind == "update_metadata":
            update = req.update_metadata
            member.describe(metadata=update.metadata, name=update.name, attributes=update.attributes)
            await room.update(member)
        elif kind == "leave":
            await room.leave(member)

    def _data(self, room: Room, member: Member, data: bytes, reliable: bool) -> None:
        packet = models.DataPacket()
        try:
            packet.ParseFromString(data)
        except Exception:
            self.problems.append(f"{member.identity}: an unreadable data packet")
            return
        room.data(member, packet, reliable=reliable)

    async def validate(self, request: web.Request) -> web.Response:
        token = request.query.get("access_token") or request.headers.get("Authorization", "").removeprefix(
            "Bearer "
        )
        try:
            self.verify(token)
        except Exception:
            return web.Response(status=401, text="invalid token")
        return web.Response(text="success")

    async def health(self, request: web.Request) -> web.Response:
        """``GET /``: 200 OK, as livekit-server answers it, so scripts can wait for the server."""
        return web.Response(text="OK")

    async def close(self) -> None:
        for handle in self._closing.values():
            handle.cancel()
        await self.workers.close()
        await self.sip.close()
        for room in list(self.rooms.values()):
            await room.close()
        for task in list(self._jobs):
            task.cancel()
        if self._jobs:
            await asyncio.gather(*self._jobs, return_exceptions=True)


@asynccontextmanager
async def serve_livekit_server(
    *, api_key: str = "devkey", api_secret: str | None = None, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[LivekitServer]:
    """Run a loopback LiveKit server on ``host`` and ``port`` (0: any free one) for the duration of the block."""
    from .livekit_twirp import twirp_routes

    server = LivekitServer(api_key=api_key, api_secret=api_secret)
    app = web.Application(client_max_size=MAX_SIGNAL_BYTES)
    app.router.add_get("/", server.health)
    app.router.add_get("/rtc", server.signal)
    app.router.add_get("/agent", server.workers.serve)
    app.router.add_get("/rtc/validate", server.validate)
    app.router.add_routes(twirp_routes(server))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"ws://{host}:{port}"
    try:
        yield server
    finally:
        await server.close()
        with contextlib.suppress(Exception):
            await runner.cleanup()
