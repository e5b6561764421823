"""The sockets SIP travels on: one UDP socket, a TCP listener on the same port, and TCP or TLS
connections to peers (opened on first use, kept for the dialog; a peer's own connections are
answered on themselves).

A peer is ``Peer(transport, host, port)``. Whatever arrives is parsed here (``message``); a
message that does not parse, or a stream that breaks its framing, is reported through
``on_error`` and dropped (a stream is closed), never raised into the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl
from collections.abc import Callable
from typing import NamedTuple

from .message import SipMessage, SipParseError, StreamFramer, parse_message

__all__ = ["Peer", "SipSockets"]

CONNECT_TIMEOUT = 5.0
MAX_CONNECTIONS = 256


class Peer(NamedTuple):
    transport: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.transport}:{self.host}:{self.port}"


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, sockets: SipSockets, sock: socket.socket) -> None:
        self.sockets = sockets
        self.sock = sock

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if data.strip(b"\r\n\x00 ") == b"":  # keep-alive
            return
        self.sockets.received(data, Peer("udp", addr[0], addr[1]))

    def error_received(self, exc: Exception) -> None:
        if isinstance(exc, ConnectionRefusedError):
            for addr in _refused_destinations(self.sock):
                self.sockets.on_unreachable(
                    Peer("udp", addr[0], addr[1]), "nothing listens there (ICMP port unreachable)"
                )
        self.sockets.on_error(f"UDP: {exc}")


def _refused_destinations(sock: socket.socket) -> list[tuple[str, int]]:
    """The destinations of the datagrams an ICMP error came back for (Linux's IP_RECVERR error
    queue names each one), read until the queue is empty."""
    out: list[tuple[str, int]] = []
    for _ in range(64):
        try:
            _, _, _, addr = sock.recvmsg(1, 1024, socket.MSG_ERRQUEUE)
        except OSError:
            break
        if isinstance(addr, tuple) and len(addr) >= 2:
            out.append((str(addr[0]), int(addr[1])))
    return out


def _udp_socket(host: str, port: int) -> socket.socket:
    """A bound, non-blocking UDP socket that hears ICMP errors for the peers it sends to (on Linux,
    an unconnected UDP socket hears them only with IP_RECVERR), so a call to a port where nothing
    listens fails at once instead of ringing out."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        level, option = (
            (socket.IPPROTO_IPV6, _IPV6_RECVERR)
            if family == socket.AF_INET6
            else (socket.IPPROTO_IP, _IP_RECVERR)
        )
        with contextlib.suppress(OSError):
            sock.setsockopt(level, option, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


_IP_RECVERR = getattr(socket, "IP_RECVERR", 11)
_IPV6_RECVERR = getattr(socket, "IPV6_RECVERR", 25)


class SipSockets:
    """Where a user agent sends and receives; ``on_message(msg, peer)`` gets each parsed message."""

    def __init__(
        self,
        host: str,
        *,
        on_message: Callable[[SipMessage, Peer], None],
        on_error: Callable[[str], None],
        on_unreachable: Callable[[Peer, str], None] = lambda peer, why: None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.on_message = on_message
        self.on_error = on_error
        self.on_unreachable = on_unreachable
        """A peer that cannot be reached over UDP (an ICMP error came back for it)."""
        self.tls = tls
        self.port = 0
        self.udp: asyncio.DatagramTransport | None = None
        self.server: asyncio.Server | None = None
        self.streams: dict[Peer, asyncio.StreamWriter] = {}
        self._connecting: dict[Peer, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def open(self, port: int = 0, *, tcp: bool = True) -> None:
        """Bind UDP on ``port`` (0: any free one) and, with ``tcp``, listen for TCP on the same port
        (a caller that only places calls needs no listener: its TCP connections are its own)."""
        loop = asyncio.get_running_loop()
        for _ in range(20):
            sock = _udp_socket(self.host, port)
            self.udp, _ = await loop.create_datagram_endpoint(
                functools.partial(_Datagrams, self, sock), sock=sock
            )
            _widen(self.udp)
            bound = int(self.udp.get_extra_info("sockname")[1])
            if not tcp:
                self.port = bound
                return
            try:
                self.server = await asyncio.start_server(self._accepted, self.host, bound)
            except OSError:
                self.udp.close()
                if port:
                    raise
                continue
            self.port = bound
            return
        raise OSError("no port free for both UDP and TCP")

    def received(self, data: bytes, peer: Peer) -> None:
        try:
            msg = parse_message(data)
        except SipParseError as exc:
            self.on_error(f"from {peer}: {exc}")
            return
        self.on_message(msg, peer)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        addr = writer.get_extra_info("peername")
        peer = Peer("tcp", addr[0], addr[1])
        if len(self.streams) >= MAX_CONNECTIONS:
            writer.close()
            return
        self.streams[peer] = writer
        await self._read(reader, writer, peer)

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        framer = StreamFramer()
        try:
            while True:
                data = await reader.read(16384)
                if not data:
                    break
                for raw in framer.feed(data):
                    self.received(raw, peer)
        except SipParseError as exc:
            self.on_error(f"from {peer}: {exc} (connection closed)")
        except (ConnectionError, OSError):
            pass
        finally:
            if self.streams.get(peer) is writer:
                del self.streams[peer]
            writer.close()

    async def send(self, msg: SipMessage, peer: Peer) -> None:
        data = msg.to_bytes()
        if peer.transport == "udp":
            if self.udp is None:
                raise ConnectionError("the SIP sockets are closed")
            self.udp.sendto(data, (peer.host, peer.port))
            return
        writer = await self._stream(peer)
        writer.write(data)
        await writer.drain()

    async def _stream(self, peer: Peer) -> asyncio.StreamWriter:
        writer = self.streams.get(peer)
        if writer is not None and not writer.is_closing():
            return writer
        lock = self._connecting.setdefault(peer, asyncio.Lock())
        async with lock:
            writer = self.streams.get(peer)
            if writer is not None and not writer.is_closing():
                return writer
            context = None
            if peer.transport == "tls":
                context = self.tls or ssl.create_default_context()
            reader, opened = await asyncio.wait_for(
                asyncio.open_connection(
                    peer.host, peer.port, ssl=context, server_hostname=peer.host if context else None
                ),
                CONNECT_TIMEOUT,
            )
            self.streams[peer] = opened
            task = asyncio.get_running_loop().create_task(self._read(reader, opened, peer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return opened

    def local_port(self, peer: Peer) -> int:
        """The port a peer sees this side on (a stream's own local port; else the listening one)."""
        writer = self.streams.get(peer)
        if writer is not None:
            return int(writer.get_extra_info("sockname")[1])
        return self.port

    async def close(self) -> None:
        if self.udp is not None:
            self.udp.close()
        if self.server is not None:
            self.server.close()
        for writer in list(self.streams.values()):
            writer.close()
        self.streams.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait(list(self._tasks), timeout=2)
        if self.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)


UDP_BUFFER = 4 << 20
"""Receive buffer asked for the SIP socket: hundreds of calls set up at once answer in a burst (100,
180 and 200 each) that overflows the kernel's usual 208 KiB, and a lost 200 waits out a retransmission."""


def _widen(udp: asyncio.DatagramTransport) -> None:
    sock = udp.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_BUFFER)
