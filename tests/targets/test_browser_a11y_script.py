"""axe-core's script is read from the browser extra only when its checksum is the pinned one; the
a11y step's argument is checked."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tamesu import extras
from tamesu.errors import TargetError
from tamesu.targets.browser.browser_a11y import AXE_SHA512, AXE_VERSION, A11y, a11y_spec, axe_script, describe

pytestmark = pytest.mark.unit


def test_the_browser_extra_installs_the_pinned_axe_core() -> None:
    path = extras.axe_file()
    if path is None:
        pytest.skip(str(extras.axe_missing()))
    assert hashlib.sha512(path.read_bytes()).hexdigest() == AXE_SHA512
    assert axe_script().startswith(f"/*! axe v{AXE_VERSION}")


def test_an_axe_min_js_that_differs_from_the_pinned_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "axe.min.js"
    tampered.write_text("window.axe = 'tampered';")
    monkeypatch.setattr(extras, "axe_file", lambda: tampered)
    with pytest.raises(
        TargetError, match=r"is not axe-core 4\.12\.1 as axe-playwright-python 0\.1\.8 ships it"
    ) as err:
        axe_script()
    assert err.value.kind == "config"


def test_without_the_package_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "axe_file", lambda: None)
    with pytest.raises(TargetError, match=r"pip install 'tamesu\[browser\]'"):
        axe_script()


def test_the_step_takes_an_impact_or_impact_rules_and_ref() -> None:
    assert a11y_spec(None) == a11y_spec({}) == A11y(impact="minor")
    assert a11y_spec("serious") == A11y(impact="serious")
    assert a11y_spec({"impact": "critical", "rules": "image-alt", "ref": "main"}) == A11y(
        "critical", ("image-alt",), "main"
    )


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("severe", "a11y.impact is one of minor, moderate, serious, critical, not 'severe'"),
        (
            {"impact": "serious", "level": "AA"},
            "an a11y step takes { impact, rules, ref } (or just an impact)",
        ),
        ({"rules": [3]}, "a11y.rules is a list of axe rule ids or tags"),
        ({"ref": ""}, "a11y.ref is an element selector"),
    ],
)
def test_a_bad_argument_is_a_config_error(arg: object, message: str) -> None:
    with pytest.raises(TargetError) as err:
        a11y_spec(arg)
    assert str(err.value) == message and err.value.kind == "config"


def test_a_long_list_of_violations_is_bounded() -> None:
    one = {"rule": "image-alt", "impact": "critical", "elements": 1, "targets": ["img"], "help": "Alt text"}
    text = describe([one] * 25, "minor")
    lines = text.splitlines()
    assert lines[0] == "25 accessibility violations at or above minor" and len(lines) == 22
    assert lines[-1] == "- and 5 more"
