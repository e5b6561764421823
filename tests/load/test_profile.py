"""The load profile: validation, merging with the command line, and its shapes over time."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tamesu.config import Project
from tamesu.load import ArrivalSchedule, LoadProfile, level_at, merge_profile
from tamesu.load.shapes import target_in_flight

pytestmark = pytest.mark.unit


def profile(**data: object) -> LoadProfile:
    return LoadProfile.model_validate(data)


def test_tamesu_yaml_holds_a_load_profile_and_refuses_unknown_keys() -> None:
    project = Project.model_validate({"load": {"rate": 5, "duration": "1m", "gates": {"pass_rate": 0.9}}})
    assert project.load is not None
    assert (project.load.mode, project.load.level, project.load.gates.pass_rate) == ("rate", 5.0, 0.9)
    with pytest.raises(ValidationError, match="concurency"):
        Project.model_validate({"load": {"concurency": 5}})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"rate": 5, "concurrency": 3}, "rate or concurrency, not both"),
        ({"shape": "spike"}, "the spike shape needs a duration"),
        ({"duration": "1m", "spike": {"multiplier": 2}}, "spike is set but shape is steady"),
        ({"rate": 0}, "greater than 0"),
        ({"gates": {"pass_rate": 1.5}}, "less than or equal to 1"),
        ({"duration": "soon"}, "soon"),
    ],
)
def test_invalid_profiles_are_refused(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        profile(**data)


def test_defaults_keep_a_test_bounded() -> None:
    p = profile()
    assert (p.mode, p.level, p.total_calls) == ("concurrency", 10.0, 100)
    assert profile(duration="30s").total_calls is None
    assert profile(duration="30s", calls=7).total_calls == 7


def test_command_line_overrides_merge_key_by_key() -> None:
    base = profile(
        concurrency=20,
        duration="5m",
        ramp_up="30s",
        gates={"pass_rate": 0.9, "slo": {"turn_latency_ms_p95": 3000}},
    )
    merged = merge_profile(
        base,
        rate=4.0,
        duration=None,
        gates={"error_rate": 0.1, "slo": {"response_ms_p99": 9000}, "drift": None},
    )
    assert (merged.mode, merged.rate, merged.concurrency) == ("rate", 4.0, None)
    assert (merged.duration, merged.ramp_up) == ("5m", "30s")
    assert merged.gates is not None
    assert (merged.gates.pass_rate, merged.gates.error_rate) == (0.9, 0.1)
    assert merged.gates.slo == {"turn_latency_ms_p95": 3000, "response_ms_p99": 9000}
    assert merge_profile(None, concurrency=3).level == 3.0


def test_levels_of_each_shape() -> None:
    steady = profile(concurrency=10, duration="100s", ramp_up="10s")
    assert [level_at(steady, t) for t in (0, 5, 10, 50)] == [0.0, 0.5, 1.0, 1.0]
    ramp = profile(concurrency=10, duration="100s", shape="ramp")
    assert [level_at(ramp, t) for t in (0, 25, 100)] == [0.0, 0.25, 1.0]
    spike = profile(concurrency=10, duration="100s", shape="spike")
    assert [level_at(spike, t) for t in (49, 50, 59, 60)] == [1.0, 3.0, 3.0, 1.0]
    custom = profile(
        concurrency=10, duration="100s", shape="spike", spike={"at": "10s", "duration": "5s", "multiplier": 2}
    )
    assert [level_at(custom, t) for t in (9.9, 10, 14.9, 15)] == [1.0, 2.0, 2.0, 1.0]
    assert [target_in_flight(steady, t) for t in (0, 0.1, 5, 20)] == [0, 1, 5, 10]


def test_uniform_arrivals_are_evenly_spaced_and_end_with_the_duration() -> None:
    times = list(ArrivalSchedule(profile(rate=4, duration="2s", arrivals="uniform")))
    assert times == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75])


def test_poisson_arrivals_are_reproducible_with_a_seed_and_average_the_rate() -> None:
    p = profile(rate=50, duration="20s")
    first, again = list(ArrivalSchedule(p, seed=7)), list(ArrivalSchedule(p, seed=7))
    assert first == again
    assert 900 < len(first) < 1100
    assert first != list(ArrivalSchedule(p, seed=8))


def test_a_ramp_brings_arrivals_closer_together_and_a_resume_continues_the_shape() -> None:
    p = profile(rate=20, duration="10s", shape="ramp", arrivals="uniform")
    times = list(ArrivalSchedule(p))
    first_half = sum(1 for t in times if t < 5)
    assert len(times) == pytest.approx(100, abs=2)
    assert first_half == pytest.approx(25, abs=2)
    resumed = list(ArrivalSchedule(p, offset=5.0))
    assert all(t > 5.0 for t in resumed)
    assert len(resumed) == pytest.approx(75, abs=2)
