"""Run directories for the report tests: real ``tamesu run`` / ``tamesu load`` invocations against a
loopback agent, and a phone call written by the real recording and store code."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tamesu import run
from tamesu.kernel.events import Interrupted, VoiceCall, VoiceTurn
from tamesu.kernel.outcome import RunResult
from tamesu.kernel.transcript import AudioSegment, Transcript, Turn
from tamesu.runner.invocation import InvocationResult
from tamesu.runner.results import ResultsStore
from tamesu.runner.verdict import exit_code, verdicts

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">\x1b[31mred'

SUITE = """
suite: shop
tags: [regression]
targets:
  api: {{ type: rest, url: "{url}/chat", response: {{ text: $.reply, tool_calls: "$.tool_calls[*]" }} }}
tests:
  - name: greets
    tags: [smoke]
    target: api
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ contains: Hello }} ]
  - name: refund policy
    target: api
    repeat: 4
    pass_threshold: 0.5
    scenario: {{ script: [ {{ say: refund }} ] }}
    assert: [ {{ contains: "30 days" }}, {{ tool_called: lookup_policy }} ]
  - name: hostile reply
    target: api
    scenario: {{ script: [ {{ say: hostile }} ] }}
    assert: [ {{ contains: thanks }} ]
"""


@contextmanager
def shop_agent() -> Iterator[str]:
    """Greets, answers refunds right every other time (with a tool call), and replies to
    ``hostile`` with markup and a terminal escape."""
    refunds = [0]
    lock = threading.Lock()

    class Agent(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers["Content-Length"]))).get("message", "")
            body: dict[str, object] = {"reply": "Hello! How can I help?"}
            if message == "refund":
                with lock:
                    refunds[0] += 1
                    days = 30 if refunds[0] % 2 else 60
                body = {
                    "reply": f"Returns are accepted within {days} days of delivery.",
                    "tool_calls": [{"name": "lookup_policy", "args": {"topic": "returns"}}],
                }
            elif message == "hostile":
                body = {"reply": HOSTILE}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def shop_run(root: Path, url: str, *, project: str = "", **kw: Any) -> InvocationResult:
    """A real invocation of the shop suite (concurrency 1, so the flaky refunds alternate);
    ``project`` adds lines to its tamesu.yaml."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "tamesu.yaml").write_text("output: runs\nhistory: { enabled: false }\n" + project)
    suite = root / "shop.yaml"
    suite.write_text(SUITE.format(url=url))
    return run([suite], concurrency=1, argv=["tamesu", "run", "shop.yaml"], **kw)


def _tone(freq: float, seconds: float, rate: int) -> list[int]:
    return [int(9000 * math.sin(2 * math.pi * freq * i / rate)) for i in range(int(seconds * rate))]


def voice_run(root: Path) -> Path:
    """A phone call's run directory: a stereo recording (caller left, agent right) with a barge-in,
    and the transcript a voice target writes (audio segments, voice_call / voice_turn events)."""
    import numpy as np

    from tamesu.voice.recording import CallRecording

    rate = 8000
    store = ResultsStore.create(root, suites=["phone"], settings={"argv": ["tamesu", "run", "phone.yaml"]})
    total = 6.0
    caller = np.zeros(int(total * rate), dtype=np.int16)
    agent = np.zeros(int(total * rate), dtype=np.int16)
    speech = [("caller", 0.2, 1.4), ("agent", 2.0, 4.2), ("caller", 3.4, 4.0), ("agent", 4.6, 5.6)]
    for channel, start, end in speech:
        target = caller if channel == "caller" else agent
        tone = np.array(_tone(300 if channel == "caller" else 520, end - start, rate), dtype=np.int16)
        target[int(start * rate) : int(start * rate) + len(tone)] = tone
    recording = CallRecording(store.dir / "recordings" / "call-1.wav", rate)
    for i in range(0, len(caller), 160):
        recording.write(caller[i : i + 160], agent[i : i + 160])
    recording.close()
    segments = [AudioSegment(start=s, end=e, channel=c) for c, s, e in speech]  # type: ignore[arg-type]
    transcript = Transcript(
        run_id="order status",
        test="order status",
        target="phone",
        turns=[
            Turn(role="user", text="Where is my order?", index=1, source="script", audio=[segments[0]]),
            Turn(role="agent", text="Let me check that for you, it ships", index=1, sent_at=1.4,
                 first_audio_at=2.0, end_at=4.2, audio=[segments[1]]),
            Turn(role="user", text="Sorry, order 1234", index=2, source="script", audio=[segments[2]]),
            Turn(role="agent", text="Order 1234 ships tomorrow.", index=2, sent_at=4.0,
                 first_audio_at=4.6, end_at=5.6, audio=[segments[3]]),
        ],
        events=[
            VoiceCall(at=0.0, recording="recordings/call-1.wav", rate=rate, channels=["caller", "agent"],
                      recording_starts_at=0.0),
            VoiceTurn(at=4.2, turn=1, caller_end=1.4, first_audio_at=2.0, end_at=3.4, interrupted=True),
            Interrupted(at=3.4),
            VoiceTurn(at=5.6, turn=2, caller_end=4.0, first_audio_at=4.6, end_at=5.6, interrupted=False),
        ],
        captures={"order_id": "1234"},
        metrics={"barge_ins": 1.0, "turn_latency_ms_p50": 600.0},
    )  # fmt: skip
    result = RunResult(
        run_id="order status",
        test_id="order status",
        test_name="order status",
        suite="phone",
        target="phone",
        outcome="passed",
        duration=6.0,
        turns=2,
        metrics=dict(transcript.metrics),
    )
    store.write_transcript(result, transcript, None)
    store.append(result)
    from tamesu.reports.json_report import summary

    from ..runner.test_scheduler import make_spec

    tests = verdicts([make_spec("order status", suite="phone", target="phone")], [result])
    invocation = InvocationResult(
        exit_code=exit_code(tests), tests=tests, results=[result], run_dir=store.dir, suites=["phone"]
    )
    store.write_json("summary.json", summary(invocation))
    return store.dir


def unversioned(run_dir: Path) -> None:
    """Rewrite a run directory as a tamesu without a results format wrote it: no ``format`` in
    results.jsonl or the transcripts, each transcript in a file of its own under transcripts/,
    events as plain objects (None fields left out), and one event of a type this tamesu does not
    know."""
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    log = run_dir / "transcripts.jsonl"
    (run_dir / "transcripts").mkdir()
    for n, record in enumerate(records):
        record.pop("format")
        span = record.pop("transcript_span", None)
        if span is None:
            continue
        with open(log, "rb") as f:
            f.seek(span[0])
            data = json.loads(f.read(span[1]))
        data.pop("format")
        events = [{k: v for k, v in e.items() if v is not None} for e in data["events"]]
        events.append({"type": "barge_in_attempt", "at": 1.5, "by": "caller"})
        data["events"] = events
        record["transcript_file"] = f"transcripts/run{n}.json"
        (run_dir / record["transcript_file"]).write_text(json.dumps(data))
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    log.unlink()
