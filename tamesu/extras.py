"""The optional parts of tamesu (``pip install 'tamesu[NAME]'``): what each enables, and whether it is here.

One table for ``tamesu doctor`` and for the checks that tell a suite's author which extra a test
needs. Whether an extra is installed is answered without importing it (``find_spec``), so
``tamesu validate`` stays fast and a broken optional package cannot break it. What a browser
target needs besides Python packages is found here too: the system's Chromium (``chromium_path``)
and the axe-core of a11y steps, which the browser extra's axe-playwright-python carries (``axe_file``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tamesu.errors import MissingExtraError

__all__ = [
    "AXE_MODULE",
    "CHROMIUM_PATHS",
    "EXTRAS",
    "MODEL_CLIENTS",
    "Extra",
    "axe_file",
    "axe_missing",
    "chromium_missing",
    "chromium_path",
    "is_installed",
    "missing_modules",
    "model_client_missing",
]

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
AXE_MODULE = "axe_playwright_python"
"""The package (of the browser extra) whose ``axe.min.js`` a11y steps run; its checksum is pinned in
``tamesu.targets.browser.browser_a11y``. Only the file is read: nothing of the package is imported."""


@dataclass(frozen=True)
class Extra:
    """One ``tamesu[NAME]`` extra."""

    name: str
    enables: str
    """What a suite can do once it is installed, in a few words."""
    modules: tuple[str, ...] = ()
    """Import names that must be importable for tamesu to use it (none: nothing tamesu imports)."""

    @property
    def install(self) -> str:
        return f"pip install 'tamesu[{self.name}]'"

    def missing(self) -> list[str]:
        return missing_modules(self.modules)

    @property
    def installed(self) -> bool:
        return not self.missing()


EXTRAS: dict[str, Extra] = {
    extra.name: extra
    for extra in (
        Extra(
            "models",
            "hosted and OpenAI-compatible models: simulated users, judges, model targets",
            ("pydantic_ai", "openai"),
        ),
        Extra(
            "voice",
            "voice and phone calls (voice, twilio, realtime/pipecat audio): speech, VAD",
            ("numpy", "soxr", "webrtcvad"),
        ),
        Extra("embed", "similar_to offline with models.embedder: local/minilm", ("numpy", "tokenizers", "safetensors")),
        Extra("local", "local/PATH.gguf models run in-process by llama.cpp", ("llama_cpp",)),
        Extra("ray", "tamesu run --ray / --address, tamesu load on a cluster, tamesu submit", ("ray",)),
        Extra("realtime", "realtime targets (websockets, also a base dependency)", ("websockets",)),
        Extra("pipecat", "running Pipecat bots like examples/pipecat (pipecat targets need no extra)", ("pipecat",)),
        Extra("webrtc", "pipecat targets with transport: webrtc (Pipecat's WebRTC transport, aiortc)", ("aiortc",)),
        Extra("a2a", "a2a targets and remote_agents: the A2A SDK (JSON-RPC, HTTP+JSON, gRPC)", ("a2a", "grpc", "starlette", "sse_starlette", "uvicorn")),
        Extra("mcp", "mcp targets: a prompt with the tools of an MCP server (the mcp SDK)", ("mcp",)),
        Extra("grpc", "grpc targets: agents serving schema/agent.proto (grpcio and protobuf)", ("grpc", "google.protobuf")),
        Extra("otel", "OpenTelemetry traces of each invocation (telemetry.otlp_endpoint)", ("opentelemetry",)),
        Extra("livekit", "livekit targets (livekit SDK, livekit-api) and a loopback LiveKit server", ("livekit", "livekit.api", "aiortc")),
        Extra("livekit-agents", "LiveKit Agents workers tested against the loopback server", ("livekit.agents",)),
        Extra("browser", "browser targets: Playwright on the system's Chromium; axe-core for a11y", ("playwright",)),
        Extra("sip", "sip targets (tamesu's own SIP stack, no package; trunk_id needs livekit)"),
        Extra("history-server", "a team's shared history on PostgreSQL (history.url, --db postgresql://...)", ("psycopg",)),
    )
}  # fmt: skip
"""Every extra of the distribution but ``all`` and ``dev``; a test keeps it in step with pyproject.toml."""


def is_installed(module: str) -> bool:
    """Whether ``import module`` would find it; never imports it (a broken finder counts as absent)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(modules: tuple[str, ...] | list[str]) -> list[str]:
    return [m for m in modules if not is_installed(m)]


def chromium_path() -> str:
    """The Chromium executable a browser target launches; never a downloaded one."""
    from tamesu.errors import MissingExtraError

    named = os.environ.get("TAMESU_CHROMIUM")
    if named:
        if not os.path.exists(named):
            raise MissingExtraError(f"Chromium (TAMESU_CHROMIUM={named})", debian="chromium")
        return named
    for path in (*CHROMIUM_PATHS, shutil.which("chromium") or ""):
        if path and os.path.exists(path):
            return path
    raise MissingExtraError("Chromium (for browser targets)", debian="chromium")


def chromium_missing() -> MissingExtraError | None:
    """Why a browser target cannot run here (no Chromium); None when it can (``TargetKind.needs``)."""
    from tamesu.errors import MissingExtraError

    try:
        chromium_path()
    except MissingExtraError as exc:
        return exc
    return None


def axe_file() -> Path | None:
    """axe-core's ``axe.min.js`` as installed with the browser extra; None when it is not installed."""
    try:
        spec = importlib.util.find_spec(AXE_MODULE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / "axe.min.js"
        if path.is_file():
            return path
    return None


def axe_missing() -> str | None:
    """Why an a11y step cannot run here (axe-core not installed); None when it can."""
    if axe_file() is not None:
        return None
    return "axe-core is not installed: pip install 'tamesu[browser]' (axe-playwright-python carries it)"


MODEL_CLIENTS = {"openai": "openai", "anthropic": "anthropic", "google": "google.genai"}
"""A provider family -> the SDK pydantic-ai reaches it with (all in the models extra)."""


def model_client_missing(family: str) -> list[str]:
    """The modules a hosted model of this provider family needs that are not installed."""
    return missing_modules(["pydantic_ai", MODEL_CLIENTS.get(family, "openai")])
