"""What each target type can send of a script step, and the check that a suite asks no more.

A script step may carry words (``say``), structured ``data``, ``files`` and keypad digits
(``dtmf``). A target type sends only what its protocol has room for, per mode: its registration's
``parts`` (``tamesu.config.kinds``). ``wait_for`` sends nothing and works everywhere; data goes as
an a2a data part, as a grpc UserTurn's data, or as its JSON text on a line after the words; files as
a2a file parts; dtmf as the protocol's keypad message or as in-band tones. Anything else would be dropped on the way (or leave
an empty message), so ``tamesu validate`` names the step and the type, and the adapters refuse such
a turn the same way (``tamesu.targets.base.turn_text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tamesu.config.kinds import target_kinds
from tamesu.config.yamlload import KeyPath, YamlDoc, format_path
from tamesu.errors import ConfigError

__all__ = ["PART_WORDS", "carriers", "check_script_parts", "script_parts"]

PART_WORDS = {"data": "structured data", "files": "files", "dtmf": "keypad digits (dtmf)", "say": "words"}


def script_parts(target_type: str, mode: str | None = None) -> frozenset[str] | None:
    """What ``target_type`` sends in ``mode`` (its only mode when it has one); None: not known here."""
    modes = _modes(target_type)
    if not modes:
        return None
    if mode in modes:
        return modes[mode]
    return next(iter(modes.values())) if len(modes) == 1 else modes.get("text")


def _modes(target_type: str) -> dict[str, frozenset[str]]:
    return dict(target_kinds.get(target_type).parts) if target_type in target_kinds else {}


def carriers(part: str) -> str:
    """The target types (and modes) that send ``part``, for hints."""
    out = []
    for kind in target_kinds.names():
        modes = _modes(kind)
        having = [m for m, parts in modes.items() if part in parts]
        if having:
            out.append(kind if len(having) == len(modes) else f"{kind} ({', '.join(having)})")
    return ", ".join(out)


def check_script_parts(doc: YamlDoc) -> list[ConfigError]:
    """A script step part the test's target type cannot send, at the step's key."""
    data: dict[str, Any] = doc.data if isinstance(doc.data, dict) else {}
    targets = data.get("targets")
    tests = data.get("tests")
    errors: list[ConfigError] = []
    for i, test in enumerate(tests if isinstance(tests, list) else []):
        if not isinstance(test, dict) or test.get("counterpart") is not None:
            continue
        name = test.get("target")
        target = targets.get(name) if isinstance(targets, dict) and isinstance(name, str) else None
        scenario = test.get("scenario")
        steps = scenario.get("script") if isinstance(scenario, dict) else None
        if not isinstance(name, str) or not isinstance(target, dict) or not isinstance(steps, list):
            continue
        kind = str(target.get("type"))
        mode = test.get("mode") or target.get("mode")
        parts = script_parts(kind, mode if isinstance(mode, str) else None)
        if parts is None:
            continue
        for k, step in enumerate(steps):
            for part in _parts(step):
                if part not in parts:
                    path: KeyPath = ("tests", i, "scenario", "script", k, part)
                    errors.append(_error(doc, path, name, kind, mode, part))
    return errors


def _parts(step: Any) -> list[str]:
    return [k for k in ("say", "data", "files", "dtmf") if isinstance(step, Mapping) and k in step]


def _error(doc: YamlDoc, path: KeyPath, name: str, kind: str, mode: Any, part: str) -> ConfigError:
    line, col = doc.positions.key(path)
    in_mode = f" in {mode or 'text'} mode" if len(_modes(kind)) > 1 else ""
    return ConfigError(
        f"target '{name}' is a {kind} target{in_mode}, which cannot send {PART_WORDS[part]} in a script step",
        file=doc.file,
        line=line,
        column=col,
        path=format_path(path),
        hint=f"{part} is sent by {carriers(part)} targets",
    )
