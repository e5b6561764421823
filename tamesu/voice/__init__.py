"""Phone calls with real audio: the stages every audio target (voice, twilio, ...) runs a call on.

A call is a node in a graph of stages that many calls share (``lane``): the caller (TTS in the
persona's voice, paced in 20 ms frames: ``caller``, ``speech``), the line (noise, line model,
codec: ``line``), the target's transport (the wire and the agent's playout: ``transport``), the
listener (VAD, DTMF, STT: ``listener``) and the recorder (``recording``); they exchange one
``AudioBatch`` per tick per lane, driven by the process's ``FramePump``. ``session`` is the call's
side of it for the run: turn-taking and barge-in (``turns``), the turns' timings and messages;
``voice_metrics`` measures the call from its audio. The speech engines are the run's speech
pool (``tamesu.speech_pool``; on Ray ``tamesu.actors.pools``), passed in through the target's context.
"""

from __future__ import annotations

from .lane import CallAudio, Lane
from .pump import FramePump
from .recording import CallRecording, read_recording
from .session import VoiceSession, VoiceWire
from .settings import VoiceSettings, check_voice_test
from .speech import Utterance, make_utterance, render_dtmf, render_speech, speech_spans
from .stage import FRAME_S
from .transport import Playout
from .voice_metrics import BargeIn, CallTimeline, TurnTiming, voice_metrics, wer

__all__ = [
    "FRAME_S",
    "BargeIn",
    "CallAudio",
    "CallRecording",
    "CallTimeline",
    "FramePump",
    "Lane",
    "Playout",
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
