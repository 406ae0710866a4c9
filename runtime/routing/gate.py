"""The cheap check (R6): does this message need a tool, and which catalog tools are candidates?

No model call: two sentence encoders (loaded once per process) and word overlap, against the
catalog index built once per catalog version (`candidates.py`). A tool's score adds:
- what the message means next to what the tool is (its verb, title, purpose and inputs) and
  next to the requests built from its verb (`phrasings.py`), by both encoders;
- the tool's words in the message (Snowball stems in Spanish and English, rare words and the
  verb's object weigh more, enum values count, an action word meets its translation: "cancel" =
  "cancelar", `lexicon.py`), accents and fillers of speech folded away (`words.py`), so chat text
  and voice transcripts look alike;
- whether the message sounds like the kind of action of the tool's verb, and how well the tool's
  level (read, or acting: write or destructive) fits what the message asks (`action.py`);
- the tenant's examples, as requests of their tools.
The weights are fitted on the development domains (a conditional logit), chosen by leaving one domain
out. Check is never do (`guard.py`): a message that asks to know is not routed to a tool that acts.
Whether a tool is needed at all is a calibrated gate: a logistic regression over a few facts of
the message (its best tool's score and margin, the encoders' best cosines, word overlap, how close it
is to small talk, its length, whether it asks for a kind of action no tool does, whether it is phrased
as a request and names the verb it governs (`head.py`), whether it is a notice or thanks, a question of
general knowledge or opinion, a question about the conversation itself, whether it names neither the
customer nor the desk, whether it is clearly in another language than the catalog's, and what a request
probe hears in it: a linear read of its USE vector, and of its e5 vector too when e5 was read, whatever the
catalog), fitted on the development
files of the datasets only by `datasets/fit_gate.py` and kept here as constants (the probe in
`request_probe.json`).

A cascade keeps ordinary messages cheap (P4): the cheap signals (USE, stems, verb kinds) are read
first, and a cheap gate (the same regression without e5's features) decides alone when it is sure —
small talk, a probability below CASCADE_LOW, or above CASCADE_HIGH with a clear top-1/top-2 margin;
only the others pay for e5 (about 35–75 ms a message here) and get the full gate.

The conversation counts: a message that only makes sense with the previous ones ("¿y en rojo?",
"el 12345", "sí, por favor" after the agent offered to do something) is ranked together with
the previous request (and a little of the agent's reply), and needs a tool if either does; one that
clearly names a tool of its own ("¿y me mandas el link?" after the bill) keeps only a small share of
them. An answer to the agent's offer ("¿Te envío el enlace?") takes the offered action when it agrees
("dale", "mándamelo"); when it declines ("no, gracias, lo pago en el banco") it asks nothing, unless it
redirects ("no, mejor…"), which is routed by its own words. An answer to the agent's question for a
detail ("el martes en la tarde" to "¿Qué día le queda bien?") carries the customer's request on,
ranked with it and with the agent's reply. Taking note of an answer of the agent ("ah bueno, alcanza",
"listo, mañana pago en el banco") asks nothing, unless it goes on with a question, a request or an
order; nor does a question about that answer ("¿o sea que el 5 ya tengo todo otra vez?").

The candidates are the best score and two more chosen by reciprocal rank fusion of the score's ranking
with the rankings of single signals (words, USE requests, e5 views): the router and the composed step
see them, so a tool one strong signal prefers is worth a slot more than the score's third best.

`check(index, messages)` returns a `GateResult`: `needs_tool`, the candidates best score first with
their scores, and why (for the turn record and the evaluation).
"""

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from runtime.routing import action, encoder, grammar, guard
from runtime.routing.candidates import CatalogIndex, Signals, signals, with_e5
from runtime.routing.head import governed
from runtime.routing.language import text_language
from runtime.routing.words import fold, normalise, stems

