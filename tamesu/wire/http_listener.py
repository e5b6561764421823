"""A local HTTP server that agents call: the API of ``response.listen`` and a2a ``push``.

One aiohttp server per address and event loop is shared by every session of the process that
listens there, whatever kind it is. Each kind of session answers the requests that are its own
(``Desk.serve``): a push session recognises its requests by their notification token, so its kind
is asked first; a ``response.listen`` session takes the rest. A request no session takes is
answered ``{"ok": true}`` and read by nobody. Bodies are read within ``limits.answer_size`` (of the
session that started the server; aiohttp refuses a larger one).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from tamesu.errors import TargetError
from tamesu.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["DEFAULT_ADDR", "Desk", "Listener", "split_addr"]

DEFAULT_ADDR = "127.0.0.1:0"
S = TypeVar("S")


def split_addr(addr: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``, or a bare host) -> (host, port); port 0 is a free one."""
    host, _, port = addr.rpartition(":")
    if not host:
        return addr or "127.0.0.1", 0
    return host.strip("[]") or "127.0.0.1", int(port or 0)


class Desk(Protocol):
    """A kind of session on a listener (its class): which requests it takes, and their answers."""

    narrow: ClassVar[bool]
    """True when the kind knows its requests by a mark of their own (asked before the others)."""

    @classmethod
    async def serve(cls, listener: Listener, request: web.Request) -> web.StreamResponse | None:
        """The answer to ``request`` when a session of this kind takes it, else None."""
        ...


class Listener:
    """One local server; sessions register and unregister, the last one out stops it."""

    _all: ClassVar[dict[tuple[int, str], Listener]] = {}

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.url = ""
        """``http://host:port`` (no trailing slash)."""
        self.limits = DEFAULT_LIMITS
        self.sessions: list[Any] = []
        """Every kind's sessions, oldest first."""
        self._runner: web.AppRunner | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def shared(cls, addr: str | None) -> Listener:
        addr = addr or DEFAULT_ADDR
        key = (id(asyncio.get_running_loop()), addr)
        if key not in cls._all:
            cls._all[key] = cls(addr)
        return cls._all[key]

    def of(self, kind: type[S]) -> list[S]:
        """The sessions of one kind, oldest first."""
        return [s for s in self.sessions if isinstance(s, kind)]

    async def add(self, session: Desk, limits: Limits) -> None:
        async with self._lock:
            if self._runner is None:
                self.limits = limits
                await self._start()
            self.sessions.append(session)

    async def remove(self, session: Any) -> None:
        async with self._lock:
            if session in self.sessions:
                self.sessions.remove(session)
            if not self.sessions and self._runner is not None:
                runner, self._runner = self._runner, None
                self._all.pop((id(asyncio.get_running_loop()), self.addr), None)
                await runner.cleanup()

    async def _start(self) -> None:
        from aiohttp import web

        host, port = split_addr(self.addr)
        app = web.Application(client_max_size=self.limits.answer_size)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            await runner.cleanup()
            raise TargetError(
                f"cannot listen on {self.addr}: {exc.strerror or exc}", retryable=False, kind="config"
            ) from None
        bound_host, bound_port = runner.addresses[0][:2]
        shown = "127.0.0.1" if bound_host in ("0.0.0.0", "::", "") else bound_host
        shown = f"[{shown}]" if ":" in shown else shown
        self.url = f"http://{shown}:{bound_port}"
        self._runner = runner

    def _desks(self) -> list[type[Desk]]:
        kinds: list[type[Desk]] = []
        for session in self.sessions:
            if type(session) not in kinds:
                kinds.append(type(session))
        return sorted(kinds, key=lambda kind: not kind.narrow)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        for desk in self._desks():
            answer = await desk.serve(self, request)
            if answer is not None:
                return answer
        return web.json_response({"ok": True})
