"""How many LiveKit rooms this machine carries at once against the loopback LiveKit server, and
how closely tamesu measures an agent's known reply delay through a room.

Each room holds one call: the ``livekit`` target in audio mode (the caller's line into a published
microphone track, the agent's track played to the listener) and ``voice_agent`` from
``tamesu.testing`` (real SDK, real WebRTC; the loopback server forwards the Opus packets
unchanged, as an SFU does), which starts its answer ``--delay`` seconds after the caller's last
loud frame reached it, with vowel-like speech (no Piper or Whisper: the figure is the rooms' and
tamesu's cost). Every call speaks ``--turns`` turns. A load is carried when every call finishes
every turn without an error.

Turn latency as tamesu measures it runs from the caller's end of speech to the agent's first
speech as the caller hears it, so it is the agent's delay plus the audio's way through WebRTC
both ways. Each way is timed here from outside tamesu: the server stamps the first and last
voiced Opus packet of each utterance it forwards (``media_probe``), the agent stamps when the
caller's speech ended as it heard it and when its answer's first frame went out, and the caller
stamps the first audible frame of the answer it received. Per turn:

- ``latency_error``: |measured - delay|, what a reader of the metric sees;
- ``transport``: caller_send (the caller's end of speech to its last voiced packet at the server:
  the SDK's audio source, Opus's 20 ms frames, the network) + agent_receive (that packet to the
  agent hearing the end: libwebrtc's jitter buffer and playout) + agent_send + caller_receive
  (the same two the other way);
- ``tamesu_error``: |measured - (the agent's actual wait + transport)|, the error of tamesu's
  own timing: its listener's speech onset after the first audible frame arrived.

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


VOICED_BYTES = 10
"""An Opus packet larger than this carries sound (the SDK's silence packets are a few bytes)."""


class Voiced:
    """The server's stamps of the voiced packets it forwarded, by room and side."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, str], list[float]] = {}

    def __call__(self, room: str, identity: str, packet: Any) -> None:
        if len(packet.payload) > VOICED_BYTES:
            side = "caller" if identity.startswith("caller-") else "agent"
            self.at.setdefault((room, side), []).append(time.monotonic())

    def last_before(self, room: str, side: str, t: float) -> float | None:
        return max((x for x in self.at.get((room, side), []) if x <= t), default=None)

    def first_after(self, room: str, side: str, t: float) -> float | None:
        return min((x for x in self.at.get((room, side), []) if x >= t), default=None)


async def _call(
    i: int, server: Any, http: Any, args: argparse.Namespace, out: dict[str, Any], log: AgentLog
) -> None:
    config = parse_target(
        {
            "type": "livekit",
            "url": server.url,
            "api_key": server.api_key,
            "api_secret": server.api_secret,
            "mode": "audio",
            "room": f"bench-{i}",
            "identity": f"caller-{i}",
            "dispatch": {"agent_name": f"agent-{i}"},
            "join_timeout": "60s",
        }
    )
    clock = MonotonicClock()
    offset = time.monotonic() - clock.now()
    ctx = TargetContext(
        name="room",
        run_id=f"bench-{i}",
        session=f"s{i}",
        scope=Scope({}),
        clock=clock,
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
                    if None not in (msg.first_audio_at, msg.sent_at, msg.first_byte_at):
                        out["measured"].append(
                            (
                                i,
                                len(log.quiet_at) - 1,
                                *(offset + t for t in (msg.sent_at, msg.first_byte_at, msg.first_audio_at)),
                            )  # type: ignore[operator]
                        )
    except Exception as exc:
        out["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        await adapter.stop()


def _breakdown(out: dict[str, Any], logs: list[AgentLog], voiced: Voiced) -> dict[str, list[float]]:
    """Each turn's latency split into its parts (milliseconds; see the module docstring)."""
    parts: dict[str, list[float]] = {
        k: []
        for k in (
            "measured",
            "caller_send",
            "agent_receive",
            "agent_wait",
            "agent_send",
            "caller_receive",
            "listener",
        )
    }
    for i, k, caller_end, first_rx, onset in out["measured"]:
        log = logs[i]
        if k < 0 or k >= len(log.spoke_at):
            continue
        quiet_at, spoke_at = log.quiet_at[k], log.spoke_at[k]
        caller_pkt = voiced.last_before(f"bench-{i}", "caller", quiet_at)
        agent_pkt = voiced.first_after(f"bench-{i}", "agent", spoke_at)
        if caller_pkt is None or agent_pkt is None:
            continue
        for name, value in (
            ("measured", onset - caller_end),
            ("caller_send", caller_pkt - caller_end),
            ("agent_receive", quiet_at - caller_pkt),
            ("agent_wait", spoke_at - quiet_at),
            ("agent_send", agent_pkt - spoke_at),
            ("caller_receive", first_rx - agent_pkt),
            ("listener", onset - first_rx),
        ):
            parts[name].append(value * 1000)
    return parts


def _p(values: Any, q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if len(values) else None


async def run_load(n: int, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"turns": 0, "measured": [], "errors": []}
    logs = [AgentLog() for _ in range(n)]
    voiced = Voiced()
    async with serve_livekit_server() as server:
        server.media_probe = voiced
        for i, log in enumerate(logs):
            server.register_agent(
                f"agent-{i}",
                voice_agent(
                    lambda heard: "Your order ships today.",
                    log=log,
                    greeting=None,
                    delay=args.delay,
                    pause=0.3,
                    tts="bench-vowel",
                    stt=None,
                ),
            )
        http = make_client()
        cpu0, wall0 = _cpu_s(), time.monotonic()
        await asyncio.gather(*(_call(i, server, http, args, out, logs[i]) for i in range(n)))
        cpu, wall = _cpu_s() - cpu0, time.monotonic() - wall0
        await http.aclose()
        problems = list(server.problems)
    parts = {k: np.array(v) for k, v in _breakdown(out, logs, voiced).items()}
    lat = parts["measured"]
    transport = parts["caller_send"] + parts["agent_receive"] + parts["agent_send"] + parts["caller_receive"]
    err = np.abs(lat - args.delay * 1000)
    own = np.abs(lat - parts["agent_wait"] - transport)
    return {
        "rooms": n,
        "carried": not out["errors"] and out["turns"] == n * args.turns,
        "turns": out["turns"],
        "turns_timed": len(lat),
        "errors": out["errors"][:5],
        "server_problems": problems[:5],
        "turn_latency_ms_p50": _p(lat, 50),
        "latency_error_ms_p50": _p(err, 50),
        "latency_error_ms_p95": _p(err, 95),
        "transport_ms_p50": _p(transport, 50),
        "parts_ms_p50": {k: _p(v, 50) for k, v in parts.items() if k != "measured"},
        "tamesu_error_ms_p50": _p(own, 50),
        "tamesu_error_ms_p95": _p(own, 95),
        "tamesu_within_30_ms": round(float(np.mean(own <= 30)), 3) if len(own) else None,
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
        "criterion": "every call finishes every turn; tamesu's own error |measured - (agent wait + transport)| <= 30 ms",
        "delay_s": args.delay,
        "turns": args.turns,
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
