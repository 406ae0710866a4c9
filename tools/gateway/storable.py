"""Making a call record storable (G9, A4): each value as PostgreSQL's column takes it.

NUL characters and lone surrogates (which PostgreSQL's text and jsonb refuse) become U+FFFD,
strings are cut to their column's size, JSON that cannot be encoded as it is (NaN, nesting too
deep, foreign objects) is rewritten, numbers outside their column's range are dropped."""

import json
import math
import uuid

from tools.models import ToolCall

MAX_TEXT_CHARS = 20000
MAX_JSON_CHARS = 64000  # arguments beyond this keep their start only
MAX_JSON_DEPTH = 64
FIELDS = ToolCall._meta.concrete_fields  # in column order


def _converters():
    """One function per column, in column order: the plain value → what PostgreSQL stores."""
    converters = []
    for field in FIELDS:
        internal = field.get_internal_type()
        default = field.get_default  # "" for text without a default, None where null is allowed
        if internal == "JSONField":
            converters.append((field.attname, default, storable_json))
        elif internal in ("CharField", "TextField"):
            limit = field.max_length or MAX_TEXT_CHARS
            converters.append((field.attname, default, lambda value, limit=limit: storable_text(value, limit)))
        elif internal == "PositiveSmallIntegerField":
            converters.append((field.attname, default, lambda value: _in_range(value, 0, 32767)))
        elif internal == "PositiveIntegerField":
            converters.append((field.attname, default, lambda value: _in_range(value, 0, 2147483647)))
        elif internal == "FloatField":
            converters.append((field.attname, default, lambda value: value if value is None or math.isfinite(value) else None))
        else:  # UUIDs, dates, booleans, foreign keys: built by the gateway, stored as they are
            converters.append((field.attname, default, None))
    return converters


def storable_row(record: dict) -> list:
    """The INSERT parameters for one record (ToolCall values by attribute name)."""
    row = []
    for attname, default, convert in _CONVERTERS:
        value = record[attname] if attname in record else default()
        if convert is not None and value is not None:
            value = convert(value)
        row.append(value)
    return row


def storable_text(value, limit: int) -> str:
    """`value` as text PostgreSQL accepts, at most `limit` characters."""
    if type(value) is str and len(value) <= limit and value.isascii() and "\x00" not in value:
        return value  # most text: nothing to change (ASCII has no surrogates)
    if not isinstance(value, str):
        value = str(value)
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = _without_lone_surrogates(value)
    return value


# Built once: json.dumps with any option builds a new encoder on every call.
_STRICT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class EncodedJson:
    """A JSON value with its text, encoded already by whoever had to measure it (the gateway
    measures a result before recording it): the writer stores the text, not a second encoding."""

    __slots__ = ("text", "value")

    def __init__(self, value, text: str):
        self.value, self.text = value, text


def encoded_json(value) -> EncodedJson | None:
    """`value` with the JSON text storable_json would store for it; None when it has none
    as it is (NaN, an object JSON cannot encode, nesting too deep)."""
    try:
        return EncodedJson(value, _STRICT_JSON.encode(value))
    except (ValueError, TypeError, RecursionError):
        return None


def storable_json(value) -> str:
    """`value` as JSON text jsonb accepts (no \\u0000, no lone surrogates, no NaN)."""
    if not value and isinstance(value, list | dict):
        return "[]" if isinstance(value, list) else "{}"  # most of a record's lists are empty
    try:
        if isinstance(value, EncodedJson):
            text, value = value.text, value.value
        else:
            text = _STRICT_JSON.encode(value)
        text.encode("utf-8")
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
        text = json.dumps(_clean_json(value, 0), ensure_ascii=False, separators=(",", ":"))
    if "\\u0000" in text:
        text = json.dumps(_clean_json(value, 0), ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_JSON_CHARS:
        text = json.dumps({"_asixto_cut": {"chars": len(text), "start": text[:2000]}}, ensure_ascii=False)
    return text


def _clean_json(value, depth):
    if isinstance(value, str):
        return storable_text(value, MAX_JSON_CHARS)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_JSON_DEPTH:
        return "[nested too deep]"
    if isinstance(value, dict):
        return {storable_text(key, 1000): _clean_json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clean_json(item, depth + 1) for item in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    return storable_text(repr(value), 1000)


def _without_lone_surrogates(text: str) -> str:
    # UTF-16 pairs the surrogates that form a character and replaces the lone ones with U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _in_range(value, low, high):
    return value if isinstance(value, int) and low <= value <= high else None


_CONVERTERS = _converters()
