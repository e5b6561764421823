"""One participant's two WebRTC peer connections on the loopback LiveKit server, on aiortc.

LiveKit's clients keep two: the publisher, which the client offers (its data channels and the
tracks it publishes), and the subscriber, which the server offers (the tracks of others it
receives). ICE candidates travel as trickle messages naming the connection; aiortc gathers its
own before an offer or answer is sent, so the server's candidates ride in its descriptions.
Data from the server to the client goes out on the client's own ``_reliable`` / ``_lossy``
channels of the publisher connection, which LiveKit's SDKs read as they read the subscriber's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamTrack
from aiortc.sdp import candidate_from_sdp

from .rtp_relay import AudioRelay, opus_only, relay_audio

__all__ = ["Peer"]

log = logging.getLogger(__name__)

PUBLISHER = 0
SUBSCRIBER = 1
MAX_WAITING = 1024
"""Data packets kept for a client whose data channel is not open yet (more are dropped)."""
ANSWER_TIMEOUT = 10.0
"""How long a client has to answer the server's subscriber offer."""


class Peer:
    """The publisher and subscriber connections of one participant (see the module docstring)."""

    def __init__(
        self,
        *,
        signal: Callable[[str, Any], Awaitable[None]],
        on_data: Callable[[bytes, bool], None],
        on_track: Callable[[AudioRelay], None],
    ) -> None:
        self.signal = signal
        """Sends one signal response: (field name, message)."""
        self.on_data = on_data
        self.on_track = on_track
        self.publisher = RTCPeerConnection()
        self.subscriber = RTCPeerConnection()
        self.channels: dict[str, Any] = {}
        self.waiting: list[tuple[bytes, bool]] = []
        """Packets for the client sent before its channels opened; they go out when one does."""
        self._pending: dict[int, list[Any]] = {PUBLISHER: [], SUBSCRIBER: []}
        self._answer: asyncio.Future[str] | None = None
        self._negotiating = asyncio.Lock()
        self.publisher.on("datachannel", self._channel)
        self.publisher.on("track", self._track)

    def _track(self, track: MediaStreamTrack) -> None:
        if track.kind == "audio":  # video is not forwarded
            self.on_track(relay_audio(self.publisher, track))

    def _channel(self, channel: Any) -> None:
        self.channels[channel.label] = channel
        reliable = channel.label == "_reliable"

        def message(data: bytes | str) -> None:
            if isinstance(data, bytes):
                self.on_data(data, reliable)

        channel.on("message", message)
        if channel.readyState == "open":
            self._drain()
        else:
            channel.on("open", self._drain)

    def _drain(self) -> None:
        waiting, self.waiting = self.waiting, []
        for data, reliable in waiting:
            self.send_data(data, reliable=reliable)

    @property
    def connected(self) -> bool:
        return self.publisher.connectionState == "connected"

    def send_data(self, data: bytes, *, reliable: bool = True) -> bool:
        """Send a data packet on the client's channel of that kind, or keep it until one opens;
        False when it was dropped (too many waiting)."""
        channel = self.channels.get("_reliable" if reliable else "_lossy") or self.channels.get("_reliable")
        if channel is None or channel.readyState != "open":
            if len(self.waiting) >= MAX_WAITING:
                return False
            self.waiting.append((data, reliable))
            return True
        channel.send(data)
        return True

    async def offered(self, sdp: str) -> str:
        """The client's publisher offer: the answer SDP."""
        pc = self.publisher
        await pc.setRemoteDescription(RTCSessionDescription(sdp, "offer"))
        await self._flush(PUBLISHER)
        await pc.setLocalDescription(await pc.createAnswer())
        return pc.localDescription.sdp

    def answered(self, sdp: str) -> None:
        """The client's answer to the server's subscriber offer."""
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(sdp)

    async def trickle(self, candidate_init: str, target: int) -> None:
        """A client ICE candidate (JSON of RTCIceCandidateInit) for one of the connections."""
        try:
            init = json.loads(candidate_init)
            line = str(init.get("candidate") or "")
        except (ValueError, AttributeError):
            return
        if not line:
            return
        candidate = candidate_from_sdp(line.split(":", 1)[1] if line.startswith("candidate:") else line)
        candidate.sdpMid = init.get("sdpMid")
        candidate.sdpMLineIndex = init.get("sdpMLineIndex")
        pc = self.subscriber if target == SUBSCRIBER else self.publisher
        if pc.remoteDescription is None:
            self._pending[target].append(candidate)
            return
        with contextlib.suppress(Exception):
            await pc.addIceCandidate(candidate)

    async def _flush(self, target: int) -> None:
        pc = self.subscriber if target == SUBSCRIBER else self.publisher
        pending, self._pending[target] = self._pending[target], []
        for candidate in pending:
            with contextlib.suppress(Exception):
                await pc.addIceCandidate(candidate)

    async def subscribe(self, relay: AudioRelay, *, participant_sid: str, track_sid: str) -> None:
        """Send ``relay``'s packets (another participant's track) to this client: a new subscriber offer."""
        async with self._negotiating:
            pc = self.subscriber
            sender = pc.addTrack(relay.subscribe())
            opus_only(next(t for t in pc.getTransceivers() if t.sender is sender))
            # The client finds the publication by the stream id "participant sid|track sid".
            sender._stream_id = f"{participant_sid}|{track_sid}"
            sender._track_id = track_sid
            await pc.setLocalDescription(await pc.createOffer())
            loop = asyncio.get_running_loop()
            self._answer = loop.create_future()
            from livekit.protocol import rtc as proto

            await self.signal("offer", proto.SessionDescription(type="offer", sdp=pc.localDescription.sdp))
            sdp = await asyncio.wait_for(self._answer, ANSWER_TIMEOUT)
            await pc.setRemoteDescription(RTCSessionDescription(sdp, "answer"))
            await self._flush(SUBSCRIBER)

    async def close(self) -> None:
        for pc in (self.publisher, self.subscriber):
            with contextlib.suppress(Exception):
                await pc.close()
