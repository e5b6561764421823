"""The sip target with trunk_id against a real LiveKit server and trunk, when LIVEKIT_URL,
LIVEKIT_API_KEY, LIVEKIT_API_SECRET, LIVEKIT_SIP_TRUNK (an outbound trunk's id) and
LIVEKIT_SIP_NUMBER (a number that answers, in E.164) are set: the call is placed through the
trunk, answered, and the phone's side of the room is heard."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("livekit.rtc")

from tamesu.config.project import LiveKitConfig
from tamesu.kernel.messages import AgentTurn

from ..voice.peers import Calls, calls, collect

__all__ = ["calls"]

NAMES = ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "LIVEKIT_SIP_TRUNK", "LIVEKIT_SIP_NUMBER")
URL, KEY, SECRET, TRUNK, NUMBER = (os.environ.get(n) for n in NAMES)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not all((URL, KEY, SECRET, TRUNK, NUMBER)), reason=f"needs {', '.join(NAMES)}"),
]


async def test_a_call_through_a_real_trunk_is_answered_and_heard(calls: Calls) -> None:
    assert URL and KEY and SECRET and TRUNK and NUMBER
    target = await calls.target(
        {"type": "sip", "to": NUMBER, "trunk_id": TRUNK, "ring_timeout": "30s", "idle": "2s"},
        secrets={"S": SECRET},
        turn_timeout=60,
        livekit=LiveKitConfig(url=URL, api_key=KEY, api_secret="{{secrets.S}}"),
    )
    assert target.trunk is not None and target.session is not None, "the call was not answered"
    greeting = (await collect(target, None))[-1]
    assert isinstance(greeting, AgentTurn) and greeting.first_audio_at is not None
    await target.stop()
