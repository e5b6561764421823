"""TTS: the Audio type, the synthesis cache, retries, Piper, espeak-ng and the hosted OpenAI engine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar

import numpy as np
import pytest
from aiohttp import web

from tamesu.audio import pcm
from tamesu.audio.tts import (
    Audio,
    Retryable,
    SynthesisCache,
    TTSCapabilities,
    TTSEngine,
    read_wav_bytes,
    tts_engines,
)
from tamesu.audio.tts.espeak import EspeakTTS, espeak_binary, espeak_voice_for
from tamesu.audio.tts.hosted import OpenAITTS
from tamesu.audio.tts.piper import PiperTTS
from tamesu.errors import ConfigError, ModelError

Serve = Callable[[web.Application], Awaitable[str]]


class CountingTTS(TTSEngine):
    """A tone per word, counting how often the provider is really asked."""

    name: ClassVar[str] = "counting"

    def __init__(
        self, *, cache: SynthesisCache | None = None, fail: list[Exception] | None = None, **kw: Any
    ) -> None:
        super().__init__(cache=cache, **kw)
        self.calls: list[tuple[str, str | None, str | None]] = []
        self.fail = fail or []
        self.gate: asyncio.Event | None = None

    @property
    def capabilities(self) -> TTSCapabilities:
        return TTSCapabilities(languages=frozenset({"en", "es-ES"}), sample_rate=8000)

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        self.calls.append((text, voice, language))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise self.fail.pop(0)
        return Audio(np.full(800 * len(text.split()), 1000, dtype=np.int16), 8000)


@pytest.mark.unit
class TestAudio:
    def test_samples_are_a_read_only_copy(self) -> None:
        raw = np.arange(10, dtype=np.int16)
        audio = Audio(raw, 8000)
        raw[0] = 99
        assert audio.samples[0] == 0
        with pytest.raises(ValueError):
            audio.samples[0] = 1

    def test_rejects_stereo_and_float(self) -> None:
        with pytest.raises(ValueError, match="mono"):
            Audio(np.zeros((10, 2), dtype=np.int16), 8000)
        with pytest.raises(ValueError, match="int16"):
            Audio(np.zeros(10, dtype=np.float32), 8000)

    def test_resample_keeps_duration_and_is_identity_at_the_same_rate(self) -> None:
        audio = Audio(pcm.float_to_int16(0.3 * np.sin(np.arange(22050) / 10)), 22050)
        assert audio.resample(22050) is audio
        down = audio.resample(16000)
        assert down.sample_rate == 16000 and len(down) == 16000
        assert down.duration == pytest.approx(audio.duration)

    def test_wav_and_pcm_round_trip(self) -> None:
        audio = Audio(np.array([0, 1, -1, 32767, -32768], dtype=np.int16), 16000)
        back = Audio.from_wav(audio.to_wav())
        assert back.sample_rate == 16000 and back.samples.tolist() == audio.samples.tolist()
        assert Audio.from_pcm(audio.to_bytes(), 16000).samples.tolist() == audio.samples.tolist()

    def test_wav_with_a_streaming_header_reads_to_the_end(self) -> None:
        """espeak-ng --stdout writes 0x7FFFF000-ish sizes: the data runs to the end of the bytes."""
        body = np.arange(100, dtype="<i2").tobytes()
        fmt = (16).to_bytes(4, "little") + bytes.fromhex(
            "0100 0100 2256 0000 44ac 0000 0200 1000".replace(" ", "")
        )
        wav = b"RIFF\xff\xff\xff\x7fWAVE" + b"fmt " + fmt + b"data\xff\xff\xff\x7f" + body
        audio = read_wav_bytes(wav)
        assert audio.sample_rate == 22050 and audio.samples.tolist() == list(range(100))

    def test_not_a_wav(self) -> None:
        with pytest.raises(ValueError, match="RIFF"):
            read_wav_bytes(b"ID3 not a wav at all")


@pytest.mark.unit
class TestCache:
    async def test_a_prompt_is_synthesised_once(self) -> None:
        engine = CountingTTS(cache=SynthesisCache())
        first = await engine.synthesize("hello there", language="en")
        second = await engine.synthesize("hello there", language="en")
        assert second is first
        assert len(engine.calls) == 1
        assert engine.stats.requests == 1 and engine.stats.cache_hits == 1

    async def test_voice_language_and_text_are_part_of_the_key(self) -> None:
        engine = CountingTTS(cache=SynthesisCache())
        await engine.synthesize("hi", language="en")
        await engine.synthesize("hi", language="es-ES")
        await engine.synthesize("hi", voice="other", language="en")
        await engine.synthesize("hi again", language="en")
        assert len(engine.calls) == 4

    async def test_concurrent_requests_share_the_synthesis_in_flight(self) -> None:
        engine = CountingTTS(cache=SynthesisCache())
        engine.gate = asyncio.Event()
        tasks = [asyncio.create_task(engine.synthesize("same words")) for _ in range(5)]
        while not engine.calls:
            await asyncio.sleep(0)
        engine.gate.set()
        results = await asyncio.gather(*tasks)
        assert len(engine.calls) == 1
        assert all(r is results[0] for r in results)

    async def test_a_failure_reaches_every_waiter_and_is_not_cached(self) -> None:
        engine = CountingTTS(cache=SynthesisCache(), fail=[ModelError("boom")])
        engine.gate = asyncio.Event()
        tasks = [asyncio.create_task(engine.synthesize("words")) for _ in range(3)]
        while not engine.calls:
            await asyncio.sleep(0)
        engine.gate.set()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(o, ModelError) for o in outcomes)
        assert (await engine.synthesize("words")).duration == pytest.approx(0.1)
        assert len(engine.calls) == 2

    async def test_memory_is_bounded_by_bytes_least_recently_used_first(self) -> None:
        cache = SynthesisCache(max_bytes=3 * 1600)
        engine = CountingTTS(cache=cache)
        for word in ("a", "b", "c"):
            await engine.synthesize(word)
        await engine.synthesize("a")
        await engine.synthesize("d")
        assert len(cache) == 3 and cache.bytes == 3 * 1600
        await engine.synthesize("a")
        await engine.synthesize("b")
        assert [c[0] for c in engine.calls] == ["a", "b", "c", "d", "b"]

    async def test_disk_cache_serves_another_process_worth_of_engine(self, tmp_path: Any) -> None:
        first = CountingTTS(cache=SynthesisCache(directory=tmp_path))
        made = await first.synthesize("kept on disk")
        second = CountingTTS(cache=SynthesisCache(directory=tmp_path))
        loaded = await second.synthesize("kept on disk")
        assert second.calls == []
        assert loaded.samples.tolist() == made.samples.tolist() and loaded.sample_rate == 8000
        assert list(tmp_path.rglob("*.wav"))

    async def test_empty_text_is_silence_without_a_synthesis(self) -> None:
        engine = CountingTTS(cache=SynthesisCache())
        audio = await engine.synthesize("   ")
        assert len(audio) == 0 and audio.sample_rate == 8000 and engine.calls == []

    async def test_an_unspoken_language_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="cannot speak 'de'"):
            await CountingTTS().synthesize("hallo", language="de")


@pytest.mark.unit
class TestRetries:
    async def test_transient_failures_are_retried(self) -> None:
        engine = CountingTTS(fail=[Retryable("429"), Retryable("503")], attempts=3, backoff=0.001)
        audio = await engine.synthesize("third time lucky")
        assert audio.duration == pytest.approx(0.3)
        assert len(engine.calls) == 3 and engine.stats.retries == 2

    async def test_after_the_last_attempt_it_is_a_model_error(self) -> None:
        engine = CountingTTS(fail=[Retryable("429")] * 2, attempts=2, backoff=0.001)
        with pytest.raises(ModelError, match="after 2 attempts"):
            await engine.synthesize("never")
        assert engine.stats.errors == 1

    async def test_permanent_failures_are_not_retried(self) -> None:
        engine = CountingTTS(fail=[ModelError("400 bad voice")], attempts=5, backoff=0.001)
        with pytest.raises(ModelError, match="bad voice"):
            await engine.synthesize("once")
        assert len(engine.calls) == 1


@pytest.mark.unit
def test_registry_names_every_engine() -> None:
    assert {"piper", "espeak", "openai"} <= set(tts_engines.names())
    assert tts_engines.get("piper") is PiperTTS


@pytest.mark.unit
class TestPiperConfig:
    def test_a_model_name_is_refused_not_downloaded(self) -> None:
        with pytest.raises(ConfigError, match=r"not a local \.onnx file") as err:
            PiperTTS(model_path="en_GB-alba-medium")
        assert "model_path" in str(err.value)

    def test_the_shipped_voice_describes_itself(self) -> None:
        caps = PiperTTS().capabilities
        assert caps.sample_rate == 22050 and caps.languages == frozenset({"en-US"})
        assert caps.voices == ("joe",)

    async def test_it_refuses_other_languages_and_speakers(self) -> None:
        engine = PiperTTS()
        with pytest.raises(ConfigError, match="cannot speak 'es-ES'"):
            await engine.synthesize("hola", language="es-ES")
        with pytest.raises(ConfigError, match="one speaker"):
            await engine.synthesize("hello", voice="amy")


def _active_dbfs(audio: Audio) -> float:
    mask = pcm.active_mask(audio.samples, audio.sample_rate)
    return float(pcm.dbfs(audio.samples[mask])) if mask.any() else float("-inf")


@pytest.mark.slow
async def test_piper_speaks_at_its_native_rate_and_is_cached() -> None:
    engine = PiperTTS(cache=SynthesisCache())
    audio = await engine.synthesize("Returns are accepted within thirty days", language="en-US")
    assert audio.sample_rate == 22050
    assert 1.3 < audio.duration < 4.0
    assert _active_dbfs(audio) > -30
    assert pcm.active_mask(audio.samples, audio.sample_rate).mean() > 0.5
    again = await engine.synthesize("Returns are accepted within thirty days", language="en-US")
    assert again is audio and engine.stats.requests == 1 and engine.stats.cache_hits == 1
    engine.close()


@pytest.mark.integration
@pytest.mark.skipif(espeak_binary() is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
class TestEspeak:
    async def test_spanish(self) -> None:
        engine = EspeakTTS(cache=SynthesisCache())
        audio = await engine.synthesize("Hola, quiero devolver mi pedido.", voice="es+f3", language="es-ES")
        assert audio.sample_rate == 22050
        assert 1.0 < audio.duration < 5.0
        assert _active_dbfs(audio) > -35
        engine.close()

    async def test_language_picks_the_voice(self) -> None:
        assert espeak_voice_for("es-ES") == "es"
        assert espeak_voice_for("pt-BR") == "pt-br"
        assert espeak_voice_for("en") == "en-us"
        assert espeak_voice_for("fr") == "fr-fr"
        engine = EspeakTTS()
        audio = await engine.synthesize("Guten Tag", language="de-DE")
        assert audio.duration > 0.3

    async def test_unknown_voice_and_language(self) -> None:
        engine = EspeakTTS()
        with pytest.raises(ConfigError, match="no voice 'xx-yy'"):
            await engine.synthesize("hi", voice="xx-yy")
        with pytest.raises(ConfigError, match="cannot speak 'tlh'"):
            await engine.synthesize("nuqneH", language="tlh")


class SpeechServer:
    """OpenAI's POST /v1/audio/speech on loopback: raw 24 kHz PCM16, or scripted failures."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, Any], str | None]] = []
        self.failures: list[int] = []

    async def speech(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((body, request.headers.get("Authorization")))
        if self.failures:
            return web.json_response({"error": {"message": "try later"}}, status=self.failures.pop(0))
        n = 2400 * len(body["input"].split())
        samples = (3000 * np.sin(np.arange(n) / 5)).astype("<i2")
        if body["response_format"] == "wav":
            return web.Response(
                body=Audio(samples.astype(np.int16), 24000).to_wav(), content_type="audio/wav"
            )
        return web.Response(body=samples.tobytes(), content_type="audio/pcm")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/audio/speech", self.speech)
        return app


@pytest.fixture
async def speech_server() -> AsyncIterator[tuple[SpeechServer, str]]:
    server = SpeechServer()
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield server, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    await runner.cleanup()


@pytest.mark.integration
class TestOpenAITTS:
    async def test_speech_request_and_pcm_answer(self, speech_server: tuple[SpeechServer, str]) -> None:
        server, url = speech_server
        engine = OpenAITTS(base_url=url, api_key="sk-test", model="tts-1", cache=SynthesisCache())
        audio = await engine.synthesize("one two three", voice="nova")
        assert audio.sample_rate == 24000 and audio.duration == pytest.approx(0.3)
        body, auth = server.requests[0]
        assert body == {"model": "tts-1", "input": "one two three", "voice": "nova", "response_format": "pcm"}
        assert auth == "Bearer sk-test"

    async def test_wav_answer(self, speech_server: tuple[SpeechServer, str]) -> None:
        _, url = speech_server
        audio = await OpenAITTS(base_url=url, response_format="wav").synthesize("four five")
        assert audio.sample_rate == 24000 and len(audio) == 4800

    async def test_429_and_503_are_retried(self, speech_server: tuple[SpeechServer, str]) -> None:
        server, url = speech_server
        server.failures = [429, 503]
        engine = OpenAITTS(base_url=url, attempts=3, backoff=0.001)
        audio = await engine.synthesize("finally")
        assert len(audio) == 2400 and len(server.requests) == 3 and engine.stats.retries == 2

    async def test_400_is_not_retried(self, speech_server: tuple[SpeechServer, str]) -> None:
        server, url = speech_server
        server.failures = [400]
        with pytest.raises(ModelError, match="HTTP 400"):
            await OpenAITTS(base_url=url, attempts=3, backoff=0.001).synthesize("bad")
        assert len(server.requests) == 1

    async def test_unreachable_server_is_retried_then_a_model_error(self, unused_tcp_port: int) -> None:
        engine = OpenAITTS(base_url=f"http://127.0.0.1:{unused_tcp_port}/v1", attempts=2, backoff=0.001)
        with pytest.raises(ModelError, match="after 2 attempts"):
            await engine.synthesize("anyone there")

    def test_the_real_service_needs_a_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        with pytest.raises(ConfigError, match="API key"):
            OpenAITTS()
