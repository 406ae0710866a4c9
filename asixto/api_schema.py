"""The OpenAPI schema's error responses (A1, A4, issue 19): a drf-spectacular postprocessing hook
that documents, on every operation, the failures it can answer, all with one `Error` body
(`{"error": {"code", "message", "fields"}}`, asixto/errors.py).

What every operation of a kind answers is derived here from the operation itself: 401 and 403
where a key is needed, 404 where the path names an object, 400 where a body or a filter is read,
413 and 415 where a body is read; on all, 406 (an `Accept` header naming no type the operation
answers with: DRF's content negotiation refuses it before anything else, always as JSON) and 503
(the database down: asixto.views.server_error).
What only some views answer (409, 429, 502, 503) they declare
themselves with `extend_schema(responses={...: OpenApiResponse(description=...)})`; this hook
gives those the `Error` body too.

The schema class below documents what the strict serializers (asixto/api.py) refuse: a request
body with a key they do not declare."""

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import force_instance

from asixto.api import StrictMixin


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's, plus `additionalProperties: false` on every request body a strict
    serializer reads: an unknown key is a 400 (`Unknown field.`), so the schema says so; and no
    pattern the schema's regex dialect would read otherwise than Python does."""

    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)
        # Python's `\w` (Django's user names) is any letter; a JSON Schema pattern's (ECMA-262) is
        # ASCII only: "Ì" is a valid user name the schema would call invalid, so say nothing.
        if "\\w" in schema.get("pattern", ""):
            del schema["pattern"]

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(force_instance(serializer), StrictMixin):
            schema["additionalProperties"] = False
        return schema

ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": "The body of every failure.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "What failed, for programs: `invalid`, `not_found`, …"},
                "message": {"type": "string", "description": "What failed, for people, in the request's language."},
                "fields": {"type": "object", "additionalProperties": True,
                           "description": "Per field, what is wrong with it (on `invalid`); else empty."},
            },
            "required": ["code", "message", "fields"],
        },
    },
    "required": ["error"],
}

# A failure asked for as an event stream: one event whose data is the Error body (as JSON).
ERROR_EVENT = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["error"]},
        "data": {"type": "string", "description": "The `Error` body, as JSON."},
    },
    "required": ["event", "data"],
}

# A query parameter that never answers 400: DRF's renderer choice (an unknown one is a 404).
_LENIENT_QUERY = frozenset({"format"})

DESCRIPTIONS = {
    "400": "Invalid input; `fields` says what is wrong with each field. Nothing was stored.",
    "401": "No API key, an unknown or revoked one (`not_authenticated`), or an expired one (`key_expired`).",
    "403": "The key's scope does not allow this operation (`permission_denied`).",
    "404": "No such object in this tenant (`not_found`).",
    "406": "The `Accept` header names no type this operation answers with (`not_acceptable`); the body is JSON.",
    "413": "The request body is larger than the limit (`payload_too_large`).",
    "415": "The body is not JSON (`unsupported_media_type`).",
    "503": "The database is briefly unavailable (`unavailable`); nothing was stored. Retry after `Retry-After` seconds.",
}


def _error_statuses(operation):
    parameters = operation.get("parameters", [])
    statuses = []
    if operation.get("security", [{}]) != [{}]:
        statuses += ["401", "403"]
    if any(parameter["in"] == "path" for parameter in parameters):
        statuses.append("404")
    has_body = "requestBody" in operation
    if has_body or any(p["in"] == "query" and p["name"] not in _LENIENT_QUERY for p in parameters):
        statuses.append("400")
    if has_body:
        statuses += ["413", "415"]
    # Any request: an Accept header no renderer of the view serves (checked first, whatever the key),
    # and the database not answering (asixto.views.server_error).
    return [*statuses, "406", "503"]


def _error_content(operation, status):
    content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}}}
    if status == "406":
        return content  # what the client accepts matched no renderer: DRF answers with the first, JSON
    success = next((response for code, response in operation["responses"].items() if code.startswith("2")), {})
    if "text/event-stream" in success.get("content", {}):
        # Asked for as a stream, a failure before the stream starts is one `error` event with the same body.
        content["text/event-stream"] = {"schema": ERROR_EVENT}
    return content


def document_error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: the error responses of every operation."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation["responses"]
            for status in _error_statuses(operation):
                responses.setdefault(status, {"description": DESCRIPTIONS[status]})
            for status, response in responses.items():
                if status[0] in "45" and "content" not in response:
                    response["content"] = _error_content(operation, status)
            operation["responses"] = dict(sorted(responses.items()))
    return result
