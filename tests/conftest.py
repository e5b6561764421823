"""Every test carries exactly one of the project's markers, so CI can select and time them."""

from __future__ import annotations

import pytest

MARKERS = {"unit", "integration", "ray", "slow"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not MARKERS & {m.name for m in item.iter_markers()}:
            raise pytest.UsageError(
                f"{item.nodeid} has none of the markers {sorted(MARKERS)}: mark it (pytestmark = pytest.mark.unit)"
            )
