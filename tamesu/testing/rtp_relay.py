"""Forwarding a published audio track's Opus packets unchanged, as a LiveKit SFU does.

aiortc's receiving side reassembles RTP in a jitter buffer and decodes it in a thread, and its
sending side encodes again: hundreds of milliseconds of buffering and two codec passes that a
real SFU never adds. ``relay_audio`` takes the publisher's RTP packets off its receiver before
that path (the receiver's packet handler is replaced on that one object) and hands each Opus
payload, as an ``av.Packet`` stamped with its RTP timestamp, to every subscriber's track.
aiortc's ``RTCRtpSender`` sends a track's packets without encoding (``Encoder.pack``), so each
subscriber gets the publisher's payloads, in order, with their timing, as soon as they arrive.

Only Opus is forwarded: the subscriber's transceiver is limited to Opus (``opus_only``) and the
publisher's packets of any other payload type are dropped. A subscriber that falls
``MAX_QUEUED`` packets behind loses the oldest.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
from collections.abc import Callable
from typing import Any

from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

__all__ = ["AudioRelay", "opus_only", "relay_audio"]

CLOCK = 48000
"""Opus's RTP clock rate."""
TIME_BASE = fractions.Fraction(1, CLOCK)
MAX_QUEUED = 250
"""Packets (5 s of 20 ms frames) one subscriber may fall behind before the oldest are dropped."""


class RelayedTrack(MediaStreamTrack):
    """One subscriber's copy of a relayed track: ``recv`` gives the publisher's packets."""

    kind = "audio"

    def __init__(self, relay: AudioRelay) -> None:
        super().__init__()
        self.relay = relay
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    def put(self, packet: Any) -> None:
        if self.queue.qsize() >= MAX_QUEUED:
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
        self.queue.put_nowait(packet)

    async def recv(self) -> Any:
        if self.readyState != "live":
            raise MediaStreamError
        packet = await self.queue.get()
        if packet is None:
            self.stop()
            raise MediaStreamError
        return packet

    def stop(self) -> None:
        super().stop()
        self.relay.subscribers.discard(self)


class AudioRelay:
    """The publisher's side: its Opus payloads, fanned out to every subscribed copy."""

    def __init__(self, track_id: str, payload_type: int | None) -> None:
        self.id = track_id
        """The publisher's track id (the client's cid for it)."""
        self.payload_type = payload_type
        self.subscribers: set[RelayedTrack] = set()
        self.first: int | None = None
        self.last = 0
        self.wraps = 0
        self.packets = 0
        self.ended = False
        self.probe: Callable[[Any], None] | None = None
        """Called with each packet forwarded (benchmarks time the audio passing through)."""

    def subscribe(self) -> RelayedTrack:
        track = RelayedTrack(self)
        if self.ended:
            track.put(None)
        else:
            self.subscribers.add(track)
        return track

    def _pts(self, timestamp: int) -> int:
        """The RTP timestamp unwrapped (32 bits), counted from the first packet."""
        if self.first is None:
            self.first = self.last = timestamp
        if timestamp < self.last and self.last - timestamp > 1 << 31:
            self.wraps += 1
        self.last = timestamp
        return (timestamp + (self.wraps << 32)) - self.first

    def forward(self, packet: Any) -> None:
        """One RTP packet from the publisher."""
        import av

        if not packet.payload or (self.payload_type is not None and packet.payload_type != self.payload_type):
            return
        self.packets += 1
        if self.probe is not None:
            self.probe(packet)
        pts = self._pts(packet.timestamp)
        for track in list(self.subscribers):
            out = av.Packet(packet.payload)
            out.pts = pts
            out.time_base = TIME_BASE
            track.put(out)

    def end(self) -> None:
        """The publisher left: every subscriber's track ends."""
        self.ended = True
        for track in list(self.subscribers):
            track.put(None)


def relay_audio(pc: Any, track: MediaStreamTrack) -> AudioRelay:
    """Take ``track``'s packets (a remote audio track of ``pc``) before aiortc decodes them."""
    transceiver = next(t for t in pc.getTransceivers() if t.receiver.track is track)
    codecs = getattr(transceiver, "_codecs", None) or []
    opus = next((c for c in codecs if c.mimeType.lower() == "audio/opus"), None)
    relay = AudioRelay(track.id, opus.payloadType if opus is not None else None)

    async def handle(packet: Any, arrival_time_ms: int) -> None:
        relay.forward(packet)

    transceiver.receiver._handle_rtp_packet = handle
    return relay


def opus_only(transceiver: Any) -> None:
    """Limit a sending transceiver to Opus, the only codec a relay carries."""
    from aiortc import RTCRtpSender

    caps = RTCRtpSender.getCapabilities("audio")
    transceiver.setCodecPreferences([c for c in caps.codecs if c.mimeType.lower() == "audio/opus"])
