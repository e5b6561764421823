"""Building pydantic-ai models for a provider, with every SDK-level retry turned off.

pydantic-ai speaks the providers' wire protocols (OpenAI chat completions, Anthropic messages,
Gemini / Vertex), with tool calling and structured output; tamesu's retry and fallback policy in
``router.py`` is the only one in force, so ``retry.attempts`` means exactly what it says.
"""

from __future__ import annotations

from typing import Any

from tamesu.errors import MissingExtraError, ModelError
from tamesu.models.refs import ModelRef, ProviderSettings

__all__ = ["build_chat_model", "build_embedding_model"]


def _openai_client(settings: ProviderSettings, timeout: float) -> Any:
    try:
        from openai import AsyncOpenAI
    except ImportError:
        raise MissingExtraError("the OpenAI client", extra="models") from None
    return AsyncOpenAI(
        api_key=settings.api_key or "not-needed", base_url=settings.base_url, max_retries=0, timeout=timeout
    )


def build_chat_model(ref: ModelRef, settings: ProviderSettings, *, timeout: float = 60.0) -> Any:
    """A pydantic-ai Model for ``ref``; imported lazily (pydantic-ai takes a second to import)."""
    family = settings.info.family
    try:
        if family == "openai":
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            return OpenAIChatModel(
                ref.name, provider=OpenAIProvider(openai_client=_openai_client(settings, timeout))
            )
        if family == "anthropic":
            from anthropic import AsyncAnthropic
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            client = AsyncAnthropic(
                api_key=settings.api_key, base_url=settings.base_url, max_retries=0, timeout=timeout
            )
            return AnthropicModel(ref.name, provider=AnthropicProvider(anthropic_client=client))
        if family == "google":
            from google.genai import Client
            from google.genai.types import HttpOptions, HttpRetryOptions
            from pydantic_ai.models.google import GoogleModel
            from pydantic_ai.providers.google import GoogleProvider

            options = HttpOptions(retry_options=HttpRetryOptions(attempts=1), timeout=int(timeout * 1000))
            if settings.base_url:
                options.base_url = settings.base_url
            if ref.provider == "vertexai":
                google = Client(vertexai=True, http_options=options)
            else:
                google = Client(api_key=settings.api_key, http_options=options)
            return GoogleModel(ref.name, provider=GoogleProvider(client=google))
    except ImportError as exc:
        raise MissingExtraError(f"the {ref.provider} model client ({exc.name})", extra="models") from None
    raise ModelError(f"provider {ref.provider} has no chat backend")


def build_embedding_model(ref: ModelRef, settings: ProviderSettings, *, timeout: float = 60.0) -> Any:
    try:
        if settings.info.family == "openai":
            from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
            from pydantic_ai.providers.openai import OpenAIProvider

            provider = OpenAIProvider(openai_client=_openai_client(settings, timeout))
            return OpenAIEmbeddingModel(ref.name, provider=provider)
        if settings.info.family == "google":
            from google.genai import Client
            from pydantic_ai.embeddings.google import GoogleEmbeddingModel
            from pydantic_ai.providers.google import GoogleProvider

            client = Client(vertexai=True) if ref.provider == "vertexai" else Client(api_key=settings.api_key)
            return GoogleEmbeddingModel(ref.name, provider=GoogleProvider(client=client))
    except ImportError as exc:
        raise MissingExtraError(f"the {ref.provider} embedding client ({exc.name})", extra="models") from None
    raise ModelError(f"provider {ref.provider} offers no embedding models; set models.embedder")
