"""The realtime target's audio mode: the session's events driving a ``tamesu.voice.VoiceSession``.

The call pipeline streams the caller (20 ms frames, each an ``input_audio_buffer.append`` in the
session's format, silence between turns as a microphone would) and plays, hears and records the
agent. ``RealtimeCall`` is its wire: a dispatcher task reads every server event as it arrives and
tells the session what happened (audio, the API's transcript, function calls and their answers,
the raw events, the end of the call). When server VAD hears the caller start talking over the
agent, the agent's queued audio is dropped, as a client app stops playback. With server VAD off it
commits the input buffer and asks for a response itself whenever the caller stops talking. A turn
ends after ``idle`` (2 s) without agent audio or response events.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.kernel.messages import Message, RawResponse, UserTurn
from tamesu.targets.realtime.realtime_events import Calls, api_error, canonical, failure, kept
from tamesu.wire.wslink import Closed

if TYPE_CHECKING:
    from tamesu.targets.realtime.adapter import RealtimeAdapter
    from tamesu.voice.session import VoiceSession

__all__ = ["RealtimeCall"]

_POLL_S = 0.02


class RealtimeCall:
    """The audio side of one realtime session (a ``VoiceWire``)."""

    def __init__(self, t: RealtimeAdapter) -> None:
        from tamesu.voice.session import VoiceSession
        from tamesu.voice.settings import VoiceSettings

        self.t = t
        d = t.dialect
        settings = VoiceSettings.build(t.config, t.ctx, encoding=d.encoding, rate=d.sample_rate)
        self.voice: VoiceSession = VoiceSession(settings, t.ctx, self)
        self.calls = Calls()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self.voice.start()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._dispatch(), name="tamesu-realtime-events"))
        if not self.t.server_vad:
            self._tasks.append(loop.create_task(self._commit_turns(), name="tamesu-realtime-commit"))

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        async for msg in self.voice.turn(user):
            yield msg

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        await self.voice.stop()

    # The wire, as the call pipeline drives it.

    def send_audio(self, payload: bytes) -> None:
        link = self.t.link
        if link is not None and link.closed is None:
            link.queue_send(json.dumps(self.t.dialect.append(payload)))

    def marks_played(self, names: list[str]) -> None:
        """The Realtime API has no playback marks."""

    async def send_dtmf(self, digits: str) -> bool:
        """The Realtime API takes no keypad messages from a client: the tones are played in-band."""
        return False

    # What the API says.

    async def _dispatch(self) -> None:
        link, voice = self.t.link, self.voice
        assert link is not None
        while True:
            event = await link.queue.get()
            if isinstance(event, Closed):
                voice.closed(event.code, event.reason)
                return
            try:
                await self._event(event)
            except TargetError as exc:
                voice.closed(None, self.t.ctx.redactor.redact(str(exc)))
                return

    async def _event(self, event: dict[str, Any]) -> None:
        voice, d = self.voice, self.t.dialect
        kind = canonical(str(event.get("type", "")))
        if kind == "response.output_audio.delta":
            from tamesu.audio.codec import decode

            try:
                data = base64.b64decode(str(event.get("delta", "")))
            except (binascii.Error, ValueError):
                return
            if d.encoding == "pcm16":
                data = data[: len(data) - len(data) % 2]
            voice.heard_audio(decode(data, d.encoding))
            return
        if kept(event):
            voice.heard_message(
                RawResponse(body=event, at=self.t.ctx.clock.now()), activity=kind.startswith("response.")
            )
        if kind == "error":
            raise TargetError(api_error(event))
        if kind == "input_audio_buffer.speech_started" and voice.agent_audible:
            voice.heard_clear(
                reason="speech_started"
            )  # as a client app stops playback when the caller barges in
        if kind in ("response.created", "response.done"):
            voice.heard_answering(kind == "response.created")  # a slow model is still answering
        if kind == "response.output_audio_transcript.done" and event.get("transcript"):
            voice.heard_transcript(str(event["transcript"]))
        if kind == "conversation.item.input_audio_transcription.completed" and event.get("transcript"):
            voice.heard_caller_transcript(str(event["transcript"]))
        self.calls.see(kind, event)
        if kind != "response.done":
            return
        failed = failure(event)
        if failed is not None:
            raise TargetError(failed[0], retryable=failed[1])
        calls = self.calls.take()
        if not calls:
            return
        answers, done = await self.t.answer(calls)
        for msg in answers:
            voice.heard_message(msg)
        if done:
            voice.heard_done()

    async def _commit_turns(self) -> None:
        """Turn detection off: each time the caller stops talking, commit and ask for a response."""
        talking = False
        while True:
            now_talking = self.voice.call.talking
            if talking and not now_talking:
                await self.t.send(self.t.dialect.commit())
                await self.t.send(self.t.dialect.response_create())
            talking = now_talking
            await asyncio.sleep(_POLL_S)
