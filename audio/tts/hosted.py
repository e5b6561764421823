"""Hosted TTS over OpenAI's ``POST /v1/audio/speech`` (and the servers that copy it).

Optional and used only when configured (``get_tts("openai", ...)``): everything offline stays the
default. The request asks for raw PCM (24 kHz, 16-bit, mono, as OpenAI documents) or WAV; any
OpenAI-compatible server (a local Kokoro or Piper server, a proxy) works through ``base_url``.
Timeouts, connection failures, 408, 429 and 5xx are retried; other answers are not.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from tamesu.errors import ConfigError, ModelError

from .audio import Audio, read_wav_bytes
from .cache import SynthesisCache
from .engine import TTSCapabilities, TTSEngine, tts_engines
from .workers import Retryable

__all__ = ["OPENAI_BASE_URL", "OpenAITTS", "http_failure", "openai_settings"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def openai_settings(base_url: str | None, api_key: str | None, *, engine: str) -> tuple[str, str | None]:
    """The base URL and key: the options, else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``."""
    url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if key is None and url == OPENAI_BASE_URL:
        raise ConfigError(
            f"the hosted {engine} engine needs an API key",
            hint=f"set OPENAI_API_KEY or the {engine} engine's api_key option (a {{{{secrets.NAME}}}} ref)",
        )
    return url, key


async def http_failure(response: Any, what: str) -> Exception:
    """The exception for a non-2xx answer: ``Retryable`` for 408/409/429/5xx, ``ModelError`` otherwise."""
    body = (await response.aread())[:300].decode(errors="replace")
    message = f"{what} answered HTTP {response.status_code}: {body}"
    return Retryable(message) if response.status_code in RETRYABLE_STATUS else ModelError(message)


def transport_failure(exc: Exception, what: str) -> Exception:
    """Timeouts and unreachable servers are worth another try."""
    import httpx

    if isinstance(exc, (httpx.TimeoutException, httpx.TransportError, OSError)):
        return Retryable(f"{what}: {type(exc).__name__}: {exc}")
    return exc


@tts_engines.register("openai")
class OpenAITTS(TTSEngine):
    """``POST {base_url}/audio/speech``; ``voice`` is the provider's voice (alloy, nova, ...)."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str = "gpt-4o-mini-tts",
        voice: str = "alloy",
        response_format: Literal["pcm", "wav"] = "pcm",
        sample_rate: int = 24000,
        speed: float | None = None,
        instructions: str | None = None,
        timeout: float = 60.0,
        attempts: int = 3,
        backoff: float = 0.5,
        cache: SynthesisCache | None = None,
    ) -> None:
        super().__init__(cache=cache, attempts=attempts, backoff=backoff)
        self.base_url, self._api_key = openai_settings(base_url, api_key, engine="openai TTS")
        self.model = model
        self.voice = voice
        self.response_format = response_format
        self.sample_rate = sample_rate
        self.speed = speed
        self.instructions = instructions
        self.timeout = timeout

    @property
    def capabilities(self) -> TTSCapabilities:
        return TTSCapabilities(languages=None, sample_rate=self.sample_rate, default_voice=self.voice)

    @property
    def identity(self) -> str:
        return f"openai:{self.base_url}:{self.model}:{self.speed}:{self.instructions}"

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        from tamesu.http import make_client

        body: dict[str, Any] = {
            "model": self.model,
            "input": text,
            "voice": voice or self.voice,
            "response_format": self.response_format,
        }
        if self.speed is not None:
            body["speed"] = self.speed
        if self.instructions:
            body["instructions"] = self.instructions
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        what = f"TTS {self.base_url}/audio/speech"
        async with make_client(timeout=self.timeout, headers=headers) as client:
            try:
                response = await client.post(f"{self.base_url}/audio/speech", json=body)
                if response.status_code // 100 != 2:
                    raise await http_failure(response, what)
                data = await response.aread()
            except (Retryable, ModelError):
                raise
            except Exception as exc:
                raise transport_failure(exc, what) from exc
        if not data:
            raise ModelError(f"{what} returned no audio")
        if self.response_format == "wav" or data[:4] == b"RIFF":
            return read_wav_bytes(data)
        return Audio.from_pcm(data[: len(data) - len(data) % 2], self.sample_rate)
