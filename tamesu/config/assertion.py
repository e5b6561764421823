"""Assertions: one spec model per kind, and the ``Assertion`` item built from one table of kinds.

``ASSERTION_KINDS`` maps each assertion key to the type of its value; ``Assertion`` is created from
it, so a new kind is one line here and appears in validation and in the JSON Schema at once.
An item holds exactly one kind (plus ``on_turn``); ``item.kind`` names it and ``item.spec`` is its
value, always in object form (``judge: "text"`` reads as ``Judge(rubric="text")``).
"""

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import (
    DTMF_PATTERN,
    ConfigModel,
    Duration,
    F,
    Fraction,
    HttpMethod,
    HttpStatus,
    PositiveInt,
    ShortForm,
    StrMap,
    exactly_one,
    set_schema,
)

__all__ = [
    "ASSERTION_KINDS",
    "BUILTIN_PACKS",
    "CALL_END_REASONS",
    "Assertion",
    "CallEndReason",
    "CapturedAssertion",
    "DTMFAssertion",
    "Delegation",
    "Evaluator",
    "GoldenAssertion",
    "GroundedAssertion",
    "GroundedContext",
    "HandoffAssertion",
    "IntCompare",
    "JSONPathAssertion",
    "Judge",
    "Matches",
    "MetricAssertion",
    "OnTurn",
    "Similar",
    "StateCommand",
    "StateHTTP",
    "StringList",
    "ToolCall",
    "ToolSequence",
]

BUILTIN_PACKS = (
    "prompt_injection",
    "pii_leakage",
    "system_prompt_leakage",
    "stays_in_scope",
    "discloses_ai",
    "harmful_content",
    "excessive_agency",
    "policy_consistency",
)
"""Red-team assertion packs that ship with tamesu; a suite's packs entry of the same name replaces one."""

CallEndReason = Literal["agent", "caller", "timeout", "error", "no_answer", "busy"]
CALL_END_REASONS: tuple[str, ...] = CallEndReason.__args__  # type: ignore[attr-defined]


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


StringList = Annotated[
    list[CallEndReason], BeforeValidator(_as_list, json_schema_input_type=CallEndReason | list[CallEndReason])
]
"""One reason or a list of them; always read as a list."""


def _turn(value: Any) -> Any:
    if value == "last" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise PydanticCustomError("on_turn", "on_turn takes a turn number from 1, or last")


OnTurn = Annotated[Annotated[int, Field(ge=1)] | Literal["last"], BeforeValidator(_turn)]
"""A 1-based agent turn number, or ``last``."""


class Judge(ShortForm):
    """A model grades the run against a rubric."""

    __short_field__: ClassVar[str] = "rubric"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "description": "The rubric, graded pass/fail by the judge model.",
    }
    __object_schema__: ClassVar[dict[str, Any]] = {
        "if": set_schema("min"),
        "then": {"required": ["scale"], "properties": {"scale": {"const": "1-5"}}},
    }

    rubric: str = F(
        "What the judge checks, in plain words.", "The agent apologises before explaining the policy"
    )
    model: str | None = F(
        "Genkit model reference of the judge; models.judge when unset.",
        "anthropic/claude-sonnet-4-6",
        default=None,
    )
    scale: Literal["binary", "1-5"] = F(
        "Pass/fail, or a score from 1 to 5 compared with min.", "1-5", default="binary"
    )
    min: float | None = F("Lowest passing score on the 1-5 scale.", 4, default=None, ge=1, le=5)

    @model_validator(mode="after")
    def _min_needs_scale(self) -> "Judge":
        if self.min is not None and self.scale != "1-5":
            raise PydanticCustomError("judge_min", "min applies to scale: 1-5")
        return self


