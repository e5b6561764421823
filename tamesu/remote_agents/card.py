"""The agent card of a remote agent tamesu serves: its skills, its interfaces, its security.

The card lists the JSON-RPC interface first (HTTP+JSON and gRPC beside it), the suite's skills (a skill
named only by id is named and tagged by its id, since the protocol wants both), and with
``token`` a bearer scheme that every request but the card's must satisfy. With ``extended`` the
card says it has an authenticated extended card: the same card with the extra skills and the
fuller description.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import AgentCard, AgentSkill

    from tamesu.config.suite import RemoteAgent

__all__ = ["agent_cards"]

_SCHEME = "bearer"


def _skill(item: Any) -> AgentSkill:
    from a2a.types.a2a_pb2 import AgentSkill

    skill_id = item if isinstance(item, str) else item.id
    name = getattr(item, "name", None) or skill_id
    return AgentSkill(
        id=skill_id,
        name=name,
        description=getattr(item, "description", None) or name,
        tags=list(getattr(item, "tags", None) or [skill_id]),
    )


def agent_cards(
    name: str, config: RemoteAgent, url: str, *, grpc_url: str | None = None
) -> tuple[AgentCard, AgentCard | None]:
    """(the public card, the extended card or None) of remote agent ``name`` served at ``url``
    (and with gRPC at ``grpc_url``, ``host:port``)."""
    from a2a.types.a2a_pb2 import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
    )

    base = url.rstrip("/")
    card = AgentCard(
        name=config.name or name,
        description=config.description or f"{config.name or name} (served by tamesu)",
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=config.extended is not None
        ),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[_skill(s) for s in config.skills or []],
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=f"{base}/", protocol_version="1.0"),
            AgentInterface(protocol_binding="HTTP+JSON", url=f"{base}/rest", protocol_version="1.0"),
        ],
    )
    if grpc_url is not None:
        card.supported_interfaces.append(
            AgentInterface(protocol_binding="GRPC", url=grpc_url, protocol_version="1.0")
        )
    if config.token is not None:
        card.security_schemes[_SCHEME].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        requirement = SecurityRequirement()
        requirement.schemes[_SCHEME].SetInParent()
        card.security_requirements.append(requirement)
    if config.extended is None:
        return card, None
    extended = AgentCard()
    extended.CopyFrom(card)
    if config.extended.description:
        extended.description = config.extended.description
    extended.skills.extend(_skill(s) for s in config.extended.skills or [])
    return card, extended
