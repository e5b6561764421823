"""A response cache on disk keyed by the whole request, so an unchanged rerun costs nothing.

One JSON file per request under the cache folder (``--cache [DIR]``, default
``.tamesu-cache/models``); writes go through a temporary file and a rename, so concurrent runs and
an interrupted write never leave a half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ResponseCache", "request_key"]


def request_key(request: dict[str, Any]) -> str:
    blob = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, request: dict[str, Any]) -> dict[str, Any] | None:
        path = self._path(request_key(request))
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return data
        except (OSError, ValueError):
            return None

    def put(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        path = self._path(request_key(request))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(response, f)
        os.replace(tmp, path)