MAX_CANDIDATES = 3
# A tool's score: weights of its signals, chosen on the development files of datasets/ only.
# A tool's score is a weighted sum of its signals (`rank_features`): by the cheap signals alone, or with e5's. The
# weights are a conditional logit (softmax over the catalog's tools) fitted by datasets/fit_gate.py on the
# development domains' requests, chosen by leaving one domain out.
RANK_SIGNALS = ("about", "asks", "lexical", "kind", "level", "about_e5", "inputs_e5", "asks_e5")
CHEAP_WEIGHTS = (14.22, 1.5911, 0.5815, 1.4661, 3.3296)
FULL_WEIGHTS = (9.4795, -1.1484, 0.4382, 1.364, 3.3012, 38.4334, 38.0598, 14.2172)
LEX_CAP = 6.0
FOLLOW_UP_AGENT = 0.3  # share of the agent's last reply in a follow-up's ranking
# A follow-up that names its own tool clearly ("¿y me mandas el link?" after the balance: its own top-1/top-2
# margin this wide) is ranked mostly by its own words; the earlier messages keep this share, to break ties.
# The margin is in score units: 3.0 with the fitted weights is the share of a score's range that 0.2 was with the
# hand-set weights before them (sum of |weights| 114 against 8).
FOLLOW_UP_OWN_MARGIN, FOLLOW_UP_CLEAR_SHARE = 3.0, 0.3
# The first candidate is the score's best; the second and third are fused (`_ranked`): the score's ranking
# and the rankings of a few single signals, each tool worth Σ 1 / (FUSION_K + its rank) (reciprocal rank
# fusion), so a tool one strong signal prefers gets a slot the added score would give to another. Signals
# and constant chosen by leave-one-file-out cross-validation on the development files of datasets/ only.
FUSED_SIGNALS = ("lexical", "asks", "about_e5")
FUSION_K = 1.0
SMALL_TALK_SIMILARITY = 0.78  # this close to a small-talk phrase, with no tool word in it: none
# What the message sounds like, whatever the catalog: a linear probe over its USE vector gives the log-odds that
# it asks a desk to do or look up something (not thanks, an opinion, a how-to question, a notice), fitted on the
# development files' stand-alone messages by datasets/fit_gate.py and kept in request_probe.json; one more fact for
# both gates.
REQUEST_PROBE = Path(__file__).with_name("request_probe.json")
# For a message e5 was read for (the full gate's), the request probe reads its USE and e5 vectors side by side
# (`request_probe_full.json`, fitted the same way by datasets/fit_gate.py): alone, left out one domain at a time, it
# tells 0.861 of stand-alone messages right against 0.831 with USE alone; in the check, the full gate's accuracy
# over the 15 business domains rose from 0.787 to 0.795 (datasets/README.md). Not fitted: USE alone.
REQUEST_PROBE_FULL = Path(__file__).with_name("request_probe_full.json")
PROBE_CLIP = 8.0
# The tenant's examples are requests of their tools, compared as the requests built from a tool's verb are (the
# "asks" signals, `candidates.signals`); a message this close to one (USE cosine, EXAMPLE_MATCH) is decided by it:
# its tool, or no tool (a support correction of that very message). An extra score term for closeness to examples
# changed nothing when left out one domain at a time (weights 0, 4, 15, 40), so there is none.
EXAMPLE_MATCH = 0.9
# What the examples teach as a whole (`taught.py`: a classifier of the catalog's own, fitted on its texts and its
# examples) adds this times its log-probability of each tool to the score; chosen by leaving one domain out.
TAUGHT_WEIGHT = 3.0
# The gate: P(needs a tool) = logistic(GATE_BIAS + Σ coefficient × feature), features in the order
# of `gate_features`. Fitted by datasets/fit_gate.py on the dev files (see datasets/README.md).
GATE_COEFFICIENTS = (0.2408, 0.0785, 4.3871, -5.7758, -0.5055, -4.0480, 0.1839, 0.0044, -1.6322, -2.0399, -1.9919, 1.3414, -3.5737, 1.5465, -1.5503, -1.9599, -1.6418, 0.4332, 0.7107, 2.0382, 0.0364)
GATE_BIAS = -13.2547
GATE_THRESHOLD = 0.5
# The cascade's cheap gate (no e5 feature, same fit), and the band where it decides alone: below
# CASCADE_LOW no tool; above CASCADE_HIGH with a top-1/top-2 margin of CASCADE_MARGIN a tool, ranked
# without e5. In between, e5 is read. Fitted by datasets/fit_gate.py on the dev files only; the band
# is its "2.0% errors allowed" choice: the cheap gate alone may misjudge 2% of dev messages, so that
# e5 is read on fewer messages than before the offer/decline facts (P4), with dev accuracy unchanged.
CHEAP_COEFFICIENTS = (0.2998, 0.0545, -0.6035, -4.5780, 0.1387, 0.0733, -1.6003, -1.5999, 1.3852, -3.7396, 1.5382, -1.8083, -2.0085, -1.3241, 0.2167, 0.4930, 1.6378, 0.1756)
CHEAP_BIAS = 0.8313
CASCADE_LOW, CASCADE_HIGH, CASCADE_MARGIN = 0.13, 0.58, 2.0
FOLLOW_UP_THRESHOLD = 0.5  # a follow-up inherits a request this likely
ANSWER_SHARE = 0.5  # an answer's own words in its ranking, next to the request it answers for (1.0)
ANSWER_AGENT = 1.0  # and the agent's reply that asked: the step the agent is taking
# A yes to the agent's offer is ranked by the offer's question, with these shares of the agent's whole reply and
# of the customer's own words (when there are more than a yes).
OFFER_REPLY, OFFER_OWN = 0.3, 0.5

