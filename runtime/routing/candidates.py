"""The catalog index of the cheap check (R6): what each tool is about, ready to compare with a
message — built once per catalog version, never per message.

A tool is described by its own words: `com.asixto/verb`, title, name, description (the part
before "No la uses…"/"Do not use…", which names what the tool is *not* for), capabilities and
the names and descriptions of its inputs. From them the index keeps:
- embeddings of a few short views of the tool (verb, title + verb, what-it-does sentence);
- weighted stems for lexical overlap, each stem weighted by how rare it is across the catalog
  (a word every tool has says nothing about which tool).

`catalog_index(cards)` caches indexes in process memory keyed by every tool's name and
definition hash, so a catalog version is embedded once per worker process; a changed
definition is a new key. `rank(index, query_vector, query_terms)` scores every tool.
"""

import hashlib
import json
import math
import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import numpy as np

from runtime.routing import encoder
from runtime.routing.phrasings import kind_of, requests_for
from runtime.routing.words import name_words, terms

VERB_KEY = "com.asixto/verb"
CAPABILITIES_KEY = "com.asixto/capabilities"
MAX_INDEXES = 64  # catalogs kept per process (tenants × versions in use)
# The sentence that says what a tool is not for would pull the very requests it excludes.
_NOT_FOR = re.compile(r"\b(no la uses|no lo uses|no usar|do not use|don't use|not for)\b.*$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class ToolCard:
    """What routing knows about one tool: the model-visible name and its definition's words."""

    name: str
    title: str = ""
    description: str = ""
    verb: str = ""
    capabilities: tuple[str, ...] = ()
    input_schema: dict = field(default_factory=dict, hash=False, compare=False)
    digest: str = ""

    @classmethod
    def from_definition(cls, definition: dict, name: str | None = None, digest: str = "") -> "ToolCard":
        meta = definition.get("_meta") or {}
        capabilities = meta.get(CAPABILITIES_KEY) or []
        schema = definition.get("inputSchema") or {}
        if not digest:
            digest = hashlib.sha256(json.dumps(definition, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        return cls(
            name=name or definition.get("name", ""), title=str(definition.get("title") or ""),
            description=str(definition.get("description") or ""), verb=str(meta.get(VERB_KEY) or ""),
            capabilities=tuple(str(c) for c in capabilities if isinstance(c, str)),
            input_schema=schema if isinstance(schema, dict) else {}, digest=digest,
        )

    @property
    def purpose(self) -> str:
        """The description without its "do not use it for…" part."""
        return _NOT_FOR.sub("", self.description).strip()

    def input_words(self) -> str:
        properties = self.input_schema.get("properties") or {}
        parts = []
        for key, prop in list(properties.items())[:30] if isinstance(properties, dict) else []:
            parts.append(name_words(str(key)))
            if isinstance(prop, dict) and isinstance(prop.get("description"), str):
                parts.append(prop["description"][:200])
        return " ".join(parts)


@dataclass
class CatalogIndex:
    cards: list[ToolCard]
    about: np.ndarray  # (tools, 3, dim): verb, title + verb, what-it-does sentence
    asks: np.ndarray  # (requests, dim): customer requests built from each tool's verb
    asks_owner: np.ndarray  # (requests,): the tool each request belongs to
    weights: list[dict[str, float]]  # per tool: stem → weight
    kinds: list[str | None]  # per tool: the kind of its verb (phrasings.KINDS)
    idf: dict[str, float]

    def __len__(self):
        return len(self.cards)


def _views(card: ToolCard) -> list[str]:
    verb = card.verb or name_words(card.name)
    title = card.title or name_words(card.name)
    first = re.split(r"(?<=[.!?])\s", card.purpose, maxsplit=1)[0] if card.purpose else title
    return [verb, f"{title}: {verb}", first or verb]


def _stems(card: ToolCard) -> Counter:
    """Stems of the tool with the weight of where they appear: the verb and name count most."""
    counts = Counter()
    for text, weight in ((card.verb, 3.0), (name_words(card.name), 2.0), (card.title, 2.0), (card.purpose, 1.0),
                         (" ".join(card.capabilities), 1.0), (card.input_words(), 0.5)):
        for stem in set(terms(text)):
            counts[stem] = max(counts[stem], weight)
    return counts


def build_index(cards: list[ToolCard]) -> CatalogIndex:
    per_tool = [_stems(card) for card in cards]
    documents = Counter(stem for stems in per_tool for stem in stems)
    total = max(len(cards), 1)
    idf = {stem: math.log(1 + total / count) for stem, count in documents.items()}
    weights = [{stem: weight * idf[stem] for stem, weight in stems.items()} for stems in per_tool]
    asks = [(n, text) for n, card in enumerate(cards) for text in requests_for(card.verb or name_words(card.name))]
    texts = [view for card in cards for view in _views(card)] + [text for _n, text in asks]
    vectors = encoder.embed(texts)
    about = vectors[: 3 * len(cards)].reshape(len(cards), 3, -1)
    return CatalogIndex(cards=list(cards), about=about, asks=vectors[3 * len(cards):],
                        asks_owner=np.array([n for n, _text in asks], dtype=np.int64), weights=weights, idf=idf,
                        kinds=[kind_of(card.verb or name_words(card.name)) for card in cards])


_cache: "OrderedDict[tuple, CatalogIndex]" = OrderedDict()
_cache_lock = threading.Lock()


def catalog_index(cards: list[ToolCard]) -> CatalogIndex:
    """The index of this exact catalog (names and definition hashes), built once per process."""
    key = tuple((card.name, card.digest) for card in cards)
    with _cache_lock:
        index = _cache.get(key)
        if index is not None:
            _cache.move_to_end(key)
            return index
    index = build_index(cards)  # outside the lock: a first build takes a while, others wait on nothing
    with _cache_lock:
        _cache[key] = index
        while len(_cache) > MAX_INDEXES:
            _cache.popitem(last=False)
    return index


def lexical(index: CatalogIndex, query_terms: list[str]) -> np.ndarray:
    """How much of each tool's vocabulary the query uses, weighted by rarity: 0 when nothing."""
    scores = np.zeros(len(index), dtype=np.float32)
    unique = set(query_terms)
    if not unique:
        return scores
    for n, weights in enumerate(index.weights):
        hit = 0.0
        for stem in unique:
            if stem in weights:
                hit += weights[stem]
            elif len(stem) >= 4:  # "pago" and "pagar": same root, weaker evidence
                partial = max((w for s, w in weights.items() if s[:4] == stem[:4]), default=0.0)
                hit += 0.5 * partial
        scores[n] = hit
    return scores


def semantic(index: CatalogIndex, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosines between the message and each tool: with what the tool is (its best view), and with
    the requests built from its verb (the best one)."""
    if not len(index):
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
    about = (index.about @ vector).max(axis=1)
    asks = np.full(len(index), -1.0, dtype=np.float32)
    np.maximum.at(asks, index.asks_owner, index.asks @ vector)
    return about, asks
