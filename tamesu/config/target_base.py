"""What every target type's config model shares: the common keys, and the rule that a key of
another type is refused with the types that take it.

Each type is its own model (``tamesu.targets.rest.settings`` and its siblings) whose ``type`` is a
``Literal`` of its name; the suite's ``targets`` validate as the discriminated union of the
registered models (``tamesu.config.target.Target``). Mixins give several types one key with one
description (headers, turn_timeout, idle, ...).
"""

from typing import Any, Literal

from pydantic import ConfigDict, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType, ValidatorFunctionWrapHandler

from tamesu.config.common import (
    ConfigModel,
    Duration,
    F,
    PositiveInt,
    RESTSession,
    StrMap,
    exactly_one,
    one_of_schema,
)
from tamesu.config.kinds import target_kinds

__all__ = [
    "SAY",
    "SAY_AND_DATA",
    "SPEECH",
    "ConnectConfig",
    "HandoffSignal",
    "TalkingTarget",
    "TargetConfig",
    "WithHeaders",
    "WithIdle",
    "WithMode",
    "WithToolResults",
    "WithTranscriptSource",
    "WithTurnTimeout",
]

SAY = frozenset({"say"})
"""Script step parts: words only."""
SAY_AND_DATA = frozenset({"say", "data"})
"""Words, and structured data as its JSON text on a line after them."""
SPEECH = frozenset({"say", "dtmf"})
"""Spoken words and keypad digits."""

_KNOWN_ERRORS = frozenset(ErrorType.__args__)  # type: ignore[attr-defined]


class TargetConfig(ConfigModel):
    """Base of every target type's config: the keys all types take."""

    type: str = F("What kind of system this is; it decides which other keys apply.", "rest")
    session: RESTSession | None = F(
        "The session id template and an optional session.open request made once per run, whose captures "
        "render as {{session.NAME}} in this target's settings.",
        {"id": "{{uuid}}"},
        default=None,
    )

    @model_validator(mode="wrap")
    @classmethod
    def _keys_of_other_types(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A key that another registered type takes is refused naming those types, along with every
        other error of the target (an unknown key keeps pydantic's did-you-mean path)."""
        if not isinstance(data, dict):
            return handler(data)
        own = {f.alias or n for n, f in cls.model_fields.items()}
        misplaced = {
            k: types
            for k in data
            if isinstance(k, str) and k not in own and (types := target_kinds.types_with_key(k))
        }
        if not misplaced:
            return handler(data)
        errors = [
            InitErrorDetails(type=_misplaced(key, types, data.get("type")), loc=(key,), input=data[key])
            for key, types in misplaced.items()
        ]
        try:
            handler({k: v for k, v in data.items() if k not in misplaced})
        except ValidationError as exc:
            errors.extend(_again(e) for e in exc.errors())
        raise ValidationError.from_exception_data(cls.__name__, errors)


def _misplaced(key: str, types: list[str], kind: Any) -> PydanticCustomError:
    return PydanticCustomError(
        "target_key",
        "`{key}` applies to {which} {types}, not {type}",
        {
            "key": key,
            "which": "type" if len(types) == 1 else "types",
            "types": ", ".join(types),
            "type": kind,
        },
    )


def _again(error: Any) -> InitErrorDetails:
    """One error of a ValidationError, as the details that raise it again unchanged."""
    kind = error["type"]
    ctx = error.get("ctx")
    details: InitErrorDetails = {
        "type": kind if kind in _KNOWN_ERRORS else PydanticCustomError(kind, error["msg"], ctx),
        "loc": tuple(error["loc"]),
        "input": error["input"],
    }
    if ctx is not None and kind in _KNOWN_ERRORS:
        details["ctx"] = ctx
    return details


class ConnectConfig(ConfigModel):
    """Retries of the first connection when the agent refuses it or answers 5xx."""

    attempts: PositiveInt = F("Tries in all; 1 means no retry.", 5, default=3)
    backoff: Duration = F(
        "Wait before the second try; it doubles each try, with jitter.", "1s", default="500ms"
    )
    max_backoff: Duration = F("Upper bound of the wait between tries.", "10s", default="5s")


class HandoffSignal(ConfigModel):
    """How the agent shows it handed the conversation to a person, and where to read to whom and why."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("tool", "json_path", "regex")))

    tool: str | None = F("A tool call that means a handoff.", "transfer_to_human", default=None)
    json_path: str | None = F(
        "A path in the raw response that is present and not false on a handoff (rest, websocket, realtime).",
        "$.handoff",
        default=None,
    )
    regex: str | None = F(
        "Pattern in the agent's reply that signals a handoff.",
        r"(?i)transferring you to (\w+)",
        default=None,
    )
    to: str | None = F(
        "Where the destination is: a tool argument name or a JSONPath into the response; "
        "with regex alone, the first group.",
        "department",
        default=None,
    )
    summary: str | None = F(
        "Where the note for the person is: a tool argument name or a JSONPath into the response.",
        "$.handoff.note",
        default=None,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_signal(cls, data: Any) -> Any:
        exactly_one(data, ("tool", "json_path", "regex"), "handoff", allowed=("to", "summary"))
        return data


class TalkingTarget(TargetConfig):
    """A target tamesu holds a conversation with (every type but browser)."""

    connect: ConnectConfig | None = F(
        "Retries of the first connection to the agent.",
        {"attempts": 5, "backoff": "1s", "max_backoff": "10s"},
        default=None,
    )
    handoff: HandoffSignal | None = F(
        "How to tell that the agent passed the conversation to a person, and to whom.",
        {"tool": "transfer_to_human", "to": "department", "summary": "summary"},
        default=None,
    )


class WithHeaders(ConfigModel):
    headers: StrMap | None = F(
        "Headers sent with every request or on the connection's handshake; write credentials as "
        "{{secrets.NAME}}.",
        {"Authorization": "Bearer {{secrets.AGENT_TOKEN}}"},
        default=None,
    )


class WithTurnTimeout(ConfigModel):
    turn_timeout: Duration = F("How long to wait for a turn to end.", "60s", default="60s")


class WithIdle(ConfigModel):
    idle: Duration = F(
        "Silence after the agent's last message or audio that ends its turn.", "2s", default="2s"
    )


class WithMode(ConfigModel):
    mode: Literal["text", "audio"] = F("Talk in text or in audio.", "audio", default="text")


class WithTranscriptSource(ConfigModel):
    transcript_source: Literal["auto", "agent", "stt"] = F(
        "Audio: where the agent's words come from; auto uses the agent's own transcription when it "
        "publishes one and transcribes its audio otherwise.",
        "stt",
        default="auto",
    )


class WithToolResults(ConfigModel):
    tool_results: dict[str, Any] | None = F(
        "Answers to the agent's function calls by function name (any JSON; string leaves may use {{args.NAME}}).",
        {"lookup_order": {"id": "{{args.id}}", "status": "shipped"}},
        default=None,
    )
