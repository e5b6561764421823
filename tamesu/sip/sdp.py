"""SDP offer and answer (RFC 3264) for one audio stream: G.711 mu-law / A-law and telephone-event.

tamesu offers PCMU (0), PCMA (8) and telephone-event (101, RFC 4733); an answer keeps the first
codec of the offer that tamesu speaks. The direction attribute says who is on hold (``sendonly`` /
``inactive`` from the agent, or ``0.0.0.0`` as older phones write it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .message import SipParseError

__all__ = ["CODECS", "MediaOffer", "answer_direction", "build_sdp", "parse_sdp"]

CODECS = {0: "mulaw", 8: "alaw"}
"""Static payload types tamesu speaks, by the wire encoding the voice stages call them."""
MAX_SDP_LINES = 200


@dataclass
class MediaOffer:
    host: str
    port: int
    payloads: list[int] = field(default_factory=list)
    dtmf_pt: int | None = None
    direction: str = "sendrecv"

    @property
    def codec(self) -> int | None:
        return next((pt for pt in self.payloads if pt in CODECS), None)

    @property
    def on_hold(self) -> bool:
        return self.direction in ("sendonly", "inactive") or self.host == "0.0.0.0"


def build_sdp(
    host: str,
    port: int,
    *,
    payloads: tuple[int, ...] = (0, 8),
    dtmf_pt: int | None = 101,
    direction: str = "sendrecv",
    version: int = 1,
) -> bytes:
    session = int(time.time())
    fmts = list(payloads) + ([dtmf_pt] if dtmf_pt is not None else [])
    lines = [
        "v=0",
        f"o=tamesu {session} {version} IN IP4 {host}",
        "s=tamesu",
        f"c=IN IP4 {host}",
        "t=0 0",
        f"m=audio {port} RTP/AVP {' '.join(map(str, fmts))}",
    ]
    for pt in payloads:
        lines.append(f"a=rtpmap:{pt} {'PCMU' if pt == 0 else 'PCMA'}/8000")
    if dtmf_pt is not None:
        lines += [f"a=rtpmap:{dtmf_pt} telephone-event/8000", f"a=fmtp:{dtmf_pt} 0-16"]
    lines += ["a=ptime:20", f"a={direction}"]
    return ("\r\n".join(lines) + "\r\n").encode()


def parse_sdp(body: bytes) -> MediaOffer:
    """The first audio stream of a session description."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise SipParseError("the SDP is not UTF-8") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_SDP_LINES:
        raise SipParseError(f"an SDP of more than {MAX_SDP_LINES} lines")
    host = ""
    media: MediaOffer | None = None
    direction = "sendrecv"
    names: dict[int, str] = {}
    for line in lines:
        kind, _, value = line.partition("=")
        if kind == "c":
            parts = value.split()
            if len(parts) >= 3:
                if media is None:
                    host = parts[2]
                else:
                    media.host = parts[2]
        elif kind == "m":
            if media is not None:
                break
            parts = value.split()
            if len(parts) < 4 or parts[0] != "audio":
                continue
            try:
                port = int(parts[1])
                payloads = [int(p) for p in parts[3:]]
            except ValueError:
                raise SipParseError("a malformed m= line") from None
            media = MediaOffer(host=host, port=port, payloads=payloads)
        elif kind == "a":
            if value in ("sendrecv", "sendonly", "recvonly", "inactive"):
                direction = value
            elif value.startswith("rtpmap:"):
                pt_text, _, name = value[7:].partition(" ")
                try:
                    names[int(pt_text)] = name.split("/")[0].lower()
                except ValueError:
                    continue
    if media is None:
        raise SipParseError("no audio stream in the SDP")
    if not 0 <= media.port < 65536:
        raise SipParseError(f"RTP port {media.port} is out of range")
    media.direction = direction
    for pt, name in names.items():
        if name == "telephone-event" and pt in media.payloads:
            media.dtmf_pt = pt
    return media


def answer_direction(offered: str) -> str:
    return {"sendonly": "recvonly", "recvonly": "sendonly", "inactive": "inactive"}.get(offered, "sendrecv")
