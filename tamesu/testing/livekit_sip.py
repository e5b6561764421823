"""The loopback LiveKit server's SIP service: outbound trunks and ``CreateSIPParticipant``.

A trunk is kept as it was created (``CreateSIPOutboundTrunk``, listed by ``ListSIPOutboundTrunk``):
its ``address`` (``host:port``, ``;transport=tcp`` or the trunk's transport), numbers and digest
credentials. ``CreateSIPParticipant`` places a real call with tamesu's own user agent
(``tamesu.sip``) to ``sip:<sip_call_to>@<address>`` from ``sip_number``, and once it is answered
bridges it into the room as a participant of kind SIP, joined through the server's own signalling
with the ``livekit`` SDK (as LiveKit's SIP service joins its rooms): the call's G.711 audio is its
published Opus track, the first other participant's audio goes back to the call as RTP, RFC 4733
and SIP INFO digits become SIP DTMF data packets and SIP DTMF packets become RFC 4733 events. Its
attributes say ``sip.callStatus`` (``active``, then ``hangup``) and ``sip.callStatusCode``. The
agent's BYE makes it leave the room; the participant removed (or the room closed) sends BYE.
A call that is not answered fails the request (``wait_until_answered``) as LiveKit does: a Twirp
error whose ``meta`` holds ``sip_status_code`` and ``sip_status`` (486 Busy Here, 408 for a ring
timeout).

Not done: inbound trunks and dispatch rules, transfers (``TransferSIPParticipant``), a REFER
from the agent (answered, not followed), ringtones and dial tones, krisp, media encryption,
custom headers, ``hide_phone_number``, more than one audio track mixed into the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from typing import TYPE_CHECKING, Any

import numpy as np
from livekit import api, rtc
from livekit.protocol import sip as sip_pb

from .livekit_room import sid

if TYPE_CHECKING:
    from tamesu.sip.call import SipCall
    from tamesu.sip.ua import UserAgent

    from .livekit_server import LivekitServer

__all__ = ["LoopbackSip", "SipDialError"]

RATE = 8000
FRAME = 160
DEFAULT_RING_S = 30.0
DTMF_CODES = {**{str(d): d for d in range(10)}, "*": 10, "#": 11, "A": 12, "B": 13, "C": 14, "D": 15}


def _route_to(host: str, port: int) -> str:
    """This machine's address towards ``host`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((host, port))
        except OSError:
            return "127.0.0.1"
        return str(s.getsockname()[0])


class SipDialError(Exception):
    """A call that was not answered: the Twirp code, HTTP status and SIP status LiveKit reports."""

    def __init__(self, code: str, status: int, msg: str, sip_code: int, sip_reason: str) -> None:
        super().__init__(msg)
        self.code, self.status, self.msg = code, status, msg
        self.meta = {"sip_status_code": str(sip_code), "sip_status": sip_reason}


class LoopbackSip:
    """The trunks and the bridged calls of one loopback server."""

    def __init__(self, server: LivekitServer) -> None:
        self.server = server
        self.trunks: dict[str, sip_pb.SIPOutboundTrunkInfo] = {}
        self.bridges: list[SipBridge] = []

    def create_trunk(self, req: sip_pb.CreateSIPOutboundTrunkRequest) -> sip_pb.SIPOutboundTrunkInfo:
        trunk = sip_pb.SIPOutboundTrunkInfo()
        trunk.CopyFrom(req.trunk)
        trunk.sip_trunk_id = sid("ST")
        self.trunks[trunk.sip_trunk_id] = trunk
        return trunk

    def list_trunks(self, req: sip_pb.ListSIPOutboundTrunkRequest) -> sip_pb.ListSIPOutboundTrunkResponse:
        ids = set(req.trunk_ids)
        items = [t for t in self.trunks.values() if not ids or t.sip_trunk_id in ids]
        return sip_pb.ListSIPOutboundTrunkResponse(items=items)

    async def create_participant(self, req: sip_pb.CreateSIPParticipantRequest) -> sip_pb.SIPParticipantInfo:
        """Dial and bridge (see the module docstring); raises ``KeyError`` for an unknown trunk."""
        trunk = self.trunks[req.sip_trunk_id]
        bridge = SipBridge(self.server, trunk, req)
        self.bridges.append(bridge)
        if req.wait_until_answered:
            await bridge.dial()
        else:
            bridge.spawn(bridge.dial_quietly())
        return sip_pb.SIPParticipantInfo(
            participant_id=bridge.participant_id,
            participant_identity=bridge.identity,
            room_name=req.room_name,
            sip_call_id=bridge.call_sid,
        )

    async def close(self) -> None:
        for bridge in self.bridges:
            await bridge.close()


