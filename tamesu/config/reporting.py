"""tamesu.yaml settings about what a run says and keeps: statistics, history and telemetry.

They live in tamesu.yaml alone (not in suites): how sure a verdict must be and where runs are
recorded are the project's decisions, the same for every suite.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from tamesu.config.common import ConfigModel, F, PositiveInt

__all__ = ["EarlyStop", "History", "Statistics", "Telemetry"]


class EarlyStop(ConfigModel):
    """Stop a repeated test once its verdict is decided (a sequential probability ratio test)."""

    enabled: bool = F("Stop repeated tests early; off unless set.", True, default=True)
    alpha: float = F(
        "The most a test whose pass rate is at or below threshold − indifference may pass by stopping early.",
        0.05,
        default=0.05,
        gt=0,
        lt=0.5,
    )
    beta: float = F(
        "The most a test whose pass rate is at or above threshold + indifference may fail by stopping early.",
        0.05,
        default=0.05,
        gt=0,
        lt=0.5,
    )
    indifference: float = F(
        "Half-width of the band around pass_threshold where either verdict is acceptable.",
        0.1,
        default=0.1,
        gt=0,
        lt=0.5,
    )


class Statistics(ConfigModel):
    """How repeated runs are summarised and judged."""

    confidence: float = F(
        "Confidence level of the pass-rate intervals in reports and of lower-bound verdicts.",
        0.95,
        default=0.95,
        gt=0.5,
        lt=1,
    )
    threshold_on: Literal["rate", "lower_bound"] = F(
        "What pass_threshold is compared with: the observed pass rate (rate), or the lower end of its "
        "confidence interval (lower_bound: a test passes only when the repeats prove the rate).",
        "lower_bound",
        default="rate",
    )
    pass_k: list[PositiveInt] = F(
        "The k of the pass^k figures reports show for repeated tests (the chance that k tries all pass).",
        [3, 5],
        default_factory=lambda: [3],
    )
    early_stop: EarlyStop | None = F(
        "Stop a test's repeats once its verdict is decided at these error rates.",
        {"alpha": 0.05, "beta": 0.05, "indifference": 0.1},
        default=None,
    )


class History(ConfigModel):
    """The local record of every invocation, read by tamesu history and tamesu diff."""

    enabled: bool = F("Record every invocation.", True, default=True)
    path: str = F(
        "The SQLite database, relative to tamesu.yaml.", ".tamesu/history.db", default=".tamesu/history.db"
    )
    url: str | None = F(
        "A PostgreSQL server for a team's shared history instead of the file: a secret ref to its "
        "URL (env:NAME, file:PATH...), or a postgresql:// URL without a password (the password then "
        "comes from PGPASSWORD or ~/.pgpass).",
        "env:TAMESU_HISTORY_URL",
        default=None,
    )
    flaky_window: PositiveInt = F(
        "How many recent invocations of a test are looked at to call it flaky.", 10, default=10
    )

    @field_validator("url")
    @classmethod
    def _no_password_in_the_file(cls, value: str | None) -> str | None:
        if value is None or not value.startswith(("postgresql://", "postgres://")):
            if value is not None and ":" not in value:
                raise ValueError(
                    "expected a secret ref such as env:TAMESU_HISTORY_URL, or a postgresql:// URL"
                )
            return value
        from urllib.parse import urlsplit

        if urlsplit(value).password is not None:
            raise ValueError(
                "a password in tamesu.yaml would be committed: give the URL as a secret ref "
                "(url: env:TAMESU_HISTORY_URL) or the password through PGPASSWORD"
            )
        return value


class Telemetry(ConfigModel):
    """OpenTelemetry export of runs (a span per run and per turn) to an OTLP/HTTP collector."""

    otlp_endpoint: str | None = F(
        "The collector's OTLP/HTTP traces URL; default OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
        "OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces); nothing is exported when none is set.",
        "http://localhost:4318/v1/traces",
        default=None,
    )
    service_name: str = F("The service.name of the exported spans.", "tamesu", default="tamesu")
