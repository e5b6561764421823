"""Names that say one thing each: no two modules share a name where a reader would confuse them.

A name may repeat only where the modules mirror each other by design: an assertion family's
config model and its evaluator (``config/assertions/X`` beside ``assertions/X``), the text and the
speech engines of one kind (``audio/tts/X`` beside ``audio/stt/X``), a command and what it runs
(``commands/X``), and the faces every wing or package has (``__init__``, ``settings``, ``adapter``).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"tamesu": ROOT / "tamesu", "actors": ROOT / "actors", "audio": ROOT / "audio"}
EVERY_PACKAGE_HAS = {"__init__", "settings", "adapter"}
MIRRORS = [("tamesu/config/assertions", "tamesu/assertions"), ("audio/tts", "audio/stt")]
"""Folder pairs whose modules of one name are the two halves of one thing."""


def _modules() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for prefix, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            found[path.stem].append(f"{prefix}/{path.relative_to(folder).parent.as_posix()}".rstrip("/."))
    return found


def _allowed(folders: list[str]) -> bool:
    rest = [f for f in folders if f != "tamesu/commands"]
    if len(rest) <= 1:
        return True
    return any(sorted(rest) == sorted(pair) for pair in MIRRORS)


def test_no_two_modules_share_a_name_but_mirrors() -> None:
    confusable = {
        name: sorted(folders)
        for name, folders in _modules().items()
        if len(folders) > 1 and name not in EVERY_PACKAGE_HAS and not _allowed(folders)
    }
    assert confusable == {}


def test_the_rule_sees_a_repeated_name() -> None:
    assert not _allowed(["tamesu/runner", "tamesu/history"])
    assert _allowed(["tamesu/commands", "tamesu/reports"])
    assert _allowed(["tamesu/config/assertions", "tamesu/assertions"])
