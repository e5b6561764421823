"""The simulated caller's audio habits (``behaviors``) as seeded draws, so a run replays exactly.

The voice graph asks these questions once per turn; the answers depend only on the seed and the
order of the questions, never on timing or on other calls.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BehaviourRNG"]

_BEHAVIOUR_STREAM = 0x42454856


class BehaviourRNG:
    """Seeded answers to: barge in on this turn? when? how long a pause after my turn?"""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, _BEHAVIOUR_STREAM])

    def should_interrupt(self, p: float) -> bool:
        """True with probability ``p`` (``interrupt_probability``): the caller talks over this agent turn."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"interrupt_probability must be within 0..1, not {p}")
        return bool(self._rng.random() < p)

    def interrupt_offset_s(self, agent_audio_s: float) -> float:
        """Seconds into the agent's audio at which the caller starts talking.

        Uniform over the middle of the turn, from 25% to 75% of its length, but never earlier than
        0.3 s (a caller needs to hear something before reacting) nor after the audio ends.
        """
        if agent_audio_s <= 0:
            return 0.0
        low = min(max(0.25 * agent_audio_s, 0.3), agent_audio_s)
        high = max(low, 0.75 * agent_audio_s)
        return float(self._rng.uniform(low, high))

    def silence_after_turn(self, min_ms: float, max_ms: float) -> float:
        """Seconds of silence after the caller's turn, uniform in [min_ms, max_ms] (``silence_after_turn_ms``)."""
        if min_ms < 0 or max_ms < min_ms:
            raise ValueError(
                f"silence_after_turn_ms must be [min, max] with 0 <= min <= max, not [{min_ms}, {max_ms}]"
            )
        return float(self._rng.uniform(min_ms, max_ms)) / 1000.0
