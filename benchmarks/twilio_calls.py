"""How many Twilio media-stream calls this machine carries in real time over loopback websockets.

Every call is the ``twilio`` target itself (``TwilioAdapter``: the voice stages on the process's
shared 20 ms tick, the caller's 8 kHz mu-law in base64 JSON ``media`` messages every 20 ms, as
Twilio sends them, over one websocket a call), saying Piper's caller lines (rendered once, the
``pstn`` line) turn after turn. The agent is this script's own light Media Streams server in a
process of its own (``--serve-agent``), as a real agent is: it records when each caller frame
arrives, ends the caller's turn by energy (a talkspurt, then ``QUIET_FRAMES`` quiet frames) and
``--delay`` seconds later answers with recorded audio (one Piper line rendered at its start-up, in
100 ms media messages), all of it at once followed by a ``mark``, as Twilio agents do; it greets each call the same way.

The figure is the agent's record: the gap between consecutive caller frames of one call over the
steady part of the run (after the ramp). A load is carried in real time when that p99 gap is at
most 40 ms (two frames), the agent got at least 99% of the frames real time would have sent (a
saturated process sends them evenly but too few), the shared tick never resynced (it does when it
is a second behind) and no call failed. The tick's p99 lateness against its schedule is reported
beside: a few tens of ms of it is audio sent that much later, still evenly. Pass-through: the agent's words are not what is measured, so its turns are not
transcribed (``transcript_source: agent``; a suite's twilio target transcribes them, which costs
what ``benchmarks/voice_calls.py --mode speech`` measures). The agent's CPU (its own process, on
the same cores) is reported beside this process's. Writes benchmarks/results/twilio_calls.json.

    python benchmarks/twilio_calls.py --calls 10 --seconds 5       # a small check
    python benchmarks/twilio_calls.py --calls 250,500,1000         # the figures
    python benchmarks/twilio_calls.py --calls 1000 --processes 2   # the calls from two driver processes
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import resource
import sys
import time
from array import array
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conversations import start_agent  # noqa: E402

RESULTS = HERE / "results" / "twilio_calls.json"

AGENT_LINE = "Our policy is that returns are accepted within thirty days of delivery."
CALLER_LINES = (
    "Hi, I bought running shoes last month and they do not fit.",
    "Can I still send them back for a refund?",
    "Thanks, that is all I needed.",
)
QUIET_FRAMES = 15
"""Quiet frames (300 ms) after a talkspurt that end the caller's turn."""
SETUP_S = 1.0
"""Each call's first second (connect, start, greeting) is left out of the gaps."""
DRIVER_GRACE_S = 2.0
"""Seconds a driver process's calls go on after its window, while the parent reads the agent's record."""
REPLY_CHUNK = 800
"""Bytes of 8 kHz mu-law (100 ms) in each of the agent's media messages."""
MEDIA, PAYLOAD = '{"event":"media"', '"payload":"'
"""How the agent finds a caller frame without parsing the whole message (the agent must stay light)."""

# -- the agent -------------------------------------------------------------------------------


