"""The livekit target: a LiveKit room the agent joins, talked to in text or audio."""

from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, Duration, F
from tamesu.config.kinds import target_type
from tamesu.config.target_base import SPEECH, TalkingTarget, WithMode, WithTranscriptSource

if TYPE_CHECKING:
    from tamesu.config.project import LiveKitConfig

__all__ = ["Dispatch", "LivekitTarget", "with_project_server"]

_EITHER_KEY: dict[str, Any] = {"anyOf": [{"required": ["api_key"]}, {"required": ["api_secret"]}]}


class Dispatch(ConfigModel):
    """An explicit LiveKit agent dispatch into the test's room."""

    agent_name: str = F("The agent name to dispatch.", "support-agent")


@target_type(
    "livekit",
    adapter="tamesu.targets.livekit.adapter:LivekitAdapter",
    audio="mode",
    parts={"text": SPEECH, "audio": SPEECH},
    project_blocks=("livekit",),
    summary="A LiveKit room: the agent joins it and tamesu talks as a participant, in text or audio",
)
class LivekitTarget(TalkingTarget, WithMode, WithTranscriptSource):
    """A LiveKit agent reached in a room of its server."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {"not": {"required": ["token"], **_EITHER_KEY}},
                {"anyOf": [{"required": ["api_key", "api_secret"]}, {"not": _EITHER_KEY}]},
            ]
        }
    )

    type: Literal["livekit"] = F("What kind of system this is; it decides which other keys apply.", "livekit")
    url: str | None = F("The LiveKit server.", "${AGENT_URL:-http://localhost:8080/chat}", default=None)
    api_key: str | None = F(
        "LiveKit API key; write it as {{secrets.NAME}}.", "{{secrets.LIVEKIT_API_KEY}}", default=None
    )
    api_secret: str | None = F(
        "LiveKit API secret; write it as {{secrets.NAME}}.", "{{secrets.LIVEKIT_API_SECRET}}", default=None
    )
    token: str | None = F(
        "A ready access token used instead of api_key and api_secret (often a session.open capture); the "
        "caller's identity comes from it.",
        "{{session.access_token}}",
        default=None,
    )
    identity: str | None = F(
        "The simulated caller's participant identity; a unique tamesu-sim- name when unset.",
        "web-user-9",
        default=None,
    )
    room: str = F("Template of the room name.", "tamesu-{{uuid}}", default="tamesu-{{uuid}}")
    dispatch: Dispatch | None = F(
        "Dispatch this agent into the room explicitly.", {"agent_name": "support-agent"}, default=None
    )
    agent_identity_prefix: str | None = F(
        "Identity prefix of the agent participant; participants of kind agent when unset.",
        "agent-",
        default=None,
    )
    data_topic: str = F("The topic text messages travel on in text mode.", "lk.chat", default="lk.chat")
    join_timeout: Duration = F("How long the agent has to join the room.", "20s", default="20s")

    @model_validator(mode="after")
    def _credentials(self) -> "LivekitTarget":
        keys = self.set_keys()
        if "token" in keys and keys & {"api_key", "api_secret"}:
            raise PydanticCustomError(
                "target_rule", "a livekit target takes token or api_key and api_secret, not both"
            )
        if ("api_key" in keys) != ("api_secret" in keys):
            raise PydanticCustomError("target_rule", "api_key and api_secret go together")
        return self


def with_project_server(target: "LivekitTarget", server: "LiveKitConfig | None") -> "LivekitTarget":
    """A livekit target that names no server of its own takes tamesu.yaml's ``livekit:`` block
    (url, and api_key / api_secret unless it brings a token)."""
    if server is None:
        return target
    update: dict[str, Any] = {}
    if not target.url and server.url:
        update["url"] = server.url
    if not target.token and not target.api_key and server.api_key:
        update["api_key"], update["api_secret"] = server.api_key, server.api_secret
    return target.model_copy(update=update) if update else target