@dataclass
class GateResult:
    needs_tool: bool
    candidates: list[tuple[str, float]] = field(default_factory=list)  # (tool name, score), best first
    reason: str = ""
    follow_up: bool = False
    probability: float = 0.0  # P(needs a tool) of what decided (the message, or the request it follows up)
    acts: float = 0.0  # log-odds that what decided asks to change something rather than to know

    @property
    def best(self) -> str | None:
        return self.candidates[0][0] if self.candidates else None


_small_talk = {}


def _small_talk_vectors(which: str) -> np.ndarray:
    if which not in _small_talk:
        phrases = grammar.SMALL_TALK
        _small_talk[which] = encoder.embed(phrases) if which == "use" else encoder.embed_e5(phrases, query=True)
    return _small_talk[which]


@dataclass
class Reading:
    """One message of the conversation as the check reads it: with the cheap signals only, or
    with e5's too (`full`) when the cheap ones were not sure. What depends on the text alone is
    worked out once (both gates and the follow-up logic ask for it)."""

    plain: str
    signals: Signals
    scores: np.ndarray  # per tool
    small_talk: tuple[float, float | None]  # best cosine with a small-talk phrase: USE, e5 (None: not read)
    request: float  # the request probe's log-odds (`sounds_like_request`)
    # Clearly written in another language than the catalog's ("where is my order" to Spanish tools): the
    # encoders' cosines across languages run lower, so the gates read them knowing it.
    other_language: bool = False
    text: str = ""  # as written (the action combination reads its marks again when e5 is read)
    use: np.ndarray | None = field(default=None, repr=False)  # its USE vector

    @property
    def full(self) -> bool:
        return self.signals.full

    @cached_property
    def words(self) -> int:
        return len(stems(self.plain))

    @cached_property
    def only_data(self) -> bool:
        return bool(grammar.ONLY_DATA.match(self.plain))

    @property
    def is_small_talk(self) -> bool:
        return self.small_talk[0] >= SMALL_TALK_SIMILARITY and self.signals.lexical.max() == 0 and not self.only_data

    @cached_property
    def request_form(self) -> bool:
        return bool(grammar.REQUEST_FORM.search(self.plain))

    @cached_property
    def governs(self) -> bool:
        """It names the action it asks for where a request does ("¿me pueden cambiar…?", "alárgamelo",
        "I'd like to know…", `head.governed`)."""
        return governed(self.plain) is not None

    @cached_property
    def notice(self) -> bool:
        """A notice or thanks, asking nothing ("ya pagué, solo les aviso")."""
        return bool(grammar.NOTICE.search(self.plain)) and not self.request_form

    @cached_property
    def knowledge(self) -> bool:
        """A question of general knowledge or an opinion ("¿qué diferencia hay entre…?", "carísimo")."""
        return bool(grammar.KNOWLEDGE.search(self.plain))

    @cached_property
    def about_chat(self) -> bool:
        """About the conversation itself ("¿me repites el número?")."""
        return bool(grammar.ABOUT_CHAT.search(self.plain))

    @cached_property
    def impersonal(self) -> bool:
        """Names neither the customer nor the desk: a question of the world, not of an account."""
        return not grammar.PERSONAL.search(self.plain)

    @property
    def foreign(self) -> bool:
        """It asks for a kind of action ("calcula…", "busca…") that no tool of the catalog does."""
        return self.signals.foreign

    @property
    def settled(self) -> bool:
        """The cheap signals are sure enough: e5 would not change the decision (fitted on dev)."""
        if self.is_small_talk:
            return True
        probability = tool_probability(self)
        if probability <= CASCADE_LOW:
            return True
        # the margin without what the examples taught as a whole: the band was fitted without it, and its
        # log-probabilities would settle messages cheaply that the full gate reads
        scores = self.scores if self.signals.taught is None else cheap_scores(replace(self.signals, taught=None))
        return probability >= CASCADE_HIGH and _margin(scores) >= CASCADE_MARGIN