class SipBridge:
    """One outbound call bridged into a room as a SIP participant."""

    def __init__(
        self,
        server: LivekitServer,
        trunk: sip_pb.SIPOutboundTrunkInfo,
        req: sip_pb.CreateSIPParticipantRequest,
    ) -> None:
        self.server, self.trunk, self.req = server, trunk, req
        self.identity = req.participant_identity or f"sip_{req.sip_call_to}"
        self.participant_id = sid("PA")
        self.call_sid = sid("SCL")
        self.ua: UserAgent | None = None
        self.call: SipCall | None = None
        self.room = rtc.Room()
        self.source = rtc.AudioSource(RATE, 1)
        self.heard: asyncio.Queue[bytes | None] = asyncio.Queue(500)
        self.tasks: set[asyncio.Task[Any]] = set()
        self.early_digits: list[str] | None = []
        """Digits the call sent before the room was joined (None once joined)."""
        self.attributes = {
            "sip.callID": self.call_sid,
            "sip.trunkID": trunk.sip_trunk_id,
            "sip.phoneNumber": req.sip_call_to,
            "sip.trunkPhoneNumber": req.sip_number,
            **dict(req.participant_attributes),
        }

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def dial_quietly(self) -> None:
        with contextlib.suppress(SipDialError):
            await self.dial()

    async def dial(self) -> None:
        """Call the trunk's address; answered, join the room; else raise ``SipDialError``."""
        from tamesu.sip.call import Credentials, SipCall, peer_of
        from tamesu.sip.message import NameAddr, SipUri
        from tamesu.sip.rtp import RtpStream
        from tamesu.sip.ua import UserAgent, new_tag

        req, trunk = self.req, self.trunk
        address = trunk.address
        if trunk.transport == sip_pb.SIP_TRANSPORT_TCP and ";" not in address:
            address += ";transport=tcp"
        uri = SipUri.parse(f"sip:{req.sip_call_to}@{address}")
        peer = peer_of(uri)
        self.ua = ua = UserAgent(_route_to(peer.host, peer.port))
        await ua.open(0, tcp=False)
        rtp = await RtpStream.open(ua.host, on_audio=self._call_audio, on_digit=self._call_digit)
        number = req.sip_number or (trunk.numbers[0] if trunk.numbers else "livekit")
        credentials = Credentials(trunk.auth_username, trunk.auth_password) if trunk.auth_username else None
        self.call = call = SipCall(
            ua,
            rtp,
            peer=peer,
            call_id=f"{uuid.uuid4().hex}@{ua.host}",
            local=NameAddr(f"sip:{number}@{ua.host}", params={"tag": new_tag()}),
            remote=NameAddr(str(uri)),
            credentials=credentials,
        )
        call.on_end = self._call_ended
        ring = req.ringing_timeout.seconds + req.ringing_timeout.nanos / 1e9 or DEFAULT_RING_S
        await call.dial(str(uri), ring_timeout=ring)
        if call.state != "connected":
            await self.close()
            raise self._failure(call.end_reason or "error", call.end_detail)
        await self._join()
        if req.HasField("max_call_duration") and req.max_call_duration.seconds:
            self.spawn(self._time_limit(req.max_call_duration.seconds))

    @staticmethod
    def _failure(reason: str, detail: str) -> SipDialError:
        head, _, rest = detail.partition(" ")
        if head.isdigit():
            code, phrase = int(head), rest
        else:
            code, phrase = (408, "Request Timeout") if reason == "no_answer" else (500, detail or reason)
        twirp = {"busy": ("unavailable", 503), "no_answer": ("deadline_exceeded", 504)}
        name, status = twirp.get(reason, ("internal", 500))
        return SipDialError(name, status, f"the call was not answered: {code} {phrase}", code, phrase)

    async def _join(self) -> None:
        token = (
            api.AccessToken(self.server.api_key, self.server.api_secret)
            .with_identity(self.identity)
            .with_name(self.req.participant_name or self.identity)
            .with_kind("sip")
            .with_attributes({**self.attributes, "sip.callStatus": "active"})
            .with_grants(
                api.VideoGrants(room_join=True, room=self.req.room_name, can_update_own_metadata=True)
            )
            .to_jwt()
        )
        self.room.on("track_subscribed", self._track)
        self.room.on("sip_dtmf_received", self._room_digit)
        self.room.on("participant_disconnected", self._left)
        self.room.on("disconnected", lambda *_: self.spawn(self.close()))
        await self.room.connect(self.server.url, token, rtc.RoomOptions(auto_subscribe=True))
        track = rtc.LocalAudioTrack.create_audio_track("sip-audio", self.source)
        options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        await self.room.local_participant.publish_track(track, options)
        self.spawn(self._publish())
        early, self.early_digits = self.early_digits or [], None
        for digit in early:
            self._call_digit(digit)

    # The call's side.

    def _call_audio(self, payload: bytes) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.heard.put_nowait(payload)

    def _call_digit(self, digit: str) -> None:
        code = DTMF_CODES.get(digit.upper())
        if self.early_digits is not None:
            self.early_digits.append(digit)
        elif code is not None and self.room.isconnected():
            self.spawn(self.room.local_participant.publish_dtmf(code=code, digit=digit.upper()))

    def _call_ended(self) -> None:
        call = self.call
        if call is not None and call.end_reason != "caller":
            self.spawn(self._hung_up(200, "BYE"))

    async def _hung_up(self, code: int, why: str) -> None:
        if self.room.isconnected():
            with contextlib.suppress(Exception):
                await self.room.local_participant.set_attributes(
                    {"sip.callStatus": "hangup", "sip.callStatusCode": str(code)}
                )
            await self.room.disconnect()

    async def _publish(self) -> None:
        from tamesu.audio.codec import ulaw_decode

        while True:
            payload = await self.heard.get()
            if payload is None:
                return
            samples = np.asarray(ulaw_decode(payload), dtype=np.int16)
            await self.source.capture_frame(rtc.AudioFrame(samples.tobytes(), RATE, 1, len(samples)))

    # The room's side.

    def _track(self, track: Any, publication: Any, participant: Any) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO and not any(t.get_name() == "listen" for t in self.tasks):
            task = asyncio.ensure_future(self._listen(track))
            task.set_name("listen")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _listen(self, track: Any) -> None:
        from tamesu.audio.codec import ulaw_encode

        stream = rtc.AudioStream(track, sample_rate=RATE, num_channels=1)
        pending = np.zeros(0, np.int16)
        try:
            async for event in stream:
                pending = np.concatenate([pending, np.frombuffer(bytes(event.frame.data), dtype="<i2")])
                while len(pending) >= FRAME and self.call is not None:
                    frame, pending = pending[:FRAME], pending[FRAME:]
                    self.call.rtp.send(ulaw_encode(frame).tobytes())
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()

    def _room_digit(self, event: Any) -> None:
        call = self.call
        digit = str(event.digit or "")[:1] or next((d for d, c in DTMF_CODES.items() if c == event.code), "")
        if call is not None and digit and call.state == "connected" and call.dtmf_events:
            call.rtp.key(digit)

    def _left(self, participant: Any) -> None:
        if not self.room.remote_participants:
            self.spawn(self.close())  # the room is empty but for us: hang up

    async def _time_limit(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        await self.close()

    async def close(self) -> None:
        """Hang up (BYE) if the call is up, leave the room, free the sockets."""
        call, self.call = self.call, None
        if call is not None:
            with contextlib.suppress(Exception):
                if call.state == "connected":
                    await asyncio.wait_for(call.hangup(), 5)
            with contextlib.suppress(Exception):
                await call.close()
        with contextlib.suppress(Exception):
            await self._hung_up(200, "hangup")
        with contextlib.suppress(asyncio.QueueFull):
            self.heard.put_nowait(None)
        for task in list(self.tasks):
            if task is not asyncio.current_task():
                task.cancel()
        ua, self.ua = self.ua, None
        if ua is not None:
            with contextlib.suppress(Exception):
                await ua.close()
        with contextlib.suppress(Exception):
            await self.source.aclose()
