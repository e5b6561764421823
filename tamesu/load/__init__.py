"""Load tests: the shapes of the ``load:`` profile over time, the gates, the live view, the report's
figures, and runs submitted to a Ray cluster as jobs (``tamesu.load.jobs``).

The profile itself is configuration (``tamesu.config.load_profile``); it is re-exported here for
those who write load tests in Python. The driver that runs the calls is ``tamesu.load.driver``.
"""

from __future__ import annotations

from tamesu.config.load_profile import LoadGates, LoadProfile, SpikeShape, merge_profile
from tamesu.load.shapes import ArrivalSchedule, level_at

__all__ = ["ArrivalSchedule", "LoadGates", "LoadProfile", "SpikeShape", "level_at", "merge_profile"]
