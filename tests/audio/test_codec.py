from __future__ import annotations

import warnings

import numpy as np
import pytest

from tamesu.audio import codec, synth
from tamesu.errors import MissingExtraError

pytestmark = pytest.mark.unit

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import audioop
    except ImportError:
        audioop = None

ALL = np.arange(-32768, 32768, dtype=np.int16)


def test_ulaw_known_values() -> None:
    assert codec.ulaw_encode(np.array([0, -1, 32767, -32768, 100, -100])).tolist() == [
        255,
        126,
        128,
        0,
        242,
        114,
    ]
    assert codec.ulaw_decode(np.array([0xFF, 0x7F, 0x80, 0x00])).tolist() == [0, 0, 32124, -32124]


def test_alaw_known_values() -> None:
    assert codec.alaw_encode(np.array([0, -1, 32767, -32768])).tolist() == [0xD5, 0x55, 0xAA, 0x2A]
    assert codec.alaw_decode(np.array([0xD5, 0x55, 0xAA, 0x2A])).tolist() == [8, -8, 32256, -32256]


@pytest.mark.skipif(audioop is None, reason="audioop is gone from this Python")
def test_g711_is_bit_exact_with_audioop_for_every_input() -> None:
    data = ALL.astype("<i2").tobytes()
    codes = bytes(range(256))
    assert codec.ulaw_encode(ALL).tobytes() == audioop.lin2ulaw(data, 2)
    assert codec.alaw_encode(ALL).tobytes() == audioop.lin2alaw(data, 2)
    assert codec.ulaw_decode(codes).astype("<i2").tobytes() == audioop.ulaw2lin(codes, 2)
    assert codec.alaw_decode(codes).astype("<i2").tobytes() == audioop.alaw2lin(codes, 2)


def test_g711_decode_then_encode_is_identity_on_codes() -> None:
    codes = np.arange(256, dtype=np.uint8)
    # 0x7F and 0xFF both decode to 0 in mu-law (negative and positive zero); 0 encodes as 0xFF.
    ulaw = codec.ulaw_encode(codec.ulaw_decode(codes))
    assert np.array_equal(ulaw[codes != 0x7F], codes[codes != 0x7F])
    assert np.array_equal(codec.alaw_encode(codec.alaw_decode(codes)), codes)


def _snr(ref: np.ndarray, out: np.ndarray) -> float:
    err = out.astype(float) - ref.astype(float)
    return 10 * np.log10(np.sum(ref.astype(float) ** 2) / np.sum(err**2))


@pytest.mark.parametrize("encoding", ["mulaw", "alaw"])
def test_g711_round_trip_snr(encoding: str) -> None:
    tone = synth.tone(1004, 1.0, 8000, dbfs=-20)
    speech = synth.speech_like(2.0, 8000, dbfs=-26)
    for signal in (tone, speech):
        out = codec.decode(codec.encode(signal, encoding), encoding)
        assert len(codec.encode(signal, encoding)) == len(signal)
        assert _snr(signal, out) > 35


def test_encoding_names() -> None:
    assert codec.normalise_encoding("g711_ulaw") == "mulaw"
    assert codec.normalise_encoding("PCMA") == "alaw"
    x = np.array([1, -2, 300], np.int16)
    assert np.array_equal(codec.decode(codec.encode(x, "pcm16"), "pcm16"), x)
    with pytest.raises(ValueError):
        codec.normalise_encoding("mp3")


def test_roundtrip_table_matches_encode_decode() -> None:
    table = codec.roundtrip_table("mulaw")
    x = synth.speech_like(0.5, 8000)
    assert np.array_equal(table[x.view(np.uint16)], codec.ulaw_decode(codec.ulaw_encode(x)))


def test_opus_round_trip_keeps_a_tone() -> None:
    loop = codec.AvCodecLoop("opus", 16000, 320, bitrate=24000)
    x = synth.tone(440, 1.0, 16000, dbfs=-20)
    y = np.concatenate([loop.process(f) for f in x.reshape(-1, 320)])
    assert loop.underruns == 0
    lags = range(0, 800)
    best = max(lags, key=lambda d: float(np.dot(y[d + 3200 : d + 12800].astype(float), x[3200:12800])))
    assert _snr(x[3200:12800], y[best + 3200 : best + 12800]) > 20


def test_av_codecs_reject_unsupported_rates() -> None:
    with pytest.raises(ValueError):
        codec.AvEncoder("opus", 22050)
    with pytest.raises(ValueError):
        codec.AvEncoder("mp3", 8000)


def test_missing_pyav_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def fake(name: str, *args: object, **kwargs: object) -> object:
        if name == "av":
            raise ImportError("no av")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(MissingExtraError, match=r"tamesu\[voice\]"):
        codec.AvEncoder("opus", 16000)
