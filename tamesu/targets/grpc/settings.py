"""The grpc target: an agent behind tamesu's gRPC service (schema/agent.proto)."""

from typing import Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import F
from tamesu.config.kinds import target_type
from tamesu.config.target_base import SAY_AND_DATA, TalkingTarget, WithHeaders, WithTurnTimeout

__all__ = ["TLS_PARAMS", "GrpcTarget"]

TLS_PARAMS = ("ca", "cert", "key")
"""The query parameters of a grpcs:// url: the CA bundle, and the client certificate and key."""


@target_type(
    "grpc",
    adapter="tamesu.targets.grpc.adapter:GrpcAdapter",
    extra="grpc",
    parts={"text": SAY_AND_DATA},
    summary="An agent serving tamesu's gRPC protocol, `schema/agent.proto`",
)
class GrpcTarget(TalkingTarget, WithHeaders, WithTurnTimeout):
    """An agent reached through tamesu's gRPC service definition; headers travel as call metadata."""

    type: Literal["grpc"] = F("What kind of system this is; it decides which other keys apply.", "grpc")
    url: str = F("The server, as grpc://host:port.", "${AGENT_URL:-http://localhost:8080/chat}")

    @model_validator(mode="after")
    def _tls_params(self) -> "GrpcTarget":
        """``?ca=&cert=&key=`` only on grpcs://, only those names, cert and key together (as written:
        a url made wholly by a template is checked when it is rendered)."""
        problem = tls_params_problem(self.url)
        if problem:
            raise PydanticCustomError("target_rule", problem)
        return self


def tls_params_problem(url: str) -> str | None:
    """What is wrong with the TLS query parameters of a grpc target's url, if anything."""
    parts = urlsplit(url)
    if not parts.query:
        return None
    params = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(params) - set(TLS_PARAMS))
    if unknown:
        return f"a grpc url takes the query parameters {', '.join(TLS_PARAMS)}, not {', '.join(unknown)}"
    if parts.scheme == "grpc":
        return "ca, cert and key apply to a grpcs:// url, not grpc://"
    if ("cert" in params) != ("key" in params):
        return "cert and key go together in a grpcs:// url"
    return None
