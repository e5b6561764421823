"""The optional parts of tamesu (``pip install 'tamesu[NAME]'``): what each enables, and whether it is here.

One table for ``tamesu doctor`` and for the checks that tell a suite's author which extra a test
needs. Whether an extra is installed is answered without importing it (``find_spec``), so
``tamesu validate`` stays fast and a broken optional package cannot break it. What a browser
target needs besides Python packages is found here too: the system's Chromium (``chromium_path``)
and the vendored axe-core of a11y steps (``axe_missing``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AXE_FETCH_COMMAND",
    "AXE_FILE",
    "CHROMIUM_PATHS",
    "EXTRAS",
    "Extra",
    "axe_missing",
    "chromium_path",
    "is_installed",
    "missing_modules",
]

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
AXE_FILE = Path(__file__).resolve().parent / "data" / "vendor" / "axe.min.js"
"""axe-core, vendored by ``AXE_FETCH_COMMAND`` (its checksum pinned in ``tamesu.targets.browser_a11y``)."""
AXE_FETCH_COMMAND = "python -m tamesu.targets.browser_a11y"


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
            "hosted and OpenAI-compatible models: simulated users, judges, extraction, model targets",
            ("pydantic_ai", "openai"),
        ),
        Extra(
            "voice",
            "voice and phone calls (voice, twilio; realtime and pipecat in audio mode): speech, lines, VAD",
            ("numpy", "soxr", "webrtcvad"),
        ),
        Extra("embed", "similar_to offline with models.embedder: local/minilm", ("numpy", "tokenizers", "safetensors")),
        Extra("local", "local/PATH.gguf models run in-process by llama.cpp", ("llama_cpp",)),
        Extra("ray", "tamesu run --ray / --address, tamesu load on a cluster, tamesu submit", ("ray",)),
        Extra("realtime", "realtime targets (websockets, also a base dependency)", ("websockets",)),
        Extra("pipecat", "running Pipecat bots, such as examples/pipecat (pipecat targets need no extra)", ("pipecat",)),
        Extra("webrtc", "pipecat targets with transport: webrtc (Pipecat's small WebRTC transport, on aiortc)", ("aiortc",)),
        Extra("a2a", "a2a targets and remote_agents: the official A2A SDK client and server (JSON-RPC, HTTP+JSON, gRPC)", ("a2a", "grpc", "starlette", "sse_starlette", "uvicorn")),
        Extra("mcp", "mcp targets: a prompt with the tools of an MCP server (the official mcp SDK)", ("mcp",)),
        Extra("grpc", "grpc targets: agents serving schema/agent.proto (grpcio and protobuf)", ("grpc", "google.protobuf")),
        Extra("otel", "OpenTelemetry traces of each invocation (telemetry.otlp_endpoint)", ("opentelemetry",)),
        Extra("livekit", "livekit targets (the livekit SDK and livekit-api) and the loopback LiveKit server (aiortc)", ("livekit", "livekit.api", "aiortc")),
        Extra("livekit-agents", "LiveKit Agents (livekit-agents, pinned) for workers tested against the loopback server", ("livekit.agents",)),
        Extra("browser", "browser targets: Playwright driving the system's Chromium (apt-get install chromium)", ("playwright",)),
        Extra("sip", "sip targets (tamesu's own SIP user agent needs no package; trunk_id needs the livekit extra)"),
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


def axe_missing() -> str | None:
    """Why an a11y step cannot run here (axe-core not vendored); None when it can."""
    if AXE_FILE.is_file():
        return None
    return f"axe-core not vendored: run {AXE_FETCH_COMMAND}"
