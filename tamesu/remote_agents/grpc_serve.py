"""A remote agent's gRPC interface: the a2a-sdk's ``GrpcHandler`` on a grpc.aio server of its own.

The A2A gRPC binding addresses an agent by ``host:port`` alone (no path to mount it under), so
each served agent gets a port of its own on the host of its address, next to its HTTP interfaces
on the shared server. Like those, it checks the agent's bearer ``token`` on every call
(UNAUTHENTICATED without it) and refuses a message over ``limits.answer_size`` (grpc's own limit):
the agent under test is untrusted input.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError

if TYPE_CHECKING:
    from tamesu.limits import Limits

__all__ = ["GrpcEndpoint"]

STOP_GRACE = 1.0
"""Seconds calls in flight get to finish when the agent is unmounted."""


class GrpcEndpoint:
    """One agent's gRPC server: bound by ``open`` (so the card can name it), then ``attach``."""

    def __init__(self, server: Any, url: str) -> None:
        self.server = server
        self.url = url
        """``host:port``, as the card's GRPC interface names it."""

    @classmethod
    def open(cls, host: str, *, token: str | None, limits: Limits) -> GrpcEndpoint:
        import grpc

        options = [
            ("grpc.max_receive_message_length", limits.answer_size),
            ("grpc.so_reuseport", 0),
        ]
        server = grpc.aio.server(
            interceptors=[_Bearer(token)] if token is not None else None, options=options
        )
        bind = f"[{host}]" if ":" in host else host
        try:
            port = server.add_insecure_port(f"{bind}:0")
        except RuntimeError as exc:
            raise TargetError(
                f"cannot serve a remote agent's gRPC interface on {host}: {exc}",
                retryable=False,
                kind="config",
            ) from None
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        return cls(server, f"{f'[{shown}]' if ':' in shown else shown}:{port}")

    async def attach(self, handler: Any) -> None:
        """Serve the a2a-sdk request handler ``handler`` and start listening."""
        from a2a.server.request_handlers import GrpcHandler
        from a2a.types import a2a_pb2_grpc

        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), self.server)
        await self.server.start()

    async def close(self) -> None:
        await self.server.stop(STOP_GRACE)


def _bearer_given(metadata: Any, token: str) -> bool:
    given = next((v for k, v in metadata or () if k == "authorization"), "")
    given = given.encode() if isinstance(given, str) else bytes(given)
    return hmac.compare_digest(given, f"Bearer {token}".encode())


def _Bearer(token: str | None) -> Any:
    """A server interceptor that lets through only calls with ``authorization: Bearer <token>``."""
    import grpc

    async def refuse(request: Any, context: Any) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "this agent wants a bearer token")

    async def refuse_stream(request: Any, context: Any) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "this agent wants a bearer token")
        yield  # pragma: no cover (a generator: abort raises)

    class Bearer(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        async def intercept_service(self, continuation: Any, details: Any) -> Any:
            handler = await continuation(details)
            if handler is None or (token is not None and _bearer_given(details.invocation_metadata, token)):
                return handler
            if handler.unary_stream is not None:
                return grpc.unary_stream_rpc_method_handler(
                    refuse_stream,
                    request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer,
                )
            return grpc.unary_unary_rpc_method_handler(
                refuse,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )

    return Bearer()
