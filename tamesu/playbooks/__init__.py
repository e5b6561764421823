"""Red-team playbooks: the attacks as data, their languages and openings, and their expansion into tests.

The contract's side of the red team: ``tamesu.config`` may read these. The run side (attacker,
detectors, findings) is ``tamesu.redteam``. The public names load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Attack",
    "AttackPlan",
    "Canary",
    "Decoded",
    "Move",
    "PackCheck",
    "Pattern",
    "Playbook",
    "Rubric",
    "ToolUse",
    "get_playbook",
    "playbook_names",
    "register_playbook",
]

_CATALOGUE = ("get_playbook", "playbook_names", "register_playbook")


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tamesu.playbooks' has no attribute {name!r}")
    module = "tamesu.playbooks.catalogue" if name in _CATALOGUE else "tamesu.playbooks.model"
    return getattr(importlib.import_module(module), name)
