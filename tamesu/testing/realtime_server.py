"""A loopback server speaking the OpenAI Realtime API's events, replaying recorded sequences.

A recording is a JSON-lines file (blank lines and ``#`` comments ignored) of steps, replayed once
per connection:

- a server event (an object with ``type``) is sent as it is; ``event_id`` is filled in when
  missing, and a ``delta`` of ``{"$audio": {"tone": 440, "ms": 300}}`` (``{"silence": true, "ms":
  300}``, or ``{"say": "Your order shipped"}`` spoken by tamesu's TTS) becomes base64 audio in the
  session's output format;
- ``{"expect": "response.create", "match": {...}}`` waits for the client's next event of that type
  (other client events are recorded and skipped); ``match`` is a subset the event must contain;
- ``{"expect": "speech", "silence_ms": 500}`` waits, as server VAD does, until the appended input
  audio held speech followed by that much silence;
- ``{"sleep_ms": 200}`` pauses; ``{"close": 1000, "reason": "bye"}`` closes the socket.

Client events are validated against the ``openai`` package's event models of the dialect when it
is installed (``validate=True``), and so are the recording's server events, so a recording that
drifts from the documented shapes is caught. As the API does, the server answers a client event it
cannot accept (a key its shape does not have, a wrong value) with an ``error`` event
(``unknown_parameter``, ``invalid_value``) and otherwise ignores it: a replay waiting for it goes on
waiting. Everything unexpected lands in ``session.problems``.

    async with serve_realtime_server(load_recording("text_turn.jsonl")) as server:
        ...  # a realtime target with url: server.url
        assert server.sessions[0].problems == []
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "RealtimeServer",
    "ServerSession",
    "check_event",
    "load_recording",
    "rejection",
    "serve_realtime_server",
]

Dialect = Literal["ga", "beta"]
_FORMATS = {
    "pcm16": ("pcm16", 24000),
    "audio/pcm": ("pcm16", 24000),
    "g711_ulaw": ("mulaw", 8000),
    "audio/pcmu": ("mulaw", 8000),
    "g711_alaw": ("alaw", 8000),
    "audio/pcma": ("alaw", 8000),
}
SPEECH_DBFS = -45.0
"""Input audio louder than this (RMS of a 20 ms frame) counts as speech."""


def load_recording(path: str | Path) -> list[dict[str, Any]]:
    """The steps of a JSON-lines recording."""
    steps = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            steps.append(json.loads(line))
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: not JSON: {exc}") from None
    return steps


@cache
def _models(dialect: Dialect, side: Literal["client", "server"]) -> dict[str, Any]:
    """Event type -> the openai package's model of it (empty when openai is not installed)."""
    from typing import get_args

    try:
        if dialect == "beta":
            from openai.types.beta.realtime import realtime_client_event as c
            from openai.types.beta.realtime import realtime_server_event as s
        else:
            from openai.types.realtime import realtime_client_event as c  # type: ignore[no-redef]
            from openai.types.realtime import realtime_server_event as s  # type: ignore[no-redef]
    except ImportError:
        return {}
    union = c.RealtimeClientEvent if side == "client" else s.RealtimeServerEvent
    out: dict[str, Any] = {}
    for cls in get_args(get_args(union)[0]):
        field_info = getattr(cls, "model_fields", {}).get("type")
        for name in get_args(field_info.annotation) if field_info is not None else ():
            out[name] = cls
    return out


def _unknown(value: Any, path: str) -> Iterator[str]:
    """The paths of keys no model field declares (the openai models accept them; the API does not)."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        for key in value.model_extra or {}:
            yield f"{path}.{key}" if path else str(key)
        for name, info in type(value).model_fields.items():
            key = info.alias or name
            yield from _unknown(getattr(value, name), f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _unknown(item, f"{path}[{i}]")


def rejection(
    event: Mapping[str, Any], dialect: Dialect, side: Literal["client", "server"]
) -> tuple[str, str | None, str] | None:
    """(code, param, message) the API answers ``event`` with when it is not a documented event, or None.

    As the API does, a key the event's shape does not have is an ``unknown_parameter``; in a
    server's ``session`` such keys are allowed, as the API's effective session carries some
    (``object``, ``id``) the package does not model. None also when openai is not installed.
    """
    models = _models(dialect, side)
    if not models:
        return None
    model = models.get(str(event.get("type")))
    if model is None:
        return (
            "invalid_value",
            "type",
            f"{side} event type {event.get('type')!r} is not in the {dialect} dialect",
        )
    try:
        parsed = model.model_validate(dict(event))
    except Exception as exc:
        errors: list[dict[str, Any]] = getattr(exc, "errors", lambda: [])()
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:3]) or str(exc)
        param = ".".join(map(str, errors[0]["loc"])) if errors else None
        return "invalid_value", param, f"{side} event {event.get('type')}: {where}"
    allowed = "session." if side == "server" else None
    unknown = next((k for k in _unknown(parsed, "") if not (allowed and k.startswith(allowed))), None)
    if unknown is not None:
        return "unknown_parameter", unknown, f"Unknown parameter: '{unknown}'."
    return None


def check_event(event: Mapping[str, Any], dialect: Dialect, side: Literal["client", "server"]) -> str | None:
    """Why ``event`` is not a documented event of the dialect, or None (also when openai is absent)."""
    rejected = rejection(event, dialect, side)
    if rejected is None:
        return None
    code, _, message = rejected
    return f"{side} event {event.get('type')}: {message}" if code == "unknown_parameter" else message


def _subset(expected: Any, actual: Any) -> bool:
    """Mappings match by the keys given; lists element by element (same length); the rest by equality."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_subset(e, a) for e, a in zip(expected, actual))
        )
    return bool(expected == actual)


