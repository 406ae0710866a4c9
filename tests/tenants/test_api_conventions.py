"""API conventions (A1, A4): versioned paths, an OpenAPI 3 schema and browsable docs, pagination,
bodies JSON can hold."""

import json

import pytest

from tenants.models import ApiKey
from tenants.services import api_key_create

INFINITY = "<1e999>"  # written into a body as the bare number 1e999


def test_it_publishes_an_openapi_3_schema_of_the_api(alpha):
    """A1: /api/v1/schema/ is OpenAPI 3 and documents the endpoints under /api/v1/."""
    response = alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in ("/api/v1/tenant", "/api/v1/api-keys", "/api/v1/servers", "/api/v1/servers/{id}/sync",
                 "/api/v1/tools/{id}/invoke", "/api/v1/tool-calls", "/api/v1/operator/tenants"):
        assert path in schema["paths"], path


def test_it_serves_the_docs_without_a_cdn(alpha):
    """A1: the browsable docs load their assets from this server (the product works offline)."""
    page = alpha.api(key="").get("/api/v1/docs/").content.decode()
    assert "swagger-ui" in page.lower() and "cdn.jsdelivr" not in page and "unpkg.com" not in page


def test_it_paginates_lists(alpha):
    """A1: lists are paginated with limit/offset and a total count."""
    for index in range(3):
        api_key_create(tenant=alpha.tenant, name=f"k{index}", scope=ApiKey.Scope.CHANNEL)
    page = alpha.api().get("/api/v1/api-keys?limit=2").json()
    assert page["count"] == 5 and len(page["results"]) == 2 and page["next"]


def test_the_schema_documents_the_status_a_create_and_a_deactivation_answer(alpha):
    """Issue 19: `POST /skills` answers 201 and `DELETE /users/{id}` 200 with the person, and the
    schema says so (it said 200 and 204)."""
    paths = alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert "201" in paths["/api/v1/skills"]["post"]["responses"]
    deactivate = paths["/api/v1/users/{id}"]["delete"]["responses"]
    assert "200" in deactivate and "204" not in deactivate


def test_the_schema_documents_the_conversation_filters_and_the_event_stream(alpha):
    """Issue 19 (OpenAPI gaps): `GET /conversations` documents its `customer_ref` and
    `channel_name` filters (they were undocumented), and a turn's event stream is documented as
    server-sent events, each with its kind and data, not as one JSON string. Schemathesis only
    sends the parameters a schema names, so it could not catch either gap."""
    paths = alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    filters = {parameter["name"]: parameter["in"] for parameter in paths["/api/v1/conversations"]["get"]["parameters"]}
    assert filters["customer_ref"] == "query" and filters["channel_name"] == "query"
    stream = paths["/api/v1/turns/{id}/events"]["get"]["responses"]["200"]["content"]
    assert list(stream) == ["text/event-stream"]
    assert stream["text/event-stream"]["schema"]["type"] == "object"
    assert {"event", "data"} <= set(stream["text/event-stream"]["schema"]["properties"])


@pytest.mark.parametrize(("method", "path", "body", "channel"), [
    ("patch", "/api/v1/tenant", {"iteration_limit": INFINITY}, False),
    ("post", "/api/v1/skills", {"name": INFINITY, "description": "Cambios de plan.", "instructions": "Pregunta el plan."}, False),
    ("post", "/api/v1/api-keys", {"name": INFINITY, "scope": "channel"}, False),
    ("post", "/api/v1/webhooks", {"url": INFINITY}, True),
])
def test_a_number_json_cannot_hold_is_a_400_on_every_body(alpha, method, path, body, channel):
    """Issue 19 (low): `1e999` parses as infinity, which no column and no JSON answer can hold (a
    500 "on every endpoint with a body", or stored as the text "inf"). The API's parser refuses it
    in any operation's body, otherwise valid: a 400 naming the field."""
    field = next(name for name, value in body.items() if value is INFINITY)
    text = json.dumps(body).replace(json.dumps(INFINITY), "1e999")
    client = alpha.api(alpha.channel_key if channel else None)
    response = getattr(client, method)(path, text, content_type="application/json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == [field], response.content
