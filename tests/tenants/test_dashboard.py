"""Dashboard access (T1, T4, T7, A3): sign-in per tenant domain, roles, write-only secrets."""

from django.db import connection

from tenants.models import Tenant

SETTINGS_FORM = {
    "agent_instructions": "Atiende a clientes de Alpha.",
    "language": "es",
    "model_base_url": "https://93.184.216.34/v1",  # resolvable without DNS: endpoints are checked (M2)
    "model_name": "qwen3-8b",
    "router_base_url": "",
    "router_model_name": "",
    "iteration_limit": "5",
    "result_budget": "3000",
    "turn_budget": "12000",
    "scenarios": "soporte, pqr",
}


def test_it_lets_an_admin_change_settings_and_never_shows_the_secret_again(alpha):
    """T6, T7: the secret saved from the form is not in the page afterwards."""
    client = alpha.dashboard("ana")
    secret = "sk-dashboard-SECRET-42"
    response = client.post("/settings/", {**SETTINGS_FORM, "model_api_key": secret})
    assert response.status_code == 302, response.content.decode()[:2000]
    page = client.get("/settings/").content.decode()
    assert secret not in page and "qwen3-8b" in page
    connection.set_schema_to_public()
    tenant = Tenant.objects.get(pk=alpha.tenant.pk)
    assert tenant.model_api_key == secret and tenant.iteration_limit == 5 and tenant.scenarios == ["soporte", "pqr"]
    client.post("/settings/", {**SETTINGS_FORM, "iteration_limit": "6"})
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).model_api_key == secret, "an empty secret input keeps the secret"


def test_it_shows_form_errors_and_keeps_what_was_stored(alpha):
    """A4: a bad form is shown again with its errors; nothing changes."""
    client = alpha.dashboard("ana")
    response = client.post("/settings/", {**SETTINGS_FORM, "iteration_limit": "0", "scenarios": "bad scenario!"})
    assert response.status_code == 200
    assert set(response.context["form"].errors) == {"iteration_limit", "scenarios"}
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).iteration_limit == 6


def test_it_refuses_settings_changes_from_support_staff(alpha):
    """T4: support is read only: the settings page and its POST are 403 and nothing changes."""
    client = alpha.dashboard("sam")
    assert client.get("/").status_code == 200
    assert client.get("/settings/").status_code == 403
    assert client.post("/settings/", {**SETTINGS_FORM, "model_name": "hacked"}).status_code == 403
    assert client.get("/api-keys/").status_code == 403
    connection.set_schema_to_public()
    assert Tenant.objects.get(pk=alpha.tenant.pk).model_name == ""


def test_it_does_not_let_a_user_of_one_tenant_sign_in_on_another(alpha, beta):
    """T1, T4: users exist per tenant schema; ana of alpha is nobody on beta's domain."""
    with alpha.schema():
        from accounts.models import User

        User.objects.filter(username="ana").update(username="only-in-alpha")
    client = beta.dashboard()
    response = client.post("/login/", {"username": "only-in-alpha", "password": "correct-horse-battery"})
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302


def test_it_does_not_carry_a_session_to_another_tenants_domain(alpha, beta):
    """T1: a session cookie from alpha's domain means nothing on beta's."""
    alpha_client = alpha.dashboard("ana")
    cookie = alpha_client.cookies["sessionid"].value
    from django.test import Client

    stranger = Client(HTTP_HOST=beta.domain)
    stranger.cookies["sessionid"] = cookie
    assert stranger.get("/").status_code == 302


def test_it_asks_anonymous_visitors_to_sign_in(alpha):
    """T4: every dashboard page needs a signed-in user."""
    for url in ("/", "/settings/", "/api-keys/"):
        response = alpha.dashboard().get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_creates_and_revokes_keys_from_the_dashboard(alpha):
    """T3: the new key is shown once; revoking stops it."""
    client = alpha.dashboard("ana")
    response = client.post("/api-keys/", {"name": "web chat", "scope": "channel"})
    plaintext = response.context["created_key"]
    assert plaintext in response.content.decode()
    assert plaintext not in client.get("/api-keys/").content.decode()
    assert alpha.api(key=plaintext).get("/api/v1/api-keys").status_code == 403  # channel scope
    connection.set_schema_to_public()
    from tenants.models import ApiKey

    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(plaintext))
    assert client.post(f"/api-keys/{key.pk}/revoke/").status_code == 302
    assert alpha.api(key=plaintext).get("/api/v1/health").status_code == 401


def test_it_speaks_spanish_by_default_and_english_on_request(alpha):
    """A3: Spanish is the default interface language; English is shipped."""
    client = alpha.dashboard()
    assert "Iniciar sesión" in client.get("/login/").content.decode()
    client.post("/i18n/setlang/", {"language": "en", "next": "/login/"})
    assert "Sign in" in client.get("/login/").content.decode()


def test_it_sets_the_tool_exposure_policy_per_channel(alpha):
    """M7: the admin narrows voice calls to reading tools; the API shows the same policy."""
    client = alpha.dashboard("ana")
    page = client.get("/settings/").content.decode()
    assert 'name="policy_voice"' in page and 'value="destructive"' in page
    form = {**SETTINGS_FORM, "policy_chat": ["read", "write", "destructive"], "policy_voice": ["read"]}
    assert client.post("/settings/", form).status_code == 302
    policy = alpha.api().get("/api/v1/tenant").json()["exposure_policy"]
    assert policy == {"chat": ["read", "write", "destructive"], "voice": ["read"]}
    connection.set_schema_to_public()
    tenant = Tenant.objects.get(pk=alpha.tenant.pk)
    assert not tenant.allows_level("voice", "write") and tenant.allows_level("chat", "destructive")
