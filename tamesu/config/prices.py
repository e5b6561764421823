"""``prices:`` in tamesu.yaml: what a run's speech and call minutes cost, beside its model calls.

Model calls are priced from the genai-prices table (``tamesu.models.usage``); speech and call
minutes have no such table, so their prices are the project's own: per minute of call by target
name or target type (telephony, realtime), per million characters of hosted TTS and per minute of
hosted STT by engine, and per second of local speech engines. Like the other configuration models,
this module does without ``from __future__ import annotations``.
"""

from tamesu.config.common import ConfigModel, F

__all__ = ["Prices"]


class Prices(ConfigModel):
    """Prices in US dollars of what tamesu's model table does not know."""

    call_minute: dict[str, float] = F(
        "Per minute of call, by target name or target type (a name wins): telephony and realtime minutes.",
        {"sip": 0.004, "twilio": 0.014, "openai_realtime": 0.06, "support_line": 0.01},
        default_factory=dict,
    )
    tts_million_characters: dict[str, float] = F(
        "Per million characters sent to a hosted TTS engine, by engine name.",
        {"openai": 15.0},
        default_factory=dict,
    )
    stt_minute: dict[str, float] = F(
        "Per minute of audio sent to a hosted STT engine, by engine name.",
        {"openai": 0.006},
        default_factory=dict,
    )
    local_speech_second: float = F(
        "Per CPU second a local speech engine (piper, espeak, whisper) spent on a run's requests: "
        "the machine's price of one core for one second.",
        0.00002,
        default=0.0,
        ge=0,
    )

    def minute_price(self, target_name: str, target_type: str) -> float | None:
        """The price of a minute of this target's calls, or None when none is set."""
        for key in (target_name, target_type):
            if key in self.call_minute:
                return float(self.call_minute[key])
        return None
