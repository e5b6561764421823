"""Every error tamesu raises, in one place.

    TamesuError
    ├── ConfigError          bad suite / tamesu.yaml: file, line, column, key path, hint (exit 2)
    │   ├── Unrunnable       valid, but this environment cannot run a part of it (a variable unset,
    │   │   │                an extra not installed, no adapter yet): the tests it reaches are errors
    │   │   │                and are not run, the suite's other tests still run (a warning in validate)
    │   │   └── ModelUnavailable  a test needs a model no configuration provides
    │   └── ConfigErrors     several ConfigErrors of one load, reported together
    ├── UsageError           bad command line (exit 2)
    │   └── NoTestSelected   the selection (tags, filter) leaves no test to run (exit 5)
    ├── MissingExtraError    an optional part is not installed; names the extra or Debian package
    ├── TemplateError        a {{name}} that is not available where it is used
    ├── SecretError          a secret ref that cannot be resolved (never carries the value)
    ├── TargetError          the agent misbehaved or was unreachable: an infrastructure error
    │   └── CapacityRefused  it turned the session away as full (websocket 1013, HTTP 429 / 503,
    │                        SIP 503): the scheduler lowers its concurrency and tries again
    ├── HookError            a hook failed: an infrastructure error for the run it guards
    ├── ModelError           a model call failed after every retry and fallback
    ├── ClusterLost          the Ray cluster's head stopped answering mid-invocation: what finished
    │                        is kept, --resume continues (exit 3)
    └── BudgetExceeded       the run's spend cap was reached (exit 4)

A failed assertion is never an exception: it is an AssertionResult value in the run's result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "BudgetExceeded",
    "CapacityRefused",
    "ClusterLost",
    "ConfigError",
    "ConfigErrors",
    "HookError",
    "MissingExtraError",
    "ModelError",
    "ModelUnavailable",
    "NoTestSelected",
    "SecretError",
    "TamesuError",
    "TargetError",
    "TemplateError",
    "Unrunnable",
    "UsageError",
]


class TamesuError(Exception):
    """Base of every error tamesu raises on purpose."""


@dataclass
class ConfigError(TamesuError):
    """One problem in a configuration file, located precisely enough for an editor to jump to it."""

    message: str
    file: str = "<suite>"
    line: int | None = None
    column: int | None = None
    path: str = ""
    hint: str = ""

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def location(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}:{self.column or 1}"

    def __str__(self) -> str:
        where = self.location()
        at = f" at {self.path}" if self.path else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}: {self.message}{at}{hint}"

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass
class Unrunnable(ConfigError):
    """A valid part of a suite that this environment cannot run: ``tamesu validate`` warns (an error
    with ``--strict``); ``tamesu run`` reports the tests it reaches as errors and runs the others."""

    tests: tuple[int, ...] | None = None
    """The tests (indices in ``tests``) that cannot run; None: every test of the suite."""
    language: str | None = None
    """Only those tests' runs in this language cannot run (None: all their runs)."""
    kind: str = "environment"
    """The run's ``error_kind`` for those tests."""

    def reaches(self, index: int, language: str | None = None) -> bool:
        """Whether the run of test ``index`` (in ``language``) is one that cannot run here."""
        if self.language is not None and language != self.language:
            return False
        return self.tests is None or index in self.tests

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "tests": None if self.tests is None else list(self.tests)}


@dataclass
class ModelUnavailable(Unrunnable):
    """A part of a test needs a model that no ``models:`` / provider / key makes available."""

    kind: str = "model"


@dataclass
class ConfigErrors(TamesuError):
    """All the problems found in one load; nothing runs while there is any."""

    errors: list[ConfigError] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


class UsageError(TamesuError):
    """The command line asked for something that cannot be done."""


class NoTestSelected(UsageError):
    """Tags, ``--filter`` or ``--exclude-tags`` left no test to run."""


class MissingExtraError(TamesuError):
    """An optional dependency is missing; the message says how to install it."""

    def __init__(
        self, what: str, *, extra: str | None = None, debian: str | None = None, how: str | None = None
    ) -> None:
        ways = []
        if extra:
            ways.append(f"pip install 'tamesu[{extra}]'")
        if debian:
            ways.append(f"apt-get install {debian}")
        text = " or ".join(ways) or "see tamesu doctor"
        if how:
            text = f"{text}, then {how}" if ways else how
        super().__init__(f"{what} is not installed: {text}")
        self.extra = extra
        self.debian = debian


class TemplateError(TamesuError):
    """A template names something that is not available where it is rendered."""


class SecretError(TamesuError):
    """A secret could not be resolved; the message names the ref, never a value."""


class TargetError(TamesuError):
    """The agent could not be reached or answered in a way tamesu cannot read.

    Always an infrastructure error for the run (outcome ``error``); ``retryable`` says whether the
    scheduler's ``retries`` may try the run again.
    """

    def __init__(self, message: str, *, retryable: bool = True, kind: str = "agent") -> None:
        super().__init__(message)
        self.retryable = retryable
        self.kind = kind

    def reworded(self, message: str) -> TargetError:
        """The same error (its class and everything it carries) saying ``message``: a redacted copy."""
        out = Exception.__new__(type(self))
        out.args = (message,)
        out.__dict__.update(self.__dict__)
        return out


class CapacityRefused(TargetError):
    """The agent turned a session away because it is full, not because anything is wrong.

    The scheduler lowers that target's concurrency for the rest of the invocation and starts the
    run again when a slot frees (not before ``retry_after`` seconds, the agent's ``Retry-After``),
    within the run's own timeout; only then is it an error.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, retryable=True, kind="capacity")
        self.retry_after = retry_after


class HookError(TamesuError):
    """A hook command or request failed."""


class ModelError(TamesuError):
    """A model call failed after every retry and every fallback model (``retryable`` False: it
    cannot work here as configured, a key or the models extra is missing)."""

    def __init__(self, message: str = "", *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class BudgetExceeded(TamesuError):
    """tamesu's own model spend reached a cap in budgets."""


class ClusterLost(TamesuError):
    """The Ray cluster the runs were placed on is gone: its head node stopped answering.

    Raised by the Ray placement for every run in flight (they are not recorded, so ``--resume``
    redoes them); the invocation stops and ``kept_in`` adds what was kept and how to continue.
    """

    def __init__(self, address: str, *, silent_for: float, kept: str = "") -> None:
        self.address = address
        self.silent_for = silent_for
        self.kept = kept
        lost = f"lost the Ray cluster at {address}: its head node has not answered for {silent_for:g}s"
        super().__init__(f"{lost}; {kept}" if kept else lost)

    def kept_in(
        self, run_dir: object, *, finished: int, planned: int | None, command: str, what: str = "runs"
    ) -> ClusterLost:
        """The same loss, saying how many runs finished (durable in ``run_dir``) and how to go on."""
        count = f"{finished} of {planned}" if planned is not None else str(finished)
        kept = (
            f"{count} {what} finished and are kept in {run_dir}; "
            f"continue with tamesu {command} --resume (in-process, or --address a new cluster)"
        )
        return ClusterLost(self.address, silent_for=self.silent_for, kept=kept)
