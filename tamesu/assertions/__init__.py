"""Assertions: one registered evaluator per assertion key of a suite.

A kind's spec model registers in ``tamesu.config.assertions`` and names its evaluator here as
``module:function``, so importing this package is cheap and an evaluator's module (jsonschema,
subprocesses, HTTP, the model router) loads only when a run uses it. Every evaluator is called as
``fn(spec, ctx)``. Projects add their own checks with ``@custom_assertion("name")`` (see
``tamesu.assertions.custom``); packages add new kinds with ``@assertion("kind", spec=Model)``.
"""

from __future__ import annotations

from tamesu.assertions.evaluation import (
    AssertionContext,
    Evaluator,
    Verdict,
    assertion,
    assertions,
    custom_assertion,
    custom_assertions,
    evaluate,
    verdict,
)
from tamesu.kernel.outcome import AssertionResult

__all__ = [
    "AssertionContext",
    "AssertionResult",
    "Evaluator",
    "Verdict",
    "assertion",
    "assertions",
    "custom_assertion",
    "custom_assertions",
    "evaluate",
    "verdict",
]
