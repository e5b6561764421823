"""Red team, the run side: the attacker that plays a playbook, detectors, findings.

The playbooks themselves (data, languages, openings, expansion) are ``tamesu.playbooks``; SARIF is
``tamesu.reports.sarif``; ``tamesu generate`` is ``tamesu.generation``. Importing this package costs
nothing: ``tamesu.run_spec`` imports ``tamesu.redteam.findings``, so the public names load on
first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Finding"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tamesu.redteam' has no attribute {name!r}")
    return getattr(importlib.import_module("tamesu.redteam.findings"), name)
