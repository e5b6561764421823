"""The files of a run directory that must survive a crash, a full disk and a second tamesu.

A JSON-lines file is only ever appended whole lines. A crash or a full disk can still leave a
last line without its newline (a torn line); appending after it would glue the next record onto
it and lose both. So before an append the tail is checked: a torn line that is whole JSON gets
its newline, any other is cut off (and said so), and a write that fails is undone. A run
directory is written by one invocation at a time: ``RunDirLock`` is an advisory lock
(``flock``) held for as long as a run writes there, released by the system when the process ends.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from pathlib import Path

from tamesu.errors import UsageError

__all__ = ["RunDirLock", "append_lines", "mend_tail"]

LOCK_FILE = ".lock"
_BLOCK = 1 << 16


def append_lines(path: str, data: bytes) -> str | None:
    """Append ``data`` (whole lines) to ``path`` and fsync; returns a note when a torn tail was
    mended first. On a failed write the file is cut back to what it held, then the error raised."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size, note = _mend(fd, path)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
        return note
    finally:
        os.close(fd)


def mend_tail(path: str | os.PathLike[str]) -> str | None:
    """Mend a torn last line of ``path`` now (what ``--resume`` does first); a note when there was one."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        return _mend(fd, os.fspath(path))[1]
    finally:
        os.close(fd)


def _mend(fd: int, path: str) -> tuple[int, str | None]:
    """(the file's size once its tail is whole, a note saying what was done to it)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size, None
    start = _line_start(fd, size)
    torn = os.pread(fd, size - start, start) if size - start <= _BLOCK * 16 else b""
    name = os.path.basename(path)
    if torn and _is_json(torn):
        os.pwrite(fd, b"\n", size)
        os.fsync(fd)
        return (
            size + 1,
            f"{name}: its last line had no line end (a write cut short); it was whole and is kept",
        )
    os.ftruncate(fd, start)
    os.fsync(fd)
    return start, (
        f"{name}: cut a torn last line ({size - start} bytes of a record a crash or a full disk left "
        "unfinished); every whole record is kept"
    )


def _line_start(fd: int, size: int) -> int:
    """Where the last line of the file starts (just after the last newline, or 0)."""
    end = size
    while end > 0:
        start = max(0, end - _BLOCK)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def _is_json(line: bytes) -> bool:
    import msgspec

    try:
        msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return True


class RunDirLock:
    """Held while an invocation writes a run directory; a second one is refused with a UsageError."""

    def __init__(self, directory: Path | str) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._fd: int | None = None
        self._closer: weakref.finalize[[int], RunDirLock] | None = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock on this platform: nothing to hold
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise UsageError(
                f"{self.path.parent} is in use by another tamesu{who}: one invocation at a time "
                "writes a run directory; resume it once that one has ended"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)  # a lock nobody released goes with its owner

    def release(self) -> None:
        """Let go (closing the file releases the lock); safe to call twice."""
        if self._fd is not None and self._closer is not None:
            self._fd = None
            self._closer()

    def __enter__(self) -> RunDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
