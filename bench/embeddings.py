"""Benchmark the local int8 ONNX MiniLM embedder: build, cold load, batch throughput, single-text latency.

    python bench/embeddings.py [--threads 2] [--cache-dir DIR] [--skip-build]

Every number printed is measured in this run; nothing is estimated.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime

from cairn_embeddings import EmbeddingSettings, LocalOnnxEmbedder
from cairn_embeddings.model_files import bundled_model_files, cached_model_path
from cairn_embeddings.onnx_builder import ensure_int8_model

WORDS = (
    "the user prefers dark mode for every editor and wants short answers in english while the deploy "
    "pipeline runs on fridays after the database migration alice reviews schema changes bob owns billing "
    "invoices are sent monthly in euros remember that meetings start at nine berlin time coffee with oat "
    "milk project helios replaced aurora budget capped quarterly agent memory stores durable facts about "
    "people preferences tasks deadlines tickets incidents and decisions"
).split()

COLD_LOAD = """
import sys, time
t0 = time.perf_counter()
from pathlib import Path
from cairn_embeddings.local import LocalOnnxEmbedder
t1 = time.perf_counter()
embedder = LocalOnnxEmbedder.load(cache_dir=Path(sys.argv[1]), threads=int(sys.argv[2]))
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
"""


def short_texts(count: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default: CAIRN_EMBEDDING_MODEL_CACHE_DIR"
    )
    parser.add_argument("--skip-build", action="store_true", help="do not time a fresh build in a temp dir")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    cache_dir: Path = (args.cache_dir or EmbeddingSettings().model_cache_dir).expanduser()

    print(f"cpus={os.cpu_count()} threads={args.threads} onnxruntime={onnxruntime.__version__}")
    files = bundled_model_files()

    if not args.skip_build:
        with tempfile.TemporaryDirectory(prefix="cairn-bench-") as tmp:
            start = time.perf_counter()
            built = ensure_int8_model(files, Path(tmp))
            elapsed = time.perf_counter() - start
            print(f"cold build of the int8 ONNX file: {elapsed:.2f} s ({built.stat().st_size / 1e6:.1f} MB)")

    model_path = cached_model_path(files, cache_dir)
    if not model_path.is_file():
        start = time.perf_counter()
        ensure_int8_model(files, cache_dir)
        print(f"built the cached model in {cache_dir}: {time.perf_counter() - start:.2f} s")
    print(f"model: {model_path}")

    # A fresh interpreter, so imports and session creation are really cold (the file may be in page cache).
    loads = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", COLD_LOAD, str(cache_dir), str(args.threads)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        loads.append((float(out[0]), float(out[1])))
    print(
        "cold load (fresh process, 3 runs): import "
        + ", ".join(f"{imp:.2f}" for imp, _ in loads)
        + " s; LocalOnnxEmbedder.load incl. weight hash and warm-up "
        + ", ".join(f"{load:.2f}" for _, load in loads)
        + " s"
    )

    embedder = LocalOnnxEmbedder.load(cache_dir=cache_dir, threads=args.threads)
    rng = random.Random(42)
    texts = short_texts(args.texts, rng)
    embedder.embed_array(texts[:64])  # warm the allocator for batch shapes

    for attempt in range(3):
        start = time.perf_counter()
        for i in range(0, len(texts), 32):
            embedder.embed_array(texts[i : i + 32])
        elapsed = time.perf_counter() - start
        print(
            f"batch 32, {len(texts)} texts of 8-20 words, run {attempt + 1}: {len(texts) / elapsed:.0f} texts/s"
        )

    singles = short_texts(args.runs, rng)
    latencies = []
    for text in singles:
        start = time.perf_counter()
        embedder.embed_array([text])
        latencies.append((time.perf_counter() - start) * 1000)
    p50, p95 = statistics.median(latencies), float(np.percentile(latencies, 95))
    print(f"single short text, {args.runs} runs (embed_sync): p50 {p50:.2f} ms, p95 {p95:.2f} ms")

    async def async_latencies() -> list[float]:
        result = []
        for text in singles:
            start = time.perf_counter()
            await embedder.embed([text])
            result.append((time.perf_counter() - start) * 1000)
        await embedder.close()
        return result

    latencies = asyncio.run(async_latencies())
    p50, p95 = statistics.median(latencies), float(np.percentile(latencies, 95))
    print(
        f"single short text, {args.runs} runs (await embed, worker thread): p50 {p50:.2f} ms, p95 {p95:.2f} ms"
    )


if __name__ == "__main__":
    main()