class ToolCall(ShortForm):
    """A tool call the agent made (or never made)."""

    __short_field__: ClassVar[str] = "name"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "minLength": 1,
        "description": "The tool name.",
    }

    name: str = F("The tool's name as the target reports it.", "reschedule_booking", min_length=1)
    args: dict[str, Any] | None = F(
        "Arguments the call must have with these values (other arguments may be there too).",
        {"day": "saturday"},
        default=None,
    )
    schema_: dict[str, Any] | None = F(
        "tool_called: a JSON Schema that every call's arguments must satisfy.",
        {"type": "object", "required": ["day"], "properties": {"day": {"enum": ["saturday", "sunday"]}}},
        default=None,
        alias="schema",
    )

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                raise PydanticCustomError(
                    "json_schema", "not a valid JSON Schema: {error}", {"error": exc.message}
                ) from None
        return value


class ToolSequence(ConfigModel):
    """Tools called in this order."""

    calls: list[str] = F(
        "The expected tool names, in calling order.", ["lookup_order", "issue_refund"], min_length=1
    )
    exact: bool = F("The calls must be exactly this list, not just contain it in order.", True, default=False)


class Evaluator(ShortForm):
    """A registered Genkit evaluator scores the run."""

    __short_field__: ClassVar[str] = "name"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "minLength": 1,
        "description": "The evaluator name.",
    }

    name: str = F("The evaluator's registered name.", "genkitEval/faithfulness", min_length=1)
    min: Fraction | None = F("Lowest passing score, from 0 to 1.", 0.8, default=None)


class JSONPathAssertion(ConfigModel):
    """A path that exists in a response and, with equals, has a given value."""

    path: str = F("Where to look in the response body (a JSONPath).", "$.status", min_length=1)
    equals: Any = F("The value found at path must equal this.", "refunded", default=None)


class DTMFAssertion(ConfigModel):
    """Keypad digits the agent sent."""

    equals: str = F("Exactly these digits.", "1234#", pattern=DTMF_PATTERN)


class Matches(ConfigModel):
    """A value that must match a regular expression."""

    matches: str = F("The regular expression.", "^sip:billing@")


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


class GoldenAssertion(ConfigModel):
    """The agent's turns compared with reference turns."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["file"]}, {"required": ["turns"]}]})

    file: str | None = F(
        "A JSON file next to the suite: a list of agent turns or a transcript.json (tamesu run --update-golden writes it).",
        "golden/refund.json",
        default=None,
    )
    turns: list[str] | None = F(
        "Reference turns written inline, instead of a file.",
        ["Our return window is 30 days.", "You're welcome!"],
        default=None,
    )
    mode: Literal["exact", "similar", "judge"] = F(
        "exact: same normalised text; similar: word overlap of at least min; judge: a model decides if each turn means the same.",
        "similar",
        default="similar",
    )
    min: Fraction = F("similar: the lowest word overlap that passes.", 0.8, default=0.8)

    @model_validator(mode="before")
    @classmethod
    def _one_source(cls, data: Any) -> Any:
        exactly_one(data, ("file", "turns"), "golden", allowed=("mode", "min"))
        return data


class GroundedContext(ConfigModel):
    """Where the passages the agent's claims are checked against come from."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": [k]} for k in ("tool", "json_path", "text")]}
    )

    tool: str | None = F(
        "A tool whose results are the context (model, mcp, grpc, realtime, pipecat targets).",
        "search_docs",
        default=None,
    )
    json_path: str | None = F(
        "A JSONPath into every raw response that selects the passages (rest, websocket, realtime).",
        "$.sources[*].text",
        default=None,
    )
    text: list[str] | None = F(
        "The passages themselves.", ["Returns are accepted within 30 days of delivery."], default=None
    )

    @model_validator(mode="before")
    @classmethod
    def _one_source(cls, data: Any) -> Any:
        exactly_one(data, ("tool", "json_path", "text"), "context")
        return data


class GroundedAssertion(ConfigModel):
    """Every factual claim of the agent is backed by the retrieval context; a judge lists the claims."""

    context: GroundedContext = F("Where the retrieval context comes from.", {"tool": "search_docs"})
    min: Fraction | None = F(
        "Share of claims that must be supported; all of them when unset.", 0.9, default=None
    )
    model: str | None = F(
        "Judge model for this check; models.judge when unset.", "googleai/gemini-2.5-pro", default=None
    )


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


