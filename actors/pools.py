"""Shared engine pools: the heavy speech engines (TTS, STT) every call of a process or cluster uses.

A voice call asks the speech pool of its run's services (``RunServices.speech``) to synthesise
the caller's words and transcribe the agent's. In one process that is ``LocalSpeechPool``
(``tamesu.speech_pool``): the process's own engines. On Ray each worker's services hold a client of
a pool of engine actors instead (``RaySpeechClient``), shared by all calls of the cluster, with
``num_gpus`` for STT where the cluster has GPUs and a replica count that follows the load. Calls
never know which one they got: both have the same three methods.

What crosses a process is batched: a ``Batcher`` gathers the requests of many calls for a few
milliseconds and sends them as one actor call (an utterance is one request, already a batch of
frames), and a ``SpeechServer`` runs a batch concurrently on its engines. ``Autoscaler`` is the
replica-count policy. None of this imports Ray; ``tamesu.runner.placement.ray`` wires it up.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from tamesu.engine_cpu import CpuAccount, charge, charging
from tamesu.speech_pool import LocalSpeechPool

if TYPE_CHECKING:
    from tamesu.audio.stt import Transcription
    from tamesu.audio.tts import Audio
    from tamesu.speech_pool import SpeechPool

__all__ = [
    "Autoscaler",
    "Batcher",
    "SpeechServer",
    "SynthesisReply",
    "SynthesisRequest",
    "TranscriptionReply",
    "TranscriptionRequest",
    "audio_of",
    "transcription_of",
]

Req = TypeVar("Req")
Rep = TypeVar("Rep")


class SynthesisRequest(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    voice: str | None = None
    language: str | None = None
    engine: str | None = None


class SynthesisReply(msgspec.Struct, kw_only=True):
    pcm: bytes = b""
    sample_rate: int = 16000
    error: str | None = None
    error_type: str | None = None
    cpu: dict[str, float] = msgspec.field(default_factory=dict)
    """CPU seconds the request cost, by engine: the caller's run is charged them."""


class TranscriptionRequest(msgspec.Struct, frozen=True, kw_only=True):
    pcm: bytes
    sample_rate: int
    language: str | None = None
    engine: str | None = None


class TranscriptionReply(msgspec.Struct, kw_only=True):
    text: str = ""
    language: str | None = None
    duration: float = 0.0
    segments: list[tuple[float, float, str]] = msgspec.field(default_factory=list)
    processing_s: float = 0.0
    engine: str = ""
    error: str | None = None
    error_type: str | None = None
    cpu: dict[str, float] = msgspec.field(default_factory=dict)


@dataclass
class _Waiting(Generic[Req, Rep]):
    request: Req
    future: asyncio.Future[Rep]


class Batcher(Generic[Req, Rep]):
    """Gathers requests from many callers and sends them in batches through ``send``.

    A batch leaves when it holds ``max_batch`` requests or ``max_wait`` seconds after its first
    request, whichever comes first, so a lone request waits at most ``max_wait``. ``send`` gets a
    list of requests and returns the replies in the same order; if it raises, every request of
    that batch gets the exception.
    """

    def __init__(
        self,
        send: Callable[[list[Req]], Awaitable[Sequence[Rep]]],
        *,
        max_batch: int = 32,
        max_wait: float = 0.005,
    ) -> None:
        self.send = send
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._pending: list[_Waiting[Req, Rep]] = []
        self._timer: asyncio.TimerHandle | None = None
        self.batches = 0
        self.requests = 0
        self._sending: set[asyncio.Future[None]] = set()

    async def submit(self, request: Req) -> Rep:
        loop = asyncio.get_running_loop()
        waiting = _Waiting(request, loop.create_future())
        self._pending.append(waiting)
        self.requests += 1
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_wait, self._flush)
        return await waiting.future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            self.batches += 1
            task = asyncio.ensure_future(self._deliver(batch))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _deliver(self, batch: list[_Waiting[Req, Rep]]) -> None:
        try:
            replies = list(await self.send([w.request for w in batch]))
            if len(replies) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} requests got {len(replies)} replies")
        except BaseException as exc:
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(exc)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return
        for w, reply in zip(batch, replies):
            if not w.future.done():
                w.future.set_result(reply)


