"""RTP for one call (RFC 3550): G.711 frames out every 20 ms, the agent's frames in through a
small reordering jitter buffer, and keypad digits both ways as RFC 4733 telephone-events.

Sending costs one ``struct.pack`` and one ``sendto`` per frame: the voice stages hand every call
its encoded frame in one pass per tick, and this is the end of that pass. A digit replaces the
audio for its duration (as phones do): eight 20 ms event packets and three end packets.

Received packets are untrusted: anything not RTP version 2 of a negotiated payload type, shorter
than its header, or longer than ``MAX_PACKET`` is counted in ``dropped`` and ignored.
"""

from __future__ import annotations

import asyncio
import secrets
import struct
from collections import deque
from collections.abc import Callable

__all__ = ["DIGITS", "JitterBuffer", "RtpStream"]

MAX_PACKET = 1500
DIGITS = "0123456789*#ABCD"
_HEADER = struct.Struct("!BBHII")
_EVENT_FRAMES = 8
"""A digit lasts 160 ms, then 60 ms of audio before the next (at least 40 ms apart, as Q.24 wants)."""
_GAP_FRAMES = 3


class JitterBuffer:
    """Puts packets back in sequence order, holding at most ``depth`` out-of-order ones; a packet
    that comes after its turn (or twice) is dropped, a gap the buffer gives up on is passed over."""

    def __init__(self, depth: int = 3) -> None:
        self.depth = depth
        self.expected: int | None = None
        self.held: dict[int, bytes] = {}
        self.late = 0
        self.lost = 0

    def push(self, seq: int, payload: bytes) -> list[bytes]:
        if self.expected is None:
            self.expected = seq
        ahead = (seq - self.expected) & 0xFFFF
        if ahead >= 0x8000:
            self.late += 1
            return []
        if ahead > 0x0FFF:  # a new sequence (the peer restarted its stream)
            self.expected, self.held = seq, {}
        self.held[seq] = payload
        out: list[bytes] = []
        while True:
            while self.expected in self.held:
                out.append(self.held.pop(self.expected))
                self.expected = (self.expected + 1) & 0xFFFF
            if len(self.held) <= self.depth:
                return out
            nearest = min(self.held, key=lambda s: (s - self.expected) & 0xFFFF)  # type: ignore[operator]
            self.lost += (nearest - self.expected) & 0xFFFF  # type: ignore[operator]
            self.expected = nearest


class RtpStream(asyncio.DatagramProtocol):
    """One call's RTP socket; ``on_audio(payload)`` gets the agent's frames in order, ``on_digit``
    each telephone-event digit once."""

    def __init__(
        self,
        *,
        on_audio: Callable[[bytes], None],
        on_digit: Callable[[str], None],
        payload_type: int = 0,
        dtmf_pt: int | None = 101,
    ) -> None:
        self.on_audio = on_audio
        self.on_digit = on_digit
        self.payload_type = payload_type
        self.dtmf_pt = dtmf_pt
        self.remote: tuple[str, int] | None = None
        self.transport: asyncio.DatagramTransport | None = None
        self.ssrc = secrets.randbits(32)
        self.seq = secrets.randbits(16)
        self.ts = secrets.randbits(32)
        self.marker = True
        self.sending = True
        self.jitter = JitterBuffer()
        self.sent = 0
        self.received = 0
        self.dropped = 0
        self._events: deque[tuple[bytes, bool] | None] = deque()
        self._event_ts = 0
        self._seen_events: deque[int] = deque(maxlen=32)
        self._keyed: asyncio.Event | None = None

    @classmethod
    async def open(cls, host: str, **kwargs: object) -> RtpStream:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_datagram_endpoint(lambda: cls(**kwargs), local_addr=(host, 0))  # type: ignore[arg-type]
        return proto

    @property
    def port(self) -> int:
        assert self.transport is not None
        return int(self.transport.get_extra_info("sockname")[1])

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    # Sending.

    def send(self, payload: bytes) -> None:
        """One 20 ms frame of the caller (encoded), or the digit being keyed in its place."""
        transport, remote = self.transport, self.remote
        self.ts = (self.ts + 160) & 0xFFFFFFFF
        if transport is None or remote is None or not self.sending:
            return
        self.seq = (self.seq + 1) & 0xFFFF
        if self._events:
            # a digit replaces the audio; the RTP timestamp of every packet of one digit is its start
            item = self._events.popleft()
            if item is not None:
                event, first = item
                if first:
                    self._event_ts = self.ts
                marker = 0x80 if first else 0
                head = _HEADER.pack(0x80, marker | (self.dtmf_pt or 101), self.seq, self._event_ts, self.ssrc)
                transport.sendto(head + event, remote)
                self.sent += 1
                return
            if not self._events and self._keyed is not None:
                self._keyed.set()
        head = _HEADER.pack(
            0x80, (0x80 if self.marker else 0) | self.payload_type, self.seq, self.ts, self.ssrc
        )
        self.marker = False
        transport.sendto(head + payload, remote)
        self.sent += 1

    def key(self, digits: str) -> asyncio.Event:
        """Queue ``digits`` as telephone-events; the returned event is set once they have gone out."""
        for digit in digits.upper():
            code = DIGITS.index(digit)
            for i in range(1, _EVENT_FRAMES + 1):
                self._events.append((struct.pack("!BBH", code, 10, 160 * i), i == 1))
            for _ in range(3):
                self._events.append((struct.pack("!BBH", code, 0x80 | 10, 160 * _EVENT_FRAMES), False))
            self._events.extend([None] * _GAP_FRAMES)
        self._keyed = asyncio.Event()
        return self._keyed

    # Receiving.

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if len(data) < 12 or len(data) > MAX_PACKET or data[0] >> 6 != 2:
            self.dropped += 1
            return
        first, second = data[0], data[1]
        pt = second & 0x7F
        offset = 12 + 4 * (first & 0x0F)
        if first & 0x10:  # header extension
            if len(data) < offset + 4:
                self.dropped += 1
                return
            offset += 4 + 4 * int.from_bytes(data[offset + 2 : offset + 4], "big")
        end = len(data)
        if first & 0x20:  # padding
            end -= data[-1]
        if offset > end:
            self.dropped += 1
            return
        self.received += 1
        seq = int.from_bytes(data[2:4], "big")
        payload = data[offset:end]
        if pt == self.dtmf_pt and self.dtmf_pt is not None:
            self._event(int.from_bytes(data[4:8], "big"), payload)
        elif pt == self.payload_type:
            for frame in self.jitter.push(seq, payload):
                self.on_audio(frame)
        else:
            self.dropped += 1

    def _event(self, ts: int, payload: bytes) -> None:
        if len(payload) < 4 or payload[0] >= len(DIGITS):
            return
        if ts in self._seen_events:
            return
        self._seen_events.append(ts)
        self.on_digit(DIGITS[payload[0]])

    def error_received(self, exc: Exception) -> None:
        self.dropped += 1

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        if self._keyed is not None:
            self._keyed.set()