def sounds_like_request(use: np.ndarray, e5: np.ndarray | None = None) -> float:
    """The request probe's log-odds for a message's USE vector (and its e5 one, when read), clipped to ±PROBE_CLIP."""
    return action.probe(use, REQUEST_PROBE, full=REQUEST_PROBE_FULL, e5=e5)


def rank_features(s: Signals, *, full: bool) -> np.ndarray:
    """Per tool, the signals the score weighs (RANK_SIGNALS; e5's three only when `full`). "level" is how well
    the tool's level fits what the message asks: P(acts) − ½ for a tool that acts, ½ − P(acts) for one that reads."""
    columns = [s.about, s.asks, np.minimum(s.lexical, LEX_CAP), s.kind, (action.probability(s.acts) - 0.5) * (2 * s.acting - 1)]
    if full:
        columns += [s.about_e5, s.inputs_e5, s.asks_e5]
    return np.stack(columns, axis=1).astype(np.float32)


def cheap_scores(s: Signals) -> np.ndarray:
    return _with_taught(s, rank_features(s, full=False) @ np.asarray(CHEAP_WEIGHTS, dtype=np.float32))


def tool_scores(s: Signals) -> np.ndarray:
    if not s.full:
        return cheap_scores(s)
    return _with_taught(s, rank_features(s, full=True) @ np.asarray(FULL_WEIGHTS, dtype=np.float32))


def _with_taught(s: Signals, scores: np.ndarray) -> np.ndarray:
    """The score and, where the tenant taught examples, TAUGHT_WEIGHT × their classifier's log-probability."""
    return scores if s.taught is None else scores + TAUGHT_WEIGHT * s.taught


def read(index: CatalogIndex, texts: list[str], *, cascade: bool = True) -> list[Reading | None]:
    """Each text read against the index (None for a text with no words). The cascade: USE and
    words first, for all texts in one call; e5 (the costly encoder) only for the texts the
    cheap signals are not sure about, again in one call. `cascade=False` reads all with e5."""
    plain = [normalise(text) for text in texts]
    present = [p for p in plain if p]
    if not present:
        return [None] * len(texts)
    use = encoder.embed(present)
    talk_use = _small_talk_vectors("use")
    readings = []
    raw = [text for text, p in zip(texts, plain) if p]
    for n, p in enumerate(present):
        found = signals(index, p, use[n], action.acts(raw[n], p, use[n]))
        language = text_language(p)
        readings.append(Reading(p, found, tool_scores(found), (float((talk_use @ use[n]).max()), None),
                                sounds_like_request(use[n]),
                                bool(language and index.language and language != index.language), raw[n], use[n]))
    complete(index, readings, [n for n, reading in enumerate(readings) if not cascade or not reading.settled])
    found = iter(readings)
    return [next(found) if p else None for p in plain]


