"""How many simultaneous SIP pass-through calls this machine carries in real time, and how close
the measured turn latency is to an agent's known delay.

Calls are placed by tamesu's own user agent (``tamesu.sip``) over loopback UDP to a SIP agent in
a process of its own (a peer, as a real agent is: its CPU is not the caller's) that answers every INVITE and, once a talkspurt of the caller's RTP has ended,
sends ``--delay`` seconds later a second of loud RTP back. Every 20 ms one tick sends a frame on
every call in one pass (the sending half of the voice stages' transport), and the tick's lateness
is recorded; a load is real time when the p99 lateness stays within 20 ms. Turn latency is the
time from the end of the caller's last loud frame (sent + 20 ms) to the agent's first loud frame as received, per turn,
against ``--delay``.

With ``--through target`` every call is the ``sip`` target itself (``SipAdapter``: the voice
stages on the process's shared 20 ms tick, which hands every call's frame to its RTP socket in one
pass), saying a line pre-rendered once by ``--tts`` each turn; the agent hears it by energy and
answers with a rendered line. Lateness is then the shared tick's, and the turn latency the
target's own (first audio heard after the caller's turn, against ``--delay``). Writes
benchmarks/results/sip_calls.json (``--out``).

    python benchmarks/sip_calls.py --calls 10 --seconds 5        # a small check
    python benchmarks/sip_calls.py --calls 100,250,500 --seconds 20
    python benchmarks/sip_calls.py --through target --calls 10 --seconds 25 --delay 1.0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from tamesu.audio.codec import ulaw_decode, ulaw_encode
from tamesu.sip.call import SipCall, callee_ends, peer_of
from tamesu.sip.message import NameAddr, SipMessage, SipUri
from tamesu.sip.rtp import RtpStream
from tamesu.sip.sockets import Peer
from tamesu.sip.ua import UserAgent, new_tag

HERE = Path(__file__).resolve().parent
SILENT, LOUD = b"\xff" * 160, b"\x80" * 160
"""Mu-law frames: silence and a near full-scale sample."""
AUDIBLE = bytes(int(abs(int(v)) > 100) for v in ulaw_decode(bytes(range(256))))
"""mu-law code -> 1 when its sample is above -50 dBFS: the agent's energy detector, one translate a frame."""
CALLER_LINE = "Hi, I bought some running shoes last month and they do not fit."
AGENT_LINE = "Our policy is that returns are accepted within thirty days of delivery."
TALK, PAUSE = 25, 75
"""Frames of caller speech, then of quiet, per turn (0.5 s talking, 1.5 s listening)."""


class Agent:
    """Answers every call; after the caller's talkspurt ends, speaks for a second ``delay`` later.
    One tick every 20 ms sends a frame on every call it is speaking on (no task per call)."""

    def __init__(self, delay: float, *, reply: list[bytes] | None = None, quiet_frames: int = 1) -> None:
        self.delay = delay
        self.reply = reply or [LOUD] * 50
        self.quiet_frames = quiet_frames
        """Quiet frames after which the caller's talkspurt is over (speech has pauses in it)."""
        self.ua = UserAgent("127.0.0.1", user="agent")
        self.calls: list[SipCall] = []
        self.speaking: dict[RtpStream, int] = {}
        """Frames still to say, per call."""
        self.replying: set[RtpStream] = set()
        self.ticker: asyncio.Task[None] | None = None

    async def open(self) -> str:
        await self.ua.open(tcp=False)
        self.ua.on_invite = lambda msg, peer: self.ua.spawn(self._answer(msg, peer))
        self.ticker = asyncio.get_running_loop().create_task(self._tick())
        return f"sip:agent@127.0.0.1:{self.ua.port}"

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            done = []
            for rtp, left in self.speaking.items():
                rtp.send(self.reply[len(self.reply) - left])
                if left > 1:
                    self.speaking[rtp] = left - 1
                else:
                    done.append(rtp)
            for rtp in done:
                del self.speaking[rtp]
                self.replying.discard(rtp)
            due += 0.02
            await asyncio.sleep(max(0.0, due - loop.time()))

    def _start_reply(self, rtp: RtpStream) -> None:
        """The reply's first frame goes out when it is due, the rest on the tick (waiting for the next
        tick would add up to 20 ms to the agent's known delay)."""
        rtp.send(self.reply[0])
        if len(self.reply) > 1:
            self.speaking[rtp] = len(self.reply) - 1
        else:
            self.replying.discard(rtp)

    async def _answer(self, invite: SipMessage, peer: Peer) -> None:
        loop = asyncio.get_running_loop()
        talk = {"loud": 0, "quiet": 0, "last": 0.0}

        def heard(payload: bytes) -> None:
            if b"\x01" in payload.translate(AUDIBLE):
                talk["loud"], talk["quiet"], talk["last"] = talk["loud"] + 1, 0, loop.time()
            elif talk["loud"] and rtp not in self.replying:
                talk["quiet"] += 1
                if talk["quiet"] >= self.quiet_frames:
                    talk["loud"] = 0
                    self.replying.add(rtp)
                    wait = max(0.0, talk["last"] + 0.02 + self.delay - loop.time())
                    loop.call_later(wait, self._start_reply, rtp)

        rtp = await RtpStream.open("127.0.0.1", on_audio=heard, on_digit=lambda d: None)
        local, remote = callee_ends(invite)
        call = SipCall(self.ua, rtp, peer=peer, call_id=invite.call_id, local=local, remote=remote)
        self.calls.append(call)
        await call.answer(invite, peer)

    async def close(self) -> None:
        if self.ticker is not None:
            self.ticker.cancel()
        for call in self.calls:
            await call.close()
        await self.ua.close()


