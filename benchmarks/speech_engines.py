"""How fast the offline speech engines run here, and how many voice calls two cores can carry.

    python benchmarks/speech_engines.py            # about two minutes on two cores
    python benchmarks/speech_engines.py --quick    # fewer repetitions
    python benchmarks/speech_engines.py --accuracy # word error rate per engine, line and voice

``--accuracy`` (``benchmarks/speech_accuracy.py``) scores each offline STT engine on known support
sentences spoken by Piper and espeak-ng (and espeak-ng in Spanish, German and French) through each
kind of line, with its CPU time, and writes benchmarks/results/speech_accuracy.json: the figures
the listener's default engine per line is chosen by (``tamesu.audio.engines.stt_for``).

Measured on this machine with the engines as tamesu builds them (Piper joe, Whisper tiny.en int8):

- Piper: real-time factor (wall seconds per second of speech) with one onnxruntime thread, and the
  throughput of two workers synthesising at once;
- Whisper: real-time factor with beam 1 and beam 5 on Piper's speech at 16 kHz, and the WER;
- concurrent transcriptions with 1 worker x 2 threads and 2 workers x 1 thread, one clip per
  request and packed (``transcribe_many``: short clips share Whisper's 30-second windows);
- resident memory each engine adds when its model loads;
- the same engines standalone (``piper.PiperVoice`` and ``faster_whisper.WhisperModel`` called
  directly, with the same model, threads and decoding options) on the same texts and clips, and the
  ratio of tamesu's audio seconds per CPU-second to theirs (``inside_vs_standalone``: 1.0 means
  tamesu's engine wrappers cost nothing beside the engines' own work; above 1.0, packing wins).

CPU time (``time.process_time``, every thread of the process) is measured beside wall time, so
"seconds of audio per CPU-second" holds even when other work shares the cores. The capacity
estimate divides the cores by a call's CPU demand per second (assumptions printed with it).
Figures go to stdout and to benchmarks/results/speech_engines.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "speech_engines.json"
T = TypeVar("T")

CORPUS = (
    "Hello, I would like to return my order because it arrived damaged.",
    "Could you please tell me when the refund will reach my credit card?",
    "I have been waiting on the phone for a long time and I am not happy about it.",
    "My account number is on the invoice you sent me last week.",
    "Please cancel the subscription and send me a confirmation email.",
    "Thanks, that is all I needed. Have a good day.",
)

USER_TALK = 0.35
"""Fraction of a call's wall time the simulated caller speaks (TTS demand)."""
AGENT_TALK = 0.45
"""Fraction of a call's wall time the agent speaks (STT demand: all of it is transcribed)."""


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def wer(reference: str, hypothesis: str) -> float:
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(len(ref), 1)


