"""tamesu.yaml, and the objects it shares with suites (defaults, models, budgets), with the merge rules.

Precedence everywhere: the project's value, overridden by the suite's, overridden by the test's.
Lists of assertions and SLO maps add up instead (project first, then suite). Merges look only at
the keys a file actually set, so a documented default never hides a value from a lower layer.
"""

from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BaseModel, Field, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.assertion import Assertion
from tamesu.config.common import ConfigModel, Duration, F, Hook, PositiveInt, StrMap
from tamesu.config.load_profile import LoadProfile
from tamesu.config.prices import Prices
from tamesu.config.reporting import History, Statistics, Telemetry
from tamesu.config.sip_inbound import inbound_address

if TYPE_CHECKING:
    from tamesu.config.suite import Suite, Test

__all__ = [
    "DEFAULT_SUITE_GLOBS",
    "Budgets",
    "Defaults",
    "LimitsConfig",
    "LiveKitConfig",
    "ModelFallback",
    "ModelRetry",
    "Models",
    "Project",
    "ProjectDefaults",
    "ProjectHooks",
    "SipConfig",
    "effective_budgets",
    "effective_defaults",
    "effective_models",
    "effective_secrets",
    "effective_vars",
]

M = TypeVar("M", bound=BaseModel)

DEFAULT_SUITE_GLOBS = ["**/*.tamesu.yaml", "suites/**/*.yaml"]


class ModelFallback(ConfigModel):
    """Per job, the models to try, in order, once the job's own model keeps failing."""

    default: list[str] | None = F(
        "Backups for every job that has no list of its own.", ["openai/gpt-4.1-mini"], default=None
    )
    judge: list[str] | None = F("Backups for the judge model.", ["googleai/gemini-2.5-pro"], default=None)
    simulator: list[str] | None = F(
        "Backups for the model playing the user.", ["anthropic/claude-sonnet-4-6"], default=None
    )
    browser_agent: list[str] | None = F(
        "Backups for the browser agent's model.", ["googleai/gemini-2.5-flash"], default=None
    )
    scenario_generator: list[str] | None = F(
        "Backups for the model behind tamesu generate.", ["googleai/gemini-2.5-flash"], default=None
    )
    embedder: list[str] | None = F(
        "Backup embedding models; the default list is never used for embeddings.",
        ["openai/text-embedding-3-small"],
        default=None,
    )


class ModelRetry(ConfigModel):
    """How often one model is retried (rate limit, outage, timeout) before the next fallback."""

    attempts: PositiveInt = F("Tries per model; 1 means no retry.", 3, default=3)
    backoff: Duration = F(
        "Wait before the second try; it doubles each try, with jitter.", "500ms", default="500ms"
    )
    max_backoff: Duration = F("Upper bound of the wait between tries.", "10s", default="10s")


class Models(ConfigModel):
    """Which model does each of tamesu's own jobs (Genkit references such as googleai/gemini-2.5-flash)."""

    default: str | None = F(
        "The model of every job that names none of its own.", "googleai/gemini-2.5-flash", default=None
    )
    judge: str | None = F(
        "Grades rubrics and grounding; the default model when unset.",
        "anthropic/claude-sonnet-4-6",
        default=None,
    )
    browser_agent: str | None = F(
        "Plans and acts on browser goal steps.", "googleai/gemini-2.5-pro", default=None
    )
    simulator: str | None = F("Speaks for the simulated user.", "openai/gpt-4.1-mini", default=None)
    scenario_generator: str | None = F(
        "Drafts tests for tamesu generate.", "googleai/gemini-2.5-pro", default=None
    )
    embedder: str | None = F(
        "Embeds texts for similar_to; unset means the usual embedder of the default model's provider.",
        "googleai/text-embedding-004",
        default=None,
    )
    credentials: StrMap | None = F(
        "Per Genkit plugin, the secret holding its key when the secret is not named the usual way.",
        {"googleai": "{{secrets.MY_GEMINI_KEY}}"},
        default=None,
    )
    fallback: ModelFallback | None = F(
        "Models tried in turn when a job's model keeps failing.",
        {"judge": ["googleai/gemini-2.5-pro"]},
        default=None,
    )
    retry: ModelRetry | None = F(
        "Retries of one model before moving to the next one.",
        {"attempts": 3, "backoff": "500ms", "max_backoff": "10s"},
        default=None,
    )


class Budgets(ConfigModel):
    """Caps on tamesu's own model spending; a run that reaches one stops with exit code 4."""

    max_cost_usd: float = F("Most US dollars tamesu's own model calls may cost per run.", 2, default=5, ge=0)
    max_tokens: PositiveInt = F(
        "Most tokens tamesu's own model calls may use per run.", 500000, default=2_000_000
    )


