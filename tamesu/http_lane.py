"""The fast lane: plain JSON turns over kept-alive HTTP/1.1, each answer read whole at once.

A turn of a REST agent is one request and one whole answer, thousands of times a run. aiohttp's
``ClientSession.request`` spends about 0.19 ms of CPU on each (URL and header objects, a task to
write the body, timers, tracing, cookie filtering: features a turn does not use); a kept-alive
connection that writes the request in one call and parses the answer with llhttp (``httptools``,
uvicorn's parser) spends about 0.07 ms (``benchmarks/conversations.py``). Everything else (streams,
websockets, proxies, redirects, auth) stays on httpx and aiohttp.

Errors are httpx's, raised as its transports raise them, so callers handle one family:
``ConnectError`` (refused, unreachable; the OS error is the cause), ``ConnectTimeout``,
``RemoteProtocolError`` (the agent closed the connection before a whole answer, or sent something
that is not HTTP; a close before any byte has a ``ConnectionResetError`` cause) and
``LocalProtocolError`` (a header that cannot be sent). A cancelled exchange closes its connection.
An answer longer than the request's ``limits.answer_size`` (counted as it arrives, and again once
decompressed) is a ``LimitExceeded`` and its connection is closed, so an endless body costs no more.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import deque
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

import httptools
import httpx
from multidict import CIMultiDict

from tamesu.limits import Limits

__all__ = ["Answer", "Pool"]

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
"""Methods sent again at once on a fresh connection when a kept-alive one turns out closed."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_BAD_HEADER = re.compile(r"[\r\n\0]")
_BAD_NAME = re.compile(r"[\s:\0]")
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding"})


class Answer(NamedTuple):
    """A whole answer: status, headers (case-insensitive, repeated names kept) and the body,
    decoded as its Content-Encoding says."""

    status: int
    headers: CIMultiDict[str]
    content: bytes


class _Target(NamedTuple):
    key: tuple[str, str, int]
    host: str
    port: int
    tls: bool
    host_header: str
    path: str


@lru_cache(maxsize=1024)
def _target(url: str) -> _Target:
    """Where ``url`` goes; parsed once per distinct URL (yarl quotes the path as httpx would)."""
    from yarl import URL

    parsed = URL(url)
    scheme = parsed.scheme
    if scheme not in ("http", "https") or not parsed.host:
        raise httpx.UnsupportedProtocol(f"cannot send a request to {url!r}")
    port = parsed.port or (443 if scheme == "https" else 80)
    host_header = parsed.raw_host or parsed.host
    if ":" in host_header:
        host_header = f"[{host_header}]"
    if not parsed.is_default_port():
        host_header = f"{host_header}:{port}"
    path = parsed.raw_path_qs or "/"
    return _Target((scheme, parsed.host, port), parsed.host, port, scheme == "https", host_header, path)


def _head(method: str, target: _Target, headers: Mapping[str, str], length: int | None) -> bytes:
    """The request line and headers."""
    block, has_host = _header_block(tuple(headers.items()))
    host = "" if has_host else f"Host: {target.host_header}\r\n"
    size = "" if length is None else f"Content-Length: {length}\r\n"
    return f"{method} {target.path} HTTP/1.1\r\n{host}{block}{size}\r\n".encode()


@lru_cache(maxsize=512)
def _header_block(items: tuple[tuple[str, str], ...]) -> tuple[str, bool]:
    """The header lines (without the ones the lane writes itself) and whether Host is among them;
    made once per distinct set of headers. A header with a line break in it is refused, not sent."""
    lines = []
    has_host = False
    for name, value in items:
        low = name.lower()
        if low in _OWN_HEADERS:
            if low != "host":
                continue
            has_host = True
        if _BAD_HEADER.search(value) or _BAD_NAME.search(name) or not name:
            raise httpx.LocalProtocolError(f"the header {name!r} cannot be sent: it has a line break")
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines), has_host


