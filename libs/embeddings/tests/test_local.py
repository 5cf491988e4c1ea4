from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from cairn_embeddings import onnx_builder
from cairn_embeddings.local import LocalOnnxEmbedder


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


class TestLocalOnnxEmbedder:
    def test_vectors_are_unit_length_and_deterministic(self, local_embedder: LocalOnnxEmbedder) -> None:
        first = local_embedder.embed_sync(["The user prefers dark mode.", "", "a b c"])
        again = local_embedder.embed_sync(["The user prefers dark mode.", "", "a b c"])
        assert local_embedder.dim == 384
        assert local_embedder.name == "local:all-MiniLM-L6-v2:int8"
        assert [len(v) for v in first] == [384, 384, 384]
        assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
        assert first == again

    def test_semantic_ordering(self, local_embedder: LocalOnnxEmbedder) -> None:
        query, same, other = local_embedder.embed_sync(
            ["the user prefers dark mode", "UI theme preference: dark", "the deploy runs on Fridays"]
        )
        assert _cos(query, same) > _cos(query, other) + 0.2

    def test_batching_preserves_input_order(self, local_embedder: LocalOnnxEmbedder) -> None:
        # Mixed lengths over several batches: the embedder sorts by length internally.
        texts = [f"note {i}: " + "word " * (i * 7 % 40) for i in range(70)]
        batched = local_embedder.embed_sync(texts)
        for i in (0, 13, 37, 69):
            (alone,) = local_embedder.embed_sync([texts[i]])
            # Dynamic int8 quantisation scales activations per batch, so batch-mates shift a vector slightly.
            assert _cos(batched[i], alone) > 0.99

    def test_long_text_is_truncated_not_rejected(self, local_embedder: LocalOnnxEmbedder) -> None:
        long_text = "memory " * 3000
        (vector,) = local_embedder.embed_sync([long_text])
        (prefix,) = local_embedder.embed_sync(["memory " * 254])  # 254 words + [CLS] + [SEP] = 256 tokens
        assert _cos(vector, prefix) > 0.9999

    def test_empty_input_and_single_str(self, local_embedder: LocalOnnxEmbedder) -> None:
        assert local_embedder.embed_sync([]) == []
        with pytest.raises(TypeError):
            local_embedder.embed_sync("not a list")

    @pytest.mark.asyncio
    async def test_embed_runs_off_the_event_loop(self, local_embedder: LocalOnnxEmbedder) -> None:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        texts = [f"background embedding {i} about agents and their durable memories" for i in range(256)]
        task = asyncio.create_task(ticker())
        started = time.perf_counter()
        vectors = await local_embedder.embed(texts)
        elapsed = time.perf_counter() - started
        done.set()
        await task
        assert len(vectors) == 256
        # A blocked loop would tick once; a free one ticks about every millisecond of the inference.
        assert ticks >= min(20, elapsed * 1000 / 4)

    @pytest.mark.asyncio
    async def test_async_and_sync_agree(self, local_embedder: LocalOnnxEmbedder) -> None:
        texts = ["alpha", "beta gamma"]
        assert await local_embedder.embed(texts) == local_embedder.embed_sync(texts)
        assert await local_embedder.embed([]) == []

    async def test_query_sized_calls_run_concurrently_with_the_batch_sessions_vectors(
        self, local_embedder: LocalOnnxEmbedder
    ) -> None:
        # Query-sized calls take their own one-thread session (two workers); one text's vector does not
        # depend on the session's intra-op threads.
        queries = [f"what did the user say about topic {i}" for i in range(8)]
        together = await asyncio.gather(*(local_embedder.embed([q]) for q in queries))
        assert [v for (v,) in together] == [local_embedder.embed_sync([q])[0] for q in queries]

    def test_load_uses_the_cache(
        self, int8_model_path: Path, model_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def no_build(*args: object) -> Path:
            raise AssertionError("the cached model was rebuilt")

        monkeypatch.setattr(onnx_builder, "ensure_int8_model", no_build)
        embedder = LocalOnnxEmbedder.load(cache_dir=model_cache_dir, threads=1, warm_up=False)
        assert len(embedder.embed_sync(["cached"])[0]) == 384
        embedder._executor.shutdown()
