"""The per-process engine pools, language checks, doctor's inventory, voices and the worker pool."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tamesu.audio import engines
from tamesu.audio.stt.whisper import WhisperSTT
from tamesu.audio.tts import Lazy, SynthesisCache, Workers
from tamesu.audio.tts.espeak import EspeakTTS, espeak_binary
from tamesu.audio.tts.piper import PiperTTS
from tamesu.audio.voices import VoiceChoice, check_voice, known_voices, resolve_voice
from tamesu.errors import ConfigError

pytestmark = pytest.mark.unit


def _triple(choice: VoiceChoice) -> tuple[str, str | None, str | None]:
    return choice.engine, choice.voice, choice.language


class TestSharing:
    def test_the_same_engine_twice(self) -> None:
        assert engines.get_tts() is engines.get_tts("piper")
        assert engines.get_stt() is engines.get_stt("whisper")
        assert isinstance(engines.get_tts(), PiperTTS) and isinstance(engines.get_stt(), WhisperSTT)

    def test_other_options_another_engine_with_the_same_cache(self) -> None:
        slow = engines.get_tts("piper", length_scale=1.2)
        assert slow is not engines.get_tts("piper")
        assert slow is engines.get_tts("piper", length_scale=1.2)
        assert slow.cache is engines.get_tts().cache is engines.synthesis_cache()

    def test_unknown_engines(self) -> None:
        with pytest.raises(ConfigError, match="unknown TTS engine 'festival'") as err:
            engines.get_tts("festival")
        assert "espeak, openai, piper" in str(err.value)
        with pytest.raises(ConfigError, match="unknown STT engine 'vosk'"):
            engines.get_stt("vosk")

    def test_shutdown_forgets_and_closes(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(engines, "_tts", {})
        monkeypatch.setattr(engines, "_stt", {})
        first = engines.get_tts("piper", threads=1)
        stats = engines.engine_stats()
        assert list(stats) == ['piper:{"threads": 1}'] and stats['piper:{"threads": 1}']["requests"] == 0
        engines.shutdown()
        assert engines.get_tts("piper", threads=1) is not first

    def test_configure_cache(self, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(engines, "_cache", None)
        monkeypatch.setattr(engines, "_tts", {})
        cache = engines.configure_cache(max_bytes=1024, directory=str(tmp_path))
        assert engines.synthesis_cache() is cache and cache.directory == tmp_path
        assert engines.get_tts().cache is cache


class TestCheckLanguage:
    def test_english_is_fine_for_the_shipped_model(self) -> None:
        assert engines.check_language(None, "en") is None
        assert engines.check_language("whisper", "en-GB") is None
        assert engines.check_language("whisper", None) is None

    def test_other_languages_need_a_multilingual_model_or_hosted_stt(self) -> None:
        message = engines.check_language("whisper", "es-ES")
        assert message is not None
        assert "cannot transcribe 'es-ES'" in message and "multilingual" in message and "openai" in message

    def test_hosted_stt_hears_any_language(self) -> None:
        assert engines.check_language("openai", "ja", base_url="http://127.0.0.1:9/v1") is None

    def test_a_bad_model_path_is_the_message(self) -> None:
        message = engines.check_language("whisper", "en", model="/nowhere/model")
        assert message is not None and "nor a local CTranslate2 model directory" in message

    def test_an_unknown_engine_is_the_message(self) -> None:
        message = engines.check_language("vosk", "en")
        assert message is not None and "unknown STT engine" in message


class TestSttFor:
    """The listener's engine per line, as benchmarks/results/speech_accuracy.json chose it."""

    def test_phone_lines_and_other_languages_get_whisper_base(self) -> None:
        assert engines.stt_for(8000, "en-US") == "whisper-base"
        assert engines.stt_for(16000, "es-ES") == engines.stt_for(None, "de") == "whisper-base"

    def test_wideband_english_keeps_tiny_en(self) -> None:
        assert engines.stt_for(16000, "en-GB") == engines.stt_for(24000, None) == "whisper"

    def test_one_configured_model_serves_every_line(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("TAMESU_WHISPER_MODEL", "/models/mine")
        assert engines.stt_for(8000, "es") == "whisper"

    def test_without_the_base_model_whisper_refuses_other_languages_by_name(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from tamesu.audio.stt.shipped import ShippedModel

        monkeypatch.setattr(ShippedModel, "installed", lambda self: False)
        assert engines.stt_for(8000, "es") == "whisper"


def test_available_lists_engines_and_models() -> None:
    info = engines.available()
    assert info["defaults"] == {"tts": "piper", "stt": "whisper"}
    assert info["tts"]["piper"]["installed"] and info["tts"]["piper"]["model"].endswith(
        "en_US-joe-medium.onnx"
    )
    assert info["stt"]["whisper"]["installed"] and info["stt"]["whisper"]["languages"] == ["en"]
    assert info["tts"]["espeak"]["installed"] is (espeak_binary() is not None)
    assert set(info["tts"]) == {"piper", "espeak", "openai"}
    assert set(info["stt"]) == {"whisper", "whisper-base", "openai"}
    assert info["stt"]["whisper-base"]["installed"] and info["stt"]["whisper-base"]["languages"] == "any"


class TestVoices:
    def test_english_is_piper_joe_and_says_so(self) -> None:
        us = resolve_voice("en-US-male")
        assert (us.engine, us.voice, us.language, us.note) == ("piper", None, "en-US", "")
        gb = resolve_voice("en-GB-female")
        assert gb.engine == "piper" and gb.language == "en-GB" and gb.gender == "male"
        assert "only Piper voice" in gb.note

    def test_other_languages_are_espeak_with_female_variants(self) -> None:
        assert _triple(resolve_voice("es-ES-female")) == ("espeak", "es+f3", "es-ES")
        assert _triple(resolve_voice("de-DE-male")) == ("espeak", "de", "de-DE")
        assert _triple(resolve_voice("pt-br-FEMALE")) == ("espeak", "pt-br+f3", "pt-BR")

    def test_a_language_alone_picks_a_default(self) -> None:
        assert _triple(resolve_voice(None, "es")) == ("espeak", "es", "es-ES")
        assert _triple(resolve_voice(None, "fr-FR")) == ("espeak", "fr-fr", "fr-FR")
        assert _triple(resolve_voice(None, "en"))[:2] == ("piper", None)
        assert _triple(resolve_voice()) == ("piper", None, "en-US")
        assert "no es-AR voice" in resolve_voice(None, "es-AR").note

    def test_engine_voice_directly(self) -> None:
        choice = resolve_voice("espeak:en-gb+f3", "en-GB")
        assert (choice.engine, choice.voice, choice.language) == ("espeak", "en-gb+f3", "en-GB")

    def test_unknown_voice_lists_the_known_ones(self) -> None:
        with pytest.raises(ConfigError, match="unknown voice 'en-GB-robot'") as err:
            resolve_voice("en-GB-robot")
        assert "es-ES-female" in str(err.value) and "en-US-male" in str(err.value)
        with pytest.raises(ConfigError, match="unknown voice"):
            resolve_voice("festival:kal")
        assert "xx-XX-female" not in known_voices() and "de-DE-female" in known_voices()

    def test_voice_and_language_must_agree(self) -> None:
        with pytest.raises(ConfigError, match="speaks es-ES but the persona's language is 'de'"):
            resolve_voice("es-ES-female", "de")
        assert check_voice("es-ES-female", "es") is None
        message = check_voice("es-ES-female", "de-DE")
        assert message is not None and "de-DE-female" in message

    def test_tts_for_returns_the_shared_engine(self) -> None:
        engine, choice = engines.tts_for("en-US-male")
        assert engine is engines.get_tts("piper") and choice.engine == "piper"
        if espeak_binary() is not None:
            engine, choice = engines.tts_for("es-ES-female", espeak={"speed": 150})
            assert isinstance(engine, EspeakTTS) and engine.speed == 150 and choice.voice == "es+f3"


class TestWorkers:
    async def test_two_workers_run_two_jobs_at_once(self) -> None:
        """Each job waits at a two-party barrier: it only opens if both run at the same time."""
        workers = Workers("test", 2)
        barrier = threading.Barrier(2, timeout=10)
        results = await asyncio.gather(workers.run(barrier.wait), workers.run(barrier.wait))
        assert sorted(results) == [0, 1]
        workers.shutdown()

    async def test_one_worker_never_runs_two_jobs_at_once(self) -> None:
        """The same barrier never opens in a one-worker pool: the first job gives up, the second finds it broken."""
        workers = Workers("test", 1)
        barrier = threading.Barrier(2, timeout=0.3)
        results = await asyncio.gather(
            workers.run(barrier.wait), workers.run(barrier.wait), return_exceptions=True
        )
        assert all(isinstance(r, threading.BrokenBarrierError) for r in results)
        workers.shutdown()

    async def test_a_pool_serves_several_event_loops(self) -> None:
        workers = Workers("test", 1)
        assert await workers.run(lambda: 1) == 1
        other = await asyncio.to_thread(asyncio.run, workers.run(lambda: 2))
        assert other == 2
        workers.shutdown()

    def test_lazy_loads_once_across_threads(self) -> None:
        loads: list[int] = []
        lazy = Lazy(lambda: loads.append(1) or len(loads))
        threads = [threading.Thread(target=lazy.get) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert loads == [1] and lazy.get() == 1 and lazy.loaded

    def test_a_pool_needs_a_worker(self) -> None:
        with pytest.raises(ValueError, match="at least 1"):
            Workers("test", 0)


def test_the_shared_cache_is_a_synthesis_cache() -> None:
    assert isinstance(engines.synthesis_cache(), SynthesisCache)