class AgentStats:
    """Every caller frame's gap since the call's previous one (ms), over the whole process."""

    def __init__(self) -> None:
        self.gaps = array("f")
        self.calls = 0
        self.open = 0
        self.peak_open = 0
        self.turns = 0
        self.frames = 0
        self.cpu0 = _cpu_s()

    def reset(self) -> None:
        """From now on: the steady part of a load starts."""
        self.gaps = array("f")
        self.frames = self.turns = 0
        self.cpu0 = _cpu_s()

    def summary(self) -> dict[str, Any]:
        import numpy as np

        gaps = np.frombuffer(self.gaps, dtype=np.float32) if len(self.gaps) else np.zeros(0, np.float32)

        def pct(q: float) -> float | None:
            return round(float(np.percentile(gaps, q)), 2) if len(gaps) else None

        return {
            "calls": self.calls,
            "peak_open_calls": self.peak_open,
            "caller_frames": self.frames,
            "gaps": len(gaps),
            "gap_ms_p50": pct(50),
            "gap_ms_p99": pct(99),
            "gap_ms_p999": pct(99.9),
            "gap_ms_max": round(float(gaps.max()), 2) if len(gaps) else None,
            "gaps_over_40_ms": int((gaps > 40).sum()),
            "agent_turns": self.turns,
            "agent_cpu_s": round(_cpu_s() - self.cpu0, 2),
        }


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def serve_agent(delay: float) -> None:
    """A light Media Streams agent on loopback; ``/stats`` answers the record so far as JSON."""
    import numpy as np
    import websockets

    from tamesu.audio.codec import ulaw_decode, ulaw_encode
    from tamesu.voice.speech import render_speech

    reply = ulaw_encode(np.asarray((await render_speech(AGENT_LINE, 8000)).samples)).tobytes()
    chunks = [
        base64.b64encode(reply[i : i + REPLY_CHUNK]).decode() for i in range(0, len(reply), REPLY_CHUNK)
    ]
    audible = bytes(int(abs(int(v)) > 300) for v in ulaw_decode(bytes(range(256))))
    stats = AgentStats()
    loop = asyncio.get_running_loop()

    async def speak(ws: Any, sid: str, n: int) -> None:
        for payload in chunks:
            await ws.send(f'{{"event":"media","streamSid":"{sid}","media":{{"payload":"{payload}"}}}}')
        await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": f"reply-{n}"}}))
        stats.turns += 1

    async def handler(ws: Any) -> None:
        path = ws.request.path if getattr(ws, "request", None) is not None else "/media"
        if path.startswith("/stats"):
            await ws.send(json.dumps(stats.summary()))
            if path.endswith("/reset"):
                stats.reset()
            return
        sid, started, last = "", 0.0, None
        talking, quiet, replies = False, 0, 0
        tasks: set[asyncio.Task[None]] = set()
        stats.calls += 1
        stats.open += 1
        stats.peak_open = max(stats.peak_open, stats.open)
        try:
            async for text in ws:
                if isinstance(text, str) and text.startswith(MEDIA):  # tamesu's media messages, as Twilio's
                    now = loop.time()
                    stats.frames += 1
                    if last is not None and now - started > SETUP_S:
                        stats.gaps.append((now - last) * 1000)
                    last = now
                    at = text.index(PAYLOAD) + len(PAYLOAD)
                    frame = base64.b64decode(text[at : text.index('"', at)])
                    if frame.translate(audible).count(1) > 16:
                        talking, quiet = True, 0
                    elif talking:
                        quiet += 1
                        if quiet >= QUIET_FRAMES:
                            talking, quiet = False, 0
                            replies += 1
                            task = loop.create_task(_later(delay, speak, ws, sid, replies))
                            tasks.add(task)
                            task.add_done_callback(tasks.discard)
                    continue
                msg = json.loads(text)
                event = msg.get("event")
                if event == "media":
                    raise SystemExit(f"a media message of another shape: {text[:200]}")
                elif event == "start":
                    sid, started = msg.get("streamSid", ""), loop.time()
                    task = loop.create_task(speak(ws, sid, 0))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif event == "stop":
                    break
        except websockets.ConnectionClosed:
            pass
        finally:
            stats.open -= 1
            for task in tasks:
                task.cancel()

    async with websockets.serve(handler, "127.0.0.1", 0, max_size=2**20, max_queue=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening on ws://127.0.0.1:{port}", flush=True)
        await asyncio.Future()


async def _later(delay: float, fn: Any, *args: Any) -> None:
    await asyncio.sleep(delay)
    await fn(*args)


# -- the harness -----------------------------------------------------------------------------


async def agent_stats(url: str, *, reset: bool = False) -> dict[str, Any]:
    import websockets

    async with websockets.connect(f"{url}/stats{'/reset' if reset else ''}") as ws:
        return json.loads(await ws.recv())


async def target_load(
    n: int, url: str, args: argparse.Namespace, *, offset: int = 0, start_at: float | None = None
) -> dict[str, Any]:
    """``n`` twilio targets calling the agent, turn after turn, started over ``args.ramp`` seconds.

    One of several driver processes (``start_at``, a wall-clock time) numbers its calls from
    ``offset``, measures from ``start_at`` for ``args.seconds`` and leaves the agent's record to the
    parent, which reads it over the same window."""
    import gc

    import numpy as np

    from tamesu.clock import MonotonicClock
    from tamesu.config.target import parse_target
    from tamesu.kernel.messages import AgentTurn, UserTurn
    from tamesu.secrets import Redactor
    from tamesu.targets.base import TargetContext
    from tamesu.targets.twilio.adapter import TwilioAdapter
    from tamesu.templates import Scope
    from tamesu.voice import FramePump
    from tamesu.voice.speech import render_speech

    for line in CALLER_LINES:
        await render_speech(line, 8000)  # synthesised once: every call says them
    config = parse_target(
        {
            "type": "twilio",
            "url": f"{url}/media",
            "idle": f"{args.idle}s",
            "transcript_source": "agent",
        }
    )
    test = SimpleNamespace(persona=SimpleNamespace(behaviors=SimpleNamespace(line_quality="pstn")))
    """What a test's ``persona.behaviors.line_quality: pstn`` gives the call."""
    out: dict[str, Any] = {"turns": 0, "errors": [], "latency": [], "connected": 0}

    async def call(i: int) -> None:
        ctx = TargetContext(
            name="phone", run_id=f"bench-{offset + i}", session=f"s{offset + i}", scope=Scope({}), clock=MonotonicClock(),
            http=None, redactor=Redactor(), turn_timeout=60.0, test=test,  # type: ignore[arg-type]
        )  # fmt: skip
        phone = TwilioAdapter(config, ctx)  # type: ignore[arg-type]
        try:
            await phone.start()
            out["connected"] += 1
            async for _ in phone.turn(None):  # the agent's greeting
                pass
            turn = 0
            while True:
                async for msg in phone.turn(UserTurn(text=CALLER_LINES[turn % len(CALLER_LINES)])):
                    if isinstance(msg, AgentTurn) and msg.first_audio_at is not None and msg.sent_at:
                        out["turns"] += 1
                        out["latency"].append(msg.first_audio_at - msg.sent_at)
                turn += 1
        except Exception as exc:
            out["errors"].append(f"{type(exc).__name__}: {exc}")
        finally:
            await phone.stop()

    pump = FramePump.shared()
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(call(i)))
        await asyncio.sleep(args.ramp / n)
    await asyncio.sleep(SETUP_S if start_at is None else max(0.0, start_at - time.time()))
    gc.freeze()
    pump.reset_stats()
    if start_at is None:
        await agent_stats(url, reset=True)
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(args.seconds)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    late = pump.lateness()
    if start_at is not None:
        await asyncio.sleep(DRIVER_GRACE_S)  # calls go on while the parent reads the agent's record
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        p99 = float(np.percentile(late, 99)) * 1000 if len(late) else None
        return {
            "calls": n, "connected": out["connected"], "cpu_s": cpu, "wall_s": wall,
            "tick_late_ms_p99": p99, "resyncs": pump.resyncs, "turns": out["turns"],
            "latency": out["latency"], "errors": out["errors"][:3], "error_count": len(out["errors"]),
        }  # fmt: skip
    stats = await agent_stats(url)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    gc.unfreeze()
    turns = np.array(out["latency"])
    answer_s = args.delay + QUIET_FRAMES * 0.02
    p99_late = float(np.percentile(late, 99)) * 1000 if len(late) else None
    row = {
        "calls": n,
        "connected": out["connected"],
        "seconds": args.seconds,
        **stats,
        "tick_late_ms_p99": round(p99_late, 2) if p99_late is not None else None,
        "resyncs": pump.resyncs,
        "cores": round(cpu / wall, 3),
        "cpu_us_per_call_frame": round(cpu / (n * wall / 0.02) * 1e6, 2),
        "machine_load_1m": round(os.getloadavg()[0], 2),
        "turns": out["turns"],
        "turn_latency_ms_p50": round(float(np.median(turns)) * 1000, 1) if len(turns) else None,
        "agent_answers_after_ms": round(answer_s * 1000),
        "errors": len(out["errors"]),
        "first_error": out["errors"][0] if out["errors"] else None,
    }
    row["frames_of_real_time"] = round(stats["caller_frames"] / (n * wall / 0.02), 3)
    row["real_time"] = bool(
        row["gap_ms_p99"] is not None
        and row["gap_ms_p99"] <= 40.0
        and row["frames_of_real_time"] >= 0.99
        and pump.resyncs == 0
        and not out["errors"]
        and out["connected"] == n
    )
    return row


