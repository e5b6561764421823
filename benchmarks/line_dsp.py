"""Per-frame cost of the line models and the VAD, and how many real-time calls one core carries.

For each line model: the CPU time of one 20 ms frame per call when every call has its own
``Line`` (frame by frame) and when a ``LineBank`` processes the frames of N calls in one step
(vectorised), for N = 1, 100, 1000. Then the VAD (webrtcvad + the batched segmenter) per frame,
background-noise mixing, and the figure of merit: concurrent pass-through calls (pstn line on the
caller's audio + VAD on the agent's audio, no TTS/STT) one core sustains in real time, i.e.
20 ms divided by the per-call cost of a frame. Goal: 1,000 calls on this 2-core machine, so at
least 500 per core (a per-call cost under 40 us).

    python benchmarks/line_dsp.py [--frames 100] [--calls 1,100,1000]

CPU time (``time.process_time``) is measured, the best of three runs, so other processes on a
busy machine do not inflate it; BLAS is pinned to one thread. Writes
benchmarks/results/line_dsp.json.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from tamesu.audio import synth  # noqa: E402
from tamesu.audio.noise import NoiseBank  # noqa: E402
from tamesu.audio.pcm import frame_samples, split_frames  # noqa: E402
from tamesu.audio.phone_line import Line, get_line_model  # noqa: E402
from tamesu.audio.vad import TurnDetectorBank, WebRtcVad  # noqa: E402

FRAME_S = 0.020
GOAL_CALLS = 1000
CORES = os.cpu_count() or 1
HERE = Path(__file__).resolve().parent


def _best(step: Callable[[int], object], frames: int, repeats: int = 3) -> float:
    """CPU seconds per call of ``step(k)``, the best of ``repeats`` runs of ``frames`` steps."""
    step(0)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for k in range(frames):
            step(k)
        best = min(best, (time.process_time() - start) / frames)
    return best


def _speech(rate: int, n_calls: int, frames: int) -> np.ndarray:
    """(frames, calls, samples) of speech-like audio, a few distinct voices tiled over the calls."""
    voices = [
        split_frames(synth.speech_like(frames * FRAME_S, rate, seed=s), rate)[:frames] for s in range(4)
    ]
    stack = np.stack(voices, axis=1)
    return np.ascontiguousarray(np.tile(stack, (1, -(-n_calls // 4), 1))[:, :n_calls])


def bench_line(name: str, calls: list[int], frames: int) -> dict[str, object]:
    model = get_line_model(name)
    out: dict[str, object] = {"rate": model.rate, "codec": model.codec}
    for n in calls:
        per_call_cost = 1 if model.codec in ("opus", "amr_nb") else 0
        steps = max(5, frames // (1 + per_call_cost * n // 50))
        audio = _speech(model.rate, n, steps)
        bank = model.bank(n, list(range(n)))
        vec = _best(lambda k, b=bank, a=audio: b.process(a[k % len(a)]), steps) / n
        row: dict[str, float] = {"vectorised_us": round(vec * 1e6, 2)}
        if n <= 100 or per_call_cost == 0:
            lines = [Line(model, seed) for seed in range(n)]

            def one_by_one(k: int, lines: list[Line] = lines, a: np.ndarray = audio) -> None:
                frame = a[k % len(a)]
                for i, line in enumerate(lines):
                    line.process(frame[i])

            fbf = _best(one_by_one, max(3, steps // max(1, n // 100)), repeats=2) / n
            row["frame_by_frame_us"] = round(fbf * 1e6, 2)
            row["speedup"] = round(fbf / vec, 1)
        out[str(n)] = row
        print(f"  {name:12s} N={n:5d}  " + "  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    return out


def bench_vad(rate: int, calls: list[int], frames: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for n in calls:
        audio = _speech(rate, n, frames)
        bank = TurnDetectorBank(WebRtcVad(n, rate=rate), n)
        cost = _best(lambda k, b=bank, a=audio: b.process(a[k % len(a)]), frames) / n
        out[str(n)] = {"per_call_us": round(cost * 1e6, 2)}
        print(f"  vad {rate:5d} Hz  N={n:5d}  per_call_us={cost * 1e6:.2f}", flush=True)
    return out


def bench_noise(rate: int, n: int, frames: int) -> float:
    bank = NoiseBank("cafe", rate, list(range(n)))
    size = frame_samples(rate)
    speech = _speech(rate, n, frames).astype(np.float32)

    def step(k: int) -> None:
        mixed = speech[k % frames] + np.float32(0.05 * 32768) * bank.read(size)
        np.clip(mixed, -32768, 32767).astype(np.int16)

    return _best(step, frames) / n


def capacity(line_us: float, vad_us: float) -> dict[str, object]:
    per_call = line_us + vad_us
    per_core = int(FRAME_S * 1e6 / per_call)
    return {
        "pstn_line_us": line_us,
        "vad_us": vad_us,
        "per_call_us": round(per_call, 2),
        "calls_per_core": per_core,
        "calls_this_machine": per_core * CORES,
        "goal_calls": GOAL_CALLS,
        "met": per_core * CORES >= GOAL_CALLS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100, help="frames timed per measurement")
    parser.add_argument("--calls", default="1,100,1000", help="batch sizes, comma-separated")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "line_dsp.json")
    args = parser.parse_args(argv)
    calls = [int(c) for c in args.calls.split(",")]
    warnings.simplefilter("ignore")
    print("line models, CPU us per call per 20 ms frame:")
    lines = {name: bench_line(name, calls, args.frames) for name in ("pstn", "mobile_poor", "voip_good")}
    print("VAD (webrtcvad mode 2 + segmenter), CPU us per call per frame:")
    vad = {str(rate): bench_vad(rate, calls, args.frames) for rate in (8000, 16000)}
    big = str(max(calls))
    noise_us = round(bench_noise(8000, int(big), args.frames) * 1e6, 2)
    print(f"noise (cafe, 8 kHz) mixing: {noise_us} us per call per frame")
    pstn = lines["pstn"][big]
    vad_8k = vad["8000"][big]
    assert isinstance(pstn, dict) and isinstance(vad_8k, dict)
    cap = capacity(pstn["vectorised_us"], vad_8k["per_call_us"])
    print(
        f"pstn + VAD at N={big}: {cap['per_call_us']} us per call per frame -> "
        f"{cap['calls_per_core']} real-time calls per core, {cap['calls_this_machine']} on {CORES} cores "
        f"(goal {GOAL_CALLS}: {'met' if cap['met'] else 'NOT met'})"
    )
    result = {
        "benchmark": "line_dsp",
        "frame_ms": 20,
        "unit": "CPU microseconds per call per 20 ms frame (best of 3)",
        "lines": lines,
        "vad": vad,
        "noise_mix_us": noise_us,
        "capacity": cap,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": f"{platform.machine()}, {CORES} cpus",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
