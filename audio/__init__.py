"""Signal code of voice tests: PCM16 frames, codecs, resampling, line models, noise, DTMF, VAD.

Everything here works on numpy arrays; soxr, PyAV and webrtcvad are imported only when a function
that needs them runs, and name the ``voice`` extra when missing.
"""

from __future__ import annotations

from .behaviour import BehaviourRNG
from .codec import (
    AvCodecLoop,
    AvDecoder,
    AvEncoder,
    alaw_decode,
    alaw_encode,
    decode,
    encode,
    normalise_encoding,
    ulaw_decode,
    ulaw_encode,
)
from .dtmf import DtmfDetector, DtmfEvent, detect_dtmf, dtmf_tones
from .filters import BlockFilter, butterworth_sos
from .noise import NoiseBank, NoiseMixer, NoiseSource, mix_at_snr, noise_loop, noise_presets, read_wav
from .pcm import (
    FRAME_MS,
    Framer,
    active_mask,
    dbfs,
    float_to_int16,
    frame_bytes,
    frame_samples,
    from_bytes,
    int16_to_float,
    split_frames,
    to_bytes,
)
from .phone_line import (
    GilbertElliott,
    Jitter,
    Line,
    LineBank,
    LineModel,
    MobilePoor,
    Pstn,
    SoftClip,
    VoipGood,
    get_line_model,
    line_models,
)
from .resample import FrameResampler, StreamResampler, resample
from .timing import Segment, first_audio_after, overlap, response_gaps
from .vad import FrameClassifier, TurnDetector, TurnDetectorBank, VadEvent, WebRtcVad, speech_segments

__all__ = [
    "FRAME_MS",
    "AvCodecLoop",
    "AvDecoder",
    "AvEncoder",
    "BehaviourRNG",
    "BlockFilter",
    "DtmfDetector",
    "DtmfEvent",
    "FrameClassifier",
    "FrameResampler",
    "Framer",
    "GilbertElliott",
    "Jitter",
    "Line",
    "LineBank",
    "LineModel",
    "MobilePoor",
    "NoiseBank",
    "NoiseMixer",
    "NoiseSource",
    "Pstn",
    "Segment",
    "SoftClip",
    "StreamResampler",
    "TurnDetector",
    "TurnDetectorBank",
    "VadEvent",
    "VoipGood",
    "WebRtcVad",
    "active_mask",
    "alaw_decode",
    "alaw_encode",
    "butterworth_sos",
    "dbfs",
    "decode",
    "detect_dtmf",
    "dtmf_tones",
    "encode",
    "first_audio_after",
    "float_to_int16",
    "frame_bytes",
    "frame_samples",
    "from_bytes",
    "get_line_model",
    "int16_to_float",
    "line_models",
    "mix_at_snr",
    "noise_loop",
    "noise_presets",
    "normalise_encoding",
    "overlap",
    "read_wav",
    "resample",
    "response_gaps",
    "speech_segments",
    "split_frames",
    "to_bytes",
    "ulaw_decode",
    "ulaw_encode",
]
