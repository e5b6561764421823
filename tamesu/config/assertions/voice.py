"""Assertions on a call: dtmf_received, call_ended_by, transferred_to."""

from typing import Annotated, Any, List, Literal  # noqa: UP035 -- see CallEndReasons

from pydantic import BeforeValidator

from tamesu.config.common import DTMF_PATTERN, ConfigModel, F
from tamesu.config.kinds import assertion_kind

__all__ = ["CALL_END_REASONS", "CallEndReason", "CallEndReasons", "DTMFAssertion", "Matches", "StringList"]

CallEndReason = Literal["agent", "caller", "timeout", "error", "no_answer", "busy"]
CALL_END_REASONS: tuple[str, ...] = CallEndReason.__args__  # type: ignore[attr-defined]


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


CallEndReasons = List[CallEndReason]  # noqa: UP006 -- typing's alias survives get_type_hints as itself
"""What ``call_ended_by``'s evaluator gets: the reasons, always a list."""

StringList = Annotated[
    CallEndReasons, BeforeValidator(_as_list, json_schema_input_type=CallEndReason | CallEndReasons)
]
"""One reason or a list of them; always read as a list."""


class DTMFAssertion(ConfigModel):
    """Keypad digits the agent sent."""

    equals: str = F("Exactly these digits.", "1234#", pattern=DTMF_PATTERN)


class Matches(ConfigModel):
    """A value that must match a regular expression."""

    matches: str = F("The regular expression.", "^sip:billing@")


assertion_kind(
    "dtmf_received",
    spec=DTMFAssertion,
    description="sip and livekit audio: the digits the agent sent.",
    example={"equals": "1234#"},
    evaluator="tamesu.assertions.voice:dtmf_received",
    summary="the agent sent exactly these keypad digits",
)


assertion_kind(
    "call_ended_by",
    spec=StringList,
    description="sip: who or what ended the call (one reason or a list).",
    example=["agent", "caller"],
    evaluator="tamesu.assertions.voice:call_ended_by",
    summary="who or what ended the call is one of these reasons",
)


assertion_kind(
    "transferred_to",
    spec=Matches,
    description="sip: the target of the agent's SIP REFER.",
    example={"matches": "^sip:billing@"},
    evaluator="tamesu.assertions.voice:transferred_to",
    summary="the agent transferred the call (SIP REFER) to a matching target",
)
