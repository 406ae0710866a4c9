"""The catalog index off the turn path (R6, P4): embedding a catalog takes seconds, so no turn
waits for it.

The costly part of an index, each tool's vectors (`candidates.ToolVectors`), depends on the tool
alone, so it is stored once per tool definition in the shared cache (Redis; keys carry the
tenant schema) by `routing_index_build`, a Celery task queued when a sync stores a new catalog
version. A turn asks `ready_index(cards)`: the index from process memory, else assembled from
the stored vectors (milliseconds), else None — the turn then proceeds unrouted, and the build is
queued (once, whatever the number of turns asking meanwhile).
"""

import dataclasses
import hashlib
import io
import zipfile

import numpy as np
from django.core.cache import cache

from runtime.routing.candidates import (CatalogIndex, Example, ToolCard, ToolVectors, assemble, cached_index, embed_examples,
                                        embed_tools, keep_index)

VECTORS_TTL = 30 * 24 * 3600  # a tool definition no catalog uses any more leaves after a month
QUEUED_TTL = 300  # a queued build is not queued again for this long
QUEUED_KEY = "routing-index-queued"


def _key(card: ToolCard) -> str:
    return "routing-tool:v2:" + hashlib.sha256(f"{card.name}\0{card.digest}".encode()).hexdigest()


def _packed(vectors: ToolVectors) -> bytes:
    # numpy's own array format: data only (no pickle), read back with allow_pickle=False.
    buffer = io.BytesIO()
    np.savez(buffer, **{field.name: getattr(vectors, field.name) for field in dataclasses.fields(ToolVectors)})
    return buffer.getvalue()


def _unpacked(raw) -> ToolVectors | None:
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as arrays:
            return ToolVectors(**{field.name: arrays[field.name] for field in dataclasses.fields(ToolVectors)})
    except (ValueError, KeyError, OSError, EOFError, TypeError, zipfile.BadZipFile):
        return None  # not ours: a miss, built again


def _stored(cards: list[ToolCard]) -> dict[str, ToolVectors]:
    found = cache.get_many([_key(card) for card in cards])
    unpacked = {key: _unpacked(raw) for key, raw in found.items()}
    return {key: vectors for key, vectors in unpacked.items() if vectors is not None}


def ready_index(cards: list[ToolCard], examples: list[Example] = ()) -> CatalogIndex | None:
    """The index of `cards` and the tenant's `examples` if the tools' vectors are ready; None (and a
    build queued) if not. An example's vectors (one USE and one e5 encoding) are made here when
    it is new, so what a tenant teaches counts from the next message on."""
    index = cached_index(cards, examples)
    if index is not None:
        return index
    stored = _stored(cards)
    if len(stored) < len({_key(card) for card in cards}):
        _queue_build()
        return None
    return keep_index(cards, assemble(cards, [stored[_key(card)] for card in cards], examples,
                                      example_vectors([e.text for e in examples])), examples)


def _example_key(text: str) -> str:
    return "routing-example:v2:" + hashlib.sha256(text.encode()).hexdigest()


def example_vectors(texts: list[str]) -> list[np.ndarray]:
    """Each text's vectors (USE and e5, `candidates.embed_examples`): stored ones from the cache, new ones
    encoded and stored (raw float32). A tenant's new example costs one encoding of each kind, once."""
    if not texts:
        return []
    found = {key: raw for key, raw in cache.get_many([_example_key(text) for text in texts]).items() if isinstance(raw, bytes)}
    missing = list(dict.fromkeys(text for text in texts if _example_key(text) not in found))
    if missing:
        made = {_example_key(text): v.astype(np.float32).tobytes() for text, v in zip(missing, embed_examples(missing))}
        cache.set_many(made, timeout=VECTORS_TTL)
        found.update(made)
    return [np.frombuffer(found[_example_key(text)], dtype=np.float32) for text in texts]


def store_vectors(cards: list[ToolCard]) -> int:
    """Embeds and stores the vectors of the cards not stored yet; returns how many it embedded."""
    stored = _stored(cards)
    missing = list({_key(card): card for card in cards if _key(card) not in stored}.values())
    vectors = embed_tools(missing)
    cache.set_many({_key(card): _packed(v) for card, v in zip(missing, vectors)}, timeout=VECTORS_TTL)
    return len(missing)


def live_cards() -> list[ToolCard]:
    """Every live tool of the current tenant, as a turn's catalog names it."""
    from tools.models import Tool

    tools = Tool.objects.filter(removed_in__isnull=True).only("definition", "definition_hash", "prefixed_name")
    return [ToolCard.from_definition(tool.definition, name=tool.prefixed_name, digest=tool.definition_hash)
            for tool in tools]


def build_live() -> int:
    """The task's work: vectors for every live tool of the current tenant."""
    return store_vectors(live_cards())


def _queue_build() -> None:
    from runtime.tasks import routing_index_build

    if cache.add(QUEUED_KEY, 1, timeout=QUEUED_TTL):
        routing_index_build.delay()


def queue_build_after_commit() -> None:
    """For the sync: the new catalog version's vectors, built once its transaction commits (not
    at all where routing is off: nothing would read them)."""
    from django.conf import settings
    from django.db import transaction

    if not settings.ASIXTO_ROUTING:
        return

    from runtime.tasks import routing_index_build

    transaction.on_commit(routing_index_build.delay, robust=True)
