"""One item of a suite's ``assert`` list, built from the assertion registry.

Each registered kind (``tamesu.config.kinds.assertion_kinds``) is an optional key of ``Assertion``
whose value validates as the kind's spec; an item holds exactly one kind (plus ``on_turn``),
``item.kind`` names it and ``item.spec`` is its value, in object form for kinds that have a short
form (``judge: "text"`` reads as ``Judge(rubric="text")``). A plugin's kind is a key here too.
"""

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, create_model, model_validator
from pydantic_core import PydanticCustomError

from tamesu.config.common import ConfigModel, F, exactly_one
from tamesu.config.kinds import assertion_kinds

__all__ = ["Assertion", "OnTurn", "assertion_model"]


def _turn(value: Any) -> Any:
    if value == "last" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise PydanticCustomError("on_turn", "on_turn takes a turn number from 1, or last")


OnTurn = Annotated[Annotated[int, Field(ge=1)] | Literal["last"], BeforeValidator(_turn)]
"""A 1-based agent turn number, or ``last``."""


def _one_of_the_kinds(schema: dict[str, Any], cls: Any) -> None:
    schema["oneOf"] = [{"required": [k]} for k in cls.kinds()]


class AssertionItem(ConfigModel):
    """Behaviour shared by the generated Assertion model."""

    model_config = ConfigDict(json_schema_extra=_one_of_the_kinds)

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        exactly_one(data, cls.kinds(), "an assertion", allowed=("on_turn",))
        return data

    @classmethod
    def kinds(cls) -> list[str]:
        """The assertion keys this model knows, in the registry's order."""
        return [name for name in cls.model_fields if name != "on_turn"]

    @property
    def kind(self) -> str:
        """The assertion key this item holds (judge, contains, ...)."""
        for name in self.model_fields_set:
            if name != "on_turn":
                return name
        raise AttributeError("assertion without a kind")  # unreachable after validation

    @property
    def spec(self) -> Any:
        """The value of that key, in object form for kinds that have a short form."""
        return getattr(self, self.kind)


def assertion_model() -> type[AssertionItem]:
    """The Assertion model of every kind registered now (built-ins and plugins)."""
    kinds = assertion_kinds.entries()
    fields: dict[str, Any] = {e.name: (e.spec, F(e.description, e.example, default=None)) for e in kinds}
    fields["on_turn"] = (
        OnTurn | None,
        F("Check one agent turn (a 1-based number, or last) instead of the whole run.", "last", default=None),
    )
    return create_model(  # type: ignore[no-any-return]
        "Assertion",
        __base__=AssertionItem,
        __doc__="One check on a run: exactly one kind, optionally limited to one agent turn.",
        __module__=__name__,
        **fields,
    )


if TYPE_CHECKING:

    class Assertion(AssertionItem):
        on_turn: int | Literal["last"] | None

else:
    Assertion = assertion_model()
