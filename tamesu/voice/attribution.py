"""Why an audio test failed: the agent misheard the caller, tamesu misheard the agent, or the agent was wrong.

A failed call is "heard differently" when the agent's own transcript of a caller turn (targets that
publish one: a voice target's ``messages.caller_transcript``, realtime's input transcription,
pipecat's ``user-transcription``, livekit's ``lk.transcription`` of the caller's track) differs materially from what the caller said; "tamesu heard
differently" when tamesu's STT of an agent turn differs materially from the agent's own words;
and the agent's when neither. Materially: more than a quarter of the words changed, or a number
changed (a mistaken digit changes an order number or a date; a dropped "the" changes nothing).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from tamesu.kernel.events import VoiceCall, VoiceTurn

from .voice_metrics import word_edits

if TYPE_CHECKING:
    from tamesu.kernel.transcript import Transcript, Turn

__all__ = ["MATERIAL_WER", "Cause", "differs_materially", "failure_cause"]

Cause = Literal["heard_differently", "tamesu_heard_differently", "agent"]
MATERIAL_WER = 0.25
_NUMBER = re.compile(r"\d+")


def differs_materially(said: str, heard: str) -> bool:
    """Whether ``heard`` is not what was ``said``: a quarter of the words wrong, or other numbers."""
    edits, words = word_edits(said, heard)
    if words and edits / words > MATERIAL_WER:
        return True
    return sorted(_NUMBER.findall(said)) != sorted(_NUMBER.findall(heard))


def failure_cause(transcript: Transcript) -> Cause | None:
    """The cause of a failed call's failure (None: the run was not a call)."""
    turns = [e for e in transcript.events if isinstance(e, VoiceTurn)]
    if not any(isinstance(e, VoiceCall) for e in transcript.events):
        return None
    agent_turns = transcript.agent_turns()
    for event in turns:
        heard = event.caller_heard
        caller = _said_before(transcript, agent_turns, event.turn)
        if heard and caller and differs_materially(caller, heard):
            return "heard_differently"
    for event in turns:
        stt, own = event.stt, event.agent_transcript
        if stt and own and differs_materially(own, stt):
            return "tamesu_heard_differently"
    return "agent"


def _said_before(transcript: Transcript, agent_turns: list[Turn], index: int) -> str | None:
    """What the caller said in the user turn just before agent turn ``index`` (1-based)."""
    if not 1 <= index <= len(agent_turns):
        return None
    position = transcript.turns.index(agent_turns[index - 1])
    for turn in reversed(transcript.turns[:position]):
        if turn.role == "user":
            return turn.text
        if turn.role == "agent":
            return None
    return None
