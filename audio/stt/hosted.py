"""Hosted STT over the OpenAI-compatible ``POST /v1/audio/transcriptions`` (multipart in, JSON out).

Optional and used only when configured (``get_stt("openai", ...)``). Works with OpenAI itself and
with the many servers that copy its wire format (faster-whisper-server, vLLM, LocalAI, Groq...)
through ``base_url``. It is the way to transcribe languages the shipped English-only model cannot.
Timeouts, connection failures, 408, 429 and 5xx are retried; other answers are not.
"""

from __future__ import annotations

from typing import Any, Literal

from tamesu.errors import ModelError

from ..tts.audio import Audio
from ..tts.engine import primary_language
from ..tts.hosted import http_failure, openai_settings, transport_failure
from ..tts.workers import Retryable
from .engine import STTCapabilities, STTEngine, Transcription, TranscriptionSegment, Word, stt_engines

__all__ = ["OpenAISTT", "parse_transcription"]


def _words_into(segments: list[dict[str, Any]], words: list[Word]) -> tuple[TranscriptionSegment, ...]:
    """Segments with the top-level word list shared out by where each word's middle falls."""
    if not segments:
        if not words:
            return ()
        text = " ".join(w.text for w in words)
        return (TranscriptionSegment(words[0].start, words[-1].end, text, tuple(words)),)
    buckets: list[list[Word]] = [[] for _ in segments]
    for word in words:
        middle = (word.start + word.end) / 2
        best = min(
            range(len(segments)),
            key=lambda i: (
                0.0
                if float(segments[i].get("start", 0)) <= middle <= float(segments[i].get("end", 0))
                else min(
                    abs(middle - float(segments[i].get("start", 0))),
                    abs(middle - float(segments[i].get("end", 0))),
                )
            ),
        )
        buckets[best].append(word)
    return tuple(
        TranscriptionSegment(
            start=float(s.get("start", 0.0)),
            end=float(s.get("end", 0.0)),
            text=str(s.get("text", "")).strip(),
            words=tuple(bucket),
        )
        for s, bucket in zip(segments, buckets)
    )


def parse_transcription(body: dict[str, Any], *, duration: float, language: str | None) -> Transcription:
    """An OpenAI transcription answer (``json`` or ``verbose_json``) as a ``Transcription``."""
    if not isinstance(body, dict) or "text" not in body:
        raise ModelError(f"transcription answer has no text: {str(body)[:200]}")
    words = [
        Word(str(w.get("word", "")).strip(), float(w.get("start", 0.0)), float(w.get("end", 0.0)))
        for w in body.get("words") or ()
    ]
    return Transcription(
        text=str(body["text"]).strip(),
        language=language or body.get("language"),
        duration=float(body.get("duration") or duration),
        segments=_words_into(list(body.get("segments") or ()), words),
    )


@stt_engines.register("openai")
class OpenAISTT(STTEngine):
    """``POST {base_url}/audio/transcriptions`` with the audio as a 16 kHz WAV file."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str = "whisper-1",
        response_format: Literal["verbose_json", "json"] = "verbose_json",
        word_timestamps: bool = False,
        prompt: str | None = None,
        timeout: float = 60.0,
        attempts: int = 3,
        backoff: float = 0.5,
    ) -> None:
        super().__init__(attempts=attempts, backoff=backoff)
        self.base_url, self._api_key = openai_settings(base_url, api_key, engine="openai STT")
        self.model = model
        self.response_format = response_format
        self.word_timestamps = word_timestamps
        self.prompt = prompt
        self.timeout = timeout

    @property
    def capabilities(self) -> STTCapabilities:
        return STTCapabilities(languages=None, sample_rate=16000, word_timestamps=self.word_timestamps)

    def _form(self, language: str | None) -> dict[str, str | list[str]]:
        form: dict[str, str | list[str]] = {"model": self.model, "response_format": self.response_format}
        if language:
            form["language"] = primary_language(language)
        if self.prompt:
            form["prompt"] = self.prompt
        if self.response_format == "verbose_json":
            form["timestamp_granularities[]"] = ["segment", "word"] if self.word_timestamps else ["segment"]
        return form

    async def _transcribe(self, audio: Audio, *, language: str | None) -> Transcription:
        from tamesu.http import make_client

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        url = f"{self.base_url}/audio/transcriptions"
        what = f"STT {url}"
        files = {"file": ("audio.wav", audio.to_wav(), "audio/wav")}
        async with make_client(timeout=self.timeout, headers=headers) as client:
            try:
                response = await client.post(url, data=self._form(language), files=files)
                if response.status_code // 100 != 2:
                    raise await http_failure(response, what)
                await response.aread()
                body = response.json()
            except (Retryable, ModelError):
                raise
            except ValueError as exc:
                raise ModelError(f"{what} did not answer JSON: {exc}") from exc
            except Exception as exc:
                raise transport_failure(exc, what) from exc
        return parse_transcription(body, duration=audio.duration, language=language)
