"""The ``grpc`` target: an agent serving ``schema/agent.proto`` (one ``Converse`` stream a conversation).

The adapter opens ``grpc://host:port`` (plaintext) or ``grpcs://host:port`` (TLS, verified against
the url's ``?ca=`` bundle, else ``SSL_CERT_FILE``, else grpc's roots; with ``&cert=`` and ``&key=``
tamesu shows a client certificate to an agent that wants mutual TLS), sends ``headers`` as call metadata and the rendered
``session.id`` in the first message, then one ``UserTurn`` per user turn and reads the agent's
events until ``TurnEnd`` (``SessionEnd``, or the agent returning, ends the session). Text deltas,
tool calls and results and handoffs become the transcript's messages as they arrive.

Time: each turn must end within ``turn_timeout``; the call carries the test's ``timeout`` as its
gRPC deadline, so the agent can see how long it has. Size: a message over ``limits.answer_size``
is refused by grpc itself (its max receive message length). A status the agent ends the call
with is an infrastructure error, retryable like the HTTP statuses it stands for (``RETRYABLE``).
Runs to one agent share a channel (``CHANNELS``). The stubs are generated and checked in
(``tamesu.targets.grpc.grpc_stubs``).
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tamesu.durations import format_duration
from tamesu.errors import MissingExtraError, TargetError, TemplateError
from tamesu.kernel.messages import (
    AgentPartial,
    AgentTurn,
    Handoff,
    Message,
    RawResponse,
    ToolCall,
    ToolResult,
    UserTurn,
)
from tamesu.limits import LimitExceeded
from tamesu.targets.base import TargetAdapter, target, turn_text
from tamesu.targets.grpc.settings import TLS_PARAMS, GrpcTarget, tls_params_problem
from tamesu.wire.connect import ConnectPolicy, Retry, open_session, retrying

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext

__all__ = ["CHANNELS", "RETRYABLE", "SERVICE", "Channels", "GrpcAdapter", "list_services", "parse_grpc_url"]

SERVICE = "tamesu.agent.v1.Agent"
LOST_STATUS = "Internal error from Core"
"""The details of the INTERNAL status grpcio gives a call whose write lost a race with the agent's status."""
PROBE_S = 2.0
"""How long a probe call waits for an agent's refusal (an agent that takes the call waits for Start)."""
RETRYABLE = frozenset(
    {"UNAVAILABLE", "RESOURCE_EXHAUSTED", "ABORTED", "DEADLINE_EXCEEDED", "INTERNAL", "UNKNOWN", "DATA_LOSS"}
)
"""Status codes a retry may cure (HTTP 5xx, 429, 409, 504); the others (INVALID_ARGUMENT,
UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, UNIMPLEMENTED, ...) are the agent's final word."""
TLSFiles = tuple[bytes | None, bytes | None, bytes | None]
"""A grpcs:// connection's CA bundle, client certificate chain and client key (None: not given)."""
_EOF = object()
_timeout_at = getattr(asyncio, "timeout_at", None)
"""A timer without a task of its own (Python 3.11+); each read of a turn waits under one."""


def _grpc() -> Any:
    try:
        import grpc
        import grpc.aio
    except ImportError:
        raise MissingExtraError("grpcio (for grpc targets)", extra="grpc") from None
    return grpc


