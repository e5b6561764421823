"""A livekit call's audio: the caller's microphone track and the agent's track, as a ``VoiceWire``.

The call's line stage hands a 20 ms PCM16 frame every tick (``send_audio``, which must never
wait); a sender task feeds them to the published ``rtc.AudioSource`` in order, dropping the oldest
when the room falls 10 s behind. Once the source holds more than ``SOURCE_AHEAD_S`` (a burst of
frames after the loop was busy fills its queue, and a full queue stays full while frames arrive
in real time), silent frames are skipped until it drains: the caller's words then reach the room
as they are said, not a queue's length late. The agent's audio track, once subscribed, is read as
an ``rtc.AudioStream`` at the call's rate and handed to the session to be played and heard; the
track streams in real time, silence included, so a ``SilenceGate`` passes on only sound, a short
tail after it, and pauses while speech is still queued to play (otherwise the playout would never
run empty and no turn would end). Keypad digits go as SIP DTMF packets, as a phone bridged into
the room would send them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from tamesu.voice.silence import SilenceGate, silent

if TYPE_CHECKING:
    from tamesu.voice.session import VoiceSession

    from .livekit_link import RoomLink

__all__ = ["RATE", "RoomAudio"]

RATE = 16000
SOURCE_QUEUE_MS = 60
"""Audio the microphone source holds before ``capture_frame`` waits."""
SOURCE_AHEAD_S = 0.025
"""Audio the source may hold before silent frames are skipped (one 20 ms frame and a little)."""
MAX_QUEUED = 500
"""Frames (10 s) waiting for the audio source before the oldest are dropped."""


class RoomAudio:
    """The caller's microphone and ears in the room (see the module docstring)."""

    def __init__(self, link: RoomLink) -> None:
        from livekit import rtc

        self.link = link
        self.session: VoiceSession | None = None
        self.source = rtc.AudioSource(RATE, 1, queue_size_ms=SOURCE_QUEUE_MS)
        self.dropped = 0
        self.skipped = 0
        """Silent frames of the caller not sent, to keep the source's queue short."""
        self.received = 0
        """Samples of the agent's track read so far."""
        self._out: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        link.on_audio_track = self._agent_track

    async def publish(self) -> None:
        """Publish the microphone track and start feeding it."""
        from livekit import rtc

        track = rtc.LocalAudioTrack.create_audio_track("tamesu-caller", self.source)
        options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        publication = await self.link.room.local_participant.publish_track(track, options)
        self.link.own_tracks.add(publication.sid)
        self._tasks.append(asyncio.ensure_future(self._feed()))

    def send_audio(self, payload: bytes) -> None:
        if len(self._out) >= MAX_QUEUED:
            self._out.popleft()
            self.dropped += 1
        self._out.append(payload)
        self._ready.set()

    def marks_played(self, names: list[str]) -> None:
        """LiveKit has no marks."""

    async def send_dtmf(self, digits: str) -> bool:
        await self.link.send_dtmf(digits)
        return True

    async def _feed(self) -> None:
        from livekit import rtc

        while True:
            await self._ready.wait()
            while self._out:
                pcm = self._out.popleft()
                if self.source.queued_duration > SOURCE_AHEAD_S and silent(np.frombuffer(pcm, dtype="<i2")):
                    self.skipped += 1
                    continue
                await self.source.capture_frame(rtc.AudioFrame(pcm, RATE, 1, len(pcm) // 2))
            self._ready.clear()

    def _agent_track(self, track: Any) -> None:
        self._tasks.append(asyncio.ensure_future(self._listen(track)))

    async def _listen(self, track: Any) -> None:
        from livekit import rtc

        stream = rtc.AudioStream(track, sample_rate=RATE, num_channels=1)
        gate = SilenceGate()
        try:
            async for event in stream:
                session = self.session
                samples = np.frombuffer(bytes(event.frame.data), dtype="<i2")
                self.received += len(samples)
                if session is not None and gate.passes(samples, RATE, playing=session.call.buffered > 0):
                    session.heard_audio(samples)
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.source.aclose()
