"""The suite's targets: the discriminated union, on ``type``, of every registered target type's config.

Each target type is its own config model (``tamesu.config.targets``), registered with the target
registry (``tamesu.config.kinds.target_kinds``), plugins included; ``Target`` is built from the
registry when this module is imported. A key that another type takes is refused naming the types
that take it (``TargetConfig``), and the JSON Schema carries each type's keys and rules.
"""

from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field, TypeAdapter

from tamesu.config.kinds import target_kinds
from tamesu.config.targets.base import TargetConfig

__all__ = ["Target", "TargetConfig", "parse_target", "target_union"]


def target_union() -> Any:
    """The union of every target type registered now (built-ins and plugins), tagged by ``type``."""
    configs = tuple(e.config for e in target_kinds.entries())
    return Annotated[Union[configs], Field(discriminator="type")]  # noqa: UP007


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
