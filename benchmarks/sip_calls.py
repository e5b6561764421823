"""How many simultaneous SIP pass-through calls this machine carries in real time, and how close
the measured turn latency is to an agent's known delay.

Calls are placed by tamesu's own user agent (``tamesu.sip``) over loopback UDP to a SIP agent in
the same process that answers every INVITE and, once a talkspurt of the caller's RTP has ended,
sends ``--delay`` seconds later a second of loud RTP back. Every 20 ms one tick sends a frame on
every call in one pass (the sending half of the voice stages' transport), and the tick's lateness
is recorded; a load is real time when the p99 lateness stays within 20 ms. Turn latency is the
time from the caller's last loud frame to the agent's first loud frame as received, per turn,
against ``--delay``. Writes benchmarks/results/sip_calls.json.

    python benchmarks/sip_calls.py --calls 10 --seconds 5        # a small check
    python benchmarks/sip_calls.py --calls 100,250,500 --seconds 20
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

from tamesu.sip.call import SipCall, peer_of
from tamesu.sip.message import NameAddr, SipMessage, SipUri
from tamesu.sip.rtp import RtpStream
from tamesu.sip.transport import Peer
from tamesu.sip.ua import UserAgent, new_tag

HERE = Path(__file__).resolve().parent
SILENT, LOUD = b"\xff" * 160, b"\x80" * 160
"""Mu-law frames: silence and a near full-scale sample."""
TALK, PAUSE = 25, 75
"""Frames of caller speech, then of quiet, per turn (0.5 s talking, 1.5 s listening)."""


class Agent:
    """Answers every call; after the caller's talkspurt ends, speaks for a second ``delay`` later."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.ua = UserAgent("127.0.0.1", user="agent")
        self.calls: list[SipCall] = []

    async def open(self) -> str:
        await self.ua.open(tcp=False)
        self.ua.on_invite = lambda msg, peer: self.ua.spawn(self._answer(msg, peer))
        return f"sip:agent@127.0.0.1:{self.ua.port}"

    async def _answer(self, invite: SipMessage, peer: Peer) -> None:
        loop = asyncio.get_running_loop()
        state = {"loud": 0, "replying": False}
        rtp: RtpStream | None = None

        def heard(payload: bytes) -> None:
            if payload[:1] == b"\x80":
                state["loud"] += 1
            elif state["loud"] and not state["replying"]:
                state["loud"], state["replying"] = 0, True
                loop.call_later(self.delay, reply)

        def reply() -> None:
            async def speak() -> None:
                for _ in range(50):
                    if rtp is not None:
                        rtp.send(LOUD)
                    await asyncio.sleep(0.02)
                state["replying"] = False

            self.ua.spawn(speak())

        rtp = await RtpStream.open("127.0.0.1", on_audio=heard, on_digit=lambda d: None)
        local = NameAddr.parse(invite.get("to"))
        local.params["tag"] = new_tag()
        call = SipCall(
            self.ua,
            rtp,
            peer=peer,
            call_id=invite.call_id,
            local=local,
            remote=NameAddr.parse(invite.get("from")),
        )
        self.calls.append(call)
        await call.answer(invite, peer)


class Caller:
    def __init__(self) -> None:
        self.last_loud_sent = 0.0
        self.waiting = False
        self.latencies: list[float] = []

    def heard(self, payload: bytes) -> None:
        if self.waiting and payload[:1] == b"\x80":
            self.latencies.append(time.perf_counter() - self.last_loud_sent)
            self.waiting = False


async def one_load(n: int, seconds: float, delay: float) -> dict[str, Any]:
    agent = Agent(delay)
    uri = SipUri.parse(await agent.open())
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
                caller.last_loud_sent, caller.waiting = now, True
        due += 0.02
        await asyncio.sleep(max(0.0, due - loop.time()))
    cpu = time.process_time() - cpu0
    steady = late[ticks // 5 :]
    turns = [x for c in callers for x in c.latencies]
    for call in calls + agent.calls:
        await call.close()
    await ua.close()
    await agent.ua.close()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="10", help="comma-separated loads")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--delay", type=float, default=0.5, help="the agent's known answer delay (s)")
    parser.add_argument("--out", default=str(HERE / "results" / "sip_calls.json"))
    args = parser.parse_args()
    rows = []
    for n in (int(x) for x in args.calls.split(",")):
        row = asyncio.run(one_load(n, args.seconds, args.delay))
        print(json.dumps(row), flush=True)
        rows.append(row)
    Path(args.out).write_text(json.dumps({"benchmark": "sip_calls", "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
