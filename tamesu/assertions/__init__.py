"""Assertions: one registered evaluator per assertion key of a suite.

The built-in kinds are registered here as ``module:function`` strings, so importing this package is
cheap and an evaluator's module (jsonschema, subprocesses, HTTP) loads only when a suite uses it.
Projects add their own checks with ``@custom_assertion("name")`` (see ``tamesu.assertions.custom``);
packages add new kinds with ``@assertion("kind")`` or ``assertions.add("kind", "module:attr")``.
"""

from __future__ import annotations

from tamesu.assertions.base import (
    AssertionContext,
    AssertionResult,
    Evaluator,
    assertion,
    assertions,
    custom_assertion,
    custom_assertions,
    evaluate,
)

__all__ = [
    "BUILTIN",
    "AssertionContext",
    "AssertionResult",
    "Evaluator",
    "assertion",
    "assertions",
    "custom_assertion",
    "custom_assertions",
    "evaluate",
]

BUILTIN: dict[str, str] = {
    "contains": "tamesu.assertions.text:contains",
    "not_contains": "tamesu.assertions.text:not_contains",
    "regex": "tamesu.assertions.text:regex",
    "not_regex": "tamesu.assertions.text:not_regex",
    "tool_called": "tamesu.assertions.tools:tool_called",
    "tool_not_called": "tamesu.assertions.tools:tool_not_called",
    "tool_sequence": "tamesu.assertions.tools:tool_sequence",
    "json_path": "tamesu.assertions.response:json_path",
    "status": "tamesu.assertions.response:status",
    "turns": "tamesu.assertions.conversation:turns",
    "captured": "tamesu.assertions.conversation:captured",
    "handoff": "tamesu.assertions.conversation:handoff",
    "metric": "tamesu.assertions.conversation:metric",
    "golden": "tamesu.assertions.golden:golden",
    "http": "tamesu.assertions.state:http_state",
    "command": "tamesu.assertions.state:command_state",
    "custom": "tamesu.assertions.custom:custom",
    "judge": "tamesu.assertions.graded:judge",
    "similar_to": "tamesu.assertions.graded:similar_to",
    "grounded": "tamesu.assertions.graded:grounded",
    "evaluator": "tamesu.assertions.evaluators:run_evaluator",
    "dtmf_received": "tamesu.assertions.voice:dtmf_received",
    "delegated_to": "tamesu.assertions.delegation:delegated_to",
}
"""The built-in kinds, by assertion key -> the evaluator's ``module:function``."""

for _kind, _ref in BUILTIN.items():
    if _kind not in assertions:
        assertions.add(_kind, _ref)
