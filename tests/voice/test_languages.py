"""Voice tests in Spanish, German and French run offline: espeak-ng speaks for the agent, the
shipped multilingual Whisper base hears it (the listener's choice for any language but English).

The agent greets in its language over the voice socket (16 kHz) and over Twilio media streams
(8 kHz mu-law). What the test controls is asserted: the call needs no hosted STT, a turn with the
agent's speech comes back, heard by our STT in the persona's language, and what it heard is within
a word-error bound of what the agent said. The bound keeps a margin over what Whisper base made of
espeak-ng's voice here (``benchmarks/results/speech_accuracy.json``: espeak-ng's robotic voices
are hard for it in these languages), so it fails on the wrong language or model, not on one word.
"""

from __future__ import annotations

import pytest

from tamesu.audio.engines import available, stt_for
from tamesu.config.target import parse_target
from tamesu.kernel.events import VoiceTurn
from tamesu.kernel.messages import AgentTurn, Event
from tamesu.voice.settings import stt_problem
from tamesu.voice.voice_metrics import wer

from .peers import AgentScript, Calls, collect, spec_with
from .test_session import voice_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GREETINGS = {
    "es-ES": ("espeak:es+f3", "Hola, buenos días, gracias por llamar."),
    "de-DE": ("espeak:de", "Guten Tag, ich möchte meine Bestellung zurückgeben."),
    "fr-FR": ("espeak:fr-fr", "Bonjour, je voudrais retourner ma commande."),
}
MAX_WER = {"voice": 0.5, "twilio": 1.3}
"""Measured here: 0 to 0.17 at 16 kHz, where the bound also tells a wrong language or an English-only
model (about 1) from the right one. Over 8 kHz mu-law espeak-ng's voice loses most of itself: 0.67
mostly, and once 1.17 in a fresh-clone run ("pour que le boulot retourne les macommons"), so that
line's bound only says that speech came back and was transcribed without a runaway loop; which
engine hears a narrowband line in these languages is checked by the test above."""


def _base_installed() -> bool:
    engines = available()["stt"]
    return bool(engines["whisper-base"]["installed"] and available()["tts"]["espeak"]["installed"])


@pytest.mark.unit
@pytest.mark.parametrize("language", list(GREETINGS))
def test_the_language_needs_no_hosted_stt(language: str) -> None:
    assert stt_for(16000, language) == stt_for(8000, language) == "whisper-base"
    assert stt_problem(parse_target({"type": "voice", "url": "ws://x"}), language) is None


@pytest.mark.skipif(not _base_installed(), reason="needs the voice extra's Whisper base and espeak-ng")
@pytest.mark.parametrize("language", list(GREETINGS))
@pytest.mark.parametrize("line", ["voice", "twilio"])
async def test_the_agents_greeting_is_heard_offline_in_its_language(
    calls: Calls, language: str, line: str
) -> None:
    voice, greeting = GREETINGS[language]
    script = AgentScript(greeting=1.0, lines=(greeting,), speaks=(voice, language), transcripts=False)
    _, url = await calls.agent(script)
    config = voice_config(url, transcript_source="stt")
    if line == "twilio":
        config = {"type": "twilio", "url": f"{url}/twilio", "idle": "1s"}
    phone = await calls.target(
        config,
        turn_timeout=30.0,
        stt_engine=None,
        spec=spec_with({"language": language, "voice": f"{language}-female"}),
        language=language,
    )
    messages = await collect(phone)
    turn = messages[-1]
    assert isinstance(turn, AgentTurn) and [a for a in turn.audio if a.channel == "agent"]
    voice_turn = next(m.event for m in messages if isinstance(m, Event) and isinstance(m.event, VoiceTurn))
    assert voice_turn.text_source == "stt"
    assert wer(greeting, turn.text, language=language) <= MAX_WER[line], turn.text
