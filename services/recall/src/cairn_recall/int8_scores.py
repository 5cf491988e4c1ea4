"""A large subject's vector copy as int8 rows scored by onnxruntime, with each row's error bounded, so an
exact top-k needs the float32 rows of only the memories the bounds cannot rule out.

One query against the float32 copy is a matrix-vector product that reads the whole matrix (18,600 x 384
floats, 29 MB: 1.7-2.1 ms with numpy's single-threaded BLAS, memory-bound). The same rows as int8 with a
scale per row are 7 MB, and onnxruntime's u8s8 integer GEMM (VNNI) scores a query in ~0.2 ms
(docs/performance.md, seventh round).

The bound: a row w is stored as ŵ = s_w * w8. The query q is quantised twice: q8 with scale s1, then its
remainder r = q - s1 * q8 as r8 with scale s2, leaving e = r - s2 * r8 (|e| is ~1/127 of |r|). Both int8
vectors go through one product (two query rows read the rows once), and
q·w - (s1 q8 + s2 r8)·ŵ = q·(w - ŵ) + e·ŵ, so by Cauchy-Schwarz the error is at most
|q| |w - ŵ| + |e| max|ŵ|: the row's own quantisation residual, kept from its packing, plus a per-query
constant. One level of query quantisation would add |q - s1 q8| |ŵ|, about as much as the row's residual:
the second level halves the bound, and with it the candidates rescored from float32. Every dot product
of int8 values is exact in int32 and in float32 (at most 384 x 127 x 127 < 2^24); SLACK covers the float32
rounding of the few operations after it.
"""

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

Matrix = npt.NDArray[np.float32]
ZERO_POINT = 128
# float32 rounding: of the dequantised product and the bounds, and of the float32 product they stand for
# (384 terms); each is ~1e-6 at most.
SLACK = 1e-4


def _session(rows8: npt.NDArray[np.int8]) -> ort.InferenceSession:
    """`MatMulInteger(query_u8 - 128, rows8.T)`: int32 dot products, the rows as a constant (packed once)."""
    dim, count = rows8.shape[1], rows8.shape[0]
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["query", "rows", "zero_point"], ["dots"])],
        "int8_scores",
        [helper.make_tensor_value_info("query", TensorProto.UINT8, ["batch", dim])],
        [helper.make_tensor_value_info("dots", TensorProto.INT32, ["batch", count])],
        [
            numpy_helper.from_array(np.ascontiguousarray(rows8.T), "rows"),
            numpy_helper.from_array(np.array(ZERO_POINT, dtype=np.uint8), "zero_point"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _quantised(x: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each row of `x` as integers in [-127, 127] (float64) and its scale."""
    scale = np.abs(x).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    return np.rint(x / scale[:, None]), scale


class Int8Rows:
    """Unit rows as int8 with a scale per row: each query's similarity to every row, and its error bound."""

    def __init__(self, matrix: Matrix) -> None:
        absmax = np.abs(matrix).max(axis=1) if matrix.size else np.zeros(0, dtype=np.float32)
        scales = np.where(absmax > 0, absmax / 127.0, 1.0).astype(np.float64)
        rows8 = np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8)
        stored = rows8.astype(np.float64) * scales[:, None]
        self._scales = scales.astype(np.float32)
        self._residual = np.linalg.norm(matrix.astype(np.float64) - stored, axis=1).astype(np.float32)
        self._max_norm = float(np.linalg.norm(stored, axis=1).max()) if matrix.size else 0.0  # max |ŵ|
        self._session = _session(rows8) if matrix.shape[0] else None

    def similarities(self, queries: Matrix) -> tuple[Matrix, Matrix]:
        """For unit `queries` [b, dim]: the approximate dot products [b, rows] and their error bounds."""
        b = len(queries)
        if self._session is None:
            return np.zeros((b, 0), dtype=np.float32), np.zeros((b, 0), dtype=np.float32)
        exact = queries.astype(np.float64)
        q8, s1 = _quantised(exact)
        remainder = exact - q8 * s1[:, None]
        r8, s2 = _quantised(remainder)
        leftover = np.linalg.norm(remainder - r8 * s2[:, None], axis=1)  # |e|
        feed = (np.concatenate([q8, r8]) + ZERO_POINT).astype(np.uint8)
        (dots,) = self._session.run(["dots"], {"query": feed})
        both = dots.astype(np.float32)
        approx = both[:b]
        approx *= s1.astype(np.float32)[:, None]
        approx += both[b:] * s2.astype(np.float32)[:, None]
        approx *= self._scales[None, :]
        constant = (leftover * self._max_norm + SLACK).astype(np.float32)
        bound = self._residual[None, :] * np.linalg.norm(exact, axis=1).astype(np.float32)[:, None]
        bound += constant[:, None]
        return approx, bound
