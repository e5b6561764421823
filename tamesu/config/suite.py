"""A suite file: its targets, tests, simulated users, red team and remote agents.

Rules that need more than one object (a test's target is a key of targets, file paths exist,
template names are known) belong to the loader's checks; the models here enforce what one object
can know about itself.
"""

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.assertion import Assertion
from tamesu.config.common import (
    DTMF_PATTERN,
    ConfigModel,
    DateStr,
    Duration,
    F,
    Fraction,
    Hooks,
    PositiveInt,
    ShortForm,
    StrMap,
    exactly_one,
    one_of_schema,
    set_schema,
)
from tamesu.config.project import Budgets, Defaults, Models
from tamesu.config.replay import Replay
from tamesu.config.target import Target

__all__ = [
    "BROWSER_ACTIONS",
    "FUZZ_MODES",
    "Behaviors",
    "Capture",
    "Case",
    "Counterpart",
    "Fuzz",
    "Persona",
    "Quarantine",
    "RedTeam",
    "RemoteAgent",
    "RemoteExtended",
    "RemoteReply",
    "RemoteSkill",
    "Scenario",
    "ScriptFile",
    "ScriptStep",
    "Step",
    "Suite",
    "Test",
]

BROWSER_ACTIONS = (
    "navigate",
    "click",
    "fill",
    "press",
    "wait",
    "screenshot",
    "eval_js",
    "assert_url",
    "assert_text",
    "mock",
    "a11y",
    "visual",
)
"""The deterministic browser actions a step's action may name."""

FuzzMode = Literal["error", "empty", "null", "malformed", "hostile", "huge", "wrong_type", "delay", "custom"]
FUZZ_MODES: tuple[str, ...] = FuzzMode.__args__  # type: ignore[attr-defined]
_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class Case(ConfigModel):
    """One parameter set of a parameterised test."""

    name: str | None = F("The case's name; case 1, case 2 ... when unset.", "late", default=None)
    vars: StrMap = F("Values for {{vars.x}} in this case.", {"days": "40", "expect": "not possible"})


