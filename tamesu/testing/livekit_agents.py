"""Agents of our own for LiveKit rooms, on the real ``livekit`` SDK: a text agent and a voice agent.

Each is an async function of a ``JobRequest`` (what the loopback server's dispatch gives) that
joins the room as a participant of kind agent and serves until the room empties or the caller
leaves. They record what they heard in a log, for tests to check.

- ``text_agent`` answers every text stream on ``lk.chat`` with ``reply(text)`` (a text stream on
  ``lk.chat``, or a user data packet when ``as_packets``), and presses back every SIP DTMF digit
  it receives.
- ``voice_agent`` publishes a microphone track, hears the caller's track by energy, and once
  the caller has been quiet for ``pause`` seconds speaks ``reply(heard)``: its first frame goes
  out ``delay`` seconds after the caller's last loud frame arrived (at once when ``pause`` was
  longer), so ``delay`` is the agent's reply delay as it hears the caller. The reply is
  synthesised by the project's TTS (Piper by default); ``heard`` is the caller's words by STT
  (Whisper by default; none when ``stt`` is None). Its words also go out as an
  ``lk.transcription`` text stream, as LiveKit's agents publish them, and so do its STT's words of
  the caller (naming the caller's track in ``lk.transcribed_track_id``). It stops speaking when the caller barges in, and answers a DTMF digit by
  saying which key was pressed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .livekit_server import JobRequest

__all__ = ["AgentLog", "text_agent", "voice_agent"]

RATE = 16000
FRAME = RATE // 50
LOUD = 1000
"""Peak (int16) of a caller frame that counts as speech."""


@dataclass
class AgentLog:
    """What an agent heard and did, in order."""

    heard: list[str] = field(default_factory=list)
    digits: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    spoke_at: list[float] = field(default_factory=list)
    """Loop time each spoken answer's first frame went to the audio source."""
    quiet_at: list[float] = field(default_factory=list)
    """Loop time the caller's speech ended as the agent heard it (its last loud frame arrived),
    before each answer; the answer's audio starts ``delay`` after it."""
    barged: int = 0
    errors: list[str] = field(default_factory=list)
    """Answers that could not be said (the room closed under them)."""
    joined: asyncio.Event = field(default_factory=asyncio.Event)
    left: asyncio.Event = field(default_factory=asyncio.Event)


Job = Callable[["JobRequest"], Awaitable[None]]


async def _serve(room: Any, log: AgentLog) -> None:
    """Until the last other participant leaves the room (or it closes)."""
    done = asyncio.Event()

    def gone(*_: Any) -> None:
        if not room.remote_participants:
            done.set()

    room.on("participant_disconnected", gone)
    room.on("disconnected", lambda *_: done.set())
    log.joined.set()
    try:
        await done.wait()
    finally:
        log.left.set()
        with contextlib.suppress(Exception):
            await room.disconnect()


def text_agent(
    reply: Callable[[str], str] = lambda text: f"You said: {text}",
    *,
    log: AgentLog | None = None,
    greeting: str | None = None,
    as_packets: bool = False,
    topic: str = "lk.chat",
) -> Job:
    """A text agent for ``LivekitServer.register_agent`` (see the module docstring)."""
    log = log if log is not None else AgentLog()

    async def run(job: JobRequest) -> None:
        from livekit import rtc

        room = rtc.Room()
        tasks: set[asyncio.Task[None]] = set()

        async def send(text: str) -> None:
            log.said.append(text)
            if as_packets:
                await room.local_participant.publish_data(text.encode(), reliable=True, topic=topic)
            else:
                await room.local_participant.send_text(text, topic=topic)

        async def answer(reader: Any) -> None:
            text = await reader.read_all()
            log.heard.append(text)
            await send(reply(text))

        def spawn(coro: Any) -> None:
            task = asyncio.ensure_future(coro)
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        room.register_text_stream_handler(topic, lambda reader, _who: spawn(answer(reader)))

        def dtmf(event: Any) -> None:
            log.digits.append(event.digit)
            spawn(room.local_participant.publish_dtmf(code=event.code, digit=event.digit))

        room.on("sip_dtmf_received", dtmf)
        await room.connect(job.url, job.token)
        if greeting:
            await send(greeting)
        await _serve(room, log)

    run.log = log  # type: ignore[attr-defined]
    return run


