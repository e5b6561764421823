"""The ``rest`` target: an agent behind HTTP, answering as JSON, server-sent events, a websocket
(plain or socket.io), a polled endpoint, or calls to an API tamesu serves (``listen``).

This module holds the adapter, the plain JSON turn and the choice of transport; the transports
live beside it (``rest_stream``, ``rest_ws``, ``rest_poll``, ``rest_listen``) and share the reading
of answers (``rest_read``) and connect retries (``connect``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from tamesu.clock import within
from tamesu.durations import format_duration
from tamesu.errors import TargetError
from tamesu.http import fast_lane
from tamesu.jsonpath import JSONPathError
from tamesu.kernel.messages import Message, UserTurn
from tamesu.targets.base import TargetAdapter, target, turn_text
from tamesu.targets.rest.rest_read import Reader, TurnBuilder, decode_text
from tamesu.targets.rest.settings import RestTarget
from tamesu.wire.connect import (
    ConnectPolicy,
    HttpCall,
    fetch,
    open_session,
    read_limited,
    render_call,
    snippet,
    stream,
)

if TYPE_CHECKING:
    import httpx

    from tamesu.targets.base import TargetContext
    from tamesu.targets.rest.rest_listen import ListenSession
    from tamesu.targets.rest.rest_ws import WsSession
    from tamesu.templates import Scope

__all__ = ["DEFAULT_BODY", "RestAdapter"]

DEFAULT_BODY = {"session_id": "{{session}}", "message": "{{message}}"}
"""The request body when ``request.body`` is unset."""


@target("rest", config=RestTarget)
class RestAdapter(TargetAdapter):
    """One conversation with an HTTP agent; see the module docstring for the transports."""

    config: RestTarget

    def __init__(self, config: RestTarget, ctx: TargetContext) -> None:
        super().__init__(config, ctx)
        self.policy = ConnectPolicy.from_config(config.connect)
        self.response = config.response
        self.request = config.request
        self.reader = Reader(config.response)
        self.poll = getattr(config.response, "poll", None)
        self.listen_config = getattr(config.response, "listen", None)
        self.ws: WsSession | None = None
        self.listener: ListenSession | None = None
        self._handed_off = False

    async def start(self) -> None:
        """Serve the listener first (so ``{{listen.url}}`` renders everywhere), then open the session."""
        self.ctx.scope.set("session", self.ctx.session)
        try:
            self._compile_paths()
            if self.listen_config is not None:
                from tamesu.targets.rest.rest_listen import ListenSession

                self.listener = await ListenSession.open(self, self.listen_config)
                self.ctx.scope.set("listen.url", self.listener.url)
            session = self.config.session
            if session is not None and session.open is not None:
                await open_session(self.ctx, session.open, self.policy)
            if self.config.streaming == "websocket":
                from tamesu.targets.rest.rest_ws import WsSession

                self.ws = await WsSession.open(self)
        except TargetError as exc:
            await self.stop()
            raise self._redacted(exc) from None
        except JSONPathError as exc:
            await self.stop()
            raise TargetError(str(exc), retryable=False) from None

    def _compile_paths(self) -> None:
        """Compile every configured JSONPath now: a bad one fails the start, not the third turn."""
        from tamesu.jsonpath import validate

        response, poll, listen = self.response, self.poll, self.listen_config
        paths = [getattr(response, name, None) for name in ("text", "tool_calls", "done", "turn_done")] + [
            getattr(poll, "cursor", None),
            getattr(listen, "session", None),
        ]
        handoff = self.config.handoff
        if handoff is not None:
            paths.append(handoff.json_path)
            if handoff.json_path or handoff.regex:
                paths += [handoff.to, handoff.summary]
        for path in paths:
            if path:
                validate(path)

    async def stop(self) -> None:
        if self.ws is not None:
            ws, self.ws = self.ws, None
            await ws.close()
        if self.listener is not None:
            listener, self.listener = self.listener, None
            await listener.close()

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        scope = self.ctx.scope.child({"message": "" if user is None else turn_text(user, "rest")})
        try:
            if self._plain():
                for msg in await self._plain_answer(user, scope):
                    yield msg
                return
            async with aclosing(self._transport(user, scope)) as messages:
                async for msg in messages:
                    yield msg
        except TargetError as exc:
            raise self._redacted(exc) from None
        except JSONPathError as exc:
            raise TargetError(self.ctx.redactor.redact(str(exc)), retryable=False) from None

    async def whole_answer(self, user: UserTurn | None) -> list[Message] | None:
        if not self._plain():
            return None
        scope = self.ctx.scope.child({"message": "" if user is None else turn_text(user, "rest")})
        try:
            return await self._plain_answer(user, scope)
        except TargetError as exc:
            raise self._redacted(exc) from None
        except JSONPathError as exc:
            raise TargetError(self.ctx.redactor.redact(str(exc)), retryable=False) from None

    def _plain(self) -> bool:
        """Whether turns are one request answered by one whole body (no poll, listener, stream)."""
        return (
            self.poll is None and self.listener is None and self.ws is None and self.config.streaming != "sse"
        )

    def _transport(self, user: UserTurn | None, scope: Scope) -> AsyncGenerator[Message, None]:
        if self.poll is not None:
            from tamesu.targets.rest.rest_poll import poll_turn

            return poll_turn(self, user, scope)
        if self.listener is not None:
            return self.listener.turn(user, scope)
        if self.ws is not None:
            return self.ws.turn(user, scope)
        from tamesu.targets.rest.rest_stream import sse_turn

        return sse_turn(self, user, scope)

    def request_body(self) -> Any:
        """What a turn sends, before rendering: ``request.body``, else ``DEFAULT_BODY``."""
        return (
            self.request.body if self.request is not None and self.request.body is not None else DEFAULT_BODY
        )

    def turn_call(self, scope: Scope) -> HttpCall:
        """The rendered request of one turn: url, method, headers, ``request.body``."""
        body = self.request_body()
        if not self.config.url:
            raise TargetError("a rest target needs url", retryable=False)
        return render_call(
            self.ctx,
            scope,
            url=self.config.url,
            method=self.config.method,
            headers=self.config.headers,
            body=body,
        )

    def builder(
        self, *, sent_at: float | None, partials: bool = False, join: str | None = None
    ) -> TurnBuilder:
        sep = self.reader.join if self.reader.join is not None else ("" if join is None else join)
        return TurnBuilder(
            self.ctx.clock, sent_at=sent_at, join=sep, partials=partials, limits=self.ctx.limits
        )

    def finish(self, builder: TurnBuilder) -> list[Message]:
        """The end of a turn; a handoff is reported once per session, on the turn it happens."""
        out = builder.finish(None if self._handed_off else self.config.handoff)
        self._handed_off = self._handed_off or len(out) > 1
        return out

    async def _plain_answer(self, user: UserTurn | None, scope: Scope) -> list[Message]:
        """One request, its whole answer read: the turn's messages, ending with the AgentTurn."""
        if user is None:
            # A plain JSON agent cannot speak first: there is no request to answer.
            return self.finish(self.builder(sent_at=None))
        call = self.turn_call(scope)
        builder = self.builder(sent_at=self.ctx.clock.now())
        lane = fast_lane(self.ctx.http)
        if lane is not None and call.method != "HEAD":  # llhttp cannot be told a HEAD answer has no body
            status, headers, text = await fetch(
                self.ctx, self.policy, call, lane, on_headers=builder.first_byte
            )
        else:
            async with stream(self.ctx, self.policy, call) as resp:
                builder.first_byte()
                text = await self.read_body(resp, call)
            status, headers = resp.status_code, resp.headers
        out = self.read_answer(builder, status, headers.get("content-type"), text)
        out.extend(self.finish(builder))
        return out

    async def read_body(self, resp: httpx.Response, call: HttpCall) -> str:
        """The whole body within the turn timeout and ``limits.answer_size``, as text."""
        import asyncio

        import httpx

        try:
            data = await within(read_limited(resp, self.ctx.limits, call.url), self.ctx.turn_timeout)
        except asyncio.TimeoutError:
            raise TargetError(
                f"no answer within {format_duration(self.ctx.turn_timeout)} from {call.url}", retryable=True
            ) from None
        except httpx.HTTPError as exc:
            raise TargetError(f"the answer from {call.url} broke off: {exc}", retryable=True) from None
        return data.decode(resp.encoding or "utf-8", "replace")

    def read_answer(
        self, builder: TurnBuilder, status: int, content_type: str | None, text: str
    ) -> list[Message]:
        """Read one whole answer into ``builder``. A 4xx is the agent's real answer and is recorded."""
        payload = decode_payload(
            text,
            content_type,
            needs_json=self.reader.needs_json,
            status=status,
            depth=self.ctx.limits.json_depth,
        )
        if payload is None and not text.strip():
            builder.status = status
            return []
        extract = self.reader.read(payload, at=self.ctx.clock.now())
        if status >= 400 and isinstance(payload, str):
            extract.texts = []
        return builder.add(payload, extract, status=status, size=len(text))

    def _redacted(self, exc: TargetError) -> TargetError:
        return exc.reworded(self.ctx.redactor.redact(str(exc)))


def decode_payload(
    text: str, content_type: str | None, *, needs_json: bool, status: int = 200, depth: int = 64
) -> Any:
    """JSON when the body is JSON (nested at most ``depth`` deep); otherwise the text, or a
    TargetError when JSONPaths need JSON."""
    if not text.strip():
        return None
    value, is_json = decode_text(text, depth)
    if is_json or not needs_json or status >= 400:
        return value
    kind = (content_type or "no content type").split(";")[0].strip()
    raise TargetError(f"agent answered non-JSON ({kind}): {snippet(text)}", retryable=False)
