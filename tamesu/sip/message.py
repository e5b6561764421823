"""SIP messages (RFC 3261): parsing with strict bounds, and serialising.

Everything a peer sends is untrusted: a message is at most ``MAX_MESSAGE`` bytes with at most
``MAX_HEADERS`` header lines of ``MAX_LINE`` bytes, and anything malformed raises ``SipParseError``
(the user agent records it and drops the message) rather than anything else. Header names are kept
as the peer wrote them and matched case-insensitively, compact forms (``i``, ``v``, ...) included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "MAX_MESSAGE",
    "NameAddr",
    "SipMessage",
    "SipParseError",
    "SipUri",
    "StreamFramer",
    "parse_message",
]

MAX_MESSAGE = 65_536
MAX_HEADERS = 128
MAX_LINE = 8_192
MAX_BODY = 32_768

_COMPACT = {
    "i": "call-id",
    "f": "from",
    "t": "to",
    "v": "via",
    "m": "contact",
    "l": "content-length",
    "c": "content-type",
    "k": "supported",
    "r": "refer-to",
    "o": "event",
    "s": "subject",
    "e": "content-encoding",
    "u": "allow-events",
    "b": "referred-by",
}
_REQUEST = re.compile(r"([A-Z][A-Z0-9._!%*+`'~-]{0,31}) (\S{1,2048}) SIP/2\.0")
_STATUS = re.compile(r"SIP/2\.0 ([1-6][0-9]{2}) ?(.{0,256})")
_TOKEN = re.compile(r"[A-Za-z0-9._!%*+`'~-]{1,64}")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.){0,512})"\s*')


class SipParseError(ValueError):
    """The bytes are not a SIP message tamesu will read."""


def canonical(name: str) -> str:
    low = name.strip().lower()
    return _COMPACT.get(low, low)


@dataclass
class SipMessage:
    """A request (``method`` and ``uri``) or a response (``status`` and ``reason``)."""

    method: str = ""
    uri: str = ""
    status: int = 0
    reason: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    @property
    def is_request(self) -> bool:
        return self.status == 0

    def get(self, name: str, default: str = "") -> str:
        key = canonical(name)
        for k, v in self.headers:
            if canonical(k) == key:
                return v
        return default

    def get_all(self, name: str) -> list[str]:
        key = canonical(name)
        out: list[str] = []
        for k, v in self.headers:
            if canonical(k) == key:
                out.extend(split_commas(v) if key in ("via", "record-route", "route") else [v])
        return out

    def set(self, name: str, value: str) -> None:
        key = canonical(name)
        self.headers = [(k, v) for k, v in self.headers if canonical(k) != key]
        self.headers.append((name, value))

    def add(self, name: str, value: str) -> None:
        self.headers.append((name, value))

    def remove(self, name: str) -> None:
        key = canonical(name)
        self.headers = [(k, v) for k, v in self.headers if canonical(k) != key]

    @property
    def call_id(self) -> str:
        return self.get("call-id")

    @property
    def cseq(self) -> tuple[int, str]:
        number, _, method = self.get("cseq").strip().partition(" ")
        try:
            return int(number), method.strip().upper()
        except ValueError:
            return 0, method.strip().upper()

    @property
    def branch(self) -> str:
        vias = self.get_all("via")
        return param(vias[0], "branch") if vias else ""

    def start_line(self) -> str:
        if self.is_request:
            return f"{self.method} {self.uri} SIP/2.0"
        return f"SIP/2.0 {self.status} {self.reason}"

    def to_bytes(self) -> bytes:
        lines = [self.start_line()]
        lines += [f"{k}: {v}" for k, v in self.headers if canonical(k) != "content-length"]
        lines.append(f"Content-Length: {len(self.body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body

    def summary(self) -> str:
        """The start line, for the transcript's dialogue."""
        return self.start_line()


def split_commas(value: str) -> list[str]:
    """A header value split at commas outside quotes and angle brackets."""
    out: list[str] = []
    cur: list[str] = []
    depth, quoted = 0, False
    for ch in value:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "<":
            depth += 1
        elif not quoted and ch == ">":
            depth = max(0, depth - 1)
        if ch == "," and not quoted and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def param(value: str, name: str) -> str:
    """The value of ``;name=value`` in a header value (outside its ``<...>``), or ''."""
    tail = value.rsplit(">", 1)[-1]
    for part in tail.split(";")[1:]:
        k, _, v = part.partition("=")
        if k.strip().lower() == name:
            return v.strip().strip('"')
    return ""