def complete(index: CatalogIndex, readings: list[Reading | None], which: list[int]) -> None:
    """Reads e5 for `readings[n]`, n in `which` (those not read with it yet), in one encoder call."""
    which = [n for n in which if readings[n] is not None and not readings[n].full]
    if not which:
        return
    e5 = encoder.embed_e5([readings[n].plain for n in which], query=True)
    talk_e5 = _small_talk_vectors("e5")
    for row, n in enumerate(which):
        cheap = readings[n]
        found = with_e5(index, cheap.signals, e5[row], cheap.use)
        request = cheap.request
        if cheap.use is not None:  # the probes again, over both encoders
            request = sounds_like_request(cheap.use, e5[row])
            if action.reads_e5():
                found = replace(found, acts=action.acts(cheap.text, cheap.plain, cheap.use, e5[row]))
        readings[n] = Reading(cheap.plain, found, tool_scores(found), (cheap.small_talk[0], float((talk_e5 @ e5[row]).max())),
                              request, cheap.other_language, cheap.text, cheap.use)


def _margin(scores: np.ndarray) -> float:
    top = np.sort(scores)[::-1]
    return float(top[0] - top[1]) if len(top) > 1 else 1.0


def cheap_features(reading: Reading) -> list[float]:
    """What the cheap gate weighs (no e5), in the order of CHEAP_COEFFICIENTS; the tenant's examples
    left out (`Signals.untaught`): they rank, the gate was fitted without them."""
    s = reading.signals.untaught()
    scores = cheap_scores(s)
    return [float(scores.max()), _margin(scores), float(s.about.max()), float(s.asks.max()),
            min(float(s.lexical.max()), LEX_CAP) / LEX_CAP, float(s.kind.max() > 0), reading.small_talk[0],
            min(reading.words, 6) / 6, float(reading.only_data), float(reading.foreign), float(reading.request_form),
            float(reading.notice), float(reading.knowledge), float(reading.about_chat), float(reading.impersonal),
            float(reading.other_language), reading.request / PROBE_CLIP, float(reading.governs)]


def gate_features(reading: Reading) -> list[float]:
    """What the full gate weighs, in the order of GATE_COEFFICIENTS (a `full` reading); without the
    tenant's examples, as the cheap gate's."""
    s = reading.signals.untaught()
    scores = tool_scores(s) if s is not reading.signals else reading.scores
    return [float(scores.max()), _margin(scores), float(s.about_e5.max()), float(s.asks_e5.max()), float(s.about.max()),
            float(s.asks.max()), min(float(s.lexical.max()), LEX_CAP) / LEX_CAP, float(s.kind.max() > 0),
            reading.small_talk[0], reading.small_talk[1], min(reading.words, 6) / 6, float(reading.only_data),
            float(reading.foreign), float(reading.request_form), float(reading.notice), float(reading.knowledge),
            float(reading.about_chat), float(reading.impersonal), float(reading.other_language),
            reading.request / PROBE_CLIP, float(reading.governs)]


def _logistic(bias: float, coefficients, features) -> float:
    z = bias + sum(c * f for c, f in zip(coefficients, features, strict=True))
    return 1 / (1 + math.exp(-max(min(z, 50.0), -50.0)))


def tool_probability(reading: Reading) -> float:
    """P(needs a tool): by the full gate when e5 was read, else by the cheap one."""
    if reading.full:
        return _logistic(GATE_BIAS, GATE_COEFFICIENTS, gate_features(reading))
    return _logistic(CHEAP_BIAS, CHEAP_COEFFICIENTS, cheap_features(reading))


