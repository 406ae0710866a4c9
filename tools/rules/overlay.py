"""The effective definition of a tool (issue 8): the server's definition, plus the admin's
overlay, plus what the gateway adds itself in compatible mode. Certification, the gateway and
the model read the effective definition; the server's stays stored beside it, untouched.

- Overlay (both modes): `com.asixto/verb`, `com.asixto/capabilities`, the model-facing
  description, the level (read/write/destructive, written back as consistent annotations).
- Compatible mode: an open inputSchema is closed (`additionalProperties: false`, so unknown
  arguments are rejected before sending, G2, and the model is shown the closed schema); a missing
  verb or capability list is filled by the suggestion (suggestions.py) and marked as suggested.
  Each of these is a warning, not a block.

Pure functions over plain data.
"""

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from .findings import Finding, warning
from .meta import CAPABILITIES_KEY, VERB_KEY

# Which `_meta` keys the gateway filled in by suggestion, in the effective definition only.
SUGGESTED_KEY = "com.asixto/suggested"
OVERLAY_FIELDS = ("verb", "capabilities", "description", "level")
LEVEL_ANNOTATIONS = {
    "read": {"readOnlyHint": True, "destructiveHint": False},
    "write": {"readOnlyHint": False, "destructiveHint": False},
    "destructive": {"readOnlyHint": False, "destructiveHint": True},
}


def declares_our_meta(definition) -> bool:
    """Whether a server definition declares any `com.asixto/` `_meta` key: such a server
    means to keep our contract, and starts in strict mode."""
    meta = definition.get("_meta") if isinstance(definition, dict) else None
    return isinstance(meta, dict) and any(isinstance(key, str) and key.startswith("com.asixto/") for key in meta)


def effective_definition(definition: dict, *, overlay: dict | None, compatible: bool, suggestion: dict | None = None
                         ) -> tuple[dict, list[Finding]]:
    """The effective definition and the warnings that say what the gateway added. `suggestion`:
    {"verb": ..., "capabilities": [...]} (suggestions.py), used only in compatible mode for what
    neither the server nor the overlay gives; or a function that returns it, called only then."""
    overlay = overlay or {}
    # A shallow copy: every part changed below (description, _meta, annotations, inputSchema) is
    # replaced by a new object, never changed in place, so the server's definition stays as sent.
    # A deep copy of 5,000 definitions cost more than certifying them (P2).
    effective = dict(definition) if isinstance(definition, dict) else {}
    notes: list[Finding] = []
    meta = dict(effective.get("_meta")) if isinstance(effective.get("_meta"), dict) else {}
    meta.pop(SUGGESTED_KEY, None)  # only the gateway says what it suggested
    suggested = []
    if isinstance(overlay.get("description"), str) and overlay["description"].strip():
        effective["description"] = overlay["description"].strip()
    if isinstance(overlay.get("verb"), str) and overlay["verb"].strip():
        meta[VERB_KEY] = overlay["verb"].strip()
    if isinstance(overlay.get("capabilities"), list) and overlay["capabilities"]:
        meta[CAPABILITIES_KEY] = list(overlay["capabilities"])
    if overlay.get("level") in LEVEL_ANNOTATIONS:
        annotations = dict(effective.get("annotations")) if isinstance(effective.get("annotations"), dict) else {}
        annotations.update(LEVEL_ANNOTATIONS[overlay["level"]])
        effective["annotations"] = annotations
    if compatible:
        has_verb = isinstance(meta.get(VERB_KEY), str) and bool(meta[VERB_KEY].strip())
        has_capabilities = isinstance(meta.get(CAPABILITIES_KEY), list) and bool(meta[CAPABILITIES_KEY])
        if callable(suggestion):
            suggestion = suggestion() if not (has_verb and has_capabilities) else None
        suggestion = suggestion or {}
        if not has_verb and suggestion.get("verb"):
            meta[VERB_KEY] = suggestion["verb"]
            suggested.append("verb")
            notes.append(warning(
                "C6", format_lazy(_("The verb phrase “{verb}” is a suggestion of Asixto, not the server's."), verb=suggestion["verb"]),
                _("Confirm or edit it in the tool's overlay (Contract overlays on the server's page)."),
            ))
        if not has_capabilities and suggestion.get("capabilities"):
            meta[CAPABILITIES_KEY] = list(suggestion["capabilities"])
            suggested.append("capabilities")
            notes.append(warning(
                "C6", format_lazy(_("The capabilities ({names}) are a suggestion of Asixto, not the server's."),
                                  names=", ".join(suggestion["capabilities"])),
                _("Confirm or edit them in the tool's overlay (Contract overlays on the server's page)."),
            ))
        notes += _close_input_schema(effective)
    if suggested:
        meta[SUGGESTED_KEY] = suggested
    if meta and meta != effective.get("_meta"):
        # Equal `_meta` stays the server's own object: the definition is then visibly unchanged.
        effective["_meta"] = meta
    return effective, notes


def _close_input_schema(effective: dict) -> list[Finding]:
    schema = effective.get("inputSchema")
    if schema is None:
        effective["inputSchema"] = {"type": "object", "properties": {}, "additionalProperties": False}
        return [warning("C3", _("The tool has no inputSchema; the gateway accepts no arguments for it."),
                        _("Declare an inputSchema with type object, its properties and additionalProperties: false."))]
    if not isinstance(schema, dict) or schema.get("type") != "object" or schema.get("additionalProperties") is False:
        return []  # nothing to close, or the contract's own findings say what is wrong
    effective["inputSchema"] = {**schema, "additionalProperties": False}
    return [warning(
        "C3", _("The inputSchema is open; the gateway closes it and rejects unknown arguments before sending."),
        _("Set additionalProperties: false on the server so the schema the model sees is the server's own."),
    )]


def overlay_level(overlay: dict | None) -> str | None:
    level = (overlay or {}).get("level")
    return level if level in LEVEL_ANNOTATIONS else None