class Caller:
    def __init__(self) -> None:
        self.last_loud_sent = 0.0
        self.waiting = False
        self.latencies: list[float] = []

    def heard(self, payload: bytes) -> None:
        if self.waiting and payload[:1] == b"\x80":
            self.latencies.append(time.perf_counter() - self.last_loud_sent)
            self.waiting = False


def serve_agent(delay: float, conn: Any) -> None:
    """The loopback agent in a process of its own (a peer, as a real agent is): its URI goes back on
    ``conn``, and it answers until ``conn`` says stop."""

    async def serve() -> None:
        agent = Agent(delay)
        conn.send(await agent.open())
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        await agent.close()

    asyncio.run(serve())


async def one_load(n: int, seconds: float, delay: float) -> dict[str, Any]:
    import multiprocessing

    parent, child = multiprocessing.Pipe()
    peer = multiprocessing.get_context("spawn").Process(target=serve_agent, args=(delay, child), daemon=True)
    peer.start()
    try:
        return await _one_load(n, seconds, delay, parent)
    finally:
        parent.send("stop")
        peer.join(10)


async def _one_load(n: int, seconds: float, delay: float, agent: Any) -> dict[str, Any]:
    uri = SipUri.parse(await asyncio.get_running_loop().run_in_executor(None, agent.recv))
    ua = UserAgent("127.0.0.1")
    await ua.open(tcp=False)
    callers = [Caller() for _ in range(n)]
    calls: list[SipCall] = []
    for c in callers:
        rtp = await RtpStream.open("127.0.0.1", on_audio=c.heard, on_digit=lambda d: None)
        call = SipCall(
            ua, rtp, peer=peer_of(uri), call_id=uuid.uuid4().hex,
            local=NameAddr("sip:tamesu@127.0.0.1", params={"tag": new_tag()}), remote=NameAddr(str(uri)),
        )  # fmt: skip
        calls.append(call)
    await asyncio.gather(*(c.dial(str(uri), ring_timeout=10) for c in calls))
    connected = [c for c in calls if c.state == "connected"]
    loop = asyncio.get_running_loop()
    ticks = int(seconds / 0.02)
    late = np.zeros(ticks)
    cpu0, due = time.process_time(), loop.time()
    for k in range(ticks):
        late[k] = max(0.0, loop.time() - due)
        phase = k % (TALK + PAUSE)
        frame = LOUD if phase < TALK else SILENT
        now = time.perf_counter()
        for call, caller in zip(calls, callers):
            call.rtp.send(frame)
            if phase == TALK - 1:
                caller.last_loud_sent, caller.waiting = now + 0.02, True  # the frame holds 20 ms of speech
        due += 0.02
        await asyncio.sleep(max(0.0, due - loop.time()))
    cpu = time.process_time() - cpu0
    steady = late[ticks // 5 :]
    turns = [x for c in callers for x in c.latencies]
    for call in calls:
        await call.close()
    await ua.close()
    return {
        "calls": n,
        "connected": len(connected),
        "seconds": seconds,
        "p99_lateness_ms": round(float(np.percentile(steady, 99)) * 1000, 2),
        "max_lateness_ms": round(float(steady.max()) * 1000, 2),
        "real_time": bool(np.percentile(steady, 99) <= 0.020),
        "cores": round(cpu / seconds, 3),
        "agent_delay_ms": delay * 1000,
        "turns": len(turns),
        "turn_latency_ms_p50": round(float(np.median(turns)) * 1000, 1) if turns else None,
        "turn_latency_error_ms_p95": round(
            float(np.percentile(np.abs(np.array(turns) - delay), 95)) * 1000, 1
        )
        if turns
        else None,
        "load_average": os.getloadavg()[0],
    }


async def target_load(n: int, seconds: float, delay: float, tts: str | None) -> dict[str, Any]:
    """``n`` sip targets (the voice stages on the shared tick) calling the agent, turn after turn."""
    from tamesu.clock import MonotonicClock
    from tamesu.config.target import parse_target
    from tamesu.kernel.messages import AgentTurn, UserTurn
    from tamesu.secrets import Redactor
    from tamesu.targets.base import TargetContext
    from tamesu.targets.sip.adapter import SipAdapter
    from tamesu.templates import Scope
    from tamesu.voice import FramePump
    from tamesu.voice.speech import render_speech

    await render_speech(CALLER_LINE, 8000, engine=tts)  # synthesised once: every call says it
    said = await render_speech(AGENT_LINE, 8000, engine=tts)
    codes = ulaw_encode(np.asarray(said.samples)).tobytes()
    reply = [codes[i : i + 160].ljust(160, b"\xff") for i in range(0, len(codes), 160)]
    while reply and b"\x01" not in reply[0].translate(AUDIBLE):
        reply.pop(0)  # the synthesised line's leading silence would add to the agent's delay
    quiet = 40
    if delay < quiet * 0.02:
        # The agent knows the caller is done only after its quiet frames: a shorter delay is not kept.
        raise SystemExit(f"--through target needs --delay of at least {quiet * 0.02:g}s (the agent's quiet)")
    agent = Agent(delay, reply=reply, quiet_frames=quiet)
    # pass-through: no STT of the agent (its words are not what is measured)
    config = parse_target(
        {"type": "sip", "to": await agent.open(), "idle": "1s", "transcript_source": "agent"}
    )
    out: dict[str, Any] = {"turns": 0, "errors": [], "latency": []}

    async def call(i: int) -> None:
        ctx = TargetContext(
            name="phone", run_id=f"bench-{i}", session=f"s{i}", scope=Scope({}), clock=MonotonicClock(),
            http=None, redactor=Redactor(), turn_timeout=60.0, tts_engine=tts,  # type: ignore[arg-type]
        )  # fmt: skip
        phone = SipAdapter(config, ctx)  # type: ignore[arg-type]
        try:
            await phone.start()
            async for _ in phone.turn(None):  # the agent does not greet: the call's first turn is empty
                pass
            while True:
                async for msg in phone.turn(UserTurn(text=CALLER_LINE)):
                    if isinstance(msg, AgentTurn) and msg.first_audio_at is not None and msg.sent_at:
                        out["turns"] += 1
                        out["latency"].append(msg.first_audio_at - msg.sent_at)
        except Exception as exc:
            out["errors"].append(f"{type(exc).__name__}: {exc}")
        finally:
            await phone.stop()

    pump = FramePump.shared()
    tasks = [asyncio.create_task(call(i)) for i in range(n)]
    await asyncio.sleep(min(5.0, seconds / 4))  # the calls connect and start talking
    pump.reset_stats()
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    late = pump.lateness()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await agent.close()
    turns = np.array(out["latency"])
    return {
        "through": "target",
        "calls": n,
        "seconds": seconds,
        "p99_lateness_ms": round(float(np.percentile(late, 99)) * 1000, 2) if len(late) else None,
        "real_time": bool(len(late) and np.percentile(late, 99) <= 0.020 and pump.resyncs == 0),
        "resyncs": pump.resyncs,
        "cores": round(cpu / wall, 3),
        "agent_delay_ms": delay * 1000,
        "turns": out["turns"],
        "turn_latency_ms_p50": round(float(np.median(turns)) * 1000, 1) if len(turns) else None,
        "turn_latency_error_ms_p95": round(float(np.percentile(np.abs(turns - delay), 95)) * 1000, 1)
        if len(turns)
        else None,
        "errors": len(out["errors"]),
        "first_error": out["errors"][0] if out["errors"] else None,
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="10", help="comma-separated loads")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--delay", type=float, default=0.5, help="the agent's known answer delay (s)")
    parser.add_argument(
        "--through", choices=("ua", "target"), default="ua", help="raw user agents or sip targets"
    )
    parser.add_argument("--tts", default=None, help="--through target: the engine rendering both lines")
    parser.add_argument("--out", default=str(HERE / "results" / "sip_calls.json"))
    args = parser.parse_args()
    rows = []
    for n in (int(x) for x in args.calls.split(",")):
        if args.through == "target":
            row = asyncio.run(target_load(n, args.seconds, args.delay, args.tts))
        else:
            row = asyncio.run(one_load(n, args.seconds, args.delay))
        print(json.dumps(row), flush=True)
        rows.append(row)
    Path(args.out).write_text(json.dumps({"benchmark": "sip_calls", "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
