"""The livekit target against a real LiveKit Agents worker (``livekit-agents``, examples/livekit_agent).

The worker is its own process, started as a team starts it (``python agent.py dev`` with
LIVEKIT_URL and keys), and registers with the loopback server over the worker protocol; its
``AgentSession`` runs the rules LLM with one function tool and LiveKit's own EndCallTool.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("livekit.rtc")
pytest.importorskip("livekit.agents")
pytest.importorskip("aiortc")

from livekit.protocol import agent as agent_pb

from tamesu.errors import TargetError
from tamesu.kernel.events import VoiceTurn
from tamesu.kernel.messages import AgentTurn, Event, Interrupt, ToolCall, ToolResult, UserTurn
from tamesu.testing.livekit_server import LivekitServer
from tamesu.voice.voice_metrics import wer

from ..voice.peers import Calls, calls, collect, metrics_of, spec_with
from .livekit_worker import agent_worker, keys, room, server

GREETING = "Hello, this is the returns desk. How can I help?"
"""What the example worker says first (examples/livekit_agent/agent.py)."""

__all__ = ["calls", "server"]

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def jobs(server: LivekitServer, room_name: str) -> list[agent_pb.Job]:
    return [job for d in server.dispatches.get(room_name, []) for job in d.state.jobs]


async def test_a_worker_registers_is_dispatched_greets_and_calls_its_tool(
    server: LivekitServer, calls: Calls, tmp_path: Path
) -> None:
    async with agent_worker(server, tmp_path):
        target = await calls.target(
            room(server, room="shop-{{session}}"), secrets=keys(server), turn_timeout=30
        )
        assert target.agent_speaks_first, "the session's state said it was greeting"
        greeting = (await collect(target, None))[-1]
        assert (
            isinstance(greeting, AgentTurn)
            and greeting.text.strip() == "Hello, this is the returns desk. How can I help?"
        )
        asked = (await collect(target, UserTurn(text="I want to return a jacket")))[-1]
        assert isinstance(asked, AgentTurn) and "What is your order number?" in asked.text
        looked_up = await collect(target, UserTurn(text="It is ORD-1001"))
        calls_made = [m for m in looked_up if isinstance(m, ToolCall)]
        assert [(c.name, c.args) for c in calls_made] == [("lookup_order", {"order_id": "ORD-1001"})]
        results = [m for m in looked_up if isinstance(m, ToolResult)]
        assert [r.result for r in results] == ["ORD-1001 was delivered on 12 May"]
        assert isinstance(looked_up[-1], AgentTurn)
        assert "delivered on 12 May" in looked_up[-1].text and "30 days" in looked_up[-1].text
        agent = target.link.agent
        assert (
            agent.kind == 4 and agent.attributes.get("lk.agent.name") == ""
        )  # of kind agent, its worker's name
        assert agent.identity.startswith("agent-AJ_")
        [job] = jobs(server, "shop-sess-1")
        assert job.state.status == agent_pb.JS_RUNNING and job.state.participant_identity == agent.identity
        assert server.problems == []


async def test_the_agent_ends_the_session_and_its_job_succeeds(
    server: LivekitServer, calls: Calls, tmp_path: Path
) -> None:
    async with agent_worker(server, tmp_path):
        target = await calls.target(
            room(server, room="bye-{{session}}"), secrets=keys(server), turn_timeout=30
        )
        await collect(target, None)
        ended = await collect(target, UserTurn(text="that's all, bye"))
        last = ended[-1]
        assert isinstance(last, AgentTurn) and last.done, "the agent deleting the room ends the conversation"
        assert set(last.text.split()) <= set(
            "Thank you for calling. Goodbye!".split()
        )  # its last words may not make it
        assert "bye-sess-1" not in server.rooms
        with pytest.raises(TargetError, match="ended"):
            await collect(target, UserTurn(text="hello?"))
        [job] = jobs(server, "bye-sess-1")
        assert job.state.status == agent_pb.JS_SUCCESS
    assert server.problems == []


async def test_a_named_worker_is_dispatched_only_by_name(
    server: LivekitServer, calls: Calls, tmp_path: Path
) -> None:
    async with agent_worker(server, tmp_path, agent_name="returns-agent"):
        with pytest.raises(TargetError, match=r"no agent .* joined room"):
            await calls.target(room(server, join_timeout="2s"), secrets=keys(server))
        target = await calls.target(
            room(server, dispatch={"agent_name": "returns-agent"}, agent_identity_prefix="agent-AJ_"),
            secrets=keys(server),
            turn_timeout=30,
        )
        assert target.link.agent.attributes.get("lk.agent.name") == "returns-agent"
        greeting = (await collect(target, None))[-1]
        assert isinstance(greeting, AgentTurn) and "returns desk" in greeting.text


async def test_a_worker_that_crashes_mid_job_makes_the_turn_an_error_naming_it(
    server: LivekitServer, calls: Calls, tmp_path: Path
) -> None:
    async with agent_worker(server, tmp_path) as worker:
        target = await calls.target(room(server), secrets=keys(server), turn_timeout=30)
        await collect(target, None)
        worker.kill()
        with pytest.raises(TargetError) as err:
            await collect(target, UserTurn(text="are you there?"))
    message = str(err.value)
    assert "failed" in message and "disconnected while the job ran" in message and "worker AW_" in message
    assert any("disconnected while the job ran" in p for p in server.problems)


@pytest.mark.parametrize("source", ["agent", "stt"])
async def test_audio_mode_the_workers_piper_and_whisper_talk_with_the_callers(
    server: LivekitServer, calls: Calls, tmp_path: Path, source: str
) -> None:
    """``agent``: the words are the worker's lk.transcription; ``stt``: tamesu's Whisper hears its Piper."""
    async with agent_worker(server, tmp_path, mode="audio") as worker:
        target = await calls.target(
            room(server, mode="audio", transcript_source=source),
            secrets=keys(server),
            turn_timeout=40,
            tts_engine="piper",
            stt_engine="whisper",
        )
        greeting = (await collect(target, None))[-1]
        assert isinstance(greeting, AgentTurn), worker.output()
        # stt: our Whisper of its Piper, one word off allowed ("return desk" was heard once)
        assert wer(GREETING, greeting.text) <= (0 if source == "agent" else 0.2), (
            greeting.text,
            worker.output(),
        )
        assert greeting.first_audio_at is not None, "the agent's track played"
        looked_up = await collect(target, UserTurn(text="My order number is 1001."))
        answer = looked_up[-1]
        tools = [c for c in looked_up if isinstance(c, ToolCall)]
        assert [c.name for c in tools] == ["lookup_order"], (answer, worker.output()[-600:])
        assert str(tools[0].args["order_id"]).startswith(
            "ORD-"
        )  # the number as the worker's Whisper heard it
        assert isinstance(answer, AgentTurn) and "30 days" in answer.text.lower()
        assert answer.first_audio_at is not None and answer.sent_at is not None


async def test_audio_mode_the_caller_barges_in_and_the_worker_stops_and_auto_takes_its_words(
    server: LivekitServer, calls: Calls, tmp_path: Path
) -> None:
    """The caller talks over the worker's greeting and then over its long answer (over ten seconds
    of speech); LiveKit's own VAD and interruption handling stop it each time, and ``auto`` takes
    the worker's lk.transcription where one came, else tamesu's Whisper."""
    async with agent_worker(server, tmp_path, mode="audio") as worker:
        target = await calls.target(
            room(server, mode="audio", transcript_source="auto"),
            secrets=keys(server),
            turn_timeout=40,
            tts_engine="piper",
            stt_engine="whisper",
            spec=spec_with({"behaviors": {"interrupt_probability": 1.0}}),
        )
        messages = await collect(target, None)
        # The ask is spoken over the agent, so the worker's Whisper may hear only part of it: the
        # caller asks again, as a person would, until the story starts (its words reach tamesu a
        # turn late, with the worker's transcript)
        for _ in range(4):
            messages += await collect(target, UserTurn(text="Please tell me the long story."))
            if "let me tell" in spoken(messages).lower():
                break
        messages += await collect(target, UserTurn(text="Sorry, one more question."))
    log = worker.output()[-800:]
    said = spoken(messages)
    assert sum(isinstance(m, Interrupt) for m in messages) >= 2, ("the caller barged in on the agent", log)
    assert "let me tell" in said.lower(), ("the worker began its long answer", said, log)
    assert said.lower().count("every item can come back") < 4, ("it stopped early in the story", said)
    metrics = metrics_of(messages)
    # barge_ins: the caller talked over the agent; interruptions (quiet within 500 ms) hold only on
    # an idle machine, so they are not asserted
    assert metrics["barge_ins"] >= 1, (metrics, log)
    sources = [
        m.event.text_source for m in messages if isinstance(m, Event) and isinstance(m.event, VoiceTurn)
    ]
    # a turn whose words the worker published comes from its transcript; one cut before it sent
    # them falls back to Whisper: never none
    assert len(sources) >= 3 and "agent" in sources and set(sources) <= {"agent", "stt"}, sources


def spoken(messages: list[object]) -> str:
    return " ".join(m.text for m in messages if isinstance(m, AgentTurn))
