"""The model target: a system prompt under test, with tools, run on a model (no agent server)."""

from typing import Any, Literal

from pydantic import ConfigDict, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, F, PositiveInt, one_of_schema
from tamesu.config.kinds import target_type
from tamesu.config.target_base import SAY_AND_DATA, TalkingTarget

__all__ = ["ModelTarget", "PromptUnderTest", "ToolDef"]


class ToolDef(ConfigModel):
    """A tool offered to a model target, with the answer tamesu gives when it is called."""

    name: str = F("The name the model calls the tool by.", "lookup_policy", min_length=1)
    description: str | None = F(
        "What the tool is for; the model reads it to decide when to call it.",
        "The store policy for a topic",
        default=None,
    )
    parameters: dict[str, Any] | None = F(
        "JSON Schema (an object schema) of the arguments; no arguments when unset.",
        {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
        default=None,
        json_schema_extra={"properties": {"type": {"const": "object"}}},
    )
    result: Any = F(
        "What a call returns to the model (any JSON; string leaves may use {{args.NAME}}).",
        {"topic": "{{args.topic}}", "window_days": 30},
        default=None,
    )

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("type", "object") != "object":
            raise PydanticCustomError("tool_parameters", "parameters must be an object schema (type: object)")
        return value


class PromptUnderTest(ConfigModel):
    """The keys of a prompt that tamesu runs on a model itself (model and mcp targets)."""

    model: str | None = F(
        "The Genkit model the prompt runs on; models.default when unset.",
        "googleai/gemini-2.5-flash",
        default=None,
    )
    system: str | None = F(
        "The prompt being tested, given to the model as its system message; {{vars.x}} and {{secrets.X}} render.",
        "You are the Mochi Shoes support agent.",
        default=None,
    )
    system_file: str | None = F(
        "A file next to the suite that holds the system prompt.", "prompts/support.md", default=None
    )
    done_tool: str = F("A call of this function ends the conversation.", "end_session", default="end_session")
    temperature: float | None = F(
        "Randomness of sampling; left to the provider when unset.", 0.2, default=None, ge=0
    )
    max_tokens: PositiveInt | None = F("Most output tokens per model call.", 800, default=None)
    max_tool_rounds: PositiveInt = F("Most call-and-answer rounds within one turn.", 4, default=5)
    fallback: list[str] | None = F(
        "Models tried in order when model fails; the run records which one answered.",
        ["googleai/gemini-2.5-pro", "openai/gpt-4.1-mini"],
        default=None,
    )


@target_type(
    "model",
    adapter="tamesu.targets.model.adapter:ModelAdapter",
    parts={"text": SAY_AND_DATA},
    summary="A system prompt under test with tools, run on a model (no agent server needed)",
)
class ModelTarget(TalkingTarget, PromptUnderTest):
    """A prompt under test: tamesu itself calls the model with the system prompt and the tools."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("system", "system_file")))

    type: Literal["model"] = F("What kind of system this is; it decides which other keys apply.", "model")
    tools: list[ToolDef] | None = F(
        "Tools offered to the model, each with the answer tamesu gives.",
        [{"name": "lookup_policy", "description": "The policy for a topic", "result": {"window_days": 30}}],
        default=None,
    )

    @model_validator(mode="after")
    def _one_prompt(self) -> "ModelTarget":
        keys = self.set_keys()
        if ("system" in keys) == ("system_file" in keys):
            raise PydanticCustomError(
                "target_rule", "a model target takes exactly one of system, system_file"
            )
        return self
