from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import tamesu.audio

pytestmark = pytest.mark.unit

MODULES = [
    "behaviour",
    "codec",
    "dtmf",
    "filters",
    "phone_line",
    "noise",
    "pcm",
    "resample",
    "synth",
    "timing",
    "vad",
]


def test_every_exported_name_exists() -> None:
    assert sorted(tamesu.audio.__all__) == sorted(set(tamesu.audio.__all__))
    for name in tamesu.audio.__all__:
        assert hasattr(tamesu.audio, name), name
    for module in MODULES:
        mod = importlib.import_module(f"tamesu.audio.{module}")
        for name in mod.__all__:
            assert hasattr(mod, name), f"{module}.{name}"


def test_heavy_engines_load_only_when_used() -> None:
    code = "import sys, tamesu.audio; print(sorted(m for m in ('soxr', 'av', 'webrtcvad', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