class StateHTTP(ConfigModel):
    """After the conversation, a request to your backend whose status and body are checked."""

    url: str = F(
        "Where the request goes; the run's vars, captures and secrets render in it.",
        "{{vars.admin_url}}/orders/{{captured.order_id}}",
    )
    method: HttpMethod = F("The HTTP method.", "GET", default="GET")
    headers: StrMap | None = F(
        "Request headers; templates render in them.",
        {"Authorization": "Bearer {{secrets.ADMIN_TOKEN}}"},
        default=None,
    )
    body: Any = F(
        "What is sent: a string as it is, a mapping as JSON.",
        {"reason": "test {{env.TAMESU_TEST}}"},
        default=None,
    )
    status: HttpStatus | None = F("The status expected; any status below 400 when unset.", 200, default=None)
    json_path: JSONPathAssertion | None = F(
        "A path that must exist in the JSON body and, with equals, hold that value.",
        {"path": "$.status", "equals": "refunded"},
        default=None,
    )
    contains: str | None = F("Substring required in the response body.", "refunded", default=None)
    regex: str | None = F("Pattern the response body has to match.", '"type":"refund_issued"', default=None)
    timeout: Duration = F("The longest the request may take.", "10s", default="30s")


class StateCommand(ConfigModel):
    """After the conversation, a shell command whose exit code and output are checked."""

    run: str = F(
        "The command, run with sh -c; the run's vars, captures and secrets render in it.",
        "psql -tAc \"select status from orders where id = '{{captured.order_id}}'\"",
    )
    exit: int = F("The exit code expected.", 0, default=0)
    contains: str | None = F("Substring required in the command output.", "refunded", default=None)
    regex: str | None = F("Pattern the command output has to match.", "refund(ed|ing)", default=None)
    timeout: Duration = F("The longest the command may run.", "20s", default="30s")


class Similar(ShortForm):
    """Some agent turn means the same as a text (embedding similarity)."""

    __short_field__: ClassVar[str] = "text"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "description": "The meaning some agent turn must have (models.embedder, minimum 0.8).",
    }

    text: str = F("What some agent turn should mean.", "Returning after 40 days is not possible")
    min: Fraction = F("Lowest cosine similarity of the embeddings that passes.", 0.7, default=0.8)
    model: str | None = F(
        "Embedding model (Genkit reference); models.embedder when unset.",
        "googleai/text-embedding-004",
        default=None,
    )


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


def _kind(description: str, example: Any, annotation: Any) -> tuple[Any, Any]:
    return (annotation, F(description, example, default=None))


