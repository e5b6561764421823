"""Building blocks shared by the configuration models: the strict base, value types, short forms,
and the HTTP requests and the session that hooks, triggers and every target type share.

Everything here is cheap to import: pydantic only. Constraints are written as pydantic constraints
(ge/le/pattern/Literal) so they are checked in Rust and also show up in the JSON Schema; a Python
validator is used only where no constraint can say it (durations, dates, exactly-one rules).

The model modules deliberately do without ``from __future__ import annotations``: with it pydantic
must evaluate some 400 string annotations on every import, a sizeable share of ``tamesu validate``.
Every model also defers building its validator to its first use, so the whole tree is built once,
inside ``Suite``'s, instead of once per class.
"""

import datetime as _dt
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from tamesu.durations import parse_duration

__all__ = [
    "DATE_PATTERN",
    "DTMF_PATTERN",
    "DURATION_NUMBER",
    "DURATION_PATTERN",
    "ConfigModel",
    "DateStr",
    "Duration",
    "F",
    "Fraction",
    "HTTPTrigger",
    "Hook",
    "Hooks",
    "HttpMethod",
    "HttpStatus",
    "PositiveInt",
    "RESTOpen",
    "RESTSession",
    "ShortForm",
    "StrMap",
    "exactly_one",
    "one_of_schema",
    "set_keys",
    "set_schema",
]

DTMF_PATTERN = r"^([0-9A-Da-d*#wW,]|\{\{[^{}]+\}\})+$"
"""Keypad digits (0-9, A-D, *, #, w and , for pauses) or {{templates}} that render to them."""
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
DURATION_NUMBER: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 0}
"""The one number that is a duration without a unit."""
DURATION_PATTERN = r"^\s*(0+(\.0+)?|(\d+(\.\d+)?\s*(ms|h|m|s)\s*)+)\s*$"


def _duration(value: Any) -> Any:
    """Keep durations as the strings users wrote, but refuse what parse_duration would refuse."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        try:
            parse_duration(value, unit_required=True)
        except ValueError as exc:
            raise PydanticCustomError("duration", "{error}", {"error": str(exc)}) from None
    return value


def _date(value: Any) -> Any:
    """A YYYY-MM-DD string that names a real day; a date object (YAML 1.1) is turned back into one."""
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            _dt.date.fromisoformat(value)
        except ValueError:
            raise PydanticCustomError(
                "date", "not a date: '{value}' (write it as YYYY-MM-DD)", {"value": value}
            ) from None
    return value


Duration = Annotated[
    str,
    BeforeValidator(_duration),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": DURATION_PATTERN}, DURATION_NUMBER]}),
]
"""A duration as written in the suite (30s, 3m, 1h30m, 500ms; a number only when it is 0), kept as
a string; tamesu.durations.parse_duration reads it."""

DateStr = Annotated[
    str,
    BeforeValidator(_date),
    Field(pattern=DATE_PATTERN),
    WithJsonSchema({"type": "string", "pattern": DATE_PATTERN}),
]
"""A YYYY-MM-DD day, kept as a string."""

Fraction = Annotated[float, Field(ge=0, le=1)]
PositiveInt = Annotated[int, Field(ge=1)]
HttpStatus = Annotated[int, Field(ge=100, le=599)]
HttpMethod = Annotated[str, Field(pattern=r"^[A-Za-z]+$")]
StrMap = dict[str, str]


def F(description: str, *examples: Any, **kwargs: Any) -> Any:
    """A field with its description and the reference's example, which the JSON Schema carries."""
    if examples:
        kwargs["examples"] = list(examples)
    return Field(description=description, **kwargs)


class ConfigModel(BaseModel):
    """Base of every suite and tamesu.yaml object: unknown keys are errors, YAML keys are aliases."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        strict=True,
        serialize_by_alias=True,
        defer_build=True,
    )

    def set_keys(self) -> set[str]:
        """The YAML keys the user wrote (aliases, not Python names)."""
        return set_keys(self)


def set_keys(model: BaseModel) -> set[str]:
    """The YAML keys (aliases) set on ``model``, for rules about which keys were written."""
    fields = type(model).model_fields
    return {fields[n].alias or n for n in model.model_fields_set if n in fields}


def exactly_one(
    data: Any, keys: Iterable[str], what: str, *, at_least: bool = False, allowed: Iterable[str] = ()
) -> None:
    """Raise when a mapping holds not exactly one (or, with at_least, none) of ``keys``.

    Called from ``mode="before"`` validators on the raw mapping. When the mapping holds none of
    them but some key this model does not know, nothing is raised, so the unknown-key error (with
    its did-you-mean hint) is the one reported.
    """
    if not isinstance(data, dict):
        return
    keys = tuple(keys)
    present = [k for k in keys if k in data]
    if len(present) == 1 or (at_least and present):
        return
    if not present and any(k not in keys and k not in allowed for k in data):
        return
    names = ", ".join(keys)
    if not present:
        raise PydanticCustomError(
            "missing_one_of", "{what} needs one of: {names}", {"what": what, "names": names}
        )
    raise PydanticCustomError(
        "more_than_one_of",
        "{what} takes exactly one of: {names} (found {found})",
        {"what": what, "names": names, "found": ", ".join(present)},
    )


def one_of_schema(keys: Iterable[str]) -> dict[str, Any]:
    """JSON Schema: exactly one of ``keys`` is present."""
    return {"oneOf": [{"required": [k]} for k in keys]}


def set_schema(*keys: str) -> dict[str, Any]:
    """JSON Schema: every one of ``keys`` is written with a value other than null.

    What a validator's ``is not None`` tests: a key written as null counts as not set.
    """
    return {"required": list(keys), "properties": {k: {"not": {"type": "null"}} for k in keys}}


def _short_form_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """Rewrite a model's schema in place as ``anyOf: [short form, object form]``."""
    short = getattr(cls, "__short_schema__", None)
    if short is None:
        return
    obj = {**schema, **getattr(cls, "__object_schema__", {})}
    schema.clear()
    for key in ("title", "description"):
        if key in obj:
            schema[key] = obj.pop(key)
    schema["anyOf"] = [dict(short), obj]


