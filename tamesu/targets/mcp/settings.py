"""The mcp target: the prompt under test with the tools of an MCP server (stdio or streamable HTTP)."""

from typing import Literal

from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import Duration, F, StrMap, one_of_schema
from tamesu.config.kinds import target_type
from tamesu.config.target_base import SAY_AND_DATA, TalkingTarget, WithHeaders
from tamesu.targets.model.settings import PromptUnderTest

__all__ = ["McpTarget"]


@target_type(
    "mcp",
    adapter="tamesu.targets.mcp.adapter:McpAdapter",
    extra="mcp",
    parts={"text": SAY_AND_DATA},
    summary="A system prompt under test with the tools of a real MCP server (stdio or streamable HTTP)",
)
class McpTarget(TalkingTarget, PromptUnderTest, WithHeaders):
    """A prompt run on a model whose tools are an MCP server's: the server is part of what is tested."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                one_of_schema(("command", "url")),
                {
                    "if": {"anyOf": [{"required": ["args"]}, {"required": ["env"]}]},
                    "then": {"required": ["command"]},
                },
                {"if": {"required": ["headers"]}, "then": {"required": ["url"]}},
                {"not": {"required": ["system", "system_file"]}},
            ]
        }
    )

    type: Literal["mcp"] = F("What kind of system this is; it decides which other keys apply.", "mcp")
    url: str | None = F(
        "A streamable HTTP server; command is the alternative.",
        "${AGENT_URL:-http://localhost:8080/chat}",
        default=None,
    )
    command: str | None = F(
        "The stdio MCP server to start (an executable); url is the alternative for streamable HTTP.",
        "./bin/orders-mcp",
        default=None,
    )
    args: list[str] | None = F(
        "Arguments passed to command.", ["--data", "fixtures/orders.json"], default=None
    )
    env: StrMap | None = F(
        "Environment variables for command; templates render in them.",
        {"LOG_LEVEL": "warn", "API_KEY": "{{secrets.MCP_KEY}}"},
        default=None,
    )
    allow_tools: list[str] | None = F(
        "Restrict the model to this subset of the server's tools.",
        ["lookup_order", "cancel_order"],
        default=None,
    )
    call_timeout: Duration = F("The longest one tool call may take.", "20s", default="60s")

    @model_validator(mode="after")
    def _command_or_url(self) -> "McpTarget":
        keys = self.set_keys()
        if ("command" in keys) == ("url" in keys):
            raise PydanticCustomError("target_rule", "an mcp target takes exactly one of command, url")
        if keys & {"args", "env"} and "command" not in keys:
            raise PydanticCustomError("target_rule", "args and env apply to an mcp target with command")
        if "headers" in keys and "url" not in keys:
            raise PydanticCustomError("target_rule", "headers apply to an mcp target with url")
        if {"system", "system_file"} <= keys:
            raise PydanticCustomError("target_rule", "an mcp target takes at most one of system, system_file")
        return self
