"""The replayed caller: its turns in order with their audio, and a replay that stops fitting
reported as diverged at that turn (unit), end to end on a text target through ``tamesu run``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.config import Replay, Scenario
from tamesu.kernel.messages import AudioClip
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.users.replay_user import ReplayUser, replay_result, word_overlap
from tamesu.users.simulator import UserSimulator

from .example_agents import example_agent

ROOT = Path(__file__).resolve().parent.parent

REPLAY = {
    "recording": "calls/123.wav",
    "caller": "right",
    "opening": "Hi! You have reached Mochi Shoes. How can I help you today?",
    "turns": [
        {
            "say": "Where is my order ORD-1001?",
            "start": 3.0,
            "end": 4.5,
            "agent": "Your order ORD-1001 is out for delivery.",
        },
        {"say": "Great, thanks. Bye!", "clip": "calls/123/turn-2.wav", "agent": "Goodbye!"},
    ],
}


def replay(**changes: object) -> Replay:
    return Replay.model_validate({**REPLAY, **changes})


def said(transcript: Transcript, role: str, text: str) -> None:
    n = sum(1 for t in transcript.turns if t.role == role) + 1
    transcript.turns.append(Turn(role=role, text=text, index=n))  # type: ignore[arg-type]


@pytest.mark.unit
async def test_the_caller_says_its_turns_in_order_with_their_recorded_audio(tmp_path: Path) -> None:
    user = ReplayUser(replay(), suite_dir=tmp_path)
    assert isinstance(user, UserSimulator)
    t = Transcript()
    said(t, "agent", "Hi! You have reached Mochi Shoes. How can I help you today?")
    first = await user.next_turn(t)
    assert first is not None and (first.text, first.source) == ("Where is my order ORD-1001?", "replay")
    assert first.audio == AudioClip(path=str(tmp_path / "calls/123.wav"), channel=1, start=3.0, end=4.5)
    said(t, "user", first.text)
    said(t, "agent", "Your order ORD-1001 is out for delivery!")
    second = await user.next_turn(t)
    assert second is not None and second.audio == AudioClip(path=str(tmp_path / "calls/123/turn-2.wav"))
    said(t, "user", second.text)
    said(t, "agent", "Goodbye!")
    assert await user.next_turn(t) is None and user.end_reason == "done"
    assert replay_result(replay(), t).passed


@pytest.mark.unit
async def test_an_agent_that_asks_something_else_makes_the_replay_diverge_at_that_turn() -> None:
    user = ReplayUser(replay())
    t = Transcript()
    said(t, "agent", "Hi! You have reached Mochi Shoes. How can I help you today?")
    first = await user.next_turn(t)
    assert first is not None
    said(t, "user", first.text)
    said(t, "agent", "Before that, could you spell your email address?")
    assert await user.next_turn(t) is None
    assert user.end_reason == "diverged" and user.diverged is not None and user.diverged.turn == 2
    t.end_reason = "diverged"
    result = replay_result(replay(), t)
    assert not result.passed and not result.error and result.name == "replay"
    assert result.message.startswith(
        "diverged at caller turn 2: the agent said 'Before that, could you spell"
    )
    assert result.actual["diverged_at"] == 2


@pytest.mark.unit
async def test_a_changed_greeting_diverges_before_the_first_turn_and_diverge_below_0_never_stops() -> None:
    t = Transcript()
    said(t, "agent", "Welcome to the weather line. Which city?")
    user = ReplayUser(replay())
    assert await user.next_turn(t) is None and user.end_reason == "diverged"
    patient = ReplayUser(replay(diverge_below=0))
    assert await patient.next_turn(t) is not None


@pytest.mark.unit
def test_an_agent_that_hangs_up_early_fails_the_replay_with_the_turn() -> None:
    t = Transcript()
    said(t, "user", "Where is my order ORD-1001?")
    said(t, "agent", "Goodbye.")
    t.end_reason = "agent"
    result = replay_result(replay(), t)
    assert not result.passed and result.message == "the agent ended the call after caller turn 1 of 2"


@pytest.mark.unit
def test_word_overlap_shares_words_regardless_of_case_and_punctuation() -> None:
    assert word_overlap("Your order ORD-1001 is out!", "your order ord-1001 is OUT") == 1.0
    assert word_overlap("spell your email", "where is the order") == 0.0


@pytest.mark.unit
def test_a_replay_is_the_whole_scenario_and_its_offsets_need_the_recording() -> None:
    with pytest.raises(ValueError, match="no goal or script beside it"):
        Scenario.model_validate({"replay": REPLAY, "goal": "x"})
    with pytest.raises(ValueError, match="start/end point into recording"):
        Replay.model_validate({"turns": [{"say": "hi", "start": 1.0, "end": 2.0}]})
    with pytest.raises(ValueError, match="a clip or a start/end offset, not both"):
        Replay.model_validate(
            {"recording": "a.wav", "turns": [{"say": "hi", "start": 1.0, "end": 2.0, "clip": "b.wav"}]}
        )
    with pytest.raises(ValueError, match="end must come after start"):
        Replay.model_validate({"recording": "a.wav", "turns": [{"say": "hi", "start": 2.0, "end": 1.0}]})


@pytest.fixture
def demo_agent() -> Iterator[str]:
    yield from example_agent("demo_agent", stop_within=10)


SUITE = """\
suite: replays
targets:
  api:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ session_id: "{{{{session}}}}", message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply, done: $.end_session }}
tests:
  - name: replayed
    target: api
    scenario:
      replay:
        turns:
          - say: "Where is my order ORD-1001?"
            agent: "{answer}"
          - say: "Great, thanks. Bye!"
"""


@pytest.mark.integration
@pytest.mark.parametrize(
    ("answer", "code", "check"),
    [
        ("Your order ORD-1001 is out for delivery.", 0, "the recorded caller's 2 turns were all replayed"),
        ("Could I have your email address first?", 1, "diverged at caller turn 2"),
    ],
)
def test_a_text_target_gets_the_callers_words_and_a_divergence_fails_the_run(
    tmp_path: Path, demo_agent: str, answer: str, code: int, check: str
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url=demo_agent, answer=answer))
    report = tmp_path / "report.json"
    assert main(["run", str(suite), "--output", str(tmp_path / "runs"), "--json", str(report)]) == code
    [run] = json.loads(report.read_text())["tests"][0]["runs"]
    [replayed] = [a for a in run["assertions"] if a["name"] == "replay"]
    assert replayed["message"].startswith(check)
    turns = 1 if code else 2
    assert run["metrics"]["user_turns"] == turns


@pytest.mark.unit
def test_a_replay_whose_clip_is_missing_is_a_validate_error_naming_it(tmp_path: Path) -> None:
    from tamesu.config.loader import load_suite
    from tamesu.errors import ConfigErrors

    (tmp_path / "calls").mkdir()
    (tmp_path / "calls" / "123.wav").write_bytes(b"RIFF")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "suite: s\ntargets:\n  phone: { type: voice, url: 'ws://127.0.0.1:9/voice' }\ntests:\n"
        "  - name: t\n    target: phone\n    scenario:\n      replay:\n        recording: calls/123.wav\n"
        "        turns:\n          - { say: hi, start: 0.5, end: 1.0 }\n          - { say: bye, clip: calls/gone.wav }\n"
    )
    with pytest.raises(ConfigErrors) as info:
        load_suite(suite)
    [error] = info.value.errors
    assert str(error).endswith(
        ":12:31: clip not found: calls/gone.wav at tests[0].scenario.replay.turns[1].clip "
        "(paths are relative to the suite's folder)"
    )
