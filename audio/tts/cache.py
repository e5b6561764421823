"""The synthesis cache: each (engine, voice, language, text) is synthesised once per process.

A load test says the same scripted lines in hundreds of calls, so the first call pays for the
synthesis and the rest share its ``Audio`` (immutable, so sharing is safe). Memory is an LRU bounded
by bytes; an optional directory keeps WAV files across processes and runs. Concurrent requests for
the same key wait for the one synthesis in flight instead of starting their own, from any thread
or event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path

from .audio import Audio, read_wav_bytes

__all__ = ["DEFAULT_CACHE_BYTES", "CacheKey", "SynthesisCache"]

CacheKey = tuple[str, str, str, str]
"""(engine identity, voice, language, text); empty strings stand for "the engine's default"."""

DEFAULT_CACHE_BYTES = 256 * 1024 * 1024
"""About 100 minutes of 22 kHz speech: every prompt of a large suite."""


class _Abandoned(Exception):
    """The synthesis a waiter relied on was cancelled; the waiter starts its own."""


class SynthesisCache:
    """In-memory LRU of synthesised ``Audio`` bounded by ``max_bytes``, optionally backed by ``directory``."""

    def __init__(self, *, max_bytes: int = DEFAULT_CACHE_BYTES, directory: str | Path | None = None) -> None:
        self.max_bytes = max_bytes
        self.directory = Path(directory) if directory else None
        self._items: OrderedDict[CacheKey, Audio] = OrderedDict()
        self._pending: dict[CacheKey, Future[Audio]] = {}
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: CacheKey) -> Audio | None:
        """The cached audio (memory first, then disk), or None."""
        with self._lock:
            audio = self._items.get(key)
            if audio is not None:
                self._items.move_to_end(key)
                return audio
        audio = self._read_disk(key)
        if audio is not None:
            self._remember(key, audio)
        return audio

    def put(self, key: CacheKey, audio: Audio) -> None:
        self._remember(key, audio)
        self._write_disk(key, audio)

    async def get_or_make(self, key: CacheKey, make: Callable[[], Awaitable[Audio]]) -> tuple[Audio, bool]:
        """The cached audio, or ``make()``'s (stored); the flag says whether it was a hit."""
        while True:
            audio = self.get(key)
            if audio is not None:
                with self._lock:
                    self.hits += 1
                return audio, True
            with self._lock:
                pending = self._pending.get(key)
                owner = pending is None
                if owner:
                    pending = self._pending[key] = Future()
                    self.misses += 1
            assert pending is not None
            if not owner:
                try:
                    audio = await asyncio.wrap_future(pending)
                except _Abandoned:
                    continue
                with self._lock:
                    self.hits += 1
                return audio, True
            try:
                audio = await make()
            except BaseException as exc:
                with self._lock:
                    del self._pending[key]
                failure = exc if isinstance(exc, Exception) else _Abandoned()
                pending.set_exception(failure)
                raise
            self.put(key, audio)
            with self._lock:
                del self._pending[key]
            pending.set_result(audio)
            return audio, False

    def clear(self) -> None:
        """Forget what is in memory (the directory is left alone)."""
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def _remember(self, key: CacheKey, audio: Audio) -> None:
        if audio.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old.nbytes
            self._items[key] = audio
            self.bytes += audio.nbytes
            while self.bytes > self.max_bytes and self._items:
                _, evicted = self._items.popitem(last=False)
                self.bytes -= evicted.nbytes

    def _path(self, key: CacheKey) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256("\x1f".join(key).encode()).hexdigest()
        return self.directory / digest[:2] / f"{digest}.wav"

    def _read_disk(self, key: CacheKey) -> Audio | None:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            return read_wav_bytes(path.read_bytes())
        except (OSError, ValueError):
            return None

    def _write_disk(self, key: CacheKey, audio: Audio) -> None:
        path = self._path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(audio.to_wav())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
