"""The CLI commands, one module each (``add_arguments(parser)`` and ``run(args) -> int``); what a
job submitted to a Ray cluster runs there is ``tamesu.cluster_job``.

This package stays light on purpose: ``tamesu --help`` and ``tamesu validate`` import it, so only
the standard library is imported here, and each command imports what it needs inside ``run``.
Importing ``tamesu.commands.list`` binds the name ``list`` in this module, so code here never
calls the builtin by that name.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

from tamesu.untrusted import paint, printable

__all__ = [
    "COMMANDS",
    "COMMAND_MODULES",
    "EXIT_BUDGET",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_INFRA",
    "EXIT_NO_TESTS",
    "EXIT_OK",
    "add_local_run_arguments",
    "add_selection_arguments",
    "fraction",
    "integer",
    "positive_int",
    "positive_number",
    "print_config_errors",
    "processes",
    "split_list",
    "use_color",
]

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_INFRA, EXIT_BUDGET, EXIT_NO_TESTS = 0, 1, 2, 3, 4, 5

COMMANDS: dict[str, str] = {
    "run": "run suites against their targets",
    "validate": "check suites and tamesu.yaml without running anything",
    "list": "list the tests a run would start (after cases and languages)",
    "schema": "print the JSON Schema of suites (or of tamesu.yaml)",
    "init": "create tamesu.yaml and an example suite",
    "doctor": "show what is installed and what is missing",
    "load": "load test suites: many simultaneous calls, each graded, with gates",
    "submit": "send suites to a Ray cluster as a Ray Job and fetch the results",
    "jobs": "list, follow, fetch and stop the runs submitted to a Ray cluster",
    "report": "write a run as one self-contained HTML page (default: the latest run)",
    "show": "print one run's transcript, assertions and captures",
    "history": "list the invocations recorded in the project's history",
    "diff": "compare two invocations: regressions, fixes, latency, cost, flaky tests",
    "playbooks": "list the red-team playbooks with their attacks, tactics and detectors",
    "generate": "draft tests from the agent's description with the scenario_generator model",
    "import": "make recorded calls replay tests: tamesu import calls PATH... --into SUITE --target NAME",
    "serve": "run a loopback server for agents under test (tamesu serve livekit, like livekit-server --dev)",
}
"""Command -> one line of help; each lives in ``tamesu.commands.<name>`` (imported on use), or in
the module ``COMMAND_MODULES`` names where the command is a Python keyword."""
COMMAND_MODULES: dict[str, str] = {"import": "import_calls"}


def use_color(choice: str | None, stream: TextIO | None = None) -> bool:
    """``--color``: always and never win; auto means a terminal and no NO_COLOR."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def split_list(values: Iterable[str] | None) -> list[str]:
    """Options given several times or comma separated (``--tags a,b --tags c``)."""
    out: list[str] = []
    for value in values or ():
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """The test selection options shared by run and list."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help="suite files or folders (default: .)")
    parser.add_argument("--tags", action="append", metavar="TAGS", help="only tests with one of these tags")
    parser.add_argument(
        "--exclude-tags", action="append", metavar="TAGS", help="leave out tests with one of these tags"
    )
    parser.add_argument(
        "--filter",
        metavar="TEXT",
        help="only tests whose id contains TEXT (any case; with * a glob of the whole id; /REGEX/ a regex)",
    )


def integer(text: str) -> int:
    """An option's whole number (``--seed``), with a message that says so."""
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """A count of 1 or more (``-j``, ``--repeat``, ``--calls``)."""
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
    return value


def processes(text: str) -> int | str:
    """``--processes``: a count of 1 or more, or ``auto`` (the cores the agent leaves free)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of 1 or more or auto, got {text!r}"
        ) from None


def add_local_run_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--processes`` and ``--stt-engine``: where ``tamesu run`` and ``tamesu load`` run their
    ``what`` on this machine, and which engine hears the agent."""
    parser.add_argument(
        "--processes",
        type=processes,
        metavar="N|auto",
        help=f"worker processes on this machine that run the {what} (auto: the cores the agent "
        "leaves free; default 1: all in this process)",
    )
    parser.add_argument(
        "--stt-engine",
        metavar="NAME",
        help="the STT engine that hears every call's agent: whisper, whisper-base, or openai "
        "(OPENAI_API_KEY, OPENAI_BASE_URL); default: chosen per line and language",
    )


def _float(text: str, what: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """A number above 0 (``--rate``, ``--spike-multiplier``)."""
    value = _float(text, "a number above 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A share between 0 and 1 (``--min-pass-rate``)."""
    value = _float(text, "a number between 0 and 1")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def print_config_errors(errors: Sequence[object], *, color: bool, stream: TextIO | None = None) -> None:
    """``file:line:col: message at path (hint)``, one line each, the location in bold."""
    out = stream or sys.stdout
    for e in errors:
        where, _, rest = str(e).partition(": ")
        out.write(
            f"{paint(where, 'bold', color)}: {paint(rest, 'red', color)}\n"
            if color
            else f"{printable(str(e))}\n"
        )
