"""What this machine can run of a valid suite: the checks loading adds to the contract's.

The contract (``tamesu.config``) says what a suite means, the same on every machine. Whether this
one can run it (a variable set, a secret's file there, an extra, a speech engine that hears the
language, a model that can be called) is asked here, of the registries and engines, and the faces
that load suites to run them pass ``MACHINE_CHECKS`` to the loader. An ``Unrunnable`` problem
fails only the tests it reaches; the others run.
"""

from __future__ import annotations

from tamesu.config.checks import SuiteCheck, SuiteFile
from tamesu.environment.audio_checks import check_voice
from tamesu.environment.models import check_models
from tamesu.environment.unrunnable import check_environment, unsupported_step
from tamesu.errors import ConfigError

__all__ = ["MACHINE_CHECKS", "check_environment", "check_machine", "unsupported_step"]


def check_machine(file: SuiteFile) -> list[ConfigError]:
    """What this environment cannot run (``check_environment``) of the suite file."""
    return list(
        check_environment(file.data, file=file.doc.file, positions=file.doc.positions, suite_dir=file.suite_dir,
                          project=file.project, project_dir=file.project_dir)
    )  # fmt: skip


MACHINE_CHECKS: tuple[SuiteCheck, ...] = (check_voice, check_models, check_machine)
"""Every check of this machine, in the order loading runs them."""
