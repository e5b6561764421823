"""Assertions on the tools the agent called: tool_called, tool_not_called, tool_sequence."""

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, field_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, F, ShortForm, set_schema
from tamesu.config.kinds import assertion_kind

__all__ = ["ToolCall", "ToolSequence"]


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


assertion_kind(
    "tool_called",
    spec=ToolCall,
    description="The agent called this tool (a name, or name/args/schema).",
    example={"name": "lookup_policy", "args": {"topic": "returns"}},
    evaluator="tamesu.assertions.tools:tool_called",
    summary="a call with that name (and `args` as a subset; `schema` must hold for every call)",
)


def _no_schema(call: ToolCall) -> ToolCall:
    if call.schema_ is not None:
        raise PydanticCustomError("tool_schema", "schema applies to tool_called, not tool_not_called")
    return call


NotCalled = Annotated[
    ToolCall,
    AfterValidator(_no_schema),
    Field(json_schema_extra={"not": {"type": "object", **set_schema("schema")}}),
]
"""A tool call that must not happen: a name and args, never a schema."""


assertion_kind(
    "tool_not_called",
    spec=NotCalled,
    description="The agent never called this tool (a name, or name/args).",
    example="issue_refund",
    evaluator="tamesu.assertions.tools:tool_not_called",
    summary="no call with that name (and `args` as a subset)",
)


assertion_kind(
    "tool_sequence",
    spec=ToolSequence,
    description="The agent called these tools in this order (in between others unless exact).",
    example={"calls": ["lookup_order", "issue_refund"], "exact": False},
    evaluator="tamesu.assertions.tools:tool_sequence",
    summary="the calls appear in this order (a subsequence; `exact` for the whole list)",
)
