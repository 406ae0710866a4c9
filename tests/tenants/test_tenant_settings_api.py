"""Tenant settings over the API (T6, T7, A4): write-only secrets, bad input refused, nothing lost."""

import json

from django.db import connection

from tenants.models import Tenant

URL = "/api/v1/tenant"


def patch(world, body, **extra):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return world.api().patch(URL, data, content_type="application/json", **extra)


def test_it_changes_settings_and_keeps_secrets_write_only(alpha):
    """T6, T7: a patched secret is stored encrypted and never comes back in any response."""
    secret = "sk-live-ALPHA-0123456789"
    response = patch(alpha, {"model_api_key": secret, "model_name": "qwen3-8b", "iteration_limit": 4, "scenarios": ["soporte"]})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["model_name"] == "qwen3-8b" and body["iteration_limit"] == 4 and body["scenarios"] == ["soporte"]
    assert body["model_api_key_set"] is True and "model_api_key" not in body
    assert secret not in response.content.decode()
    assert secret not in alpha.api().get(URL).content.decode()
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).model_api_key == secret
    with connection.cursor() as cursor:
        cursor.execute("SELECT model_api_key FROM tenants_tenant WHERE id = %s", [alpha.tenant.pk])
        stored = cursor.fetchone()[0]
    assert stored and secret not in stored


def test_it_keeps_a_secret_that_a_patch_leaves_out_and_clears_it_on_empty(alpha):
    """T7: omitting a secret keeps it; an empty string clears it."""
    patch(alpha, {"router_api_key": "rk-1"})
    assert patch(alpha, {"router_model_name": "small"}).json()["router_api_key_set"] is True
    assert patch(alpha, {"router_api_key": ""}).json()["router_api_key_set"] is False


def test_it_reads_only_the_calling_tenants_settings(alpha, beta):
    """T1, T2: each key sees its own tenant."""
    patch(alpha, {"agent_instructions": "Solo alpha"})
    assert beta.api().get(URL).json()["agent_instructions"] == ""
    assert alpha.api().get(URL).json()["agent_instructions"] == "Solo alpha"


def assert_refused_and_unchanged(world, response, *field_names):
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] in {"invalid", "parse_error"} and error["message"]
    for name in field_names:
        assert name in error["fields"], error
    current = world.api().get(URL).json()
    assert current["iteration_limit"] == 6 and current["model_name"] == ""


def test_it_refuses_malformed_json(alpha):
    """A4: malformed JSON is a 400 with the error body; nothing stored changes."""
    response = patch(alpha, '{"model_name": "x",')
    assert_refused_and_unchanged(alpha, response)
    assert response.json()["error"]["code"] == "parse_error"


def test_it_refuses_unknown_and_read_only_fields_with_every_problem_listed(alpha):
    """A4: a typo is not silently ignored; invalid values are reported in the same answer."""
    response = patch(alpha, {"model_nmae": "x", "slug": "evil", "iteration_limit": "many", "model_name": "ok"})
    assert_refused_and_unchanged(alpha, response, "model_nmae", "slug", "iteration_limit")


def test_it_refuses_wrong_types_and_out_of_range_values(alpha):
    """A4, T6: types and limits are checked; budgets must be consistent."""
    assert_refused_and_unchanged(alpha, patch(alpha, {"public_sources": "maybe"}), "public_sources")
    assert_refused_and_unchanged(alpha, patch(alpha, {"iteration_limit": 0}), "iteration_limit")
    assert_refused_and_unchanged(alpha, patch(alpha, {"scenarios": "soporte"}), "scenarios")
    assert_refused_and_unchanged(alpha, patch(alpha, {"result_budget": 5000, "turn_budget": 4000}), "turn_budget")
    assert_refused_and_unchanged(alpha, patch(alpha, ["not", "an", "object"]), "non_field_errors")


def test_it_refuses_oversized_values(alpha):
    """A4: values over their limits are refused with the field named."""
    assert_refused_and_unchanged(alpha, patch(alpha, {"agent_instructions": "x" * 20001}), "agent_instructions")
    assert_refused_and_unchanged(alpha, patch(alpha, {"model_name": "m" * 201}), "model_name")
    assert_refused_and_unchanged(alpha, patch(alpha, {"model_base_url": "not a url"}), "model_base_url")