class Defaults(ConfigModel):
    """Settings every test gets unless it sets its own; a suite's override the project's."""

    timeout: Duration = F("The longest one run may take.", "3m", default="3m")
    repeat: PositiveInt = F("How many times each test runs.", 3, default=1)
    retries: int = F(
        "Extra runs after an infrastructure failure (never after a failed check).", 1, default=0, ge=0
    )
    pass_threshold: float = F(
        "Share of a test's repeated runs that must pass, above 0 and at most 1.",
        0.67,
        default=1.0,
        gt=0,
        le=1,
    )
    max_goal_steps: PositiveInt = F(
        "Browser: the most actions the agent may take for one goal step.", 15, default=15
    )
    assert_: list[Assertion] = F(
        "Checks every test must pass; their results are named defaults/KIND.",
        [{"pack": "pii_leakage"}],
        default_factory=list,
        alias="assert",
    )
    slo: dict[str, float] = F(
        "An upper bound per metric on every test, such as turn_latency_ms_p95 or llm_cost_usd; results are named slo/METRIC.",
        {"turn_latency_ms_p95": 3000, "llm_cost_usd": 0.05},
        default_factory=dict,
    )


class ProjectDefaults(Defaults):
    """tamesu.yaml's defaults: a suite's, and what only the project may decide for every suite."""

    strict: bool = F(
        "A check that was skipped (no model, key or extra for it) makes its run an error, and a "
        "judge's inconclusive answer a failure, in every suite (as tamesu run --strict).",
        True,
        default=False,
    )


Size = Annotated[
    int | Annotated[str, Field(pattern=r"^\s*[0-9]+(\.[0-9]+)?\s*([kKmMgG]i?[bB]|[bB])?\s*$")],
    Field(description="Bytes, or a number with KB, MB, GB (powers of 1000) or KiB, MiB, GiB."),
]
"""A size such as 4MB or 512KiB (a bare number is bytes)."""


class LimitsConfig(ConfigModel):
    """Bounds on what tamesu reads from the agent under test and keeps of it; going past one makes
    the run an infrastructure error (kind limit) that names the setting."""

    answer_size: Size = F(
        "The largest single answer: an HTTP body, a server-sent event, a websocket message, a poll "
        "reply, a request the agent makes to the listener.",
        "4MB",
        default="4MB",
    )
    turn_text: PositiveInt = F(
        "The most characters of text one agent turn may gather, streamed or whole.",
        1000000,
        default=1_000_000,
    )
    json_depth: int = F(
        "How deep arrays and objects may nest in one JSON answer.", 64, default=64, ge=1, le=500
    )
    transcript_size: Size = F(
        "The most bytes of raw answers one run's transcript keeps; later ones are stored as a "
        "truncation mark.",
        "8MB",
        default="8MB",
    )
    audio_ahead: Duration = F(
        "How far ahead of real time the agent's audio may be queued to play (agents send speech "
        "faster than it plays); what arrives beyond is dropped, counted in the transcript, and the "
        "run is an error.",
        "30s",
        default="30s",
    )
    tool_calls: PositiveInt = F(
        "The most tool calls one agent turn may carry; the transcript keeps these, notes the "
        "truncation, and the run is an error.",
        1000,
        default=1000,
    )


class SipConfig(ConfigModel):
    """Telephony shared by every sip target of the project."""

    outbound_trunk_id: str | None = F(
        "LiveKit SIP trunk outbound calls go through, unless a target sets trunk_id.",
        "ST_abc123",
        default=None,
    )
    inbound_number: str | None = F(
        "The number (E.164) inbound agents are made to call, or the SIP URI tamesu listens on for them "
        "(sip:+34910000001@10.0.0.5:5070); {{sip.inbound_number}} renders to the number, "
        "{{sip.inbound_uri}} to the URI.",
        "+34910000001",
        default=None,
    )
    proxy: str | None = F(
        "SIP URI of the proxy or registrar that calls to E.164 numbers go through (a SIP URI in "
        "to is called directly).",
        "sip:pbx.example.com:5060;transport=tcp",
        default=None,
    )
    username: str | None = F(
        "Digest username tamesu answers the proxy's challenges with.", "tamesu", default=None
    )
    password: str | None = F(
        "Digest password; write it as {{secrets.NAME}}.", "{{secrets.SIP_PASSWORD}}", default=None
    )
    bind: str | None = F(
        "Address tamesu's SIP and RTP sockets use; by default the one that routes to the agent "
        "(127.0.0.1 for inbound calls).",
        "10.0.0.5",
        default=None,
    )
    inbound_port: int | None = F(
        "Port tamesu listens on for inbound calls (UDP and TCP); a free one when unset.",
        5070,
        default=None,
        ge=1,
        le=65535,
    )

    @model_validator(mode="after")
    def _inbound_address(self) -> "SipConfig":
        texts = (self.inbound_number or "", self.bind or "")
        if not any("{{" in t or "${" in t for t in texts):
            try:
                inbound_address(self.inbound_number, bind=self.bind, port=self.inbound_port)
            except ValueError as exc:
                raise PydanticCustomError("sip_inbound", str(exc)) from None
        return self


