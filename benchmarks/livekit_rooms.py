"""How many LiveKit rooms this machine carries at once against the loopback LiveKit server, and
how closely tamesu measures an agent's known reply delay through a room.

Each room holds one call: the ``livekit`` target in audio mode (the caller's line into a published
microphone track, the agent's track played to the listener) and ``voice_agent`` from
``tamesu.testing`` (real SDK, real WebRTC through the loopback server's aiortc), which answers
``--delay`` seconds after the caller's last loud frame it received, with vowel-like speech (no
Piper or Whisper: the figure is the rooms' and tamesu's cost). Every call speaks ``--turns``
turns. A load is carried when every call finishes every turn without an error; the latency error
of a turn is |measured turn latency - delay| (the measured latency runs from the caller's end of
speech to the agent's first audible speech as heard, so it includes both WebRTC paths, Opus
encoding twice and the receive jitter buffers: the loopback server decodes and re-encodes on
aiortc where a LiveKit SFU forwards packets). ``latency_error_ms_p50`` is therefore mostly that
transport delay; how steady the measurement is shows in ``latency_spread_ms`` (p95 - p5 of the
measured latencies). Writes benchmarks/results/livekit_rooms.json.

    python benchmarks/livekit_rooms.py --rooms 1,2          # a small check
    python benchmarks/livekit_rooms.py --rooms 5,10,20,40   # the full run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from tamesu.audio.tts import Audio, TTSCapabilities, TTSEngine, tts_engines
from tamesu.clock import MonotonicClock
from tamesu.config.target import parse_target
from tamesu.http import make_client
from tamesu.kernel.messages import AgentTurn, UserTurn
from tamesu.secrets import Redactor
from tamesu.targets.base import TargetContext, targets
from tamesu.templates import Scope
from tamesu.testing.livekit_agents import AgentLog, voice_agent
from tamesu.testing.livekit_server import serve_livekit_server

HERE = Path(__file__).resolve().parent
RATE = 16000


def vowel(seconds: float, f0: float = 140.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    x = sum(np.sin(2 * np.pi * k * f0 * t + k) / k for k in range(1, 20))
    x = x / np.max(np.abs(x)) * 0.3
    return (x * 32767).astype(np.int16)


class BenchVowel(TTSEngine):
    """0.25 s of a vowel per word: speech to a VAD from its first frame, and instant to make."""

    name = "bench-vowel"

    @property
    def capabilities(self) -> TTSCapabilities:
        return TTSCapabilities(languages=None, sample_rate=RATE)

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        return Audio(vowel(0.25 * max(1, len(text.split()))), RATE)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _call(i: int, server: Any, http: Any, args: argparse.Namespace, out: dict[str, Any]) -> None:
    config = parse_target(
        {
            "type": "livekit",
            "url": server.url,
            "api_key": server.api_key,
            "api_secret": server.api_secret,
            "mode": "audio",
            "room": f"bench-{i}",
            "join_timeout": "60s",
        }
    )
    ctx = TargetContext(
        name="room",
        run_id=f"bench-{i}",
        session=f"s{i}",
        scope=Scope({}),
        clock=MonotonicClock(),
        http=http,
        redactor=Redactor(),
        turn_timeout=60.0,
        tts_engine="bench-vowel",
        seed=i,
    )
    adapter = targets.adapter("livekit")(config, ctx)
    try:
        await adapter.start()
        for _ in range(args.turns):
            async for msg in adapter.turn(UserTurn(text="where is my order number one two three")):
                if isinstance(msg, AgentTurn):
                    out["turns"] += 1
                    if msg.first_audio_at is not None and msg.sent_at is not None:
                        out["latency_ms"].append((msg.first_audio_at - msg.sent_at) * 1000)
    except Exception as exc:
        out["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        await adapter.stop()


async def run_load(n: int, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"turns": 0, "latency_ms": [], "errors": []}
    async with serve_livekit_server() as server:
        server.register_agent(
            "",
            voice_agent(
                lambda heard: "Your order ships today.",
                log=AgentLog(),
                greeting=None,
                delay=args.delay,
                pause=0.3,
                tts="bench-vowel",
                stt=None,
            ),
        )
        http = make_client()
        cpu0, wall0 = _cpu_s(), time.monotonic()
        await asyncio.gather(*(_call(i, server, http, args, out) for i in range(n)))
        cpu, wall = _cpu_s() - cpu0, time.monotonic() - wall0
        await http.aclose()
        problems = list(server.problems)
    lat = np.array(out["latency_ms"]) if out["latency_ms"] else np.zeros(0)
    err = np.abs(lat - args.delay * 1000) if len(lat) else lat
    return {
        "rooms": n,
        "carried": not out["errors"] and out["turns"] == n * args.turns,
        "turns": out["turns"],
        "errors": out["errors"][:5],
        "server_problems": problems[:5],
        "turn_latency_ms_p50": round(float(np.percentile(lat, 50)), 1) if len(lat) else None,
        "latency_error_ms_p50": round(float(np.percentile(err, 50)), 1) if len(err) else None,
        "latency_error_ms_p95": round(float(np.percentile(err, 95)), 1) if len(err) else None,
        "within_30_ms": round(float(np.mean(err <= 30)), 3) if len(err) else None,
        "latency_spread_ms": round(float(np.percentile(lat, 95) - np.percentile(lat, 5)), 1)
        if len(lat)
        else None,
        "cores_used": round(cpu / wall, 2) if wall else None,
        "wall_s": round(wall, 1),
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", default="1,2,5,10,20", help="comma-separated loads")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--delay", type=float, default=1.0, help="the agent's reply delay (seconds)")
    parser.add_argument("--out", default=str(HERE / "results" / "livekit_rooms.json"))
    args = parser.parse_args()
    tts_engines.add("bench-vowel", BenchVowel)
    rows = []
    for n in (int(x) for x in args.rooms.split(",")):
        row = asyncio.run(run_load(n, args))
        print(json.dumps(row))
        rows.append(row)
    results = {
        "benchmark": "livekit_rooms",
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "criterion": "every call finishes every turn; latency error |measured - delay| <= 30 ms",
        "delay_s": args.delay,
        "turns": args.turns,
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
