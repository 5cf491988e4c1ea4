from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from cairn_embeddings import onnx_builder
from cairn_embeddings.local import LocalOnnxEmbedder, token_budget_batches


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


class TestTokenBudgetBatches:
    def test_shortest_first_and_every_text_once(self) -> None:
        lengths = [30, 5, 12, 5, 200, 40]
        batches = token_budget_batches(lengths, max_rows=32, max_tokens=1000)
        flat = [i for batch in batches for i in batch]
        assert sorted(flat) == list(range(len(lengths)))
        assert [lengths[i] for i in flat] == sorted(lengths)

    def test_a_call_may_reach_the_token_budget_but_not_pass_it(self) -> None:
        # Four texts of 256 tokens pad to exactly 1024; a fifth would make 1280.
        assert token_budget_batches([256] * 5, max_rows=32, max_tokens=1024) == [[0, 1, 2, 3], [4]]
        # Padded to the longest: two 10-token texts and one of 400 tokens make 1200, past 1024.
        assert token_budget_batches([10, 10, 400], max_rows=32, max_tokens=1024) == [[0, 1], [2]]
        assert token_budget_batches([10, 10, 341], max_rows=32, max_tokens=1023) == [[0, 1, 2]]

    def test_a_text_over_the_budget_goes_alone(self) -> None:
        assert token_budget_batches([5, 2000, 6], max_rows=32, max_tokens=1024) == [[0, 2], [1]]

    def test_rows_are_capped_at_and_past_the_edge(self) -> None:
        assert token_budget_batches([3] * 4, max_rows=4, max_tokens=1024) == [[0, 1, 2, 3]]
        assert token_budget_batches([3] * 5, max_rows=4, max_tokens=1024) == [[0, 1, 2, 3], [4]]

    def test_no_texts_no_calls(self) -> None:
        assert token_budget_batches([], max_rows=32, max_tokens=1024) == []


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

    def test_inference_calls_stay_within_the_token_budget(self, local_embedder: LocalOnnxEmbedder) -> None:
        calls: list[tuple[int, int]] = []

        class Recording:
            def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
                calls.append(feeds["input_ids"].shape)
                return local_embedder._session.run(names, feeds)  # type: ignore[no-any-return]

        texts = ["short note"] * 40 + ["a long entry about the deploy " * 40] * 9
        vectors = local_embedder.embed_array(texts, Recording())  # type: ignore[arg-type]
        budget = local_embedder.max_batch_tokens
        assert all(rows * width <= budget for rows, width in calls)
        assert sum(rows for rows, _ in calls) == len(texts)
        # The short notes still share calls (up to the row cap); the long entries go a few at a time.
        assert max(rows for rows, _ in calls) == local_embedder.batch_size
        assert np.allclose(vectors[:40], vectors[0], atol=1e-6)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

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