def parse_grpc_url(url: str) -> tuple[str, bool]:
    """``grpc://host:port`` -> (``host:port``, False); ``grpcs://`` -> (…, True)."""
    parts = urlsplit(url)
    if parts.scheme not in ("grpc", "grpcs") or not parts.hostname or parts.port is None:
        raise TargetError(
            f"a grpc target's url is grpc://host:port or grpcs://host:port, not {url!r}",
            retryable=False,
            kind="config",
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{parts.port}", parts.scheme == "grpcs"


@target("grpc", config=GrpcTarget)
class GrpcAdapter(TargetAdapter):
    """One Converse call; see the module docstring."""

    config: GrpcTarget

    def __init__(self, config: GrpcTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.policy = ConnectPolicy.from_config(config.connect)
        self.url = ""
        self.channel: Any = None
        self.call: Any = None
        self.metadata: tuple[tuple[str, str], ...] | None = None

    async def start(self) -> None:
        from tamesu.templates import render_text

        grpc = _grpc()
        from tamesu.targets.grpc.grpc_stubs import agent_pb2, agent_pb2_grpc

        ctx = self.ctx
        try:
            session = self.config.session
            if session is not None and session.open is not None:
                await open_session(ctx, session.open, self.policy)
            self.url = render_text(self.config.url or "", ctx.scope)
            metadata = tuple(
                (key.lower(), render_text(value, ctx.scope))
                for key, value in (self.config.headers or {}).items()
            )
            address, tls = parse_grpc_url(self.url)
            problem = tls_params_problem(self.url)
            if problem:
                raise TargetError(f"{problem}: {self.url}", retryable=False, kind="config")
            keys = self._tls_files() if tls else None
        except TemplateError as exc:
            raise TargetError(str(exc), retryable=False, kind="config") from None
        self.channel = await retrying(ctx, self.policy, lambda: self._connect(grpc, address, keys))
        deadline = ctx.run_timeout
        stub = agent_pb2_grpc.AgentStub(self.channel)
        self.metadata = metadata or None
        self.call = stub.Converse(metadata=self.metadata, timeout=deadline)
        await self._write(agent_pb2.ClientEvent(start=agent_pb2.Start(session_id=ctx.session)))

    def _tls_files(self) -> TLSFiles:
        """(CA bundle, client certificate chain, client key) as bytes from the url's ``ca``,
        ``cert`` and ``key``; the CA bundle defaults to ``SSL_CERT_FILE``, else None (grpc's roots)."""
        params = {k: v[-1] for k, v in parse_qs(urlsplit(self.url).query, keep_blank_values=True).items()}
        files = {
            name: _read_pem(params[name], name, self.ctx) if params.get(name) else None for name in TLS_PARAMS
        }
        return files["ca"] or _root_certificates(), files["cert"], files["key"]

    async def _connect(self, grpc: Any, address: str, tls: TLSFiles | None) -> Any:
        """The shared channel to the agent once it is READY, or ``Retry`` when the agent cannot be
        reached (yet); a channel that failed is let go, so the next attempt dials afresh."""
        key = (address, tls, self.ctx.limits.answer_size)
        channel = CHANNELS.get(key, lambda: _open_channel(grpc, address, tls, self.ctx.limits.answer_size))
        ready = grpc.ChannelConnectivity.READY
        state = channel.get_state(try_to_connect=True)
        if state == ready:
            return channel
        failed = grpc.ChannelConnectivity.TRANSIENT_FAILURE
        clock, timeout = self.ctx.clock, self.ctx.turn_timeout
        deadline = clock.now() + timeout
        try:
            while state != ready:
                if state == failed:
                    raise Retry(f"cannot reach the gRPC agent at {self.url}")
                left = deadline - clock.now()
                if left <= 0:
                    raise Retry(f"no gRPC connection within {format_duration(timeout)} at {self.url}")
                try:
                    await asyncio.wait_for(channel.wait_for_state_change(state), left)
                except asyncio.TimeoutError:
                    continue
                state = channel.get_state(try_to_connect=True)
        except BaseException:
            CHANNELS.drop(key, channel)
            raise
        return channel

    async def _write(self, event: Any) -> None:
        try:
            await self.call.write(event)
        except Exception as exc:
            # A write that meets a call the agent already ended can fail with a local error
            # ("Internal error from Core"); the agent's own status, which says why, ends the call.
            raise await self._failure(None if await self._ended_by_agent() else exc) from None

    async def _ended_by_agent(self) -> bool:
        """Whether the call has (or within a second gets) a final status other than OK."""
        call = self.call
        if call is None:
            return False
        try:
            code = await asyncio.wait_for(call.code(), 1.0)
        except Exception:
            return False
        return code is not None and code.name != "OK"

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        from tamesu.targets.grpc.grpc_stubs import agent_pb2

        if self.call is None:
            raise TargetError("the grpc target is not connected", retryable=False, kind="adapter")
        clock, timeout, limit = self.ctx.clock, self.ctx.turn_timeout, self.ctx.limits.turn_text
        if user is not None:
            if user.data is not None or user.files:
                turn_text(user, "grpc")  # refuses the parts a grpc turn cannot carry
            sent = agent_pb2.UserTurn(text=user.text)
            if user.data is not None:
                sent.data.update(user.data)
            await self._write(agent_pb2.ClientEvent(user_turn=sent))
        sent_at = clock.now()
        deadline = sent_at + timeout
        first_byte_at: float | None = None
        pieces: list[str] = []
        size = 0
        done = False
        while True:
            event = await self._next(deadline)
            now = clock.now()
            if first_byte_at is None:
                first_byte_at = now
            if event is _EOF:
                done = True
                break
            kind = event.WhichOneof("event")
            if kind == "text":
                size += len(event.text.text)
                if size > limit:
                    raise LimitExceeded(
                        f"the agent's turn gathered more than {limit} characters of text", setting="turn_text"
                    )
                pieces.append(event.text.text)
                yield AgentPartial(text=event.text.text, at=now)
            elif kind == "turn_end":
                break
            elif kind == "session_end":
                done = True
                yield RawResponse(body={"event": "session_end", "reason": event.session_end.reason}, at=now)
                break
            elif kind == "tool_call":
                call = event.tool_call
                yield ToolCall(name=call.name, args=_struct(call.arguments), id=call.id or None, at=now)
            elif kind == "tool_result":
                result = event.tool_result
                value = _value(result.result) if result.HasField("result") else None
                yield ToolResult(name=result.name, result=value, id=result.id or None, at=now)
            elif kind == "handoff":
                handoff = event.handoff
                yield Handoff(to=handoff.to or None, summary=handoff.summary or None, at=now)
        end_at = clock.now()
        yield AgentTurn(
            text="".join(pieces),
            done=done,
            sent_at=sent_at,
            first_byte_at=first_byte_at,
            end_at=end_at,
            at=end_at,
        )

    async def _next(self, deadline: float) -> Any:
        """The agent's next event (``_EOF`` when it returned), within the turn's deadline."""
        grpc = _grpc()
        left = deadline - self.ctx.clock.now()
        try:
            # a read cut short by the deadline ends the call: the run fails with this turn
            if _timeout_at is None:
                event = await asyncio.wait_for(self.call.read(), max(left, 0.001))
            else:
                async with _timeout_at(asyncio.get_running_loop().time() + left):
                    event = await self.call.read()
        except asyncio.TimeoutError:
            raise TargetError(
                f"no end of the agent's turn within {format_duration(self.ctx.turn_timeout)} on {self.url}",
                retryable=True,
            ) from None
        except Exception as exc:
            raise await self._failure(exc) from None
        if event is grpc.aio.EOF:
            code = await self.call.code()
            if code != grpc.StatusCode.OK:
                raise await self._failure(None)
            return _EOF
        return event

    async def _failure(self, exc: BaseException | None) -> TargetError:
        """The TargetError for the call's end (its status) or for ``exc``."""
        grpc = _grpc()
        call = self.call
        if isinstance(exc, grpc.aio.AioRpcError):
            code, details = exc.code(), exc.details()
        elif exc is None or (call is not None and call.done()):
            code, details = await call.code(), await call.details()
        else:
            return TargetError(
                self.ctx.redactor.redact(f"gRPC call to {self.url} failed: {exc}"), retryable=True
            )
        name = code.name if code is not None else "UNKNOWN"
        details = details or ""
        if name == "INTERNAL" and details == LOST_STATUS:
            refused = await self._refusal()
            if refused is not None:
                name, details = refused
        if name == "RESOURCE_EXHAUSTED" and "larger than max" in details:
            return self.ctx.limits.too_large(f"a message from the gRPC agent at {self.url}")
        message = f"the gRPC agent at {self.url} ended the call with {name}" + (
            f": {details}" if details else ""
        )
        if name == "UNIMPLEMENTED":
            message += await self._services_hint()
        return TargetError(self.ctx.redactor.redact(message), retryable=name in RETRYABLE)

    async def _refusal(self) -> tuple[str, str] | None:
        """The agent's refusal of a new call that sends nothing, or None when it takes the call.

        A write racing the agent's final status makes grpcio replace that status with a local
        INTERNAL (``LOST_STATUS``); an agent that refuses every call (UNIMPLEMENTED, UNAUTHENTICATED,
        ...) refuses this one at once and so says what the lost status was."""
        from tamesu.targets.grpc.grpc_stubs import agent_pb2_grpc

        grpc = _grpc()
        probe = agent_pb2_grpc.AgentStub(self.channel).Converse(metadata=self.metadata, timeout=PROBE_S)
        try:
            code = await asyncio.wait_for(probe.code(), PROBE_S + 1.0)
            details = await probe.details()
        except Exception:
            return None
        finally:
            probe.cancel()
        if code is None or code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
            return None  # the agent took the call and waited for Start: it refuses nothing
        if code.name == "INTERNAL" and details == LOST_STATUS:
            return None
        return code.name, details or ""

    async def _services_hint(self) -> str:
        """When the agent does not serve the protocol and has server reflection: what it serves."""
        services = await list_services(self.channel)
        if services is None:
            return f" (it does not serve {SERVICE})"
        return f" (it does not serve {SERVICE}; by reflection it serves: {', '.join(services) or 'nothing'})"

    async def stop(self) -> None:
        call, self.call = self.call, None
        if call is not None:
            try:
                await asyncio.wait_for(call.done_writing(), 1.0)
            except BaseException:
                pass
            call.cancel()
        self.channel = None  # shared with the other runs (CHANNELS)


class Channels:
    """The gRPC channels of this process, one per event loop, address, TLS roots and size limit.

    Runs to one agent share a channel (one HTTP/2 connection, a stream per conversation), as REST
    runs share the HTTP client's connections, instead of dialling and handshaking per conversation.
    A channel goes when its event loop does (grpc closes a channel nothing refers to).
    """

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        pool = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        channel = pool.get(key)
        if channel is None:
            channel = pool[key] = make()
        return channel

    def drop(self, key: Any, channel: Any) -> None:
        """Forget a channel that failed (runs still using it keep it until they end)."""
        pool = self._by_loop.get(asyncio.get_running_loop(), {})
        if pool.get(key) is channel:
            del pool[key]


CHANNELS = Channels()


def _open_channel(grpc: Any, address: str, tls: TLSFiles | None, answer_size: int) -> Any:
    options = [("grpc.max_receive_message_length", answer_size), ("grpc.enable_retries", 0)]
    if tls is not None:
        roots, chain, key = tls
        credentials = grpc.ssl_channel_credentials(roots, private_key=key, certificate_chain=chain)
        return grpc.aio.secure_channel(address, credentials, options)
    return grpc.aio.insecure_channel(address, options)


def _read_pem(path: str, key: str, ctx: TargetContext) -> bytes:
    """A PEM file the url names (relative to the suite); a missing one is a config error naming it."""
    from pathlib import Path

    full = Path(path) if Path(path).is_absolute() else Path(ctx.suite_dir) / path
    try:
        return full.read_bytes()
    except OSError as exc:
        raise TargetError(
            f"the grpcs:// url's {key} {full}: {exc.strerror}", retryable=False, kind="config"
        ) from None


async def list_services(channel: Any, timeout: float = 5.0) -> list[str] | None:
    """The services a server lists by reflection (v1, then v1alpha); None when it has none or
    grpcio-reflection is not installed."""
    try:
        from grpc_reflection.v1alpha import reflection_pb2
    except ImportError:
        return None
    for method in ("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                   "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"):  # fmt: skip
        rpc = channel.stream_stream(
            method,
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        call = rpc(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=timeout)
        try:
            async for answer in call:
                return sorted(s.name for s in answer.list_services_response.service)
        except Exception:
            continue
    return None


def _root_certificates() -> bytes | None:
    """The CA bundle of SSL_CERT_FILE when set (as Python's ssl honours it); grpc's own roots otherwise."""
    path = os.environ.get("SSL_CERT_FILE")
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise TargetError(f"SSL_CERT_FILE {path}: {exc.strerror}", retryable=False, kind="config") from None


def _struct(message: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message)  # type: ignore[no-any-return]


def _value(message: Any) -> Any:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message)