class _Connection(asyncio.Protocol):
    """One kept-alive connection: at most one exchange in flight."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[Answer] | None = None
        self.on_status: Callable[[int], None] | None = None
        self.status = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.body_size = 0
        self.max_body: int | None = None
        self.too_large = False
        self.received = False
        self.headers_done = False
        self.closed = False
        self.uses = 0
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received = True
        if self.too_large:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"the answer is not valid HTTP: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.closed:
            return
        self.closed = True
        self.pool._lost()
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.headers_done and self._ends_at_close():
            self._finish(keep_alive=False)
            return
        if not self.received:
            error = httpx.RemoteProtocolError("the agent closed the connection without answering")
            error.__cause__ = exc or ConnectionResetError("connection closed by the agent")
        else:
            error = httpx.RemoteProtocolError("the agent closed the connection in the middle of its answer")
            error.__cause__ = exc
        waiter.set_exception(error)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if self.status < 200:
            return
        self.headers_done = True
        if self.on_status is not None:
            self.on_status(self.status)
        if self.max_body is not None:
            for name, value in self.raw_headers:
                if name.lower() == b"content-length" and value.strip().isdigit():
                    if int(value) > self.max_body:
                        self._refuse()

    def on_body(self, body: bytes) -> None:
        if self.too_large:
            return
        self.body_size += len(body)
        if self.max_body is not None and self.body_size > self.max_body:
            self._refuse()
            return
        self.body.append(body)

    def _refuse(self) -> None:
        """The answer is over the size allowed: stop reading it and fail the exchange."""
        self.too_large = True
        self.body = []
        self._fail(_TooLarge())
        self.abort()

    def on_message_complete(self) -> None:
        if self.status < 200:  # an interim answer (100 Continue): the real one follows
            self.raw_headers = []
            return
        self._finish(keep_alive=self.parser.should_keep_alive())

    def _ends_at_close(self) -> bool:
        """The answer has neither a length nor chunks: its body is everything until the close."""
        for name, value in self.raw_headers:
            low = name.lower()
            if low == b"content-length" or (low == b"transfer-encoding" and b"chunked" in value.lower()):
                return False
        return self.status not in (204, 304)

    def _finish(self, *, keep_alive: bool) -> None:
        waiter, self.waiter = self.waiter, None
        headers: CIMultiDict[str] = CIMultiDict(
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in self.raw_headers
        )
        content = self.body[0] if len(self.body) == 1 else b"".join(self.body)
        self.raw_headers, self.body, self.headers_done, self.body_size = [], [], False, 0
        if not keep_alive:
            self.close()
        if waiter is not None and not waiter.done():
            waiter.set_result(Answer(self.status, headers, content))

    def _fail(self, error: Exception) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def start(self, on_status: Callable[[int], None] | None, max_body: int | None) -> asyncio.Future[Answer]:
        self.waiter = self.pool.loop.create_future()
        self.on_status = on_status
        self.max_body = max_body
        self.status, self.received, self.headers_done = 0, False, False
        self.uses += 1
        return self.waiter

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class _TooLarge(Exception):
    """An answer went past the exchange's ``max_body`` (``Pool.request`` says where)."""


def _decoded(status: int, headers: CIMultiDict[str], content: bytes, max_body: int | None) -> bytes:
    """The body as httpx would give it: gzip, deflate (and br, zstd when installed) undone; gzip
    and deflate decompress no further than ``max_body`` (a small bomb cannot fill the memory)."""
    encoding = headers.get("content-encoding")
    if not encoding or encoding.strip().lower() == "identity" or not content:
        return content
    codings = [c.strip().lower() for c in encoding.split(",")]
    if max_body is not None and all(c in ("gzip", "x-gzip", "deflate") for c in codings):
        return _inflated(content, codings, max_body)
    response = httpx.Response(status, headers=list(headers.items()), stream=httpx.ByteStream(content))
    try:
        data = response.read()
    except httpx.DecodingError as exc:
        raise httpx.RemoteProtocolError(f"the answer's body cannot be decoded: {exc}") from exc
    if max_body is not None and len(data) > max_body:
        raise _TooLarge
    return data


def _inflated(content: bytes, codings: list[str], max_body: int) -> bytes:
    """gzip / deflate undone in the reverse order they were applied, each at most ``max_body`` long."""
    import zlib

    for coding in reversed(codings):
        if coding == "deflate":
            # zlib-wrapped as the standard says, or raw deflate as some servers send it
            wbits = zlib.MAX_WBITS if content[:1] and (content[0] & 0x0F) == 8 else -zlib.MAX_WBITS
        else:
            wbits = zlib.MAX_WBITS | 16
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(content, max_body + 1)
        except zlib.error as exc:
            raise httpx.RemoteProtocolError(f"the answer's body cannot be decoded: {exc}") from exc
        if len(out) > max_body or inflater.unconsumed_tail:
            raise _TooLarge
        content = out
    return content


