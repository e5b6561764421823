"""The sip target against a hostile SIP peer of a few lines on loopback UDP: answers it cannot
read end the call as an error that says why (not as ``no_answer``), and a request with the call's
Call-ID but other tags is refused (481) instead of hanging up the call."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from tamesu.kernel.events import CallEnded
from tamesu.kernel.messages import Event
from tamesu.sip.message import NameAddr

from ..voice.peers import Calls, calls, collect

__all__ = ["calls"]

pytestmark = pytest.mark.integration

HEADERS = ("Via", "From", "To", "Call-ID", "CSeq")


class Peer(asyncio.DatagramProtocol):
    """Answers an INVITE with ``answer(invite_headers)``; keeps what it received."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.received: list[bytes] = []
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.received.append(data)
        if data.startswith(b"INVITE "):
            text = data.decode()
            headers = {
                name: re.search(rf"^{name}:\s*(.*?)\r$", text, re.M | re.I).group(1)  # type: ignore[union-attr]
                for name in HEADERS
            }
            assert self.transport is not None
            self.transport.sendto(self.answer(headers), addr)


def head(headers: dict[str, str], extra: str = "") -> str:
    return (
        "SIP/2.0 200 OK\r\n"
        + "".join(f"{k}: {v}{';tag=agent1' if k == 'To' else ''}\r\n" for k, v in headers.items())
        + extra
    )


MALFORMED = {
    "a Content-Length beyond the body": lambda h: (head(h) + "Content-Length: 500\r\n\r\nv=0\r\n").encode(),
    "a Content-Length over 32 KiB": lambda h: (
        head(h) + "Content-Length: 40000\r\n\r\n" + "x" * 40000
    ).encode(),
    "thousands of headers": lambda h: (head(h, "X-A: b\r\n" * 5000) + "Content-Length: 0\r\n\r\n").encode(),
    "a header line of 20 KB": lambda h: (
        head(h, "X-Big: " + "y" * 20000 + "\r\n") + "Content-Length: 0\r\n\r\n"
    ).encode(),
}


async def serve(answer: Any) -> tuple[Peer, str, asyncio.DatagramTransport]:
    loop = asyncio.get_running_loop()
    transport, peer = await loop.create_datagram_endpoint(lambda: Peer(answer), local_addr=("127.0.0.1", 0))
    return peer, f"sip:agent@127.0.0.1:{transport.get_extra_info('sockname')[1]}", transport


@pytest.mark.parametrize("case", list(MALFORMED))
async def test_an_answer_that_cannot_be_read_ends_the_call_as_an_error_saying_why(
    calls: Calls, case: str
) -> None:
    peer, uri, transport = await serve(MALFORMED[case])
    try:
        phone = await calls.target({"type": "sip", "to": uri, "ring_timeout": "20s"})
        began = asyncio.get_running_loop().time()
        turn = await collect(phone)
        took = asyncio.get_running_loop().time() - began
        await phone.stop()
    finally:
        transport.close()
    [ended] = [m.event for m in turn if isinstance(m, Event) and isinstance(m.event, CallEnded)]
    assert ended.by == "error" and "the agent's answer could not be read" in ended.detail, ended
    assert took < 10, "not left to ring_timeout"
    assert any(m.startswith(b"CANCEL ") for m in peer.received), "the INVITE is cancelled"


def test_a_quoted_display_name_may_hold_angle_brackets() -> None:
    refer = NameAddr.parse('"Sales <desk 2>" <sip:sales@shop.example>;tag=x')
    assert (refer.uri, refer.display, refer.tag) == ("sip:sales@shop.example", "Sales <desk 2>", "x")
    assert NameAddr.parse('"A \\" B" <sip:a@b>').display == 'A " B'


class Replies(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.got: asyncio.Queue[bytes] = asyncio.Queue()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.got.put_nowait(data)


@pytest.mark.slow
async def test_a_bye_with_the_call_id_but_other_tags_is_refused_and_the_call_goes_on(calls: Calls) -> None:
    from tamesu.testing.sip_agent import SipVoiceAgent

    agent = SipVoiceAgent(tts="test-vowel", stt="test-stt")
    await agent.start()
    loop = asyncio.get_running_loop()
    transport, replies = await loop.create_datagram_endpoint(Replies, local_addr=("127.0.0.1", 0))
    try:
        phone: Any = await calls.target({"type": "sip", "to": agent.uri, "idle": "500ms"}, turn_timeout=20.0)
        await collect(phone)
        call = phone.call
        assert call.state == "connected"
        here = transport.get_extra_info("sockname")[1]
        bye = (
            f"BYE sip:tamesu@127.0.0.1:{phone.ua.port} SIP/2.0\r\n"
            f"Via: SIP/2.0/UDP 127.0.0.1:{here};branch=z9hG4bK-forged\r\n"
            f"From: <{agent.uri}>;tag=forged-from\r\nTo: <sip:tamesu@127.0.0.1>;tag=forged-to\r\n"
            f"Call-ID: {call.call_id}\r\nCSeq: 77 BYE\r\nContent-Length: 0\r\n\r\n"
        )
        transport.sendto(bye.encode(), ("127.0.0.1", phone.ua.port))
        answer = await asyncio.wait_for(replies.got.get(), 5)
        assert answer.startswith(b"SIP/2.0 481 "), answer[:80]
        assert call.state == "connected" and call.end_reason is None
        await phone.stop()
    finally:
        transport.close()
        await agent.close()


async def test_a_megabyte_header_over_tcp_ends_the_call_as_an_error_saying_why(calls: Calls) -> None:
    invites: list[bytes] = []

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.readuntil(b"\r\n\r\n")
        invites.append(data)
        text = data.decode()
        headers = {n: re.search(rf"^{n}:\s*(.*?)\r$", text, re.M | re.I).group(1) for n in HEADERS}  # type: ignore[union-attr]
        writer.write(head(headers, "X-Big: ").encode())
        for _ in range(1024):
            writer.write(b"z" * 1024)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(agent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        phone = await calls.target(
            {"type": "sip", "to": f"sip:agent@127.0.0.1:{port};transport=tcp", "ring_timeout": "20s"}
        )
        turn = await collect(phone)
        await phone.stop()
    finally:
        server.close()
    [ended] = [m.event for m in turn if isinstance(m, Event) and isinstance(m.event, CallEnded)]
    assert ended.by == "error" and "the agent's answer could not be read" in ended.detail, ended
    assert invites, "the INVITE went over TCP"
