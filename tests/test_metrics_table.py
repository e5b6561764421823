"""``compute_metrics`` reads each series once and gives what every metric's own compute gives."""

from __future__ import annotations

import random

import pytest

from tamesu.kernel.transcript import Transcript, Turn
from tamesu.metrics import METRICS, Metric, compute_metrics

pytestmark = pytest.mark.unit


def maybe(rng: random.Random, low: float) -> float | None:
    return None if rng.random() < 0.2 else low + rng.random()


@pytest.mark.parametrize("seed", range(40))
def test_compute_metrics_equals_each_metric_computed_alone(seed: int) -> None:
    rng = random.Random(seed)
    t = Transcript(duration=rng.choice([0.0, 9.5]))
    for k in range(rng.randint(0, 8)):
        t.turns.append(Turn(role="user", text="q", index=k + 1, sent_at=maybe(rng, 0)))
        t.turns.append(
            Turn(
                role="agent",
                text="a",
                index=k + 1,
                sent_at=maybe(rng, 0),
                first_byte_at=maybe(rng, 1),
                first_audio_at=maybe(rng, 1),
                end_at=maybe(rng, 2),
            )
        )
    alone = {}
    for name, metric in METRICS.items():
        value = metric.compute(t) if metric.compute is not None else None
        if value is not None:
            alone[name] = float(value)
    assert compute_metrics(t) == alone


def test_a_metric_added_to_the_table_is_computed() -> None:
    t = Transcript(turns=[Turn(role="agent", text="a")])
    METRICS["test_constant"] = Metric("a constant", "count", lambda _: 4.0)
    try:
        assert compute_metrics(t)["test_constant"] == 4.0
    finally:
        del METRICS["test_constant"]
    assert "test_constant" not in compute_metrics(t)
