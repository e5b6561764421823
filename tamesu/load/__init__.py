"""Load tests (the ``load:`` profile of tamesu.yaml, its shapes over time, the gates, the live
view) and runs submitted to a Ray cluster as jobs (``tamesu.load.jobs``).

``tamesu.config`` is imported first on purpose: ``Project`` holds a ``LoadProfile``, so the
configuration package must be complete before ``tamesu.load.profile`` is used from either side.
The driver that runs the calls lives in ``tamesu.actors.load``.
"""

from __future__ import annotations

import tamesu.config  # noqa: F401  (see the docstring: breaks the Project <-> LoadProfile cycle)
from tamesu.load.profile import LoadGates, LoadProfile, SpikeShape, merge_profile
from tamesu.load.shapes import ArrivalSchedule, level_at

__all__ = ["ArrivalSchedule", "LoadGates", "LoadProfile", "SpikeShape", "level_at", "merge_profile"]