def _signal(reading: Reading, name: str) -> np.ndarray | None:
    """One signal of a reading, per tool (None: e5's, not read)."""
    if name == "lexical":
        return np.minimum(reading.signals.lexical, LEX_CAP)
    return getattr(reading.signals, name)


def _rank_positions(values: np.ndarray) -> np.ndarray:
    """Each tool's place in the ranking by `values`: 1 for the best (ties in catalog order)."""
    positions = np.empty(len(values), dtype=np.float64)
    positions[np.argsort(-values, kind="stable")] = np.arange(1, len(values) + 1)
    return positions


def _ranked(index: CatalogIndex, parts: list[tuple[float, Reading]]) -> list[tuple[str, float]]:
    """The candidates of the readings in `parts` (weight, reading), with their scores added: the best
    score, and the best two of the others by the fused rankings (FUSED_SIGNALS); listed best score first."""
    scores = sum(weight * reading.scores for weight, reading in parts)
    order = np.argsort(-scores, kind="stable")
    fused = 1 / (FUSION_K + _rank_positions(scores))
    for name in FUSED_SIGNALS:
        values = [_signal(reading, name) for _weight, reading in parts]
        if any(v is None for v in values):
            continue
        combined = sum(weight * v for (weight, _reading), v in zip(parts, values))
        if combined.max() > combined.min():  # a signal that ranks nothing (no word in common) has no say
            fused += 1 / (FUSION_K + _rank_positions(combined))
    fused[order[0]] = np.inf
    chosen = np.lexsort((-scores, -fused))[:MAX_CANDIDATES]  # by fused rank, ties by score
    return [(index.cards[i].name, round(float(scores[i]), 4)) for i in sorted(chosen, key=lambda i: -scores[i])]


def _acknowledges(reading: Reading, text: str) -> bool:
    """Takes note of the agent's answer and asks nothing more: no question (by its mark, or by its words,
    as a voice transcript has no marks), no request, no order, nothing added with "y…"/"and…"."""
    folded = fold(text).strip(" ¡!")
    found = grammar.ACKNOWLEDGES.match(folded)
    if not found or "?" in text or reading.request_form or grammar.IMPERATIVE.search(reading.plain):
        return False
    rest = normalise(folded[found.end():])
    return not grammar.GOES_ON.match(rest) and not grammar.QUESTION_WORD.search(rest)


def _leans(reading: Reading, text: str) -> bool:
    # "ok y cuándo vence la del mes pasado": an acknowledgement first hides the "y…" that leans.
    after_acknowledgement = grammar.ACKNOWLEDGES.sub("", reading.plain, count=1).lstrip()
    # Thanks or a notice ("de una, mil gracias") closes what came before rather than leaning on it.
    return not reading.notice and (bool(grammar.LEANS.match(reading.plain) or grammar.LEANS.match(after_acknowledgement))
                                   or _only_data(reading, text) or reading.words <= 2)


def _answers(reading: Reading, text: str, opening: str) -> bool:
    """Gives the agent what it asked for ("el martes en la tarde", "Calle 134 # 9-51", "sí, dos veces, y sigue
    igual") rather than asking something of its own: no question, notice, claim, word about the chat, nothing
    added ("y…", "también…") and no request the gate is sure of on its own ("mejor" is no redirect here: "el
    martes mejor")."""
    return not ("?" in text or grammar.QUESTION_WORD.match(opening) or reading.notice or reading.knowledge
                or reading.about_chat or grammar.GOES_ON.match(opening) or grammar.ALSO.search(opening)
                or (reading.request_form and tool_probability(reading) >= GATE_THRESHOLD))


def _in_context(index: CatalogIndex, current: Reading, customer: str, agent: str) -> list[Reading | None]:
    """The message with the customer's previous one and the agent's reply, all three read with e5: a message
    that leans on others or answers the agent is unsure by nature."""
    readings = [current, *read(index, [customer, agent], cascade=False)]
    complete(index, readings, [0])
    return readings


