"""Phone calls with real audio: the pipeline every audio target (voice, twilio, ...) runs a call on.

The caller's turns are spoken in the persona's voice, degraded by the line and paced in 20 ms
frames (``speech``, ``caller``); the agent's audio is played as the caller would hear it, its
speech found by a VAD and its words read from its own transcript or from STT (``listener``);
``session`` runs the turns and their timings, ``voice_metrics`` measures the call from its audio,
and ``recording`` keeps it as a stereo WAV. The signal work is batched across calls by the
process's ``FramePump``.
"""

from __future__ import annotations

from .playout import Playout
from .pump import FRAME_S, CallAudio, FramePump, Spoken
from .recording import CallRecording, read_recording
from .session import VoiceSession, VoiceWire
from .settings import AUDIO_TARGETS, VoiceSettings, check_voice_test
from .speech import Utterance, make_utterance, render_dtmf, render_speech, speech_spans
from .voice_metrics import BargeIn, CallTimeline, TurnTiming, voice_metrics, wer

__all__ = [
    "AUDIO_TARGETS",
    "FRAME_S",
    "BargeIn",
    "CallAudio",
    "CallRecording",
    "CallTimeline",
    "FramePump",
    "Playout",
    "Spoken",
    "TurnTiming",
    "Utterance",
    "VoiceSession",
    "VoiceSettings",
    "VoiceWire",
    "check_voice_test",
    "make_utterance",
    "read_recording",
    "render_dtmf",
    "render_speech",
    "speech_spans",
    "voice_metrics",
    "wer",
]
