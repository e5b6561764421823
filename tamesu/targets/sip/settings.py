"""The sip target: a phone call to or from the agent over SIP (tamesu's own user agent), or
placed through a LiveKit SIP trunk."""

from typing import Any, Literal

from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, Duration, F, HTTPTrigger, exactly_one, one_of_schema
from tamesu.config.kinds import target_type
from tamesu.config.target_base import SPEECH, TalkingTarget, WithIdle, WithTranscriptSource

__all__ = ["SipTarget", "Trigger"]


class Trigger(ConfigModel):
    """What makes an inbound agent place its call to sip.inbound_number."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("http", "command")))

    http: HTTPTrigger | None = F(
        "A request to your system asking the agent to phone tamesu.",
        {"url": "https://agent.example/call", "method": "POST", "body": {"to": "{{env.INBOUND}}"}},
        default=None,
    )
    command: str | None = F(
        "A shell command that makes the agent call.", "./scripts/call.sh {{env.INBOUND}}", default=None
    )

    @model_validator(mode="before")
    @classmethod
    def _one_way(cls, data: Any) -> Any:
        exactly_one(data, ("http", "command"), "trigger")
        return data


@target_type(
    "sip",
    adapter="tamesu.targets.sip.adapter:SipAdapter",
    audio="always",
    parts={"audio": SPEECH},
    summary="A phone call over SIP: tamesu calls the agent, or a trigger makes it call tamesu",
    project_blocks=("sip", "livekit"),
)
class SipTarget(TalkingTarget, WithTranscriptSource, WithIdle):
    """A phone agent reached by a real call."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"direction": {"const": "inbound"}}, "required": ["direction"]},
            "then": {"required": ["trigger"]},
            "else": {"required": ["to"], "not": {"required": ["trigger"]}},
        }
    )

    type: Literal["sip"] = F("What kind of system this is; it decides which other keys apply.", "sip")
    room: str = F("Template of the room name.", "tamesu-{{uuid}}", default="tamesu-{{uuid}}")
    direction: Literal["outbound", "inbound"] = F(
        "outbound: tamesu calls the agent; inbound: a trigger makes the agent call tamesu.",
        "outbound",
        default="outbound",
    )
    to: str | None = F(
        "The agent's SIP URI (called directly) or number in E.164 (called through sip.proxy); outbound.",
        "+34910000000",
        default=None,
    )
    from_: str | None = F("The caller ID the trunk presents.", "+34600000000", default=None, alias="from")
    trunk_id: str | None = F(
        "LiveKit SIP trunk to call through; sip.outbound_trunk_id when unset.", "ST_abc123", default=None
    )
    ring_timeout: Duration | None = F(
        "Ringing time allowed before the call ends as no_answer.", "30s", default=None
    )
    max_call_duration: Duration | None = F("The call is hung up after this long.", "5m", default=None)
    trigger: Trigger | None = F(
        "inbound: the command or HTTP request that makes the agent dial sip.inbound_number.",
        {"http": {"url": "https://agent.example/call", "method": "POST", "body": {"to": "{{env.INBOUND}}"}}},
        default=None,
    )

    @model_validator(mode="after")
    def _direction(self) -> "SipTarget":
        keys = self.set_keys()
        if self.direction == "outbound" and "to" not in keys:
            raise PydanticCustomError("target_rule", "an outbound sip target needs to (the agent's number)")
        if self.direction == "inbound" and "trigger" not in keys:
            raise PydanticCustomError("target_rule", "an inbound sip target needs trigger")
        if self.direction == "outbound" and "trigger" in keys:
            raise PydanticCustomError("target_rule", "trigger applies to direction: inbound")
        return self
