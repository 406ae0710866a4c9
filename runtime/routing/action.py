"""Check or do (R6, issue 18): does a message ask to change something (create, change, cancel, pay,
send, report…) or to know something (look up, status, search)? Read from the message alone,
whatever the business, in Spanish and English.

Two kinds of evidence, combined by a logistic regression fitted by `datasets/fit_gate.py` on the
development domains' requests (each labelled by the level of the tool it needs) and chosen by
leaving one domain out:
- the action probe: a linear read of the message's USE vector (`action_probe.json`);
- the grammar of the request, domain-free: a question (its mark, or a question word first), a thing
  the customer did before ("solicité…", "I placed…"), the kinds of action its verbs name
  (`phrasings.kinds_asked`: status and search are knowing, the others doing), a request form
  ("quiero…", "could you…"), an order ("cancela…", "send…"), asking to know ("quiero saber…",
  "can you tell me…"), and the verb the request governs (`head.governed`: "¿le pueden **poner**…?",
  "quería **saber** si…", "**hacedme**…"), a verb of knowing or any other.
`acts(text, plain, use)` gives the log-odds that it asks to act.
"""

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from runtime.routing.head import governed
from runtime.routing.phrasings import done_before, kinds_asked
from runtime.routing.words import fold

ACTION_PROBE = Path(__file__).with_name("action_probe.json")
# The same probe over the USE and e5 vectors side by side, for a message e5 was read for (the cascade's unsure ones),
# when fitted (`fit_gate.py --set FULL_PROBES=both`). Not shipped: left out one domain at a time it moved the gate
# from 0.787 to 0.800 but top-1 from 0.680 to 0.675 and harmful routes from 2.9% to 3.3% (datasets/README.md), so
# the USE probe reads every message.
ACTION_PROBE_FULL = Path(__file__).with_name("action_probe_full.json")


def probability(log_odds: float) -> float:
    """The logistic of `log_odds`, clipped so no value overflows."""
    return 1 / (1 + math.exp(-max(min(log_odds, 50.0), -50.0)))



PROBE_CLIP = 8.0
KNOWING = {"status", "search", "locate"}
# Fitted by datasets/fit_gate.py (leave one domain out); the order of `features`.
ACTION_COEFFICIENTS = (1.0815, -1.2420, -0.7861, -1.0778, -0.3906, 0.0136, 0.6875, 0.1967, -2.8617, 2.1693, -0.1085)
ACTION_BIAS = 0.5028

_QUESTION_START = re.compile(
    r"^(que|qué|cual|cuales|cuando|donde|como|cuanto|cuanta|cuantos|cuantas|por que|ya|todavia|aun|sigue|siguen|"
    r"me (confirma|confirman|dice|dicen|podria decir|puede decir)|sabe|saben|hay|tengo|tiene|"
    r"is|are|was|were|has|have|had|did|does|do|when|where|what|how|why|which|who|any|can you tell|could you tell)\b")
_KNOW_FORM = re.compile(
    r"\b(quiero saber|quisiera saber|queria saber|me gustaria saber|necesito saber|para saber|saber si|saber cuando|"
    r"saber cuanto|saber como|consultar|averiguar|ver si|revisar si|verificar si|confirmar si|"
    r"dime si|digame si|dime cuando|dime que|digame que|want to know|wanted to know|like to know|need to know|tell me|let me know|find out|check (if|whether|on|the status)|"
    r"see if|wondering|is it|are they|has it|have you|did you|status|yet\b|still)\b")
_REQUEST_FORM = re.compile(
    r"\b(quiero|quisiera|queria|necesito|me gustaria|puedes|podrias|me (puede|pueden|podria|podrian)|me ayudas|ayudame|"
    r"por favor|porfa|hagame|haga|hazme|i d like|i would like|i want|i need|can you|could you|would you|please)\b")
