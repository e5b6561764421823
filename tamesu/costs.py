"""What one run cost: tamesu's own model calls, speech, and call minutes, as run metrics.

``run_costs`` adds to a run's metrics (so they travel in results.jsonl, back from Ray workers, into
history and gates like any metric): ``speech_cost_usd`` (hosted TTS characters and STT minutes at
the ``prices:`` of tamesu.yaml, local engines by the seconds the run waited on them),
``call_minutes`` and ``call_minutes_cost_usd`` (the call's length at the target's price per
minute), and ``cost_usd``, the sum of those and ``llm_cost_usd`` (priced from genai-prices). A
hosted engine without a price costs 0 and sets ``speech_unpriced`` rather than being guessed.

``cost_summary`` adds the attempts of an invocation up: in all, per run, per passed run (what one
pass costs once the failures and retries are paid for), by part and by test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.config.prices import Prices
    from tamesu.kernel.outcome import RunResult
    from tamesu.speech_pool import MeteredSpeech

__all__ = ["cost_summary", "metrics_cost", "result_cost", "run_costs"]


def run_costs(
    metrics: Mapping[str, float],
    *,
    prices: Prices | None,
    target_name: str,
    target_type: str,
    speech: MeteredSpeech | None = None,
) -> dict[str, float]:
    """The cost metrics of one run, from its other metrics and what it asked of speech engines:
    local engines by the CPU seconds the run's requests cost them, hosted ones per character and
    per minute of audio."""
    out: dict[str, float] = {}
    speech_usd = 0.0
    unpriced = False
    if speech is not None and speech.used:
        from tamesu.audio.engines import runs_here  # the voice extra: a run that used speech has it

        out["tts_characters"] = float(sum(speech.tts_characters.values()))
        out["stt_seconds"] = sum(speech.stt_seconds.values())
        hosted_tts = {e: n for e, n in speech.tts_characters.items() if not runs_here("tts", e)}
        hosted_stt = {e: n for e, n in speech.stt_seconds.items() if not runs_here("stt", e)}
        cpu = speech.cpu.total()
        asked = len(speech.tts_characters) + len(speech.stt_seconds)
        asked_here = asked > len(hosted_tts) + len(hosted_stt)  # some engine asked runs on this machine
        if cpu or asked_here:
            out["local_speech_cpu_s"] = cpu
            speech_usd += cpu * (prices.local_speech_second if prices is not None else 0.0)
        per_char_prices = prices.tts_million_characters if prices is not None else {}
        per_minute_prices = prices.stt_minute if prices is not None else {}
        for engine, chars in hosted_tts.items():
            if chars:
                unpriced |= engine not in per_char_prices
                speech_usd += chars * per_char_prices.get(engine, 0.0) / 1e6
        for engine, seconds in hosted_stt.items():
            if seconds:
                unpriced |= engine not in per_minute_prices
                speech_usd += seconds / 60.0 * per_minute_prices.get(engine, 0.0)
        out["speech_cost_usd"] = speech_usd
        if unpriced:
            out["speech_unpriced"] = 1.0
    length = metrics.get("call_duration_s", metrics.get("duration_s"))
    per_minute = prices.minute_price(target_name, target_type) if prices is not None else None
    minutes_usd = 0.0
    if length is not None and per_minute is not None:
        out["call_minutes"] = float(length) / 60.0
        minutes_usd = out["call_minutes"] * per_minute
        out["call_minutes_cost_usd"] = minutes_usd
    out["cost_usd"] = float(metrics.get("llm_cost_usd", 0.0) or 0.0) + speech_usd + minutes_usd
    return out


def metrics_cost(metrics: Mapping[str, float]) -> float:
    """A run's cost from its metrics (one written before ``cost_usd`` existed: its model calls)."""
    return float(metrics.get("cost_usd", metrics.get("llm_cost_usd", 0.0)) or 0.0)


def result_cost(result: RunResult) -> float:
    """One attempt's cost."""
    return metrics_cost(result.metrics)


def _part(result: RunResult, name: str) -> float:
    return float(result.metrics.get(name, 0.0) or 0.0)


def cost_summary(attempts: Iterable[RunResult], finals: Iterable[RunResult]) -> dict[str, Any]:
    """Every attempt's cost (retried ones were paid for too) against the final runs that passed.

    ``per_pass_usd`` is None when no run passed: nothing was bought, whatever it cost.
    """
    paid = list(attempts)
    ended = list(finals)
    total = sum(result_cost(r) for r in paid)
    passed = sum(1 for r in ended if r.outcome == "passed")
    by_test: dict[tuple[str, str], dict[str, Any]] = {}
    for r in paid:
        row = by_test.setdefault(
            (r.suite, r.test_id), {"suite": r.suite, "test_id": r.test_id, "cost_usd": 0.0}
        )
        row["cost_usd"] += result_cost(r)
    tallies: dict[tuple[str, str], list[int]] = {}
    for r in ended:
        tally = tallies.setdefault((r.suite, r.test_id), [0, 0])
        tally[0] += 1
        tally[1] += r.outcome == "passed"
    for key, row in by_test.items():
        runs, won = tallies.get(key, (0, 0))
        row.update(runs=runs, passed=won, per_pass_usd=row["cost_usd"] / won if won else None)
    return {
        "total_usd": total,
        "runs": len(ended),
        "passed": passed,
        "per_run_usd": total / len(ended) if ended else None,
        "per_pass_usd": total / passed if passed else None,
        "parts": {
            "models_usd": sum(_part(r, "llm_cost_usd") for r in paid),
            "speech_usd": sum(_part(r, "speech_cost_usd") for r in paid),
            "call_minutes_usd": sum(_part(r, "call_minutes_cost_usd") for r in paid),
        },
        "unpriced_speech": any(r.metrics.get("speech_unpriced") for r in paid),
        "tests": list(by_test.values()),
    }
