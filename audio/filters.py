"""Butterworth biquad cascades run block-wise as one matrix product per frame, for many calls at once.

A linear IIR filter of order N over a block of L samples is exactly ``[x | s] @ M``: the block's
output and the next state are linear in the block's input and the current state, so the
(L+N) x (L+N) matrix ``M`` is built once from the state-space form and every frame of every call
is filtered by one BLAS call. This is what makes a band-pass for a thousand calls cost a few
microseconds per call without scipy (which would add ~100 MB for ``sosfilt``); the result equals
the sample-by-sample recursion (``sosfilt_reference``) to float32 precision.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["BlockFilter", "butterworth_sos", "sos_gain_db", "sosfilt_reference"]


def _butter_qs(order: int) -> list[float]:
    """Q of each biquad of an even-order Butterworth filter."""
    if order < 2 or order % 2:
        raise ValueError(f"filter order must be even and at least 2, not {order}")
    return [1.0 / (2.0 * math.cos(math.pi * (2 * k + 1) / (2 * order))) for k in range(order // 2)]


def butterworth_sos(
    rate: int, *, highpass_hz: float | None = None, lowpass_hz: float | None = None, order: int = 4
) -> np.ndarray:
    """Second-order sections (rows b0 b1 b2 a0 a1 a2, a0 = 1) of a Butterworth high-/low-/band-pass.

    Bilinear transform with the cutoff pre-warped (the RBJ cookbook forms), so the -3 dB point is
    exactly at the cutoff.
    """
    sections = []
    for kind, hz in (("hp", highpass_hz), ("lp", lowpass_hz)):
        if not hz:
            continue
        if not 0 < hz < rate / 2:
            raise ValueError(f"cutoff {hz} Hz is outside (0, {rate / 2}) at {rate} Hz")
        w0 = 2.0 * math.pi * hz / rate
        cos_w, sin_w = math.cos(w0), math.sin(w0)
        for q in _butter_qs(order):
            alpha = sin_w / (2.0 * q)
            if kind == "hp":
                b = [(1 + cos_w) / 2, -(1 + cos_w), (1 + cos_w) / 2]
            else:
                b = [(1 - cos_w) / 2, 1 - cos_w, (1 - cos_w) / 2]
            a = [1 + alpha, -2 * cos_w, 1 - alpha]
            sections.append([*(v / a[0] for v in b), 1.0, a[1] / a[0], a[2] / a[0]])
    return np.array(sections, dtype=np.float64).reshape(-1, 6)


def sos_gain_db(sos: np.ndarray, hz: float, rate: int) -> float:
    """The cascade's gain at one frequency, from its transfer function."""
    z = np.exp(-1j * 2 * math.pi * hz / rate)
    h = 1.0 + 0j
    for b0, b1, b2, _a0, a1, a2 in sos:
        h *= (b0 + b1 * z + b2 * z * z) / (1 + a1 * z + a2 * z * z)
    return 20 * math.log10(max(abs(h), 1e-300))


def _state_space(sos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(A, B, C, D) of the cascade, each section in transposed direct form II."""
    a_m = np.zeros((0, 0))
    b_m = np.zeros((0, 1))
    c_m = np.zeros((1, 0))
    d = 1.0
    for b0, b1, b2, _a0, a1, a2 in sos:
        a_s = np.array([[-a1, 1.0], [-a2, 0.0]])
        b_s = np.array([[b1 - a1 * b0], [b2 - a2 * b0]])
        c_s = np.array([[1.0, 0.0]])
        n = a_m.shape[0]
        top = np.hstack([a_m, np.zeros((n, 2))])
        bottom = np.hstack([b_s @ c_m, a_s])
        a_m = np.vstack([top, bottom])
        b_m = np.vstack([b_m, b_s * d])
        c_m = np.hstack([b0 * c_m, c_s])
        d = b0 * d
    return a_m, b_m, c_m, d


@lru_cache(maxsize=32)
def _block_matrix_cached(sos_bytes: bytes, block: int) -> np.ndarray:
    matrix = _block_matrix(np.frombuffer(sos_bytes, dtype=np.float64).reshape(-1, 6), block).astype(
        np.float32
    )
    matrix.flags.writeable = False
    return matrix


def _block_matrix(sos: np.ndarray, block: int) -> np.ndarray:
    a_m, b_m, c_m, d = _state_space(sos)
    n = a_m.shape[0]
    powers = [np.eye(n)]
    for _ in range(block):
        powers.append(powers[-1] @ a_m)
    h = np.empty(block)
    h[0] = d
    for m in range(1, block):
        h[m] = (c_m @ powers[m - 1] @ b_m).item()
    m_full = np.zeros((block + n, block + n))
    for j in range(block):
        m_full[j, j:block] = h[: block - j]
        m_full[j, block:] = (powers[block - 1 - j] @ b_m)[:, 0]
    for k in range(block):
        m_full[block:, k] = (c_m @ powers[k])[0]
    m_full[block:, block:] = powers[block].T
    return m_full


_SINGLE_THREAD_MNK = 2**19
"""Products up to this size stay on the calling thread in OpenBLAS (its threshold is 2 x 2^18).

Larger ones fan out to BLAS threads, which on a busy machine (a load test, a CI runner) made
a frame of a thousand calls several times slower than doing it on one core; so the rows are
split into products just under the threshold, which costs little and keeps the cost predictable.
"""


class BlockFilter:
    """A biquad cascade applied to (calls, block) float32 frames, with each call's state carried."""

    def __init__(self, sos: np.ndarray, block: int, n_calls: int) -> None:
        self.block = block
        self.order = 2 * len(sos)
        self._m = _block_matrix_cached(np.ascontiguousarray(sos, dtype=np.float64).tobytes(), block)
        self._work = np.zeros((n_calls, block + self.order), dtype=np.float32)
        self._out = np.zeros_like(self._work)
        width = block + self.order
        self._rows = max(1, _SINGLE_THREAD_MNK // (width * width))

    def process(self, frames: np.ndarray) -> np.ndarray:
        """Filter one frame per call; returns a (calls, block) float32 view, valid until the next call."""
        self._work[:, : self.block] = frames
        rows = self._rows
        for i in range(0, len(self._work), rows):
            np.matmul(self._work[i : i + rows], self._m, out=self._out[i : i + rows])
        self._work[:, self.block :] = self._out[:, self.block :]
        return self._out[:, : self.block]

    def reset(self, index: int) -> None:
        """Forget one call's state (its slot is reused for another call)."""
        self._work[index, self.block :] = 0.0


def sosfilt_reference(sos: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Sample-by-sample transposed direct form II: slow and obviously right, for tests."""
    y = np.asarray(x, dtype=np.float64).copy()
    for b0, b1, b2, _a0, a1, a2 in sos:
        s1 = s2 = 0.0
        out = np.empty_like(y)
        for i, v in enumerate(y):
            o = b0 * v + s1
            s1 = b1 * v - a1 * o + s2
            s2 = b2 * v - a2 * o
            out[i] = o
        y = out
    return y