async def timed(fn: Callable[[], Awaitable[T]]) -> tuple[T, float, float]:
    """The result, wall seconds and CPU seconds (all threads) of ``await fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = await fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def rates(audio_s: float, wall_s: float, cpu_s: float, **extra: Any) -> dict[str, Any]:
    return {
        "audio_s": round(audio_s, 2),
        "wall_s": round(wall_s, 3),
        "cpu_s": round(cpu_s, 3),
        "real_time_factor": round(wall_s / audio_s, 4),
        "x_real_time": round(audio_s / wall_s, 2),
        "audio_s_per_cpu_s": round(audio_s / cpu_s, 2) if cpu_s else None,
        **extra,
    }


async def bench_piper(reps: int) -> tuple[dict[str, Any], list[Any]]:
    from tamesu.audio.tts.piper import PiperTTS

    before = rss_mb()
    one = PiperTTS(threads=1, workers=1)
    _, load_s, _ = await timed(one.warm)
    memory = rss_mb() - before
    await one.synthesize(CORPUS[0])
    texts = list(CORPUS) * reps

    clips, wall, cpu = await timed(lambda: _each(one.synthesize, texts))
    sequential = rates(sum(c.duration for c in clips), wall, cpu, utterances=len(texts))
    two = PiperTTS(threads=1, workers=2)
    await two.warm()
    clips2, wall, cpu = await timed(lambda: asyncio.gather(*(two.synthesize(t) for t in texts)))
    parallel = rates(sum(c.duration for c in clips2), wall, cpu, utterances=len(texts))
    memory_two = rss_mb() - before
    one.close()
    two.close()
    return {
        "load_s": round(load_s, 2),
        "rss_mb": round(memory, 1),
        "rss_mb_two_engines": round(memory_two, 1),
        "sample_rate": clips[0].sample_rate,
        "sequential_1_worker_1_thread": sequential,
        "concurrent_2_workers_1_thread": parallel,
    }, clips[: len(CORPUS)]


async def _each(fn: Callable[[Any], Awaitable[T]], items: list[Any]) -> list[T]:
    return [await fn(item) for item in items]


async def bench_whisper(clips: list[Any], reps: int, cores: int) -> dict[str, Any]:
    from tamesu.audio.stt.whisper import WhisperSTT

    reference = " ".join(CORPUS)
    audio = [c.resample(16000) for c in clips] * reps
    out: dict[str, Any] = {}
    before = rss_mb()
    for beam in (1, 5):
        engine = WhisperSTT(beam_size=beam, workers=1, cpu_threads=cores)
        _, load_s, _ = await timed(engine.warm)
        if beam == 1:
            out["load_s"] = round(load_s, 2)
            out["rss_mb"] = round(rss_mb() - before, 1)
        await engine.transcribe(audio[0])
        results, wall, cpu = await timed(lambda e=engine: _each(e.transcribe, audio))
        hypothesis = " ".join(r.text for r in results[: len(clips)])
        out[f"beam_{beam}"] = rates(
            sum(a.duration for a in audio),
            wall,
            cpu,
            utterances=len(audio),
            cpu_s_per_utterance=round(cpu / len(audio), 3),
            wer=round(wer(reference, hypothesis), 4),
            threads=cores,
        )
        engine.close()
    for workers in (1, 2):
        engine = WhisperSTT(beam_size=1, workers=workers, cpu_threads=max(1, cores // workers))
        await engine.warm()
        await engine.transcribe_many(audio[:2])
        results, wall, cpu = await timed(lambda e=engine: e.transcribe_many(audio))
        out[f"packed_{workers}_workers"] = rates(
            sum(a.duration for a in audio),
            wall,
            cpu,
            utterances=len(audio),
            cpu_threads=engine.cpu_threads,
            utterances_per_s=round(len(audio) / wall, 2),
            wer=round(wer(reference, " ".join(r.text for r in results[: len(clips)])), 4),
        )
        engine.close()
    for workers in (1, 2):
        engine = WhisperSTT(beam_size=1, workers=workers, cpu_threads=max(1, cores // workers))
        await engine.warm()
        await asyncio.gather(*(engine.transcribe(a) for a in audio[:workers]))
        _, wall, cpu = await timed(lambda e=engine: asyncio.gather(*(e.transcribe(a) for a in audio)))
        out[f"concurrent_{workers}_workers"] = rates(
            sum(a.duration for a in audio),
            wall,
            cpu,
            utterances=len(audio),
            cpu_threads=engine.cpu_threads,
            utterances_per_s=round(len(audio) / wall, 2),
        )
        engine.close()
    return out


def standalone_engines(threads: int) -> tuple[Callable[[str], Any], Callable[[Any], str], int]:
    """Piper and Whisper called directly, as a program without tamesu would: the same model files,
    threads and decoding options as tamesu's engines. Returns speak(text) -> float samples at the
    voice's rate, hear(16 kHz float samples) -> text, and that rate."""
    import numpy as np
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig, SynthesisConfig

    from tamesu.audio.stt.whisper import WhisperSTT
    from tamesu.audio.tts.piper import PiperTTS

    tts = PiperTTS(threads=1, workers=1)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = onnxruntime.InferenceSession(
        str(tts.model_path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    voice = PiperVoice(session=session, config=PiperConfig.from_dict(json.loads(tts.config_path.read_text())))
    syn = SynthesisConfig()

    def speak(text: str) -> Any:
        return np.concatenate([c.audio_float_array for c in voice.synthesize(text, syn_config=syn)])

    stt = WhisperSTT(beam_size=1, workers=1, cpu_threads=threads)
    model = stt._load()  # faster_whisper.WhisperModel, loaded from the same files with the same threads

    def hear(samples: Any) -> str:
        segments, _ = model.transcribe(
            samples,
            language="en",
            beam_size=stt.beam_size,
            temperature=stt.temperature,
            vad_filter=False,
            word_timestamps=stt.word_timestamps,
            condition_on_previous_text=False,
            initial_prompt=stt.initial_prompt,
        )
        return " ".join(s.text.strip() for s in segments)

    return speak, hear, int(voice.config.sample_rate)


def measured(fn: Callable[[Any], T], items: list[Any]) -> tuple[list[T], float, float]:
    """``fn`` over ``items`` one after another (after one warm-up call): results, wall and CPU seconds."""
    fn(items[0])
    wall, cpu = time.perf_counter(), time.process_time()
    out = [fn(x) for x in items]
    return out, time.perf_counter() - wall, time.process_time() - cpu


def bench_standalone(clips: list[Any], reps: int, cores: int) -> dict[str, Any]:
    """The standalone engines on the corpus texts and the 16 kHz clips tamesu's engines had."""
    speak, hear, rate = standalone_engines(cores)
    texts = list(CORPUS) * reps
    spoken, wall, cpu = measured(speak, texts)
    piper = rates(sum(len(a) for a in spoken) / rate, wall, cpu, utterances=len(texts))
    audio = [c.resample(16000).to_float() for c in clips] * reps
    heard, wall, cpu = measured(hear, audio)
    whisper = rates(
        sum(len(a) for a in audio) / 16000,
        wall,
        cpu,
        utterances=len(audio),
        wer=round(wer(" ".join(CORPUS), " ".join(heard[: len(clips)])), 4),
        threads=cores,
    )
    return {"piper_1_thread": piper, "whisper_beam_1": whisper}


def inside_vs_standalone(
    piper: dict[str, Any], whisper: dict[str, Any], alone: dict[str, Any]
) -> dict[str, Any]:
    """Audio seconds per CPU-second through tamesu's engines over the same figure standalone."""
    tts = alone["piper_1_thread"]["audio_s_per_cpu_s"]
    stt = alone["whisper_beam_1"]["audio_s_per_cpu_s"]
    packed = max(
        whisper["packed_1_workers"]["audio_s_per_cpu_s"], whisper["packed_2_workers"]["audio_s_per_cpu_s"]
    )
    return {
        "piper": round(piper["sequential_1_worker_1_thread"]["audio_s_per_cpu_s"] / tts, 3),
        "whisper_one_clip_a_request": round(whisper["beam_1"]["audio_s_per_cpu_s"] / stt, 3),
        "whisper_packed": round(packed / stt, 3),
    }


def capacity(piper: dict[str, Any], whisper: dict[str, Any], cores: int) -> dict[str, Any]:
    """Calls the cores carry when TTS renders every caller line and STT transcribes every agent line."""
    tts_cpu = 1 / piper["sequential_1_worker_1_thread"]["audio_s_per_cpu_s"]
    stt_cpu = 1 / whisper["concurrent_2_workers"]["audio_s_per_cpu_s"]
    packed_cpu = 1 / max(
        whisper["packed_1_workers"]["audio_s_per_cpu_s"], whisper["packed_2_workers"]["audio_s_per_cpu_s"]
    )
    demand = USER_TALK * tts_cpu + AGENT_TALK * stt_cpu
    demand_packed = USER_TALK * tts_cpu + AGENT_TALK * packed_cpu
    return {
        "assumptions": {
            "cores": cores,
            "caller_talks": USER_TALK,
            "agent_talks": AGENT_TALK,
            "utterance_s": round(whisper["beam_1"]["audio_s"] / whisper["beam_1"]["utterances"], 2),
        },
        "piper_cpu_s_per_audio_s": round(tts_cpu, 4),
        "whisper_cpu_s_per_audio_s": round(stt_cpu, 4),
        "whisper_packed_cpu_s_per_audio_s": round(packed_cpu, 4),
        "cpu_s_per_call_s": round(demand, 4),
        "calls": round(cores / demand, 1),
        "calls_if_every_prompt_is_cached": round(cores / (AGENT_TALK * stt_cpu), 1),
        "calls_with_packed_stt": round(cores / demand_packed, 1),
        "calls_with_packed_stt_and_cached_prompts": round(cores / (AGENT_TALK * packed_cpu), 1),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    reps = 1 if args.quick else 3
    started = os.getloadavg()
    piper, clips = await bench_piper(reps)
    print(f"piper   {json.dumps(piper)}", flush=True)
    whisper = await bench_whisper(clips, reps, cores)
    print(f"whisper {json.dumps(whisper)}", flush=True)
    alone = bench_standalone(clips, reps, cores)
    print(f"alone   {json.dumps(alone)}", flush=True)
    ratio = inside_vs_standalone(piper, whisper, alone)
    print(f"ratio   {json.dumps(ratio)}", flush=True)
    cap = capacity(piper, whisper, cores)
    print(f"calls   {json.dumps(cap)}", flush=True)
    return {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cores": cores,
            "load_average_at_start": [round(x, 2) for x in started],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
        },
        "piper": piper,
        "whisper": whisper,
        "standalone": alone,
        "inside_vs_standalone": ratio,
        "capacity": cap,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one pass over the corpus instead of three")
    parser.add_argument(
        "--accuracy", action="store_true", help="word error rate and CPU per engine, line and voice"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.accuracy:
        from speech_accuracy import main as accuracy

        accuracy(args.out, quick=args.quick)
        return
    args.out = args.out or RESULTS
    result = asyncio.run(main_async(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
