"""pyproject.toml lists every folder of the package, so no folder silently falls out of the wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
FOLDERS = {"tamesu": "tamesu", "tamesu.actors": "actors", "tamesu.audio": "audio", "tamesu.schema": "schema"}
"""Import name -> the repository folder it installs from (ARCHITECTURE.md, Layout)."""


def package_folders() -> dict[str, Path]:
    """Every folder holding Python code under the mapped roots, by the import name it installs as."""
    found: dict[str, Path] = {}
    for name, folder in FOLDERS.items():
        for source in (ROOT / folder).rglob("*.py"):
            if "__pycache__" in source.parts:
                continue
            parts = source.parent.relative_to(ROOT / folder).parts
            found[".".join([name, *parts])] = source.parent
    return found


def test_every_folder_with_python_code_is_a_listed_package() -> None:
    assert sorted(package_folders()) == sorted(SETUPTOOLS["packages"])


def test_every_package_folder_has_an_init_module() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for path in package_folders().values()
        if not (path / "__init__.py").is_file()
    ]
    assert missing == []


def test_actors_audio_and_schema_install_inside_the_tamesu_namespace() -> None:
    assert SETUPTOOLS["package-dir"] == FOLDERS


def test_no_setup_py_keeps_a_second_list() -> None:
    assert not (ROOT / "setup.py").exists()
