"""A local Ray head that misses Ray's fixed 30 s start-up window once is started once more."""

from __future__ import annotations

import logging
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from tamesu.runner.placement.ray import LOCAL_HEAD_TRIES, start_local_ray  # noqa: E402

pytestmark = pytest.mark.ray

RAYLET_TIMEOUT = (
    "The current node timed out during startup. This could happen because some of the raylet "
    "failed to startup or the GCS has become overloaded."
)
"""What Ray raises (a plain Exception) when its raylet did not register in time on a busy machine."""

OPTIONS: dict[str, Any] = {
    "num_cpus": 1,
    "include_dashboard": False,
    "log_to_driver": False,
    "logging_level": "WARNING",
}


def test_a_head_that_timed_out_once_is_started_again_for_real(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Ray's timeout cannot be caused on demand, so the first start raises it; the second is Ray's own."""
    assert not ray.is_initialized()
    real, tries = ray.init, []

    def busy_first(**options: Any) -> Any:
        tries.append(options)
        if len(tries) == 1:
            raise Exception(RAYLET_TIMEOUT)
        return real(**options)

    monkeypatch.setattr(ray, "init", busy_first)
    try:
        with caplog.at_level(logging.WARNING, logger="tamesu.runner.placement.ray"):
            start_local_ray(**OPTIONS)
        assert ray.is_initialized()
        assert ray.cluster_resources().get("CPU") == 1.0
        assert tries == [OPTIONS, OPTIONS]
        assert "did not come up (The current node timed out during startup." in caplog.text
    finally:
        ray.shutdown()


def test_a_second_timeout_and_any_other_error_stand(monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[str] = []

    def always_late(**options: Any) -> Any:
        tries.append("late")
        raise TimeoutError("Timed out waiting for file /tmp/ray/session_x/gcs_server_port")

    monkeypatch.setattr(ray, "init", always_late)
    with pytest.raises(TimeoutError, match="gcs_server_port"):
        start_local_ray(**OPTIONS)
    assert len(tries) == LOCAL_HEAD_TRIES

    tries.clear()

    def misconfigured(**options: Any) -> Any:
        tries.append("bad")
        raise ValueError("num_cpus must be a non-negative integer")

    monkeypatch.setattr(ray, "init", misconfigured)
    with pytest.raises(ValueError, match="num_cpus"):
        start_local_ray(**OPTIONS)
    assert tries == ["bad"]
    assert not ray.is_initialized()
