"""Where a browser run's screenshots, recording and trace go: one folder per run id, whatever the id
holds (a test may be named ``a/b``, ``a b``, ``a?b`` or ``..``), always under ``browser/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.targets.browser.adapter import run_folder

pytestmark = pytest.mark.unit


def test_run_ids_that_differ_only_in_odd_characters_get_their_own_folders(tmp_path: Path) -> None:
    ids = ["a/b", "a b", "a?b", "a_b", "..", ".", "", "../../x"]
    folders = [run_folder(tmp_path, i) for i in ids]
    assert len(set(folders)) == len(ids)
    for folder in folders:
        assert folder.parent == tmp_path / "browser"
        assert folder.resolve().parent == (tmp_path / "browser").resolve()