ASSERTION_KINDS: dict[str, tuple[Any, Any]] = {
    "judge": _kind("A model grades the run against a rubric (text, or rubric/model/scale/min).", "The agent states the 30-day window and promises no exception", Judge),
    "contains": _kind("Some agent turn contains this text.", "30 days", str),
    "not_contains": _kind("Fails if any agent turn includes this text.", "90 days", str),
    "regex": _kind("Some agent turn matches this regular expression.", "(?i)30 days", str),
    "not_regex": _kind("No agent turn matches this regular expression.", r"\b\d{16}\b", str),
    "similar_to": _kind("An agent turn whose meaning is close to this text (embedding similarity reaching min).", {"text": "Returning after 40 days is not possible", "min": 0.7}, Similar),
    "json_path": _kind("rest and a2a: a path in a turn's response (the task, for a2a) exists and, with equals, has that value.", {"path": "$.status", "equals": "ok"}, JSONPathAssertion),
    "status": _kind("rest: every turn's HTTP status.", 200, HttpStatus),
    "tool_called": _kind("The agent called this tool (a name, or name/args/schema).", {"name": "lookup_policy", "args": {"topic": "returns"}}, ToolCall),
    "tool_not_called": _kind("The agent never called this tool (a name, or name/args).", "issue_refund", ToolCall),
    "tool_sequence": _kind("The agent called these tools in this order (in between others unless exact).", {"calls": ["lookup_order", "issue_refund"], "exact": False}, ToolSequence),
    "delegated_to": _kind("The agent messaged this remote agent (a name, or agent/contains/regex).", {"agent": "billing", "contains": "refund"}, Delegation),
    "dtmf_received": _kind("sip and livekit audio: the digits the agent sent.", {"equals": "1234#"}, DTMFAssertion),
    "call_ended_by": _kind("sip: who or what ended the call (one reason or a list).", ["agent", "caller"], StringList),
    "transferred_to": _kind("sip: the target of the agent's SIP REFER.", {"matches": "^sip:billing@"}, Matches),
    "evaluator": _kind("A registered Genkit evaluator scores the run (a name, or name/min).", {"name": "genkitEval/faithfulness", "min": 0.8}, Evaluator),
    "metric": _kind("A metric of the run passes one comparison (lt, lte, gt, gte or eq).", {"name": "turn_latency_ms_p95", "lt": 3000}, MetricAssertion),
    "turns": _kind("Bounds on how many turns the agent took.", {"lte": 6}, IntCompare),
    "captured": _kind("A captured value was found and, optionally, equals or matches an expected one.", {"name": "order_id", "matches": "^ORD-"}, CapturedAssertion),
    "golden": _kind("The agent's turns against reference turns from a file or inline (exact, similar or judge).", {"file": "golden/refund.json", "mode": "similar", "min": 0.8}, GoldenAssertion),
    "custom": _kind("An assertion registered in code, by name.", "no_competitor_names", str),
    "grounded": _kind("Every factual claim of the agent is backed by the retrieval context.", {"context": {"tool": "search_docs"}, "min": 0.9}, GroundedAssertion),
    "handoff": _kind("The agent passed the conversation to a person (true) or not (false), or when, to whom and with what summary.", {"within_turns": 3, "to": "^billing$"}, HandoffAssertion),
    "http": _kind("Backend state after the conversation: a request whose status and body are checked.", {"url": "{{vars.admin_url}}/orders/{{captured.order_id}}", "json_path": {"path": "$.status", "equals": "refunded"}}, StateHTTP),
    "command": _kind("Backend state after the conversation: a command whose exit code and output are checked.", {"run": "./scripts/ledger.sh {{captured.order_id}}", "contains": "credited"}, StateCommand),
    "pack": _kind("A named set of assertions, built in or from the suite's packs; it is expanded when the suite loads.", "pii_leakage", str),
}  # fmt: skip
"""Assertion key -> (value type, field). A new kind is one line; Assertion and the JSON Schema follow."""


class _AssertionBase(ConfigModel):
    """Behaviour shared by the generated Assertion model."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": [k]} for k in ASSERTION_KINDS],
            "not": {
                "required": ["tool_not_called"],
                "properties": {"tool_not_called": {"type": "object", **set_schema("schema")}},
            },
        }
    )

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        exactly_one(data, ASSERTION_KINDS, "an assertion", allowed=("on_turn",))
        return data

    @model_validator(mode="after")
    def _schema_only_when_called(self) -> "Any":
        spec = getattr(self, "tool_not_called", None)
        if spec is not None and spec.schema_ is not None:
            raise PydanticCustomError("tool_schema", "schema applies to tool_called, not tool_not_called")
        return self

    @property
    def kind(self) -> str:
        """The assertion key this item holds (judge, contains, ...)."""
        for name in self.model_fields_set:
            if name in ASSERTION_KINDS:
                return name
        raise AttributeError("assertion without a kind")  # unreachable after validation

    @property
    def spec(self) -> Any:
        """The value of that key, in object form for kinds that have a short form."""
        return getattr(self, self.kind)


if TYPE_CHECKING:

    class Assertion(_AssertionBase):
        on_turn: int | Literal["last"] | None

else:
    Assertion = create_model(
        "Assertion",
        __base__=_AssertionBase,
        __doc__="One check on a run: exactly one kind, optionally limited to one agent turn.",
        __module__=__name__,
        **ASSERTION_KINDS,
        on_turn=(
            OnTurn | None,
            F(
                "Check one agent turn (a 1-based number, or last) instead of the whole run.",
                "last",
                default=None,
            ),
        ),
    )
