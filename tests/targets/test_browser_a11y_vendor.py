"""Vendoring axe-core: only the tarball npm published is unpacked; the a11y step's argument is checked."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from tamesu.errors import TargetError
from tamesu.targets.browser_a11y import A11y, a11y_spec, describe, extract_axe

pytestmark = pytest.mark.unit


def tarball(tmp_path: Path, files: dict[str, bytes]) -> tuple[Path, str]:
    """An npm-style tarball and its integrity string."""
    path = tmp_path / "axe-core.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    digest = base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()
    return path, f"sha512-{digest}"


PACKAGE = {"package/axe.min.js": b"window.axe = {};", "package/LICENSE": b"MPL-2.0", "package/x.js": b"no"}


def test_the_published_tarball_yields_axe_min_js_and_its_licence(tmp_path: Path) -> None:
    path, integrity = tarball(tmp_path, PACKAGE)
    dest = tmp_path / "vendor" / "axe.min.js"
    assert extract_axe(path, dest, integrity=integrity) == dest
    assert dest.read_bytes() == b"window.axe = {};"
    assert (dest.parent / "axe-core.LICENSE").read_bytes() == b"MPL-2.0"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["axe-core.LICENSE", "axe.min.js"]


def test_a_tarball_that_differs_from_the_published_one_is_refused(tmp_path: Path) -> None:
    path, _ = tarball(tmp_path, PACKAGE)
    (tmp_path / "other").mkdir()
    _, other = tarball(tmp_path / "other", {"package/axe.min.js": b"window.axe = 'tampered';"})
    dest = tmp_path / "vendor" / "axe.min.js"
    with pytest.raises(TargetError, match=r"is not axe-core 4\.14\.1 as published \(sha512 differs\)"):
        extract_axe(path, dest, integrity=other)
    assert not dest.parent.exists()


def test_a_tarball_without_axe_min_js_is_refused(tmp_path: Path) -> None:
    path, integrity = tarball(tmp_path, {"package/LICENSE": b"MPL-2.0"})
    with pytest.raises(TargetError, match=r"axe-core\.tgz has no package/axe\.min\.js"):
        extract_axe(path, tmp_path / "vendor" / "axe.min.js", integrity=integrity)
    assert not (tmp_path / "vendor").exists()


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
