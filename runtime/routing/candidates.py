"""The catalog index of the cheap check (R6): what each tool is about, ready to compare with a
message — built once per catalog version, never per message.

A tool is described by its own words: `com.asixto/verb`, title, name, description (the part
before "No la uses…"/"Do not use…", which names what the tool is *not* for), capabilities and
its inputs (names, descriptions and the values of their enums). From them the index keeps:
- embeddings, by both encoders, of a few short views of the tool (verb, title + verb,
  what-it-does sentence), and by e5 of what it takes (title + its inputs);
- embeddings of customer requests built from its verb (`phrasings.py`);
- weighted Snowball stems for lexical overlap, each weighted by where it appears (the verb's object
  and the name most, the verb's action word and enum values as much as the description) and by how
  rare it is across the catalog (a word every tool has says nothing about which tool); a message's
  words count with their equivalents of `lexicon.py`.

`catalog_index(cards)` caches indexes in process memory keyed by every tool's name and
definition hash, so a catalog version is embedded once per worker process; a changed
definition is a new key. `signals(index, text)` scores every tool against one message.
"""

import hashlib
import json
import math
import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from runtime.routing import encoder, taught
from runtime.routing.lexicon import expand
from runtime.routing.language import text_language
from runtime.routing.phrasings import kind_of, kinds_asked, requests_for
from runtime.routing.words import name_words, normalise, stems
from tools.rules.annotations import READ, tool_level

VERB_KEY = "com.asixto/verb"
CAPABILITIES_KEY = "com.asixto/capabilities"
# The verb's action word ("cambiar" of "cambiar el plan contratado") weighs as a description word: customers
# name the same action in many words (cambiar, actualizar, modificar) and the thing acted on tells tools apart.
ACTION_WEIGHT = 1.0
MAX_INDEXES = 64  # catalogs kept per process (tenants × versions in use)
MAX_ENUM_VALUES = 50  # per input: an enum of thousands of values is a list, not a description
# Enum values that say nothing about what a tool is for.
_EMPTY_VALUES = {"true", "false", "dontcare", "none", "any", "null", "other"}
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
    # read, write or destructive: from its annotations, as the catalog reads them (a tool that says
    # nothing is destructive: the cautious reading, M7)
    level: str = "destructive"

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
            level=tool_level(definition.get("annotations")),
        )

    @property
    def acts(self) -> bool:
        """It changes something (write or destructive), rather than only looking something up."""
        return self.level != READ

    @property
    def action(self) -> str:
        """What the tool does, verb first: its `com.asixto/verb`, else the words of its name."""
        return self.verb or name_words(self.name)

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

    def enum_words(self) -> str:
        """The string values of its inputs' enums ("Theater", "Regular", "Kitchen")."""
        properties = self.input_schema.get("properties") or {}
        values = []
        for prop in list(properties.values())[:30] if isinstance(properties, dict) else []:
            if isinstance(prop, dict) and isinstance(prop.get("enum"), list):
                values += [v[:60] for v in prop["enum"][:MAX_ENUM_VALUES]
                           if isinstance(v, str) and v.lower() not in _EMPTY_VALUES]
        return " ".join(values)


@dataclass(frozen=True)
class Example:
    """What a tenant taught the check: a request one of its tools serves (`tool`), or one that needs
    no tool (`tool` None). An admin's sample request, or support's correction of a turn's routing."""

    tool: str | None
    text: str


def embed_examples(texts: list[str]) -> list[np.ndarray]:
    """Each example's vectors as one row: USE (512) then e5 as a query (384), of the text normalised as a
    message is (the check compares them with messages)."""
    if not texts:
        return []
    plain = [normalise(text) or text for text in texts]
    return list(np.hstack([encoder.embed(plain), encoder.embed_e5(plain, query=True)]))


