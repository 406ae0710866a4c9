"""The API takes exactly the input its OpenAPI schema documents (A4, issue 19: "schemathesis with
all checks passes"): a pagination value or a filter that is not what the schema says is a 400
instead of silently the default; a JSON body's values have the documented types and lengths as
sent; what the API refuses by rule the schema states (unknown keys, unknown channels, timezone
names). Each case is one schemathesis' negative_data_rejection and positive_data_acceptance found."""

import json

import pytest

from tests.test_api_schemathesis import generated_schema


def _refused(response, field):
    assert response.status_code == 400, response.content[:300]
    assert field in response.json()["error"]["fields"], response.json()


@pytest.mark.parametrize("query, field", [
    ("offset=null", "offset"), ("offset=-1", "offset"), ("offset=%C2%B2", "offset"),
    ("limit=0", "limit"), ("limit=1.5", "limit"),
])
def test_it_refuses_a_pagination_value_that_is_not_a_whole_number_in_range(alpha, query, field):
    """A1, A4: `?offset=null` listed the first page again as if it were valid; now a 400 naming it."""
    _refused(alpha.api().get(f"/api/v1/api-keys?{query}"), field)


def test_it_still_pages_and_caps_the_limit(alpha):
    """A1: a valid offset pages, a limit over the maximum is cut to it (not refused)."""
    api = alpha.api()
    everything = api.get("/api/v1/api-keys?limit=500").json()
    assert everything["count"] == len(everything["results"]) == 2
    second = api.get("/api/v1/api-keys?limit=1&offset=1").json()["results"]
    assert [key["id"] for key in second] == [everything["results"][1]["id"]]


@pytest.mark.parametrize("path, field", [
    ("/api/v1/reminders?state=", "state"), ("/api/v1/follow-ups?conversation=", "conversation"),
    ("/api/v1/truncation-logs?until=", "until"), ("/api/v1/tool-calls?turn=", "turn"),
    ("/api/v1/tools?server=", "server"), ("/api/v1/usage?since=", "since"),
])
def test_it_refuses_a_filter_sent_empty(alpha, path, field):
    """A4: DRF read `?until=` as no filter at all and listed everything; the schema documents a
    date there, so an empty one is a 400."""
    _refused(alpha.api().get(path), field)


def test_a_filter_that_allows_blank_still_takes_it(alpha):
    """A4: `?certification=` is documented (the enum has "") and still answers."""
    assert alpha.api().get("/api/v1/tools?certification=&level=").status_code == 200


def _post(api, path, body):
    return api.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("path, body, field", [
    ("/api/v1/conversations", {"price_list_id": 0}, "price_list_id"),
    ("/api/v1/skills", {"name": "s", "instructions": "i", "enabled": 0}, "enabled"),
    ("/api/v1/users", {"username": 0, "role": "support", "password": "a long enough password 1"}, "username"),
    ("/api/v1/conversations", {"customer_ref": " " + "a" * 200}, "customer_ref"),
    ("/api/v1/api-keys/00000000-0000-0000-0000-000000000000/rotate", {"other": 1}, "other"),
])
def test_it_refuses_a_json_value_the_schema_calls_invalid(alpha, path, body, field):
    """A4: DRF took `0` for a text and for a boolean and measured a text after trimming it; each
    of these was stored (a 201) although the schema says it is invalid."""
    _refused(_post(alpha.api(), path, body), field)


def test_it_takes_the_documented_types(alpha):
    """A4: the same fields with the documented types are accepted."""
    response = _post(alpha.api(), "/api/v1/conversations",
                     {"price_list_id": "0", "customer_ref": "a" * 200, "timezone": "America/Bogota"})
    assert response.status_code == 201, response.content[:300]


def test_the_schema_states_what_the_api_refuses():
    """A1, issue 19: unknown keys of a strict body, the exposure policy's channels and the
    timezone names are in the schema; no pattern Python and JSON Schema read differently."""
    components = generated_schema()["components"]["schemas"]
    assert components["ApiKeyRotateRequest"]["additionalProperties"] is False
    policy = components["PatchedTenantSettingsRequest"]["properties"]["exposure_policy"]
    assert policy["additionalProperties"] is False and set(policy["properties"]) == {"chat", "voice"}
    assert "America/Bogota" in components["TimezoneEnum"]["enum"]
    timezone = components["ConversationCreateRequest"]["properties"]["timezone"]
    assert timezone["allOf"] == [{"$ref": "#/components/schemas/TimezoneEnum"}]
    assert "pattern" not in components["UserCreateRequest"]["properties"]["username"]


def test_revoking_a_key_answers_the_status_the_schema_documents(alpha):
    """A1, issue 19 (found by schemathesis' stateful run): DELETE /api-keys/{id} answers 200 with
    the revoked key, and the schema said 204 (drf-spectacular's default for a DELETE); so did the
    operator's DELETE /operator/stdio-commands/{slug}, which answers the disabled command."""
    api = alpha.api()
    channel_key = next(key for key in api.get("/api/v1/api-keys").json()["results"] if key["scope"] == "channel")
    response = api.delete(f"/api/v1/api-keys/{channel_key['id']}")
    paths = generated_schema()["paths"]
    documented = [code for code in paths["/api/v1/api-keys/{id}"]["delete"]["responses"] if code.startswith("2")]
    assert documented == [str(response.status_code)] == ["200"] and response.json()["is_active"] is False
    disable = paths["/api/v1/operator/stdio-commands/{slug}"]["delete"]["responses"]
    assert [code for code in disable if code.startswith("2")] == ["200"]