class SpeechServer:
    """One replica of the speech pool: engines loaded once, batches from many calls served at once.

    It becomes a Ray actor only where the pool is launched (``ray.remote(...)(SpeechServer)``);
    ``setup`` runs first (to register plugin engines in the replica's process).
    """

    def __init__(self, *, setup: Callable[[], object] | None = None, local: SpeechPool | None = None) -> None:
        if setup is not None:
            setup()
        self.local = local or LocalSpeechPool()
        self.in_flight = 0
        self.served = 0
        self.batches = 0
        self.started = time.monotonic()

    async def synthesize_batch(self, requests: list[SynthesisRequest]) -> list[SynthesisReply]:
        return await self._batch(requests, self._synthesize)

    async def transcribe_batch(self, requests: list[TranscriptionRequest]) -> list[TranscriptionReply]:
        return await self._batch(requests, self._transcribe)

    async def _batch(self, requests: list[Any], one: Callable[[Any], Awaitable[Any]]) -> list[Any]:
        self.in_flight += len(requests)
        self.batches += 1
        try:
            return list(await asyncio.gather(*(one(r) for r in requests)))
        finally:
            self.in_flight -= len(requests)
            self.served += len(requests)

    async def _synthesize(self, r: SynthesisRequest) -> SynthesisReply:
        with charging(CpuAccount()) as cpu:
            try:
                audio = await self.local.synthesize(
                    r.text, voice=r.voice, language=r.language, engine=r.engine
                )
            except Exception as exc:
                return SynthesisReply(error=str(exc), error_type=type(exc).__name__, cpu=cpu.by_engine)
        return SynthesisReply(pcm=audio.samples.tobytes(), sample_rate=audio.sample_rate, cpu=cpu.by_engine)

    async def _transcribe(self, r: TranscriptionRequest) -> TranscriptionReply:
        from tamesu.audio.tts import Audio

        with charging(CpuAccount()) as cpu:
            try:
                t = await self.local.transcribe(
                    Audio.from_pcm(r.pcm, r.sample_rate), language=r.language, engine=r.engine
                )
            except Exception as exc:
                return TranscriptionReply(error=str(exc), error_type=type(exc).__name__, cpu=cpu.by_engine)
        return TranscriptionReply(
            cpu=cpu.by_engine,
            text=t.text,
            language=t.language,
            duration=t.duration,
            segments=[(s.start, s.end, s.text) for s in t.segments],
            processing_s=t.processing_s,
            engine=t.engine,
        )

    def load(self) -> dict[str, float]:
        """In flight now and served so far: what the autoscaler reads."""
        return {"in_flight": self.in_flight, "served": self.served, "batches": self.batches}


def audio_of(reply: SynthesisReply) -> Audio:
    """A reply's audio, or the engine's error raised again here; the caller is charged its CPU."""
    from tamesu.audio.tts import Audio

    _charge(reply.cpu)
    _raise(reply.error, reply.error_type)
    return Audio.from_pcm(reply.pcm, reply.sample_rate)


def transcription_of(reply: TranscriptionReply) -> Transcription:
    from tamesu.audio.stt import Transcription, TranscriptionSegment

    _charge(reply.cpu)
    _raise(reply.error, reply.error_type)
    return Transcription(
        text=reply.text,
        language=reply.language,
        duration=reply.duration,
        segments=tuple(TranscriptionSegment(start=a, end=b, text=t) for a, b, t in reply.segments),
        processing_s=reply.processing_s,
        real_time_factor=(reply.processing_s / reply.duration) if reply.duration else None,
        engine=reply.engine,
    )


def _charge(cpu: dict[str, float]) -> None:
    for engine, seconds in cpu.items():
        charge(engine, seconds)


def _raise(error: str | None, kind: str | None) -> None:
    if error is None:
        return
    from tamesu.errors import ConfigError, ModelError

    if kind == "ConfigError":
        raise ConfigError(error)
    raise ModelError(f"speech engine: {error}")


@dataclass
class Autoscaler:
    """How many replicas a pool should have, from the requests in flight on each.

    Scale up at once when the mean in flight per replica exceeds ``target``; scale down one
    replica at a time, only after ``cooldown`` seconds below half the target, so a pool does not
    flap between bursts of calls.
    """

    min_replicas: int = 1
    max_replicas: int = 4
    target: float = 8.0
    cooldown: float = 30.0
    _low_since: float | None = field(default=None, repr=False)

    def desired(self, in_flight: Sequence[float], now: float) -> int:
        current = max(1, len(in_flight))
        load = sum(in_flight)
        want = max(self.min_replicas, min(self.max_replicas, math.ceil(load / self.target) if load else 0))
        if want > current:
            self._low_since = None
            return want
        if load / current < self.target / 2 and current > self.min_replicas:
            if self._low_since is None:
                self._low_since = now
            if now - self._low_since >= self.cooldown:
                self._low_since = now
                return current - 1
            return current
        self._low_since = None
        return max(current, self.min_replicas)