class ShortForm(ConfigModel):
    """An object that may also be written as one scalar; the scalar becomes ``__short_field__``.

    Consumers always read the object form; the JSON Schema shows both (anyOf).
    """

    model_config = ConfigDict(json_schema_extra=_short_form_schema)

    __short_field__: ClassVar[str] = ""
    __short_types__: ClassVar[tuple[type, ...]] = (str,)
    __short_schema__: ClassVar[dict[str, Any] | None] = None
    __object_schema__: ClassVar[dict[str, Any]] = {}

    @model_validator(mode="before")
    @classmethod
    def _from_short(cls, data: Any) -> Any:
        if isinstance(data, cls.__short_types__) and cls.__short_field__:
            return cls._expand_short(data)
        return data

    @classmethod
    def _expand_short(cls, value: Any) -> dict[str, Any]:
        return {cls.__short_field__: value}


class HTTPTrigger(ConfigModel):
    """An HTTP request tamesu makes: a hook, or the request that makes an inbound agent call."""

    url: str = F("Where the request goes; templates render in it.", "{{vars.admin_url}}/test/reset")
    method: HttpMethod = F("The HTTP method.", "POST", default="POST")
    body: Any = F(
        "What is sent: a string as it is, anything else encoded as JSON; templates render in it.",
        {"suite": "{{env.TAMESU_SUITE}}"},
        default=None,
    )
    headers: StrMap | None = F(
        "Headers of the request; templates render in them.",
        {"Authorization": "Bearer {{secrets.ADMIN_TOKEN}}"},
        default=None,
    )


class Hook(ConfigModel):
    """One setup or teardown step: a shell command or an HTTP request."""

    model_config = ConfigDict(json_schema_extra=one_of_schema(("command", "http")))

    command: str | None = F("A shell command, run with sh -c.", "./scripts/seed.sh", default=None)
    http: HTTPTrigger | None = F(
        "An HTTP request; an answer of 400 or above makes the hook fail.",
        {"url": "https://admin.example.com/reset", "method": "POST"},
        default=None,
    )
    timeout: Duration = F("The longest the hook may run.", "30s", default="60s")

    @model_validator(mode="before")
    @classmethod
    def _one_action(cls, data: Any) -> Any:
        exactly_one(data, ("command", "http"), "a hook", allowed=("timeout",))
        return data


class Hooks(ConfigModel):
    """Setup and teardown around a suite and around each of its runs."""

    before_all: list[Hook] = F(
        "Run once, before the first test starts.", [{"command": "./scripts/seed.sh"}], default_factory=list
    )
    after_all: list[Hook] = F(
        "Run once, after the last test has finished.",
        [{"command": "./scripts/teardown.sh", "timeout": "2m"}],
        default_factory=list,
    )
    before_each: list[Hook] = F(
        "Run before every run of every test; if one fails, that run ends as an infrastructure error.",
        [{"http": {"url": "{{vars.admin_url}}/reset", "method": "POST"}}],
        default_factory=list,
    )
    after_each: list[Hook] = F(
        "Run after every run; a failure is logged and leaves the run's outcome as it was.",
        [{"command": "./scripts/cleanup.sh $TAMESU_SESSION"}],
        default_factory=list,
    )


class RESTOpen(ConfigModel):
    """A request made once as a session starts (create a conversation, mint a token)."""

    url: str = F(
        "Where the request goes; templates render in it.",
        "https://directline.botframework.com/v3/directline/conversations",
    )
    method: HttpMethod = F("The HTTP method.", "POST", default="POST")
    headers: StrMap | None = F(
        "Request headers; templates render in them.",
        {"Authorization": "Bearer {{secrets.DIRECT_LINE_SECRET}}"},
        default=None,
    )
    body: Any = F(
        "The body template; nothing is sent when unset.", {"user": {"id": "{{session}}"}}, default=None
    )
    capture: StrMap | None = F(
        "Values to keep from the JSON answer, by name (JSONPaths); each renders as {{session.NAME}}.",
        {"id": "$.conversationId", "token": "$.token"},
        default=None,
    )


class RESTSession(ConfigModel):
    """The session id, and an optional request that opens the session before the first turn."""

    id: str = F("Template of the session id ({{session}}).", "{{uuid}}", default="{{uuid}}")
    open: RESTOpen | None = F(
        "A request made once when the session starts; its captures render as {{session.NAME}} everywhere after.",
        {"url": "{{vars.api}}/conversations", "capture": {"id": "$.conversationId", "token": "$.token"}},
        default=None,
    )
