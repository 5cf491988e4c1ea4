from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from cairn_embeddings import model_files as model_files_module
from cairn_embeddings import onnx_builder
from cairn_embeddings.model_files import ModelFiles, cached_model_path
from cairn_embeddings.onnx_builder import build_fp32_model, ensure_int8_model

Array = npt.NDArray[np.float32]

# Not the calibration texts: agreement is measured on text the smoothing never saw.
SENTENCES = [
    "hi",
    "no",
    "the user prefers dark mode",
    "UI theme preference: dark",
    "the deploy runs on Fridays",
    "Carol's flight to Lisbon leaves on the 3rd at 06:40 from gate B12.",
    "Use British spelling in all customer-facing copy.",
    "The cat knocked the plant off the windowsill again.",
    "Our SLA promises 99.9% availability measured monthly, excluding scheduled maintenance windows.",
    "He switched from vim to VS Code last spring but still uses vim keybindings.",
    "Reminder: renew the TLS certificate for api.internal before it expires on 2025-01-31.",
    "Ich bevorzuge Antworten auf Deutsch.",
    "Rotate the API keys every 90 days; the last rotation was in August and the next one is overdue.",
    "print('hello world')",
]


class NumpyMiniLM:
    """fp32 BERT + mean pooling + L2 normalisation in plain numpy, following the HF BertModel code."""

    def __init__(self, files: ModelFiles) -> None:
        self.w = {k: v.astype(np.float32) for k, v in load_file(str(files.weights)).items()}
        cfg = json.loads(files.config.read_text())
        self.eps = float(cfg["layer_norm_eps"])
        self.layers = int(cfg["num_hidden_layers"])
        self.heads = int(cfg["num_attention_heads"])
        self.hidden = int(cfg["hidden_size"])
        self._erf = np.vectorize(math.erf, otypes=[np.float64])

    def _ln(self, x: Array, prefix: str) -> Array:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        out: Array = (x - mu) / np.sqrt(var + self.eps) * self.w[f"{prefix}.weight"] + self.w[
            f"{prefix}.bias"
        ]
        return out

    def _lin(self, x: Array, prefix: str) -> Array:
        out: Array = x @ self.w[f"{prefix}.weight"].T + self.w[f"{prefix}.bias"]
        return out

    def forward(self, input_ids: npt.NDArray[np.int64], attention_mask: npt.NDArray[np.int64]) -> Array:
        batch, seq = input_ids.shape
        d = self.hidden // self.heads
        x = (
            self.w["embeddings.word_embeddings.weight"][input_ids]
            + self.w["embeddings.token_type_embeddings.weight"][0]
            + self.w["embeddings.position_embeddings.weight"][:seq]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        mask = attention_mask.astype(np.float32)
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]

        def heads(t: Array) -> Array:
            return t.reshape(batch, seq, self.heads, d).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            q = heads(self._lin(x, f"{p}.attention.self.query"))
            k = heads(self._lin(x, f"{p}.attention.self.key"))
            v = heads(self._lin(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(d)) + bias
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, self.hidden)
            x = self._ln(self._lin(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            h = self._lin(x, f"{p}.intermediate.dense")
            h = (0.5 * h * (1.0 + self._erf(h / math.sqrt(2.0)))).astype(np.float32)
            x = self._ln(self._lin(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        m = mask[:, :, None]
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        out: Array = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def _feeds(files: ModelFiles, texts: list[str]) -> dict[str, npt.NDArray[np.int64]]:
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.enable_truncation(files.max_seq_length)
    tokenizer.enable_padding()  # to the longest: padded rows check the masking
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _session(model: onnx.ModelProto | Path) -> ort.InferenceSession:
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def fp32_model(model_files: ModelFiles) -> onnx.ModelProto:
    return build_fp32_model(model_files)


class TestGraph:
    def test_fp32_graph_matches_numpy_reference(
        self, model_files: ModelFiles, fp32_model: onnx.ModelProto
    ) -> None:
        feeds = _feeds(model_files, SENTENCES)
        (onnx_out,) = _session(fp32_model).run(None, feeds)
        reference = NumpyMiniLM(model_files).forward(feeds["input_ids"], feeds["attention_mask"])
        assert onnx_out.shape == (len(SENTENCES), 384)
        assert np.abs(onnx_out - reference).max() < 1e-4

    def test_int8_agrees_with_fp32(
        self, model_files: ModelFiles, fp32_model: onnx.ModelProto, int8_model_path: Path
    ) -> None:
        feeds = _feeds(model_files, SENTENCES)
        (fp32,) = _session(fp32_model).run(None, feeds)
        (int8,) = _session(int8_model_path).run(None, feeds)
        cosine = (fp32 * int8).sum(axis=1)
        assert cosine.min() >= 0.98, dict(zip(SENTENCES, cosine.round(4).tolist(), strict=True))
        assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)

    def test_int8_weights_are_quantised(self, int8_model_path: Path) -> None:
        model = onnx.load(str(int8_model_path))
        ops = {node.op_type for node in model.graph.node}
        assert "DynamicQuantizeLinear" in ops or "DynamicQuantizeMatMul" in ops or "MatMulInteger" in ops
        assert int8_model_path.stat().st_size < 70_000_000  # fp32 is 90 MB; int8 MatMuls + fp32 vocabulary


def _fake_model_dir(root: Path, weights: bytes) -> ModelFiles:
    root.mkdir()
    (root / "model.safetensors").write_bytes(weights)
    (root / "config.json").write_text("{}")
    (root / "tokenizer.json").write_text("{}")
    (root / "sentence_bert_config.json").write_text('{"max_seq_length": 256}')
    return ModelFiles.from_directory(root)


class TestCache:
    def test_second_call_reuses_the_built_file(
        self, model_files: ModelFiles, model_cache_dir: Path, int8_model_path: Path
    ) -> None:
        mtime = int8_model_path.stat().st_mtime_ns
        assert ensure_int8_model(model_files, model_cache_dir) == int8_model_path
        assert int8_model_path.stat().st_mtime_ns == mtime
        assert int8_model_path.stat().st_mode & 0o777 == 0o644
        assert int8_model_path.name.startswith(
            f"all-MiniLM-L6-v2.int8.b{model_files_module.BUILDER_VERSION}."
        )
        assert not list(model_cache_dir.glob("*.tmp"))

    def test_file_name_depends_on_weights_and_builder_version(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        a = cached_model_path(_fake_model_dir(tmp_path / "a", b"weights-a"), tmp_path)
        b = cached_model_path(_fake_model_dir(tmp_path / "b", b"weights-b"), tmp_path)
        assert a != b
        monkeypatch.setattr(model_files_module, "BUILDER_VERSION", "999")
        assert cached_model_path(_fake_model_dir(tmp_path / "c", b"weights-a"), tmp_path) not in (a, b)

    def test_concurrent_builders_build_once(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        files = _fake_model_dir(tmp_path / "model", b"weights")
        builds: list[int] = []

        def slow_build(files: ModelFiles) -> onnx.ModelProto:
            builds.append(1)
            time.sleep(0.2)
            return onnx.ModelProto()

        def write(model: onnx.ModelProto, output: Path) -> None:
            output.write_bytes(b"built")

        monkeypatch.setattr(onnx_builder, "build_fp32_model", slow_build)
        monkeypatch.setattr(onnx_builder, "quantize_int8", write)
        cache = tmp_path / "cache"
        results: list[Path] = []
        threads = [
            threading.Thread(target=lambda: results.append(ensure_int8_model(files, cache))) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(builds) == 1
        assert len(results) == 4
        assert len(set(results)) == 1
        assert results[0].read_bytes() == b"built"
        assert not list(cache.glob("*.tmp"))

    def test_failed_build_leaves_no_file(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        files = _fake_model_dir(tmp_path / "model", b"weights")

        def broken(model: onnx.ModelProto, output: Path) -> None:
            output.write_bytes(b"half")
            raise RuntimeError("quantisation crashed")

        monkeypatch.setattr(onnx_builder, "build_fp32_model", lambda files: onnx.ModelProto())
        monkeypatch.setattr(onnx_builder, "quantize_int8", broken)
        cache = tmp_path / "cache"
        with pytest.raises(RuntimeError, match="quantisation crashed"):
            ensure_int8_model(files, cache)
        assert not cached_model_path(files, cache).exists()
        assert not list(cache.glob("*.tmp"))
