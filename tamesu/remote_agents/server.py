"""Serving remote agents: one ASGI server per address and event loop, shared by the runs.

Each run mounts its remote agents on the server under a path of their own (``/<prefix>/``), so
runs in parallel keep apart and every message lands in the right transcript; an agent with a
fixed ``addr`` (configured by hand in the agent under test, without a prefix) is mounted at the
root, and runs take turns on that address (``lock``). Before a request reaches the agent (the
a2a-sdk's Starlette routes) the server checks the agent's bearer ``token`` (every request but the
public card's; 401 without it) and reads the body within ``answer_size`` (413) and ``json_depth``
(400): the agent under test is untrusted input. uvicorn serves the socket tamesu binds, without
its signal handling, and stops at once when the last run leaves.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import socket
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.limits import DEFAULT_LIMITS, LimitExceeded, Limits, check_json_depth

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Receive = Callable[[], Awaitable[dict[str, Any]]]
    Send = Callable[[dict[str, Any]], Awaitable[None]]

__all__ = ["Mount", "RemoteServer", "split_addr"]

CARD_PATH = "/.well-known/agent-card.json"
STOP_GRACE = 1.0
"""Seconds requests still in flight get to finish when the server stops."""


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if not host:
        return addr or "127.0.0.1", 0
    return host.strip("[]") or "127.0.0.1", int(port or 0)


@dataclass
class Mount:
    """One run's remote agent on a server."""

    prefix: str
    """The first path segment that reaches it; "" at the root (a fixed ``addr``)."""
    app: Any
    token: str | None
    limits: Limits = DEFAULT_LIMITS


class RemoteServer:
    """One address's server and the agents mounted on it; see the module docstring."""

    _all: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, RemoteServer]] = (
        weakref.WeakKeyDictionary()
    )
    """Each event loop's servers by address; kept while the loop lives, so runs waiting for a
    fixed address wait on the one lock that address has."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.url = ""
        self.mounts: dict[str, Mount] = {}
        self.lock = asyncio.Lock()
        """Held by the run whose agents use a fixed address, for the whole run."""
        self._server: Any = None
        self._start_lock = asyncio.Lock()

    @classmethod
    def shared(cls, addr: str) -> RemoteServer:
        servers = cls._all.setdefault(asyncio.get_running_loop(), {})
        if addr not in servers:
            servers[addr] = cls(addr)
        return servers[addr]

    async def add(self, mount: Mount) -> None:
        async with self._start_lock:
            if self._server is None:
                await self._start()
            self.mounts[mount.prefix] = mount

    async def remove(self, mount: Mount) -> None:
        async with self._start_lock:
            if self.mounts.get(mount.prefix) is mount:
                del self.mounts[mount.prefix]
            if not self.mounts and self._server is not None:
                server, self._server = self._server, None
                await _stop(server)

    async def _start(self) -> None:
        import uvicorn

        host, port = split_addr(self.addr)
        try:
            sock = socket.create_server(
                (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
            )
        except OSError as exc:
            raise TargetError(
                f"cannot serve remote agents on {self.addr}: {exc.strerror or exc}",
                retryable=False,
                kind="config",
            ) from None
        config = uvicorn.Config(
            self, lifespan="off", log_level="warning", access_log=False, timeout_keep_alive=30
        )
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        bound_host, bound_port = sock.getsockname()[:2]
        shown = "127.0.0.1" if bound_host in ("0.0.0.0", "::", "") else bound_host
        self.url = f"http://{f'[{shown}]' if ':' in shown else shown}:{bound_port}"
        self._server = server

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        first, _, _ = path.lstrip("/").partition("/")
        mount = self.mounts.get(first) if first else None
        if mount is not None:
            root = f"/{first}"
            scope = {**scope, "root_path": scope.get("root_path", "") + root}
            if path == root:
                scope["path"] = path = root + "/"
            route = path[len(root) :]
        else:
            mount, route = self.mounts.get(""), path
        if mount is None:
            await _answer(send, 404, {"error": "no remote agent here"})
            return
        if mount.token is not None and route != CARD_PATH and not _authorized(scope, mount.token):
            await _answer(send, 401, {"error": "this agent wants a bearer token"}, bearer=True)
            return
        body = await _body(receive, mount.limits)
        if isinstance(body, int):
            await _answer(send, body, {"error": "request too large or nested too deep"})
            return
        await mount.app(scope, _replay(body, receive), send)


def _authorized(scope: dict[str, Any], token: str) -> bool:
    wanted = f"Bearer {token}".encode()
    given = next((v for k, v in scope.get("headers", []) if k == b"authorization"), b"")
    return hmac.compare_digest(given, wanted)


async def _body(receive: Receive, limits: Limits) -> bytes | int:
    """The request body, or the status that refuses it (413 too large, 400 nested too deep)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limits.answer_size:
            return 413
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    try:
        check_json_depth(body, limits.json_depth)
    except LimitExceeded:
        return 400
    return body


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body read already, then the connection's own messages (a disconnect ends a stream)."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _answer(send: Send, status: int, payload: dict[str, Any], *, bearer: bool = False) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _stop(server: Any) -> None:
    """Stop listening, close idle connections, give requests in flight ``STOP_GRACE`` to finish."""
    server.should_exit = True
    for listener in server.servers:
        listener.close()
    for connection in list(server.server_state.connections):
        connection.shutdown()
    tasks = list(server.server_state.tasks)
    if tasks:
        await asyncio.wait(tasks, timeout=STOP_GRACE)
        for task in tasks:
            task.cancel()
