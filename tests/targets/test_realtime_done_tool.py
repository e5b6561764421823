"""The realtime done tool in audio mode: the call it ends with is recorded like any tool call.

The agent answers the caller's last spoken line with its goodbye and a call of ``end_session``,
then hangs up, once it has the answer or at once (before the fix, hanging up at once lost the
call and the turn: answering the call failed on the closed socket); the loopback server validates every event with the openai
package's models of the dialect, so the run sees what the real API would send.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tamesu.testing.realtime_server import load_recording, serve_realtime_server

from ..stored import stored_transcript

FIXTURES = Path(__file__).parent / "fixtures" / "realtime"

SUITE = """
suite: realtime-done
targets:
  voice:
    type: realtime
    url: "{url}"
    mode: audio
    turn_timeout: 10s
tests:
  - name: goodbye ends the call
    target: voice
    scenario:
      script:
        - say: "Thanks, that is all. Bye!"
    assert:
      - tool_called: end_session
      - contains: "Goodbye"
"""


def goodbye_steps(*, waits: bool) -> list[dict[str, Any]]:
    """The recorded session of one audio turn whose response says goodbye and calls end_session;
    the agent hangs up once the answer came (``waits``) or at once."""
    steps = [s for s in load_recording(FIXTURES / "ga_audio.jsonl") if s.get("type") != "response.done"]
    for step in steps:
        if step.get("type") == "response.output_audio_transcript.done":
            step["transcript"] = "Goodbye!"
        if step.get("type") == "response.output_audio_transcript.delta":
            step["delta"] = "Goodbye!" if step["delta"].startswith("Your") else ""
    steps = [s for s in steps if s.get("delta") != ""]
    for step in steps:
        if step.get("type") == "response.output_audio.delta":
            step["delta"] = {"$audio": {"tone": 440, "ms": 1500}}
    call = {"call_id": "call_END", "name": "end_session", "arguments": '{"reason": "resolved"}'}
    steps += [
        {
            "type": "response.function_call_arguments.done",
            "response_id": "resp_a1",
            "item_id": "item_fc1",
            "output_index": 1,
            **call,
        },
        {
            "type": "response.done",
            "response": {
                "id": "resp_a1",
                "object": "realtime.response",
                "status": "completed",
                "output": [
                    {
                        "id": "item_a1",
                        "type": "message",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_audio", "transcript": "Goodbye!"}],
                    },
                    {"id": "item_fc1", "type": "function_call", "status": "completed", **call},
                ],
            },
        },
        {"expect": "conversation.item.create", "match": {"item": {"type": "function_call_output"}}},
        {"close": 1000, "reason": "session ended"},
    ]
    return steps if waits else [s for s in steps if s.get("expect") != "conversation.item.create"]


@pytest.mark.integration
@pytest.mark.parametrize("waits", [True, False], ids=["hangs-up-after-the-answer", "hangs-up-at-once"])
async def test_the_done_tool_after_the_callers_last_line_is_a_tool_call_and_keeps_the_turn(
    tmp_path: Path, fake_voice: None, waits: bool
) -> None:
    from tamesu import run_async

    async with serve_realtime_server(goodbye_steps(waits=waits)) as server:
        suite = tmp_path / "suite.yaml"
        suite.write_text(SUITE.format(url=server.url))
        result = await run_async(suite, output=tmp_path / "out")
    assert server.sessions[0].problems == []
    [run] = result.results
    assert run.error is None and result.exit_code == 0, [a for a in run.assertions if not a.passed]
    transcript = stored_transcript(result.run_dir, run)
    agent = [t for t in transcript["turns"] if t["role"] == "agent"]
    assert [c["name"] for t in agent for c in t.get("tool_calls") or []] == ["end_session"]
    assert agent[-1]["text"] == "Goodbye!"
