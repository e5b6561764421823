"""Audio checks: ``dtmf_received``, the keypad digits the agent sent during the call.

Audio targets fill ``Transcript.dtmf_received`` from the agent's side of the call: tones detected in
its audio (Goertzel, as a telephone exchange does) or DTMF events of its protocol. The comparison is
exact: the digits, in order, and nothing else.
"""

from __future__ import annotations

from tamesu.assertions.base import AssertionContext, assertion
from tamesu.config.assertions.voice import DTMFAssertion
from tamesu.kernel.outcome import AssertionResult

__all__ = ["dtmf_received"]


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
