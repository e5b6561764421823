"""Mochi Shoes on the phone: a small deterministic voice agent to try tamesu's audio tests against.

    python examples/voice_agent/agent.py --port 8766

It answers on two websockets:

- ``/voice``: a generic voice protocol. Binary frames are PCM16 mono at 16 kHz both ways (the agent
  sends its speech in real time, 20 ms at a time). JSON text messages: the agent sends
  ``{type: transcript, role: assistant, text}`` for what it says, ``{type: user_transcript, text}``
  for what it heard the caller say, ``{type: tool_calls, calls}``,
  ``{type: interrupted}`` when it stops for the caller and ``{type: end}`` before hanging up; it
  reads ``{type: dtmf, digit}`` and ``{type: hangup}``.
- ``/twilio``: Twilio Media Streams, as Twilio would connect to it (8 kHz mu-law ``media``; the agent
  sends all of a reply at once followed by a ``mark``, and ``clear`` when the caller barges in).

It hears with the local STT (Whisper), speaks with the local TTS (Piper), takes turns with a VAD
(the caller's turn ends after 0.6 s of silence) and stops talking as soon as the caller speaks over
it. What it says comes from the text demo agent's rules (examples/demo_agent/agent.py), so runs
are repeatable: returns within 30 days, order status for ORD-<digits>, "bye" ends the call.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import importlib.util
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from aiohttp import WSMsgType, web

from tamesu.audio.codec import ulaw_decode, ulaw_encode
from tamesu.audio.engines import get_stt, get_tts
from tamesu.audio.tts import Audio
from tamesu.audio.vad import TurnDetector

GREETING = "Hi! You have reached Mochi Shoes. How can I help you today?"
END_OF_TURN_S = 0.6
PRE_ROLL_S = 0.3
FRAME_S = 0.02
MISHEARD: dict[str, str] = {}
"""``--mishear HEARD=AS``: words the agent's ear gets wrong on purpose (a speech path that breaks it)."""


