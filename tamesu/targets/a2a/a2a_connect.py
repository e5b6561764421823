"""Reaching an A2A agent with the official a2a-sdk client: its card, its transport, bounded answers.

The card is read from ``url`` (its ``/.well-known/agent-card.json``, or ``url`` itself when it names
a ``.json`` file); with credentials (``headers``) and a card that offers one, the authenticated
extended card replaces it. ``grpc://host:port`` reaches a gRPC agent that publishes no HTTP card:
its card is asked for over gRPC. The transport is the suite's ``transport`` or the card's first
interface. Every HTTP answer passes through ``BoundedTransport`` (``limits.answer_size`` per body
and per server-sent event, ``json_depth`` per JSON document) and every gRPC message is bounded by
the channel, so an agent cannot make a run read without end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from tamesu.errors import MissingExtraError, TargetError
from tamesu.limits import Limits, check_json_depth

if TYPE_CHECKING:
    from a2a.client import Client, ClientCallContext
    from a2a.types.a2a_pb2 import AgentCard

    from tamesu.targets.base import TargetContext
    from tamesu.wire.connect import ConnectPolicy

__all__ = ["BINDINGS", "BoundedTransport", "Connection", "connect", "require_sdk"]

BINDINGS = {"jsonrpc": "JSONRPC", "http": "HTTP+JSON", "grpc": "GRPC"}
"""The suite's ``transport`` -> the protocol binding a card names."""
_NAMES = {v: k for k, v in BINDINGS.items()}
_CARD_PATH = "/.well-known/agent-card.json"


def require_sdk() -> None:
    """Fail with the extra to install when the a2a-sdk is missing."""
    from tamesu.extras import EXTRAS

    missing = EXTRAS["a2a"].missing()
    if missing:
        raise MissingExtraError(f"the A2A SDK ({', '.join(missing)})", extra="a2a")


class _BoundedStream(httpx.AsyncByteStream):
    """An answer's bytes as they come, refused once a body or an event passes the limits."""

    def __init__(self, response: httpx.Response, limits: Limits, url: str, *, events: bool) -> None:
        self.response = response
        self.limits = limits
        self.url = url
        self.events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limit, depth = self.limits.answer_size, self.limits.json_depth
        pending = bytearray()
        async for chunk in self.response.aiter_bytes():
            pending += chunk
            if self.events:
                *done, rest = pending.replace(b"\r\n", b"\n").split(b"\n\n")
                for event in done:
                    check_json_depth(bytes(event), depth)
                pending = bytearray(rest)
            if len(pending) > limit:
                what = "an event of the stream" if self.events else "the answer"
                raise self.limits.too_large(f"{what} from {self.url}")
            yield chunk
        if pending:
            check_json_depth(bytes(pending), depth)

    async def aclose(self) -> None:
        await self.response.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends through the run's shared client and bounds what comes back.

    The shared client pools connections for every run; this wrapper only reads its answers as
    they arrive, decoded, and stops at ``limits`` (see ``_BoundedStream``).
    """

    def __init__(self, client: httpx.AsyncClient, limits: Limits) -> None:
        self.client = client
        self.limits = limits

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.client.send(request, stream=True)
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limits.answer_size:
            await response.aclose()
            raise self.limits.too_large(f"the answer from {request.url}")
        events = response.headers.get("content-type", "").startswith("text/event-stream")
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        stream = _BoundedStream(response, self.limits, str(request.url), events=events)
        return httpx.Response(response.status_code, headers=headers, stream=stream, request=request)

    async def aclose(self) -> None:
        """The shared client belongs to the run's services, which close it."""


def _channel_factory(limits: Limits) -> Any:
    """gRPC channels whose messages are bounded by ``answer_size`` (``grpcs://`` uses TLS)."""
    import grpc

    options = [("grpc.max_receive_message_length", limits.answer_size)]

    def factory(url: str) -> Any:
        if url.startswith("grpcs://"):
            return grpc.aio.secure_channel(url[8:], grpc.ssl_channel_credentials(), options=options)
        return grpc.aio.insecure_channel(url.removeprefix("grpc://"), options=options)

    return factory


@dataclass
class Connection:
    """A started client and what it was started with."""

    client: Client
    card: AgentCard
    binding: str
    """The protocol binding in use: JSONRPC, HTTP+JSON or GRPC."""
    interface_url: str
    call: ClientCallContext
    """Headers (as HTTP headers or gRPC metadata) for every call."""
    http: httpx.AsyncClient

    @property
    def transport(self) -> str:
        return _NAMES.get(self.binding, self.binding)

    @property
    def streams(self) -> bool:
        return bool(self.card.capabilities.streaming)

    async def close(self) -> None:
        try:
            await self.client.close()
        except Exception:
            pass
        await self.http.aclose()


