"""``custom``: assertions a project writes in Python and names in its suites.

A project registers them with the decorator::

    from tamesu.assertions import AssertionResult, custom_assertion

    @custom_assertion("no_competitor_names")
    def no_competitor_names(spec, ctx):
        bad = [w for w in ("acme", "globex") if w in ctx.transcript.agent_text().lower()]
        return AssertionResult.of(not bad, expected="no competitor names", actual=bad)

and tamesu imports, once per process, the modules that hold them:

- every ``*.py`` file in a ``tamesu_assertions/`` folder beside tamesu.yaml (or beside the suite
  when the project has no tamesu.yaml), in name order;
- the modules named in ``TAMESU_PLUGINS`` (comma-separated import names or paths to .py files);
- the entry points of the group ``tamesu.assertions`` of installed packages (a module, or a
  function registered under the entry point's name).

A custom assertion is called as every evaluator is, ``fn(spec, ctx)`` (``spec`` is its name, the run
is ``ctx.transcript``), sync or async, and returns an ``AssertionResult``, a bool, or
``(bool, message)``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import threading
from pathlib import Path
from typing import Any

from tamesu.assertions.evaluation import AssertionContext, assertion, custom_assertions, verdict
from tamesu.kernel.outcome import AssertionResult

__all__ = ["PLUGIN_DIR", "custom", "find_project_dir", "load_custom_assertions"]

PLUGIN_DIR = "tamesu_assertions"
ENTRY_POINT_GROUP = "tamesu.assertions"

_lock = threading.RLock()
_loaded: set[str] = set()


def find_project_dir(start: Path) -> Path | None:
    """The folder holding tamesu.yaml at ``start`` or above it."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "tamesu.yaml").is_file():
            return folder
    return None


def _import_file(path: Path) -> None:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"tamesu_plugins_{digest}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def _once(key: str, load: Any) -> None:
    """Run ``load`` the first time ``key`` is seen (again after a failure, so a fixed file loads)."""
    with _lock:
        if key in _loaded:
            return
        load()
        _loaded.add(key)


def _entry_points() -> None:
    """Installed custom assertions (``tamesu.plugins``): a callable under ``tamesu.assertions``; a
    module there registers assertion kinds instead (``tamesu.config.kinds``) and is left alone."""
    from tamesu.plugins import load_group

    for name, obj in load_group(ENTRY_POINT_GROUP, convert=_assertion_of):
        if obj is not None and name not in custom_assertions:
            custom_assertions.add(name, obj)


def _assertion_of(obj: Any) -> Any:
    if inspect.ismodule(obj):
        return None
    if not callable(obj):
        raise ValueError(f"it names a {type(obj).__name__}, not a function of (spec, ctx)")
    return obj


def load_custom_assertions(*, project_dir: Path | None = None, suite_dir: Path | None = None) -> list[str]:
    """Import every place custom assertions may live (each once); returns the registered names.

    An import that fails raises, naming the file or module, so the user sees their own bug.
    """
    folder = project_dir or (find_project_dir(suite_dir) if suite_dir else None) or suite_dir
    if folder is not None:
        plugin_dir = Path(folder) / PLUGIN_DIR
        if plugin_dir.is_dir():
            for path in sorted(plugin_dir.glob("*.py")):
                _once(f"file:{path.resolve()}", lambda p=path.resolve(): _import_file(p))
    for item in filter(None, (s.strip() for s in os.environ.get("TAMESU_PLUGINS", "").split(","))):
        if item.endswith(".py") or os.sep in item:
            path = Path(item).expanduser().resolve()
            _once(f"file:{path}", lambda p=path: _import_file(p))
        else:
            _once(f"module:{item}", lambda m=item: importlib.import_module(m))
    _once("entry_points", _entry_points)
    return custom_assertions.names()


@assertion("custom", spec=str)
async def custom(spec: str, ctx: AssertionContext) -> AssertionResult:
    """Run the project's assertion registered under this name."""
    name = spec
    try:
        names = load_custom_assertions(project_dir=ctx.project_dir, suite_dir=ctx.suite_dir)
    except Exception as exc:
        return AssertionResult.failed_to_evaluate(
            f"cannot load custom assertions: {type(exc).__name__}: {exc}"
        )
    if name not in custom_assertions:
        known = ", ".join(names) or f"none (put them in {PLUGIN_DIR}/ beside tamesu.yaml)"
        return AssertionResult.failed_to_evaluate(f"unknown custom assertion {name!r}; registered: {known}")
    value = custom_assertions.get(name)(spec, ctx)
    if inspect.isawaitable(value):
        value = await value
    result = verdict(value)
    if result.expected is None:
        result.expected = name
    return result
