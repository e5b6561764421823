"""The grpc target: an agent behind tamesu's gRPC service (schema/agent.proto)."""

from typing import Literal

from tamesu.config.common import F
from tamesu.config.kinds import target_type
from tamesu.config.targets.base import SAY_AND_DATA, TalkingTarget, WithHeaders, WithTurnTimeout

__all__ = ["GrpcTarget"]


@target_type(
    "grpc",
    adapter="tamesu.targets.grpc:GrpcAdapter",
    extra="grpc",
    parts={"text": SAY_AND_DATA},
    summary="An agent serving tamesu's gRPC protocol, `schema/agent.proto`",
)
class GrpcTarget(TalkingTarget, WithHeaders, WithTurnTimeout):
    """An agent reached through tamesu's gRPC service definition; headers travel as call metadata."""

    type: Literal["grpc"] = F("What kind of system this is; it decides which other keys apply.", "grpc")
    url: str = F("The server, as grpc://host:port.", "${AGENT_URL:-http://localhost:8080/chat}")
