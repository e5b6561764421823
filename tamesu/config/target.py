"""The suite's targets: the discriminated union, on ``type``, of every registered target type's config.

Each target type is its own config model (its wing's ``tamesu.targets.<type>.settings``), registered with the target
registry (``tamesu.config.kinds.target_kinds``), plugins included; ``Target`` is built from the
registry when this module is imported. A key that another type takes is refused naming the types
that take it (``TargetConfig``), and the JSON Schema carries each type's keys and rules.
"""

from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import Field, TypeAdapter

from tamesu.config.kinds import target_kinds
from tamesu.config.target_base import TargetConfig

__all__ = ["Target", "TargetConfig", "parse_target", "target_union"]


def target_union() -> Any:
    """The union of every target type registered now (built-ins and plugins), tagged by ``type``.

    A kind whose config does not pin ``type`` to its name (a test's adapter registered with a shared
    config) can run a spec built by hand, but is no member a suite can name.
    """
    configs = tuple(e.config for e in target_kinds.entries() if _pinned(e.config, e.name))
    return Annotated[Union[configs], Field(discriminator="type")]  # noqa: UP007


def _pinned(config: Any, name: str) -> bool:
    field = config.model_fields.get("type")
    return (
        field is not None
        and get_origin(field.annotation) is Literal
        and get_args(field.annotation) == (name,)
    )


if TYPE_CHECKING:
    Target = TargetConfig
else:
    Target = target_union()

_adapter: TypeAdapter[Any] | None = None


def parse_target(data: Any) -> TargetConfig:
    """One target's settings validated as the suite validates them (by its ``type``)."""
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(Target)
    return _adapter.validate_python(data)  # type: ignore[no-any-return]