class Pool:
    """Kept-alive connections to any number of agents, bounded as an ``httpx.Limits`` says.

    Bound to the event loop that first uses it; ``close`` closes every connection.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        max_connections: int | None = 1024,
        max_keepalive: int | None = 256,
        keepalive_expiry: float | None = 30.0,
        connect_timeout: float | None = None,
    ) -> None:
        self.ssl_context = ssl_context
        self.max_connections = max_connections or 1 << 30
        self.max_keepalive = 1 << 30 if max_keepalive is None else max_keepalive
        self.keepalive_expiry = keepalive_expiry
        self.connect_timeout = connect_timeout
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._n_idle = 0
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._active: set[_Connection] = set()
        self.closed = False

    async def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        *,
        on_status: Callable[[int], None] | None = None,
        limits: Limits | None = None,
    ) -> Answer:
        """Send one request and read its whole answer. ``on_status`` is called with the status
        as soon as the headers of the final answer have arrived (for time to first byte).
        An answer over ``limits.answer_size`` is a ``LimitExceeded`` (None: no limit).
        HEAD is not taken: llhttp cannot be told that its answer has no body."""
        if method == "HEAD":
            raise ValueError("HEAD requests go through httpx, not the fast lane")
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        target = _target(url)
        if body is None and method in _BODY_METHODS:
            body = b""
        head = _head(method, target, headers, None if body is None else len(body))
        payload = head + body if body else head
        max_body = None if limits is None else limits.answer_size
        while True:
            conn = await self._acquire(target)
            reused = conn.uses > 0
            waiter = conn.start(on_status, max_body)
            self._active.add(conn)
            try:
                conn.transport.write(payload)  # type: ignore[union-attr]
                answer = await waiter
            except _TooLarge:
                conn.abort()
                raise limits.too_large(f"the answer from {url}") from None  # type: ignore[union-attr]
            except httpx.RemoteProtocolError:
                conn.abort()
                if reused and not conn.received and method in IDEMPOTENT:
                    continue  # the agent had closed this kept-alive connection: one fresh try
                raise
            except BaseException:
                conn.abort()  # cancelled or failed mid-exchange: what is on the wire is unknown
                raise
            finally:
                self._active.discard(conn)
            self._park(target, conn)
            if "content-encoding" in answer.headers:
                try:
                    content = _decoded(answer.status, answer.headers, answer.content, max_body)
                except _TooLarge:
                    raise limits.too_large(f"the answer from {url}") from None  # type: ignore[union-attr]
                return answer._replace(content=content)
            return answer

    async def _acquire(self, target: _Target) -> _Connection:
        while True:
            conn = self._pop_idle(target.key)
            if conn is not None:
                return conn
            if self._open < self.max_connections or self._evict_idle():
                break
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if not waiter.done():
                    waiter.cancel()
        self._open += 1
        try:
            return await self._connect(target)
        except BaseException:
            self._lost()
            raise

    async def _connect(self, target: _Target) -> _Connection:
        tls: dict[str, Any] = {}
        if target.tls:
            context = self.ssl_context() if callable(self.ssl_context) else self.ssl_context
            tls = {"ssl": context or ssl.create_default_context(), "server_hostname": target.host}
        if isinstance(self.loop, asyncio.BaseEventLoop):  # uvloop has no Happy Eyeballs to tune
            tls["happy_eyeballs_delay"] = 0.25
        connect = self.loop.create_connection(lambda: _Connection(self), target.host, target.port, **tls)
        try:
            if self.connect_timeout is None:
                _, conn = await connect
            else:
                _, conn = await asyncio.wait_for(connect, self.connect_timeout)
        except asyncio.TimeoutError as exc:
            raise httpx.ConnectTimeout(f"no connection to {target.host}:{target.port} in time") from exc
        except ssl.SSLError as exc:
            raise httpx.ConnectError(f"TLS with {target.host}:{target.port} failed: {exc}") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        if self.closed:
            conn.close()
            raise httpx.ConnectError("the HTTP client is closed")
        return conn

    def _pop_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        stack = self._idle.get(key)
        expiry = self.keepalive_expiry
        while stack:
            conn = stack.pop()
            self._n_idle -= 1
            if conn.closed or conn.transport is None or conn.transport.is_closing():
                continue
            if expiry is not None and time.monotonic() - conn.idle_since > expiry:
                conn.close()
                continue
            return conn
        return None

    def _park(self, target: _Target, conn: _Connection) -> None:
        """Keep ``conn`` for the next request to the same place, or close it."""
        if conn.closed or self.closed or self._n_idle >= self.max_keepalive:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        self._idle.setdefault(target.key, []).append(conn)
        self._n_idle += 1
        self._wake()

    def _evict_idle(self) -> bool:
        """Close an idle connection to some other place to make room (at the connection limit)."""
        for stack in self._idle.values():
            while stack:
                conn = stack.pop(0)
                self._n_idle -= 1
                if not conn.closed:
                    conn.abort()
                    self._open -= 1
                    conn.closed = True
                    return True
        return False

    def _lost(self) -> None:
        self._open -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def close(self) -> None:
        """Close every connection; requests in flight fail with RemoteProtocolError."""
        self.closed = True
        for stack in self._idle.values():
            for conn in stack:
                conn.close()
        self._idle.clear()
        self._n_idle = 0
        for conn in list(self._active):
            conn.abort()
