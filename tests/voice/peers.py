"""Real loopback peers for the voice tests: a voice-websocket / Twilio Media Streams agent that
speaks real audio, and tiny speech engines where Piper and Whisper are not the point.

The agent hears the caller by energy (a frame is speech above -30 dBFS), answers ``delay`` seconds
after the last loud frame it received, speaks a vowel-like sound (a harmonic complex the VAD calls
speech from its first frame, so onsets are exact), optionally stops when the caller barges in,
reads and plays DTMF, and logs everything it did with loop times for the tests to check.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import WSMsgType, web

from tamesu.audio.codec import decode, encode, ulaw_decode, ulaw_encode
from tamesu.audio.dtmf import DtmfDetector, dtmf_tones
from tamesu.audio.pcm import float_to_int16
from tamesu.audio.stt import STTCapabilities, STTEngine, Transcription
from tamesu.audio.tts import Audio, TTSCapabilities, TTSEngine
from tamesu.http import make_client
from tamesu.secrets import Redactor
from tamesu.targets.base import TargetAdapter, TargetContext, targets
from tamesu.templates import Scope

from ..virtual_time import LoopClock

LOUD = 1000
QUIET_FRAMES = 10


def vowel(seconds: float, rate: int, *, f0: float = 140.0, dbfs: float = -20.0) -> np.ndarray:
    """A steady voiced sound with 5 ms ramps: speech to a VAD from its first frame to its last."""
    t = np.arange(int(seconds * rate)) / rate
    x = np.zeros_like(t)
    for k in range(1, int(0.45 * rate / f0)):
        hk = k * f0
        gain = 1 / k**0.7 + sum(1.5 * np.exp(-0.5 * ((hk - f) / 150) ** 2) for f in (700, 1200))
        x += gain * np.sin(2 * np.pi * hk * t + k)
    ramp = np.minimum(1, np.minimum(np.arange(len(t)), np.arange(len(t))[::-1]) / (0.005 * rate))
    x = x * ramp
    x = x / (np.sqrt(np.mean(x**2)) + 1e-12) * 10 ** (dbfs / 20)
    return float_to_int16(x)


class VowelTTS(TTSEngine):
    """Speaks 0.25 s per word as a vowel: the caller's voice where the words do not matter."""

    name = "test-vowel"

    @property
    def capabilities(self) -> TTSCapabilities:
        return TTSCapabilities(languages=None, sample_rate=16000)

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        return Audio(vowel(0.25 * max(1, len(text.split())), 16000), 16000)


class CountingSTT(STTEngine):
    """Hears how long the speech was, so tests can tell STT text from the agent's own transcript."""

    name = "test-stt"

    @property
    def capabilities(self) -> STTCapabilities:
        return STTCapabilities(languages=frozenset({"en"}), sample_rate=16000)

    async def _transcribe(self, audio: Audio, *, language: str | None) -> Transcription:
        return Transcription(
            text=f"heard {audio.duration:.1f} seconds", language="en", duration=audio.duration
        )


def register_engines() -> None:
    """Register the test engines (in this process, a Ray worker or a speech pool replica).

    The registries are imported here: pickled by value for Ray, a module-level registry would
    travel as a copy instead of naming the process's own.
    """
    from tamesu.audio.stt import stt_engines
    from tamesu.audio.tts import tts_engines

    tts_engines.add("test-vowel", VowelTTS)
    stt_engines.add("test-stt", CountingSTT)


@dataclass
class AgentScript:
    """How the loopback agent behaves."""

    greeting: float | None = 0.6
    """Seconds of greeting speech when the call connects (None: the agent waits for the caller)."""
    reply: float = 0.8
    delay: float = 0.5
    """Seconds from the caller's last loud frame to the agent's reply."""
    stop_on_barge_in: bool = True
    transcripts: bool = True
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    paced: bool = True
    """voice protocol: send speech at real time (else all at once, like Twilio agents)."""
    dtmf_reply: str = ""
    """Keypad tones the agent plays at the end of its first reply."""
    end_after: int | None = None
    """Hang up (close the socket) after this many replies."""
    drop_after: int | None = None
    """Abort the connection (no close frame) after this many replies."""
    encoding: str = "pcm16"
    rate: int = 16000
    mark_audio: float = 0.0
    """twilio: at connect, send this much audio and a mark (``m1``)."""
    clear_after: float | None = None
    """twilio: send ``clear`` this long after the marked audio."""
    silent: bool = False
    """Never say anything."""
    gap: tuple[float, float] | None = None
    """(at, seconds): a pause this long, this far into each thing the agent says (a breath between
    two sentences, shorter than the caller's ``idle``)."""
    json_frames: bool = False
    """voice protocol: send audio as ``{audio_event: {audio_base_64}}`` JSON messages."""
    lines: tuple[str, ...] = ("Hello, this is the loopback agent.", "Returns are accepted within 30 days.")
    """What the agent says: its greeting, then reply n is ``lines[n]`` (the last once they run out)."""
    speaks: tuple[str, str] | None = None
    """(persona voice, language) the agent speaks its lines in with tamesu's own TTS, such as
    ("en-US-male", "en") for Piper or ("espeak:de", "de"); None: a vowel as long as the line's seconds."""
    loud: float = LOUD
    """The RMS (int16) above which a caller frame is speech to the agent."""
    quiet_frames: int = QUIET_FRAMES
    """Quiet 20 ms frames after speech that end the caller's turn (more than a TTS voice's pauses
    between sentences, whose length Piper draws at random, when a test must not be answered mid-turn)."""