class Capture(ConfigModel):
    """A value taken from the agent's turns as they arrive; the first match wins."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("regex", "json_path", "extract")))

    name: str = F("The name; the value renders as {{captured.NAME}}.", "order_id", pattern=_NAME)
    regex: str | None = F(
        "Pattern searched in the agent's words; the value is group 1 when there is one, otherwise the full match.",
        "(ORD-[0-9]+)",
        default=None,
    )
    json_path: str | None = F(
        "Path into the raw payload of the turn (rest, websocket, realtime events).",
        "$.order.id",
        default=None,
    )
    extract: str | None = F(
        "The value described in plain words; a model takes it out of the first agent turn that has it.",
        "the order number the agent mentioned",
        default=None,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_source(cls, data: Any) -> Any:
        exactly_one(data, ("regex", "json_path", "extract"), "a capture", allowed=("name",))
        return data


class Step(ConfigModel):
    """One browser step: a goal the browser agent pursues, an expectation, or a fixed action."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("goal", "expect", "action")))

    goal: str | None = F(
        "The browser agent acts until this is done.",
        "Log in as {{secrets.USER}} and add the blue sneakers to the cart",
        default=None,
    )
    expect: str | None = F(
        "A statement about the current page that a model checks.",
        "The cart shows one pair of blue sneakers",
        default=None,
    )
    action: dict[str, Any] | None = F(
        "One fixed action: " + ", ".join(BROWSER_ACTIONS) + ".",
        {"fill": {"ref": "#email", "text": "{{secrets.USER}}"}},
        default=None,
        json_schema_extra={
            "minProperties": 1,
            "maxProperties": 1,
            "propertyNames": {"enum": list(BROWSER_ACTIONS)},
        },
    )

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        exactly_one(data, ("goal", "expect", "action"), "a step")
        return data

    @field_validator("action")
    @classmethod
    def _one_action(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and (len(value) != 1 or next(iter(value)) not in BROWSER_ACTIONS):
            raise PydanticCustomError(
                "browser_action", "an action is one of: {names}", {"names": ", ".join(BROWSER_ACTIONS)}
            )
        return value


class Behaviors(ConfigModel):
    """How the simulated caller behaves in audio: interruptions, pauses, noise, line."""

    interrupt_probability: Fraction | None = F(
        "Audio: the chance per turn that the caller starts talking before the agent is done.",
        0.3,
        default=None,
    )
    silence_after_turn_ms: list[int] | None = F(
        "Pause after each turn, drawn between [min, max] milliseconds.",
        [300, 1500],
        default=None,
        min_length=2,
        max_length=2,
    )
    background_noise: str | None = F(
        "Background sound under the caller: a preset (cafe, street, office, white) or a WAV file.",
        "cafe",
        default=None,
    )
    background_noise_snr_db: float = F(
        "How far the voice sits above the background noise, in dB.", 12, default=20, ge=-10, le=60
    )
    line_quality: Literal["pstn", "mobile_poor", "voip_good"] | None = F(
        "Audio and sip: the phone line the caller's audio goes through.", "mobile_poor", default=None
    )

    @field_validator("silence_after_turn_ms")
    @classmethod
    def _ordered(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and not 0 <= value[0] <= value[1]:
            raise PydanticCustomError("silence_range", "write [min, max] with 0 <= min <= max")
        return value


class Persona(ConfigModel):
    """The simulated user: name, manner, language, voice, habits."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": set_schema("tactics"),
            "then": {"required": ["adversarial"], "properties": {"adversarial": {"const": True}}},
        }
    )

    name: str | None = F("The name the persona gives when asked.", "Marta", default=None)
    style: str | None = F(
        "Manner of speaking, for example polite or impatient.", "polite, slightly confused", default=None
    )
    language: str | None = F(
        "Language the persona speaks, as a BCP 47 tag (es, en-GB).", "es-ES", default=None
    )
    voice: str | None = F("Text-to-speech voice.", "en-GB-female", default=None)
    behaviors: Behaviors | None = F(
        "Audio habits: interruptions, pauses, background noise, line quality.",
        {"interrupt_probability": 0.3, "background_noise": "cafe"},
        default=None,
    )
    adversarial: bool = F(
        "Red team: an attacker that pursues the goal with escalating tactics and records the tactic of each turn.",
        True,
        default=False,
    )
    tactics: list[str] | None = F(
        "Adversarial personas: a custom set of tactics replacing the built-in ones.",
        ["claim to be the store manager", "paste a fake system message"],
        default=None,
    )

    @model_validator(mode="after")
    def _tactics_need_attacker(self) -> "Persona":
        if self.tactics is not None and not self.adversarial:
            raise PydanticCustomError("persona_tactics", "tactics apply to an adversarial persona")
        return self


class ScriptFile(ShortForm):
    """A file sent with a script step: its bytes (path) or a link the agent fetches (uri)."""

    __short_field__: ClassVar[str] = "path"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "description": "A path relative to the suite, or a URI (scheme://...).",
    }
    __object_schema__: ClassVar[dict[str, Any]] = one_of_schema(("path", "uri"))

    path: str | None = F(
        "Local file (relative to the suite) whose content is uploaded.", "fixtures/invoice.pdf", default=None
    )
    uri: str | None = F(
        "Link the agent downloads on its own; no bytes are uploaded.",
        "https://cdn.example.com/photo.jpg",
        default=None,
    )
    name: str | None = F(
        "The file name the agent sees; the path's base name when unset.", "invoice.pdf", default=None
    )
    mime: str | None = F(
        "The media type; guessed from the extension when unset.", "application/pdf", default=None
    )

    @classmethod
    def _expand_short(cls, value: Any) -> dict[str, Any]:
        return {"uri" if "://" in value else "path": value}

    @model_validator(mode="before")
    @classmethod
    def _path_or_uri(cls, data: Any) -> Any:
        exactly_one(data, ("path", "uri"), "a file", allowed=("name", "mime"))
        return data


class ScriptStep(ConfigModel):
    """One fixed step played before the simulated user takes over."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [{"required": [k]} for k in ("say", "wait_for", "dtmf", "data", "files")],
            "allOf": [{"if": {"required": [k]}, "then": {"maxProperties": 1}} for k in ("wait_for", "dtmf")],
        }
    )

    wait_for: str | None = F(
        "Wait until an agent turn says this text: its words in order, as a person hears them (case, "
        "accents, punctuation and how numbers are written aside: thirty = 30).",
        "press 2 for billing",
        default=None,
    )
    dtmf: str | None = F("Keypad digits to send.", "2", default=None, pattern=DTMF_PATTERN)
    say: str | None = F(
        "Exactly what the user says.", "What is the status of {{captured.order_id}}?", default=None
    )
    data: dict[str, Any] | None = F(
        "Structured data sent with the step (a2a: a data part); alone or with say.",
        {"order": "ORD-1001", "reason": "damaged"},
        default=None,
    )
    files: list[ScriptFile] | None = F(
        "Files sent with the step (a2a: file parts): paths relative to the suite or URIs.",
        ["fixtures/invoice.pdf", {"uri": "https://cdn.example.com/photo.jpg", "mime": "image/jpeg"}],
        default=None,
    )

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        exactly_one(data, ("say", "wait_for", "dtmf", "data", "files"), "a script step", at_least=True)
        if isinstance(data, dict) and len(data) > 1:
            for alone in ("wait_for", "dtmf"):
                if alone in data:
                    raise PydanticCustomError(
                        "script_step_alone", "{key} stands alone in a script step", {"key": alone}
                    )
        return data


