"""Digest authentication of SIP requests (RFC 2617 with RFC 8760's SHA-256).

A proxy or registrar that wants credentials answers 401 (``WWW-Authenticate``) or 407
(``Proxy-Authenticate``); the request is sent again with ``Authorization`` / ``Proxy-Authorization``
computed from the challenge. MD5 and SHA-256 (and their ``-sess`` forms) with ``qop=auth`` or none.
The password never leaves this module except inside the hash.
"""

from __future__ import annotations

import hashlib
import secrets

from .message import SipParseError

__all__ = ["Challenge", "authorization", "parse_challenge"]

_ALGORITHMS = {"MD5": hashlib.md5, "SHA-256": hashlib.sha256}


class Challenge(dict[str, str]):
    """The challenge's parameters (realm, nonce, algorithm, qop, opaque), lower-cased names."""


def parse_challenge(value: str) -> Challenge:
    scheme, _, rest = value.strip().partition(" ")
    if scheme.lower() != "digest":
        raise SipParseError(f"not a Digest challenge ({scheme[:20]!r})")
    out = Challenge()
    i, n = 0, len(rest)
    while i < n:
        while i < n and rest[i] in " ,":
            i += 1
        eq = rest.find("=", i)
        if eq < 0:
            break
        key = rest[i:eq].strip().lower()
        i = eq + 1
        if i < n and rest[i] == '"':
            end = rest.find('"', i + 1)
            if end < 0:
                raise SipParseError("an unterminated quoted value in a challenge")
            out[key] = rest[i + 1 : end]
            i = end + 1
        else:
            end = rest.find(",", i)
            end = n if end < 0 else end
            out[key] = rest[i:end].strip()
            i = end
    if "nonce" not in out or "realm" not in out:
        raise SipParseError("a Digest challenge without realm or nonce")
    return out


def authorization(
    challenge: Challenge, *, method: str, uri: str, username: str, password: str, nc: int = 1
) -> str:
    """The ``Authorization`` value answering ``challenge`` for ``method uri``."""
    algorithm = challenge.get("algorithm", "MD5")
    base = algorithm.upper().removesuffix("-SESS")
    if base not in _ALGORITHMS:
        raise SipParseError(f"unsupported digest algorithm {algorithm[:20]!r}")
    hash_ = _ALGORITHMS[base]

    def h(text: str) -> str:
        return hash_(text.encode()).hexdigest()

    realm, nonce = challenge["realm"], challenge["nonce"]
    cnonce = secrets.token_hex(8)
    ha1 = h(f"{username}:{realm}:{password}")
    if algorithm.upper().endswith("-SESS"):
        ha1 = h(f"{ha1}:{nonce}:{cnonce}")
    ha2 = h(f"{method}:{uri}")
    qops = [q.strip() for q in challenge.get("qop", "").split(",") if q.strip()]
    parts = [
        f'username="{username}"',
        f'realm="{realm}"',
        f'nonce="{nonce}"',
        f'uri="{uri}"',
        f"algorithm={algorithm}",
    ]
    if "auth" in qops:
        count = f"{nc:08x}"
        response = h(f"{ha1}:{nonce}:{count}:{cnonce}:auth:{ha2}")
        parts += [f'response="{response}"', "qop=auth", f"nc={count}", f'cnonce="{cnonce}"']
    else:
        parts.append(f'response="{h(f"{ha1}:{nonce}:{ha2}")}"')
    if "opaque" in challenge:
        parts.append(f'opaque="{challenge["opaque"]}"')
    return "Digest " + ", ".join(parts)
