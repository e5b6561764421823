"""How many simulated phone calls this machine carries in real time, in one process.

Each call is a full ``VoiceSession`` on the call's stages (caller, line, transport, listener,
recorder; one ``AudioBatch`` per lane per tick): the caller speaks its turns (TTS audio, through the ``pstn``
line model, encoded to 8 kHz mu-law and handed to the wire every 20 ms), an in-process agent
answers each turn ``--delay`` seconds after the caller's last loud frame by sending its whole reply
at once (as Twilio agents do), and the reply is played back at real time through the VAD that
ends the turn. Nothing crosses a socket: the figure is tamesu's own cost per call. Two modes:

- ``passthrough``: pre-rendered caller audio (every call says the same lines, synthesised once),
  the agent's words from its own transcript, so no TTS or STT runs during the calls.
- ``speech``: every caller line is different, so Piper synthesises each one during the call, and
  every agent turn is transcribed by Whisper (``transcript_source: stt``). With ``--engines
  thread`` each row's ``engine_work`` replays the very texts and clips of the run on Piper and
  Whisper called directly and divides their CPU by the process's: how much of a voice call's CPU is
  the engines' own work (the rest is tamesu's call machinery and the in-process agent).

A load sustains real time when frames are never late by more than one frame (20 ms) at the 99th
percentile of the pump's ticks over the steady part of the run. On a machine shared with other
jobs, ``--repeat`` runs each load several times and keeps the least disturbed run (every run's p99
is kept too); each row records the machine's load average. Memory per call is the growth of
the process's resident set over the idle baseline, divided by the calls. Writes
benchmarks/results/voice_calls.json.

    python benchmarks/voice_calls.py                      # both modes, default loads
    python benchmarks/voice_calls.py --mode passthrough --calls 500,1000,1500 --seconds 25
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from tamesu.audio.codec import ulaw_decode, ulaw_encode  # noqa: E402
from tamesu.clock import MonotonicClock  # noqa: E402
from tamesu.kernel.messages import AgentTurn, UserTurn  # noqa: E402
from tamesu.secrets import Redactor  # noqa: E402
from tamesu.speech_pool import LocalSpeechPool, SpeechPool  # noqa: E402
from tamesu.targets.base import TargetContext  # noqa: E402
from tamesu.templates import Scope  # noqa: E402
from tamesu.voice import FramePump, VoiceSession, VoiceSettings  # noqa: E402
from tamesu.voice.speech import render_speech  # noqa: E402

HERE = Path(__file__).resolve().parent
LOUD = bytes(int(abs(int(v)) > 100) for v in ulaw_decode(bytes(range(256))))
"""mu-law code -> 1 when its sample is above -40 dBFS: the agent's energy detector (above -50 dBFS), one translate a frame."""
QUIET_FRAMES = 40
"""Silence (800 ms) after which the agent takes the caller to be done (Piper leaves pauses mid-sentence)."""
CALL_NUMBERS = itertools.count()
"""Each call of the process gets its own number, so no caller line of a later load (or repeat) is
already in the process's synthesis cache: in speech mode every line is synthesised."""
CALLER_LINES = (
    "Hi, I bought some running shoes last month and they do not fit.",
    "It was about forty days ago. Can I still send them back?",
    "Okay, thank you. Goodbye.",
)
AGENT_LINE = "Our policy is that returns are accepted within thirty days of delivery."


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class LoopbackAgent:
    """The agent on the other end of one call, in-process: the wire the session drives.

    It hears the caller by energy (a frame with a sample above -40 dBFS is speech) and answers ``delay`` seconds after the last loud frame with its whole reply.
    """

    def __init__(self, reply: bytes, delay: float) -> None:
        self.reply = reply
        self.delay = delay
        self.session: VoiceSession | None = None
        self.loud = False
        self.quiet = 0
        self.frames = 0
        self.bytes = 0
        self.last_loud = 0.0
        self.answered: list[float] = []

    def send_audio(self, payload: bytes) -> None:
        self.frames += 1
        self.bytes += len(payload)
        if b"\x01" in payload.translate(LOUD):
            self.loud, self.quiet = True, 0
            self.last_loud = time.monotonic()
        elif self.loud:
            self.quiet += 1
            if self.quiet == QUIET_FRAMES:
                self.loud = False
                wait = max(0.0, self.last_loud + self.delay - time.monotonic())
                asyncio.get_running_loop().call_later(wait, self._answer)

    def _answer(self) -> None:
        if self.session is not None:
            self.answered.append(time.monotonic())
            self.session.heard_audio(ulaw_decode(self.reply))

    def marks_played(self, names: list[str]) -> None:
        pass

    async def send_dtmf(self, digits: str) -> bool:
        return False


