"""Every package has a face: its ``__init__.py`` says what it exports (``__all__``, empty for a
package whose modules are imported by name), and each name it lists is there when imported."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
INITS = sorted(
    p for folder in ("tamesu", "actors", "audio", "schema") for p in (ROOT / folder).rglob("__init__.py")
)


def _exports(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            return [str(v) for v in ast.literal_eval(node.value)]
    return None


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).parent.parts)
    return ".".join(parts if parts[0] == "tamesu" else ["tamesu", *parts])


def test_every_package_lists_its_exports() -> None:
    missing = [str(p.relative_to(ROOT)) for p in INITS if _exports(ast.parse(p.read_text())) is None]
    assert missing == []


def test_every_exported_name_is_there() -> None:
    """Imported, so a name served lazily (a package's ``__getattr__``) is looked up as a user would."""
    absent = {}
    for path in INITS:
        module = importlib.import_module(_module(path))
        gone = [n for n in _exports(ast.parse(path.read_text())) or [] if not hasattr(module, n)]
        if gone:
            absent[_module(path)] = gone
    assert absent == {}
