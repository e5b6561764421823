"""Model references (``openai/gpt-4.1-mini``) and the providers that serve them.

A reference is ``provider/model``. Built-in providers: openai, anthropic, googleai, vertexai,
ollama, and any OpenAI-compatible server declared in tamesu.yaml under ``providers:`` (vLLM,
llama.cpp server, LM Studio). Each provider knows where its key comes from, so a missing key is
reported as one line naming the environment variable or setting, before anything runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tamesu.errors import ModelError
from tamesu.registry import Registry

__all__ = [
    "ModelRef",
    "ProviderInfo",
    "ProviderSettings",
    "missing_credentials",
    "parse_ref",
    "provider_infos",
]


@dataclass(frozen=True)
class ModelRef:
    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def parse_ref(text: str) -> ModelRef:
    provider, sep, name = text.strip().partition("/")
    if not sep or not provider or not name:
        raise ModelError(f"model reference {text!r} is not provider/model (such as openai/gpt-4.1-mini)")
    return ModelRef(provider, name)


@dataclass(frozen=True)
class ProviderInfo:
    """How a provider is reached: the SDK family, where the key and base URL come from."""

    name: str
    family: str
    """openai (chat completions wire format), anthropic or google."""
    key_env: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] = ()
    default_base_url: str | None = None
    needs_key: bool = True
    default_embedder: str | None = None
    extra: str = "models"


provider_infos: Registry[ProviderInfo] = Registry("model provider")
for _info in (
    ProviderInfo(
        "openai",
        "openai",
        ("OPENAI_API_KEY",),
        ("OPENAI_BASE_URL",),
        default_embedder="openai/text-embedding-3-small",
    ),
    ProviderInfo("anthropic", "anthropic", ("ANTHROPIC_API_KEY",), ("ANTHROPIC_BASE_URL",)),
    ProviderInfo(
        "googleai",
        "google",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        default_embedder="googleai/text-embedding-004",
    ),
    ProviderInfo("vertexai", "google", (), needs_key=False, default_embedder="vertexai/text-embedding-004"),
    ProviderInfo(
        "ollama",
        "openai",
        (),
        ("OLLAMA_BASE_URL",),
        "http://localhost:11434/v1",
        needs_key=False,
        default_embedder="ollama/nomic-embed-text",
    ),
):
    provider_infos.add(_info.name, _info)


@dataclass
class ProviderSettings:
    """What one call needs to reach a provider, resolved from tamesu.yaml, secrets and the environment."""

    info: ProviderInfo
    api_key: str | None = None
    base_url: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def custom_provider(name: str, base_url: str, api_key: str | None = None) -> ProviderSettings:
    """An OpenAI-compatible server declared in tamesu.yaml ``providers:``."""
    info = ProviderInfo(name, "openai", needs_key=False, default_base_url=base_url)
    return ProviderSettings(info, api_key=api_key or "not-needed", base_url=base_url)


def resolve_settings(
    ref: ModelRef,
    *,
    credentials: dict[str, str] | None = None,
    custom: dict[str, ProviderSettings] | None = None,
    environ: dict[str, str] | None = None,
) -> ProviderSettings:
    """The key and base URL for ``ref``; ``credentials`` (models.credentials, rendered) win over env."""
    env = os.environ if environ is None else environ
    if custom and ref.provider in custom:
        return custom[ref.provider]
    if ref.provider not in provider_infos:
        known = ", ".join([*provider_infos.names(), *(custom or {})])
        raise ModelError(f"unknown model provider {ref.provider!r} in {ref} (known: {known})")
    info = provider_infos.get(ref.provider)
    key = (credentials or {}).get(ref.provider) or next((env[k] for k in info.key_env if env.get(k)), None)
    base = next((env[k] for k in info.base_url_env if env.get(k)), None) or info.default_base_url
    return ProviderSettings(info, api_key=key, base_url=base)


def missing_credentials(
    ref_text: str,
    *,
    credentials: dict[str, str] | None = None,
    custom: dict[str, ProviderSettings] | None = None,
    environ: dict[str, str] | None = None,
) -> str | None:
    """One line saying what to set when ``ref_text`` cannot be called, else None."""
    try:
        ref = parse_ref(ref_text)
        settings = resolve_settings(ref, credentials=credentials, custom=custom, environ=environ)
    except ModelError as exc:
        return str(exc)
    info = settings.info
    if info.needs_key and not settings.api_key:
        names = " or ".join(info.key_env)
        return f"{ref} needs an API key: set {names} or models.credentials.{ref.provider}"
    return None
