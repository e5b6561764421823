"""Assertions a model grades: ``judge``, ``similar_to`` and ``grounded``.

Each asks the invocation's ModelRouter (judge or embedder role); a model that cannot be reached
after every retry and fallback, or whose answer does not fit the verdict schema, gives an error
result (an infrastructure error for the run), never a pass or a fail.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.graded import GroundedAssertion, Judge, Similar
from tamesu.errors import ModelError, TamesuError
from tamesu.judging import check_claims, format_transcript, grade
from tamesu.kernel.outcome import AssertionResult

__all__ = ["context_passages", "cosine", "grounded", "judge", "needs_router", "similar_to"]


def needs_router(ctx: AssertionContext, role: str = "judge") -> AssertionResult | None:
    if ctx.models is None:
        key = "models.embedder or models.default" if role == "embedder" else "models.judge or models.default"
        return AssertionResult.failed_to_evaluate(f"needs a model: set {key} in tamesu.yaml or the suite")
    return None


@assertion("judge", spec=Judge)
async def judge(spec: Judge, ctx: AssertionContext) -> AssertionResult:
    """A model grades the whole conversation against the rubric (binary, or 1-5 with min)."""
    if (missing := needs_router(ctx)) is not None:
        return missing
    assert ctx.models is not None
    scale: Literal["binary", "1-5"] = "1-5" if spec.scale == "1-5" else "binary"
    min_score = spec.min if spec.min is not None else 4
    try:
        verdict = await grade(
            ctx.models, spec.rubric, format_transcript(ctx.transcript), scale=scale, min_score=min_score,
            model=spec.model, ledger=ctx.ledger,
        )  # fmt: skip
    except TamesuError as exc:
        return AssertionResult.failed_to_evaluate(f"judge: {exc}")
    expected: Any = spec.rubric if scale == "binary" else {"rubric": spec.rubric, "min": min_score}
    if verdict.inconclusive:
        return AssertionResult.cannot_tell(
            expected=expected, actual=verdict.reason, message=f"{verdict.model} cannot tell: {verdict.reason}"
        )
    actual: Any = (
        verdict.reason if verdict.score is None else {"score": verdict.score, "reason": verdict.reason}
    )
    return AssertionResult.of(verdict.passed, expected=expected, actual=actual,
                              message=f"{verdict.model}: {verdict.reason}")  # fmt: skip


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


@assertion("similar_to", spec=Similar)
async def similar_to(spec: Similar, ctx: AssertionContext) -> AssertionResult:
    """Some agent turn means the same as the text: embedding cosine similarity of at least min."""
    if (missing := needs_router(ctx, "embedder")) is not None:
        return missing
    assert ctx.models is not None
    turns = [t.text for t in ctx.transcript.agent_turns() if t.text.strip()]
    if not turns:
        return AssertionResult.of(False, expected=spec.text, message="the agent said nothing to compare")
    try:
        vectors = await ctx.models.embed([spec.text, *turns], model=spec.model, ledger=ctx.ledger)
    except TamesuError as exc:
        return AssertionResult.failed_to_evaluate(f"similar_to: {exc}")
    scores = [cosine(vectors[0], v) for v in vectors[1:]]
    best = max(range(len(scores)), key=scores.__getitem__)
    ok = scores[best] >= spec.min
    return AssertionResult.of(
        ok,
        expected={"text": spec.text, "min": spec.min},
        actual={"similarity": round(scores[best], 4), "turn": best + 1, "text": turns[best]},
        message=f"closest agent turn {best + 1} has similarity {scores[best]:.3f} (min {spec.min})",
    )


def context_passages(context: Any, ctx: AssertionContext) -> list[str]:
    """The retrieval context: a tool's results, a JSONPath into every raw response, or given text."""
    if context.text:
        return [str(t) for t in context.text]
    if context.tool:
        out = []
        for call in ctx.transcript.tool_calls():
            if call.name == context.tool and call.result is not None:
                out.append(call.result if isinstance(call.result, str) else json.dumps(call.result))
        return out
    if context.json_path:
        from tamesu.jsonpath import find

        out = []
        for turn in ctx.transcript.agent_turns():
            for raw in turn.raw:
                for value in find(context.json_path, raw):
                    out.append(value if isinstance(value, str) else json.dumps(value))
        return out
    return []


@assertion("grounded", spec=GroundedAssertion)
async def grounded(spec: GroundedAssertion, ctx: AssertionContext) -> AssertionResult:
    """Every factual claim the agent made is supported by the context (at least min of them)."""
    if (missing := needs_router(ctx)) is not None:
        return missing
    assert ctx.models is not None
    passages = context_passages(spec.context, ctx)
    answer = "\n".join(t.text for t in ctx.transcript.agent_turns())
    try:
        claims = await check_claims(ctx.models, answer, passages, model=spec.model, ledger=ctx.ledger)
    except (TamesuError, ModelError) as exc:
        return AssertionResult.failed_to_evaluate(f"grounded: {exc}")
    need = spec.min if spec.min is not None else 1.0
    if not claims:
        return AssertionResult.of(True, expected={"min": need}, actual={"claims": 0},
                                  message="the agent made no factual claims")  # fmt: skip
    supported = sum(c.supported for c in claims)
    share = supported / len(claims)
    unsupported = [c.claim for c in claims if not c.supported]
    return AssertionResult.of(
        share >= need,
        expected={"min": need, "context_passages": len(passages)},
        actual={"supported": supported, "claims": len(claims), "unsupported": unsupported},
        message=f"{supported} of {len(claims)} claims supported ({share:.0%}, min {need:.0%})"
        + (f"; unsupported: {'; '.join(unsupported)}" if unsupported else ""),
    )
