"""The layers point down: each rule of the README's architecture, read from the source's imports.

Every import counts: at the top of a module, inside a function, and under ``TYPE_CHECKING`` (a
type names a layer as much as a call does). No rule lists exceptions; a module that needs one
belongs in another layer.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"tamesu": ROOT / "tamesu", "tamesu.actors": ROOT / "actors", "tamesu.audio": ROOT / "audio"}


@dataclass(frozen=True)
class Import:
    module: str
    """The importing module."""
    target: str
    """The module imported (``from a.b import c`` imports ``a.b.c`` when that is a module, else ``a.b``)."""
    line: int
    runtime: bool
    """False under ``if TYPE_CHECKING:``."""
    name: str = ""
    """The name taken by ``from ... import name``."""

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}{f' ({self.name})' if self.name else ''}"


def _modules() -> dict[str, Path]:
    found = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


MODULES = _modules()
TREES = {module: ast.parse(path.read_text(encoding="utf-8")) for module, path in MODULES.items()}
"""Parsed once, at collection, before any test starts a thread: CPython 3.11's AST conversion keeps
its recursion depth in shared state, and ``ast.parse`` beside another thread's parse can fail with
"AST constructor recursion depth mismatch" (a SystemError seen once in a full run)."""


def _imports() -> list[Import]:
    out = []
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        out.extend(_walk(TREES[module], module, package, runtime=True))
    return out


def _walk(node: ast.AST, module: str, package: str, *, runtime: bool) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        inner = runtime and not (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield Import(module, alias.name, child.lineno, runtime)
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                parent = package.split(".")[: len(package.split(".")) - child.level + 1]
                base = ".".join([*parent, *([child.module] if child.module else [])])
            for alias in child.names:
                full = f"{base}.{alias.name}"
                yield Import(module, full if full in MODULES else base, child.lineno, runtime, alias.name)
        else:
            yield from _walk(child, module, package, runtime=inner)


IMPORTS = _imports()


def _under(*prefixes: str) -> Callable[[str], bool]:
    """Names that are one of ``prefixes`` or lie inside one."""
    return lambda name: any(name == p or name.startswith(p + ".") for p in prefixes)


def _not(test: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda name: not test(name)


COMMAND_LINE = _under("tamesu.cli", "tamesu.commands", "tamesu.__main__")
RULES: dict[str, tuple[Callable[[str], bool], Callable[[str], bool]]] = {
    "the kernel imports nothing of tamesu but errors and untrusted text": (
        _under("tamesu.kernel"),
        lambda name: name.startswith("tamesu") and not _under("tamesu.kernel", "tamesu.errors", "tamesu.untrusted")(name),
    ),
    "config (the contract) knows nothing of running": (
        _under("tamesu.config"),
        _under("tamesu.runner", "tamesu.actors", "tamesu.targets", "tamesu.load", "tamesu.voice",
               "tamesu.models.router", "tamesu.reports", "tamesu.simulator"),
    ),
    "audio knows no suites, runs or graphs": (
        _under("tamesu.audio"),
        _under("tamesu.config", "tamesu.runner", "tamesu.actors", "tamesu.targets", "tamesu.voice", "tamesu.load"),
    ),
    "adapters and the call pipeline know no scheduler": (
        _under("tamesu.targets", "tamesu.voice"),
        _under("tamesu.runner", "tamesu.load", "tamesu.actors"),
    ),
    "assertions read transcripts, not protocols or runs": (
        _under("tamesu.assertions"),
        _under("tamesu.targets", "tamesu.runner", "tamesu.actors", "tamesu.voice", "tamesu.load"),
    ),
    "reports read results": (
        _under("tamesu.reports"),
        _under("tamesu.runner.scheduler", "tamesu.runner.attempt", "tamesu.runner.api", "tamesu.actors",
               "tamesu.targets", "tamesu.load.driver"),
    ),
    "the SIP stack is a protocol library: it knows nothing else of tamesu": (
        _under("tamesu.sip"),
        lambda name: name.startswith("tamesu") and not _under("tamesu.sip")(name),
    ),
    "the library sits below the command line": (_not(COMMAND_LINE), COMMAND_LINE),
    "only placement and job submission import ray": (
        lambda name: name not in ("tamesu.actors.placement.ray", "tamesu.load.jobs"),
        _under("ray"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("rule", RULES)
def test_a_layer_imports_only_what_lies_below_it(rule: str) -> None:
    source, forbidden = RULES[rule]
    assert [str(i) for i in IMPORTS if source(i.module) and forbidden(i.target)] == [], rule


def test_the_rules_see_imports_in_functions_and_for_types() -> None:
    kinds = {(i.runtime, i.module) for i in IMPORTS if i.target == "tamesu.kernel.transcript"}
    assert any(not runtime for runtime, _ in kinds), "no import under TYPE_CHECKING was seen"
    nested = [i for i in IMPORTS if i.module == "tamesu.cli" and i.target.startswith("tamesu.commands")]
    assert nested, "no import inside a function was seen"


def test_no_module_takes_a_private_name_from_another() -> None:
    private = [
        str(i)
        for i in IMPORTS
        if i.name.startswith("_") and not i.name.startswith("__") and i.target.startswith("tamesu")
    ]
    assert private == []


def _cycles() -> list[list[str]]:
    """Runtime import cycles among the modules of one package (Tarjan's strongly connected parts)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in IMPORTS:
        same = i.module.rpartition(".")[0] == i.target.rpartition(".")[0]
        if i.runtime and same and i.target in MODULES and i.target != i.module:
            graph[i.module].add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_of_a_package_import_each_other() -> None:
    assert _cycles() == []


def test_each_protocol_is_declared_once() -> None:
    """One ``Placement``, one ``UserSimulator``: a second copy of a protocol drifts from the first."""
    declared: dict[str, list[str]] = {}
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any("Protocol" in ast.unparse(b) for b in node.bases):
                declared.setdefault(node.name, []).append(module)
    assert {name: where for name, where in declared.items() if len(where) > 1} == {}
    assert "Placement" in declared and "UserSimulator" in declared
