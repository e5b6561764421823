"""Reaching the agent: connect retries as the suite's ``connect:`` says, and ``session.open``.

Only what can get better by waiting is retried: a refused connection and a 5xx answer (and 408 /
429), and a websocket the server closes as busy or restarting before the session began
(``TRY_AGAIN_CLOSE_CODES``, checked by ``WsLink``). A refusal because the agent is full (429, 503,
close 1013) waits at least its ``Retry-After`` and ends as a ``CapacityRefused``, which the
scheduler answers by lowering the target's concurrency. Any other answer is the agent's real answer
and goes back to the caller. Every retried attempt is counted in the run's ``AgentFaults``. After
the last attempt the ``TargetError`` says what happened and where, with secrets redacted.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from tamesu.clock import within
from tamesu.durations import format_duration, parse_duration
from tamesu.errors import CapacityRefused, TargetError
from tamesu.http import charset_of, describe_http_error, is_connect_error, is_timeout
from tamesu.templates import render, render_text

if TYPE_CHECKING:
    import httpx

    from tamesu.config.common import RESTOpen
    from tamesu.config.target_base import ConnectConfig
    from tamesu.http import FastLane
    from tamesu.http_lane import Answer
    from tamesu.limits import Limits
    from tamesu.wire.wire_context import WireContext

__all__ = [
    "CAPACITY_STATUSES",
    "FULL_CLOSE_CODE",
    "RETRY_STATUSES",
    "TRY_AGAIN_CLOSE_CODES",
    "ConnectPolicy",
    "HttpCall",
    "Retry",
    "connect_websocket",
    "fetch",
    "open_session",
    "open_websocket",
    "read_limited",
    "render_call",
    "request",
    "retry_after_seconds",
    "retrying",
    "snippet",
    "status_retry",
    "stream",
    "websocket_closed",
]

RETRY_STATUSES = frozenset({408, 429})
"""4xx answers that are retried like 5xx."""

TRY_AGAIN_CLOSE_CODES: dict[int, str] = {1001: "Going Away", 1012: "Service Restart", 1013: "Try Again Later"}
"""Websocket close codes that, before a session began, mean "not now": the attempt is retried."""

FULL_CLOSE_CODE = 1013
"""The close code of a server that is full (Try Again Later): a capacity refusal."""

T = TypeVar("T")


def snippet(text: str, limit: int = 200) -> str:
    """The first ``limit`` characters of a body, on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