def _only_data(reading: Reading, text: str) -> bool:
    return reading.only_data or bool(grammar.EMAIL.match(text))


def check(index: CatalogIndex, messages: list[dict], *, cascade: bool = True) -> GateResult:
    """Route the last message of `messages` ([{"role": "user" | "assistant", "content": …}, …]).
    `cascade=False` reads every message with e5 (the bench compares both). A route to a tool that acts
    is held to the check-or-do rules (`guard.guarded`)."""
    result = _decided(index, messages, cascade=cascade)
    text = str(messages[-1].get("content") or "") if messages else ""
    return guard.guarded(index, result, text)


def _taught_decision(index: CatalogIndex, reading: Reading, ranked) -> GateResult | None:
    """A message this close to one of the tenant's examples is decided by it (None: no example is)."""
    if not len(index.examples_owner):
        return None
    s = reading.signals
    best = int(np.argmax(s.example))
    if s.example_none >= EXAMPLE_MATCH and s.example_none >= s.example[best]:
        return GateResult(False, ranked, reason="like a 'no tool' example")
    if s.example[best] >= EXAMPLE_MATCH:
        name = index.cards[best].name
        first = next((c for c in ranked if c[0] == name), (name, round(float(reading.scores[best]), 4)))
        return GateResult(True, [first, *[c for c in ranked if c[0] != name]][:MAX_CANDIDATES],
                          reason="like an example of its tool", probability=1.0, acts=s.acts)
    return None


