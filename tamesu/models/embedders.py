"""Embedding models for ``similar_to``: a provider's embedding API, or an offline model.

Offline embedders are registered by name under the ``local/`` provider (``local/minilm``) and load
their weights from an installed package, never from a hub.
"""

from __future__ import annotations

from typing import Any

from tamesu.errors import ModelError
from tamesu.models.refs import ModelRef, ProviderSettings
from tamesu.registry import Registry

__all__ = ["build_embedder", "local_embedders"]

local_embedders: Registry[Any] = Registry("offline embedder")
local_embedders.add("minilm", "tamesu.models.local_embedder:MiniLMEmbedder")


def build_embedder(ref: ModelRef, settings: ProviderSettings | None, *, timeout: float = 60.0) -> Any:
    """An object with ``async embed(texts, input_type=...)`` returning ``.embeddings``."""
    if ref.provider == "local":
        if ref.name not in local_embedders:
            known = ", ".join(f"local/{n}" for n in local_embedders.names()) or "none installed"
            raise ModelError(f"unknown offline embedder {ref} (known: {known})")
        return local_embedders.get(ref.name)()
    if settings is None:
        raise ModelError(f"no settings for {ref}")
    from tamesu.models.backends import build_embedding_model

    return build_embedding_model(ref, settings, timeout=timeout)
