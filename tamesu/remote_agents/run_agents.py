"""One run's remote agents: served before the run starts, their URLs in the run's scope.

``RemoteAgents.open`` renders each agent's ``token``, ``forward`` and ``headers`` in the run's
scope (secrets included), mounts the agent on the shared server of its address (JSON-RPC and
HTTP+JSON) and on a gRPC port of its own, and sets ``{{remote.NAME.url}}`` (also
``{{remote.NAME}}``, ``{{remote.NAME.card_url}}`` and ``{{remote.NAME.grpc_url}}``) where the
target's configuration can render it. Each agent also sends push notifications to a caller that
asks for them. ``close`` unmounts them; what they heard is already in the transcript.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError

if TYPE_CHECKING:
    import httpx

    from tamesu.clock import Clock
    from tamesu.config.suite import RemoteAgent
    from tamesu.kernel.transcript import Transcript
    from tamesu.limits import Limits
    from tamesu.remote_agents.server import Mount, RemoteServer
    from tamesu.templates import Scope

__all__ = ["RemoteAgents"]

PUSH_TIMEOUT = 10.0
"""Seconds one push notification to the agent under test may take."""


class RemoteAgents:
    """The remote agents of one run, mounted; see the module docstring."""

    def __init__(self) -> None:
        self.urls: dict[str, str] = {}
        self.values: dict[str, str] = {}
        """Every ``remote.…`` template value set in the run's scope, by its name."""
        self._mounted: list[tuple[RemoteServer, Mount]] = []
        self._locked: list[RemoteServer] = []
        self._clients: list[Any] = []
        self._grpc: list[Any] = []
        self._pusher: Any = None

    @classmethod
    async def open(
        cls,
        agents: dict[str, RemoteAgent],
        *,
        scope: Scope,
        limits: Limits,
        http: httpx.AsyncClient,
        transcript: Transcript | None = None,
        clock: Clock | None = None,
        recording: Any = None,
    ) -> RemoteAgents:
        """Serve ``agents`` for one run (recording into its ``transcript``), or with a ``recording``
        of the caller's (a suite's agents, which give each message to its run)."""
        from tamesu.remote_agents.exchanges import Recording
        from tamesu.targets.a2a.a2a_connect import require_sdk

        require_sdk()
        served = cls()
        if recording is None:
            assert transcript is not None and clock is not None
            recording = Recording(transcript, clock, limits)
        try:
            # fixed addresses in one order, so two runs never wait for each other's
            for name, config in sorted(agents.items(), key=lambda item: (item[1].addr or "", item[0])):
                await served._mount(name, config, scope=scope, recording=recording, limits=limits, http=http)
        except BaseException:
            await served.close()
            raise
        return served

    async def _mount(
        self,
        name: str,
        config: RemoteAgent,
        *,
        scope: Scope,
        recording: Any,
        limits: Limits,
        http: httpx.AsyncClient,
    ) -> None:
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.tasks import (
            BasePushNotificationSender,
            InMemoryPushNotificationConfigStore,
            InMemoryTaskStore,
        )

        from tamesu.remote_agents.card import agent_cards
        from tamesu.remote_agents.grpc_serve import GrpcEndpoint
        from tamesu.remote_agents.server import Mount, RemoteServer, split_addr
        from tamesu.templates import render_text

        server = RemoteServer.shared(config.addr or "127.0.0.1:0")
        if config.addr:
            await server.lock.acquire()
            self._locked.append(server)
        token = render_text(config.token, scope) if config.token is not None else None
        prefix = "" if config.addr else secrets.token_hex(8)
        mount = Mount(prefix=prefix, app=None, token=token, limits=limits)
        await server.add(mount)
        self._mounted.append((server, mount))
        endpoint = GrpcEndpoint.open(split_addr(server.addr)[0], token=token, limits=limits)
        self._grpc.append(endpoint)
        url = f"{server.url}/{prefix}/" if prefix else f"{server.url}/"
        card, extended = agent_cards(name, config, url, grpc_url=endpoint.url)
        executor = self._executor(name, config, scope=scope, recording=recording, limits=limits, http=http)
        pushes = InMemoryPushNotificationConfigStore()
        handler = DefaultRequestHandler(
            agent_executor=executor,
            task_store=InMemoryTaskStore(),
            agent_card=card,
            extended_agent_card=extended,
            extended_card_modifier=None if token is not None or extended is None else _credentials_required,
            push_config_store=pushes,
            push_sender=BasePushNotificationSender(self._push_client(), pushes),
        )
        mount.app = _app(handler, card)
        await endpoint.attach(handler)
        self.urls[name] = url
        values = {
            f"remote.{name}": url,
            f"remote.{name}.url": url,
            f"remote.{name}.card_url": url + ".well-known/agent-card.json",
            f"remote.{name}.grpc_url": endpoint.url,
        }
        for key, value in values.items():
            scope.set(key, value)
        self.values.update(values)

    def _push_client(self) -> Any:
        """The HTTP client the run's agents push notifications with (made once, closed with them)."""
        import httpx

        if self._pusher is None:
            self._pusher = httpx.AsyncClient(trust_env=False, timeout=PUSH_TIMEOUT)
            self._clients.append(self._pusher)
        return self._pusher

    def _executor(
        self,
        name: str,
        config: RemoteAgent,
        *,
        scope: Scope,
        recording: Any,
        limits: Limits,
        http: httpx.AsyncClient,
    ) -> Any:
        from tamesu.remote_agents.answers import ForwardingAgent, ScriptedAgent

        if config.forward is None:
            return ScriptedAgent(name, config, recording)
        import httpx as _httpx
        from a2a.client import ClientCallContext, ClientConfig, ClientFactory, minimal_agent_card

        from tamesu.targets.a2a.a2a_connect import BoundedTransport
        from tamesu.templates import render_text, render_url

        forward = render_url(config.forward, scope)
        if not forward.startswith(("http://", "https://")):
            raise TargetError(
                f"remote agent {name}: forward must be an http(s) JSON-RPC URL, not {forward!r}",
                retryable=False,
                kind="config",
            )
        headers = {str(k): render_text(v, scope) for k, v in (config.headers or {}).items()}
        client_http = _httpx.AsyncClient(
            transport=BoundedTransport(http, limits), trust_env=False, timeout=None
        )
        self._clients.append(client_http)
        factory = ClientFactory(ClientConfig(httpx_client=client_http, streaming=False))
        client = factory.create(minimal_agent_card(forward, ["JSONRPC"]))
        return ForwardingAgent(name, client, ClientCallContext(service_parameters=headers), recording)

    async def close(self) -> None:
        """Unmount the agents (the last run out stops a server) and free fixed addresses."""
        mounted, self._mounted = self._mounted, []
        for server, mount in reversed(mounted):
            try:
                await server.remove(mount)
            except Exception:
                pass
        locked, self._locked = self._locked, []
        for server in locked:
            server.lock.release()
        endpoints, self._grpc = self._grpc, []
        for endpoint in endpoints:
            await endpoint.close()
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()


def _app(handler: Any, card: Any) -> Any:
    """The a2a-sdk's routes for one agent: its card, JSON-RPC at ``/``, HTTP+JSON under ``/rest``."""
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
    from starlette.applications import Starlette

    return Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/"),
            *create_rest_routes(handler, path_prefix="/rest"),
        ]
    )


async def _credentials_required(card: Any, context: Any) -> Any:
    """Without ``token``, the extended card still goes only to callers that send credentials."""
    from a2a.utils.errors import InvalidRequestError

    headers = context.state.get("headers") or {}
    grpc_context = context.state.get("grpc_context")
    if grpc_context is not None:
        headers = {k: v for k, v in grpc_context.invocation_metadata() or ()}
    if not headers.get("authorization"):
        raise InvalidRequestError("the extended card is for callers that send credentials (Authorization)")
    return card