@dataclass
class CatalogIndex:
    cards: list[ToolCard]
    about: np.ndarray  # (tools, 3, 512) USE: verb, title + verb, what-it-does sentence
    asks: np.ndarray  # (requests, 512) USE: customer requests built from each tool's verb
    about_e5: np.ndarray  # (tools, 3, 384) e5 passages: the same three views
    inputs_e5: np.ndarray  # (tools, 384) e5 passage: title and inputs
    asks_e5: np.ndarray  # (requests, 384) e5 queries: the same requests
    asks_owner: np.ndarray  # (requests,): the tool each request belongs to
    weights: list[dict[str, float]]  # per tool: stem → weight
    kinds: list[str | None]  # per tool: the kind of its verb (phrasings.KINDS)
    language: str | None = None  # what the tools are written in, when clear ("es")
    # The tenant's examples of tools of this catalog (and of "no tool"): one row each
    examples_use: np.ndarray = field(default_factory=lambda: np.zeros((0, 512), np.float32))
    examples_e5: np.ndarray = field(default_factory=lambda: np.zeros((0, 384), np.float32))
    examples_owner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # tool, or -1: no tool
    # per tool: 1 where it changes something (write or destructive), 0 where it only reads
    acting: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    # What the examples teach the ranking (`taught.py`): over USE, and over USE and e5; None without examples
    taught_use: taught.Classifier | None = None
    taught_full: taught.Classifier | None = None

    def __len__(self):
        return len(self.cards)


VIEWS = 3  # per tool: verb, title + verb, what-it-does sentence


def _views(card: ToolCard) -> list[str]:
    verb = card.action
    title = card.title or name_words(card.name)
    first = re.split(r"(?<=[.!?])\s", card.purpose, maxsplit=1)[0] if card.purpose else title
    return [verb, f"{title}: {verb}", first or verb]


def _inputs_view(card: ToolCard) -> str:
    return f"{card.title or name_words(card.name)}: {card.input_words()} {card.enum_words()}".strip()


def _stems(card: ToolCard) -> Counter:
    """Stems of the tool with the weight of where they appear: the verb and name count most, but for
    the verb's action word (ACTION_WEIGHT)."""
    counts = Counter()
    action_word = stems(card.action.split()[0]) if card.action.split() else []
    for text, weight in ((card.verb, 3.0), (name_words(card.name), 2.0), (card.title, 2.0), (card.purpose, 1.0),
                         (" ".join(card.capabilities), 1.0), (card.input_words(), 0.5), (card.enum_words(), 1.0)):
        for word in stems(text):
            w = min(weight, ACTION_WEIGHT) if word in action_word else weight
            for stem in word:
                counts[stem] = max(counts[stem], w)
    return counts


@dataclass
class ToolVectors:
    """One tool's embeddings, the costly part of an index: they depend on the tool alone (its name
    and definition), so they are computed once per tool definition and shared by every catalog
    (channel, version) that has it (`index_store.py`)."""

    about: np.ndarray  # (3, 512) USE: verb, title + verb, what-it-does sentence
    asks: np.ndarray  # (requests, 512) USE: customer requests built from its verb
    about_e5: np.ndarray  # (3, 384) e5 passages: the same three views
    inputs_e5: np.ndarray  # (384,) e5 passage: title and inputs
    asks_e5: np.ndarray  # (requests, 384) e5 queries: the same requests


def _requests(card: ToolCard) -> list[str]:
    return requests_for(card.action)


def embed_tools(cards: list[ToolCard]) -> list[ToolVectors]:
    """The vectors of `cards`, with one call per encoder and prefix for all of them."""
    if not cards:
        return []
    asks = [_requests(card) for card in cards]
    views = [view for card in cards for view in _views(card)]
    flat_asks = [text for texts in asks for text in texts]
    n = len(cards)
    use = encoder.embed(views + flat_asks)
    e5 = encoder.embed_e5(views + [_inputs_view(card) for card in cards], query=False)
    asks_e5 = encoder.embed_e5(flat_asks, query=True)
    vectors, start = [], 0
    for i, texts in enumerate(asks):
        end = start + len(texts)
        vectors.append(ToolVectors(about=use[VIEWS * i: VIEWS * i + VIEWS], asks=use[VIEWS * n + start: VIEWS * n + end],
                                   about_e5=e5[VIEWS * i: VIEWS * i + VIEWS], inputs_e5=e5[VIEWS * n + i],
                                   asks_e5=asks_e5[start:end]))
        start = end
    return vectors


