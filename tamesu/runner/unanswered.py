"""Runs in which the agent never really answered, which must not pass on checks that only look
for what it should not say.

An agent that refuses every turn (HTTP 401, a SIP call refused) or whose replies tamesu cannot
read (``response.text`` names a key the agent does not send) leaves a transcript with empty agent
turns, and ``not_contains: "90 days"`` holds on an empty transcript. So the run is an
infrastructure error that names the status and the start of the body, or the path and the keys
the reply did have; a test that checks ``status`` or ``call_ended_by`` expects such answers, and
is graded as usual.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tamesu.untrusted import printable

if TYPE_CHECKING:
    from tamesu.kernel.transcript import Transcript, Turn
    from tamesu.run_spec import RunSpec

__all__ = ["EXPECTS_REFUSALS", "refusal", "unanswered"]

EXPECTS_REFUSALS = frozenset({"status", "call_ended_by"})
"""Assertion kinds that check how the agent answered: a test with one expects refusals."""
_BODY = 200
"""Characters of a refusing answer's body quoted in the error."""


def refusal(turn: Turn) -> str | None:
    """``HTTP 401: {"error": "unauthorized"}``: how the agent refused this turn, or None."""
    if turn.refusal:
        return turn.refusal
    if turn.status is None or turn.status < 400:
        return None
    body = _start(turn.raw[0]) if turn.raw else ""
    return f"HTTP {turn.status}: {body}" if body else f"HTTP {turn.status} with an empty body"


def _start(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(printable(text[: _BODY * 2]).split())
    return text if len(text) <= _BODY else text[: _BODY - 3] + "..."


def unanswered(spec: RunSpec, transcript: Transcript | None) -> str | None:
    """Why the run is an error though nothing broke: a turn the agent refused (after the connect
    policy's retries), or agent turns that were all empty because a response path matched
    nothing."""
    if transcript is None:
        return None
    agent = transcript.agent_turns()
    if not any(a.kind in EXPECTS_REFUSALS for a in spec.assertions):
        for turn in agent:
            why = refusal(turn)
            if why is not None:
                return f"the agent refused user turn {turn.index}: {why} (assert status to test such answers)"
    if agent and all(t.unread and not t.text and not t.tool_calls for t in agent):
        return f"nothing was read from the agent's replies: {agent[0].unread}"
    return None
