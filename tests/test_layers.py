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


FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("the kernel and small leaves", (
        "tamesu.kernel", "tamesu.errors", "tamesu.untrusted", "tamesu.registry", "tamesu.clock",
        "tamesu.durations", "tamesu.limits", "tamesu.stats", "tamesu.sequential", "tamesu.jsonpath",
        "tamesu.spoken", "tamesu.metrics", "tamesu.extras", "tamesu.cycle_collector", "tamesu.engine_cpu",
        "tamesu.version", "tamesu.plugins",
    )),
    ("the contract and our protocol libraries", (
        "tamesu.config", "tamesu.templates", "tamesu.secrets", "tamesu.playbooks",
        "tamesu.fuzz", "tamesu.sip",
    )),
    ("signal code, HTTP, model providers, speech pools", (
        "tamesu.audio", "tamesu.http", "tamesu.http_lane", "tamesu.models", "tamesu.speech_pool", "tamesu.costs",
        "tamesu.hook_call",
    )),
    ("the wire the adapters and voice stages share", ("tamesu.wire",)),
    ("a call's parts", (
        "tamesu.run_spec", "tamesu.targets", "tamesu.voice", "tamesu.assertions", "tamesu.judging",
        "tamesu.users", "tamesu.redteam", "tamesu.remote_agents", "tamesu.calls", "tamesu.environment",
    )),
    ("the run graph", ("tamesu.actors",)),
    ("the runner", ("tamesu.runner",)),
    ("what reads runs", (
        "tamesu.load", "tamesu.reports", "tamesu.history", "tamesu.telemetry", "tamesu.testing",
        "tamesu.generation",
    )),
    ("the faces", ("tamesu.commands", "tamesu.cli", "tamesu.cluster_job", "tamesu.pytest_plugin", "tamesu.__main__", "tamesu")),
]  # fmt: skip
"""Bottom up (ARCHITECTURE.md, Floors): a module imports from its own floor or below. A module belongs
to the floor of the longest prefix that names it."""


def is_wing_settings(module: str) -> bool:
    """A target wing's config model (``tamesu.targets.<wing>.settings``): part of the contract."""
    parts = module.split(".")
    return len(parts) == 4 and parts[:2] == ["tamesu", "targets"] and parts[3] == "settings"


def floor_of(module: str) -> int:
    if is_wing_settings(module):
        return 1
    best = (-1, -1)
    for number, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), number)
    return best[1]


def unit_of(module: str) -> str:
    """The package (or top-level module) a module belongs to: the unit of the cycle check."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def test_every_module_has_a_floor() -> None:
    assert [m for m in MODULES if floor_of(m) < 0] == []


def test_every_import_points_down_or_sideways() -> None:
    upward = [
        f"{i} ({FLOORS[floor_of(i.module)][0]} -> {FLOORS[floor_of(i.target)][0]})"
        for i in IMPORTS
        if i.target in MODULES and floor_of(i.target) > floor_of(i.module)
    ]
    assert upward == []


COMMAND_LINE = _under("tamesu.cli", "tamesu.commands", "tamesu.__main__", "tamesu.cluster_job")
RULES: dict[str, tuple[Callable[[str], bool], Callable[[str], bool]]] = {
    "the kernel imports nothing of tamesu but errors and untrusted text": (
        _under("tamesu.kernel"),
        lambda name: name.startswith("tamesu") and not _under("tamesu.kernel", "tamesu.errors", "tamesu.untrusted")(name),
    ),
    "the SIP stack is a protocol library: it knows nothing else of tamesu": (
        _under("tamesu.sip"),
        lambda name: name.startswith("tamesu") and not _under("tamesu.sip")(name),
    ),
    "the red team's playbooks lie beside the contract: config reads them, they read no config": (
        _under("tamesu.playbooks"),
        lambda name: name.startswith("tamesu") and not _under("tamesu.playbooks", "tamesu.registry", "tamesu.errors", "tamesu.plugins")(name),
    ),
    "the wire knows no target type and no voice stage": (
        _under("tamesu.wire"),
        _under("tamesu.targets", "tamesu.voice"),
    ),
    "the contract names no target adapter, engine or model provider": (
        lambda name: _under("tamesu.config", "tamesu.playbooks")(name) or is_wing_settings(name),
        lambda name: _under("tamesu.audio", "tamesu.models", "tamesu.targets", "tamesu.redteam")(name)
        and not is_wing_settings(name),
    ),
    "a wing's settings import only the contract and below": (
        is_wing_settings,
        lambda name: name in MODULES and floor_of(name) > 1,
    ),
    "assertions read transcripts, not protocols": (
        _under("tamesu.assertions"),
        _under("tamesu.targets", "tamesu.wire", "tamesu.voice"),
    ),
    "the library sits below the command line": (_not(COMMAND_LINE), COMMAND_LINE),
    "only placement and job submission import ray": (
        lambda name: name not in ("tamesu.runner.placement.ray", "tamesu.load.jobs"),
        _under("ray"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("rule", RULES)
def test_a_layer_imports_only_what_lies_below_it(rule: str) -> None:
    source, forbidden = RULES[rule]
    found = [i for i in IMPORTS if source(i.module) and forbidden(i.target)]
    assert [str(i) for i in found] == [], rule


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


def _strong_parts(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected parts of more than one node."""
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

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_of_a_package_import_each_other() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in IMPORTS:
        same = i.module.rpartition(".")[0] == i.target.rpartition(".")[0]
        if i.runtime and same and i.target in MODULES and i.target != i.module:
            graph[i.module].add(i.target)
    assert _strong_parts(graph) == []


def test_no_two_packages_import_each_other() -> None:
    """Across packages, imports inside functions included: a cycle there is a knot Python only hides."""
    graph: dict[str, set[str]] = {unit_of(m): set() for m in MODULES}
    edges: dict[tuple[str, str], str] = {}
    for i in IMPORTS:
        a, b = unit_of(i.module), unit_of(i.target)
        if i.runtime and i.target in MODULES and a != b and b != "tamesu":
            graph[a].add(b)
            edges.setdefault((a, b), str(i))
    knots = _strong_parts(graph)
    assert [[edges[(a, b)] for a in part for b in part if (a, b) in edges] for part in knots] == []


def test_each_protocol_is_declared_once() -> None:
    """One ``Placement``, one ``UserSimulator``: a second copy of a protocol drifts from the first."""
    declared: dict[str, list[str]] = {}
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any("Protocol" in ast.unparse(b) for b in node.bases):
                declared.setdefault(node.name, []).append(module)
    assert {name: where for name, where in declared.items() if len(where) > 1} == {}
    assert "Placement" in declared and "UserSimulator" in declared