@dataclass(frozen=True)
class ConnectPolicy:
    """attempts / backoff / max_backoff, in seconds; attempts=1 retries nothing."""

    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 5.0

    @classmethod
    def from_config(cls, config: ConnectConfig | None) -> ConnectPolicy:
        if config is None:
            return cls()
        return cls(
            attempts=max(1, int(getattr(config, "attempts", 3) or 1)),
            backoff=parse_duration(getattr(config, "backoff", None) or "500ms"),
            max_backoff=parse_duration(getattr(config, "max_backoff", None) or "5s"),
        )

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based): doubling, capped, with ±20% jitter."""
        base = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        return min(self.max_backoff, base * random.uniform(0.8, 1.2))


class Retry(Exception):
    """Raised inside an attempt to ask for another one.

    The final error reads ``{what} after N attempts: {detail}`` (detail: the start of a body).
    ``capacity`` marks a refusal because the agent is full (HTTP 429 / 503, websocket 1013): the
    wait honours its ``retry_after``, and the final error is a ``CapacityRefused``.
    """

    def __init__(
        self, what: str, detail: str = "", *, capacity: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(what)
        self.what = what
        self.detail = detail
        self.capacity = capacity
        self.retry_after = retry_after


CAPACITY_STATUSES = frozenset({429, 503})
"""HTTP answers that turn a session away because the agent is full."""

MAX_RETRY_AFTER = 600.0
"""The longest Retry-After honoured (the run's own timeout bounds any wait anyway)."""


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header (seconds, or an HTTP date) as seconds from now; None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return min(float(text), MAX_RETRY_AFTER)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    import time

    return max(0.0, min(when.timestamp() - time.time(), MAX_RETRY_AFTER))


def status_retry(status: int, headers: Any, body: str = "") -> Retry:
    """The ``Retry`` of a retryable HTTP answer; 429 and 503 are capacity refusals with their Retry-After."""
    if status in CAPACITY_STATUSES:
        wait = retry_after_seconds(headers.get("retry-after") if headers is not None else None)
        return Retry(f"agent answered {status}", body, capacity=True, retry_after=wait)
    return Retry(f"agent answered {status}", body)


async def retrying(ctx: WireContext, policy: ConnectPolicy, attempt: Callable[[], Awaitable[T]]) -> T:
    """Run ``attempt`` until it returns; it raises ``Retry`` for failures worth another try.

    Each retried failure is counted in ``ctx.faults``; the last one, which becomes the run's error,
    is counted from that error when the run ends.
    """
    last: Retry | None = None
    full: Retry | None = None
    """The last capacity refusal: once the agent said it is full, what follows (a refused
    connection, 1001, while a one-session server restarts) is the same busy agent."""
    for n in range(1, policy.attempts + 1):
        try:
            return await attempt()
        except Retry as exc:
            last = exc
            full = exc if exc.capacity else full
        if n < policy.attempts:
            ctx.faults.note_message(last.what)
            await ctx.clock.sleep(max(policy.delay(n), last.retry_after or 0.0))
    if last is None:
        last = Retry("no attempt made")
    tries = "attempt" if policy.attempts == 1 else "attempts"
    detail = f": {last.detail}" if last.detail else ""
    text = ctx.redactor.redact(f"{last.what} after {policy.attempts} {tries}{detail}")
    if full is not None:
        raise CapacityRefused(text, retry_after=full.retry_after)
    raise TargetError(text, retryable=True)


@dataclass(slots=True)
class HttpCall:
    """One HTTP request of a target, already rendered."""

    method: str
    url: str
    headers: dict[str, str]
    body: Any = None
    """A str is sent as is, bytes as is, anything else (not None) as JSON."""

    def kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"headers": self.headers}
        if isinstance(self.body, (str, bytes)):
            out["content"] = self.body.encode() if isinstance(self.body, str) else self.body
        elif self.body is not None:
            out["json"] = self.body
        return out


def _with_cookies(ctx: WireContext, call: HttpCall) -> HttpCall:
    """``call`` carrying the cookies this run's agent set."""
    headers = _cookie_headers(ctx, call.url, call.headers)
    return call if headers is call.headers else HttpCall(call.method, call.url, headers, call.body)