@dataclass
class AgentLog:
    connected: float | None = None
    frames: int = 0
    media: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    start: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    dtmf_events: list[str] = field(default_factory=list)
    dtmf_tones: list[str] = field(default_factory=list)
    caller_ends: list[float] = field(default_factory=list)
    replies: list[float] = field(default_factory=list)
    barge_ins: list[float] = field(default_factory=list)
    marks_sent: dict[str, float] = field(default_factory=dict)
    marks_echoed: dict[str, float] = field(default_factory=dict)
    marks_echoed_after: dict[str, int] = field(default_factory=dict)
    """How many of the caller's media frames had arrived when each mark came back: the caller's
    frame count then, since its frames and its echoes share one ordered socket."""
    cleared: float | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)


class LoopbackAgent:
    """Serves ``/voice`` (generic protocol) and ``/twilio`` with one ``AgentScript``."""

    def __init__(self, script: AgentScript | None = None) -> None:
        self.script = script or AgentScript()
        self.logs: list[AgentLog] = []
        self.opened: Any = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/voice", self._voice)
        app.router.add_get("/twilio", self._twilio)
        app.router.add_post("/calls", self._create_call)
        return app

    async def _create_call(self, request: web.Request) -> web.Response:
        """A session.open endpoint: mints a call id."""
        self.opened = await request.json()
        return web.json_response({"call_id": "c-42"})

    @property
    def log(self) -> AgentLog:
        return self.logs[-1]

    async def _voice(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        call = _Call(self, ws, twilio=False, request=request)
        call.start()
        async for msg in ws:
            if msg.type == WSMsgType.BINARY:
                call.hear(decode(msg.data, self.script.encoding))
            elif msg.type == WSMsgType.TEXT:
                data = json.loads(msg.data)
                call.log.messages.append(data)
                if data.get("type") == "dtmf":
                    call.pressed(str(data.get("digit")))
                if "user_audio_chunk" in data:
                    call.hear(decode(base64.b64decode(data["user_audio_chunk"]), self.script.encoding))
        await call.close()
        return ws

    async def _twilio(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        call = _Call(self, ws, twilio=True, request=request)
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            event = data.get("event")
            if event != "media":
                call.log.messages.append(data)
            if event == "start":
                call.log.start = data
                call.sid = data["start"]["streamSid"]
                call.start()
            elif event == "media":
                call.log.media.append((call.now(), data))
                call.hear(ulaw_decode(base64.b64decode(data["media"]["payload"])))
            elif event == "dtmf":
                call.pressed(data["dtmf"]["digit"])
            elif event == "mark":
                call.log.marks_echoed[data["mark"]["name"]] = call.now()
                call.log.marks_echoed_after[data["mark"]["name"]] = len(call.log.media)
                call.pending_marks.discard(data["mark"]["name"])
        await call.close()
        return ws


class _Call:
    def __init__(
        self, agent: LoopbackAgent, ws: web.WebSocketResponse, *, twilio: bool, request: web.Request
    ) -> None:
        self.agent, self.ws, self.twilio, self.request = agent, ws, twilio, request
        self.script = agent.script
        self.rate = 8000 if twilio else self.script.rate
        self.log = AgentLog(connected=self.now(), headers=dict(request.headers))
        agent.logs.append(self.log)
        self.sid = ""
        self.in_speech = False
        self.quiet = 0
        self.last_loud = 0.0
        self.replies = 0
        self.playing: asyncio.Task[None] | None = None
        self.pending_marks: set[str] = set()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.detector = DtmfDetector(self.rate)

    @staticmethod
    def now() -> float:
        return asyncio.get_running_loop().time()

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def start(self) -> None:
        if self.twilio and self.script.mark_audio:
            self.spawn(self._marks())
        elif self.script.greeting and not self.script.silent:
            self.spawn(self.say(self.script.greeting, self.script.lines[0]))

    def pressed(self, digit: str) -> None:
        """A keypad event: answered like the end of a caller's turn (once per burst of digits)."""
        self.log.dtmf_events.append(digit)
        if len(self.log.dtmf_events) == 1 or self.now() - self.last_loud > 0.5:
            self.last_loud = self.now()
            self.spawn(self.answer(self.last_loud + self.script.delay))

    def hear(self, samples: np.ndarray) -> None:
        self.log.frames += 1
        self.log.dtmf_tones += [e.digit for e in self.detector.push(samples)]
        x = samples.astype(np.float32)
        loud = float(np.sqrt(np.mean(x * x))) > self.script.loud if len(x) else False
        if loud:
            self.last_loud = self.now()
            self.quiet = 0
            if not self.in_speech:
                self.in_speech = True
                talking = (self.playing is not None and not self.playing.done()) or bool(self.pending_marks)
                if talking and self.script.stop_on_barge_in:
                    self.log.barge_ins.append(self.now())
                    self.spawn(self.stop())
        elif self.in_speech:
            self.quiet += 1
            if self.quiet == self.script.quiet_frames:
                self.in_speech = False
                self.log.caller_ends.append(self.last_loud)
                if not self.script.silent:
                    self.spawn(self.answer(self.last_loud + self.script.delay))

    async def answer(self, at: float) -> None:
        await asyncio.sleep(max(0.0, at - self.now()))
        self.replies += 1
        if self.script.drop_after is not None and self.replies > self.script.drop_after:
            if self.request.transport is not None:
                self.request.transport.abort()
            return
        self.log.replies.append(self.now())
        tones = self.script.dtmf_reply if self.replies == 1 else ""
        lines = self.script.lines
        await self.say(self.script.reply, lines[min(self.replies, len(lines) - 1)], tones=tones)
        if self.script.end_after is not None and self.replies >= self.script.end_after:
            if self.playing is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self.playing
            if not self.twilio:
                await self.ws.send_json({"type": "end"})
            await self.ws.close()

    async def say(self, seconds: float, text: str, *, tones: str = "") -> None:
        audio = vowel(seconds, self.rate)
        if self.script.speaks is not None:
            from tamesu.voice.speech import render_speech

            voice, language = self.script.speaks
            audio = np.asarray((await render_speech(text, self.rate, voice=voice, language=language)).samples)
        if self.script.gap is not None:
            at, seconds = (int(x * self.rate) for x in self.script.gap)
            audio = np.concatenate([audio[:at], np.zeros(seconds, np.int16), audio[at:]])
        if tones:
            gap = np.zeros(int(0.2 * self.rate), np.int16)
            audio = np.concatenate([audio, gap, dtmf_tones(tones, self.rate, tone_ms=100, gap_ms=100)])
        if self.script.transcripts and not self.twilio:
            await self.ws.send_json({"type": "transcript", "role": "assistant", "text": text})
        if self.script.tool_calls and not self.twilio:
            await self.ws.send_json({"type": "tool_calls", "calls": self.script.tool_calls})
        self.playing = asyncio.ensure_future(self._send(audio))
        with contextlib.suppress(asyncio.CancelledError):
            await self.playing

    async def _send(self, audio: np.ndarray) -> None:
        n = self.rate // 50
        if self.twilio:
            for start in range(0, len(audio), n):
                await self._media(audio[start : start + n])
            name = f"said-{len(self.log.replies)}"
            self.pending_marks.add(name)
            await self.ws.send_json({"event": "mark", "streamSid": self.sid, "mark": {"name": name}})
            return
        if not self.script.paced:
            await self._chunk(audio)
            return
        due = self.now()
        for start in range(0, len(audio), n):
            await self._chunk(audio[start : start + n])
            due += 0.02
            await asyncio.sleep(max(0.0, due - self.now()))

    async def _chunk(self, chunk: np.ndarray) -> None:
        data = encode(chunk, self.script.encoding)
        if self.script.json_frames:
            await self.ws.send_json({"audio_event": {"audio_base_64": base64.b64encode(data).decode()}})
        else:
            await self.ws.send_bytes(data)

    async def _media(self, chunk: np.ndarray) -> None:
        payload = base64.b64encode(ulaw_encode(chunk).tobytes()).decode()
        await self.ws.send_json({"event": "media", "streamSid": self.sid, "media": {"payload": payload}})

    async def stop(self) -> None:
        if self.playing is not None:
            self.playing.cancel()
        if self.twilio:
            self.pending_marks.clear()
            await self.ws.send_json({"event": "clear", "streamSid": self.sid})
        else:
            await self.ws.send_json({"type": "interrupted"})

    async def _marks(self) -> None:
        """twilio: marked audio, and optionally a clear while it plays."""
        audio = vowel(self.script.mark_audio, self.rate)
        for start in range(0, len(audio), 160):
            await self._media(audio[start : start + 160])
        self.log.marks_sent["m1"] = self.now()
        await self.ws.send_json({"event": "mark", "streamSid": self.sid, "mark": {"name": "m1"}})
        if self.script.clear_after is not None:
            await asyncio.sleep(self.script.clear_after)
            self.log.cleared = self.now()
            await self.ws.send_json({"event": "clear", "streamSid": self.sid})

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        self.log.closed.set()


async def collect(adapter: Any, user: Any = None) -> list[Any]:
    """Every message of one turn (the last is the AgentTurn)."""
    return [msg async for msg in adapter.turn(user)]


def metrics_of(messages: list[Any]) -> dict[str, float]:
    from tamesu.kernel.messages import MetricMsg

    return {m.name: m.value for m in messages if isinstance(m, MetricMsg)}


def spec_with(
    persona: dict[str, Any] | None = None, *, seed: int = 7, assertions: tuple[str, ...] = ()
) -> Any:
    """Enough of a RunSpec for a call's context (``run_context``): the persona (with behaviors) and
    assertion kinds."""
    from types import SimpleNamespace

    from tamesu.config.suite import Persona

    return SimpleNamespace(
        run_id="voice-run",
        test=SimpleNamespace(persona=Persona.model_validate(persona) if persona else None),
        language=None,
        seed=seed,
        suite_dir=".",
        assertions=[SimpleNamespace(item=SimpleNamespace(kind=k)) for k in assertions],
    )


def run_context(spec: Any) -> dict[str, Any]:
    """The TargetContext fields a run's graph takes from its spec (what ``spec_with`` makes)."""
    if spec is None:
        return {}
    return {
        "test": spec.test,
        "language": spec.language,
        "seed": spec.seed,
        "detect_dtmf": any(a.item.kind == "dtmf_received" for a in spec.assertions),
    }


class Calls:
    """Builds voice / twilio targets against a loopback agent and always stops them."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.runners: list[web.AppRunner] = []
        self.http = make_client()
        self.started: list[TargetAdapter] = []

    async def serve(self, app: web.Application) -> str:
        """Serve ``app`` on 127.0.0.1:0; its ws:// base URL."""
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self.runners.append(runner)
        return f"ws://127.0.0.1:{runner.addresses[0][1]}"

    async def agent(self, script: AgentScript | None = None) -> tuple[LoopbackAgent, str]:
        agent = LoopbackAgent(script)
        return agent, await self.serve(agent.app())

    def context(
        self,
        *,
        turn_timeout: float = 5.0,
        secrets: dict[str, str] | None = None,
        spec: Any = None,
        **fields: Any,
    ) -> TargetContext:
        redactor = Redactor()
        for value in (secrets or {}).values():
            redactor.add(value)
        values = dict(secrets or {})
        scope = Scope({"vars": {"tier": "gold"}}, resolvers={"secrets": values.__getitem__})
        return TargetContext(
            name="phone",
            run_id="voice-run",
            session="sess-1",
            scope=scope,
            clock=LoopClock(),
            http=self.http,
            redactor=redactor,
            turn_timeout=turn_timeout,
            **{
                "tts_engine": "test-vowel",
                "stt_engine": "test-stt",
                "output_dir": self.out,
                **run_context(spec),
                **fields,
            },
        )

    async def target(self, config: dict[str, Any], *, start: bool = True, **ctx: Any) -> Any:
        from tamesu.config.target import parse_target

        cfg = parse_target(config)
        adapter = targets.adapter(cfg.type)(cfg, self.context(**ctx))
        self.started.append(adapter)
        if start:
            await adapter.start()
        return adapter

    async def close(self) -> None:
        for adapter in self.started:
            await adapter.stop()
        await self.http.aclose()
        for runner in reversed(self.runners):
            await runner.cleanup()


@pytest.fixture
async def calls(tmp_path: Path) -> AsyncIterator[Calls]:
    """Loopback agents and the voice / twilio targets calling them (stopped afterwards)."""
    register_engines()
    c = Calls(tmp_path)
    yield c
    await c.close()
