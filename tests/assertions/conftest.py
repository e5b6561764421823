"""The ``check`` fixture: evaluate an assertion item, validated as a suite would, on a transcript."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tamesu.assertions import AssertionContext, AssertionResult, evaluate
from tamesu.config.assertion import Assertion
from tamesu.kernel.transcript import Transcript
from tamesu.templates import Scope

Check = Callable[..., Awaitable[AssertionResult]]


@pytest.fixture
def check(tmp_path: Path) -> Check:
    """Validate an assertion item as a suite would, then evaluate it on a transcript."""

    async def run(item: dict[str, Any], transcript: Transcript, **ctx: Any) -> AssertionResult:
        parsed = Assertion.model_validate(item)
        context = AssertionContext(
            transcript=transcript,
            scope=ctx.pop("scope", Scope()),
            suite_dir=ctx.pop("suite_dir", tmp_path),
            **ctx,
        )
        return await evaluate(parsed.kind, parsed.spec, context)

    return run