class Scenario(ConfigModel):
    """What the simulated user wants, and when the conversation stops."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                set_schema("goal"),
                {"required": ["script"], "properties": {"script": {"type": "array", "minItems": 1}}},
                set_schema("replay"),
            ]
        }
    )

    goal: str | None = F(
        "What the user wants; pursued after the script. With a script and no goal, the script plays and the run stops.",
        "Find out if you can return shoes bought 40 days ago",
        default=None,
    )
    max_turns: PositiveInt = F("The most user turns.", 6, default=10)
    stop_when: str | None = F(
        "A stop condition in plain words, judged after each agent turn.",
        "the agent has given a clear yes or no",
        default=None,
    )
    script: list[ScriptStep] | None = F(
        "Fixed steps before the simulated user takes over: say on any target; wait_for and dtmf on sip and livekit.",
        [{"say": "Hi, I have a question about order ORD-1001"}, {"wait_for": "press 2"}, {"dtmf": "2"}],
        default=None,
    )
    replay: Replay | None = F(
        "A recorded call plays the caller: its own audio turn by turn (its words on a text target); written by tamesu import calls.",
        {
            "recording": "calls/123.wav",
            "caller": "left",
            "turns": [{"say": "Hi, where is my order?", "start": 1.2, "end": 2.9}],
        },
        default=None,
    )

    @model_validator(mode="after")
    def _goal_or_script(self) -> "Scenario":
        if self.replay is not None:
            if self.goal is not None or self.script:
                raise PydanticCustomError(
                    "scenario_replay", "a replayed call is the whole scenario: no goal or script beside it"
                )
            return self
        if self.goal is None and not self.script:
            raise PydanticCustomError("scenario_empty", "a scenario needs a goal, a script or a replay")
        return self


class Counterpart(ConfigModel):
    """Another target plays the user: two agents talk and the checks grade the exchange."""

    target: str = F("The target (a key of targets) that plays the user.", "supplier", min_length=1)
    opening: str | None = F(
        "The counterpart's first message; without it the counterpart first answers the scenario goal.",
        "We can offer 500 units at 12 euros each, delivery in 3 weeks",
        default=None,
    )


class Fuzz(ShortForm):
    """What a tool answers instead of its configured result."""

    __short_field__: ClassVar[str] = "mode"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "enum": [m for m in FUZZ_MODES if m != "custom"],
        "description": "The fuzz mode alone.",
    }
    __object_schema__: ClassVar[dict[str, Any]] = {
        "if": {"required": ["mode"], "properties": {"mode": {"const": "custom"}}},
        "then": {"required": ["result"]},
        "else": {"not": {"required": ["result"]}},
    }

    mode: FuzzMode = F("The kind of faulty answer the tool gives.", "delay")
    delay: Duration | None = F(
        "How long the answer is held back (any mode; the point of delay).", "8s", default=None
    )
    result: Any = F(
        "custom: the answer (any JSON).", {"ok": False, "reason": "insufficient funds"}, default=None
    )

    @model_validator(mode="after")
    def _custom_result(self) -> "Fuzz":
        has_result = "result" in self.model_fields_set
        if (self.mode == "custom") != has_result:
            raise PydanticCustomError(
                "fuzz_result", "result goes with mode: custom, and custom needs a result"
            )
        return self


class Quarantine(ConfigModel):
    """A known flaky test: it runs, but its failure is reported as quarantined and fails nothing."""

    reason: str = F(
        "Why, usually the tracking ticket.", "SUP-412 flaky since the payments migration", min_length=1
    )
    until: DateStr | None = F(
        "The last day (YYYY-MM-DD) of the quarantine; without it, until the key is removed.",
        "2026-12-31",
        default=None,
    )


class Test(ConfigModel):
    """One test: who talks to which target, and what must be true afterwards."""

    model_config = ConfigDict(
        json_schema_extra={
            "not": {"anyOf": [set_schema("cases", "cases_file"), set_schema("persona", "counterpart")]}
        }
    )
    __test__: ClassVar[bool] = False

    name: str = F("The test's name, unique in the suite.", "refund after 40 days", min_length=1)
    target: str = F("The target it talks to (a key of targets).", "api", min_length=1)
    tags: list[str] = F(
        "Tags for --tags and the reports, on top of the suite's.", ["returns", "smoke"], default_factory=list
    )
    mode: Literal["text", "audio"] | None = F(
        "Voice tests: text or audio, instead of the target's mode.", "audio", default=None
    )
    repeat: PositiveInt | None = F("Run count for this test, to see how much results vary.", 3, default=None)
    pass_threshold: float | None = F(
        "Share of the repeated runs that must pass; 1 when unset.", 0.67, default=None, gt=0, le=1
    )
    retries: int | None = F(
        "Extra runs after an infrastructure failure (never after a failed check).", 1, default=None, ge=0
    )
    timeout: Duration | None = F(
        "The longest one run may take; defaults.timeout when unset.", "2m", default=None
    )
    seed: int | None = F("Seed of the simulator prompts and the behaviour randomness.", 42, default=None)
    vars: StrMap = F("Values for {{vars.x}} in this test.", {"days": "40"}, default_factory=dict)
    cases: list[Case] | None = F(
        "Parameter sets: one test per entry, each with its own vars.",
        [{"name": "late", "vars": {"days": "40"}}, {"name": "early", "vars": {"days": "10"}}],
        default=None,
        min_length=1,
    )
    cases_file: str | None = F(
        "Cases from a file next to the suite: a CSV with a header (a name column names each case) or a JSON list of objects.",
        "cases.csv",
        default=None,
    )
    fuzz_tools: dict[str, Fuzz] | None = F(
        "Per tool name, a faulty answer the agent gets instead of the configured one (realtime, pipecat, model, mcp targets).",
        {"lookup_order": "error", "get_balance": {"mode": "delay", "delay": "8s"}},
        default=None,
    )
    languages: list[str] | None = F(
        "Repeat the test in each of these languages (BCP 47 tags).",
        ["en", "es", "de"],
        default=None,
        min_length=1,
    )
    steps: list[Step] | None = F(
        "Browser tests: the steps, in order.",
        [{"action": {"navigate": "/"}}, {"goal": "Add the blue sneakers to the cart"}],
        default=None,
    )
    persona: Persona | None = F(
        "The simulated user: name, manner, language, voice, habits.",
        {"name": "Marta", "style": "polite, slightly confused", "language": "en"},
        default=None,
    )
    scenario: Scenario | None = F(
        "The simulated user's aim, turn budget and stop condition.",
        {"goal": "Find out if you can return shoes bought 40 days ago", "max_turns": 6},
        default=None,
    )
    counterpart: Counterpart | None = F(
        "Another target of the suite plays the user, instead of a persona.",
        {"target": "supplier", "opening": "We can offer 500 units at 12 euros each"},
        default=None,
    )
    capture: list[Capture] | None = F(
        "Values taken from the agent's turns as they arrive, offered as {{captured.NAME}}.",
        [{"name": "order_id", "regex": "(ORD-[0-9]+)"}],
        default=None,
    )
    assert_: list[Assertion] = F(
        "The checks on each run; every one must pass.",
        [{"contains": "30 days"}, {"judge": "The agent states the policy"}],
        default_factory=list,
        alias="assert",
    )
    quarantine: Quarantine | None = F(
        "Known flaky: a failure is reported as quarantined and neither fails the run nor counts as a regression.",
        {"reason": "SUP-412 flaky since the migration", "until": "2026-12-31"},
        default=None,
    )

    @model_validator(mode="after")
    def _exclusive(self) -> "Test":
        if self.cases is not None and self.cases_file is not None:
            raise PydanticCustomError("test_cases", "a test takes cases or cases_file, not both")
        if self.persona is not None and self.counterpart is not None:
            raise PydanticCustomError("test_counterpart", "a test takes persona or counterpart, not both")
        return self


class RemoteSkill(ShortForm):
    """A skill on a remote agent's card."""

    __short_field__: ClassVar[str] = "id"
    __short_schema__: ClassVar[dict[str, Any]] = {
        "type": "string",
        "minLength": 1,
        "description": "Identifier of the skill.",
    }

    id: str = F("Identifier of the skill.", "refund", min_length=1)
    name: str | None = F("The skill's name; the id when unset.", "Refunds", default=None)
    description: str | None = F("Summary of the skill.", "Issues refunds for delivered orders", default=None)
    tags: list[str] | None = F("Labels attached to the skill.", ["billing"], default=None)


