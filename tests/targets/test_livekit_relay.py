"""The loopback LiveKit server's audio relay: the publisher's Opus packets, unchanged, to each subscriber."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("aiortc")

from aiortc.mediastreams import MediaStreamError
from aiortc.rtp import RtpPacket

from tamesu.testing import rtp_relay
from tamesu.testing.rtp_relay import AudioRelay

pytestmark = pytest.mark.unit

OPUS = 111


def rtp(seq: int, timestamp: int, payload: bytes, payload_type: int = OPUS) -> RtpPacket:
    return RtpPacket(payload_type=payload_type, sequence_number=seq, timestamp=timestamp, payload=payload)


async def test_each_subscriber_gets_the_payloads_unchanged_with_their_timing() -> None:
    relay = AudioRelay("track-1", OPUS)
    a, b = relay.subscribe(), relay.subscribe()
    start = (1 << 32) - 960  # the RTP timestamp wraps between the first and second packet
    for i, payload in enumerate([b"\x01voiced", b"\x02voiced", b"\x03"]):
        relay.forward(rtp(i, (start + 960 * i) % (1 << 32), payload))
    relay.forward(rtp(9, start + 2880, b"not opus", payload_type=0))
    relay.forward(rtp(10, start + 2880, b""))
    for track in (a, b):
        got = [await track.recv() for _ in range(3)]
        assert [bytes(p) for p in got] == [b"\x01voiced", b"\x02voiced", b"\x03"]
        assert [p.pts for p in got] == [0, 960, 1920]
        assert all(p.time_base == rtp_relay.TIME_BASE for p in got)
        assert track.queue.empty(), "other payload types and empty packets are not forwarded"
    assert relay.packets == 3


async def test_a_subscriber_that_falls_behind_loses_the_oldest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rtp_relay, "MAX_QUEUED", 2)
    relay = AudioRelay("track-1", OPUS)
    slow = relay.subscribe()
    for i in range(4):
        relay.forward(rtp(i, 960 * i, bytes([i + 1])))
    assert [bytes(await slow.recv()) for _ in range(2)] == [b"\x03", b"\x04"]


async def test_the_publisher_leaving_ends_every_subscription() -> None:
    relay = AudioRelay("track-1", OPUS)
    before = relay.subscribe()
    waiting = asyncio.ensure_future(before.recv())
    relay.end()
    with pytest.raises(MediaStreamError):
        await waiting
    assert before.readyState == "ended" and not relay.subscribers
    with pytest.raises(MediaStreamError):
        await relay.subscribe().recv()  # subscribed after it ended