_ORDER = re.compile(
    r"^(\w+ )?(cancela|cancelame|cancelen|cambia|cambiame|cambien|agenda|agendame|reserva|reservame|abre|abreme|genera|"
    r"generame|manda|mandame|envia|enviame|pasa|pasame|paga|pagame|bloquea|bloqueen|anula|anulen|transfiere|dame|"
    r"registra|registrame|inscribe|inscribeme|solicita|pide|pideme|da de baja|den de baja|"
    r"cancel|change|book|schedule|send|open|file|submit|pay|block|transfer|move|add|remove|delete|update|put me|sign me)\b")


# Putting off or turning down what was being done ("mejor al rato lo hago", "no, así déjela", "not now").
_PUTS_OFF = re.compile(r"^(\w+ )?(no\b|nah\b|nope\b|mejor (no|despues|luego|al rato|otro dia|lo dejo|la dejo|asi)\b|despues\b|"
                       r"luego\b|al rato\b|ahorita no\b|todavia no\b|aun no\b|not now\b|not yet\b|later\b|"
                       r"maybe later\b|never ?mind\b|forget it\b|dejalo|dejala|dejelo|dejela)")


def asks_to_know(text: str, plain: str) -> bool:
    """A question, by its mark, its first words, or a request to be told ("dime si…", "tell me…")."""
    opening = fold(text).strip(" ¿¡\"'")
    return "?" in text or bool(_QUESTION_START.match(opening)) or bool(_KNOW_FORM.search(plain))


def puts_off(plain: str) -> bool:
    return bool(_PUTS_OFF.match(plain))


@lru_cache(maxsize=8)
def _load(path: Path) -> tuple[np.ndarray, float] | None:
    """A probe's weights and bias (None: not fitted)."""
    if not path.exists():
        return None
    fitted = json.loads(path.read_text())
    return np.asarray(fitted["weights"], dtype=np.float32), float(fitted["bias"])


def probe(use: np.ndarray, path: Path | None = None, *, full: Path | None = None, e5: np.ndarray | None = None) -> float:
    """A probe's log-odds for a USE vector (the action probe's, or the one at `path`), clipped to ±PROBE_CLIP; with
    the message's `e5` vector, the probe at `full` over both when it is fitted. A probe not fitted says nothing (0)."""
    fitted = _load(full) if e5 is not None and full is not None else None
    vector = np.concatenate([use, e5]) if fitted is not None else use
    fitted = fitted or _load(path or ACTION_PROBE)
    if fitted is None:
        return 0.0
    weights, bias = fitted
    return float(np.clip(float(vector @ weights) + bias, -PROBE_CLIP, PROBE_CLIP))


def features(text: str, plain: str, probe_log_odds: float) -> list[float]:
    """What the combination weighs: the probe and the grammar of the request (`text` raw, `plain` normalised)."""
    kinds = kinds_asked(plain)
    opening = fold(text).strip(" ¿¡\"'")
    head = governed(plain)
    return [probe_log_odds / PROBE_CLIP, float("?" in text), float(bool(_QUESTION_START.match(opening))),
            float(done_before(plain)), float(bool(kinds & KNOWING)), float(bool(kinds - KNOWING)),
            float(bool(_REQUEST_FORM.search(plain))), float(bool(_ORDER.match(plain))), float(bool(_KNOW_FORM.search(plain))),
            float(head == "act"), float(head == "know")]


def reads_e5() -> bool:
    """Whether the action probe over both encoders is fitted (else a message's e5 vector changes nothing here)."""
    return _load(ACTION_PROBE_FULL) is not None


def acts(text: str, plain: str, use: np.ndarray, e5: np.ndarray | None = None) -> float:
    """The log-odds that the message asks to change something rather than to know something (with its `e5` vector
    when read: the probe over both encoders)."""
    found = features(text, plain, probe(use, full=ACTION_PROBE_FULL, e5=e5))
    z = ACTION_BIAS + sum(c * f for c, f in zip(ACTION_COEFFICIENTS, found, strict=True))
    return float(max(min(z, 30.0), -30.0)) if math.isfinite(z) else 0.0
