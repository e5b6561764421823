"""Where tamesu listens for an inbound call, read from ``sip.inbound_number``.

``inbound_number`` is either the number an inbound agent is made to dial (``+34910000001``: tamesu
listens on ``sip:+34910000001@BIND:PORT``) or the whole SIP URI to listen on
(``sip:+34910000001@10.0.0.5:5070``). Both give templates the number (``{{sip.inbound_number}}``,
what a platform that dials E.164 wants) and the address (``{{sip.inbound_uri}}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tamesu.sip.message import SipParseError, SipUri

__all__ = ["InboundAddress", "inbound_address"]

_NUMBER = re.compile(r"^\+?[0-9A-Za-z][0-9A-Za-z.*#_+-]*$")
_FORMS = "write a number (+34910000001) or the SIP URI to listen on (sip:+34910000001@10.0.0.5:5070)"


@dataclass(frozen=True)
class InboundAddress:
    """The user part an inbound call is addressed to, and the host and port to listen on (None:
    ``bind`` or 127.0.0.1, and a free port)."""

    number: str
    host: str | None = None
    port: int | None = None

    def uri(self, host: str, port: int) -> str:
        return f"sip:{self.number}@{host}:{port}"


def inbound_address(text: str | None, *, bind: str | None = None, port: int | None = None) -> InboundAddress:
    """``inbound_number`` with ``bind`` and ``inbound_port`` as one address; ValueError names the
    accepted forms when the text is neither, or a URI disagrees with ``bind`` / ``inbound_port``."""
    raw = (text or "tamesu").replace(" ", "")
    if not raw.lower().startswith(("sip:", "sips:", "tel:")):
        if not _NUMBER.match(raw):
            raise ValueError(f"inbound_number {raw[:60]!r} is neither a number nor a SIP URI: {_FORMS}")
        return InboundAddress(raw, bind, port)
    try:
        uri = SipUri.parse(raw)
    except SipParseError as exc:
        raise ValueError(f"inbound_number: {exc}: {_FORMS}") from None
    if uri.scheme != "sip" or not uri.user or not uri.host:
        raise ValueError(
            f"inbound_number {raw[:60]!r}: tamesu listens on a sip: URI with a user part: {_FORMS}"
        )
    if bind is not None and bind != uri.host:
        raise ValueError(
            f"inbound_number listens on {uri.host} but sip.bind is {bind}: give the address once"
        )
    if port is not None and uri.port is not None and port != uri.port:
        raise ValueError(
            f"inbound_number listens on port {uri.port} but sip.inbound_port is {port}: give the port once"
        )
    return InboundAddress(uri.user, uri.host, uri.port if uri.port is not None else port)
