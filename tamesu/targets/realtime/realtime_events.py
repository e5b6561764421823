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
the events whose shape differs. A suite's ``session_update`` may use either session shape (the
reference's own examples use the flat beta keys, ``voice: alloy``): ``Dialect.session_shape`` moves
each key to where the target's dialect has it (``FLAT_TO_GA``), and a key given in the dialect's own
shape wins over the same setting given in the other.

Both modes of the target read the server's events the same way: ``Calls`` gathers a response's
function calls, ``failure`` and ``api_error`` say what went wrong, ``kept`` picks the raw events a
transcript keeps.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AUDIO_FORMATS",
    "BETA_TO_GA",
    "DEFAULT_URL",
    "FLAT_TO_GA",
    "Calls",
    "Dialect",
    "DialectName",
    "api_error",
    "as_dict",
    "canonical",
    "deep_merge",
    "failure",
    "kept",
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


FLAT_TO_GA: dict[str, tuple[str, ...]] = {
    "voice": ("audio", "output", "voice"),
    "speed": ("audio", "output", "speed"),
    "output_audio_format": ("audio", "output", "format"),
    "input_audio_format": ("audio", "input", "format"),
    "turn_detection": ("audio", "input", "turn_detection"),
    "input_audio_transcription": ("audio", "input", "transcription"),
    "input_audio_noise_reduction": ("audio", "input", "noise_reduction"),
    "modalities": ("output_modalities",),
    "max_response_output_tokens": ("max_output_tokens",),
}
"""Flat (beta) session keys -> where the GA session has them."""


def _ga_value(key: str, value: Any) -> Any:
    """A flat key's value as the GA session holds it."""
    if key.endswith("_audio_format") and isinstance(value, str) and value in _GA_FORMAT:
        return dict(_GA_FORMAT[value])
    if key == "modalities" and isinstance(value, list):
        return ["audio"] if "audio" in value else ["text"]
    if key == "turn_detection" and isinstance(value, Mapping) and "type" not in value:
        return {"type": "server_vad", **value}
    return copy.deepcopy(value)


def _flat_value(key: str, value: Any) -> Any:
    """A GA value as the flat (beta) key ``key`` holds it."""
    if key.endswith("_audio_format") and isinstance(value, Mapping):
        names = {fmt["type"]: name for name, fmt in _GA_FORMAT.items()}
        return names.get(str(value.get("type")), value)
    if key == "modalities" and isinstance(value, list):
        return ["text", "audio"] if "audio" in value else ["text"]
    return copy.deepcopy(value)


def _to_ga(session: Mapping[str, Any]) -> dict[str, Any]:
    moved: dict[str, Any] = {}
    for key, path in FLAT_TO_GA.items():
        if key in session:
            node = moved
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = _ga_value(key, session[key])
    return deep_merge(moved, {k: v for k, v in session.items() if k not in FLAT_TO_GA})


def _to_beta(session: Mapping[str, Any]) -> dict[str, Any]:
    rest = {k: copy.deepcopy(v) for k, v in session.items() if not (k == "type" and v == "realtime")}
    moved: dict[str, Any] = {}
    for key, path in FLAT_TO_GA.items():
        node: Any = rest
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, dict) and path[-1] in node:
            moved[key] = _flat_value(key, node.pop(path[-1]))
    audio = rest.get("audio")
    if isinstance(audio, dict):
        for side in ("input", "output"):
            if audio.get(side) == {}:
                del audio[side]
        if not audio:
            del rest["audio"]
    return deep_merge(moved, rest)


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

    def session_shape(self, session: Mapping[str, Any]) -> dict[str, Any]:
        """``session`` (a suite's ``session_update``) with every known key where this dialect has it."""
        return _to_beta(session) if self.name == "beta" else _to_ga(session)

    def session_update(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``session.update`` event: the mode's settings with ``extra`` (session_update) merged in."""
        session = deep_merge(self.base_session(), self.session_shape(extra or {}))
        return {"type": "session.update", "session": session}

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


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (events are untrusted)."""
    return value if isinstance(value, dict) else {}


def api_error(event: dict[str, Any], *, before: str | None = None) -> str:
    """The text of an ``error`` event (not yet redacted)."""
    error = as_dict(event.get("error"))
    kind = str(error.get("type") or "error")
    code = f" ({error['code']})" if error.get("code") else ""
    where = f" before {before}" if before else ""
    return f"the realtime API sent an error{where}: {kind}{code}: {error.get('message') or 'no message'}"


def kept(event: dict[str, Any]) -> bool:
    """Raw responses keep every event but streaming deltas (their ``.done`` events say it all)."""
    return not str(event.get("type", "")).endswith(".delta")


_ITEM_EVENTS = ("response.output_item.added", "response.output_item.done", "conversation.item.created")


@dataclass
class Calls:
    """The function calls of one response, by call id, as they are announced.

    Beta's ``response.function_call_arguments.done`` carries no ``name``: a call's name comes from
    its output item (``response.output_item.added`` / ``.done``, ``conversation.item.created``),
    whichever of them arrives first.
    """

    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    """Function names by call id and by item id, from every function call item seen."""

    def add(self, event: dict[str, Any], *, item_id: Any = None) -> None:
        call_id = str(event.get("call_id") or f"call_{len(self.pending) + 1}")
        name = str(event.get("name") or "")
        if name:
            self.names[call_id] = name
            if item_id:
                self.names[str(item_id)] = name
        call = self.pending.setdefault(call_id, {"name": "", "arguments": None, "item_id": item_id})
        call["name"] = call["name"] or name
        if call["arguments"] in (None, ""):
            call["arguments"] = event.get("arguments")

    def see(self, kind: str, event: dict[str, Any]) -> None:
        """Pick calls out of ``response.function_call_arguments.done``, the output item events and ``response.done``."""
        if kind == "response.function_call_arguments.done":
            self.add(event, item_id=event.get("item_id"))
        elif kind in _ITEM_EVENTS and isinstance(event.get("item"), dict):
            item = event["item"]
            if item.get("type") == "function_call":
                self.add(item, item_id=item.get("id"))
        elif kind == "response.done" and isinstance(event.get("response"), dict):
            for item in event["response"].get("output") or []:
                if isinstance(item, dict) and item.get("type") == "function_call":
                    self.add(item, item_id=item.get("id"))

    def take(self) -> dict[str, dict[str, Any]]:
        """The calls announced since the last take, each named from its item when its event had no name."""
        out, self.pending = self.pending, {}
        for call_id, call in out.items():
            item_id = call.pop("item_id", None)
            call["name"] = call["name"] or self.names.get(call_id) or self.names.get(str(item_id), "")
        return out


def failure(event: dict[str, Any]) -> tuple[str, bool] | None:
    """(why, retryable) when a ``response.done`` reports a failed response."""
    response = as_dict(event.get("response"))
    if response.get("status") != "failed":
        return None
    error = as_dict(as_dict(response.get("status_details")).get("error"))
    why = ": ".join(str(error[k]) for k in ("type", "code", "message") if error.get(k)) or "no details"
    return f"the realtime response failed ({why})", error.get("type") in (None, "server_error")
