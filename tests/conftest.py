"""Every test carries exactly one of the project's markers, so CI can select and time them."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import pytest

from .virtual_time import VirtualTimeLoop

MARKERS = {"unit", "integration", "ray", "slow"}

# A local Ray head started by a fixture on a 2-core machine that is busy with other tests can take more
# than Ray's default 30 s to write its GCS port; tamesu gives its own local heads the same margin.
os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not MARKERS & {m.name for m in item.iter_markers()}:
            raise pytest.UsageError(
                f"{item.nodeid} has none of the markers {sorted(MARKERS)}: mark it (pytestmark = pytest.mark.unit)"
            )


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Tests marked ``virtual_time`` run on a ``VirtualTimeLoop``; the others on a plain event loop."""
    if item.get_closest_marker("virtual_time") is not None:
        return {"virtual_time": VirtualTimeLoop}
    return {"asyncio": asyncio.new_event_loop}
