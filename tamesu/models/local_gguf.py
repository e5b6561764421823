"""``local/PATH.gguf``: a GGUF model file run in this process by llama-cpp-python (``tamesu[local]``).

A ``local/`` reference whose path ends in ``.gguf`` is a chat model; any other ``local/NAME`` is an
offline embedder (``local/minilm``). The path is absolute, ``~``-relative, or relative to the
suite's or the project's folder. Load options follow a ``?``:
``local/models/qwen2.5-1.5b-instruct-q4_k_m.gguf?n_ctx=8192&chat_format=chatml``.

Each file is loaded once per process (per set of load options) and shared by every router; a
llama.cpp context is not thread-safe, so each loaded model carries its own lock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tamesu.errors import MissingExtraError, ModelError
from tamesu.extras import is_installed
from tamesu.models.refs import ModelRef

__all__ = [
    "BUILD_FLAGS",
    "GGUFOptions",
    "LoadedGGUF",
    "gguf_cache",
    "gguf_problem",
    "import_llama_cpp",
    "is_gguf_ref",
    "parse_gguf_name",
    "resolve_gguf_path",
]

BUILD_FLAGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
"""CMAKE_ARGS for a portable CPU build: the default native build can crash on some CPUs (AMX)."""

_REBUILD = (
    "if llama.cpp crashes at the first call, rebuild it portably: "
    f'CMAKE_ARGS="{BUILD_FLAGS}" pip install --force-reinstall --no-cache-dir llama-cpp-python'
)
DEFAULT_N_CTX = 4096


@dataclass(frozen=True)
class GGUFOptions:
    """Load options from the reference's ``?key=value`` tail."""

    chat_format: str | None = None
    """A llama-cpp-python chat format (chatml, llama-3, gemma...) for a file without a chat template."""
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int | None = None
    n_gpu_layers: int = 0

    def llama_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"n_ctx": self.n_ctx, "n_gpu_layers": self.n_gpu_layers, "verbose": False}
        if self.chat_format:
            kw["chat_format"] = self.chat_format
        if self.n_threads:
            kw["n_threads"] = self.n_threads
        return kw


_INT_OPTIONS = ("n_ctx", "n_threads", "n_gpu_layers")


def is_gguf_ref(ref: ModelRef | str) -> bool:
    """A ``local/`` reference to a GGUF file (decided by the suffix, so ``local/minilm`` stays an embedder)."""
    if isinstance(ref, ModelRef):
        provider, name = ref.provider, ref.name
    else:
        provider, _, name = ref.strip().partition("/")
    return provider == "local" and name.partition("?")[0].strip().lower().endswith(".gguf")


def parse_gguf_name(name: str) -> tuple[str, GGUFOptions]:
    """``models/x.gguf?n_ctx=8192`` -> (``models/x.gguf``, options); ModelError on an unknown option."""
    path, _, query = name.partition("?")
    values: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, _, value = item.partition("=")
        if key == "chat_format" and value:
            values[key] = value
        elif key in _INT_OPTIONS and value.strip().isdigit():
            values[key] = int(value)
        else:
            known = ", ".join(("chat_format", *_INT_OPTIONS))
            raise ModelError(f"local/{name}: bad option {item!r} (known: {known}; integers for n_*)")
    return path.strip(), GGUFOptions(**values)


def resolve_gguf_path(path: str, base_dirs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """The file ``path`` names: absolute, ``~``-expanded, else the first of ``base_dirs`` (then the
    working directory) that holds it; ModelError saying where it looked when none does."""
    given = Path(path).expanduser()
    if given.is_absolute():
        if given.is_file():
            return given.resolve()
        raise ModelError(f"no GGUF file at {given}")
    looked = [*(Path(d) for d in base_dirs), Path.cwd()]
    for folder in looked:
        candidate = (folder / given).resolve()
        if candidate.is_file():
            return candidate
    where = ", ".join(dict.fromkeys(str(d.resolve()) for d in looked))
    raise ModelError(f"no GGUF file {path} (looked in {where})")


def import_llama_cpp() -> Any:
    """llama_cpp, or MissingExtraError with the install line (and the portable build flags)."""
    try:
        import llama_cpp
    except ImportError:
        raise MissingExtraError(
            "llama-cpp-python (for local/*.gguf models)", extra="local", how=_REBUILD
        ) from None
    return llama_cpp


def gguf_problem(ref_text: str, base_dirs: Sequence[str | os.PathLike[str]] = ()) -> str | None:
    """One line saying why ``ref_text`` cannot run here (bad option, no file, no llama-cpp-python), else
    None. Cheap: it never imports llama_cpp, so ``tamesu validate`` stays fast."""
    try:
        path, _ = parse_gguf_name(str(ref_text).partition("/")[2])
        resolve_gguf_path(path, base_dirs)
    except ModelError as exc:
        return str(exc)
    if not is_installed("llama_cpp"):
        return f"llama-cpp-python is not installed: pip install 'tamesu[local]' ({_REBUILD})"
    return None


@dataclass
class LoadedGGUF:
    """One loaded model, its lock, and whether it can hold a chat on its own."""

    path: Path
    options: GGUFOptions
    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event | None = None
    """The running call's cancel flag: llama.cpp polls it while it computes and aborts when set."""
    _abort: Any = field(default=None, repr=False)

    def watch_for_cancel(self, llama_cpp: Any) -> None:
        """Hand llama.cpp an abort callback, so a timed-out call stops at once instead of holding the
        lock until ``max_tokens``; without the low-level hook a call simply runs to its end."""
        context = getattr(getattr(self.llama, "_ctx", None), "ctx", None)
        setter = getattr(llama_cpp, "llama_set_abort_callback", None)
        if context is None or setter is None:
            return

        def aborted(_data: Any) -> bool:
            stop = self.stop
            return stop is not None and stop.is_set()

        self._abort = llama_cpp.ggml_abort_callback(aborted)
        setter(context, self._abort, None)

    @property
    def has_chat_template(self) -> bool:
        """True when the file carries a chat template or the reference names a chat format."""
        metadata = getattr(self.llama, "metadata", None) or {}
        return bool(self.options.chat_format or metadata.get("tokenizer.chat_template"))


class GGUFCache:
    """Loaded models of this process by (file, options); concurrent first calls load a file once."""

    def __init__(self) -> None:
        self._models: dict[tuple[Path, GGUFOptions], LoadedGGUF] = {}
        self._loading: dict[tuple[Path, GGUFOptions], threading.Lock] = {}
        self._guard = threading.Lock()
        self.loads = 0
        """How many files this cache has loaded (each load reads the whole file)."""

    def get(self, path: Path, options: GGUFOptions) -> LoadedGGUF:
        key = (path, options)
        with self._guard:
            if key in self._models:
                return self._models[key]
            lock = self._loading.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                if key in self._models:
                    return self._models[key]
            loaded = LoadedGGUF(path, options, self._load(path, options))
            loaded.watch_for_cancel(import_llama_cpp())
            with self._guard:
                self._models[key] = loaded
                self.loads += 1
                self._loading.pop(key, None)
            return loaded

    def _load(self, path: Path, options: GGUFOptions) -> Any:
        llama_cpp = import_llama_cpp()
        try:
            return llama_cpp.Llama(model_path=str(path), **options.llama_kwargs())
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"llama.cpp could not load {path}: {exc}") from None

    def clear(self) -> None:
        """Forget every loaded model (their memory is freed once no call holds them)."""
        with self._guard:
            self._models.clear()


gguf_cache = GGUFCache()
