"""The a2a target: an Agent2Agent agent, by JSON-RPC, HTTP+JSON or gRPC."""

from typing import Any, ClassVar, Literal

from tamesu.config.common import F, ShortForm
from tamesu.config.kinds import target_type
from tamesu.config.target_base import TalkingTarget, WithHeaders, WithTurnTimeout

__all__ = ["A2ATarget", "Push"]


class Push(ShortForm):
    """a2a push notifications: tamesu listens for task updates instead of polling."""

    __short_field__: ClassVar[str] = "enabled"
    __short_types__: ClassVar[tuple[type, ...]] = (bool,)
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "boolean",
        "description": "true listens on a free local port; false turns push off.",
    }

    enabled: bool = F("false turns push notifications off.", True, default=True)
    addr: str | None = F(
        "host:port to listen on; a free 127.0.0.1 port when unset.", "0.0.0.0:8099", default=None
    )
    url: str | None = F(
        "The URL the agent should call when it reaches tamesu by another address (a tunnel, a container).",
        "https://tamesu.tunnel.example.com",
        default=None,
    )


@target_type(
    "a2a",
    adapter="tamesu.targets.a2a.adapter:A2AAdapter",
    extra="a2a",
    parts={"text": frozenset({"say", "data", "files"})},
    summary="An Agent2Agent agent over JSON-RPC, HTTP+JSON or gRPC (the official a2a-sdk client), and the "
    "remote agents it delegates to",
)
class A2ATarget(TalkingTarget, WithHeaders, WithTurnTimeout):
    """An agent reached through the Agent2Agent protocol, found by its agent card."""

    type: Literal["a2a"] = F("What kind of system this is; it decides which other keys apply.", "a2a")
    url: str = F("The agent's endpoint.", "${AGENT_URL:-http://localhost:8080/chat}")
    stream: bool = F(
        "Read turns from message/stream (server-sent events) rather than message/send, when the card allows.",
        True,
        default=False,
    )
    skill: str | None = F(
        "A skill id or name the agent card must list, or the session does not start.",
        "order-status",
        default=None,
    )
    metadata: dict[str, Any] | None = F(
        "Metadata sent with every message (a tenant, a locale).", {"tenant": "acme"}, default=None
    )
    transport: Literal["jsonrpc", "http", "grpc"] | None = F(
        "The protocol binding: JSON-RPC, HTTP+JSON or gRPC; the card's preferred one (else jsonrpc) when unset.",
        "grpc",
        default=None,
    )
    push: Push | None = F(
        "Receive task updates as push notifications on a local listener instead of polling.",
        True,
        default=None,
    )