def _load_brain() -> Callable[[str], Any]:
    """The text demo agent's ``answer`` (examples/ is not a package)."""
    path = Path(__file__).resolve().parents[1] / "demo_agent" / "agent.py"
    spec = importlib.util.spec_from_file_location("tamesu_demo_brain", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("tamesu_demo_brain", module)
    spec.loader.exec_module(module)
    return module.answer  # type: ignore[no-any-return]


answer = _load_brain()


class Call:
    """One caller: hears with a VAD and STT, thinks with ``answer``, speaks with TTS.

    A transport (``VoiceSocket``, ``TwilioSocket``) feeds ``hear`` with int16 audio and implements
    ``play`` (speak samples at the wire's rate), ``stop_playing`` and ``say_control``.
    """

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.vad = TurnDetector(rate, idle=END_OF_TURN_S)
        self.heard: list[np.ndarray] = []
        self.pre_roll: list[np.ndarray] = []
        self.in_speech = False
        self.pushed = 0
        self.speaking = False
        self.ended = False
        self.tasks: set[asyncio.Task[Any]] = set()
        self.play: Callable[[np.ndarray], Awaitable[None]]
        self.stop_playing: Callable[[], Awaitable[None]]
        self.say_control: Callable[[dict[str, Any]], Awaitable[None]]

    def spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def hear(self, samples: np.ndarray) -> None:
        """Caller audio: find its turns; speech over the agent makes the agent stop (barge-in)."""
        if self.in_speech:
            self.heard.append(samples)
        else:
            self.pre_roll = [*self.pre_roll, samples][-int(PRE_ROLL_S / FRAME_S) :]
        for event in self.vad.push(samples):
            if event.kind == "speech_start":
                if not self.in_speech:
                    self.in_speech = True
                    self.heard = [*self.pre_roll, samples]
                if self.speaking:
                    self.spawn(self.stop_playing())
            elif event.kind == "turn_end" and self.in_speech:
                utterance = np.concatenate(self.heard) if self.heard else np.zeros(0, np.int16)
                self.in_speech, self.heard, self.pre_roll = False, [], []
                self.spawn(self.reply_to(utterance))

    async def speak(self, text: str, *, tool_calls: list[dict[str, Any]] | None = None) -> None:
        """Synthesise first, then tell and play, so no gap opens between the messages and the audio."""
        audio = await get_tts("piper").synthesize(text)
        if tool_calls:
            await self.say_control({"type": "tool_calls", "calls": tool_calls})
        await self.say_control({"type": "transcript", "role": "assistant", "text": text})
        await self.play(audio.resample(self.rate).samples)

    async def greet(self) -> None:
        await self.speak(GREETING)

    async def reply_to(self, utterance: np.ndarray) -> None:
        if len(utterance) < self.rate // 5 or self.ended:
            return
        heard = await get_stt("whisper").transcribe(Audio(utterance, self.rate), language="en")
        text = heard.text
        for wrong, right in MISHEARD.items():
            text = text.replace(wrong, right)
        await self.say_control({"type": "user_transcript", "text": text})
        await self.respond(text)

    async def respond(self, text: str) -> None:
        result = answer(text)
        await self.speak(result.reply, tool_calls=result.tool_calls)
        if result.end_session:
            self.ended = True
            await self.hang_up()

    async def pressed(self, digits: str) -> None:
        await self.speak(f"You pressed {' '.join(digits)}.")

    async def hang_up(self) -> None:
        """The transport closes the call once the last words have played."""

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()


async def voice(request: web.Request) -> web.WebSocketResponse:
    """The generic voice protocol: PCM16 16 kHz binary frames, JSON control messages."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    call = Call(16000)
    playing: list[asyncio.Task[None]] = []

    async def play(samples: np.ndarray) -> None:
        task = asyncio.ensure_future(_paced(ws, samples, call.rate))
        playing.append(task)
        call.speaking = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        call.speaking = False

    async def stop_playing() -> None:
        for task in playing:
            task.cancel()
        playing.clear()
        call.speaking = False
        await ws.send_json({"type": "interrupted"})

    async def hang_up() -> None:
        await ws.send_json({"type": "end"})
        await ws.close()

    call.play, call.stop_playing, call.say_control = play, stop_playing, ws.send_json
    call.hang_up = hang_up  # type: ignore[method-assign]
    call.spawn(call.greet())
    async for msg in ws:
        if msg.type == WSMsgType.BINARY:
            call.hear(np.frombuffer(msg.data[: len(msg.data) // 2 * 2], dtype="<i2").astype(np.int16))
        elif msg.type == WSMsgType.TEXT:
            data = json.loads(msg.data)
            if data.get("type") == "dtmf":
                call.spawn(call.pressed(str(data.get("digit", ""))))
            elif data.get("type") == "hangup":
                break
    await call.close()
    return ws


async def _paced(ws: web.WebSocketResponse, samples: np.ndarray, rate: int) -> None:
    """Send speech in 20 ms frames at real time, so stopping is immediate."""
    loop = asyncio.get_running_loop()
    n = rate // 50
    due = loop.time()
    for start in range(0, len(samples), n):
        await ws.send_bytes(samples[start : start + n].astype("<i2").tobytes())
        due += FRAME_S
        await asyncio.sleep(max(0.0, due - loop.time()))


async def twilio(request: web.Request) -> web.WebSocketResponse:
    """Twilio Media Streams: mu-law 8 kHz ``media``; a reply is sent whole, then a ``mark``."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    call = Call(8000)
    state: dict[str, Any] = {"sid": None, "marks": 0, "pending": set()}
    played = asyncio.Event()
    played.set()

    async def play(samples: np.ndarray) -> None:
        codes = ulaw_encode(samples).tobytes()
        for start in range(0, len(codes), 160):
            payload = base64.b64encode(codes[start : start + 160]).decode()
            await ws.send_json({"event": "media", "streamSid": state["sid"], "media": {"payload": payload}})
        state["marks"] += 1
        name = f"reply-{state['marks']}"
        state["pending"].add(name)
        played.clear()
        call.speaking = True
        await ws.send_json({"event": "mark", "streamSid": state["sid"], "mark": {"name": name}})

    async def stop_playing() -> None:
        call.speaking = False
        await ws.send_json({"event": "clear", "streamSid": state["sid"]})
        state["pending"].clear()
        played.set()

    async def hang_up() -> None:
        await played.wait()
        await ws.close()

    call.play, call.stop_playing = play, stop_playing
    call.say_control = _ignore
    call.hang_up = hang_up  # type: ignore[method-assign]
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            continue
        data = json.loads(msg.data)
        event = data.get("event")
        if event == "start":
            state["sid"] = data["start"]["streamSid"]
            call.spawn(call.greet())
        elif event == "media":
            call.hear(ulaw_decode(base64.b64decode(data["media"]["payload"])))
        elif event == "mark":
            state["pending"].discard(data["mark"]["name"])
            call.speaking = bool(state["pending"])
            if not state["pending"]:
                played.set()
        elif event == "dtmf":
            call.spawn(call.pressed(str(data["dtmf"]["digit"])))
        elif event == "stop":
            break
    await call.close()
    return ws


async def _ignore(_: dict[str, Any]) -> None:
    """Twilio has no channel for the agent's transcript."""


def create_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/voice", voice)
    app.router.add_get("/twilio", twilio)
    return app


async def warm() -> None:
    """Load Piper and Whisper before taking calls, so the first caller does not wait for them."""
    await asyncio.gather(get_tts("piper").warm(), get_stt("whisper").warm())
    await get_tts("piper").synthesize(GREETING)


async def serve(host: str, port: int) -> None:
    await warm()
    runner = web.AppRunner(create_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    print(f"listening on ws://{host}:{bound}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument(
        "--return-days",
        type=int,
        default=None,
        help="another returns window than 30 days: a changed agent, for replayed calls to catch",
    )
    parser.add_argument(
        "--mishear",
        action="append",
        default=[],
        metavar="HEARD=AS",
        help="make the agent's STT hear HEARD as AS (repeatable): a speech path that misleads the agent",
    )
    args = parser.parse_args()
    for item in args.mishear:
        wrong, _, right = item.partition("=")
        MISHEARD[wrong] = right
    if args.return_days is not None:
        setattr(sys.modules["tamesu_demo_brain"], "RETURN_DAYS", args.return_days)  # noqa: B010
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
