"""Is the live listener as good as its engine? Its word error rate against the engine's on the
call's own recording, per line type and agent voice.

    python benchmarks/listener_wer.py            # about ten minutes on two cores
    python benchmarks/listener_wer.py --quick    # 8 sentences a call instead of 24

A loopback agent (the voice tests' ``LoopbackAgent``) greets and then answers each caller turn
with the next of 24 known support sentences, in Piper's natural voice or espeak-ng's robotic one,
over a voice socket (PCM16 at 16 kHz, paced in real time) and over Twilio media streams (8 kHz
mu-law, all at once with a mark). tamesu places the call as a suite would (``transcript_source:
stt``, the listener's own engine per line: ``stt_for``), and each agent turn's text is what the
listener heard live. Then the same engine transcribes each turn's agent speech cut from the call's
recording (the agent channel as heard, with the listener's padding). Goal: the live figure within
0.02 of the recording's. Writes benchmarks/results/listener_wer.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "listener_wer.json"
sys.path[:0] = [str(HERE), str(ROOT)]

VOICES = {"piper": "en-US-male", "espeak": "espeak:en-us"}
PAD_S = 0.15


async def one_call(line: str, voice: str, sentences: tuple[str, ...], out: Path) -> dict[str, Any]:
    import numpy as np
    from speech_accuracy import spoken_wer

    from tamesu.audio.engines import get_stt, stt_for
    from tamesu.audio.tts import Audio
    from tamesu.kernel.events import VoiceCall
    from tamesu.kernel.messages import AgentTurn, Event, UserTurn
    from tamesu.voice.recording import read_recording
    from tamesu.voice.speech import render_speech
    from tests.voice.peers import AgentScript, Calls, collect, register_engines

    register_engines()
    for text in sentences:  # rendered (and cached) before the call, so the agent answers at once
        await render_speech(text, 16000 if line == "voice" else 8000, voice=VOICES[voice], language="en")
    calls = Calls(out)
    try:
        script = AgentScript(
            greeting=1.0, lines=sentences, speaks=(VOICES[voice], "en"), transcripts=False, delay=0.3
        )
        _, url = await calls.agent(script)
        if line == "voice":
            config: dict[str, Any] = {"type": "voice", "url": f"{url}/voice", "idle": "1s"}
        else:
            config = {"type": "twilio", "url": f"{url}/twilio", "idle": "1s"}
        phone = await calls.target({**config, "transcript_source": "stt"}, turn_timeout=60.0, stt_engine=None)
        turns: list[AgentTurn] = []
        call: VoiceCall | None = None
        for i in range(len(sentences)):
            messages = await collect(phone, None if i == 0 else UserTurn(text="next please"))
            call = call or next(
                (m.event for m in messages if isinstance(m, Event) and isinstance(m.event, VoiceCall)), None
            )
            turn = messages[-1]
            assert isinstance(turn, AgentTurn)
            turns.append(turn)
        await phone.stop()
    finally:
        await calls.close()
    assert call is not None and call.recording and call.recording_starts_at is not None
    rate, _, agent = read_recording(out / call.recording)
    engine_name = stt_for(rate, "en")
    engine = get_stt(engine_name)
    live, recorded = [], []
    cpu = time.process_time()
    for turn in turns:
        spans = [a for a in turn.audio if a.channel == "agent"]
        live.append(turn.text)
        if not spans:
            recorded.append("")
            continue
        start = max(0, int((spans[0].start - PAD_S - call.recording_starts_at) * rate))
        end = min(len(agent), int((spans[-1].end + PAD_S - call.recording_starts_at) * rate))
        clip = Audio(np.asarray(agent[start:end], dtype=np.int16), rate)
        recorded.append((await engine.transcribe(clip, language="en")).text)
    cpu = time.process_time() - cpu
    row = {
        "line": line,
        "rate": rate,
        "voice": voice,
        "engine": engine_name,
        "turns": len(turns),
        "wer_live": round(spoken_wer(list(sentences), live, "en"), 4),
        "wer_recording": round(spoken_wer(list(sentences), recorded, "en"), 4),
        "recording_stt_cpu_s": round(cpu, 2),
        "differ": [(a, b) for a, b in zip(live, recorded) if a != b][:5],
    }
    row["gap"] = round(row["wer_live"] - row["wer_recording"], 4)
    print(json.dumps(row), flush=True)
    return row


async def run(quick: bool) -> list[dict[str, Any]]:
    from speech_accuracy import ENGLISH

    sentences = ENGLISH[::3] if quick else ENGLISH
    rows = []
    for line in ("voice", "twilio"):
        for voice in VOICES:
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(await one_call(line, voice, sentences, Path(tmp)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 sentences a call instead of 24")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = os.getloadavg()
    rows = asyncio.run(run(args.quick))
    result = {
        "machine": {
            "platform": platform.platform(),
            "cores": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in started],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
        },
        "goal": "wer_live within 0.02 of wer_recording",
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
