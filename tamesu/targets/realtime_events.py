"""The two event dialects of the OpenAI Realtime API: GA (the default) and beta.

They share the conversation events (``conversation.item.create``, ``response.create``,
``response.done``, ``response.function_call_arguments.done``, ``input_audio_buffer.*``, ``error``)
and differ in the session shape and the names of the output events:

| what                     | ga                                               | beta                                       |
|--------------------------|--------------------------------------------------|--------------------------------------------|
| handshake header         | none                                             | ``OpenAI-Beta: realtime=v1``               |
| output kind              | ``session.output_modalities: [text]`` or audio    | ``session.modalities: [text]``, audio adds  |
| audio formats            | ``session.audio.input/output.format`` objects     | ``input_audio_format``/``output_audio_format`` |
| server VAD               | ``session.audio.input.turn_detection``           | ``session.turn_detection``                 |
| text out                 | ``response.output_text.delta``                   | ``response.text.delta``                    |
| audio out                | ``response.output_audio.delta``                  | ``response.audio.delta``                   |
| spoken words             | ``response.output_audio_transcript.*``           | ``response.audio_transcript.*``            |

The adapter reads beta events under their GA names (``canonical``) and lets ``Dialect`` write
the events whose shape differs.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "AUDIO_FORMATS",
    "BETA_TO_GA",
    "DEFAULT_URL",
    "Dialect",
    "DialectName",
    "canonical",
    "deep_merge",
]

DEFAULT_URL = "wss://api.openai.com/v1/realtime"
"""The Realtime API endpoint used when a realtime target has no ``url``."""

DialectName = Literal["ga", "beta"]

BETA_TO_GA: dict[str, str] = {
    "response.text.delta": "response.output_text.delta",
    "response.text.done": "response.output_text.done",
    "response.audio.delta": "response.output_audio.delta",
    "response.audio.done": "response.output_audio.done",
    "response.audio_transcript.delta": "response.output_audio_transcript.delta",
    "response.audio_transcript.done": "response.output_audio_transcript.done",
}
"""Beta server event names -> the GA names the adapter reads."""

AUDIO_FORMATS: dict[str, tuple[str, int]] = {
    "pcm16": ("pcm16", 24000),
    "g711_ulaw": ("mulaw", 8000),
    "g711_alaw": ("alaw", 8000),
}
"""``audio_format`` -> (the encoding in tamesu.audio.codec, its sample rate)."""

_GA_FORMAT: dict[str, dict[str, Any]] = {
    "pcm16": {"type": "audio/pcm", "rate": 24000},
    "g711_ulaw": {"type": "audio/pcmu"},
    "g711_alaw": {"type": "audio/pcma"},
}


def canonical(event_type: str) -> str:
    """The GA name of a server event (beta names mapped, everything else unchanged)."""
    return BETA_TO_GA.get(event_type, event_type)


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` folded into ``base``: mappings merge key by key, anything else (lists, null) replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class Dialect:
    """Writes the client events of one dialect for a session in ``mode`` with ``audio_format``."""

    def __init__(
        self,
        name: DialectName = "ga",
        *,
        mode: Literal["text", "audio"] = "text",
        audio_format: str = "pcm16",
    ) -> None:
        self.name = name
        self.mode = mode
        self.audio_format = audio_format
        self.encoding, self.sample_rate = AUDIO_FORMATS[audio_format]

    def headers(self) -> dict[str, str]:
        """Handshake headers the dialect needs besides the suite's own."""
        return {"OpenAI-Beta": "realtime=v1"} if self.name == "beta" else {}

    def base_session(self) -> dict[str, Any]:
        """The session settings tamesu needs for the mode, before ``session_update`` is folded in."""
        audio = self.mode == "audio"
        if self.name == "beta":
            session: dict[str, Any] = {"modalities": ["text", "audio"] if audio else ["text"]}
            if audio:
                session.update(
                    input_audio_format=self.audio_format,
                    output_audio_format=self.audio_format,
                    turn_detection={"type": "server_vad"},
                )
            return session
        session = {"type": "realtime", "output_modalities": ["audio" if audio else "text"]}
        if audio:
            fmt = _GA_FORMAT[self.audio_format]
            session["audio"] = {
                "input": {"format": dict(fmt), "turn_detection": {"type": "server_vad"}},
                "output": {"format": dict(fmt)},
            }
        return session

    def session_update(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``session.update`` event: the mode's settings with ``extra`` (session_update) merged in."""
        return {"type": "session.update", "session": deep_merge(self.base_session(), extra or {})}

    def server_vad(self, session: Mapping[str, Any]) -> bool:
        """Whether the server detects the end of the caller's speech (and answers by itself)."""
        if self.name == "beta":
            detection = session.get("turn_detection", None)
        else:
            audio = session.get("audio")
            detection = audio.get("input", {}).get("turn_detection") if isinstance(audio, Mapping) else None
        return isinstance(detection, Mapping) and detection.get("create_response", True) is not False

    @staticmethod
    def user_text(text: str) -> dict[str, Any]:
        """A user message item (the same in both dialects)."""
        return {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        }

    @staticmethod
    def response_create() -> dict[str, Any]:
        return {"type": "response.create"}

    @staticmethod
    def function_output(call_id: str, output: str) -> dict[str, Any]:
        """The answer to one function call, as a ``function_call_output`` item."""
        return {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": call_id, "output": output},
        }

    @staticmethod
    def append(audio: bytes) -> dict[str, Any]:
        """A chunk of caller audio, already in the session's input format."""
        return {"type": "input_audio_buffer.append", "audio": base64.b64encode(audio).decode("ascii")}

    @staticmethod
    def commit() -> dict[str, Any]:
        return {"type": "input_audio_buffer.commit"}
