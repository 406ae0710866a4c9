"""JSON that comes from outside (API bodies, the dashboard's JSON text areas), held to what the
platform can process and store (A4): nesting bounded, and only text PostgreSQL can keep.

Python's JSON decoder recurses once per level, so a body nested thousands deep raises
`RecursionError`; later steps (schema validation, serialising to jsonb) recurse too, so the
bound is far below the interpreter's. PostgreSQL refuses a NUL character in text and jsonb,
and a lone surrogate cannot be encoded as UTF-8 at all: both are refused here, with the path of
the offending value, instead of failing at the database."""

import json
import math
import re

from django import forms
from django.forms.fields import InvalidJSONInput
from django.utils.translation import gettext as _

MAX_DEPTH = 32
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class JsonInputError(ValueError):
    """`message` says what is wrong; `path` where (`sample_arguments.a[0]`, or "" for the top)."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.message = message
        self.path = path

    @property
    def field(self) -> str:
        """The top-level key the problem is under: the field to report it on."""
        return re.split(r"[.\[]", self.path, maxsplit=1)[0]

    def __str__(self):
        return f"{self.message} ({self.path})" if self.path else self.message


class JsonTooDeep(JsonInputError):
    pass


class UnstorableText(JsonInputError):
    pass


def unstorable_text(text: str) -> bool:
    return _UNSTORABLE.search(text) is not None


def storable(text: str) -> str:
    """`text` with each character PostgreSQL cannot keep replaced by U+FFFD (for what must be
    kept as it came, such as a model's words, rather than refused)."""
    return _UNSTORABLE.sub("\ufffd", text)


def _shown(key) -> str:
    # Paths end up in error bodies: the offending characters themselves must not.
    return _UNSTORABLE.sub("\ufffd", str(key))


def check_json(value, *, max_depth: int = MAX_DEPTH, path: str = "") -> None:
    """Walk `value` without recursion; raise JsonInputError for nesting deeper than `max_depth`
    or a key or string PostgreSQL cannot store."""
    stack = [(value, path, 1)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if unstorable_text(item):
                raise UnstorableText(_("Text may not contain NUL characters or unpaired surrogates."), where)
            continue
        if isinstance(item, float) and not math.isfinite(item):
            raise JsonInputError(_("Numbers must be finite (no NaN or Infinity)."), where)
        if not isinstance(item, (dict, list)):
            continue
        if depth > max_depth:
            raise JsonTooDeep(_("JSON nested deeper than %(depth)d levels.") % {"depth": max_depth}, where)
        if isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{where}.{_shown(key)}" if where else _shown(key)
                if isinstance(key, str) and unstorable_text(key):
                    raise UnstorableText(_("Text may not contain NUL characters or unpaired surrogates."), child_path)
                stack.append((child, child_path, depth + 1))
        else:
            stack.extend((child, f"{where}[{index}]", depth + 1) for index, child in enumerate(item))


def load_json(text: str, *, max_depth: int = MAX_DEPTH):
    """`json.loads` for text from outside: JsonInputError for anything it or check_json refuse.
    NaN and Infinity are refused too (not JSON; jsonb refuses them)."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError as exc:
        raise JsonTooDeep(_("JSON nested deeper than %(depth)d levels.") % {"depth": max_depth}) from exc
    except json.JSONDecodeError as exc:
        raise JsonInputError(_("Not valid JSON: %(error)s") % {"error": exc.msg}) from exc
    except ValueError as exc:
        raise JsonInputError(str(exc)) from exc
    check_json(value, max_depth=max_depth)
    return value


def _refuse_constant(name):
    raise ValueError(_("Not valid JSON: %(error)s") % {"error": name})


class StorableJSONFormField(forms.JSONField):
    """Django's JSON form field (the operators' admin) held to the same bounds."""

    def to_python(self, value):
        try:
            result = super().to_python(value)
        except RecursionError as exc:
            raise forms.ValidationError(_("JSON nested deeper than %(depth)d levels.") % {"depth": MAX_DEPTH}) from exc
        try:
            check_json(result)
        except JsonInputError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return result

    def bound_data(self, data, initial):
        # What the form shows again after an error: the text as typed when it is refused here
        # (Django would parse it again, recursing, and render a lone surrogate it cannot encode).
        if self.disabled or data is None:
            return super().bound_data(data, initial)
        try:
            value = json.loads(data, cls=self.decoder)
            check_json(value)
        except (ValueError, RecursionError):
            return InvalidJSONInput(data)
        return value
