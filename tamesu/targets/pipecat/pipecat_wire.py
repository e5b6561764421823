"""Pipecat's websocket wire format: its protobuf ``Frame`` and the RTVI messages it carries.

Pipecat's ``ProtobufFrameSerializer`` sends one protobuf ``pipecat.Frame`` per websocket message
(``frames.proto``)::

    message Frame { oneof frame { TextFrame text = 1; AudioRawFrame audio = 2;
                                  TranscriptionFrame transcription = 3; MessageFrame message = 4;
                                  InterruptionFrame interruption = 5; } }

``MessageFrame.data`` is JSON: the RTVI messages (``{"label": "rtvi-ai", "type": ...}``) a Pipecat
client and bot exchange. The schema is five small messages, so it is encoded here by hand
(varints and length-delimited fields) and tamesu needs neither protobuf nor pipecat to talk to a
bot; a test checks the bytes against pipecat's own serializer.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FRAME_FIELDS",
    "RTVI_LABEL",
    "RTVI_VERSION",
    "SPEAKING",
    "WireFrame",
    "audio_frame",
    "decode_frame",
    "encode_frame",
    "message_frame",
    "raw",
    "rtvi",
    "rtvi_data",
    "rtvi_type",
    "speaks",
    "text_frame",
    "transcription_frame",
]

RTVI_LABEL = "rtvi-ai"
RTVI_VERSION = "2.2.0"
"""The RTVI protocol version tamesu announces in ``client-ready``."""

FRAME_KINDS = {1: "text", 2: "audio", 3: "transcription", 4: "message", 5: "interruption"}
_KIND_NUMBERS = {v: k for k, v in FRAME_KINDS.items()}

FRAME_FIELDS: dict[str, dict[int, tuple[str, str]]] = {
    "text": {1: ("id", "uint"), 2: ("name", "str"), 3: ("text", "str")},
    "audio": {
        1: ("id", "uint"),
        2: ("name", "str"),
        3: ("audio", "bytes"),
        4: ("sample_rate", "uint"),
        5: ("num_channels", "uint"),
        6: ("pts", "uint"),
    },
    "transcription": {
        1: ("id", "uint"),
        2: ("name", "str"),
        3: ("text", "str"),
        4: ("user_id", "str"),
        5: ("timestamp", "str"),
    },
    "message": {1: ("data", "str")},
    "interruption": {1: ("id", "uint"), 2: ("name", "str")},
}
"""Frame kind -> field number -> (name, type), as in frames.proto."""


@dataclass
class WireFrame:
    """One decoded frame: its kind and its fields (defaults omitted, as proto3 does)."""

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of every field in a message body."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field")
            value, pos = data[pos : pos + size], pos + size
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def encode_frame(kind: str, **values: Any) -> bytes:
    """One ``pipecat.Frame`` holding a ``kind`` frame with ``values`` (unset and empty ones omitted)."""
    spec = {name: (number, typ) for number, (name, typ) in FRAME_FIELDS[kind].items()}
    body = bytearray()
    for name, value in values.items():
        number, typ = spec[name]
        if value is None or (typ != "uint" and not value):
            continue
        if typ == "uint":
            body += _varint(number << 3) + _varint(int(value))
        else:
            raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            body += _varint(number << 3 | 2) + _varint(len(raw)) + raw
    return _varint(_KIND_NUMBERS[kind] << 3 | 2) + _varint(len(body)) + bytes(body)


def decode_frame(data: bytes | str) -> WireFrame | None:
    """A websocket message as a frame; None for anything that is not a known ``pipecat.Frame``."""
    if isinstance(data, str):
        return None
    try:
        outer = _fields(data)
    except ValueError:
        return None
    for number, wire, body in outer:
        kind = FRAME_KINDS.get(number)
        if kind is None or wire != 2:
            continue
        values: dict[str, Any] = {}
        try:
            inner = _fields(body)
        except ValueError:
            return None
        for n, w, value in inner:
            name, typ = FRAME_FIELDS[kind].get(n, ("", ""))
            if not name:
                continue
            if typ == "uint" and w == 0:
                values[name] = value
            elif typ == "str" and w == 2:
                values[name] = value.decode("utf-8", "replace")
            elif typ == "bytes" and w == 2:
                values[name] = value
        return WireFrame(kind, values)
    return None


def message_frame(message: Any) -> bytes:
    """A ``MessageFrame`` carrying ``message`` as JSON (how RTVI messages travel)."""
    return encode_frame("message", data=json.dumps(message, ensure_ascii=False))


def rtvi(kind: str, data: Any = None, *, id: str | None = None) -> dict[str, Any]:
    """An RTVI client message."""
    out: dict[str, Any] = {"label": RTVI_LABEL, "type": kind, "id": id or uuid.uuid4().hex[:12]}
    if data is not None:
        out["data"] = data
    return out


def audio_frame(pcm: bytes, sample_rate: int, *, channels: int = 1) -> bytes:
    return encode_frame("audio", audio=pcm, sample_rate=sample_rate, num_channels=channels)


def transcription_frame(text: str, *, user_id: str, timestamp: str) -> bytes:
    return encode_frame("transcription", text=text, user_id=user_id, timestamp=timestamp)


def text_frame(text: str) -> bytes:
    return encode_frame("text", text=text)


SPEAKING = ("bot-llm-started", "bot-llm-text", "bot-started-speaking", "bot-tts-started", "bot-output")
"""RTVI messages that show the bot talking."""


def rtvi_type(item: Any) -> str | None:
    """An RTVI message's type (None: not an RTVI message)."""
    if isinstance(item, dict) and item.get("label") == RTVI_LABEL:
        return str(item.get("type"))
    return None


def rtvi_data(item: Any) -> dict[str, Any]:
    data = item.get("data") if isinstance(item, dict) else None
    return data if isinstance(data, dict) else {}


def speaks(item: Any) -> bool:
    """Whether a message shows the bot talking (a greeting before any user turn); an audio frame a
    transport marked ``silent`` (WebRTC sends silence between words) does not."""
    if isinstance(item, WireFrame):
        return item.kind in ("audio", "text") and not item.get("silent")
    return rtvi_type(item) in SPEAKING


def raw(item: Any) -> Any:
    """What the transcript keeps of a frame (audio bytes left out) or an RTVI message."""
    if isinstance(item, WireFrame):
        return {"frame": item.kind, **{k: v for k, v in item.fields.items() if k != "audio"}}
    return item
