"""Assertions on your backend's state after the conversation: http and command."""

from typing import Any

from tamesu.config.assertions.response import JSONPathAssertion
from tamesu.config.common import ConfigModel, Duration, F, HttpMethod, HttpStatus, StrMap
from tamesu.config.kinds import assertion_kind

__all__ = ["StateCommand", "StateHTTP"]


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


assertion_kind(
    "http",
    spec=StateHTTP,
    description="Backend state after the conversation: a request whose status and body are checked.",
    example={
        "url": "{{vars.admin_url}}/orders/{{captured.order_id}}",
        "json_path": {"path": "$.status", "equals": "refunded"},
    },
    evaluator="tamesu.assertions.state:http_state",
    summary="your backend's state after the conversation: a request's status, JSONPath and body text; agent "
    "values reach the URL percent-encoded (Templates, above)",
)


assertion_kind(
    "command",
    spec=StateCommand,
    description="Backend state after the conversation: a command whose exit code and output are checked.",
    example={"run": "./scripts/ledger.sh {{captured.order_id}}", "contains": "credited"},
    evaluator="tamesu.assertions.state:command_state",
    summary="your backend's state after the conversation: a command's exit code and output; agent values "
    "reach it as `$TAMESU_CAPTURED_NAME` (Templates, above)",
)
