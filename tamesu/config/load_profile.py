"""The load profile: how many calls, how fast, in what shape, and what must hold under load.

It lives in tamesu.yaml (``load:``) and never in a suite, so suites stay what the reference says;
``tamesu load`` options override it key by key. Like the other configuration models, this module
does without ``from __future__ import annotations`` (pydantic would evaluate the strings on import).
"""

from typing import Any, Literal

from pydantic import model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, Duration, F, Fraction, PositiveInt
from tamesu.durations import parse_duration

__all__ = [
    "DEFAULT_CALLS",
    "DEFAULT_CONCURRENCY",
    "CapacitySearch",
    "LoadGates",
    "LoadProfile",
    "SpikeShape",
    "merge_profile",
]

DEFAULT_CALLS = 100
"""Calls a profile with neither calls nor duration makes, so a load test is always bounded."""
DEFAULT_CONCURRENCY = 10
"""Calls in flight when a profile names neither rate nor concurrency."""

Shape = Literal["steady", "ramp", "spike", "soak"]


class SpikeShape(ConfigModel):
    """A burst on top of the steady level: ``multiplier`` times the load, for ``duration``, at ``at``."""

    at: Duration | None = F(
        "When the spike starts, from the start of the test; default the middle of duration.",
        "2m",
        default=None,
    )
    duration: Duration | None = F(
        "How long the spike lasts; default a tenth of duration.", "30s", default=None
    )
    multiplier: float = F(
        "The load during the spike, as a multiple of the steady load.", 3, default=3.0, ge=1
    )


class LoadGates(ConfigModel):
    """What must hold for the load test to pass (exit 0); crossing any gate exits 1."""

    pass_rate: Fraction | None = F(
        "Least share of calls that must pass; default the suites' pass_threshold (1 unless set).",
        0.95,
        default=None,
    )
    error_rate: Fraction | None = F(
        "Most share of calls that may end in an infrastructure error (refused, 5xx, hang, drop).",
        0.02,
        default=None,
    )
    slo: dict[str, float] = F(
        "Maximum per metric over every turn of every call, such as turn_latency_ms_p95 or "
        "time_to_first_audio_ms_p99; the suites' defaults.slo percentiles apply too.",
        {"turn_latency_ms_p95": 2500, "time_to_first_audio_ms_p95": 1200},
        default_factory=dict,
    )
    cost_per_pass: float | None = F(
        "Most US dollars per passed call: every attempt's cost (model calls, speech, call minutes) "
        "over the calls that passed.",
        0.05,
        default=None,
        ge=0,
    )
    drift: float | None = F(
        "Soak: the last window's turn_latency_ms_p95 may be at most this multiple of the first window's.",
        1.5,
        default=None,
        ge=1,
    )


class CapacitySearch(ConfigModel):
    """``tamesu load --find-capacity``: the calls in flight are raised in steps until a gate breaks,
    then bisected between the last step that held and the first that broke.

    A step holds its level until at least ``step_calls`` calls finished and ``step_seconds`` passed
    (both: a few fast calls are not a settled figure, nor is one long second); every call started
    in the step counts in it.
    """

    start: PositiveInt = F("Calls in flight of the first step.", 4, default=1)
    factor: float = F(
        "Each step until one breaks holds this many times the calls of the step before.", 2, default=2.0, gt=1
    )
    max_concurrency: PositiveInt = F(
        "The search never holds more calls in flight than this.", 200, default=256
    )
    max_duration: Duration = F(
        "The whole search stops within this long, answering with what it found so far.", "10m", default="10m"
    )
    step_calls: PositiveInt = F("Least calls one step makes before it is judged.", 50, default=20)
    step_seconds: Duration = F("Least time one step holds its level.", "30s", default="10s")
    cool_down: Duration = F(
        "The agent is left idle this long between steps, so one step's backlog does not slow the next.",
        "5s",
        default="5s",
    )
    precision: Fraction = F(
        "The bisection stops when the last step that held and the first that broke are this share of "
        "the capacity apart (or one call).",
        0.05,
        default=0.05,
    )
    abort_error_rate: Fraction | None = F(
        "A step stops at once when this share of its calls (after five) errored: default the larger of "
        "0.5 and three times the error_rate gate.",
        0.5,
        default=None,
    )


