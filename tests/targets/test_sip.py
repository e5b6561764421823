"""The sip target against real SIP peers on loopback: SIPp scenarios (tests/targets/sipp/) playing
an agent that is busy, never answers, hangs up, waits for the caller's BYE, transfers the call or
keys digits, and tamesu's own RTP both ways."""

from __future__ import annotations

import asyncio
import shutil
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tamesu.config.project import SipConfig
from tamesu.kernel.events import CallEnded, CallTransferred, SipTrace
from tamesu.kernel.messages import AgentTurn, Dtmf, Event, UserTurn
from tamesu.sip.rtp import RtpStream

from ..voice.peers import Calls, calls, collect

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIOS = Path(__file__).parent / "sipp"
needs_sipp = pytest.mark.skipif(
    shutil.which("sipp") is None, reason="sipp is not installed (apt-get install sip-tester)"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sipp:
    """One SIPp agent playing a scenario for one call; ``done`` waits for it to exit (0: played through)."""

    def __init__(self, proc: asyncio.subprocess.Process, port: int) -> None:
        self.proc = proc
        self.port = port

    @property
    def uri(self) -> str:
        return f"sip:agent@127.0.0.1:{self.port}"

    async def done(self) -> int:
        return await asyncio.wait_for(self.proc.wait(), 20)

    async def bound_udp(self) -> None:
        """Wait until SIPp's UDP socket is bound: an INVITE sent before would come back as ICMP port
        unreachable, which tamesu rightly reports as an agent that is not there."""
        needle = f":{self.port:04X} "
        async with asyncio.timeout(20):
            while not any(needle in Path(f).read_text() for f in ("/proc/net/udp", "/proc/net/udp6")):
                assert self.proc.returncode is None, "SIPp exited"
                await asyncio.sleep(0.05)  # polling the port, not standing in for an event

    async def accepting_tcp(self) -> None:
        """Wait until SIPp accepts TCP connections (a UDP INVITE is sent again until it listens; a
        TCP connection refused is not retried)."""
        async with asyncio.timeout(20):
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                except OSError:
                    assert self.proc.returncode is None, "SIPp exited"
                    await asyncio.sleep(0.05)  # polling the port, not standing in for an event
                    continue
                writer.close()
                return


@pytest.fixture
async def sipp(tmp_path: Path) -> AsyncIterator[object]:
    started: list[Sipp] = []

    async def start(scenario: str, *options: str) -> Sipp:
        port = free_port()
        proc = await asyncio.create_subprocess_exec(
            "sipp", "-sf", str(SCENARIOS / scenario), "-i", "127.0.0.1", "-mi", "127.0.0.1",
            "-p", str(port), "-m", "1", "-timeout", "30s", "-timeout_error", "-nostdin",
            "-trace_err", "-error_file", str(tmp_path / f"{scenario}.err"), *options,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        agent = Sipp(proc, port)
        started.append(agent)
        if "-t" not in options:
            await agent.bound_udp()
        return agent

    yield start
    for agent in started:
        if agent.proc.returncode is None:
            agent.proc.kill()
            await agent.proc.wait()


def events(messages: list[object], kind: type) -> list[object]:
    return [m.event for m in messages if isinstance(m, Event) and isinstance(m.event, kind)]


@needs_sipp
async def test_a_busy_agent_ends_the_call_as_busy(calls: Calls, sipp: object) -> None:
    agent = await sipp("busy.xml")  # type: ignore[operator]
    phone = await calls.target({"type": "sip", "to": agent.uri})
    turn = await collect(phone)
    assert isinstance(turn[-1], AgentTurn) and turn[-1].done
    ended = events(turn, CallEnded)
    assert [(e.by, e.detail) for e in ended] == [("busy", "486 Busy Here")]
    lines = [(e.direction, e.line) for e in events(turn, SipTrace)]
    assert lines[0] == ("sent", f"INVITE {agent.uri} SIP/2.0")  # again, if SIPp was not listening yet
    assert [line for direction, line in lines if direction == "received"] == ["SIP/2.0 486 Busy Here"]
    assert turn[-1].refusal is None, "busy is an answer a test may expect, not a refusal"
    await phone.stop()
    assert await agent.done() == 0, "SIPp saw the ACK of its 486"


@needs_sipp
async def test_a_call_refused_with_a_4xx_is_a_refusal_of_the_turn(calls: Calls, sipp: object) -> None:
    agent = await sipp("forbidden.xml")  # type: ignore[operator]
    phone = await calls.target({"type": "sip", "to": agent.uri})
    turn = await collect(phone)
    assert isinstance(turn[-1], AgentTurn) and turn[-1].done
    assert [(e.by, e.detail) for e in events(turn, CallEnded)] == [("error", "403 Forbidden")]
    assert turn[-1].refusal == "the call was not answered: 403 Forbidden"
    await phone.stop()
    assert await agent.done() == 0


@needs_sipp
async def test_a_full_agent_answering_503_refuses_the_call_for_capacity_with_its_retry_after(
    calls: Calls, sipp: object
) -> None:
    from tamesu.errors import CapacityRefused

    agent = await sipp("full.xml")  # type: ignore[operator]
    with pytest.raises(CapacityRefused) as info:
        await calls.target({"type": "sip", "to": agent.uri})
    assert (
        str(info.value) == f"the agent at {agent.uri} refused the call for capacity (503 Service Unavailable)"
    )
    assert (info.value.retry_after, info.value.kind, info.value.retryable) == (2.0, "capacity", True)
    assert await agent.done() == 0, "SIPp saw the ACK of its 503"


@needs_sipp
async def test_an_agent_that_never_answers_is_cancelled_at_the_ring_timeout(
    calls: Calls, sipp: object
) -> None:
    agent = await sipp("no_answer.xml")  # type: ignore[operator]
    phone = await calls.target({"type": "sip", "to": agent.uri, "ring_timeout": "1s"})
    turn = await collect(phone)
    assert [e.by for e in events(turn, CallEnded)] == ["no_answer"]
    assert any(e.line.startswith("CANCEL") for e in events(turn, SipTrace))
    await phone.stop()
    assert await agent.done() == 0, "SIPp saw the CANCEL and the ACK of its 487"


@needs_sipp
async def test_the_agent_hanging_up_ends_the_turn_as_the_agents(calls: Calls, sipp: object) -> None:
    agent = await sipp("agent_hangs_up.xml")  # type: ignore[operator]
    phone = await calls.target({"type": "sip", "to": agent.uri})
    turn = await collect(phone)
    assert isinstance(turn[-1], AgentTurn) and turn[-1].done
    assert [(e.by, e.detail) for e in events(turn, CallEnded)] == [("agent", "BYE")]
    await phone.stop()
    assert await agent.done() == 0


def assert_echo_heard(turn: object) -> None:
    """SIPp echoes at once, so its speech may begin while the caller still talks (then the turn has
    no onset of its own): what the test controls is that the agent's audio came back and was heard."""
    assert isinstance(turn, AgentTurn)
    assert any(span.channel == "agent" for span in turn.audio), "the agent (SIPp echoing RTP) was heard"
    assert turn.text.startswith("heard ") and turn.text != "heard 0.0 seconds", turn.text


@needs_sipp
async def test_the_caller_speaks_hears_the_echo_and_hangs_up_with_a_bye(calls: Calls, sipp: object) -> None:
    agent = await sipp("caller_hangs_up.xml", "-rtp_echo")  # type: ignore[operator]
    phone = await calls.target({"type": "sip", "to": agent.uri})
    await collect(phone)
    turn = await collect(phone, UserTurn(text="hello there"))
    assert isinstance(turn[-1], AgentTurn) and not turn[-1].done
    assert_echo_heard(turn[-1])
    await phone.stop()
    assert await agent.done() == 0, "SIPp got the BYE and answered it"


@needs_sipp
async def test_a_refer_is_recorded_as_the_transfer_and_notified(calls: Calls, sipp: object) -> None:
    agent = await sipp("transfer.xml")  # type: ignore[operator]
    phone = await calls.target({"type": "sip", "to": agent.uri})
    turn = await collect(phone)
    assert [e.to for e in events(turn, CallTransferred)] == ["sip:billing@pbx.example.com"]
    refer = [e for e in events(turn, SipTrace) if e.line.startswith("REFER")]
    assert refer and refer[0].detail == "<sip:billing@pbx.example.com>"
    assert [e.by for e in events(turn, CallEnded)] == ["agent"]
    await phone.stop()
    assert await agent.done() == 0, "SIPp got 202 and both NOTIFYs"


@needs_sipp
async def test_rfc4733_digits_from_the_agent_are_received(calls: Calls, sipp: object) -> None:
    agent = await sipp("digits.xml")  # type: ignore[operator]
    phone = await calls.target({"type": "sip", "to": agent.uri})
    turn = await collect(phone)
    assert [m.digits for m in turn if isinstance(m, Dtmf) and m.direction == "received"] == ["1"]
    await phone.stop()
    assert await agent.done() == 0


@needs_sipp
@pytest.mark.parametrize("written", ["number", "uri"])
async def test_an_inbound_call_from_the_trigger_is_answered_and_a_turn_works(
    calls: Calls, sipp: object, written: str
) -> None:
    from aiohttp import web

    from tamesu.sip.message import SipUri

    agents: list[Sipp] = []
    asked: list[dict[str, str]] = []

    async def make_the_agent_call(request: web.Request) -> web.Response:
        asked.append(await request.json())
        uri = SipUri.parse(asked[-1]["uri"])
        agent = await sipp("inbound_call.xml", "-rtp_echo", "-s", uri.user, f"{uri.host}:{uri.port}")  # type: ignore[operator]
        agents.append(agent)
        return web.json_response({"calling": str(uri)})

    app = web.Application()
    app.router.add_post("/call", make_the_agent_call)
    base = (await calls.serve(app)).replace("ws://", "http://")
    body = {"number": "{{sip.inbound_number}}", "uri": "{{sip.inbound_uri}}"}
    config = {
        "type": "sip",
        "direction": "inbound",
        "trigger": {"http": {"url": f"{base}/call", "body": body}},
    }
    port = free_port()
    project = (
        SipConfig(inbound_number="+15550199")
        if written == "number"
        else SipConfig(inbound_number=f"sip:+15550199@127.0.0.1:{port}")
    )
    phone = await calls.target(config, sip=project)
    [agent] = agents
    [sent] = asked
    assert sent["number"] == "+15550199"
    assert sent["uri"].startswith("sip:+15550199@127.0.0.1:")
    if written == "uri":
        assert sent["uri"] == f"sip:+15550199@127.0.0.1:{port}", "tamesu listens on the URI it was given"
    greeting = await collect(phone)
    invite = events(greeting, SipTrace)[0]
    assert (invite.direction, invite.line.split()[0]) == ("received", "INVITE")
    assert invite.line == f"INVITE {sent['uri']} SIP/2.0"
    assert ("sent", "SIP/2.0 200 OK") in [(e.direction, e.line) for e in events(greeting, SipTrace)]
    turn = await collect(phone, UserTurn(text="hello there"))
    assert isinstance(turn[-1], AgentTurn) and not turn[-1].done
    assert_echo_heard(turn[-1])
    await phone.stop()
    assert await agent.done() == 0, "SIPp's call was answered, acknowledged and ended with tamesu's BYE"


@pytest.mark.parametrize("transport", ["udp", "tcp"])
async def test_a_call_to_an_address_where_nothing_listens_is_an_infrastructure_error(
    calls: Calls, transport: str
) -> None:
    from tamesu.errors import TargetError

    port = free_port()  # bound and released: nothing listens there, so UDP gets ICMP port unreachable
    uri = f"sip:agent@127.0.0.1:{port};transport={transport}"
    why = "ICMP port unreachable" if transport == "udp" else "connection refused"
    with pytest.raises(TargetError) as info:
        await calls.target({"type": "sip", "to": uri, "ring_timeout": "20s"})
    assert str(info.value) == (
        f"the SIP call to {uri}: INVITE to {transport}:127.0.0.1:{port}: nothing listens there ({why})"
    )
    assert info.value.retryable and info.value.kind == "agent"


async def test_a_number_needs_a_proxy(calls: Calls) -> None:
    from tamesu.errors import TargetError

    with pytest.raises(TargetError, match=r"needs sip\.proxy"):
        await calls.target({"type": "sip", "to": "+15550100"})


@needs_sipp
async def test_a_number_is_called_through_the_proxy_and_its_password_never_shows(
    calls: Calls, sipp: object
) -> None:
    agent = await sipp("busy.xml")  # type: ignore[operator]
    project = SipConfig(proxy=f"sip:127.0.0.1:{agent.port}", username="tamesu", password="{{secrets.PW}}")
    phone = await calls.target({"type": "sip", "to": "+15550100"}, sip=project, secrets={"PW": "hunter2-sip"})
    turn = await collect(phone)
    invite = events(turn, SipTrace)[0]
    assert invite.line == f"INVITE sip:+15550100@127.0.0.1:{agent.port};user=phone SIP/2.0"
    assert "hunter2-sip" not in repr(turn)
    await phone.stop()
    assert await agent.done() == 0


@needs_sipp
@pytest.mark.parametrize(("password", "connected"), [("s3cret-sip", True), ("wrong", False)])
async def test_over_tcp_a_digest_challenge_is_answered_with_the_credentials(
    calls: Calls, sipp: object, password: str, connected: bool
) -> None:
    agent = await sipp("digest_tcp.xml", "-t", "t1")  # type: ignore[operator]
    await agent.accepting_tcp()
    project = SipConfig(username="tamesu", password="{{secrets.PW}}")
    uri = f"{agent.uri};transport=tcp"
    phone = await calls.target({"type": "sip", "to": uri}, sip=project, secrets={"PW": password})
    turn = await collect(phone)
    received = [e.line for e in events(turn, SipTrace) if e.direction == "received"]
    sent = [e.line for e in events(turn, SipTrace) if e.direction == "sent"]
    assert received[0] == "SIP/2.0 401 Unauthorized"
    assert [line for line in sent if line.startswith("INVITE")] == [f"INVITE {uri} SIP/2.0"] * 2
    if connected:
        assert "SIP/2.0 200 OK" in received and not events(turn, CallEnded)
    else:
        assert [(e.by, e.detail) for e in events(turn, CallEnded)] == [("error", "403 Forbidden")]
    assert password not in repr(turn)
    await phone.stop()
    assert await agent.done() == 0, (
        "SIPp checked the retried INVITE's Authorization and the call ended cleanly"
    )


def test_idle_is_a_sip_targets_key_and_sets_the_silence_that_ends_a_turn(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from tamesu.config.target import parse_target
    from tamesu.voice.settings import VoiceSettings

    config = parse_target({"type": "sip", "to": "sip:agent@127.0.0.1", "idle": "700ms"})
    ctx = SimpleNamespace(
        test=None, language=None, seed=1, run_id="r", session="s", suite_dir=".", turn_timeout=60.0,
        tts_engine=None, stt_engine=None, detect_dtmf=False, output_dir=None,
    )  # fmt: skip
    settings = VoiceSettings.build(config, ctx, encoding="mulaw", rate=8000)  # type: ignore[arg-type]
    assert (settings.idle, settings.greeting_wait) == pytest.approx((0.7, 1.7))


async def test_rtp_carries_frames_in_order_and_digits_as_telephone_events() -> None:
    heard: list[bytes] = []
    digits: list[str] = []
    got = asyncio.Event()
    a = await RtpStream.open("127.0.0.1", on_audio=heard.append, on_digit=lambda d: None)
    b = await RtpStream.open(
        "127.0.0.1", on_audio=lambda p: None, on_digit=lambda d: (digits.append(d), got.set())
    )
    a.remote, b.remote = ("127.0.0.1", b.port), ("127.0.0.1", a.port)
    keyed = a.key("7#")
    frames = [bytes([i]) * 160 for i in range(40)]
    for frame in frames:
        a.send(frame)
        b.send(frame)
    await asyncio.wait_for(keyed.wait(), 1)
    while len(digits) < 2 or len(heard) < 37:
        await asyncio.wait_for(got.wait(), 2) if len(digits) < 2 else await asyncio.sleep(0)
        got.clear()
    assert digits == ["7", "#"]
    assert heard[:5] == frames[:5], "frames arrive in order"
    a.close()
    b.close()


def test_the_jitter_buffer_reorders_and_drops_late_packets() -> None:
    from tamesu.sip.rtp import JitterBuffer

    jb = JitterBuffer(depth=2)
    assert jb.push(10, b"a") == [b"a"]
    assert jb.push(12, b"c") == []
    assert jb.push(11, b"b") == [b"b", b"c"]
    assert jb.push(11, b"b") == [] and jb.late == 1
    assert jb.push(14, b"e") == [] and jb.push(15, b"f") == []
    assert jb.push(16, b"g") == [b"e", b"f", b"g"] and jb.lost == 1
    assert struct.calcsize("!BBHII") == 12


async def test_a_phone_agent_sending_silence_between_its_words_ends_its_turn_after_idle(calls: Calls) -> None:
    """RTP flows for the whole call, silence included: the turn ends on idle, not on turn_timeout."""
    from tamesu.testing.sip_agent import SipVoiceAgent

    agent = SipVoiceAgent(tts="test-vowel", stt="test-stt")
    await agent.start()
    try:
        phone = await calls.target({"type": "sip", "to": agent.uri, "idle": "500ms"}, turn_timeout=20.0)
        loop = asyncio.get_running_loop()
        started = loop.time()
        greeting = await collect(phone)
        took = loop.time() - started
        last = greeting[-1]
        assert isinstance(last, AgentTurn) and last.first_audio_at is not None
        assert not any(s.text == "(turn_timeout)" for s in last.audio), "the turn ran into turn_timeout"
        assert took < 10.0, f"the greeting (2.5 s) took {took:.1f}s to end"
        await phone.stop()
    finally:
        await agent.close()
