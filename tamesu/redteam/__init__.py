"""Red team: playbooks of attacks, the attacker that plays them, detectors, findings, SARIF, generate.

Importing this package costs nothing: ``tamesu.run_spec`` imports ``tamesu.redteam.findings``
and ``tamesu validate`` checks playbook names, so the public names load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Attack",
    "AttackPlan",
    "Canary",
    "Decoded",
    "Finding",
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

_WHERE = {
    "Finding": "tamesu.redteam.findings",
    "get_playbook": "tamesu.redteam.registry",
    "playbook_names": "tamesu.redteam.registry",
    "register_playbook": "tamesu.redteam.registry",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tamesu.redteam' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE.get(name, "tamesu.redteam.model")), name)
