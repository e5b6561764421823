"""Results built by hand for the report tests."""

from __future__ import annotations

from tamesu.kernel.outcome import RunResult

SECRET = "sk-test-5f1e9c2a"

NEEDS_GPU = """
from tamesu.assertions import AssertionResult, custom_assertion


@custom_assertion("voice_quality")
def voice_quality(spec, ctx):
    return AssertionResult.skip("needs a GPU, and this machine has none")
"""
"""A project's ``tamesu_assertions/`` module whose check is always skipped here: ``custom: voice_quality``."""


def run_result(test: str, outcome: str, *, repeat: int = 0, **kw: object) -> RunResult:
    return RunResult(
        run_id=f"{test}#{repeat + 1}",
        test_id=test,
        test_name=test,
        suite="support",
        target="api",
        outcome=outcome,  # type: ignore[arg-type]
        repeat_index=repeat,
        duration=0.5,
        turns=2,
        **kw,  # type: ignore[arg-type]
    )
