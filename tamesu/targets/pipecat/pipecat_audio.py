"""The pipecat target's audio mode: a Pipecat bot's frames driving a ``tamesu.voice.VoiceSession``.

The call pipeline sends the caller's 20 ms frames (speech, and silence between turns as a
microphone would) at ``sample_rate``, as the link carries them (``AudioRawFrame``s on the
websocket, a WebRTC track). ``PipecatCall`` is its wire: a
dispatcher task reads every frame and RTVI message as it arrives and tells the session what
happened: the bot's audio (mono, at the call's rate), its ``bot-tts-text`` words, its function
calls (answered as in text mode), interruptions, the raw messages and the socket closing. Keypad
digits go out as RTVI ``dtmf`` messages.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tamesu.clock import within
from tamesu.errors import TargetError
from tamesu.kernel.messages import Message, RawResponse, UserTurn
from tamesu.targets.pipecat.pipecat_wire import (
    WireFrame,
    raw,
    rtvi,
    rtvi_data,
    rtvi_type,
    speaks,
)
from tamesu.wire.wslink import Closed

if TYPE_CHECKING:
    import numpy as np

    from tamesu.targets.pipecat.adapter import PipecatAdapter
    from tamesu.voice.session import VoiceSession

__all__ = ["ANSWERING", "PipecatCall"]

ANSWERING = frozenset(
    {
        "bot-llm-started",
        "bot-llm-text",
        "bot-llm-stopped",
        "bot-tts-started",
        "bot-tts-text",
        "bot-tts-stopped",
        "bot-started-speaking",
        "bot-stopped-speaking",
        "bot-output",
        "bot-transcription",
    }
)
"""RTVI messages that show the bot answering: they keep the turn open (``idle`` counts from the last)."""

PHASES = {
    "bot-llm-started": ("llm", True),
    "bot-llm-stopped": ("llm", False),
    "bot-tts-started": ("tts", True),
    "bot-tts-stopped": ("tts", False),
    "llm-function-call-started": ("tool", True),
    "llm-function-call-in-progress": ("tool", True),
    "llm-function-call": ("tool", True),
}
"""RTVI messages that open or close a phase of the bot's answer. A function call's phase lasts until the
model runs again (``bot-llm-started``): the bot answers after the result, however long its model or TTS
takes, so silence while any phase is open does not end the turn."""


class PipecatCall:
    """The audio side of one Pipecat session (a ``VoiceWire``)."""

    def __init__(self, t: PipecatAdapter) -> None:
        from tamesu.voice.session import VoiceSession
        from tamesu.voice.settings import VoiceSettings

        self.t = t
        self.rate = int(t.config.sample_rate)
        settings = VoiceSettings.build(t.config, t.ctx, encoding="pcm16", rate=self.rate)
        self.voice: VoiceSession = VoiceSession(settings, t.ctx, self)
        self.talking = asyncio.Event()
        self._resamplers: dict[int, Any] = {}
        self._phases: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> bool:
        """Open the line and start reading; True when the bot starts talking within ``idle`` (a greeting)."""
        await self.voice.start()
        self._task = asyncio.get_running_loop().create_task(self._dispatch(), name="tamesu-pipecat-frames")
        if self.talking.is_set():
            return True
        with contextlib.suppress(asyncio.TimeoutError):
            await within(self.talking.wait(), self.t.idle)
        return self.talking.is_set()

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        async for msg in self.voice.turn(user):
            yield msg

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self.voice.stop()

    # The wire, as the call pipeline drives it.

    def send_audio(self, payload: bytes) -> None:
        link = self.t.link
        if link is not None and link.closed is None:
            link.send_audio(payload, self.rate)

    def marks_played(self, names: list[str]) -> None:
        """Pipecat's transport has no playback marks."""

    async def send_dtmf(self, digits: str) -> bool:
        """Keypad digits as an RTVI ``dtmf`` message, as a Pipecat client sends them."""
        link = self.t.link
        if link is None or not self.t.rtvi:
            return False
        await link.send_message(rtvi("dtmf", {"buttons": list(digits)}))
        return True

    # What the bot says.

    async def _dispatch(self) -> None:
        link, voice = self.t.link, self.voice
        assert link is not None
        pending, self.t.setup = self.t.setup, []
        for item in pending:
            await self._item(item)
        while True:
            item = await link.queue.get()
            if isinstance(item, Closed):
                voice.closed(item.code, item.reason)
                return
            try:
                await self._item(item)
            except TargetError as exc:
                voice.closed(None, self.t.ctx.redactor.redact(str(exc)))
                return

    async def _item(self, item: Any) -> None:
        voice, now = self.voice, self.t.ctx.clock.now()
        if speaks(item):
            self.talking.set()
        if isinstance(item, WireFrame):
            if item.kind == "audio":
                samples = self._samples(item)
                if samples is not None:
                    voice.heard_audio(samples)
            elif item.kind == "interruption":
                self._phases.clear()
                voice.heard_answering(False)
                if voice.agent_audible:
                    voice.heard_clear(reason="interrupted")
                voice.heard_message(RawResponse(body=raw(item), at=now), activity=False)
            else:
                voice.heard_message(RawResponse(body=raw(item), at=now), activity=False)
            return
        kind, data = rtvi_type(item), rtvi_data(item)
        answering = kind in ANSWERING or str(kind).startswith("llm-function-call")
        voice.heard_message(RawResponse(body=item, at=now), activity=answering)
        self._phase(str(kind))
        if kind == "bot-tts-text" and str(data.get("text") or "").strip():
            voice.heard_transcript(str(data["text"]))
        if kind == "user-transcription" and data.get("final") and str(data.get("text") or "").strip():
            voice.heard_caller_transcript(str(data["text"]))
        for msg in await self.t.rtvi_event(kind, data):
            voice.heard_message(msg)

    def _phase(self, kind: str) -> None:
        """Follow the phases of the bot's answer; the call holds the turn open while one is open."""
        phase = PHASES.get(kind)
        if phase is None:
            return
        name, opened = phase
        if kind == "bot-llm-started":
            self._phases.discard("tool")
        if opened:
            self._phases.add(name)
        else:
            self._phases.discard(name)
        self.voice.heard_answering(bool(self._phases))

    def _samples(self, item: WireFrame) -> np.ndarray | None:
        """A bot audio frame as mono int16 at the call's rate."""
        import numpy as np

        data = item.get("audio", b"")
        channels = int(item.get("num_channels") or 1)
        data = data[: len(data) - len(data) % (2 * channels)]
        if not data:
            return None
        samples = np.frombuffer(data, dtype="<i2")
        if channels > 1:
            samples = samples.reshape(-1, channels).mean(axis=1).round().astype(np.int16)
        rate = int(item.get("sample_rate") or self.rate)
        if rate != self.rate:
            from tamesu.audio.resample import StreamResampler

            resampler = self._resamplers.setdefault(rate, StreamResampler(rate, self.rate))
            samples = resampler.push(samples)
        return samples.astype(np.int16, copy=False)
