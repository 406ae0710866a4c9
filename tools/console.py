"""The test console's helpers (A2, G9): an arguments template from a tool's inputSchema, a guide
to its fields, what a call will do (the verb, for the confirmation of a real write), why a tool
cannot be called, and a reader's words for each outcome. Pure, apart from gettext.

The template holds only the required fields, each with a marker ("«required: text»") instead of
a made-up value: sent as it is, a marker is caught here and the tool is never called, so an
empty string never reaches a server that would accept it (a support case with no description)."""

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

VERB_KEY = "com.asixto/verb"

OUTCOME_HELP = {
    "ok": gettext_lazy("The server answered and the answer keeps the contract."),
    "business_error": gettext_lazy("The server answered with a business error; the model reads its message for the customer."),
    "timeout": gettext_lazy("The server did not answer within the server's timeout. The call was not repeated."),
    "dropped": gettext_lazy("The connection dropped before the answer, on every attempt."),
    "connect_error": gettext_lazy("The server could not be reached."),
    "http_error": gettext_lazy("The server answered with an HTTP error."),
    "protocol_error": gettext_lazy("The server's answer is not valid MCP."),
    "invalid_output": gettext_lazy("The answer breaks the tool's outputSchema or the error shape; the model did not see it."),
    "unsupported_result": gettext_lazy("The server asked for more input (a multi-round result), which agents do not answer."),
    "invalid_arguments": gettext_lazy("The arguments do not match the tool's inputSchema. The server was not called."),
    "too_large": gettext_lazy("The answer is larger than the platform reads from a server."),
    "refused": gettext_lazy("The call was refused by a policy (the channel's tool levels, or the outbound rules)."),
    "unavailable": gettext_lazy("The tool is not available to agents (blocked, pending, disabled or removed)."),
}


def _kind(schema: dict) -> str:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _("one of %(values)s") % {"values": ", ".join("null" if v is None else str(v) for v in schema["enum"])}
    names = {"string": _("text"), "integer": _("whole number"), "number": _("number"), "boolean": _("true or false"),
             "array": _("list"), "object": _("object"), "null": _("empty (null)")}
    kind = schema.get("type")
    if isinstance(kind, list):  # ["boolean", "null"]: each named in the reader's language
        return " | ".join(names.get(k, str(k)) for k in kind) or _("any value")
    return names.get(kind, str(kind or _("any value")))


def _limits(schema: dict) -> str:
    parts = []
    if isinstance(schema.get("minLength"), int):
        n = schema["minLength"]
        parts.append(ngettext("at least %(n)s character", "at least %(n)s characters", n) % {"n": n})
    if isinstance(schema.get("maxLength"), int):
        n = schema["maxLength"]
        parts.append(ngettext("at most %(n)s character", "at most %(n)s characters", n) % {"n": n})
    if "minimum" in schema:
        parts.append(_("from %(n)s") % {"n": schema["minimum"]})
    if "maximum" in schema:
        parts.append(_("up to %(n)s") % {"n": schema["maximum"]})
    return ", ".join(parts)


def _properties(schema) -> tuple[dict, list[str]]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}, []
    required = [name for name in schema.get("required", []) if isinstance(name, str) and name in properties]
    return properties, required


def required_marker(schema: dict) -> str:
    """What stands in a required field's place until someone fills it in."""
    schema = schema if isinstance(schema, dict) else {}
    return "«%s»" % (_("required: %(kind)s") % {"kind": _kind(schema)})


def arguments_skeleton(schema: dict) -> dict:
    """The required fields, each with a default the schema gives or a marker to replace."""
    properties, required = _properties(schema)
    skeleton = {}
    for name in required:
        field = properties[name] if isinstance(properties[name], dict) else {}
        skeleton[name] = field["default"] if "default" in field else required_marker(field)
    return skeleton


def field_guide(schema: dict) -> list[dict]:
    """One row per field for the page: name, required, kind, limits, description."""
    properties, required = _properties(schema)
    rows = []
    for name in required + [name for name in properties if name not in required]:
        field = properties[name] if isinstance(properties[name], dict) else {}
        rows.append({
            "name": name, "required": name in required, "kind": _kind(field), "limits": _limits(field),
            "description": str(field.get("description", ""))[:300],
        })
    return rows


def unfilled_fields(arguments: dict, schema: dict) -> list[str]:
    """Required fields still holding their marker (in any shipped language: the reader may have
    switched languages between loading the page and calling)."""
    properties, required = _properties(schema)
    markers = {}
    for language, _name in settings.LANGUAGES:
        with translation.override(language):
            for name in required:
                markers.setdefault(name, set()).add(required_marker(properties[name]))
    return [name for name in required if isinstance(arguments.get(name), str) and arguments[name] in markers[name]]


def tool_verb(tool) -> str:
    """How the tool describes what it does (`com.asixto/verb`), else its title or name."""
    meta = tool.definition.get("_meta") if isinstance(tool.definition, dict) else None
    verb = meta.get(VERB_KEY) if isinstance(meta, dict) else None
    if isinstance(verb, str) and verb.strip():
        return verb.strip()[:200]
    return str(tool.definition.get("title") or tool.name)[:200]


def needs_confirmation(tool) -> bool:
    """A call that may change something in the tenant's systems is confirmed first."""
    return tool.level != tool.Level.READ


def unavailable_reason(tool) -> str:
    """Why the gateway would refuse this tool ("" when it can be called)."""
    if tool.removed_in_id is not None:
        return "removed"
    if tool.certification == tool.Certification.BLOCKED:
        return "blocked"
    if tool.certification != tool.Certification.CERTIFIED or tool.certified_hash != tool.definition_hash:
        return "pending"
    if not tool.server.enabled:
        return "server_disabled"
    if not tool.enabled:
        return "disabled"
    return ""
