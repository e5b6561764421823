"""Speech-to-text engines behind one interface: ``STTEngine.transcribe(audio) -> Transcription``.

``whisper`` (faster-whisper on a local model; by default the shipped English-only tiny.en),
``whisper-base`` (the same on the shipped multilingual base model) and ``openai`` (hosted, any
language, only when configured). Engines load lazily from
``stt_engines``; use ``tamesu.audio.engines.get_stt`` to share them.
"""

from __future__ import annotations

from .engine import STTCapabilities, STTEngine, Transcription, TranscriptionSegment, Word, stt_engines

for _name, _ref in {
    "whisper": "tamesu.audio.stt.whisper:WhisperSTT",
    "whisper-base": "tamesu.audio.stt.whisper:WhisperBaseSTT",
    "openai": "tamesu.audio.stt.hosted:OpenAISTT",
}.items():
    if _name not in stt_engines:
        stt_engines.add(_name, _ref)
del _name, _ref

__all__ = ["STTCapabilities", "STTEngine", "Transcription", "TranscriptionSegment", "Word", "stt_engines"]
