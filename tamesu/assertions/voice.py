"""Call checks: ``dtmf_received``, the keypad digits the agent sent during the call;
``call_ended_by``, who or what ended it; ``transferred_to``, where the agent transferred it.

Audio targets fill ``Transcript.dtmf_received`` from the agent's side of the call: tones detected in
its audio (Goertzel, as a telephone exchange does) or DTMF events of its protocol. The comparison is
exact: the digits, in order, and nothing else.

A phone call's end is its ``CallEnded`` event (the sip target records one when the agent hung up,
the line was busy, nobody answered, the call ran out of time or failed); without one, the run's
own end says it: the agent ended the session (agent), the caller was done (caller: the script or
the simulated user finished, or max_turns), the run timed out (timeout) or failed (error).
"""

from __future__ import annotations

import re

from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.voice import CallEndReasons, DTMFAssertion, Matches, StringList
from tamesu.kernel.events import CallEnded, CallTransferred
from tamesu.kernel.outcome import AssertionResult
from tamesu.kernel.transcript import Transcript

__all__ = ["call_end_reason", "call_ended_by", "dtmf_received", "transferred_to"]

_RUN_ENDS = {"agent": "agent", "timeout": "timeout", "error": "error", "cancelled": "error"}


@assertion("dtmf_received", spec=DTMFAssertion)
def dtmf_received(spec: DTMFAssertion, ctx: AssertionContext) -> AssertionResult:
    """The agent sent exactly these digits (``{equals: "1234#"}``; a bare string means the same)."""
    want = spec if isinstance(spec, str) else (spec.get("equals") if isinstance(spec, dict) else spec.equals)
    want = str(want).upper()
    got = ctx.transcript.dtmf_received.upper()
    if got == want:
        return AssertionResult.of(True, expected=want, actual=got)
    heard = f"the agent sent {got!r}" if got else "the agent sent no digits"
    return AssertionResult.of(False, expected=want, actual=got, message=f"{heard}, expected {want!r}")


def call_end_reason(transcript: Transcript) -> str | None:
    """Who or what ended the call (see the module docstring); None for a run that has not ended."""
    ended = next((e for e in transcript.events if isinstance(e, CallEnded)), None)
    if ended is not None:
        return ended.by
    reason = transcript.end_reason
    if reason is None:
        return None
    return _RUN_ENDS.get(reason, "caller")


@assertion("call_ended_by", spec=StringList)
def call_ended_by(spec: CallEndReasons, ctx: AssertionContext) -> AssertionResult:
    """The call ended for one of these reasons (``[agent, caller]``; a bare reason is read as a list
    of one when the suite is loaded)."""
    want: list[str] = list(spec)
    got = call_end_reason(ctx.transcript)
    ok = got in want
    message = (
        "" if ok else f"the call ended by {got or 'nothing (it has not ended)'}, expected {' or '.join(want)}"
    )
    return AssertionResult.of(ok, expected=want, actual=got, message=message)


@assertion("transferred_to", spec=Matches)
def transferred_to(spec: Matches, ctx: AssertionContext) -> AssertionResult:
    """The agent transferred the call (SIP REFER) to a target matching ``matches``."""
    pattern = spec.get("matches") if isinstance(spec, dict) else spec.matches
    targets = [e.to for e in ctx.transcript.events if isinstance(e, CallTransferred)]
    handoff = ctx.transcript.handoff
    if not targets and handoff is not None and handoff.to:
        targets = [handoff.to]
    found = next((t for t in targets if re.search(str(pattern), t)), None)
    if found is not None:
        return AssertionResult.of(True, expected=pattern, actual=found)
    why = f"the call was transferred to {', '.join(targets)}" if targets else "the call was not transferred"
    return AssertionResult.of(
        False, expected=pattern, actual=targets or None, message=f"{why}; expected a match of {pattern!r}"
    )