class RemoteReply(ConfigModel):
    """A scripted answer of a remote agent."""

    model_config = ConfigDict(json_schema_extra={"anyOf": [set_schema("say"), set_schema("data")]})

    when: str | None = F(
        "A regular expression on the incoming message; every message when unset.", "(?i)cancel", default=None
    )
    say: str | None = F("The words of the answer.", "Which order should I cancel?", default=None)
    data: dict[str, Any] | None = F(
        "Structured data attached to the answer.", {"reference": "RF-889"}, default=None
    )
    state: Literal["completed", "input-required", "failed"] = F(
        "The task's state after this answer.", "input-required", default="completed"
    )

    @model_validator(mode="after")
    def _something_to_say(self) -> "RemoteReply":
        if self.say is None and self.data is None:
            raise PydanticCustomError("remote_reply", "a reply needs say or data")
        return self


class RemoteExtended(ConfigModel):
    """What the authenticated extended card adds for callers that send credentials."""

    description: str | None = F(
        "The extended card's description; the card's own when unset.",
        "Refunds, invoices and exports for partners",
        default=None,
    )
    skills: list[RemoteSkill] | None = F(
        "Additional skills visible only on the extended card.",
        ["invoice-export", {"id": "bulk-refund", "name": "Bulk refund"}],
        default=None,
    )


