"""The OpenAPI schema documents the failures each operation answers (A1, A4, issue 19), all with
the one error body of asixto/errors.py. tests/test_api_schemathesis.py checks every operation's
answers against the schema; these tests check the failures it cannot reach with made-up input."""

import jsonschema
import pytest
from django.utils import translation

from accounts.models import User
from tenants.models import ApiKey
from tenants.services import api_key_create, api_key_revoke


@pytest.fixture
def schema(alpha):
    return alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()


def error_schema(schema):
    return schema["components"]["schemas"]["Error"]


def test_every_failure_an_operation_documents_has_the_error_body(schema):
    """A1, A4: each 4xx and 5xx of each operation is the `Error` body; a key's 401 and 403 are on
    every operation but the public health check, which documents only its 503."""
    operations = [(path, method, op) for path, ops in schema["paths"].items() for method, op in ops.items()]
    assert len(operations) > 60
    for path, method, operation in operations:
        failures = {code: response for code, response in operation["responses"].items() if code[0] in "45"}
        assert failures, (path, method)
        for code, response in failures.items():
            assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}, (path, method, code)
        expected = {"503"} if (path, method) == ("/api/v1/health", "get") else {"401", "403", "503"}
        assert expected <= failures.keys(), (path, method)
    assert set(error_schema(schema)["properties"]["error"]["required"]) == {"code", "message", "fields"}


def test_the_event_stream_documents_its_events_and_its_error_event(schema):
    """R9, issue 19: the stream is `text/event-stream` whose items are events (not a JSON string);
    a failure asked for as a stream is documented as one `error` event too."""
    responses = schema["paths"]["/api/v1/turns/{id}/events"]["get"]["responses"]
    assert list(responses["200"]["content"]) == ["text/event-stream"]
    event = responses["200"]["content"]["text/event-stream"]["schema"]
    assert event["type"] == "object" and set(event["properties"]["event"]["enum"]) >= {"status", "reply", "timeout"}
    error_event = responses["404"]["content"]["text/event-stream"]["schema"]
    assert error_event["properties"]["event"]["enum"] == ["error"]


def assert_documented(schema, response, path, method):
    """The answer's status is one the operation documents, and its body is the `Error` body."""
    assert str(response.status_code) in schema["paths"][path][method]["responses"], (path, method, response.status_code)
    jsonschema.validate(response.json(), error_schema(schema))


def test_rotating_a_revoked_key_answers_a_documented_409(alpha, schema):
    """T3, A4: the key_inactive conflict of a rotation is in the schema."""
    key, _plaintext = api_key_create(tenant=alpha.tenant, name="old", scope=ApiKey.Scope.CHANNEL)
    api_key_revoke(key=key)
    response = alpha.api().post(f"/api/v1/api-keys/{key.pk}/rotate", {}, content_type="application/json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "key_inactive"
    assert_documented(schema, response, "/api/v1/api-keys/{id}/rotate", "post")


def test_deactivating_the_last_admin_answers_a_documented_409(alpha, schema):
    """T4, A4: the last active admin's conflict is in the schema."""
    with alpha.schema():
        ana = User.objects.get(username=alpha.admin_username)
        User.objects.filter(role=User.Role.ADMIN).exclude(pk=ana.pk).update(is_active=False)  # the tenant's first admin
    response = alpha.api().delete(f"/api/v1/users/{ana.pk}")
    assert response.status_code == 409 and response.json()["error"]["code"] == "last_admin"
    assert_documented(schema, response, "/api/v1/users/{id}", "delete")


def test_a_password_link_to_a_person_without_an_address_answers_a_documented_400(alpha, schema):
    """T4, A4: a password link needs no body, yet it answers 400 (`no_email`); the schema says so."""
    with alpha.schema():
        sam = User.objects.get(username=alpha.support_username)
        User.objects.filter(pk=sam.pk).update(email="")
    with translation.override("en"):
        response = alpha.api().post(f"/api/v1/users/{sam.pk}/password-link")
    assert response.status_code == 400 and response.json()["error"]["code"] == "no_email"
    assert_documented(schema, response, "/api/v1/users/{id}/password-link", "post")
