"""A phone agent of our own for the sip target's end-to-end tests: it answers SIP calls on
loopback with tamesu's user agent (``tamesu.sip``), speaks with the local TTS (Piper) and hears
with the local STT (Whisper) through tamesu's speech engines, as the voice demo agent does.

    python -m tamesu.testing.sip_agent --port 0     # prints "listening on sip:agent@127.0.0.1:PORT"

What it says is a few fixed rules, so runs repeat: it greets and offers "press one for returns"; a
keypad 1 gets the returns policy (30 days); asked for a code it keys ``42#`` back (RFC 4733
telephone-events); a goodbye gets "Goodbye!" and it hangs up (BYE). Its caller's turn ends after
0.6 s of silence. It sends 20 ms of G.711 mu-law every 20 ms for as long as the call lasts
(silence between its words), as a phone does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections import deque
from typing import Any

import numpy as np

from tamesu.audio.codec import ulaw_decode, ulaw_encode
from tamesu.audio.engines import get_stt, get_tts
from tamesu.audio.tts import Audio
from tamesu.audio.vad import TurnDetector
from tamesu.sip.call import SipCall, callee_ends
from tamesu.sip.message import SipMessage
from tamesu.sip.rtp import RtpStream
from tamesu.sip.sockets import Peer
from tamesu.sip.ua import UserAgent

__all__ = ["GREETING", "SipVoiceAgent", "reply_to"]

RATE = 8000
FRAME = 160
GREETING = "Hello, you have reached the shoe shop. Press one for returns."
END_OF_TURN_S = 0.6
CODE_CUES = ("code", "number", "give me")
"""What asks for the code: more than one word, since a loaded machine's Whisper may mishear one."""


def reply_to(heard: str) -> tuple[str, str, bool]:
    """What the agent says to ``heard``, the digits it keys after, and whether it then hangs up."""
    text = heard.lower()
    if "bye" in text:
        return "Goodbye!", "", True
    if any(cue in text for cue in CODE_CUES):
        return "Sure, here is your code.", "42#", False
    if "return" in text:
        return "You can return shoes within 30 days.", "", False
    return "Sorry, I did not catch that.", "", False


class AgentCall:
    """One answered call: a VAD finds the caller's turns, the STT hears them, the TTS answers."""

    def __init__(self, agent: SipVoiceAgent) -> None:
        self.agent = agent
        self.call: SipCall | None = None
        self.vad = TurnDetector(RATE, idle=END_OF_TURN_S)
        self.heard: list[np.ndarray] = []
        self.in_speech = False
        self.queue: deque[np.ndarray] = deque()
        self.drained = asyncio.Event()
        self.drained.set()
        self.tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def hear(self, payload: bytes) -> None:
        samples = ulaw_decode(payload)
        if self.in_speech:
            self.heard.append(samples)
        for event in self.vad.push(samples):
            if event.kind == "speech_start" and not self.in_speech:
                self.in_speech, self.heard = True, [samples]
            elif event.kind == "turn_end" and self.in_speech:
                utterance = np.concatenate(self.heard)
                self.in_speech, self.heard = False, []
                self.spawn(self.answer(utterance))

    def pressed(self, digit: str) -> None:
        if digit == "1":
            self.spawn(self.say("You pressed 1. You can return shoes within 30 days."))
        else:
            self.spawn(self.say(f"You pressed {digit}."))

    async def answer(self, utterance: np.ndarray) -> None:
        if len(utterance) < RATE // 5:
            return
        heard = await get_stt(self.agent.stt).transcribe(Audio(utterance, RATE), language="en")
        text, digits, hang_up = reply_to(heard.text)
        await self.say(text, digits=digits, hang_up=hang_up)

    async def say(self, text: str, *, digits: str = "", hang_up: bool = False) -> None:
        audio = await get_tts(self.agent.tts).synthesize(text)
        samples = audio.resample(RATE).samples
        samples = np.concatenate([samples, np.zeros(-len(samples) % FRAME, np.int16)])
        self.drained.clear()
        self.queue.extend(samples.reshape(-1, FRAME))
        await self.drained.wait()
        call = self.call
        if call is None:
            return
        if digits and call.dtmf_events:
            await call.rtp.key(digits).wait()
        if hang_up:
            await call.hangup()

    async def play(self) -> None:
        """Every 20 ms one frame: the next of what it is saying, else silence."""
        loop = asyncio.get_running_loop()
        silence = ulaw_encode(np.zeros(FRAME, np.int16)).tobytes()
        due = loop.time()
        call = self.call
        while call is not None and call.state == "connected":
            if self.queue:
                call.rtp.send(ulaw_encode(self.queue.popleft()).tobytes())
            else:
                call.rtp.send(silence)
                self.drained.set()
            due += 0.02
            await asyncio.sleep(max(0.0, due - loop.time()))
        self.drained.set()

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.call is not None:
            await self.call.close()


class SipVoiceAgent:
    """Listens on ``host:port`` (UDP and TCP) and answers every INVITE; ``uri`` is where to call."""

    def __init__(self, host: str = "127.0.0.1", *, tts: str = "piper", stt: str = "whisper") -> None:
        self.host = host
        self.tts = tts
        self.stt = stt
        self.ua = UserAgent(host, user="agent")
        self.calls: list[AgentCall] = []

    @property
    def uri(self) -> str:
        return f"sip:agent@{self.host}:{self.ua.port}"

    async def start(self, port: int = 0) -> None:
        await self.ua.open(port, tcp=True)
        self.ua.on_invite = lambda invite, peer: self.ua.spawn(self._answer(invite, peer))

    async def _answer(self, invite: SipMessage, peer: Peer) -> None:
        line = AgentCall(self)
        self.calls.append(line)
        rtp = await RtpStream.open(self.host, on_audio=line.hear, on_digit=line.pressed)
        local, remote = callee_ends(invite)
        call = SipCall(self.ua, rtp, peer=peer, call_id=invite.call_id, local=local, remote=remote)
        line.call = call
        if await call.answer(invite, peer):
            line.spawn(line.play())
            line.spawn(line.say(GREETING))

    async def close(self) -> None:
        for line in self.calls:
            await line.close()
        await self.ua.close()


async def _serve(host: str, port: int) -> None:
    agent = SipVoiceAgent(host)
    # load both models before saying it listens, so the first call is answered at speaking speed
    greeting = await get_tts(agent.tts).synthesize(GREETING)
    await get_stt(agent.stt).transcribe(greeting.resample(RATE), language="en")
    await agent.start(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"listening on {agent.uri}", flush=True)
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await agent.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(_serve(args.host, args.port))


if __name__ == "__main__":
    main()
