"""The sip target calling baresip, a real SIP phone, set up as an auto-answering agent on loopback:
it answers, plays a WAV (its "speech") and its sndfile module records what it heard of tamesu."""

from __future__ import annotations

import asyncio
import shutil
import wave
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from tamesu.kernel.events import CallEnded, SipTrace
from tamesu.kernel.messages import AgentTurn, Event, UserTurn

from ..voice.peers import Calls, calls, collect, vowel
from .test_sip import free_port

__all__ = ["calls"]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("baresip") is None, reason="baresip is not installed (apt-get install baresip-core)"
    ),
]

MODULES = Path("/usr/lib/baresip/modules")
READY = b"baresip is ready."


class Baresip:
    """One baresip process with its own configuration directory (``home``)."""

    def __init__(self, home: Path, port: int) -> None:
        self.home = home
        self.port = port
        self.proc: asyncio.subprocess.Process | None = None
        self.output: list[bytes] = []

    @property
    def uri(self) -> str:
        return f"sip:agent@127.0.0.1:{self.port}"

    def configure(self, speech: Path) -> None:
        """Loopback only, no sound card: the aufile source plays ``speech``, aubridge is a player
        nobody listens to, sndfile dumps both directions of the call into ``home``."""
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config").write_text(
            f"sip_listen 127.0.0.1:{self.port}\n"
            f"audio_source aufile,{speech}\n"
            "audio_player aubridge,nobody\n"
            "audio_alert aubridge,nobody\n"
            f"module_path {MODULES}\n"
            "module g711.so\nmodule aufile.so\nmodule aubridge.so\nmodule sndfile.so\n"
            "module_app account.so\nmodule_app menu.so\n"
            f"snd_path {self.home}\n"
        )
        (self.home / "accounts").write_text(
            "<sip:agent@127.0.0.1>;regint=0;answermode=auto;audio_codecs=PCMU\n"
        )

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            "baresip", "-f", str(self.home),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        assert self.proc.stdout is not None
        async with asyncio.timeout(20):
            while READY not in (line := await self.proc.stdout.readline()):
                assert line, b"".join(self.output).decode(errors="replace")
                self.output.append(line)

    async def stop(self) -> int:
        """Terminate it (it closes its recordings) and wait for it to exit."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return proc.returncode if proc else 0
        proc.terminate()
        async with asyncio.timeout(10):
            await proc.communicate()
        return proc.returncode or 0

    def heard(self) -> np.ndarray:
        """What baresip decoded of tamesu's RTP (its ``-dec`` dump)."""
        [dump] = self.home.glob("dump-*-dec.wav")
        with wave.open(str(dump)) as w:
            return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


@pytest.fixture
async def baresip(tmp_path: Path) -> AsyncIterator[Baresip]:
    speech = tmp_path / "agent.wav"
    # it says something every 2.5 s, so each of tamesu's turns hears it
    samples = np.concatenate([vowel(1.0, 8000), np.zeros(12000, np.int16)] * 24)
    with wave.open(str(speech), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(samples.astype("<i2").tobytes())
    phone = Baresip(tmp_path / "baresip", free_port())
    phone.configure(speech)
    await phone.start()
    yield phone
    if phone.proc is not None and phone.proc.returncode is None:
        phone.proc.kill()
        await phone.proc.wait()


async def test_baresip_answers_plays_its_speech_and_records_tamesus(calls: Calls, baresip: Baresip) -> None:
    phone = await calls.target({"type": "sip", "to": baresip.uri})
    greeting = await collect(phone)
    assert isinstance(greeting[-1], AgentTurn) and not greeting[-1].done
    assert greeting[-1].first_audio_at is not None, "baresip's WAV was heard"
    traced = [e.event.line for e in greeting if isinstance(e, Event) and isinstance(e.event, SipTrace)]
    assert traced[0] == f"INVITE {baresip.uri} SIP/2.0" and "SIP/2.0 200 Answering" in traced
    turn = await collect(phone, UserTurn(text="hello there I would like to check my order"))  # 2.25 s
    assert isinstance(turn[-1], AgentTurn)
    await phone.stop()
    assert not [m for m in turn if isinstance(m, Event) and isinstance(m.event, CallEnded)]
    assert await baresip.stop() == 0
    heard = baresip.heard().astype(np.float64)
    frames = heard[: len(heard) // 160 * 160].reshape(-1, 160)
    spoken = (np.sqrt((frames**2).mean(axis=1)) > 1000).sum() * 0.02
    assert 1.8 <= spoken <= 2.6, f"baresip recorded {spoken:.2f} s of tamesu's 2.25 s of speech"