class LiveKitConfig(ConfigModel):
    """The LiveKit server livekit and sip targets use when they do not name their own."""

    url: str | None = F("LiveKit server URL.", "${LIVEKIT_URL}", default=None)
    api_key: str | None = F(
        "API key; write it as {{secrets.NAME}}.", "{{secrets.LIVEKIT_API_KEY}}", default=None
    )
    api_secret: str | None = F(
        "API secret; write it as {{secrets.NAME}}.", "{{secrets.LIVEKIT_API_SECRET}}", default=None
    )
    serve: bool = F(
        "Start tamesu's loopback LiveKit server for the run (as tamesu serve livekit does), with fresh keys, "
        "instead of url / api_key / api_secret; hooks see it as {{livekit.url}}, {{livekit.api_key}}, "
        "{{livekit.api_secret}} and LIVEKIT_URL / LIVEKIT_API_KEY / LIVEKIT_API_SECRET.",
        True,
        default=False,
    )

    @model_validator(mode="after")
    def _serve_alone(self) -> "LiveKitConfig":
        if self.serve and (self.url or self.api_key or self.api_secret):
            raise PydanticCustomError(
                "livekit_serve", "livekit.serve starts its own server: leave url, api_key and api_secret out"
            )
        return self


class ProviderConfig(ConfigModel):
    """An OpenAI-compatible model server (vLLM, llama.cpp server, LM Studio, a gateway) by name."""

    base_url: str = F(
        "The server's OpenAI-compatible base URL, ending before /chat/completions.",
        "http://localhost:8000/v1",
        min_length=1,
    )
    api_key: str | None = F(
        "The key the server expects, as {{secrets.NAME}}; none when it needs none.",
        "{{secrets.VLLM_KEY}}",
        default=None,
    )


class ProjectHooks(ConfigModel):
    """Setup and teardown around a whole tamesu run (every suite)."""

    before_all: list[Hook] = F(
        "Run once, before the first test of the run.",
        [{"command": "./scripts/seed.sh"}],
        default_factory=list,
    )
    after_all: list[Hook] = F(
        "Run once, after the last test of the run.",
        [{"command": "./scripts/teardown.sh", "timeout": "2m"}],
        default_factory=list,
    )