def voice_agent(
    reply: Callable[[str], str] = lambda heard: "I heard you.",
    *,
    log: AgentLog | None = None,
    greeting: str | None = "Hello, how can I help?",
    delay: float = 0.0,
    pause: float = 0.4,
    tts: str | None = "piper",
    stt: str | None = "whisper",
    stops_on_barge_in: bool = True,
) -> Job:
    """A voice agent for ``LivekitServer.register_agent`` (see the module docstring)."""
    log = log if log is not None else AgentLog()

    async def run(job: JobRequest) -> None:
        from livekit import rtc

        from tamesu.speech_pool import local_speech_pool

        speech = local_speech_pool()
        room = rtc.Room()
        source = rtc.AudioSource(RATE, 1, queue_size_ms=200)
        state: dict[str, Any] = {"speaking": None, "heard": [], "loud": False}
        tasks: set[asyncio.Task[None]] = set()
        loop = asyncio.get_running_loop()

        def spawn(coro: Any) -> asyncio.Task[None]:
            task = asyncio.ensure_future(coro)
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            return task

        async def speak(text: str, at: float | None = None) -> None:
            """Say ``text``, starting at loop time ``at`` (or at once) once it is synthesised."""
            from tamesu.audio.resample import resample

            audio = await speech.synthesize(text, engine=tts)
            samples = (
                resample(np.asarray(audio.samples), audio.sample_rate, RATE)
                if audio.sample_rate != RATE
                else audio.samples
            )
            if at is not None and at > loop.time():
                await asyncio.sleep(at - loop.time())  # the agent's own thinking time, what it simulates
            log.said.append(text)
            log.spoke_at.append(loop.time())
            spawn(
                room.local_participant.send_text(
                    text, topic="lk.transcription", attributes={"lk.transcription_final": "true"}
                )
            )
            pcm = np.asarray(samples, dtype=np.int16)
            for start in range(0, len(pcm), FRAME):
                chunk = np.zeros(FRAME, dtype=np.int16)
                part = pcm[start : start + FRAME]
                chunk[: len(part)] = part
                await source.capture_frame(rtc.AudioFrame(chunk.tobytes(), RATE, 1, FRAME))
            await source.wait_for_playout()

        async def answer(heard_audio: np.ndarray, quiet_at: float) -> None:
            from tamesu.audio.tts import Audio

            text = ""
            if len(heard_audio) and stt is not None:
                result = await speech.transcribe(Audio(heard_audio, RATE), engine=stt)
                text = result.text.strip()
            log.heard.append(text)
            if text and state.get("caller_track"):  # what it heard, as LiveKit's agents transcribe the user
                attributes = {
                    "lk.transcription_final": "true",
                    "lk.transcribed_track_id": state["caller_track"],
                }
                spawn(room.local_participant.send_text(text, topic="lk.transcription", attributes=attributes))
            log.quiet_at.append(quiet_at)
            try:
                await speak(reply(text), at=quiet_at + delay)
            except Exception as exc:  # the room closed under the answer (the call ended): nothing to say to
                log.errors.append(f"answer: {exc}")

        async def hear(track: Any) -> None:
            stream = rtc.AudioStream(track, sample_rate=RATE, num_channels=1)
            last_loud = 0.0
            async for event in stream:
                frame = np.frombuffer(bytes(event.frame.data), dtype="<i2")
                if len(frame) and int(np.abs(frame).max()) > LOUD:
                    last_loud = loop.time()  # the frame's arrival: the end of the audio it holds
                    state["heard"].append(frame.copy())
                    speaking = state["speaking"]
                    if speaking is not None and not speaking.done() and stops_on_barge_in:
                        log.barged += 1
                        speaking.cancel()
                        source.clear_queue()
                    state["loud"] = True
                elif state["loud"] and loop.time() - last_loud >= pause:
                    state["loud"] = False
                    heard = np.concatenate(state["heard"]) if state["heard"] else np.zeros(0, np.int16)
                    state["heard"] = []
                    state["speaking"] = spawn(answer(heard, last_loud))

        def subscribed(track: Any, publication: Any, _participant: Any) -> None:
            if track.kind == rtc.TrackKind.KIND_AUDIO:
                state["caller_track"] = publication.sid
                spawn(hear(track))
                if greeting and not log.said:  # the caller can hear once it publishes
                    state["speaking"] = spawn(speak(greeting))

        def dtmf(event: Any) -> None:
            log.digits.append(event.digit)
            state["speaking"] = spawn(speak(f"You pressed {event.digit}."))

        room.on("track_subscribed", subscribed)
        room.on("sip_dtmf_received", dtmf)
        await room.connect(job.url, job.token)
        track = rtc.LocalAudioTrack.create_audio_track("agent-voice", source)
        await room.local_participant.publish_track(
            track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        )
        try:
            await _serve(room, log)
        finally:
            for task in list(tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await source.aclose()

    run.log = log  # type: ignore[attr-defined]
    return run
