"""One invocation's model routers: credentials, OpenAI-compatible providers from tamesu.yaml, cache.

A ``RouterFactory`` is a small picklable value, so a Ray worker rebuilds the same routers the
driver would: ``models.credentials`` and ``providers.*.api_key`` are rendered with the run's
resolved secrets, and one router is kept per distinct ``models:`` configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tamesu.models.refs import custom_provider
from tamesu.models.reply_cache import ResponseCache
from tamesu.models.router import ModelRouter

__all__ = ["RouterFactory"]


@dataclass
class RouterFactory:
    providers: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """name -> (base_url, api_key template)."""
    secrets: dict[str, str] = field(default_factory=dict)
    cache_dir: str | None = None
    timeout: float = 60.0
    base_dirs: list[str] = field(default_factory=list)
    """Folders a relative ``local/PATH.gguf`` is looked in: the suites', then the project's."""
    _routers: dict[str, ModelRouter] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def for_project(
        cls,
        project: Any,
        *,
        secrets: dict[str, str],
        cache_dir: str | None = None,
        timeout: float = 60.0,
        base_dirs: list[str] | None = None,
    ) -> RouterFactory:
        providers = {
            name: (p.base_url, p.api_key) for name, p in (getattr(project, "providers", None) or {}).items()
        }
        return cls(providers=providers, secrets=dict(secrets), cache_dir=cache_dir, timeout=timeout,
                   base_dirs=list(base_dirs or []))  # fmt: skip

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_routers"] = {}
        return state

    def _render(self, value: str | None) -> str | None:
        """``value`` with its secrets; None when it names one this invocation did not resolve (no
        test that needs a model uses it, so no call will need the credential)."""
        if value is None:
            return None
        from tamesu.errors import SecretError
        from tamesu.templates import Scope, render_text

        secrets = self.secrets

        def secret(name: str) -> str:
            if name not in secrets:
                raise SecretError(f"secret {name} was not resolved")
            return secrets[name]

        try:
            return render_text(value, Scope(resolvers={"secrets": secret}))
        except SecretError:
            return None

    def __call__(self, models: Any) -> ModelRouter | None:
        if models is None:
            return None
        key = models.model_dump_json() if hasattr(models, "model_dump_json") else repr(models)
        if key not in self._routers:
            rendered = {k: self._render(v) for k, v in (getattr(models, "credentials", None) or {}).items()}
            credentials = {k: v for k, v in rendered.items() if v is not None}
            custom = {
                name: custom_provider(name, url, self._render(key_t))
                for name, (url, key_t) in self.providers.items()
            }
            cache = ResponseCache(self.cache_dir) if self.cache_dir else None
            self._routers[key] = ModelRouter(
                models,
                credentials=credentials,
                custom_providers=custom,
                cache=cache,
                timeout=self.timeout,
                base_dirs=self.base_dirs,
            )
        return self._routers[key]