def _cookie_headers(ctx: WireContext, url: str, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` with the cookies this run's agent set for ``url`` (after any Cookie header of
    the suite's); the same dict when there are none. A websocket's handshake is its http(s) twin's."""
    if url.startswith("ws"):
        url = "http" + url[2:]
    cookie = ctx.cookies.header(url)
    if cookie is None:
        return headers
    out = {k: v for k, v in headers.items() if k.lower() != "cookie"}
    own = "; ".join(v for k, v in headers.items() if k.lower() == "cookie")
    out["Cookie"] = f"{own}; {cookie}" if own else cookie
    return out


def _keep_cookies(ctx: WireContext, call: HttpCall, status: int, set_cookie: list[str]) -> None:
    if set_cookie:
        ctx.cookies.keep(call.method, call.url, status, set_cookie)


def _transport_failure(exc: Exception, call: HttpCall, timeout: float) -> Exception:
    if is_timeout(exc) and not is_connect_error(exc):
        return TargetError(f"no answer within {format_duration(timeout)} from {call.url}", retryable=True)
    what = describe_http_error(exc, call.url)
    return Retry(what) if is_connect_error(exc) else TargetError(what, retryable=True)


def _retryable_status(status: int) -> bool:
    return status >= 500 or status in RETRY_STATUSES


async def read_limited(resp: httpx.Response, limits: Limits, url: str) -> bytes:
    """The whole body of ``resp`` (decoded as its Content-Encoding says), refusing one longer than
    ``limits.answer_size`` as soon as it is: a LimitExceeded, with nothing more read."""
    limit = limits.answer_size
    length = resp.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise limits.too_large(f"the answer from {url}")
    chunks: list[bytes] = []
    total = 0
    async for chunk in resp.aiter_bytes():
        total += len(chunk)
        if total > limit:
            raise limits.too_large(f"the answer from {url}")
        chunks.append(chunk)
    return b"".join(chunks)


_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


async def _whole(ctx: WireContext, call: HttpCall) -> httpx.Response:
    """``call`` sent and its body read within ``ctx.limits``: a response holding the decoded body."""
    import httpx

    req = ctx.http.build_request(call.method, call.url, **_with_cookies(ctx, call).kwargs())
    resp = await ctx.http.send(req, stream=True)
    try:
        data = await read_limited(resp, ctx.limits, call.url)
    finally:
        await resp.aclose()
    headers = [(k, v) for k, v in resp.headers.multi_items() if k.lower() not in _BODY_HEADERS]
    return httpx.Response(resp.status_code, headers=headers, content=data, request=req)


async def request(
    ctx: WireContext, policy: ConnectPolicy, call: HttpCall, *, timeout: float | None = None
) -> httpx.Response:
    """Send ``call`` (body read in full, within ``ctx.limits``) with connect retries; any
    non-retryable answer is returned."""
    import asyncio

    import httpx

    limit = ctx.turn_timeout if timeout is None else timeout

    async def attempt() -> httpx.Response:
        try:
            resp = await within(_whole(ctx, call), limit)
        except (httpx.HTTPError, OSError, asyncio.TimeoutError) as exc:
            raise _redacted(ctx, _transport_failure(exc, call, limit)) from None
        _keep_cookies(ctx, call, resp.status_code, resp.headers.get_list("set-cookie"))
        if _retryable_status(resp.status_code):
            raise status_retry(resp.status_code, resp.headers, snippet(resp.text))
        return resp

    return await retrying(ctx, policy, attempt)


@asynccontextmanager
async def stream(
    ctx: WireContext, policy: ConnectPolicy, call: HttpCall, *, timeout: float | None = None
) -> AsyncIterator[httpx.Response]:
    """Like ``request`` but the body is left unread, for server-sent events."""
    import asyncio

    import httpx

    limit = ctx.turn_timeout if timeout is None else timeout

    async def attempt() -> httpx.Response:
        req = ctx.http.build_request(call.method, call.url, **_with_cookies(ctx, call).kwargs())
        try:
            resp = await within(ctx.http.send(req, stream=True), limit)
        except (httpx.HTTPError, OSError, asyncio.TimeoutError) as exc:
            raise _redacted(ctx, _transport_failure(exc, call, limit)) from None
        _keep_cookies(ctx, call, resp.status_code, resp.headers.get_list("set-cookie"))
        if _retryable_status(resp.status_code):
            try:
                body = (await within(read_limited(resp, ctx.limits, call.url), limit)).decode(
                    "utf-8", "replace"
                )
            except Exception:
                body = ""
            await resp.aclose()
            raise status_retry(resp.status_code, resp.headers, snippet(body))
        return resp

    resp = await retrying(ctx, policy, attempt)
    try:
        yield resp
    finally:
        await resp.aclose()


async def fetch(
    ctx: WireContext,
    policy: ConnectPolicy,
    call: HttpCall,
    lane: FastLane,
    *,
    on_headers: Callable[[], None] | None = None,
) -> tuple[int, Any, str]:
    """``stream`` and a whole read of the body, on the fast lane: (status, headers, text).

    Retries and error messages are those of ``stream`` followed by reading the body; one turn
    timeout covers each attempt's request and its answer. ``on_headers`` is called when the
    headers of the answer that is kept have arrived.
    """
    http_error = _httpx_error()
    limit = ctx.turn_timeout
    json_body = call.body is not None and not isinstance(call.body, (str, bytes))
    headers = lane.merged_headers(_with_cookies(ctx, call).headers, json_body=json_body)
    data: bytes | None
    if json_body:
        data = _json_bytes(call.body)
    elif isinstance(call.body, str):
        data = call.body.encode()
    else:
        data = call.body or None

    async def attempt() -> Answer:
        seen = 0

        def on_status(status: int) -> None:
            nonlocal seen
            seen = status
            if on_headers is not None and not _retryable_status(status):
                on_headers()

        try:
            answer = await within(
                lane.exchange(call.method, call.url, headers, data, on_status=on_status, limits=ctx.limits),
                limit,
            )
        except asyncio.TimeoutError as exc:
            if _retryable_status(seen):
                raise Retry(f"agent answered {seen}") from None
            if seen:
                raise TargetError(
                    f"no answer within {format_duration(limit)} from {call.url}", retryable=True
                ) from None
            raise _redacted(ctx, _transport_failure(exc, call, limit)) from None
        except (http_error, OSError) as exc:
            if _retryable_status(seen):
                raise Retry(f"agent answered {seen}") from None
            if seen:
                broke = TargetError(f"the answer from {call.url} broke off: {exc}", retryable=True)
                raise _redacted(ctx, broke) from None
            raise _redacted(ctx, _transport_failure(exc, call, limit)) from None
        if "Set-Cookie" in answer.headers:
            _keep_cookies(ctx, call, answer.status, answer.headers.getall("Set-Cookie"))
        if _retryable_status(answer.status):
            raise status_retry(
                answer.status, answer.headers, snippet(answer.content.decode("utf-8", "replace"))
            )
        return answer

    answer = await retrying(ctx, policy, attempt)
    charset = charset_of(answer.headers.get("content-type"))
    return answer.status, answer.headers, answer.content.decode(charset, "replace")


_HTTPX_ERROR: list[type[Exception]] = []


def _httpx_error() -> type[Exception]:
    """``httpx.HTTPError``, imported on first use (httpx is heavy to import for ``validate``)."""
    if not _HTTPX_ERROR:
        import httpx

        _HTTPX_ERROR.append(httpx.HTTPError)
    return _HTTPX_ERROR[0]


def _json_bytes(value: Any) -> bytes:
    """A JSON body exactly as httpx encodes ``json=`` (msgspec writes the same bytes for strings,
    integers, booleans and null; floats and anything else go through Python's json)."""
    if _plain_json(value):
        try:
            return msgspec.json.encode(value)
        except (msgspec.MsgspecError, OverflowError, UnicodeEncodeError):
            pass
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _plain_json(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is dict:
        return all(type(k) is str and _plain_json(v) for k, v in value.items())
    if kind is list:
        return all(_plain_json(v) for v in value)
    return False


def _redacted(ctx: WireContext, exc: Exception) -> Exception:
    if isinstance(exc, TargetError):
        return exc.reworded(ctx.redactor.redact(str(exc)))
    return exc


def render_call(
    ctx: WireContext,
    scope: Any,
    *,
    url: str,
    method: str | None,
    headers: dict[str, str] | None,
    body: Any,
    default_method: str = "POST",
) -> HttpCall:
    """Render url, headers and body templates into an ``HttpCall``."""
    return HttpCall(
        (method or default_method).upper(),
        render_text(url, scope),
        {str(k): render_text(v, scope) for k, v in headers.items()} if headers else {},
        render(body, scope) if body is not None else None,
    )


async def open_session(ctx: WireContext, config: RESTOpen, policy: ConnectPolicy) -> dict[str, Any]:
    """Make ``session.open`` and set each capture as ``session.NAME`` in ``ctx.scope``.

    Any target type may call this before it connects; a 4xx answer or a missing capture is a
    TargetError, since nothing after it could work.
    """
    import json

    call = render_call(
        ctx, ctx.scope, url=config.url, method=config.method, headers=config.headers, body=config.body
    )
    resp = await request(ctx, policy, call)
    if resp.status_code >= 400:
        raise TargetError(
            ctx.redactor.redact(
                f"session.open answered {resp.status_code} at {call.url}: {snippet(resp.text)}"
            ),
            retryable=False,
        )
    captured: dict[str, Any] = {}
    if not config.capture:
        return captured
    from tamesu.limits import decode_json

    try:
        data = decode_json(resp.text, ctx.limits.json_depth)
    except (json.JSONDecodeError, UnicodeDecodeError):
        kind = resp.headers.get("content-type", "no content type")
        raise TargetError(
            ctx.redactor.redact(f"session.open answered non-JSON ({kind}): {snippet(resp.text)}"),
            retryable=False,
        ) from None
    from tamesu.jsonpath import find

    for name, path in config.capture.items():
        found = find(path, data)
        if not found:
            raise TargetError(
                ctx.redactor.redact(f"session.open answer has nothing at {path} (capture {name})"),
                retryable=False,
            )
        captured[name] = found[0]
        ctx.scope.set(f"session.{name}", found[0])
    return captured


def websocket_closed(conn: Any, limits: Limits) -> tuple[int | None, str]:
    """A closed websocket's code and reason; when tamesu closed it for a message over
    ``limits.answer_size`` (1009), the reason says so."""
    sent = getattr(getattr(conn, "protocol", None), "close_sent", None)
    if sent is not None and sent.code == 1009:
        from tamesu.limits import format_size

        return 1009, (
            f"the agent sent a message larger than {format_size(limits.answer_size)} "
            "(limits.answer_size in tamesu.yaml)"
        )
    return conn.close_code, conn.close_reason or ""


async def connect_websocket(
    ctx: WireContext,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    ping_interval: float | None = 20,
    compression: str | None = "deflate",
) -> Any:
    """One attempt at a websocket to ``url``: ``Retry`` for a refusal, a 5xx, 408 or 429, and any
    other failure a redacted TargetError saying what happened. A message over
    ``limits.answer_size`` closes it with 1009 (``websocket_closed`` tells)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidHandshake, InvalidStatus

    timeout = ctx.turn_timeout
    try:
        return await connect(
            url,
            additional_headers=_cookie_headers(ctx, url, headers or {}) or None,
            open_timeout=timeout,
            proxy=None,
            max_size=ctx.limits.answer_size,
            close_timeout=2,
            ping_interval=ping_interval,
            compression=compression,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        body = snippet(exc.response.body.decode("utf-8", "replace")) if exc.response.body else ""
        if _retryable_status(status):
            raise status_retry(status, exc.response.headers, body) from None
        raise TargetError(
            ctx.redactor.redact(f"websocket handshake at {url} answered {status}: {body}").rstrip(": "),
            retryable=False,
        ) from None
    except (OSError, InvalidHandshake) as exc:
        if isinstance(exc, ConnectionRefusedError) or "refused" in str(exc).lower():
            raise Retry(f"connection refused at {url}") from None
        raise Retry(f"cannot open a websocket at {url}: {exc}") from None
    except asyncio.TimeoutError:
        raise TargetError(
            ctx.redactor.redact(f"no websocket handshake within {format_duration(timeout)} at {url}"),
            retryable=True,
        ) from None


async def open_websocket(
    ctx: WireContext,
    policy: ConnectPolicy,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    ping_interval: float | None = 20,
    compression: str | None = "deflate",
) -> Any:
    """A websocket to ``url``: refusals, 5xx, 408 and 429 retried per ``connect:``; every failure a
    redacted TargetError saying what happened. A message over ``limits.answer_size`` closes it
    with 1009 (``websocket_closed`` tells)."""
    return await retrying(
        ctx,
        policy,
        lambda: connect_websocket(
            ctx, url, headers=headers, ping_interval=ping_interval, compression=compression
        ),
    )