@dataclass
class ServerSession:
    """One connection: its handshake, the client's events, and what went wrong."""

    path: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    received: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    input_format: str = "pcm16"
    output_format: str = "pcm16"
    input_audio: bytearray = field(default_factory=bytearray)
    finished: bool = False

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.received if e.get("type") == kind]


class RealtimeServer:
    """Replays ``steps`` on every connection; ``dialect`` picks the models events are checked against."""

    def __init__(
        self,
        steps: Sequence[Mapping[str, Any]],
        *,
        dialect: Dialect = "ga",
        validate: bool = True,
        api_key: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.steps = [dict(s) for s in steps]
        self.dialect = dialect
        self.validate = validate
        self.api_key = api_key
        """When set, the handshake must carry ``Authorization: Bearer <api_key>`` or it is refused (401)."""
        self.timeout = timeout
        self.sessions: list[ServerSession] = []
        self.url = ""
        self._ids = 0

    def _refuse(self, connection: Any, request: Any) -> Any:
        if self.api_key is None:
            return None
        given = request.headers.get("Authorization", "")
        if given == f"Bearer {self.api_key}":
            return None
        key = given.removeprefix("Bearer ")
        body = {
            "error": {
                "message": f"Incorrect API key provided: {key}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
        response = connection.respond(401, json.dumps(body))
        response.headers["Content-Type"] = "application/json"
        return response

    async def handle(self, ws: Any) -> None:
        session = ServerSession(path=ws.request.path, headers=dict(ws.request.headers.raw_items()))
        self.sessions.append(session)
        inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        reader = asyncio.create_task(self._read(ws, session, inbox))
        try:
            for step in self.steps:
                if not await self._step(ws, session, step, inbox):
                    break
            session.finished = True
            await reader
        except Exception as exc:  # a broken replay is a problem to report, not a crash
            session.problems.append(f"{type(exc).__name__}: {exc}")
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader

    async def _read(
        self, ws: Any, session: ServerSession, inbox: asyncio.Queue[dict[str, Any] | None]
    ) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for frame in ws:
                try:
                    event = json.loads(frame)
                except ValueError:
                    session.problems.append(f"client sent a frame that is not JSON: {str(frame)[:80]}")
                    continue
                session.received.append(event)
                rejected = rejection(event, self.dialect, "client") if self.validate else None
                if rejected is not None:
                    session.problems.append(check_event(event, self.dialect, "client") or rejected[2])
                    await ws.send(json.dumps(self._error(event, *rejected)))
                    continue
                self._track(session, event)
                inbox.put_nowait(event)
        except ConnectionClosed:
            pass
        inbox.put_nowait(None)

    def _error(self, event: Mapping[str, Any], code: str, param: str | None, message: str) -> dict[str, Any]:
        """The ``error`` event the API sends for a client event it rejects."""
        self._ids += 1
        error = {"type": "invalid_request_error", "code": code, "message": message, "param": param}
        return {
            "type": "error",
            "event_id": f"event_{self._ids}",
            "error": {**error, "event_id": event.get("event_id")},
        }

    def _track(self, session: ServerSession, event: Mapping[str, Any]) -> None:
        """Follow the session's audio formats and buffer the caller's audio."""
        kind = event.get("type")
        if kind == "session.update" and isinstance(event.get("session"), Mapping):
            s = event["session"]
            if self.dialect == "beta":
                session.input_format = str(s.get("input_audio_format") or session.input_format)
                session.output_format = str(s.get("output_audio_format") or session.output_format)
            else:
                audio = s.get("audio") if isinstance(s.get("audio"), Mapping) else {}
                for side in ("input", "output"):
                    fmt = (
                        (audio.get(side) or {}).get("format")
                        if isinstance(audio.get(side), Mapping)
                        else None
                    )
                    if isinstance(fmt, Mapping) and fmt.get("type"):
                        setattr(session, f"{side}_format", str(fmt["type"]))
        elif kind == "input_audio_buffer.append":
            try:
                session.input_audio += base64.b64decode(str(event.get("audio", "")))
            except ValueError:
                session.problems.append("input_audio_buffer.append: audio is not base64")

    async def _step(
        self,
        ws: Any,
        session: ServerSession,
        step: dict[str, Any],
        inbox: asyncio.Queue[dict[str, Any] | None],
    ) -> bool:
        if "expect" in step:
            return await self._expect(session, step, inbox)
        if "sleep_ms" in step:
            await asyncio.sleep(float(step["sleep_ms"]) / 1000)
            return True
        if "close" in step:
            await ws.close(int(step["close"]), str(step.get("reason", "")))
            return False
        event = await self._render(session, step)
        if self.validate:
            problem = check_event(event, self.dialect, "server")
            if problem:
                session.problems.append(f"recording: {problem}")
        await ws.send(json.dumps(event))
        return True

    async def _expect(
        self, session: ServerSession, step: dict[str, Any], inbox: asyncio.Queue[dict[str, Any] | None]
    ) -> bool:
        kind = str(step["expect"])
        while True:
            if kind == "speech" and self._heard_speech(session, int(step.get("silence_ms", 500))):
                session.input_audio.clear()
                return True
            try:
                event = await asyncio.wait_for(inbox.get(), timeout=self.timeout)
            except asyncio.TimeoutError:
                session.problems.append(f"no {kind} from the client within {self.timeout:g}s")
                return False
            if event is None:
                session.problems.append(f"the client left while the server expected {kind}")
                return False
            if event.get("type") == kind:
                if "match" in step and not _subset(step["match"], event):
                    session.problems.append(
                        f"{kind} does not match {json.dumps(step['match'])}: {json.dumps(event)[:300]}"
                    )
                return True

    def _heard_speech(self, session: ServerSession, silence_ms: int) -> bool:
        """Server VAD: speech somewhere in the buffer, then ``silence_ms`` of silence at its end."""
        import numpy as np

        from tamesu.audio.codec import decode
        from tamesu.audio.pcm import dbfs

        encoding, rate = _FORMATS.get(session.input_format, ("pcm16", 24000))
        samples = decode(bytes(session.input_audio), encoding)
        frame = rate // 50
        n = len(samples) // frame
        if n == 0:
            return False
        levels = np.asarray(dbfs(samples[: n * frame].reshape(n, frame), axis=1))
        loud = np.flatnonzero(levels > SPEECH_DBFS)
        if len(loud) == 0:
            return False
        return (n - 1 - int(loud[-1])) * 20 >= silence_ms

    async def _render(self, session: ServerSession, step: dict[str, Any]) -> dict[str, Any]:
        event = dict(step)
        if "event_id" not in event:
            self._ids += 1
            event["event_id"] = f"event_{self._ids}"
        delta = event.get("delta")
        if isinstance(delta, Mapping) and "$audio" in delta:
            event["delta"] = await self._audio(session, delta["$audio"])
        return event

    @staticmethod
    async def _audio(session: ServerSession, spec: Mapping[str, Any]) -> str:
        """Base64 audio in the session's output format: a tone, silence, or speech (``say``, by TTS)."""
        from tamesu.audio.codec import encode
        from tamesu.audio.synth import silence, tone

        encoding, rate = _FORMATS.get(session.output_format, ("pcm16", 24000))
        seconds = float(spec.get("ms", 200)) / 1000
        if spec.get("say"):
            from tamesu.audio.engines import tts_for

            engine, choice = tts_for(spec.get("voice"), spec.get("language"))
            audio = await engine.synthesize(str(spec["say"]), voice=choice.voice, language=choice.language)
            samples = audio.resample(rate).samples
        elif spec.get("silence"):
            samples = silence(seconds, rate)
        else:
            samples = tone(float(spec.get("tone", 440)), seconds, rate)
        return base64.b64encode(encode(samples, encoding)).decode("ascii")


@asynccontextmanager
async def serve_realtime_server(
    steps: Sequence[Mapping[str, Any]] | RealtimeServer,
    *,
    dialect: Dialect = "ga",
    validate: bool = True,
    api_key: str | None = None,
    path: str = "/v1/realtime",
) -> AsyncIterator[RealtimeServer]:
    """Serve a RealtimeServer on 127.0.0.1 for the block; ``server.url`` is its ``ws://`` URL."""
    from websockets.asyncio.server import serve

    server = (
        steps
        if isinstance(steps, RealtimeServer)
        else RealtimeServer(steps, dialect=dialect, validate=validate, api_key=api_key)
    )
    async with serve(
        server.handle, "127.0.0.1", 0, process_request=server._refuse, max_size=None
    ) as ws_server:
        port = next(iter(ws_server.sockets)).getsockname()[1]
        server.url = f"ws://127.0.0.1:{port}{path}"
        yield server