def _decided(index: CatalogIndex, messages: list[dict], *, cascade: bool) -> GateResult:
    if not len(index) or not messages:
        return GateResult(False, reason="no tools" if not len(index) else "no message")
    text = str(messages[-1].get("content") or "")
    if not normalise(text):
        return GateResult(False, reason="empty")
    previous_customer = grammar.last(messages, "user", len(messages) - 1)
    previous_agent = grammar.last(messages, "assistant", len(messages) - 1)
    (current,) = read(index, [text], cascade=cascade)
    ranked = _ranked(index, [(1.0, current)])
    # "Sí, por favor" to the agent's "¿Quieres que abra un caso?": the agent's offer is the subject.
    stripped = fold(text).strip(" ¿?¡!")
    opening = grammar.LEADING_FILLER.sub("", stripped)
    opening_words = normalise(opening)
    asked = "?" in previous_agent  # "¿Quiere revisar el envío? Si tiene el número, compártamelo."
    agent_question = grammar.question(previous_agent)
    folded_question = fold(agent_question)
    # "¿Desea que le agende la visita?" offers; "¿Para qué fecha desea la visita?" asks for a detail.
    offered = (asked and bool(grammar.OFFER.search(folded_question)) and not grammar.ASKS_DETAIL.match(folded_question.lstrip(" ¿")))
    redirects = bool(grammar.REDIRECT.search(opening_words))
    # A longer yes agrees too when the agent offered something and the rest only gives its details ("sí,
    # para el sábado en la mañana"), not another request ("sí, y también…").
    agrees = bool(grammar.YES.match(opening)) and asked and (current.words <= 3 or (
        offered and not redirects and not grammar.ALSO.search(opening_words)))
    if agrees:
        question, reply = read(index, [agent_question, previous_agent], cascade=cascade)
        # The offer is the question when it names the action ("¿Te genero el enlace?": an offer in the words of a
        # tool's kind of action, or a request by the gate), else the whole reply ("Te puedo pasar al plan de 500
        # megas. ¿Lo hago?").
        names_action = question is not None and (
            (offered and question.signals.kind.max() > 0) or tool_probability(question) >= FOLLOW_UP_THRESHOLD)
        offer = question if names_action else reply
        if offer is not None and (names_action or tool_probability(offer) >= FOLLOW_UP_THRESHOLD):
            # An offer in pronouns ("¿Quieres que lo solicite?", "Would you like me to check its status?") names its
            # object earlier in the reply; a yes with words of its own ("sí, agrégala solo a la ida") names it too.
            parts = [(1.0, offer)]
            if offer is question and OFFER_REPLY:
                parts.append((OFFER_REPLY, reply))
            if current.words > 2 and OFFER_OWN:
                parts.append((OFFER_OWN, current))
            return GateResult(True, _ranked(index, parts), reason="agrees to the agent's offer", follow_up=True,
                              probability=tool_probability(offer), acts=offer.signals.acts)
        # Nothing offered: a bare "sí" is small talk below; "si tengo algún saldo pendiente" ("whether I have…",
        # the same letters) answers "¿qué te gustaría revisar?" with a request of its own.
    # "No, gracias" to an offer asks nothing, whatever it names ("no, lo pago en el banco"); a redirect
    # ("no, mejor mándenme un técnico") is read as a request of its own below.
    if offered and grammar.NO.match(opening) and not redirects:
        return GateResult(False, ranked, reason="declines the agent's offer")
    if not asked and previous_agent and _acknowledges(current, text):
        return GateResult(False, ranked, reason="acknowledges the agent's answer")
    if current.is_small_talk:
        return GateResult(False, ranked, reason="small talk")
    # "El martes en la tarde" to "¿Qué día le queda mejor?" after "quiero que me manden un técnico": an answer
    # to the agent's question carries the customer's request on, whatever its own words are about (an address).
    context = None  # the message with the previous two, all read with e5 (`_in_context`): read once
    if asked and not offered and previous_customer and _answers(current, text, opening_words):
        context = _in_context(index, current, previous_customer, previous_agent)
        current, request, reply = context
        if request is not None and tool_probability(request) >= FOLLOW_UP_THRESHOLD:
            parts = [(ANSWER_SHARE, current), (1.0, request)] + ([(ANSWER_AGENT, reply)] if reply is not None else [])
            return GateResult(True, _ranked(index, parts), reason="answers the agent's question", follow_up=True,
                              probability=tool_probability(request), acts=request.signals.acts)
    # "¿O sea que el 5 ya tengo los 20 completos?" after the agent's answer asks about that answer.
    if (previous_agent and not asked and grammar.CLARIFIES.match(stripped) and not current.request_form
            and not grammar.IMPERATIVE.search(current.plain)):
        return GateResult(False, ranked, reason="asks about the agent's answer")
    leans = _leans(current, text) and bool(previous_customer or previous_agent)
    taught = None if leans else _taught_decision(index, current, ranked)
    if taught is not None:
        return taught
    probability = tool_probability(current)
    # The conversation: does this message lean on a previous request?
    if leans:
        current, request, reply = context or _in_context(index, current, previous_customer, previous_agent)
        probability, ranked = tool_probability(current), _ranked(index, [(1.0, current)])
        combined = [(1.0, current)]
        context = FOLLOW_UP_CLEAR_SHARE if _margin(current.scores) >= FOLLOW_UP_OWN_MARGIN else 1.0
        inherited = 0.0
        if request is not None:
            combined.append((context, request))
            inherited = tool_probability(request)
        if reply is not None:
            combined.append((context * FOLLOW_UP_AGENT, reply))
            if _only_data(current, text):  # "1020304050" after "¿cuál es tu número de documento?"
                inherited = max(inherited, tool_probability(reply))
        if inherited >= FOLLOW_UP_THRESHOLD:  # it leans on a request: a follow-up, however likely alone
            # what it asks to do is its own when it says, else the request's ("¿y el otro?")
            acts = current.signals.acts if abs(current.signals.acts) >= 1 or request is None else request.signals.acts
            return GateResult(True, _ranked(index, combined), reason="follow-up", follow_up=True,
                              probability=inherited, acts=acts)
        if request is not None:
            ranked = _ranked(index, combined)
    if probability >= GATE_THRESHOLD:
        return GateResult(True, ranked, reason="request", probability=probability, acts=current.signals.acts)
    return GateResult(False, ranked, reason="below threshold", probability=probability)
