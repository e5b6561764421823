"""Which of a suite's model needs this machine cannot meet: a role no configuration names, a
``local/PATH.gguf`` whose file or runtime is missing, a provider without its key or client.

The contract says which parts need which model (``config.model_needs``); whether they can be
called here is a question about this machine, asked of the model providers' registry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tamesu.config.checks import SuiteFile
from tamesu.config.model_needs import ModelNeed, model_needs
from tamesu.config.reach import Reach, mapping
from tamesu.config.yamlload import format_path
from tamesu.errors import ConfigError

__all__ = ["check_model_needs", "check_models"]


def check_models(file: SuiteFile) -> list[ConfigError]:
    """The suite's model needs (``config.model_needs``) against what this machine can call."""
    return check_model_needs(
        model_needs(file.data), suite=file.data, project=file.project, file=file.doc.file,
        positions=file.doc.positions, base_dirs=[d for d in (file.suite_dir, file.project_dir) if d is not None],
    )  # fmt: skip


def check_model_needs(
    needs: list[ModelNeed],
    *,
    suite: Mapping[str, Any],
    project: Mapping[str, Any] | None,
    file: str = "<suite>",
    positions: Any = None,
    base_dirs: Sequence[Path] = (),
) -> list[ConfigError]:
    """One error per part of a test that needs a model no configuration provides.

    Reads ``models:`` (tamesu.yaml, then the suite, key by key), tamesu.yaml ``providers:`` and the
    environment's conventional keys; a ``local/PATH.gguf`` needs its file (looked for in
    ``base_dirs``, then the working directory) and llama-cpp-python, a hosted one its client (the
    models extra). These errors are ``ModelUnavailable``: ``tamesu validate`` warns, and ``tamesu run``
    reports the tests they reach as errors and runs the suite's other tests.
    """
    if not needs:
        return []
    from tamesu.errors import ModelUnavailable
    from tamesu.extras import EXTRAS
    from tamesu.models.local_gguf import gguf_problem, is_gguf_ref
    from tamesu.models.refs import custom_provider, missing_credentials, provider_infos

    models: dict[str, Any] = {**mapping((project or {}).get("models")), **mapping(suite.get("models"))}
    credentials = {**mapping(mapping((project or {}).get("models")).get("credentials")),
                   **mapping(mapping(suite.get("models")).get("credentials"))}  # fmt: skip
    custom = {
        name: custom_provider(name, str(mapping(p).get("base_url", "")))
        for name, p in mapping((project or {}).get("providers")).items()
    }
    out: list[ConfigError] = []
    reach: Reach | None = None
    clients: dict[str, str | None] = {}  # ref -> what its client lacks: one module search per ref
    for need in needs:
        ref = models.get(need.role) or models.get("default")
        if need.role == "embedder" and not models.get("embedder") and ref:
            provider = str(ref).split("/", 1)[0]
            ref = provider_infos.get(provider).default_embedder if provider in provider_infos else None
        if not ref and need.optional:
            continue
        if not ref:
            keys = (
                "models.embedder (local/minilm works offline)"
                if need.role == "embedder"
                else (f"models.{need.role} or models.default" if need.role != "default" else "models.default")
            )
            problem = f"{need.why} needs a model: set {keys} in the suite or tamesu.yaml"
        elif is_gguf_ref(str(ref)):
            missing = gguf_problem(str(ref), base_dirs)
            if missing is None:
                continue
            problem = f"{need.why} needs {ref}, which cannot run here: {missing}"
        elif str(ref).startswith("local/"):
            embed = EXTRAS["embed"]
            if embed.installed:
                continue
            problem = f"{need.why} needs {ref}, which needs the embed extra: {embed.install}"
        else:
            missing = missing_credentials(
                str(ref), credentials={k: "set" for k in credentials}, custom=custom
            )
            if missing is None:
                if str(ref) not in clients:
                    clients[str(ref)] = _client_missing(str(ref), custom)
                missing = clients[str(ref)]
            if missing is None:
                continue
            problem = f"{need.why} needs {ref}, which cannot be called: {missing}"
        if need.path[0] == "packs":
            continue  # a suite pack's needs are reported where a test uses the pack
        line, col = positions.value(need.path) if positions is not None else (None, None)
        reach = reach or Reach(suite, project)
        out.append(ModelUnavailable(problem, file=file, line=line, column=col, path=format_path(need.path),
                                    tests=reach.tests_at(need.path)))  # fmt: skip
    return out


def _client_missing(ref: str, custom: Mapping[str, Any]) -> str | None:
    """What to install when the model client of ``ref``'s provider is not here, else None."""
    from tamesu.extras import EXTRAS, model_client_missing
    from tamesu.models.refs import provider_infos

    provider = ref.split("/", 1)[0]
    family = "openai" if provider in custom else provider_infos.get(provider).family
    missing = model_client_missing(family)
    if not missing:
        return None
    return f"{', '.join(missing)} not installed: {EXTRAS['models'].install}"