def parse_message(data: bytes) -> SipMessage:
    """One whole message (a datagram, or what ``StreamFramer`` cut out of a stream)."""
    if len(data) > MAX_MESSAGE:
        raise SipParseError(f"message of {len(data)} bytes (the limit is {MAX_MESSAGE})")
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = data.partition(b"\n\n")
        if not sep:
            raise SipParseError("no end of headers")
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        raise SipParseError("headers are not UTF-8") from None
    lines = text.replace("\r\n", "\n").split("\n")
    if len(lines) > MAX_HEADERS + 1:
        raise SipParseError(f"more than {MAX_HEADERS} header lines")
    msg = SipMessage()
    first = lines[0]
    if (m := _REQUEST.fullmatch(first)) is not None:
        msg.method, msg.uri = m.group(1), m.group(2)
    elif (m := _STATUS.fullmatch(first)) is not None:
        msg.status, msg.reason = int(m.group(1)), m.group(2)
    else:
        raise SipParseError(f"not a SIP start line: {first[:80]!r}")
    for line in lines[1:]:
        if len(line) > MAX_LINE:
            raise SipParseError(f"a header line of more than {MAX_LINE} bytes")
        if line[:1] in (" ", "\t") and msg.headers:
            k, v = msg.headers[-1]
            msg.headers[-1] = (k, f"{v} {line.strip()}")
            continue
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name.strip()):
            raise SipParseError(f"a malformed header line: {line[:80]!r}")
        msg.headers.append((name.strip(), value.strip()))
    for required in ("call-id", "cseq", "from", "to", "via"):
        if not msg.get(required):
            raise SipParseError(f"no {required} header")
    length = msg.get("content-length")
    if length:
        try:
            n = int(length)
        except ValueError:
            raise SipParseError("Content-Length is not a number") from None
        if n < 0 or n > MAX_BODY:
            raise SipParseError(f"Content-Length {n} is out of bounds")
        if len(body) < n:
            raise SipParseError("the body is shorter than Content-Length")
        body = body[:n]
    if len(body) > MAX_BODY:
        raise SipParseError(f"a body of more than {MAX_BODY} bytes")
    msg.body = body
    return msg


class StreamFramer:
    """Cuts whole messages out of a TCP/TLS byte stream (by Content-Length), bounded."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self.buffer += data
        out: list[bytes] = []
        while True:
            while self.buffer[:2] == b"\r\n":  # keep-alive CRLFs
                del self.buffer[:2]
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_MESSAGE:
                    raise SipParseError("headers longer than the message limit")
                return out
            head = bytes(self.buffer[:end]).decode("utf-8", "replace")
            n = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if canonical(name) == "content-length":
                    try:
                        n = int(value.strip())
                    except ValueError:
                        raise SipParseError("Content-Length is not a number") from None
            if n < 0 or n > MAX_BODY:
                raise SipParseError(f"Content-Length {n} is out of bounds")
            total = end + 4 + n
            if len(self.buffer) < total:
                return out
            out.append(bytes(self.buffer[:total]))
            del self.buffer[:total]


@dataclass
class SipUri:
    """``sip:user@host:port;params`` (or ``sips:``)."""

    scheme: str = "sip"
    user: str = ""
    host: str = ""
    port: int | None = None
    params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> SipUri:
        text = text.strip()
        scheme, colon, rest = text.partition(":")
        if not colon or scheme.lower() not in ("sip", "sips", "tel"):
            raise SipParseError(f"not a SIP URI: {text[:80]!r}")
        rest = rest.split("?", 1)[0]
        main, *params = rest.split(";")
        user, at, hostport = main.rpartition("@")
        if not at:
            user, hostport = "", main
        host, port = hostport, None
        if hostport.startswith("["):
            host, _, tail = hostport[1:].partition("]")
            if tail.startswith(":"):
                port = _port(tail[1:])
        elif ":" in hostport:
            host, _, p = hostport.rpartition(":")
            port = _port(p)
        values = {}
        for p in params:
            k, _, v = p.partition("=")
            if k:
                values[k.lower()] = v
        return cls(scheme.lower(), user, host, port, values)

    @property
    def transport(self) -> str:
        t = self.params.get("transport", "").lower()
        if t:
            return t
        return "tls" if self.scheme == "sips" else "udp"

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port else ""
        params = "".join(f";{k}={v}" if v else f";{k}" for k, v in self.params.items())
        return f"{self.scheme}:{user}{host}{port}{params}"


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise SipParseError(f"a bad port {text[:10]!r}") from None
    if not 0 < port < 65536:
        raise SipParseError(f"port {port} is out of range")
    return port


@dataclass
class NameAddr:
    """A From / To / Contact / Refer-To value: ``"Name" <uri>;tag=...``."""

    uri: str
    display: str = ""
    params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> NameAddr:
        text = text.strip()
        quoted = _QUOTED.match(text)
        if quoted is not None:  # a quoted name may hold '<' and '>' ("Sales <desk>" <sip:...>)
            if not text[quoted.end() :].startswith("<"):
                raise SipParseError(f"no <uri> after the quoted name in {text[:80]!r}")
            uri, close, tail = text[quoted.end() + 1 :].partition(">")
            if not close:
                raise SipParseError(f"no closing '>' in {text[:80]!r}")
            name = re.sub(r"\\(.)", r"\1", quoted.group(1))
            return cls(uri.strip(), name, _params(tail))
        if text.startswith('"'):
            raise SipParseError(f"an unterminated quoted name in {text[:80]!r}")
        if "<" in text:
            display, _, rest = text.partition("<")
            uri, close, tail = rest.partition(">")
            if not close:
                raise SipParseError(f"no closing '>' in {text[:80]!r}")
        else:
            display, uri, tail = "", text.split(";", 1)[0], ";" + text.split(";", 1)[1] if ";" in text else ""
        return cls(uri.strip(), display.strip().strip('"'), _params(tail))

    @property
    def tag(self) -> str:
        return self.params.get("tag", "")

    def __str__(self) -> str:
        display = f'"{self.display}" ' if self.display else ""
        params = "".join(f";{k}={v}" if v else f";{k}" for k, v in self.params.items())
        return f"{display}<{self.uri}>{params}"


def _params(tail: str) -> dict[str, str]:
    """``;k=v;flag`` after a name-addr, keys lower-cased."""
    params = {}
    for p in tail.split(";")[1:]:
        k, _, v = p.partition("=")
        if k.strip():
            params[k.strip().lower()] = v.strip()
    return params
