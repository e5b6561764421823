"""The pipecat target's small WebRTC transport: tamesu as a SmallWebRTC client, on aiortc.

Pipecat's ``SmallWebRTCTransport`` takes the client's SDP offer as JSON POSTed to the bot's offer
endpoint (``{sdp, type: offer, pc_id, restart_pc}``, what its ``SmallWebRTCRequestHandler``
reads) and answers ``{sdp, type: answer, pc_id}``. aiortc gathers every ICE candidate before the
offer is written, so no candidate is trickled (PATCH) afterwards, and no STUN server is asked.

- RTVI messages travel as JSON text on a data channel the client opens ("chat"), both ways.
  ``{"type": "signalling"}`` messages are the transport's own; ``ping`` keepalives are ignored.
  The bot hanging up (its ``peerLeft``, or the data channel shut down, which is what arrives when
  the pipeline closes the connection at once) is a clean close; the connection failing (ICE
  consent lost) is a dropped call.
- In audio mode the offer has one audio transceiver (Pipecat takes the first as the microphone):
  the caller's frames go out resampled to 48 kHz, Opus's rate (``CallerTrack``), and the bot's
  decoded track arrives as ``WireFrame`` audio in the inbox, as websocket frames do, so
  ``pipecat_audio`` plays it unchanged. A WebRTC track never stops (Pipecat sends silence when
  the bot is quiet), so silence past a short tail (``SILENCE_TAIL_S``) is not passed on: as on the
  websocket, the bot's audio arrives while it talks, and the call can hear that it stopped.

Everything the bot sends is bounded: a data channel message over ``limits.answer_size`` is dropped
(and recorded), JSON deeper than ``limits.json_depth`` is kept as text, and the inbox holds at most
``MAX_QUEUED`` items, dropping the oldest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Awaitable, Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from tamesu.clock import within
from tamesu.durations import format_duration
from tamesu.errors import MissingExtraError, TargetError
from tamesu.limits import decode_json
from tamesu.targets.pipecat.pipecat_wire import RTVI_LABEL, WireFrame, rtvi
from tamesu.wire.connect import HttpCall, request, snippet
from tamesu.wire.wslink import Closed, Inbox

try:
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
    from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtraError("aiortc (for pipecat targets with transport: webrtc)", extra="webrtc") from exc

if TYPE_CHECKING:
    import numpy as np

    from tamesu.targets.base import TargetContext
    from tamesu.wire.connect import ConnectPolicy

__all__ = ["OPUS_RATE", "CallerTrack", "PipecatPeer"]

OPUS_RATE = 48000
MAX_QUEUED = 2000
"""Items (RTVI messages, 20 ms audio frames) waiting in the inbox before the oldest are dropped."""
MAX_OUTGOING = 250
"""The caller's frames (5 s) waiting for the encoder before the oldest are dropped."""
SIGNALLING = "signalling"
SILENCE_TAIL_S = 0.2
"""Silence after the bot's sound still passed on (quiet syllables and the end of a word)."""


class CallerTrack(MediaStreamTrack):
    """The caller's microphone: frames the call pipeline pushes, at 48 kHz, as aiortc pulls them."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self.frames: deque[np.ndarray] = deque()
        self.dropped = 0
        self._ready = asyncio.Event()
        self._pts = 0
        self._resamplers: dict[int, Any] = {}

    def push(self, pcm: bytes, rate: int) -> None:
        import numpy as np

        samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2")
        if rate != OPUS_RATE:
            from tamesu.audio.resample import StreamResampler

            resampler = self._resamplers.setdefault(rate, StreamResampler(rate, OPUS_RATE))
            samples = resampler.push(samples)
        if not len(samples):
            return
        if len(self.frames) >= MAX_OUTGOING:
            self.frames.popleft()
            self.dropped += 1
        self.frames.append(samples.astype(np.int16, copy=False))
        self._ready.set()

    async def recv(self) -> Any:
        from av import AudioFrame

        while not self.frames:
            if self.readyState != "live":
                raise MediaStreamError
            self._ready.clear()
            await self._ready.wait()
        samples = self.frames.popleft()
        frame = AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = OPUS_RATE
        frame.pts = self._pts
        frame.time_base = Fraction(1, OPUS_RATE)
        self._pts += len(samples)
        return frame

    def stop(self) -> None:
        super().stop()
        self._ready.set()


def bot_audio(frame: Any) -> WireFrame | None:
    """A decoded frame of the bot's track as a ``WireFrame`` (interleaved PCM16), marked ``silent``
    when nothing in it is louder than the listener's threshold; None for a format it cannot read."""
    import numpy as np

    from tamesu.voice.silence import silent

    if frame.format.name not in ("s16", "s16p"):
        return None
    channels = len(frame.layout.channels)
    samples = frame.to_ndarray()
    if frame.format.is_planar:
        samples = samples.T
    samples = np.ascontiguousarray(samples, dtype="<i2").reshape(-1)
    fields: dict[str, Any] = {
        "audio": samples.tobytes(),
        "sample_rate": frame.sample_rate,
        "num_channels": channels,
    }
    if silent(samples):
        fields["silent"] = True
    return WireFrame("audio", fields)