class Project(ConfigModel):
    """tamesu.yaml: settings every suite of the project shares."""

    defaults: ProjectDefaults = F(
        "Per-test defaults for every suite; a suite's defaults override them.",
        {"timeout": "3m", "retries": 1},
        default_factory=ProjectDefaults,
    )
    models: Models = F(
        "Which model does each of tamesu's jobs.",
        {"default": "googleai/gemini-2.5-flash"},
        default_factory=Models,
    )
    budgets: Budgets = F(
        "Caps on tamesu's own model spending per run.", {"max_cost_usd": 5}, default_factory=Budgets
    )
    secrets: StrMap = F(
        "Secret name to secret ref; a suite's entry of the same name wins.",
        {"AGENT_TOKEN": "env:AGENT_TOKEN"},
        default_factory=dict,
    )
    vars: StrMap = F(
        "Values for {{vars.x}} in every suite; a suite's entry of the same name wins.",
        {"shop": "Mochi Shoes"},
        default_factory=dict,
    )
    concurrency: PositiveInt = F("The most runs in flight at once.", 8, default=4)
    output: str = F(
        "Directory where runs write results, reports and recordings.", "tamesu-runs", default="tamesu-runs"
    )
    html_report: bool = F(
        "Write report.html (tamesu report's page) into every run directory; tamesu run --no-html skips it once.",
        False,
        default=True,
    )
    suites: list[str] = F(
        "Glob patterns, relative to tamesu.yaml, of the suite files a bare tamesu run picks up.",
        ["suites/**/*.yaml"],
        default_factory=lambda: list(DEFAULT_SUITE_GLOBS),
        min_length=1,
    )
    sip: SipConfig | None = F(
        "Telephony settings for sip targets.",
        {"outbound_trunk_id": "ST_abc123", "inbound_number": "+34910000001"},
        default=None,
    )
    livekit: LiveKitConfig | None = F(
        "The LiveKit server for livekit and sip targets.",
        {
            "url": "${LIVEKIT_URL}",
            "api_key": "{{secrets.LIVEKIT_API_KEY}}",
            "api_secret": "{{secrets.LIVEKIT_API_SECRET}}",
        },
        default=None,
    )
    providers: dict[str, ProviderConfig] = F(
        "OpenAI-compatible model servers by name; models then refer to them as NAME/MODEL.",
        {"vllm": {"base_url": "http://localhost:8000/v1"}},
        default_factory=dict,
    )
    hooks: ProjectHooks | None = F(
        "Setup and teardown around the whole run.",
        {"before_all": [{"command": "./scripts/seed.sh"}]},
        default=None,
    )
    load: LoadProfile | None = F(
        "How tamesu load drives the suites: calls, rate or concurrency, shape and gates.",
        {"concurrency": 50, "duration": "5m", "ramp_up": "30s", "gates": {"pass_rate": 0.95}},
        default=None,
    )
    prices: Prices | None = F(
        "What speech and call minutes cost (model calls are priced from the genai-prices table).",
        {
            "call_minute": {"sip": 0.004},
            "tts_million_characters": {"openai": 15},
            "stt_minute": {"openai": 0.006},
        },
        default=None,
    )
    statistics: Statistics = F(
        "Pass-rate intervals, pass^k, lower-bound verdicts and early stopping of repeated tests.",
        {"threshold_on": "lower_bound", "early_stop": {"alpha": 0.05}},
        default_factory=Statistics,
    )
    history: History = F(
        "The local record of every invocation (tamesu history, tamesu diff).",
        {"path": ".tamesu/history.db"},
        default_factory=History,
    )
    telemetry: Telemetry = F(
        "OpenTelemetry export of runs and turns to an OTLP/HTTP collector.",
        {"otlp_endpoint": "http://localhost:4318/v1/traces"},
        default_factory=Telemetry,
    )
    limits: LimitsConfig | None = F(
        "Bounds on what tamesu reads from the agent and keeps of it.",
        {
            "answer_size": "4MB",
            "turn_text": 1000000,
            "json_depth": 64,
            "transcript_size": "8MB",
            "audio_ahead": "30s",
        },
        default=None,
    )


def _set(model: BaseModel | None) -> dict[str, Any]:
    """The values a file set, by Python name, nested models as dicts of their own set values."""
    if model is None:
        return {}
    return model.model_dump(exclude_unset=True, by_alias=False, round_trip=True)


def _deep(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep(out[key], value)
        else:
            out[key] = value
    return out


def _overlay(cls: type[M], *layers: BaseModel | None) -> M:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _deep(merged, _set(layer))
    return cls.model_validate(merged)


def effective_defaults(project: Project | None, suite: "Suite", test: "Test | None" = None) -> Defaults:
    """Defaults for one suite (and, given a test, with the test's own keys on top)."""
    layers = [project.defaults if project else None, suite.defaults]
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer is not None:
            merged.update(
                (k, getattr(layer, k))
                for k in layer.model_fields_set
                if k not in ("assert_", "slo", "strict")
            )
    if test is not None:
        merged.update(
            (k, getattr(test, k))
            for k in ("timeout", "repeat", "retries", "pass_threshold")
            if k in test.model_fields_set
        )
    merged["assert_"] = [a for layer in layers if layer is not None for a in layer.assert_]
    merged["slo"] = {k: v for layer in layers if layer is not None for k, v in layer.slo.items()}
    return Defaults.model_validate(merged)


def effective_secrets(project: Project | None, suite: "Suite") -> dict[str, str]:
    """Secret name -> ref; the suite's entries win."""
    return {**(project.secrets if project else {}), **suite.secrets}


def effective_vars(project: Project | None, suite: "Suite", test: "Test | None" = None) -> dict[str, str]:
    """{{vars.x}} values: project, then suite, then test."""
    return {**(project.vars if project else {}), **suite.vars, **(test.vars if test is not None else {})}


def effective_models(project: Project | None, suite: "Suite") -> Models:
    """Models per job, key by key (fallback, retry and credentials merge key by key too)."""
    return _overlay(Models, project.models if project else None, suite.models)


def effective_budgets(project: Project | None, suite: "Suite") -> Budgets:
    """Spend caps, key by key."""
    return _overlay(Budgets, project.budgets if project else None, suite.budgets)
