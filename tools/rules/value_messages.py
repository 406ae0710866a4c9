"""What is wrong with a value, in the active language (A3, G2): jsonschema writes its messages
in English, and the model that must correct its arguments reads the conversation's language.
The common keywords get a sentence of ours; anything rarer keeps jsonschema's own.

Values quoted from the arguments are cut short: they come from the model, and the message goes
back to it."""

import json
import re

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

MAX_QUOTED = 60
_REQUIRED = re.compile(r"^'(.+)' is a required property$", re.S)


def _quoted(value) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 1] + "…"


def _listed(values) -> str:
    return ", ".join(_quoted(value) for value in list(values)[:10])


def reader_message(error) -> str:
    """One jsonschema ValidationError as a sentence in the active language."""
    keyword, expected, schema = error.validator, error.validator_value, error.schema
    if keyword == "required":
        match = _REQUIRED.match(error.message)
        return _("the required property %(name)s is missing") % {"name": match.group(1) if match else _listed(expected)}
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        known = set(schema.get("properties") or {}) if isinstance(schema, dict) else set()
        extra = sorted(name for name in error.instance if name not in known) or sorted(error.instance)
        return _("these properties are not allowed: %(names)s") % {"names": _listed(extra)}
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return _("must be of type %(types)s, not %(value)s") % {"types": " | ".join(map(str, kinds)), "value": _quoted(error.instance)}
    if keyword == "enum":
        return _("must be one of %(values)s") % {"values": _listed(expected)}
    if keyword == "const":
        return _("must be %(value)s") % {"value": _quoted(expected)}
    if keyword == "minLength":
        return ngettext("must have at least %(n)s character", "must have at least %(n)s characters", expected) % {"n": expected}
    if keyword == "maxLength":
        return ngettext("must have at most %(n)s character", "must have at most %(n)s characters", expected) % {"n": expected}
    if keyword == "minItems":
        return ngettext("must have at least %(n)s item", "must have at least %(n)s items", expected) % {"n": expected}
    if keyword == "maxItems":
        return ngettext("must have at most %(n)s item", "must have at most %(n)s items", expected) % {"n": expected}
    if keyword == "minimum":
        return _("must be at least %(n)s") % {"n": expected}
    if keyword == "maximum":
        return _("must be at most %(n)s") % {"n": expected}
    if keyword == "exclusiveMinimum":
        return _("must be greater than %(n)s") % {"n": expected}
    if keyword == "exclusiveMaximum":
        return _("must be less than %(n)s") % {"n": expected}
    if keyword == "pattern":
        return _("does not match the pattern %(pattern)s") % {"pattern": _quoted(expected)}
    return error.message
