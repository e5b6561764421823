"""Every test carries exactly one of the project's markers, so CI can select and time them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from .virtual_time import VirtualTimeLoop

MARKERS = {"unit", "integration", "ray", "slow"}


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
