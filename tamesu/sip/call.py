"""One call (a SIP dialog) and its media: placed (``dial``) or answered (``answer``), then the
in-dialog requests of either side until one of them hangs up.

What ends a call is one of ``EndReason``: the agent hung up (BYE, or declined with 603), the caller
(tamesu) did, ``max_call_duration`` ran out (timeout), the agent's side failed (error), it did not
answer within the ring timeout (no_answer: tamesu CANCELs) or it was busy (486 / 600). A REFER is
accepted (202), its target recorded as the transfer, and reported back as done in NOTIFYs with a
``message/sipfrag`` body; tamesu does not dial the transfer target. A re-INVITE or UPDATE with a
``sendonly`` / ``inactive`` stream puts tamesu on hold (it stops sending RTP) until the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Literal

from .digest import authorization, parse_challenge
from .message import NameAddr, SipMessage, SipParseError, SipUri
from .rtp import DIGITS, RtpStream
from .sdp import CODECS, MediaOffer, answer_direction, build_sdp, parse_sdp
from .sockets import Peer
from .ua import T1, UserAgent, new_tag

__all__ = ["Credentials", "EndReason", "SipCall", "callee_ends", "peer_of"]

EndReason = Literal["agent", "caller", "timeout", "error", "no_answer", "busy"]
ALLOW = "INVITE, ACK, CANCEL, BYE, OPTIONS, REFER, NOTIFY, UPDATE, INFO"
_CANCEL_WAIT = 4.0
_SIGNAL = re.compile(r"Signal\s*=\s*([0-9*#A-Da-d])")
_SECONDS = re.compile(r"\s*(\d{1,6})")


def _retry_after(value: str) -> float | None:
    """A SIP Retry-After (``120 (in a meeting);duration=60``): its seconds, or None."""
    found = _SECONDS.match(value or "")
    return float(found.group(1)) if found else None


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str


def peer_of(uri: SipUri, transport: str | None = None) -> Peer:
    """Where a request for ``uri`` goes: its host and port (5060, or 5061 over TLS) and transport."""
    t = (transport or uri.transport).lower()
    return Peer(t, uri.host, uri.port or (5061 if t == "tls" else 5060))


def callee_ends(invite: SipMessage) -> tuple[NameAddr, NameAddr]:
    """(local, remote) of the dialog that answers ``invite``: its To with a new tag, its From."""
    local = NameAddr.parse(invite.get("to"))
    local.params["tag"] = new_tag()
    return local, NameAddr.parse(invite.get("from"))


class SipCall:
    """A dialog; ``ended`` is set once it is over, with ``end_reason`` and ``end_detail``."""

    def __init__(
        self,
        ua: UserAgent,
        rtp: RtpStream,
        *,
        peer: Peer,
        call_id: str,
        local: NameAddr,
        remote: NameAddr,
        credentials: Credentials | None = None,
    ) -> None:
        self.ua = ua
        self.rtp = rtp
        self.peer = peer
        self.call_id = call_id
        self.local = local
        self.remote = remote
        self.credentials = credentials
        self.remote_target = remote.uri
        self.routes: list[str] = []
        self.cseq = 0
        self.state: Literal["new", "ringing", "connected", "ended"] = "new"
        self.encoding = "mulaw"
        self.held = False
        self.sdp_version = 1
        self.end_reason: EndReason | None = None
        self.end_detail = ""
        self.full = False
        """The agent answered 503: it has no room for another call now (``retry_after`` seconds)."""
        self.retry_after: float | None = None
        self.unreachable = False
        """Nothing listens at the agent's address (ICMP port unreachable, TCP refused): not a call
        that ended, an agent that is not there."""
        self.ended = asyncio.Event()
        self.answered = asyncio.Event()
        self.transfers: list[str] = []
        self.on_trace: Callable[[str, SipMessage], None] = lambda direction, msg: None
        self.on_transfer: Callable[[str], None] = lambda target: None
        self.on_hold: Callable[[bool], None] = lambda held: None
        self.on_end: Callable[[], None] = lambda: None
        self._invite: SipMessage | None = None
        self._ok: SipMessage | None = None
        self._acked = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        ua.calls[call_id] = self

    def trace(self, direction: str, msg: SipMessage) -> None:
        self.on_trace(direction, msg)

    def end(self, reason: EndReason, detail: str = "") -> None:
        if self.end_reason is None:
            self.end_reason, self.end_detail = reason, detail
        self.state = "ended"
        self.rtp.sending = False
        if not self.ended.is_set():
            self.ended.set()
            self.on_end()

    # Placing a call.

    async def dial(self, request_uri: str, *, ring_timeout: float) -> None:
        """INVITE the agent and wait up to ``ring_timeout`` for it to answer; ``state`` says how it went."""
        offer = build_sdp(self.ua.host, self.rtp.port)
        auth: tuple[str, str] | None = None
        for _ in range(2):
            invite = self._new_request("INVITE", request_uri, body=offer)
            if auth is not None:
                invite.add(*auth)
            self._invite = invite
            t = self.ua.start(invite, self.peer, on_provisional=self._ringing)
            try:
                response = await asyncio.wait_for(asyncio.shield(t.final), ring_timeout)
            except asyncio.TimeoutError:
                await self._cancel(t)
                return
            except ConnectionRefusedError as exc:
                self.unreachable = True
                self.end("error", str(exc))
                return
            except (TimeoutError, ConnectionError, OSError) as exc:
                self.end("error", str(exc))
                return
            except SipParseError as exc:
                self.end("error", f"the agent's answer could not be read: {exc}")
                await self._cancel(t)
                return
            finally:
                if t.final.done():
                    self.ua.end_transaction(t)
            if response.status in (401, 407) and self.credentials is not None and auth is None:
                auth = self._authorize(response, "INVITE", request_uri)
                if auth is None:
                    self.end("error", f"{response.status} {response.reason}")
                    return
                continue
            self._final(response)
            return

    def _ringing(self, response: SipMessage) -> None:
        if response.status in (180, 183) and self.state == "new":
            self.state = "ringing"

    def _authorize(self, response: SipMessage, method: str, uri: str) -> tuple[str, str] | None:
        header = "WWW-Authenticate" if response.status == 401 else "Proxy-Authenticate"
        creds = self.credentials
        assert creds is not None
        try:
            value = authorization(
                parse_challenge(response.get(header)),
                method=method,
                uri=uri,
                username=creds.username,
                password=creds.password,
            )
        except SipParseError as exc:
            self.ua.errors.append(f"{header}: {exc}")
            return None
        return ("Authorization" if response.status == 401 else "Proxy-Authorization", value)

    def _final(self, response: SipMessage) -> None:
        status = response.status
        if 200 <= status < 300:
            try:
                self.remote = NameAddr.parse(response.get("to"))
                contact = response.get("contact")
                if contact:
                    self.remote_target = NameAddr.parse(contact).uri
                self.routes = list(reversed(response.get_all("record-route")))
                self._media(parse_sdp(response.body))
            except SipParseError as exc:
                self._ack(response)
                self.end("error", f"the agent's answer: {exc}")
                self._spawn(self._bye())
                return
            self._ack(response)
            self._connected()
            return
        detail = f"{status} {response.reason}"
        if status == 503:
            self.full = True
            self.retry_after = _retry_after(response.get("retry-after"))
        if status in (486, 600):
            self.end("busy", detail)
        elif status in (408, 480, 487):
            self.end("no_answer", detail)
        elif status == 603:
            self.end("agent", detail)
        else:
            self.end("error", detail)

    async def _cancel(self, t: object) -> None:
        invite = self._invite
        assert invite is not None
        cancel = SipMessage(method="CANCEL", uri=invite.uri)
        cancel.add("Via", invite.get_all("via")[0])
        for name in ("From", "To", "Call-ID", "Max-Forwards"):
            cancel.add(name, invite.get(name))
        for route in invite.get_all("route"):
            cancel.add("Route", route)
        cancel.add("CSeq", f"{invite.cseq[0]} CANCEL")
        with contextlib.suppress(ConnectionError, OSError):
            await self.ua.send(cancel, self.peer)
        final = getattr(t, "final", None)
        response = None
        if final is not None:
            with contextlib.suppress(
                asyncio.TimeoutError, TimeoutError, ConnectionError, OSError, SipParseError
            ):
                response = await asyncio.wait_for(asyncio.shield(final), _CANCEL_WAIT)
        if final is not None:
            self.ua.end_transaction(t)  # type: ignore[arg-type]
        if response is not None and 200 <= response.status < 300:
            # answered as the CANCEL crossed it: acknowledge, then hang up
            self._final(response)
            self.end_reason = None
            await self._bye()
        self.end("no_answer", "no answer within ring_timeout")

    def _ack(self, response: SipMessage) -> None:
        invite = self._invite
        assert invite is not None
        ack = self._in_dialog("ACK", cseq=invite.cseq[0])
        self._ok = ack
        self._spawn(self._send(ack))

    def reacknowledge(self, response: SipMessage) -> None:
        """A 200 to our INVITE came again (our ACK was lost): send the ACK again."""
        if self._ok is not None:
            self._spawn(self._send(self._ok))

    def _connected(self) -> None:
        self.state = "connected"
        self.answered.set()

    # Answering a call.

    async def answer(self, invite: SipMessage, peer: Peer) -> bool:
        """Answer an inbound INVITE (100, 180, 200 with the SDP answer); False if no codec fits."""
        self._invite = invite
        self.peer = peer
        self.remote_target = NameAddr.parse(invite.get("contact") or invite.get("from")).uri
        self.routes = invite.get_all("record-route")
        self.cseq = 0
        await self.ua.respond(invite, peer, 100, "Trying")
        try:
            offer = parse_sdp(invite.body)
        except SipParseError as exc:
            await self.ua.respond(invite, peer, 400, "Bad Request", tag=self.local.tag)
            self.end("error", f"the agent's offer: {exc}")
            return False
        if offer.codec is None:
            await self.ua.respond(invite, peer, 488, "Not Acceptable Here", tag=self.local.tag)
            self.end("error", "the agent offered no G.711 codec")
            return False
        await self.ua.respond(invite, peer, 180, "Ringing", tag=self.local.tag)
        self._media(offer)
        body = self._sdp(offer)
        ok = await self.ua.respond(
            invite, peer, 200, "OK", tag=self.local.tag, headers=self._ok_headers(), body=body
        )
        self._spawn(self._until_acked(ok, peer))
        self._connected()
        return True

    def _ok_headers(self) -> tuple[tuple[str, str], ...]:
        return (
            ("Contact", self.ua.contact(self.peer.transport)),
            ("Allow", ALLOW),
            ("Content-Type", "application/sdp"),
        )

    async def _until_acked(self, ok: SipMessage, peer: Peer) -> None:
        """Send the 200 again (T1, 2·T1, ...) until the ACK comes (UDP only)."""
        if peer.transport != "udp":
            return
        interval = T1
        for _ in range(7):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._acked.wait(), interval)
                return
            with contextlib.suppress(ConnectionError, OSError):
                await self.ua.send(ok, peer)
            interval = min(interval * 2, 4.0)

    # The media.

    def _media(self, offer: MediaOffer) -> None:
        codec = offer.codec
        if codec is None:
            raise SipParseError("no G.711 codec in the SDP")
        self.encoding = CODECS[codec]
        self.rtp.payload_type = codec
        self.rtp.dtmf_pt = offer.dtmf_pt
        host = offer.host or self.peer.host
        self.rtp.remote = (host, offer.port) if offer.port and host != "0.0.0.0" else self.rtp.remote
        held = offer.on_hold
        self.rtp.sending = offer.direction in ("sendrecv", "recvonly") and host != "0.0.0.0"
        if held != self.held:
            self.held = held
            self.on_hold(held)

    def _sdp(self, offer: MediaOffer) -> bytes:
        self.sdp_version += 1
        return build_sdp(
            self.ua.host,
            self.rtp.port,
            payloads=(self.rtp.payload_type,),
            dtmf_pt=offer.dtmf_pt,
            direction=answer_direction(offer.direction),
            version=self.sdp_version,
        )

    @property
    def dtmf_events(self) -> bool:
        """Whether the agent takes RFC 4733 telephone-events (else digits go in-band as tones)."""
        return self.rtp.dtmf_pt is not None

    # In-dialog requests.

    def _new_request(self, method: str, uri: str, *, body: bytes = b"") -> SipMessage:
        self.cseq += 1
        msg = SipMessage(method=method, uri=uri)
        msg.add("Max-Forwards", "70")
        msg.add("From", str(self.local))
        msg.add("To", str(self.remote))
        msg.add("Call-ID", self.call_id)
        msg.add("CSeq", f"{self.cseq} {method}")
        msg.add("Contact", self.ua.contact(self.peer.transport))
        msg.add("Allow", ALLOW)
        msg.add("User-Agent", "tamesu")
        for route in self.routes:
            msg.add("Route", route)
        if body:
            msg.add("Content-Type", "application/sdp")
            msg.body = body
        return msg

    def _in_dialog(self, method: str, *, cseq: int | None = None, body: bytes = b"") -> SipMessage:
        if cseq is None:
            msg = self._new_request(method, self.remote_target, body=body)
        else:
            saved, self.cseq = self.cseq, cseq - 1
            msg = self._new_request(method, self.remote_target, body=body)
            self.cseq = saved
        msg.remove("via")
        msg.headers.insert(0, ("Via", self.ua.via(self._target_peer(), "z9hG4bK" + new_tag() + new_tag())))
        return msg

    def _target_peer(self) -> Peer:
        if self.routes:
            try:
                return peer_of(SipUri.parse(NameAddr.parse(self.routes[0]).uri), self.peer.transport)
            except SipParseError:
                return self.peer
        try:
            uri = SipUri.parse(self.remote_target)
        except SipParseError:
            return self.peer
        if uri.host == self.peer.host and uri.port in (None, self.peer.port):
            return self.peer
        return peer_of(uri, self.peer.transport)

    async def _send(self, msg: SipMessage) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            await self.ua.send(msg, self._target_peer())

    async def _transact(
        self, method: str, *, body: bytes = b"", headers: tuple[tuple[str, str], ...] = ()
    ) -> SipMessage | None:
        msg = self._new_request(method, self.remote_target, body=body)
        msg.headers.extend(headers)
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError, ConnectionError, OSError):
            return await self.ua.request(msg, self._target_peer(), timeout=8.0)
        return None

    async def _bye(self) -> None:
        await self._transact("BYE")

    async def hangup(self, reason: EndReason = "caller", detail: str = "") -> None:
        """tamesu hangs up (the caller, or its ``max_call_duration``): BYE once connected
        (CANCEL while ringing is ``dial``'s)."""
        connected = self.state == "connected"
        self.end(reason, detail)
        if connected:
            await self._bye()

    async def hold(self, on: bool) -> bool:
        """Put the agent on hold (re-INVITE with ``sendonly``) or take it off; True when it agreed."""
        self.sdp_version += 1
        body = build_sdp(
            self.ua.host,
            self.rtp.port,
            payloads=(self.rtp.payload_type,),
            dtmf_pt=self.rtp.dtmf_pt,
            direction="sendonly" if on else "sendrecv",
            version=self.sdp_version,
        )
        response = await self._transact("INVITE", body=body)
        if response is None or not 200 <= response.status < 300:
            return False
        ack = self._in_dialog("ACK", cseq=self.cseq)
        await self._send(ack)
        self.held = on
        return True

    def received(self, msg: SipMessage, peer: Peer) -> None:
        """A request of this dialog from the agent."""
        self._spawn(self._handle(msg, peer))

    async def _handle(self, msg: SipMessage, peer: Peer) -> None:
        method, tag = msg.method, self.local.tag
        if method == "INVITE" and self._invite is not None and msg.branch == self._invite.branch:
            return  # the agent's INVITE again, before our answer reached it
        if method != "CANCEL" and not self._of_this_dialog(msg):
            if method != "ACK":
                await self.ua.respond(msg, peer, 481, "Call/Transaction Does Not Exist", tag=tag)
            return
        if method == "ACK":
            self._acked.set()
        elif method == "BYE":
            await self.ua.respond(msg, peer, 200, "OK", tag=tag)
            self.end("agent", "BYE")
        elif method == "CANCEL":
            await self.ua.respond(msg, peer, 200, "OK", tag=tag)
            if self.state != "connected" and self._invite is not None:
                await self.ua.respond(self._invite, peer, 487, "Request Terminated", tag=tag)
                self.end("agent", "CANCEL")
        elif method in ("INVITE", "UPDATE"):
            await self._offer(msg, peer)
        elif method == "REFER":
            await self._refer(msg, peer)
        elif method == "INFO":
            found = _SIGNAL.search(msg.body.decode("utf-8", "replace")[:200])
            await self.ua.respond(msg, peer, 200, "OK", tag=tag)
            if found and found.group(1).upper() in DIGITS:
                self.rtp.on_digit(found.group(1).upper())
        elif method in ("NOTIFY", "OPTIONS"):
            await self.ua.respond(msg, peer, 200, "OK", tag=tag, headers=(("Allow", ALLOW),))
        else:
            await self.ua.respond(msg, peer, 405, "Method Not Allowed", tag=tag, headers=(("Allow", ALLOW),))

    def _of_this_dialog(self, msg: SipMessage) -> bool:
        """The request's tags are this dialog's (RFC 3261 12.2.2): the Call-ID alone is not enough,
        or a BYE with other tags would hang up this call."""
        try:
            to, sender = NameAddr.parse(msg.get("to")), NameAddr.parse(msg.get("from"))
        except SipParseError:
            return False
        return to.tag == self.local.tag and (not self.remote.tag or sender.tag == self.remote.tag)

    async def _offer(self, msg: SipMessage, peer: Peer) -> None:
        tag = self.local.tag
        contact = msg.get("contact")
        try:
            if contact:
                self.remote_target = NameAddr.parse(contact).uri
            offer = parse_sdp(msg.body) if msg.body else None
            if offer is not None:
                self._media(offer)
        except SipParseError as exc:
            await self.ua.respond(msg, peer, 488, "Not Acceptable Here", tag=tag)
            self.ua.errors.append(f"{msg.method}: {exc}")
            return
        body = self._sdp(offer) if offer is not None else b""
        headers = self._ok_headers() if body else (("Contact", self.ua.contact(self.peer.transport)),)
        self._acked.clear()
        ok = await self.ua.respond(msg, peer, 200, "OK", tag=tag, headers=headers, body=body)
        if msg.method == "INVITE":
            self._spawn(self._until_acked(ok, peer))

    async def _refer(self, msg: SipMessage, peer: Peer) -> None:
        tag = self.local.tag
        refer_to = msg.get("refer-to")
        try:
            target = NameAddr.parse(refer_to).uri if refer_to else ""
        except SipParseError:
            target = ""
        if not target:
            await self.ua.respond(msg, peer, 400, "Bad Request", tag=tag)
            return
        await self.ua.respond(msg, peer, 202, "Accepted", tag=tag)
        self.transfers.append(target[:512])
        self.on_transfer(target[:512])
        await self._notify("SIP/2.0 100 Trying", "active;expires=60")
        await self._notify("SIP/2.0 200 OK", "terminated;reason=noresource")

    async def _notify(self, frag: str, state: str) -> None:
        msg = self._new_request("NOTIFY", self.remote_target)
        msg.add("Event", "refer")
        msg.add("Subscription-State", state)
        msg.add("Content-Type", "message/sipfrag;version=2.0")
        msg.body = (frag + "\r\n").encode()
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError, ConnectionError, OSError):
            await self.ua.request(msg, self._target_peer(), timeout=8.0)

    def _spawn(self, coro: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        self.ua.calls.pop(self.call_id, None)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2)
        self.rtp.close()
