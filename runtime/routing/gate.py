"""The cheap check (R6): does this message need a tool, and which catalog tools are candidates?

No model call: a sentence encoder (loaded once per process) and word overlap, against the
catalog index built once per catalog version (`candidates.py`). Signals, combined:
- what the message means next to what each tool is (its verb, title and purpose) and next to
  the requests built from its verb (`phrasings.py`);
- the tool's words in the message (stems, rare words weigh more), accents and fillers of
  speech folded away (`words.py`), so chat text and voice transcripts look alike;
- small talk ("gracias", "hola", "¿eres un robot?") recognised as such: it never pays more;
- the conversation: a message that only makes sense with the previous ones ("¿y en rojo?",
  "el 12345", "sí, por favor" after the agent offered to do something) inherits the subject
  of the previous request, and is routed with it.

`check(index, messages)` returns a `GateResult`: `needs_tool`, the candidates best first with
their scores, and why (for the turn record and the evaluation).
"""

import re
from dataclasses import dataclass, field

import numpy as np

from runtime.routing import encoder
from runtime.routing.candidates import CatalogIndex, lexical, semantic
from runtime.routing.phrasings import kinds_asked
from runtime.routing.words import fold, normalise, terms

MAX_CANDIDATES = 3
# Weights and thresholds, chosen on the development half of datasets/asixto_soporte_* only.
W_ABOUT, W_ASKS, W_LEX, LEX_CAP, W_KIND = 1.0, 1.0, 0.06, 4.0, 0.25
TOOL_THRESHOLD = 0.45  # combined score above which a message asks for a tool
SMALL_TALK_SIMILARITY = 0.78  # this close to a small-talk phrase, with no tool word in it: none
FOLLOW_UP_DISCOUNT = 0.95  # a follow-up's inherited score, a little below its source's

SMALL_TALK = [
    "hola", "buenos días", "buenas tardes", "buenas noches", "gracias", "muchas gracias", "ok", "vale", "listo",
    "perfecto", "entendido", "adiós", "chao", "hasta luego", "¿eres un robot?", "¿eres una persona?", "¿quién eres?",
    "¿cómo te llamas?", "¿cómo estás?", "un momento", "espera un momento", "sí", "no", "no gracias", "jaja",
    "eso es todo", "nada más", "excelente", "me puedes repetir", "¿qué puedes hacer?",
    "hello", "hi", "good morning", "thanks", "thank you", "ok great", "bye", "goodbye", "are you a bot?",
    "who are you?", "how are you?", "wait a moment", "hold on", "yes", "no thanks", "that's all", "what can you do?",
]
# A message that leans on the previous ones: "¿y en rojo?", "and the other one?", "algo más barato".
_LEANS = re.compile(
    r"^(y|and|o|or|what about|how about|tambien|also|otro|otra|otros|otras|another|algo|alguno|alguna|mas|more|"
    r"ese|esa|esos|esas|eso|that|those|the other|el de|la de|los de|las de|el otro|la otra|en|in|con|with|sin|"
    r"without|de|del|para|for|y el|y la|y los|y las|y en|y si|and the|and in)\b"
)
_ONLY_DATA = re.compile(r"^[\w\-./@+ ]*\d[\w\-./@+ ]*$")  # "1020304050", "SOP-11", "ana@correo.com 300 123"
_YES = re.compile(r"^(si|sí|dale|claro|ok|okay|de una|hagale|hazlo|por favor|yes|sure|please|go ahead|do it|yep)\b")


@dataclass
class GateResult:
    needs_tool: bool
    candidates: list[tuple[str, float]] = field(default_factory=list)  # (tool name, score), best first
    reason: str = ""
    follow_up: bool = False

    @property
    def best(self) -> str | None:
        return self.candidates[0][0] if self.candidates else None


_small_talk = None


def _small_talk_vectors():
    global _small_talk
    if _small_talk is None:
        _small_talk = encoder.embed(SMALL_TALK)
    return _small_talk


def _scores(index: CatalogIndex, text: str, vector) -> np.ndarray:
    about, asks = semantic(index, vector)
    lex = lexical(index, terms(text))
    asked = kinds_asked(text)
    kind = np.array([W_KIND if k in asked else 0.0 for k in index.kinds], dtype=np.float32)
    return W_ABOUT * about + W_ASKS * asks + W_LEX * np.minimum(lex, LEX_CAP) + kind, lex


def _ranked(index: CatalogIndex, scores: np.ndarray) -> list[tuple[str, float]]:
    order = np.argsort(-scores, kind="stable")[:MAX_CANDIDATES]
    return [(index.cards[i].name, round(float(scores[i]), 4)) for i in order]


def _last(messages: list[dict], role: str, before: int) -> str:
    for message in reversed(messages[:before]):
        if message.get("role") == role:
            return str(message.get("content") or "")
    return ""


def check(index: CatalogIndex, messages: list[dict]) -> GateResult:
    """Route the last message of `messages` ([{"role": "user" | "assistant", "content": …}, …])."""
    if not len(index) or not messages:
        return GateResult(False, reason="no tools" if not len(index) else "no message")
    text = str(messages[-1].get("content") or "")
    plain = normalise(text)
    if not plain:
        return GateResult(False, reason="empty")
    previous_customer = _last(messages, "user", len(messages) - 1)
    previous_agent = _last(messages, "assistant", len(messages) - 1)
    texts = [plain, normalise(previous_customer), normalise(previous_agent)]
    vectors = encoder.embed(texts)
    scores, lex = _scores(index, plain, vectors[0])
    small_talk = float((_small_talk_vectors() @ vectors[0]).max())
    content = terms(plain)
    ranked = _ranked(index, scores)
    # "Sí, por favor" to the agent's "¿Quieres que abra un caso?": the agent's offer is the subject.
    agrees = bool(_YES.match(fold(text).strip(" ¿?¡!"))) and previous_agent.rstrip().endswith("?") and len(content) <= 3
    if agrees:
        offered, _lex = _scores(index, texts[2], vectors[2])
        ranked = _ranked(index, offered)
        if ranked[0][1] >= TOOL_THRESHOLD:
            return GateResult(True, ranked, reason="agrees to the agent's offer", follow_up=True)
        return GateResult(False, ranked, reason="agrees, nothing offered")
    if small_talk >= SMALL_TALK_SIMILARITY and lex.max() == 0 and not _ONLY_DATA.match(plain):
        return GateResult(False, ranked, reason="small talk")
    if ranked[0][1] >= TOOL_THRESHOLD:
        return GateResult(True, ranked, reason="request")
    # The conversation: does this message lean on a previous request?
    leans = bool(_LEANS.match(plain)) or bool(_ONLY_DATA.match(plain)) or len(content) <= 2
    if leans and (texts[1] or texts[2]):
        inherited = None
        if texts[1]:
            inherited, _lex = _scores(index, texts[1], vectors[1])
        if texts[2] and _ONLY_DATA.match(plain):
            offered, _lex = _scores(index, texts[2], vectors[2])
            inherited = offered if inherited is None else np.maximum(inherited, offered)
        if inherited is not None:
            combined = np.maximum(scores, FOLLOW_UP_DISCOUNT * inherited)
            ranked = _ranked(index, combined)
            if ranked[0][1] >= TOOL_THRESHOLD:
                return GateResult(True, ranked, reason="follow-up", follow_up=True)
    return GateResult(False, ranked, reason="below threshold")