class RemoteAgent(ConfigModel):
    """An Agent2Agent agent tamesu plays for the agent under test: scripted, or a recording proxy."""

    model_config = ConfigDict(
        json_schema_extra={
            "not": {"anyOf": [set_schema("forward", "reply"), set_schema("forward", "replies")]},
            "if": {"required": ["headers"]},
            "then": set_schema("forward"),
        }
    )

    addr: str | None = F(
        "host:port to listen on, for an agent under test configured by hand; a free port when unset.",
        "127.0.0.1:8095",
        default=None,
    )
    name: str | None = F("The card's name; the key when unset.", "Billing", default=None)
    description: str | None = F("Description shown on the agent card.", "Refunds and invoices", default=None)
    skills: list[RemoteSkill] | None = F(
        "Skills listed on the card: plain ids, or objects with id, name, description and tags.",
        ["refund", {"id": "invoice-lookup", "name": "Invoice lookup"}],
        default=None,
    )
    reply: str | None = F(
        "The answer to every message no replies entry matches.",
        "I can help with refunds and invoices.",
        default=None,
    )
    replies: list[RemoteReply] | None = F(
        "Scripted answers; the first entry whose when matches wins.",
        [{"when": "(?i)refund", "say": "Refund of 42 euros issued, reference RF-889"}],
        default=None,
    )
    forward: str | None = F(
        "A real agent's JSON-RPC URL: this agent becomes a proxy in front of it that records every exchange.",
        "https://billing.example.com/a2a",
        default=None,
    )
    headers: StrMap | None = F(
        "Headers added to forwarded requests; templates render in them.",
        {"Authorization": "Bearer {{secrets.BILLING_TOKEN}}"},
        default=None,
    )
    extended: RemoteExtended | None = F(
        "What the authenticated extended card adds: more skills, a fuller description.",
        {"skills": ["invoice-export"], "description": "Refunds, invoices and exports for partners"},
        default=None,
    )
    token: str | None = F(
        "A bearer token every request must carry; the card declares it, and requests without it get 401.",
        "{{secrets.BILLING_AGENT_TOKEN}}",
        default=None,
    )

    @model_validator(mode="after")
    def _proxy_or_script(self) -> "RemoteAgent":
        if self.forward is not None and (self.reply is not None or self.replies is not None):
            raise PydanticCustomError("remote_forward", "a forwarding remote agent takes no reply or replies")
        if "headers" in self.model_fields_set and self.forward is None:
            raise PydanticCustomError("remote_headers", "headers apply to a remote agent with forward")
        return self