class LoadProfile(ConfigModel):
    """How ``tamesu load`` drives the suites: arrivals or concurrency, size, shape, gates."""

    calls: PositiveInt | None = F(
        "Calls to start in all; with duration, whichever is reached first ends the arrivals.",
        1000,
        default=None,
    )
    duration: Duration | None = F("How long new calls keep arriving.", "10m", default=None)
    rate: float | None = F(
        "Arrivals per second at full load (an open model: calls arrive whether or not others finished).",
        5,
        default=None,
        gt=0,
    )
    concurrency: PositiveInt | None = F(
        "Calls kept in flight at full load (a closed model); the default when rate is unset.",
        50,
        default=None,
    )
    ramp_up: Duration | None = F(
        "The load grows linearly from zero to full over this long at the start.", "30s", default=None
    )
    shape: Shape = F(
        "steady (ramp-up, then full load), ramp (zero to full over the whole duration), spike "
        "(steady with a burst) or soak (steady for a long duration, watched for drift).",
        "spike",
        default="steady",
    )
    spike: SpikeShape | None = F(
        "The burst of the spike shape.", {"at": "2m", "duration": "30s", "multiplier": 3}, default=None
    )
    arrivals: Literal["poisson", "uniform"] = F(
        "With rate: random (Poisson) or evenly spaced arrivals.", "uniform", default="poisson"
    )
    max_in_flight: PositiveInt = F(
        "With rate: calls in flight beyond which new arrivals are shed and counted, so a stalled "
        "agent cannot pile up calls without bound.",
        500,
        default=1000,
    )
    window: Duration = F(
        "The width of the time windows the report's percentiles are taken over.", "10s", default="10s"
    )
    workers: PositiveInt | None = F(
        "Ray workers (processes) that run the calls; default one per CPU of the cluster.", 8, default=None
    )
    capacity: CapacitySearch | None = F(
        "Find the capacity instead of holding one load: the highest calls in flight at which every gate holds.",
        {"max_concurrency": 100, "step_seconds": "20s"},
        default=None,
    )
    gates: LoadGates | None = F(
        "What must hold under load.",
        {"pass_rate": 0.95, "slo": {"turn_latency_ms_p95": 2500}},
        default=None,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_mode(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("rate") is not None and data.get("concurrency") is not None:
            raise PydanticCustomError(
                "more_than_one_of",
                "a load profile takes rate or concurrency, not both (found rate, concurrency)",
            )
        return data

    @model_validator(mode="after")
    def _shape_needs_duration(self) -> "LoadProfile":
        if self.shape != "steady" and self.duration is None:
            raise PydanticCustomError(
                "shape_duration", "the {shape} shape needs a duration", {"shape": self.shape}
            )
        if self.spike is not None and self.shape != "spike":
            raise PydanticCustomError(
                "spike_shape", "spike is set but shape is {shape}", {"shape": self.shape}
            )
        return self

    @property
    def mode(self) -> Literal["rate", "concurrency"]:
        return "rate" if self.rate is not None else "concurrency"

    @property
    def level(self) -> float:
        """Full load: arrivals per second (rate mode) or calls in flight (concurrency mode)."""
        if self.rate is not None:
            return float(self.rate)
        return float(self.concurrency or DEFAULT_CONCURRENCY)

    @property
    def total_calls(self) -> int | None:
        """The calls to start: ``calls``, else unbounded by count when a duration bounds the test."""
        if self.calls is not None:
            return self.calls
        return None if self.duration is not None else DEFAULT_CALLS

    def seconds(self, name: str) -> float | None:
        """A duration field in seconds (``duration``, ``ramp_up``, ``window``), None when unset."""
        value = getattr(self, name)
        return None if value is None else parse_duration(value)

    def spike_window(self) -> tuple[float, float, float] | None:
        """(start, end, multiplier) of the spike in seconds, for the spike shape."""
        if self.shape != "spike":
            return None
        total = self.seconds("duration") or 0.0
        spike = self.spike or SpikeShape()
        start = parse_duration(spike.at) if spike.at is not None else total / 2
        length = parse_duration(spike.duration) if spike.duration is not None else max(1.0, total / 10)
        return start, start + length, spike.multiplier


def merge_profile(base: LoadProfile | None, **overrides: Any) -> LoadProfile:
    """``base`` (tamesu.yaml) with the non-None ``overrides`` (command line) on top.

    Gate overrides go in as ``gates={...}`` and merge key by key (slo maps add up, the command
    line winning); setting ``rate`` drops the base's ``concurrency`` and the other way round.
    """
    data: dict[str, Any] = base.model_dump(exclude_unset=True, by_alias=True) if base is not None else {}
    gates = overrides.pop("gates", None) or {}
    given = {k: v for k, v in overrides.items() if v is not None}
    if "rate" in given:
        data.pop("concurrency", None)
    if "concurrency" in given:
        data.pop("rate", None)
    for nested in ("spike", "capacity"):
        if nested in given and isinstance(data.get(nested), dict):
            given[nested] = {**data[nested], **given[nested]}
    data.update(given)
    gates = {k: v for k, v in gates.items() if v is not None and v != {}}
    if gates:
        old = dict(data.get("gates") or {})
        if "slo" in gates:
            gates["slo"] = {**(old.get("slo") or {}), **gates["slo"]}
        data["gates"] = {**old, **gates}
    return LoadProfile.model_validate(data)
