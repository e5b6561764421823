"""Tokens, cost and latency of tamesu's own model calls, per role and per run.

The budget itself is enforced by the scheduler from each run's ``llm_cost_usd`` / ``llm_tokens``.

Prices come from the genai-prices package (a maintained price table); a model it does not know
(a local server) costs 0 and is marked unpriced rather than guessed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from tamesu.models.refs import ModelRef

__all__ = ["CallUsage", "UsageLedger", "price_usd"]

_GENAI_PROVIDER = {"googleai": "google", "vertexai": "google"}


def price_usd(ref: ModelRef, input_tokens: int, output_tokens: int) -> float | None:
    """The call's price in USD, or None when the price table does not know the model."""
    try:
        from genai_prices import Usage, calc_price

        calc = calc_price(
            Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            model_ref=ref.name,
            provider_id=_GENAI_PROVIDER.get(ref.provider, ref.provider),
        )
        return float(calc.total_price)
    except Exception:
        return None


@dataclass
class CallUsage:
    role: str
    model: str
    """The model that answered (after any fallback)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 1

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "priced": self.priced,
            "latency_s": round(self.latency_s, 4),
            "cached": self.cached,
            "attempts": self.attempts,
        }


@dataclass
class UsageLedger:
    """Every call of one scope (an invocation, or one run); thread-safe so Ray workers' reports merge."""

    calls: list[CallUsage] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, call: CallUsage) -> None:
        with self._lock:
            self.calls.append(call)

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls)

    @property
    def tokens(self) -> int:
        return sum(c.tokens for c in self.calls)

    def by_role(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for c in self.calls:
            r = out.setdefault(
                c.role, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0}
            )
            r["calls"] += 1
            r["input_tokens"] += c.input_tokens
            r["output_tokens"] += c.output_tokens
            r["cost_usd"] += c.cost_usd
            r["latency_s"] += c.latency_s
        return out

    def metrics(self) -> dict[str, float]:
        """The run metrics models add: llm_cost_usd, llm_tokens, llm_input_tokens, llm_output_tokens, llm_calls."""
        return {
            "llm_cost_usd": self.cost_usd,
            "llm_tokens": float(self.tokens),
            "llm_input_tokens": float(sum(c.input_tokens for c in self.calls)),
            "llm_output_tokens": float(sum(c.output_tokens for c in self.calls)),
            "llm_calls": float(len(self.calls)),
        }