def assemble(cards: list[ToolCard], vectors: list[ToolVectors], examples: list[Example] = (),
             example_vectors: list[np.ndarray] = ()) -> CatalogIndex:
    """The index of `cards` from their vectors: only words and arrays, no encoder (milliseconds). An
    example of a tool not in `cards` (removed since) is left out."""
    per_tool = [_stems(card) for card in cards]
    documents = Counter(stem for found in per_tool for stem in found)
    total = max(len(cards), 1)
    idf = {stem: math.log(1 + total / count) for stem, count in documents.items()}
    weights = [{stem: weight * idf[stem] for stem, weight in found.items()} for found in per_tool]
    owner = [n for n, v in enumerate(vectors) for _row in range(len(v.asks))]

    def stacked(name, width):
        rows = [getattr(v, name) for v in vectors]
        return np.concatenate(rows) if rows else np.zeros((0, width), dtype=np.float32)

    index = CatalogIndex(
        cards=list(cards), about=np.stack([v.about for v in vectors]) if vectors else np.zeros((0, VIEWS, 512), np.float32),
        asks=stacked("asks", 512),
        about_e5=np.stack([v.about_e5 for v in vectors]) if vectors else np.zeros((0, VIEWS, 384), np.float32),
        inputs_e5=np.stack([v.inputs_e5 for v in vectors]) if vectors else np.zeros((0, 384), np.float32),
        asks_e5=stacked("asks_e5", 384), asks_owner=np.array(owner, dtype=np.int64), weights=weights,
        kinds=[kind_of(card.action) for card in cards],
        acting=np.array([1.0 if card.acts else 0.0 for card in cards], dtype=np.float32),
        language=text_language(" ".join(f"{card.title or ''} {card.purpose or ''}" for card in cards)),
        **_example_arrays(cards, examples, example_vectors))
    cheap, full = taught.classifiers(index)
    return replace(index, taught_use=cheap, taught_full=full)


def _example_arrays(cards, examples, example_vectors) -> dict:
    position = {card.name: n for n, card in enumerate(cards)}
    kept = [(position.get(e.tool, -1), v) for e, v in zip(examples, example_vectors, strict=True)
            if e.tool is None or e.tool in position]
    if not kept:
        return {}
    return {"examples_use": np.stack([v[:512] for _o, v in kept]), "examples_e5": np.stack([v[512:] for _o, v in kept]),
            "examples_owner": np.array([o for o, _v in kept], dtype=np.int64)}


def build_index(cards: list[ToolCard], examples: list[Example] = ()) -> CatalogIndex:
    return assemble(cards, embed_tools(cards), examples, embed_examples([e.text for e in examples]))


def index_key(cards: list[ToolCard], examples: list[Example] = ()) -> tuple:
    return tuple((card.name, card.digest) for card in cards) + tuple(sorted((e.tool or "", e.text) for e in examples))


def cached_index(cards: list[ToolCard], examples: list[Example] = ()) -> CatalogIndex | None:
    """The index of this exact catalog and examples when this process has it already, else None."""
    key = index_key(cards, examples)
    with _cache_lock:
        index = _cache.get(key)
        if index is not None:
            _cache.move_to_end(key)
        return index


def keep_index(cards: list[ToolCard], index: CatalogIndex, examples: list[Example] = ()) -> CatalogIndex:
    with _cache_lock:
        _cache[index_key(cards, examples)] = index
        while len(_cache) > MAX_INDEXES:
            _cache.popitem(last=False)
    return index


_cache: "OrderedDict[tuple, CatalogIndex]" = OrderedDict()
_cache_lock = threading.Lock()


def catalog_index(cards: list[ToolCard], examples: list[Example] = ()) -> CatalogIndex:
    """The index of this exact catalog (names and definition hashes) and examples, built once per
    process and waited for: the evaluation, the bench and the index task use it; a turn uses
    `index_store.ready_index`, which never waits."""
    return cached_index(cards, examples) or keep_index(cards, build_index(cards, examples), examples)


def lexical(index: CatalogIndex, words: list[frozenset[str]]) -> np.ndarray:
    """How much of each tool's vocabulary the message uses, weighted by rarity: 0 when nothing.
    `words`: the message's content words, each as its stems (`words.stems`)."""
    scores = np.zeros(len(index), dtype=np.float32)
    for n, weights in enumerate(index.weights):
        scores[n] = sum(max((weights.get(stem, 0.0) for stem in word), default=0.0) for word in words)
    return scores