class PipecatPeer(Inbox):
    """One SmallWebRTC session: the peer connection, its data channel and the bot's audio."""

    medium = "WebRTC connection"

    def __init__(self, ctx: TargetContext, url: str, *, audio: bool) -> None:
        self.ctx = ctx
        self.url = url
        self.audio = audio
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.closed: Closed | None = None
        self.dropped = 0
        self.pc_id: str | None = None
        self.pc: Any = None
        self.channel: Any = None
        self.caller = CallerTrack() if audio else None
        self._opened = asyncio.Event()
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def open(
        self,
        policy: ConnectPolicy,
        headers: dict[str, str],
        *,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Offer, answer, wait for the data channel, then ``ready()``. The POST is retried per
        ``connect:`` while the endpoint is unreachable or answers 5xx / 408 / 429."""
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.channel = self.pc.createDataChannel("chat", ordered=True)
        self.channel.on("open", self._opened.set)
        self.channel.on("message", self._message)
        self.channel.on("close", lambda: self._end(Closed(1000, "the bot closed the data channel")))
        self.pc.on("connectionstatechange", self._state)
        self.pc.on("track", self._track)
        if self.caller is not None:
            self.pc.addTransceiver(self.caller, direction="sendrecv")
        await self.pc.setLocalDescription(await self.pc.createOffer())
        offer = {"sdp": self.pc.localDescription.sdp, "type": "offer", "pc_id": None, "restart_pc": False}
        resp = await request(self.ctx, policy, HttpCall("POST", self.url, headers, offer))
        if resp.status_code >= 400:
            raise TargetError(
                f"the bot's offer endpoint {self.url} answered {resp.status_code}: {snippet(resp.text)}",
                retryable=False,
            )
        answer = self._answer(resp.text)
        try:
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
        except Exception as exc:  # aiortc raises ValueError and others on a bad SDP
            raise TargetError(
                f"the SDP answer from {self.url} is unusable: {snippet(f'{type(exc).__name__}: {exc}')}",
                retryable=False,
            ) from None
        timeout = self.ctx.turn_timeout
        with contextlib.suppress(asyncio.TimeoutError):
            await within(self._opened.wait(), timeout)
        if not self._opened.is_set() or self.closed is not None:
            why = f" ({self.closed.reason})" if self.closed is not None else ""
            raise TargetError(
                f"no WebRTC connection to the bot at {self.url} within {format_duration(timeout)}{why}",
                retryable=True,
            )
        if ready is not None:
            await ready()

    def _answer(self, text: str) -> dict[str, Any]:
        try:
            answer = decode_json(text, self.ctx.limits.json_depth)
        except ValueError:
            answer = None
        if (
            not isinstance(answer, dict)
            or answer.get("type") != "answer"
            or not isinstance(answer.get("sdp"), str)
        ):
            raise TargetError(
                f"the bot's offer endpoint {self.url} answered without an SDP answer: {snippet(text)}",
                retryable=False,
            )
        pc_id = answer.get("pc_id")
        self.pc_id = pc_id if isinstance(pc_id, str) else None
        return answer

    # What the bot sends.

    def _put(self, item: Any) -> None:
        if self.closed is not None:
            return
        if self.queue.qsize() >= MAX_QUEUED:
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(item)

    def _end(self, closed: Closed) -> None:
        if self.closed is None and not self._closing:
            self.closed = closed
            self.queue.put_nowait(closed)
        self._opened.set()

    def _message(self, message: str | bytes) -> None:
        limits = self.ctx.limits
        if len(message) > limits.answer_size:
            self._put(
                {"dropped": f"a data channel message of {len(message)} bytes (over {limits.answer_size})"}
            )
            return
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        if text.startswith("ping"):
            return
        try:
            item = decode_json(text, limits.json_depth)
        except ValueError:
            self._put({"unparsed": snippet(text)})
            return
        if isinstance(item, dict) and item.get("type") == SIGNALLING and item.get("label") != RTVI_LABEL:
            signal = item.get("message")
            if isinstance(signal, dict) and signal.get("type") == "peerLeft":
                self._end(Closed(1000, "the bot left the call"))
                return
        self._put(item)

    async def _state(self) -> None:
        state = self.pc.connectionState if self.pc is not None else "closed"
        if state in ("failed", "closed"):
            self._end(Closed(None, f"the peer connection {state}"))

    def _track(self, track: Any) -> None:
        if track.kind == "audio" and self.audio:
            task = asyncio.get_running_loop().create_task(
                self._hear(track), name="tamesu-pipecat-webrtc-audio"
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _hear(self, track: Any) -> None:
        from tamesu.voice.silence import SilenceGate

        gate = SilenceGate(SILENCE_TAIL_S)
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            item = bot_audio(frame)
            if item is None:
                continue
            if gate.keep(bool(item.get("silent")), frame.samples / max(1, frame.sample_rate)):
                self._put(item)

    # What tamesu sends.

    async def send_message(self, message: dict[str, Any]) -> None:
        if self.channel is None or self.channel.readyState != "open":
            reason = self.closed.describe() if self.closed is not None else "not open"
            raise TargetError(f"the bot's data channel is closed ({reason})")
        self.channel.send(json.dumps(message, ensure_ascii=False))

    async def send_transcription(self, text: str) -> None:
        """The data channel carries only RTVI: the words go as ``send-text`` all the same."""
        await self.send_message(rtvi("send-text", {"content": text, "options": {"run_immediately": True}}))

    def send_audio(self, pcm: bytes, rate: int) -> None:
        if self.caller is not None and self.closed is None:
            self.caller.push(pcm, rate)

    async def close(self) -> None:
        self._closing = True
        if self.caller is not None:
            self.caller.stop()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.pc is not None:
            pc, self.pc = self.pc, None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pc.close(), timeout=5)
