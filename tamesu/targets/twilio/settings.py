"""The twilio target: an agent's Twilio Media Streams WebSocket, with tamesu playing Twilio."""

from typing import Literal

from tamesu.config.common import F, StrMap
from tamesu.config.kinds import target_type
from tamesu.config.target_base import SPEECH, TalkingTarget, WithHeaders, WithIdle, WithTranscriptSource

__all__ = ["TwilioTarget"]


@target_type(
    "twilio",
    adapter="tamesu.targets.twilio.adapter:TwilioAdapter",
    audio="always",
    parts={"audio": SPEECH},
    summary="An agent's Twilio Media Streams WebSocket, with tamesu playing Twilio",
)
class TwilioTarget(TalkingTarget, WithHeaders, WithTranscriptSource, WithIdle):
    """An agent built for Twilio Media Streams: tamesu sends what Twilio would and reads the agent's audio."""

    type: Literal["twilio"] = F("What kind of system this is; it decides which other keys apply.", "twilio")
    url: str = F("The agent's Media Streams websocket endpoint.", "${AGENT_URL:-http://localhost:8080/chat}")
    to: str | None = F("The To passed in the start event's customParameters.", "+34910000000", default=None)
    from_: str | None = F(
        "The From passed in the start event's customParameters.", "+34600000000", default=None, alias="from"
    )
    parameters: StrMap | None = F(
        "The customParameters of the start event (the Stream's Parameter elements); {{vars.x}} and "
        "{{secrets.X}} render.",
        {"campaign": "autumn", "caller_tier": "gold"},
        default=None,
    )
