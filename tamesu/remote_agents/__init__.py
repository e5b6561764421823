"""Agent2Agent agents tamesu serves for the agent under test to delegate to (``remote_agents``).

A suite declares them by name; each run serves the ones it names (``served``) on loopback with
the a2a-sdk's server classes, scripted (``replies`` / ``reply``) or as a recording proxy in front
of a real agent (``forward``), and records every message both ways in its transcript for
``delegated_to``. Importing this package is cheap: the SDK loads when a run serves an agent.
"""

from __future__ import annotations

from tamesu.remote_agents.exchanges import EVENT
from tamesu.remote_agents.serving import served

__all__ = ["EVENT", "served"]
