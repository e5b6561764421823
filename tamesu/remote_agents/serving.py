"""Which of a suite's remote agents one run serves.

A run serves the agents its test can reach: those its target's configuration (or its
counterpart's), its test or the suite's ``before_each`` / ``after_each`` hooks name in a
``{{remote.NAME...}}`` template, those its assertions name in ``delegated_to``, and every agent
with a fixed ``addr`` (an agent under test configured by hand
names none of them). Serving nothing else keeps runs that never delegate free of servers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tamesu.templates import template_names

__all__ = ["served"]


def _dumped(value: Any) -> Any:
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True, by_alias=True) if dump is not None else value


def _delegations(assertions: Iterable[Any]) -> set[str]:
    out: set[str] = set()
    for item in assertions:
        if getattr(item, "kind", None) == "delegated_to":
            spec = item.spec
            out.add(spec if isinstance(spec, str) else getattr(spec, "agent", ""))
    return out


def served(
    agents: Mapping[str, Any],
    *,
    target: Any,
    counterpart: Any,
    test: Any,
    assertions: Iterable[Any] = (),
    hooks: Any = None,
) -> dict[str, Any]:
    """The remote agents (name -> config) a run of ``test`` on ``target`` serves."""
    if not agents:
        return {}
    each = [
        _dumped(hook) for stage in ("before_each", "after_each") for hook in getattr(hooks, stage, None) or []
    ]
    names = template_names([_dumped(target), _dumped(counterpart), _dumped(test), *each])
    named = {name.split(".")[1] for name in names if name.startswith("remote.")}
    named |= _delegations(assertions)
    return {name: config for name, config in agents.items() if name in named or config.addr}
