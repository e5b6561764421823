"""What every model-graded check shares: the transcript as a judge reads it, rubric verdicts,
claim checking against a context, and value extraction.

Verdicts come back as structured output (a JSON schema); an answer that does not fit is a
``ModelError`` — the caller turns it into an error result, never a pass or a fail. A judge may
also answer that it cannot tell (the evidence shows it neither way): an inconclusive verdict,
which the caller reports as such, not as a pass or a fail.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from tamesu.errors import ModelError
from tamesu.kernel.transcript import Transcript
from tamesu.models.router import ChatMessage, ModelRouter
from tamesu.models.usage import UsageLedger

__all__ = ["Claim", "Verdict", "check_claims", "extract_value", "format_transcript", "grade"]

JUDGE_SYSTEM = (
    "You are a strict, fair evaluator of conversations between a user and an AI agent. "
    "Judge only from the evidence given. Answer in the JSON format requested."
)


def format_transcript(transcript: Transcript, *, tools: bool = True, limit: int = 400) -> str:
    """The conversation as numbered lines; tool calls and results inline, long values cut."""
    lines = []
    for turn in transcript.turns:
        who = "USER" if turn.role == "user" else f"AGENT (turn {turn.index})"
        lines.append(f"{who}: {turn.text}")
        if tools:
            for call in turn.tool_calls:
                args = json.dumps(call.args, ensure_ascii=False)[:limit]
                result = (
                    ""
                    if call.result is None
                    else f" -> {json.dumps(call.result, ensure_ascii=False)[:limit]}"
                )
                lines.append(f"  [tool call {call.name}({args}){result}]")
    if transcript.handoff is not None:
        h = transcript.handoff
        lines.append(
            f"  [handed off to {h.to or 'a person'} on agent turn {h.turn}; summary: {h.summary or ''}]"
        )
    return "\n".join(lines)


@dataclass
class Verdict:
    passed: bool
    score: float | None
    reason: str
    model: str
    inconclusive: bool = False
    """The judge could not tell from the evidence (then ``passed`` is False and ``score`` None)."""


_CANNOT_TELL = {
    "type": "boolean",
    "description": "true only when the evidence shows it neither way, so no verdict can be given",
}
_BINARY = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "cannot_tell": _CANNOT_TELL, "passed": {"type": "boolean"}},
    "required": ["reason", "cannot_tell", "passed"],
}
_SCALE = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "cannot_tell": _CANNOT_TELL,
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["reason", "cannot_tell", "score"],
}
_OFFER = (
    " If the evidence shows it neither way (the conversation never touches it), set cannot_tell "
    "to true instead of guessing; otherwise set it to false."
)


async def grade(
    router: ModelRouter,
    rubric: str,
    evidence: str,
    *,
    scale: Literal["binary", "1-5"] = "binary",
    min_score: float = 4,
    model: str | None = None,
    ledger: UsageLedger | None = None,
    what: str = "conversation",
) -> Verdict:
    """Grade ``evidence`` against ``rubric``: pass/fail, or 1-5 passing at ``min_score``."""
    ask = (
        "Does it satisfy the rubric? Give your reason first, then passed (true or false)."
        if scale == "binary"
        else "Score how well it satisfies the rubric from 1 (not at all) to 5 (fully). Reason first, then score."
    ) + _OFFER
    prompt = f"Rubric: {rubric}\n\nThe {what}:\n{evidence}\n\n{ask}"
    answer = await router.complete(
        "judge",
        [ChatMessage("system", JUDGE_SYSTEM), ChatMessage("user", prompt)],
        output_schema=_BINARY if scale == "binary" else _SCALE,
        model=model,
        temperature=0,
        ledger=ledger,
    )
    data = answer.data
    reason = str(data.get("reason", "")) if isinstance(data, dict) else ""
    if isinstance(data, dict) and data.get("cannot_tell") is True:
        return Verdict(False, None, reason, answer.model, inconclusive=True)
    if scale == "binary":
        if not isinstance(data, dict) or not isinstance(data.get("passed"), bool):
            raise ModelError(f"the judge's answer has no passed verdict: {str(data)[:200]}")
        return Verdict(data["passed"], None, reason, answer.model)
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 1 <= score <= 5:
        raise ModelError(f"the judge's answer has no score from 1 to 5: {str(data)[:200]}")
    return Verdict(score >= min_score, float(score), reason, answer.model)


@dataclass
class Claim:
    claim: str
    supported: bool
    reason: str = ""


_CLAIMS = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "string"},
                    "reason": {"type": "string"},
                    "supported": {"type": "boolean"},
                },
                "required": ["claim", "reason", "supported"],
            },
        }
    },
    "required": ["claims"],
}


async def check_claims(
    router: ModelRouter,
    answer_text: str,
    context: list[str],
    *,
    model: str | None = None,
    ledger: UsageLedger | None = None,
) -> list[Claim]:
    """List the factual claims of ``answer_text`` and whether ``context`` supports each."""
    passages = "\n".join(f"[{i + 1}] {p}" for i, p in enumerate(context)) or "(no context)"
    prompt = (
        "List every factual claim the AGENT makes below (facts about products, policies, orders, numbers, "
        "dates; not greetings, questions or offers to help). For each, say whether the CONTEXT supports it.\n\n"
        f"CONTEXT:\n{passages}\n\nAGENT:\n{answer_text}"
    )
    answer = await router.complete(
        "judge",
        [ChatMessage("system", JUDGE_SYSTEM), ChatMessage("user", prompt)],
        output_schema=_CLAIMS,
        model=model,
        temperature=0,
        ledger=ledger,
    )
    data = answer.data
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ModelError(f"the judge's answer has no claims list: {str(data)[:200]}")
    out = []
    for c in data["claims"]:
        if not isinstance(c, dict) or not isinstance(c.get("supported"), bool):
            raise ModelError(f"a claim in the judge's answer has no supported verdict: {str(c)[:200]}")
        out.append(Claim(str(c.get("claim", "")), c["supported"], str(c.get("reason", ""))))
    return out


_EXTRACT = {
    "type": "object",
    "properties": {"found": {"type": "boolean"}, "value": {"type": "string"}},
    "required": ["found", "value"],
}


async def extract_value(
    router: ModelRouter, description: str, text: str, *, ledger: UsageLedger | None = None
) -> str | None:
    """The value ``description`` names, copied as written from ``text``; None when it is not there."""
    prompt = (
        f"From the agent's message below, copy exactly as written: {description}.\n"
        "If the message does not contain it, set found to false.\n\n"
        f"Message:\n{text}"
    )
    answer = await router.complete(
        "judge", [ChatMessage("user", prompt)], output_schema=_EXTRACT, temperature=0, ledger=ledger
    )
    data: Any = answer.data
    if isinstance(data, dict) and data.get("found") and str(data.get("value", "")).strip():
        return str(data["value"]).strip()
    return None
