from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import tamesu.assertions as package
from tamesu.assertions import BUILTIN, assertions
from tamesu.config.assertion import ASSERTION_KINDS

pytestmark = pytest.mark.unit


def test_importing_the_package_loads_no_evaluator() -> None:
    code = (
        "import sys, tamesu.assertions\n"
        "heavy = [m for m in ('httpx', 'jsonschema', 'aiohttp', 'tamesu.assertions.state', 'tamesu.assertions.text')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_builtin_is_a_suite_key_and_resolves() -> None:
    assert set(BUILTIN) <= set(ASSERTION_KINDS)
    for kind in BUILTIN:
        evaluator = assertions.get(kind)
        assert callable(evaluator)
        assert list(inspect.signature(evaluator).parameters) == ["spec", "ctx"]


def test_public_names() -> None:
    for name in package.__all__:
        assert hasattr(package, name)
    assert {"AssertionResult", "AssertionContext", "assertion", "custom_assertion", "evaluate"} <= set(
        package.__all__
    )