def test_it_answers_in_the_error_body_for_unknown_urls_and_methods(alpha):
    """A1, A4: every 4xx has the same body."""
    missing = alpha.api().get("/api/v1/does-not-exist")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong_method = alpha.api().delete(URL)
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["code"] == "method_not_allowed"


def test_it_validates_the_exposure_policy(alpha):
    """M7, A4: channels and levels are checked; a channel left out keeps every level."""
    assert_refused_and_unchanged(alpha, patch(alpha, {"exposure_policy": {"fax": ["read"]}}), "exposure_policy")
    assert_refused_and_unchanged(alpha, patch(alpha, {"exposure_policy": {"voice": ["everything"]}}), "exposure_policy")
    body = patch(alpha, {"exposure_policy": {"voice": ["read", "read"]}}).json()
    assert body["exposure_policy"] == {"chat": ["read", "write", "destructive"], "voice": ["read"]}


def test_a_stored_key_does_not_follow_its_endpoint_to_another_host(alpha):
    """Issue 19 M5: moving model_base_url to another host (or scheme, or port) clears the stored
    model key unless the same request sends one, so an admin cannot have the "never shown" key
    sent to a host of their choosing; a new path on the same host keeps it. The router key alike."""
    first = patch(alpha, {"model_base_url": "https://93.184.216.34/v1", "model_api_key": "sk-bound-1",
                          "router_base_url": "https://93.184.216.34/v1", "router_api_key": "rk-bound-1"})
    assert first.status_code == 200, first.content
    assert patch(alpha, {"model_base_url": "https://93.184.216.34/other/v1"}).json()["model_api_key_set"] is True
    moved = patch(alpha, {"model_base_url": "https://93.184.216.35/v1", "router_base_url": "https://93.184.216.34:8443/v1"})
    assert moved.json()["model_api_key_set"] is False and moved.json()["router_api_key_set"] is False
    connection.set_schema_to_public()
    tenant = Tenant.objects.get(pk=alpha.tenant.pk)
    assert tenant.model_api_key == "" and tenant.router_api_key == ""
    again = patch(alpha, {"model_base_url": "https://93.184.216.36/v1", "model_api_key": "sk-bound-2"})
    assert again.json()["model_api_key_set"] is True
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).model_api_key == "sk-bound-2"


def test_the_settings_form_clears_the_key_when_the_endpoint_moves(alpha):
    """Issue 19 M5: the dashboard's settings form follows the same rule, and says so."""
    from tests.tenants.test_dashboard import SETTINGS_FORM

    client = alpha.dashboard("ana")
    page = client.get("/settings/").content.decode()
    assert "removes the stored key" in page or "elimina la clave guardada" in page
    client.post("/settings/", {**SETTINGS_FORM, "model_base_url": "https://93.184.216.34/v1", "model_api_key": "sk-form"})
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).model_api_key == "sk-form"
    client.post("/settings/", {**SETTINGS_FORM, "model_base_url": "https://93.184.216.35/v1"})
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).model_api_key == ""


def test_trace_contents_is_off_until_an_admin_turns_it_on_in_the_api_or_the_dashboard(alpha):
    """Issue 21 (traces), T6, A4: "trace contents" (the customer's message and tool arguments in
    traces) is off by default; an admin key or the dashboard's agent settings turn it on and off;
    anything but a boolean is refused and changes nothing."""
    from tests.tenants.test_dashboard import SETTINGS_FORM

    assert alpha.api().get(URL).json()["trace_contents"] is False
    assert_refused_and_unchanged(alpha, patch(alpha, {"trace_contents": "maybe"}), "trace_contents")
    assert alpha.api().get(URL).json()["trace_contents"] is False
    assert patch(alpha, {"trace_contents": True}).json()["trace_contents"] is True
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).trace_contents is True

    client = alpha.dashboard("ana")
    assert 'name="trace_contents"' in client.get("/settings/").content.decode()
    client.post("/settings/", SETTINGS_FORM)  # the box left unticked
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).trace_contents is False
    client.post("/settings/", {**SETTINGS_FORM, "trace_contents": "on"})
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).trace_contents is True