def one_load(n: int, args: argparse.Namespace) -> dict[str, Any]:
    agent, url = start_agent(__file__, "--delay", str(args.delay))
    try:
        if args.processes > 1:
            return asyncio.run(driven_load(n, url, args))
        return asyncio.run(target_load(n, url, args))
    finally:
        agent.kill()
        agent.wait()


async def driven_load(n: int, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """``n`` calls from ``args.processes`` driver processes (this script with ``--drive``), each
    ramping its share over the same seconds and measuring the same window, which the agent's
    record covers too."""
    import numpy as np

    k = args.processes
    shares = [n // k + (1 if i < n % k else 0) for i in range(k)]
    start_at = time.time() + args.ramp + SETUP_S + 2.0  # the drivers' start-up (imports, Piper) included
    settings = ["--delay", str(args.delay), "--idle", str(args.idle), "--seconds", str(args.seconds),
                "--ramp", str(args.ramp)]  # fmt: skip
    drivers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--drive",
            f"{share},{sum(shares[:i])},{start_at},{url}",
            *settings,
            stdout=asyncio.subprocess.PIPE,
        )
        for i, share in enumerate(shares)
    ]
    await asyncio.sleep(max(0.0, start_at - time.time()))
    await agent_stats(url, reset=True)
    wall0 = time.monotonic()
    await asyncio.sleep(args.seconds)
    wall = time.monotonic() - wall0
    stats = await agent_stats(url)
    parts = []
    for proc in drivers:
        out, _ = await proc.communicate()
        parts.append(json.loads(out.decode().strip().splitlines()[-1]))
    turns = np.array([x for part in parts for x in part["latency"]])
    errors = [e for part in parts for e in part["errors"]]
    late = [part["tick_late_ms_p99"] for part in parts if part["tick_late_ms_p99"] is not None]
    cpu = sum(part["cpu_s"] for part in parts)
    answer_s = args.delay + QUIET_FRAMES * 0.02
    row = {
        "calls": n,
        "driver_processes": k,
        "connected": sum(part["connected"] for part in parts),
        "seconds": args.seconds,
        **stats,
        "tick_late_ms_p99": round(max(late), 2) if late else None,
        "resyncs": sum(part["resyncs"] for part in parts),
        "cores": round(cpu / wall, 3),
        "cores_per_driver": [round(part["cpu_s"] / part["wall_s"], 3) for part in parts],
        "cpu_us_per_call_frame": round(cpu / (n * wall / 0.02) * 1e6, 2),
        "machine_load_1m": round(os.getloadavg()[0], 2),
        "turns": sum(part["turns"] for part in parts),
        "turn_latency_ms_p50": round(float(np.median(turns)) * 1000, 1) if len(turns) else None,
        "agent_answers_after_ms": round(answer_s * 1000),
        "errors": sum(part["error_count"] for part in parts),
        "first_error": errors[0] if errors else None,
    }
    row["frames_of_real_time"] = round(stats["caller_frames"] / (n * wall / 0.02), 3)
    row["real_time"] = bool(
        row["gap_ms_p99"] is not None
        and row["gap_ms_p99"] <= 40.0
        and row["frames_of_real_time"] >= 0.99
        and row["resyncs"] == 0
        and not row["errors"]
        and row["connected"] == n
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="250,500,1000", help="loads, comma-separated")
    parser.add_argument("--delay", type=float, default=0.5, help="the agent's delay before each reply (s)")
    parser.add_argument("--idle", type=float, default=0.8, help="the target's idle (s)")
    parser.add_argument("--seconds", type=float, default=20.0, help="steady-state seconds measured per load")
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds over which the calls are started")
    parser.add_argument("--serve-agent", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="driver processes the calls are spread over (one event loop each)",
    )
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.out is None:
        args.out = (
            RESULTS if args.processes == 1 else RESULTS.with_name(f"twilio_calls-p{args.processes}.json")
        )
    if args.serve_agent:
        asyncio.run(serve_agent(args.delay))
        return
    if args.drive:
        share, offset, start_at, url = args.drive.split(",", 3)
        row = asyncio.run(target_load(int(share), url, args, offset=int(offset), start_at=float(start_at)))
        print(json.dumps(row), flush=True)
        return
    rows = []
    for n in (int(x) for x in args.calls.split(",")):
        row = one_load(n, args)
        print(json.dumps(row), flush=True)
        rows.append(row)
    carried = [r["calls"] for r in rows if r["real_time"]]
    result = {
        "benchmark": "twilio_calls",
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "criterion": "the agent's p99 gap between a call's caller frames <= 40 ms, >= 99% of real time's "
        "frames, no resync of the tick, every call connected and none failed",
        "settings": {
            k: v for k, v in vars(args).items() if k not in ("out", "calls", "serve_agent", "drive")
        },
        "loads": rows,
        "max_real_time_calls": max(carried) if carried else 0,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
