"""Assertions on the agent's raw responses: json_path and status."""

from typing import Any

from tamesu.config.common import ConfigModel, F, HttpStatus
from tamesu.config.kinds import assertion_kind

__all__ = ["JSONPathAssertion"]


class JSONPathAssertion(ConfigModel):
    """A path that exists in a response and, with equals, has a given value."""

    path: str = F("Where to look in the response body (a JSONPath).", "$.status", min_length=1)
    equals: Any = F("The value found at path must equal this.", "refunded", default=None)


assertion_kind(
    "json_path",
    spec=JSONPathAssertion,
    description="rest and a2a: a path in a turn's response (the task, for a2a) exists and, with equals, has that value.",
    example={"path": "$.status", "equals": "ok"},
    evaluator="tamesu.assertions.response:json_path",
    summary="a path exists in some turn's raw response (a2a: the task) (with `equals`: some match equals the value)",
)


assertion_kind(
    "status",
    spec=HttpStatus,
    description="rest: every turn's HTTP status.",
    example=200,
    evaluator="tamesu.assertions.response:status",
    summary="every turn's HTTP status equals it",
)