def _context(i: int, speech: SpeechPool | None) -> TargetContext:
    return TargetContext(
        name="phone",
        run_id=f"bench-{i}",
        session=f"s{i}",
        scope=Scope({}),
        clock=MonotonicClock(),
        http=None,  # type: ignore[arg-type]
        redactor=Redactor(),
        turn_timeout=60.0,
        speech=speech,
    )


async def _call(
    i: int,
    mode: str,
    reply: bytes,
    args: argparse.Namespace,
    out: dict[str, Any],
    speech: SpeechPool | None = None,
) -> None:
    settings = VoiceSettings(
        encoding="mulaw",
        rate=8000,
        idle=args.idle,
        turn_timeout=60.0,
        transcript_source="stt" if mode == "speech" else "agent",
        line_quality="pstn",
        seed=i,
        tts_engine=args.tts,
    )
    agent = LoopbackAgent(reply, args.delay)
    session = VoiceSession(settings, _context(i, speech), agent)
    agent.session = session
    await session.start()
    try:
        for turn in range(args.turns):
            line = CALLER_LINES[turn % len(CALLER_LINES)]
            if mode == "speech":
                line = f"Call {i}, turn {turn + 1}. {line}"
            said = time.monotonic()
            async for msg in session.turn(UserTurn(text=line)):
                if isinstance(msg, AgentTurn):
                    out["turns"] += 1
                    out["latency_error_ms"].append(
                        None
                        if msg.first_audio_at is None or msg.sent_at is None
                        else abs((msg.first_audio_at - msg.sent_at) - args.delay) * 1000
                    )
                    out["turn_end_to_text_s"].append(time.monotonic() - said)
    except Exception as exc:
        out["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        await session.stop()
        out["frames"] += agent.frames


async def run_load(n: int, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """``n`` calls started over ``args.ramp`` seconds; statistics over the steady part."""
    await asyncio.sleep(0)
    reply_utt = await render_speech(AGENT_LINE, 8000, engine=args.tts)
    reply = ulaw_encode(np.asarray(reply_utt.samples)).tobytes()
    if mode == "passthrough":
        for line in CALLER_LINES:
            await render_speech(line, 8000, engine=args.tts)
    pool: Any = None
    if mode == "speech":
        pool = (
            EngineProcess(args.stt_threads, args.stt)
            if args.engines == "process"
            else ThreadEngines(args.stt_threads, args.stt)
        )
        await pool.warm()
    gc.collect()
    baseline = _rss_mb()
    pump = FramePump.shared()
    out: dict[str, Any] = {
        "turns": 0,
        "frames": 0,
        "errors": [],
        "latency_error_ms": [],
        "turn_end_to_text_s": [],
    }
    peak = baseline
    wall0, cpu0 = time.monotonic(), time.process_time()
    tasks = []
    for _ in range(n):
        tasks.append(asyncio.create_task(_call(next(CALL_NUMBERS), mode, reply, args, out, pool)))
        await asyncio.sleep(args.ramp / n)
    await asyncio.sleep(1.0)
    if args.gc_freeze:
        gc.freeze()
    pump.reset_stats()
    steady_cpu, steady_wall = time.process_time(), time.monotonic()
    deadline = steady_wall + args.seconds
    while time.monotonic() < deadline and not all(t.done() for t in tasks):
        await asyncio.sleep(0.5)
        peak = max(peak, _rss_mb())
    late = pump.lateness() * 1000
    steady_s = max(1e-9, time.monotonic() - steady_wall)
    cpu_s = time.process_time() - steady_cpu
    cpu = cpu_s / steady_s
    ticks = len(late)
    load = os.getloadavg()[0]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if mode == "speech":
        closing = getattr(pool, "close", None)
        if closing is not None:
            closing()
    errors = out["errors"]
    lat = [x for x in out["latency_error_ms"] if x is not None]
    p99 = float(np.percentile(late, 99)) if ticks else float("nan")
    result = {
        "calls": n,
        "ticks": ticks,
        "late_ms_p50": round(float(np.percentile(late, 50)), 2) if ticks else None,
        "late_ms_p99": round(p99, 2) if ticks else None,
        "late_ms_max": round(float(late.max()), 2) if ticks else None,
        "real_time": bool(ticks and p99 <= 20.0 and pump.resyncs == 0),
        "resyncs": pump.resyncs,
        "cpu_cores": round(cpu, 2),
        "cpu_us_per_call_frame": round(cpu_s / (n * steady_s / 0.02) * 1e6, 2),
        "calls_per_core_projected": int(0.02 / (cpu_s / (n * steady_s / 0.02))),
        "machine_load_1m": round(load, 2),
        "memory_mb_per_call": round((peak - baseline) / n, 3),
        "agent_turns": out["turns"],
        "latency_error_ms_mean": round(float(np.mean(lat)), 1) if lat else None,
        "latency_error_ms_max": round(float(np.max(lat)), 1) if lat else None,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "wall_s": round(time.monotonic() - wall0, 1),
        "cpu_s_total": round(time.process_time() - cpu0, 1),
    }
    if mode == "speech":
        ends = out["turn_end_to_text_s"]
        result["turn_s_mean"] = round(float(np.mean(ends)), 2) if ends else None
    if isinstance(pool, ThreadEngines):
        result["engine_work"] = engine_work(pool, args.stt_threads, time.process_time() - cpu0)
    return result


def engine_work(pool: ThreadEngines, threads: int, cpu_s: float) -> dict[str, Any]:
    """The same texts and clips the calls synthesised and transcribed, replayed on Piper and
    Whisper called directly (``speech_engines``' standalone engines): their CPU over the CPU the
    whole process spent on the calls. 1.0 would mean tamesu's call machinery costs nothing."""
    from speech_engines import measured, standalone_engines

    speak, hear, _ = standalone_engines(threads)
    _, _, tts_cpu = measured(speak, pool.texts)
    clips = [c.resample(16000).to_float() for c in pool.clips]
    _, _, stt_cpu = measured(hear, clips)
    engines_cpu = tts_cpu + stt_cpu
    return {
        "spoken_s": round(pool.spoken_s, 1),
        "heard_s": round(sum(c.duration for c in pool.clips), 1),
        "utterances": len(pool.texts),
        "clips": len(pool.clips),
        "standalone_tts_cpu_s": round(tts_cpu, 1),
        "standalone_stt_cpu_s": round(stt_cpu, 1),
        "standalone_cpu_s": round(engines_cpu, 1),
        "process_cpu_s": round(cpu_s, 1),
        "ratio": round(engines_cpu / cpu_s, 3) if cpu_s else None,
    }


class ThreadEngines:
    """The process's own Piper and Whisper on worker threads (Whisper limited to ``threads`` cores)."""

    def __init__(self, threads: int, stt: str | None = None) -> None:
        from tamesu.audio.engines import get_stt

        self.stt = get_stt(stt, cpu_threads=threads)
        self.local = LocalSpeechPool()
        self.spoken_s = 0.0
        """Seconds of caller speech synthesised so far."""
        self.texts: list[str] = []
        """Every caller line synthesised, replayed on standalone Piper afterwards."""
        self.clips: list[Any] = []
        """Every agent clip transcribed, replayed on standalone Whisper afterwards."""

    async def warm(self) -> None:
        from tamesu.audio.engines import get_tts

        await asyncio.gather(get_tts().warm(), self.stt.warm())

    async def synthesize(self, text: str, **kw: Any) -> Any:
        audio = await self.local.synthesize(text, **kw)
        self.spoken_s += audio.duration
        self.texts.append(text)
        return audio

    async def transcribe(self, audio: Any, *, language: str | None = None, engine: str | None = None) -> Any:
        result = await self.stt.transcribe(audio, language=language)
        self.clips.append(audio)
        return result

    def stats(self) -> dict[str, Any]:
        return self.local.stats()


def _engine_call(kind: str, payload: Any, threads: int, stt: str | None = None) -> Any:
    """In the engine process: synthesise (text -> samples, rate) or transcribe ((samples, rate) -> text)."""
    from tamesu.audio.engines import get_stt, get_tts
    from tamesu.audio.tts import Audio

    async def run() -> Any:
        if kind == "warm":
            await asyncio.gather(get_tts().warm(), get_stt(stt, cpu_threads=threads).warm())
            return None
        if kind == "tts":
            audio = await get_tts().synthesize(payload)
            return np.asarray(audio.samples), audio.sample_rate
        samples, rate, language = payload
        result = await get_stt(stt, cpu_threads=threads).transcribe(Audio(samples, rate), language=language)
        return result.text

    return asyncio.run(run())


class EngineProcess:
    """Piper and Whisper in a separate process, so their Python never holds this process's GIL."""

    def __init__(self, threads: int, stt: str | None = None) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.threads, self.stt = threads, stt
        self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    async def _call(self, kind: str, payload: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, _engine_call, kind, payload, self.threads, self.stt)

    async def warm(self) -> None:
        await self._call("warm", None)

    async def synthesize(self, text: str, **kw: Any) -> Any:
        from tamesu.audio.tts import Audio

        samples, rate = await self._call("tts", text)
        return Audio(samples, rate)

    async def transcribe(self, audio: Any, *, language: str | None = None, engine: str | None = None) -> Any:
        from tamesu.audio.stt import Transcription

        text = await self._call("stt", (np.asarray(audio.samples), audio.sample_rate, language))
        return Transcription(text=text, language=language, duration=audio.duration)

    def stats(self) -> dict[str, Any]:
        return {"pool": "process"}

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)


def _worker(n: int, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    return asyncio.run(run_load(n, mode, args))


def run_processes(n: int, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """``n`` calls split over ``args.processes`` fresh processes (one event loop and pump each), run at
    once; a fresh process per load keeps one load's freed memory out of the next one's baseline.
    Speech loads in one process run here (their baseline holds the loaded models anyway)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if args.processes == 1 and mode == "speech":
        return _worker(n, mode, args)
    share = [n // args.processes + (1 if i < n % args.processes else 0) for i in range(args.processes)]
    with ProcessPoolExecutor(args.processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        rows = list(pool.map(_worker, share, [mode] * len(share), [args] * len(share)))
    if args.processes == 1:
        return rows[0]
    worst = max(rows, key=lambda r: r["late_ms_p99"] or 0)
    return {
        **worst,
        "calls": n,
        "processes": args.processes,
        "calls_per_process": share,
        "real_time": all(r["real_time"] for r in rows),
        "resyncs": sum(r["resyncs"] for r in rows),
        "cpu_cores": round(sum(r["cpu_cores"] for r in rows), 2),
        "memory_mb_per_call": round(max(r["memory_mb_per_call"] for r in rows), 3),
        "agent_turns": sum(r["agent_turns"] for r in rows),
        "errors": sum(r["errors"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("passthrough", "speech", "both"), default="both")
    parser.add_argument(
        "--calls", default=None, help="comma-separated loads (default 250,500,1000,1250 / 10,20,40)"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="steady-state seconds measured per load")
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds over which the calls are started")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--delay", type=float, default=1.0, help="the agent's reply delay (seconds)")
    parser.add_argument("--idle", type=float, default=0.8, help="the target's idle (seconds)")
    parser.add_argument("--tts", default=None, help="TTS engine (default: the persona default, Piper)")
    parser.add_argument(
        "--gc-freeze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="move what the started calls hold out of the collector's view (gc.freeze), as a long load test would",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="run each load this many times and keep the least disturbed"
    )
    parser.add_argument("--processes", type=int, default=1, help="split the calls over this many processes")
    parser.add_argument(
        "--stt-threads",
        type=int,
        default=1,
        help="Whisper's CPU threads (speech mode; one core is left to the calls)",
    )
    parser.add_argument(
        "--stt", default=None, help="speech mode: the STT engine (default whisper, tiny.en; or whisper-base)"
    )
    parser.add_argument(
        "--engines",
        choices=("thread", "process"),
        default="thread",
        help="speech mode: Piper and Whisper on threads of this process, or in one engine process",
    )
    parser.add_argument("--out", default=str(HERE / "results" / "voice_calls.json"))
    args = parser.parse_args()
    modes = ("passthrough", "speech") if args.mode == "both" else (args.mode,)
    random.seed(0)
    results: dict[str, Any] = {
        "benchmark": "voice_calls",
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "criterion": "frames late by at most one 20 ms frame at p99 of the pump's ticks, no resyncs",
        "modes": {},
    }
    for mode in modes:
        default = "250,500,1000,1250" if mode == "passthrough" else "10,20,40"
        loads = [int(x) for x in (args.calls or default).split(",")]
        rows = []
        for n in loads:
            tries = [run_processes(n, mode, args) for _ in range(args.repeat)]
            row = min(tries, key=lambda r: r["late_ms_p99"] if r["late_ms_p99"] is not None else 1e9)
            row["late_ms_p99_of_each_try"] = [r["late_ms_p99"] for r in tries]
            print(json.dumps({"mode": mode, **row}), flush=True)
            rows.append(row)
        sustained = [r["calls"] for r in rows if r["real_time"] and not r["errors"]]
        key = mode if args.processes == 1 else f"{mode}_{args.processes}_processes"
        if mode == "speech" and args.engines == "process":
            key += "_engine_process"
        settings = {k: v for k, v in vars(args).items() if k not in ("out", "calls", "mode")}
        results["modes"][key] = {
            "settings": settings,
            "loads": rows,
            "max_real_time_calls": max(sustained) if sustained else 0,
        }
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if Path(args.out).exists():
        previous = json.loads(Path(args.out).read_text())
        previous.setdefault("modes", {}).update(results["modes"])
        results["modes"] = previous["modes"]
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
