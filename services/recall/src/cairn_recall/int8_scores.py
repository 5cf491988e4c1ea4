"""A large subject's vector copy as int8 rows scored by onnxruntime, with each row's error bounded, so an
exact top-k needs the float32 rows of only the memories the bounds cannot rule out.

One query against the float32 copy is a matrix-vector product that reads the whole matrix (18,600 x 384
floats, 29 MB: 1.7-2.1 ms with numpy's single-threaded BLAS, memory-bound). The same rows as int8 with a
scale per row are 7 MB, and onnxruntime's u8s8 integer GEMM (VNNI) scores a query in ~0.2 ms
(docs/performance.md, seventh round).

The bound: a row w is stored as ŵ = s_w * w8 and the query q as q̂ = s_q * (q8 - 128), and
q·w - q̂·ŵ = q·(w - ŵ) + (q - q̂)·ŵ, so by Cauchy-Schwarz |q·w - q̂·ŵ| <= |q| |w - ŵ| + |q - q̂| |ŵ|, with
each row's residual norm kept from its quantisation and the query's computed with it. q̂·ŵ is exact in
int32 (at most 384 x 127 x 127), and SLACK covers float32 rounding.
"""

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

Matrix = npt.NDArray[np.float32]
ZERO_POINT = 128
# float32 rounding: of the dequantised product, and of the float32 product it stands for (384 terms).
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


class Int8Rows:
    """Unit rows as int8 with a scale per row: each query's similarity to every row, and its error bound."""

    def __init__(self, matrix: Matrix) -> None:
        absmax = np.abs(matrix).max(axis=1) if matrix.size else np.zeros(0, dtype=np.float32)
        self._scales = np.where(absmax > 0, absmax / 127.0, 1.0).astype(np.float64)
        rows8 = np.clip(np.rint(matrix / self._scales[:, None]), -127, 127).astype(np.int8)
        stored = rows8.astype(np.float64) * self._scales[:, None]
        self._residual = np.linalg.norm(matrix.astype(np.float64) - stored, axis=1)  # |w - ŵ|
        self._norm = np.linalg.norm(stored, axis=1)  # |ŵ|
        self._session = _session(rows8) if matrix.shape[0] else None

    def similarities(self, queries: Matrix) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """For unit `queries` [b, dim]: the approximate dot products [b, rows] and their error bounds."""
        if self._session is None:
            return np.zeros((len(queries), 0)), np.zeros((len(queries), 0))
        scale_q = np.abs(queries).max(axis=1).astype(np.float64) / 127.0
        scale_q[scale_q == 0] = 1.0
        q8 = (np.rint(queries / scale_q[:, None]) + ZERO_POINT).clip(1, 255).astype(np.uint8)
        (dots,) = self._session.run(["dots"], {"query": q8})
        approx = dots.astype(np.float64) * scale_q[:, None] * self._scales[None, :]
        exact_q = queries.astype(np.float64)
        norm_q = np.linalg.norm(exact_q, axis=1)
        residual_q = np.linalg.norm(exact_q - (q8.astype(np.float64) - ZERO_POINT) * scale_q[:, None], axis=1)
        bound = norm_q[:, None] * self._residual[None, :] + residual_q[:, None] * self._norm[None, :] + SLACK
        return approx, bound
