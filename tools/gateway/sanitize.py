"""What the model reads from a tool (G6, G7, G8, R4, T7): text only, media dropped, the server's
own secrets, tokens, traces and internal ids removed, URLs removed for voice, cut to the
per-result budget with a mark that says the content is incomplete.

`for_model` is the one sanitiser: every string a server wrote that reaches the model — a result's
text, a business error's message — passes through it. Pure functions over the result dict.
"""

import json
import re
from dataclasses import dataclass

from django.utils import translation
from django.utils.translation import gettext as _

from tools.rules.leaks import Leak, clean_data, clean_text

MEDIA_TYPES = {"image", "audio", "resource", "resource_link"}
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)


@dataclass(frozen=True)
class Sanitized:
    text: str  # exactly what the model reads
    original_chars: int  # after cleaning, before the cut
    truncated: bool
    leaks: tuple[Leak, ...]


@dataclass(frozen=True)
class ModelText:
    text: str
    structured: object  # structuredContent with secret and internal-id fields dropped
    original_chars: int
    truncated: bool
    leaks: tuple[Leak, ...]
    media_dropped: int


def truncation_mark(language: str) -> str:
    with translation.override(language):
        return _("[…truncated: this result is incomplete. Answer only with what is here and invent nothing.]")


def cut(text: str, budget: int, language: str) -> tuple[str, bool]:
    """`text` within `budget` characters, the mark included when anything was cut (R4)."""
    if len(text) <= budget:
        return text, False
    mark = truncation_mark(language)
    keep = max(budget - len(mark) - 1, 0)
    # Cut at a word boundary when one is near, so the model does not read half a word.
    head = text[:keep]
    space = head.rfind(" ", max(keep - 40, 0))
    if space > 0:
        head = head[:space]
    return f"{head}\n{mark}", True


def for_model(text: str, *, channel: str, budget: int, language: str, secrets: tuple[str, ...] = ()) -> Sanitized:
    """The one sanitiser (G7, G8, R4, T7): `secrets` are the server's configured credentials."""
    cleaned = clean_text(text, secrets=secrets)
    text = cleaned.value
    if channel == "voice":
        text = _URL.sub("", text)  # a URL read aloud helps no one (G8)
    original = len(text)
    text, truncated = cut(text, budget, language)
    return Sanitized(text=text, original_chars=original, truncated=truncated, leaks=cleaned.leaks)


def model_text(result: dict, *, channel: str, budget: int, language: str, secrets: tuple[str, ...] = ()) -> ModelText:
    content = result.get("content") if isinstance(result.get("content"), list) else []
    texts, media = [], 0
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") in MEDIA_TYPES:
            media += 1  # no media in v1 (G8)
    structured = result.get("structuredContent")
    cleaned_data = clean_data(structured, secrets=secrets) if structured is not None else None
    text = "\n".join(texts)
    if not text and cleaned_data is not None:
        text = json.dumps(cleaned_data.value, ensure_ascii=False)
    seen = for_model(text, channel=channel, budget=budget, language=language, secrets=secrets)
    leaks = seen.leaks + (cleaned_data.leaks if cleaned_data is not None else ())
    return ModelText(
        text=seen.text, structured=cleaned_data.value if cleaned_data is not None else None,
        original_chars=seen.original_chars, truncated=seen.truncated, leaks=leaks, media_dropped=media,
    )
