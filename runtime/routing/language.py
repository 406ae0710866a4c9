"""The customer's language (R7), detected from what they write with `py3langid` (a maintained fork
of langid.py: 4 MB, microseconds per message, restricted to the languages we pin replies to).

Short messages ("ok", "sí") say little about their language: the detector's answer counts only
when it is confident; otherwise the customer's recent messages decide together; otherwise the
conversation's own language (what the channel said) stands.
"""

import threading

from django.conf import settings

from runtime.routing.words import tokens

CONFIDENT = 0.8
MIN_WORDS = 2
_identifier = None
_lock = threading.Lock()


def _detector():
    global _identifier
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                identifier.set_languages(list(settings.ASIXTO_CUSTOMER_LANGUAGES))
                _identifier = identifier
    return _identifier


def preload():
    """Load the detector now (a worker at start, asixto/celery.py), not on a turn's path."""
    _detector()


def _guess(text: str) -> tuple[str | None, float]:
    if len(tokens(text)) < MIN_WORDS:
        return None, 0.0
    language, probability = _detector().classify(text[:2000])
    return language, float(probability)


def text_language(text: str) -> str | None:
    """The language of `text` when the detector is confident of it, else None."""
    language, probability = _guess(text)
    return language if language and probability >= CONFIDENT else None


def customer_language(*, message: str, earlier: list[str], default: str) -> str:
    """The language to reply in: the message's, if clear; else the recent customer messages'; else `default`."""
    return text_language(message) or text_language(" ".join([*earlier[-3:], message])) or default