@dataclass
class Signals:
    """One message against every tool of an index: one array per signal, one value per tool."""

    about: np.ndarray  # USE cosine with the tool's closest view
    asks: np.ndarray  # USE cosine with the closest request built from its verb
    lexical: np.ndarray  # weighted stems in common (`lexical`)
    kind: np.ndarray  # 1 where the message sounds like the kind of action of the tool's verb
    acting: np.ndarray  # per tool: 1 where it changes something (the index's `acting`)
    acts: float = 0.0  # log-odds that the message asks to change something rather than to know (gate's probe)
    # It asks for kinds of action and no tool does any of them (every tool's verb being of a known
    # kind: a verb of no known kind might be the one asked for).
    foreign: bool = False
    # e5's three, None until the cascade asks for them (`with_e5`)
    about_e5: np.ndarray | None = None  # e5 cosine with the closest view
    inputs_e5: np.ndarray | None = None  # e5 cosine with what the tool takes
    asks_e5: np.ndarray | None = None  # e5 cosine with the closest request
    # The tenant's examples, by USE (its cosines spread wider than e5's): per tool, the cosine with its
    # closest example (-1: it has none), and with the closest "no tool" example
    example: np.ndarray | None = None
    example_none: float = -1.0
    # `asks` and `asks_e5` without the examples (the requests built from the verb only): what the gate
    # reads, so a tenant's examples move the ranking and never the gate it was fitted without (`untaught`)
    asks_own: np.ndarray | None = None
    asks_e5_own: np.ndarray | None = None
    # Per tool, log P(tool | message) by what the tenant's examples taught (`taught.py`); None: no examples
    taught: np.ndarray | None = None

    @property
    def full(self) -> bool:
        return self.about_e5 is not None

    def untaught(self) -> "Signals":
        """These signals as if the tenant had taught no example."""
        if self.asks_own is None and self.taught is None:
            return self
        return replace(self, asks=self.asks if self.asks_own is None else self.asks_own,
                       asks_e5=self.asks_e5 if self.asks_e5_own is None else self.asks_e5_own,
                       asks_own=None, asks_e5_own=None, taught=None)


def _best_per_tool(index: CatalogIndex, cosines: np.ndarray) -> np.ndarray:
    best = np.full(len(index), -1.0, dtype=np.float32)
    np.maximum.at(best, index.asks_owner, cosines)
    return best


def _per_example(index: CatalogIndex, cosines: np.ndarray) -> tuple[np.ndarray, float]:
    best = np.full(len(index), -1.0, dtype=np.float32)
    owners = index.examples_owner
    tools = owners >= 0
    if tools.any():
        np.maximum.at(best, owners[tools], cosines[tools])
    none = cosines[~tools]
    return best, float(none.max()) if len(none) else -1.0


def _with_examples(index: CatalogIndex, asks: np.ndarray, example_cosines: np.ndarray) -> np.ndarray:
    """A tool's closest request: of those built from its verb, and of the tenant's examples of it."""
    tools = index.examples_owner >= 0
    if tools.any():
        asks = asks.copy()
        np.maximum.at(asks, index.examples_owner[tools], example_cosines[tools])
    return asks


def signals(index: CatalogIndex, plain: str, use: np.ndarray, acts: float = 0.0) -> Signals:
    """The cheap signals: `plain` is the normalised message, `use` its USE vector, `acts` the log-odds
    that it asks to change something (the gate's action probe)."""
    asked = kinds_asked(plain)
    example_cosines = index.examples_use @ use
    example, example_none = _per_example(index, example_cosines)
    own = _best_per_tool(index, index.asks @ use)
    closest = _with_examples(index, own, example_cosines)
    return Signals(
        example=example, example_none=example_none, acting=index.acting, acts=acts,
        about=(index.about @ use).max(axis=1), asks=closest, asks_own=own if closest is not own else None,
        lexical=lexical(index, expand(stems(plain))),
        kind=np.array([1.0 if kind in asked else 0.0 for kind in index.kinds], dtype=np.float32),
        foreign=bool(asked) and not asked & set(index.kinds) and None not in index.kinds,
        taught=index.taught_use.log_probabilities(use) if index.taught_use else None,
    )


def with_e5(index: CatalogIndex, cheap: Signals, e5: np.ndarray, use: np.ndarray | None = None) -> Signals:
    """The cheap signals completed with e5's, from the message's e5 vector (as a query); with its USE vector,
    the examples' full classifier too."""
    own = _best_per_tool(index, index.asks_e5 @ e5)
    closest = _with_examples(index, own, index.examples_e5 @ e5)
    return replace(cheap, about_e5=(index.about_e5 @ e5).max(axis=1), inputs_e5=index.inputs_e5 @ e5, asks_e5=closest,
                   asks_e5_own=own if closest is not own else None,
                   taught=(index.taught_full.log_probabilities(np.concatenate([use, e5]))
                           if index.taught_full and use is not None else cheap.taught))