class RedTeam(ConfigModel):
    """Adversarial tests generated from playbooks when the suite loads, one per attack."""

    target: str = F("The target (a key of targets) the attacks talk to.", "api", min_length=1)
    agent: str = F(
        "What the agent is and what it must never do; attack goals are written against it.",
        "Shop support for orders and returns; never more than 30-day returns, never other customers' data",
        min_length=1,
    )
    playbooks: list[str] = F(
        "Built-in playbooks to run (tamesu playbooks lists them); all of them when empty.",
        ["prompt_injection", "pii_extraction", "policy_drift"],
        default_factory=list,
    )
    max_turns: PositiveInt = F("Turn budget per attack.", 8, default=8)
    repeat: PositiveInt | None = F("Runs per attack.", 3, default=None)
    language: str | None = F("Language the attacker writes in, as a BCP 47 tag.", "es", default=None)
    tags: list[str] = F("Tags added to each generated attack test.", ["nightly"], default_factory=list)
    vars: StrMap = F(
        "Values for {{vars.x}} in the generated tests.", {"shop": "Mochi Shoes"}, default_factory=dict
    )
    assert_: list[Assertion] = F(
        "Checks added to every generated test (a pack, or a not_contains with the forbidden outcome).",
        [{"not_contains": "90 days"}],
        default_factory=list,
        alias="assert",
    )


class Suite(ConfigModel):
    """A suite file: targets, defaults and tests."""

    suite: str = F("The suite's name.", "support-agent", min_length=1)
    tags: list[str] = F(
        "Tags added to each test in this file.", ["regression", "returns"], default_factory=list
    )
    vars: StrMap = F(
        "Values for {{vars.x}} and for ${VAR} in secret refs.",
        {"shop": "Mochi Shoes", "days": "30"},
        default_factory=dict,
    )
    secrets: StrMap = F(
        "Secret name to secret ref; wins over the project's entry of the same name.",
        {"AGENT_TOKEN": "env:AGENT_TOKEN"},
        default_factory=dict,
    )
    defaults: Defaults | None = F(
        "Per-test defaults for this suite, over the project's.",
        {"timeout": "2m", "repeat": 3, "pass_threshold": 0.67},
        default=None,
    )
    models: Models | None = F(
        "Models for this suite's jobs, over the project's.",
        {"judge": "anthropic/claude-sonnet-4-6"},
        default=None,
    )
    budgets: Budgets | None = F("Spending caps for this suite's runs.", {"max_cost_usd": 2}, default=None)
    targets: dict[str, Target] = F(
        "Each agent or system to test, under a name tests refer to.",
        {"api": {"type": "rest", "url": "{{vars.agent_url}}"}},
        min_length=1,
    )
    hooks: Hooks | None = F(
        "Setup and teardown around the suite and its runs.",
        {"before_each": [{"command": "./scripts/reset.sh"}]},
        default=None,
    )
    packs: dict[str, list[Assertion]] = F(
        "Named assertion sets for assert entries written pack: NAME; a name shared with a built-in pack replaces it.",
        {"tone": [{"judge": "The agent stays polite"}]},
        default_factory=dict,
    )
    red_team: RedTeam | None = F(
        "Playbook attacks added as tests when the suite loads.",
        {"target": "api", "agent": "Shop support; never more than 30-day returns"},
        default=None,
    )
    remote_agents: dict[str, RemoteAgent] = F(
        "Agent2Agent agents, by name, that tamesu plays for the agent under test to delegate to.",
        {"billing": {"skills": ["refund"], "reply": "Refund issued, reference RF-889"}},
        default_factory=dict,
    )
    tests: list[Test] = F(
        "The test cases of this suite, run in order of appearance.",
        [{"name": "refund policy", "target": "api", "scenario": {"goal": "Ask about returns"}}],
    )
