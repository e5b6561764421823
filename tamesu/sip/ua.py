"""The user agent: transactions over ``SipSockets``, and the calls (dialogs) they belong to.

A client transaction sends a request (again after T1, 2·T1, ... up to T2 on UDP, as RFC 3261's
timers A and E say) until a final response or ``TIMER_B``; an INVITE answered with an error is
acknowledged on the same branch. A request that arrives again (UDP retransmission) is answered
with the response already given. Requests of a known Call-ID go to their ``SipCall``; a new
INVITE goes to ``on_invite`` (inbound calls), and nothing else is accepted (481).

``trace(direction, msg)`` sees every message of a call, sent and received, for the transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING

from .message import SipMessage, SipParseError
from .sockets import Peer, SipSockets

if TYPE_CHECKING:
    import ssl

    from .call import SipCall

__all__ = ["T1", "TIMER_B", "UserAgent", "new_branch", "new_tag"]

T1 = 0.5
T2 = 4.0
TIMER_B = 32.0
_ANSWERED = 512
_ERRORS = 50


def new_branch() -> str:
    return "z9hG4bK" + secrets.token_hex(8)


def new_tag() -> str:
    return secrets.token_hex(6)


class Transaction:
    def __init__(self, request: SipMessage, peer: Peer, on_provisional: Callable[[SipMessage], None] | None):
        self.request = request
        self.peer = peer
        self.on_provisional = on_provisional
        self.final: asyncio.Future[SipMessage] = asyncio.get_running_loop().create_future()
        self.provisional = False
        self.task: asyncio.Task[None] | None = None


class UserAgent:
    """One SIP endpoint on ``host``: ``open`` binds it, ``request`` / ``respond`` talk through it."""

    def __init__(
        self, host: str = "127.0.0.1", *, tls: ssl.SSLContext | None = None, user: str = "tamesu"
    ) -> None:
        self.host = host
        self.user = user
        self.sockets = SipSockets(
            host, on_message=self._received, on_error=self._error, on_unreachable=self._unreachable, tls=tls
        )
        self.transactions: dict[tuple[str, str], Transaction] = {}
        self.calls: dict[str, SipCall] = {}
        self.on_invite: Callable[[SipMessage, Peer], None] | None = None
        self.errors: deque[str] = deque(maxlen=_ERRORS)
        self._answered: OrderedDict[tuple[str, str], tuple[SipMessage, Peer]] = OrderedDict()
        self._tasks: set[asyncio.Task[object]] = set()

    def spawn(self, coro: Coroutine[object, object, object]) -> None:
        """Run ``coro`` in the background, held until done (and cancelled by ``close``)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def open(self, port: int = 0, *, tcp: bool = True) -> None:
        await self.sockets.open(port, tcp=tcp)

    @property
    def port(self) -> int:
        return self.sockets.port

    def contact(self, transport: str = "udp") -> str:
        suffix = "" if transport == "udp" else f";transport={transport}"
        scheme = "sips" if transport == "tls" else "sip"
        return f"<{scheme}:{self.user}@{self.host}:{self.port}{suffix}>"

    def via(self, peer: Peer, branch: str) -> str:
        port = self.sockets.local_port(peer) if peer.transport != "udp" else self.port
        return f"SIP/2.0/{peer.transport.upper()} {self.host}:{port};branch={branch};rport"

    def _trace(self, direction: str, msg: SipMessage) -> None:
        call = self.calls.get(msg.call_id)
        if call is not None:
            call.trace(direction, msg)

    def _error(self, text: str) -> None:
        """A message that could not be read: kept, and the end of a call still waiting for the
        answer of the peer that sent it (else the call would end as no_answer, the cause unsaid)."""
        self.errors.append(text)
        for t in self.transactions.values():
            call = self.calls.get(t.request.call_id)
            dialling = call is not None and call.state in ("new", "ringing")
            if (
                dialling
                and t.request.method == "INVITE"
                and text.startswith(f"from {t.peer}:")
                and not t.final.done()
            ):
                t.final.set_exception(SipParseError(text))

    def _unreachable(self, peer: Peer, why: str) -> None:
        """Fail every open client transaction to ``peer``: nothing there will answer."""
        for t in list(self.transactions.values()):
            if t.peer == peer and not t.final.done():
                t.final.set_exception(ConnectionRefusedError(f"{t.request.method} to {peer}: {why}"))

    # Client transactions.

    async def request(
        self,
        msg: SipMessage,
        peer: Peer,
        *,
        on_provisional: Callable[[SipMessage], None] | None = None,
        timeout: float | None = TIMER_B,
    ) -> SipMessage:
        """Send ``msg`` (its Via is set here) and wait for the final response."""
        t = self.start(msg, peer, on_provisional=on_provisional)
        try:
            return await asyncio.wait_for(asyncio.shield(t.final), timeout)
        finally:
            if t.final.done():
                self.end_transaction(t)

    def start(
        self, msg: SipMessage, peer: Peer, *, on_provisional: Callable[[SipMessage], None] | None = None
    ) -> Transaction:
        """Send ``msg`` as a new client transaction and return it (its ``final`` future)."""
        branch = new_branch()
        msg.remove("via")
        msg.headers.insert(0, ("Via", self.via(peer, branch)))
        t = Transaction(msg, peer, on_provisional)
        self.transactions[(branch, msg.method)] = t
        t.task = asyncio.get_running_loop().create_task(self._send_until_answered(t))
        return t

    def end_transaction(self, t: Transaction) -> None:
        self.transactions.pop((t.request.branch, t.request.method), None)
        if t.task is not None:
            t.task.cancel()

    async def _send_until_answered(self, t: Transaction) -> None:
        interval = T1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMER_B
        try:
            while not t.final.done():
                await self.send(t.request, t.peer)
                if t.peer.transport != "udp":
                    await asyncio.sleep(max(0.0, deadline - loop.time()))
                elif t.provisional and t.request.method == "INVITE":
                    await asyncio.sleep(max(0.0, deadline - loop.time()))
                else:
                    await asyncio.sleep(interval)
                    interval = min(interval * 2, T2 if t.request.method != "INVITE" else interval * 2)
                if loop.time() >= deadline and not t.final.done():
                    t.final.set_exception(TimeoutError(f"no answer to {t.request.method} from {t.peer}"))
        except (ConnectionError, OSError) as exc:
            if not t.final.done():
                if isinstance(exc, ConnectionRefusedError):
                    why = "nothing listens there (connection refused)"
                    t.final.set_exception(ConnectionRefusedError(f"{t.request.method} to {t.peer}: {why}"))
                else:
                    t.final.set_exception(ConnectionError(f"{t.request.method} to {t.peer}: {exc}"))

    async def send(self, msg: SipMessage, peer: Peer) -> None:
        self._trace("sent", msg)
        await self.sockets.send(msg, peer)

    def ack_error(self, t: Transaction, response: SipMessage) -> None:
        """The ACK of an INVITE answered with an error: same branch, same CSeq number (RFC 3261 17.1.1.3)."""
        req = t.request
        ack = SipMessage(method="ACK", uri=req.uri)
        for name in ("via", "from", "call-id", "route", "max-forwards"):
            for value in req.get_all(name) if name == "route" else [req.get(name)]:
                if value:
                    ack.add(name.title() if name != "call-id" else "Call-ID", value)
        ack.remove("via")
        ack.headers.insert(0, ("Via", req.get_all("via")[0]))
        ack.add("To", response.get("to"))
        ack.add("CSeq", f"{req.cseq[0]} ACK")
        self.spawn(self._quietly(ack, t.peer))

    async def _quietly(self, msg: SipMessage, peer: Peer) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            await self.send(msg, peer)

    # Server side.

    async def respond(
        self,
        request: SipMessage,
        peer: Peer,
        status: int,
        reason: str,
        *,
        tag: str = "",
        headers: tuple[tuple[str, str], ...] = (),
        body: bytes = b"",
    ) -> SipMessage:
        response = SipMessage(status=status, reason=reason)
        for value in request.get_all("via"):
            response.add("Via", value)
        to = request.get("to")
        if tag and ";tag=" not in to.replace(" ", ""):
            to = f"{to};tag={tag}"
        response.add("From", request.get("from"))
        response.add("To", to)
        response.add("Call-ID", request.call_id)
        response.add("CSeq", request.get("cseq"))
        for value in request.get_all("record-route") if 100 < status < 300 else ():
            response.add("Record-Route", value)
        response.headers.extend(headers)
        response.body = body
        if request.method != "ACK" and status >= 200:
            self._answered[(request.branch, request.method)] = (response, peer)
            while len(self._answered) > _ANSWERED:
                self._answered.popitem(last=False)
        with contextlib.suppress(ConnectionError, OSError):
            await self.send(response, peer)
        return response

    def _received(self, msg: SipMessage, peer: Peer) -> None:
        self._trace("received", msg)
        if not msg.is_request:
            t = self.transactions.get((msg.branch, msg.cseq[1]))
            if t is None:
                call = self.calls.get(msg.call_id)
                if call is not None and msg.cseq[1] == "INVITE" and 200 <= msg.status < 300:
                    call.reacknowledge(msg)
                return
            if msg.status < 200:
                t.provisional = True
                if t.on_provisional is not None:
                    t.on_provisional(msg)
                return
            if t.request.method == "INVITE" and msg.status >= 300:
                self.ack_error(t, msg)
            if not t.final.done():
                t.final.set_result(msg)
            return
        key = (msg.branch, msg.method)
        if msg.method != "ACK" and key in self._answered:
            response, to = self._answered[key]
            self.spawn(self._quietly(response, to))
            return
        call = self.calls.get(msg.call_id)
        if call is not None:
            call.received(msg, peer)
        elif msg.method == "INVITE" and self.on_invite is not None and not _has_tag(msg.get("to")):
            self.on_invite(msg, peer)
        elif msg.method != "ACK":
            self.spawn(self.respond(msg, peer, 481, "Call/Transaction Does Not Exist", tag=new_tag()))

    async def close(self) -> None:
        for t in list(self.transactions.values()):
            self.end_transaction(t)
        for task in list(self._tasks):
            task.cancel()
        await self.sockets.close()


def _has_tag(value: str) -> bool:
    return ";tag=" in value.replace(" ", "")