async def connect(
    ctx: TargetContext,
    policy: ConnectPolicy,
    *,
    url: str,
    headers: dict[str, str],
    transport: str | None,
    stream: bool,
) -> Connection:
    """Read the card (and the extended card with credentials), then start a client on the chosen
    transport; every failure is a ``TargetError`` saying what is wrong and where."""
    from a2a.client import ClientCallContext, ClientConfig, ClientFactory

    http = httpx.AsyncClient(
        transport=BoundedTransport(ctx.http, ctx.limits),
        timeout=httpx.Timeout(ctx.turn_timeout),
        trust_env=False,
    )
    call = ClientCallContext(service_parameters=dict(headers), timeout=ctx.turn_timeout)
    bindings = [BINDINGS[transport]] if transport else list(BINDINGS.values())
    config = ClientConfig(
        httpx_client=http,
        streaming=stream,
        supported_protocol_bindings=bindings,
        use_client_preference=bool(transport),
        grpc_channel_factory=_channel_factory(ctx.limits),
    )
    factory = ClientFactory(config)
    try:
        if url.startswith(("grpc://", "grpcs://")):
            card = _grpc_card(url, stream)
        else:
            card = await _read_card(ctx, policy, http, url, headers)
        try:
            client = factory.create(card)
        except ValueError:
            raise TargetError(_no_interface(card, transport, url), retryable=False, kind="config") from None
        interface = _chosen(card, bindings, transport)
        if url.startswith(("grpc://", "grpcs://")) or (headers and card.capabilities.extended_agent_card):
            card = await _extended_card(client, call, card, url, required=not url.startswith("grpc"))
        return Connection(client, card, interface[0], interface[1], call, http)
    except BaseException:
        await http.aclose()
        raise


def _grpc_card(url: str, stream: bool) -> AgentCard:
    """A card naming only the gRPC address: the agent's own card is then asked for over gRPC."""
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface

    return AgentCard(
        name=url,
        supported_interfaces=[AgentInterface(protocol_binding="GRPC", url=url, protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=stream, extended_agent_card=True),
    )


async def _read_card(
    ctx: TargetContext, policy: ConnectPolicy, http: httpx.AsyncClient, url: str, headers: dict[str, str]
) -> AgentCard:
    from a2a.client.card_resolver import parse_agent_card

    from tamesu.limits import decode_json
    from tamesu.wire.connect import Retry, retrying, snippet

    card_url = url if url.split("?", 1)[0].endswith(".json") else url.rstrip("/") + _CARD_PATH

    async def attempt() -> httpx.Response:
        try:
            resp = await http.get(card_url, headers=headers)
        except httpx.TransportError as exc:
            raise Retry(f"cannot reach the agent card at {card_url}: {exc or type(exc).__name__}") from None
        if resp.status_code >= 500 or resp.status_code in (408, 429):
            raise Retry(f"the agent card at {card_url} answered {resp.status_code}", snippet(resp.text))
        return resp

    resp = await retrying(ctx, policy, attempt)
    if resp.status_code >= 400:
        raise TargetError(
            f"the agent card at {card_url} answered {resp.status_code}: {snippet(resp.text)}", retryable=False
        )
    try:
        return parse_agent_card(decode_json(resp.text, ctx.limits.json_depth))
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(
            f"the agent card at {card_url} is not a valid card: {snippet(str(exc))}", retryable=False
        ) from None


async def _extended_card(
    client: Client, call: ClientCallContext, card: AgentCard, url: str, *, required: bool
) -> AgentCard:
    """The authenticated extended card (the client uses it from now on); without ``required`` a
    missing one leaves the card as it is."""
    from a2a.types.a2a_pb2 import GetExtendedAgentCardRequest

    try:
        extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=call)
    except Exception as exc:
        if not required:
            return card
        raise TargetError(
            f"the agent at {url} refused its extended card: {describe(exc)}", retryable=False
        ) from None
    if not extended.supported_interfaces:
        extended.supported_interfaces.extend(card.supported_interfaces)
    if not extended.HasField("capabilities"):
        extended.capabilities.CopyFrom(card.capabilities)
    return extended


def _chosen(card: AgentCard, bindings: list[str], transport: str | None) -> tuple[str, str]:
    """(binding, url) of the interface the client uses: the suite's binding, else the card's first."""
    for interface in card.supported_interfaces:
        if interface.protocol_binding in bindings:
            if transport is None or interface.protocol_binding == BINDINGS[transport]:
                return interface.protocol_binding, interface.url
    return bindings[0], ""


def _no_interface(card: AgentCard, transport: str | None, url: str) -> str:
    offered = ", ".join(
        f"{_NAMES.get(i.protocol_binding, i.protocol_binding)} at {i.url}" for i in card.supported_interfaces
    )
    wanted = f"{transport} interface" if transport else "interface tamesu speaks (jsonrpc, http, grpc)"
    return f"the agent card at {url} offers no {wanted}; it offers {offered or 'none'}"


def describe(exc: BaseException) -> str:
    """An SDK error in a few words (its class when it has no message)."""
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text and name not in text else (text or name)
