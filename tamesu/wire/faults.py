"""What the agent did wrong on the wire, counted where the connect policy retries.

A 500 answered within a turn and retried by ``connect:`` leaves the run passing, yet a load test
must still see that the agent served it. So every attempt the connect policy retries is noted in
the run's ``AgentFaults`` (``retrying`` does it), and the failure that ends a run is added from the
run's error when its outcome is made (``AgentFaults.total``): each fault counts once, retried or
not. The counts travel on the Transcript and the RunResult (``agent_faults``), so a run reports
the same in-process and on Ray.

Kinds (``FAULT_KINDS``): ``http_5xx``, ``http_429`` and ``http_408`` answers; ``refused`` (a
refused connection, or a websocket closed before its session began with 1001 / 1012 / 1013, the
server being busy or restarting); ``timeout`` (no answer in time); ``dropped`` (a connection that
broke off or closed mid-answer); ``unreachable`` (any other failure to connect).
"""

from __future__ import annotations

import re

__all__ = ["FAULT_KINDS", "AgentFaults", "agent_fault"]

FAULT_KINDS = ("http_5xx", "http_429", "http_408", "refused", "timeout", "dropped", "unreachable")

_STATUS = re.compile(r"answered (\d{3})\b")
_TIMEOUT = re.compile(r"\bno [\w. ]+ within \d|timed out")
_DROPPED = ("disconnected", "broke off", "reset", "closed", "eof")


def agent_fault(message: str) -> str | None:
    """The fault kind a connection-layer error message speaks of, or None when it names none.

    The connect layer words its errors the same for every HTTP and websocket target, so the kind
    is read from the message (which is all a result keeps).
    """
    text = message.lower()
    status = _STATUS.search(text)
    if status is not None:  # first: the body quoted after the status may say anything
        code = int(status.group(1))
        if code >= 500:
            return "http_5xx"
        return f"http_{code}" if code in (408, 429) else None
    if "refused" in text:
        return "refused"
    if _TIMEOUT.search(text):
        return "timeout"
    if any(word in text for word in _DROPPED):
        return "dropped"
    if "cannot connect" in text or "cannot open a websocket" in text:
        return "unreachable"
    return None


class AgentFaults:
    """The faults one run's agent produced, by kind; shared by the run's adapter and its graph."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def note(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def note_message(self, message: str) -> None:
        """Count the attempt that failed with ``message`` (a retried one is always a fault)."""
        self.note(agent_fault(message) or "unreachable")

    def total(self, ending_error: str | None = None) -> dict[str, int]:
        """The counts, plus the fault of the agent error that ended the run (if it names one)."""
        out = dict(self.counts)
        kind = agent_fault(ending_error) if ending_error else None
        if kind is not None:
            out[kind] = out.get(kind, 0) + 1
        return out
