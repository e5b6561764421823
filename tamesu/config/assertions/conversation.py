"""Assertions on the conversation as a whole: turns, captured, handoff, metric, delegated_to."""

from typing import Any, ClassVar

from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, F, PositiveInt, ShortForm, exactly_one, set_schema
from tamesu.config.kinds import assertion_kind

__all__ = ["CapturedAssertion", "Delegation", "HandoffAssertion", "IntCompare", "MetricAssertion"]


class IntCompare(ConfigModel):
    """A count compared with bounds; several bounds must all hold."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    lt: int | None = F("Upper bound on the count, exclusive.", 7, default=None)
    lte: int | None = F("Passes when the count is this or less.", 6, default=None)
    gt: int | None = F("Lower bound on the count, exclusive.", 1, default=None)
    gte: int | None = F("Passes when the count is this or more.", 2, default=None)
    eq: int | None = F("Passes when the count is exactly this.", 3, default=None)

    @model_validator(mode="before")
    @classmethod
    def _some_bound(cls, data: Any) -> Any:
        exactly_one(data, ("lt", "lte", "gt", "gte", "eq"), "a count", at_least=True)
        return data


class CapturedAssertion(ConfigModel):
    """A value captured during the run exists and, optionally, equals or matches."""

    model_config = ConfigDict(json_schema_extra={"not": set_schema("equals", "matches")})

    name: str = F("The capture's name (capture.name).", "order_id", min_length=1)
    equals: str | None = F("Required value, compared exactly.", "ORD-1001", default=None)
    matches: str | None = F("Pattern the captured value has to match.", "^ORD-[0-9]+$", default=None)

    @model_validator(mode="after")
    def _one_check(self) -> "CapturedAssertion":
        if self.equals is not None and self.matches is not None:
            raise PydanticCustomError("captured_check", "captured takes equals or matches, not both")
        return self


class HandoffAssertion(ShortForm):
    """The agent handed the conversation to a person (or did not), when, to whom, with what summary."""

    __short_field__: ClassVar[str] = "expected"
    __short_types__: ClassVar[tuple[type, ...]] = (bool,)
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "boolean",
        "description": "true: a handoff must happen; false: it must not.",
    }

    expected: bool = F("Whether a handoff must happen.", False, default=True)
    within_turns: PositiveInt | None = F("The last agent turn the handoff may come on.", 3, default=None)
    to: str | None = F("Pattern the handoff destination has to match.", "^billing$", default=None)
    summary_contains: list[str] | None = F(
        "Strings that must all appear in the handoff note.", ["ORD-1001", "late"], default=None
    )
    summary: str | None = F(
        "Rubric a judge applies to the handoff note.",
        "The summary names the order and the problem",
        default=None,
    )


class MetricAssertion(ConfigModel):
    """A metric of the run compared with one bound."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": [k]} for k in ("lt", "lte", "gt", "gte", "eq")]}
    )

    name: str = F("The metric's name.", "turn_latency_ms_p95", min_length=1)
    lt: float | None = F("Upper bound, exclusive.", 3000, default=None)
    lte: float | None = F("Passes when the metric is this or less.", 3000, default=None)
    gt: float | None = F("Lower bound, exclusive.", 0, default=None)
    gte: float | None = F("Passes when the metric is this or more.", 1, default=None)
    eq: float | None = F("Passes when the metric is exactly this.", 1, default=None)

    @model_validator(mode="before")
    @classmethod
    def _one_bound(cls, data: Any) -> Any:
        exactly_one(data, ("lt", "lte", "gt", "gte", "eq"), "metric", allowed=("name",))
        return data


class Delegation(ShortForm):
    """The agent sent a message to one of the suite's remote agents."""

    __short_field__: ClassVar[str] = "agent"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "minLength": 1,
        "description": "The remote agent's name.",
    }

    agent: str = F("Which remote agent (its key under remote_agents).", "billing", min_length=1)
    contains: str | None = F("Text some message to that agent must contain.", "refund", default=None)
    regex: str | None = F(
        "A regular expression some message to that agent must match.", r"ORD-\d+", default=None
    )


assertion_kind(
    "turns",
    spec=IntCompare,
    description="Bounds on how many turns the agent took.",
    example={"lte": 6},
    evaluator="tamesu.assertions.conversation:turns",
    summary="the number of agent turns satisfies `lt` / `lte` / `gt` / `gte` / `eq`",
)


assertion_kind(
    "captured",
    spec=CapturedAssertion,
    description="A captured value was found and, optionally, equals or matches an expected one.",
    example={"name": "order_id", "matches": "^ORD-"},
    evaluator="tamesu.assertions.conversation:captured",
    summary="a value captured during the run exists and `equals` / `matches`",
)


assertion_kind(
    "handoff",
    spec=HandoffAssertion,
    description="The agent passed the conversation to a person (true) or not (false), or when, to whom and with what summary.",
    example={"within_turns": 3, "to": "^billing$"},
    evaluator="tamesu.assertions.conversation:handoff",
    summary="the agent handed off (or not), `within_turns`, `to` a regex, `summary_contains`, a `summary` rubric",
)


assertion_kind(
    "metric",
    spec=MetricAssertion,
    description="A metric of the run passes one comparison (lt, lte, gt, gte or eq).",
    example={"name": "turn_latency_ms_p95", "lt": 3000},
    evaluator="tamesu.assertions.conversation:metric",
    summary="a metric of the run satisfies one comparator",
)


assertion_kind(
    "delegated_to",
    spec=Delegation,
    description="The agent messaged this remote agent (a name, or agent/contains/regex).",
    example={"agent": "billing", "contains": "refund"},
    evaluator="tamesu.assertions.delegation:delegated_to",
    summary="the agent sent a message to this remote agent (with `contains` / `regex`: one that says so)",
)
