"""Operator-approved private hosts (M2): self-hosted models and tools on private networks are
reachable when an operator approved them — for one tenant or for all — while the global guard
(ASIXTO_ALLOW_PRIVATE_HOSTS) stays off; model endpoints follow the same rules when saved."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import translation

from tenants.models import ApprovedPrivateHost, Tenant
from tenants.outbound import OutboundRefused, check_url
from tests.support.outbound import PUBLIC_ADDRESS, DnsDouble
from tests.tenants.test_operator_admin import operator


@pytest.fixture(autouse=True)
def strict(settings):
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    with translation.override("en"):
        yield settings


def approve(host, tenant=None, **fields):
    connection.set_schema_to_public()
    approval = ApprovedPrivateHost(host=host, tenant=tenant, **fields)
    approval.full_clean()
    approval.save()
    return approval


def allowed(url, tenant, purpose="model"):
    try:
        check_url(url, tenant=tenant, purpose=purpose)
    except OutboundRefused:
        return False
    return True


def test_it_approves_a_network_for_one_tenant_only(alpha, beta):
    """M2: 10.0.5.0/24 approved for alpha: alpha reaches it, beta does not, and nothing else
    private opens up for alpha (the global guard stays on)."""
    approve("10.0.5.0/24", tenant=alpha.tenant, note="self-hosted model")
    assert allowed("https://10.0.5.20/v1", alpha.tenant)
    assert not allowed("https://10.0.5.20/v1", beta.tenant)
    assert not allowed("https://10.0.6.1/v1", alpha.tenant)
    assert not allowed("https://127.0.0.1/v1", alpha.tenant)


def test_it_approves_a_host_for_every_tenant_when_no_tenant_is_named(alpha, beta):
    """M2: an approval without a tenant is the platform's own shared service, open to all."""
    approve("10.9.9.9", ports="443, 8443")
    assert allowed("https://10.9.9.9:8443/v1", alpha.tenant) and allowed("https://10.9.9.9/v1", beta.tenant)


def test_an_approval_covers_the_ports_it_names_only(alpha):
    """Issue 19 M2: an approval that names no port covers 443 and 80; one that names ports covers
    those; no approval covers every port of a host."""
    approve("10.0.5.0/24", tenant=alpha.tenant)
    assert allowed("https://10.0.5.20/v1", alpha.tenant) and not allowed("https://10.0.5.20:8443/v1", alpha.tenant)
    approve("10.0.7.3", tenant=alpha.tenant, ports="8000,8443", allow_http=True)
    assert allowed("https://10.0.7.3:8443/v1", alpha.tenant) and allowed("http://10.0.7.3:8000/v1", alpha.tenant)
    assert not allowed("https://10.0.7.3/v1", alpha.tenant) and not allowed("http://10.0.7.3:6379/", alpha.tenant)
    with pytest.raises(ValidationError):
        approve("10.0.8.1", ports="80, http")


def test_an_approval_serves_the_purposes_it_names_only(alpha):
    """Issue 19 M2: a model host approved for models is not a webhook target, a search backend or
    an MCP server; without a purpose (a page a customer names) no approval applies."""
    approve("10.0.5.0/24", tenant=alpha.tenant, purposes=["model"])
    assert allowed("https://10.0.5.20/v1", alpha.tenant, "model")
    for purpose in ("webhook", "search", "mcp", None):
        assert not allowed("https://10.0.5.20/v1", alpha.tenant, purpose), purpose
    with pytest.raises(ValidationError):
        approve("10.0.9.1", purposes=["everything"])
    with pytest.raises(ValidationError):
        approve("10.0.9.1", purposes=[])


def test_it_takes_the_current_tenant_from_the_schema(alpha, beta):
    """M2: without an explicit tenant the check uses the tenant whose schema is active."""
    approve("10.0.5.0/24", tenant=alpha.tenant)
    with alpha.schema():
        assert allowed("https://10.0.5.20/v1", None)
    with beta.schema():
        assert not allowed("https://10.0.5.20/v1", None)


def test_a_host_name_approval_covers_private_networks_but_never_loopback_or_link_local(alpha, monkeypatch):
    """M2: approving a name trusts its private addresses, not the platform's own loopback or
    the metadata address: those need the address itself approved."""
    resolver = DnsDouble(monkeypatch, {"models.acme.test": ["10.20.0.4"]})
    approve("Models.Acme.Test.", tenant=alpha.tenant)
    assert ApprovedPrivateHost.objects.get().host == "models.acme.test"
    assert allowed("https://models.acme.test/v1", alpha.tenant)
    for address in ("127.0.0.1", "169.254.169.254", "::1"):
        resolver.answers["models.acme.test"] = [address]
        assert not allowed("https://models.acme.test/v1", alpha.tenant), address
    approve("127.0.0.1", tenant=alpha.tenant)
    resolver.answers["models.acme.test"] = ["127.0.0.1"]
    assert allowed("https://models.acme.test/v1", alpha.tenant)


def test_it_needs_every_address_of_a_name_approved(alpha, monkeypatch):
    """M2: a name with one approved and one unapproved private address is refused."""
    DnsDouble(monkeypatch, {"mixed.acme.test": [["10.0.5.20"], ["10.0.5.20", "10.0.7.1"]]})
    approve("10.0.5.0/24", tenant=alpha.tenant)
    assert allowed("https://mixed.acme.test/v1", alpha.tenant)
    assert not allowed("https://mixed.acme.test/v1", alpha.tenant)


def test_it_allows_plain_http_only_where_the_operator_said_so(alpha, monkeypatch):
    """M2: plain http needs an approval that allows it, and only ever to private addresses:
    a public address stays https-only whatever was approved."""
    approve("10.0.5.0/24", tenant=alpha.tenant)
    approve("10.0.8.0/24", tenant=alpha.tenant, allow_http=True, ports="80, 443, 11434")
    assert allowed("https://10.0.5.20/v1", alpha.tenant) and not allowed("http://10.0.5.20/v1", alpha.tenant)
    assert allowed("http://10.0.8.20:11434/v1", alpha.tenant)
    DnsDouble(monkeypatch, {"gone-public.acme.test": [PUBLIC_ADDRESS]})
    approve("gone-public.acme.test", tenant=alpha.tenant, allow_http=True)
    assert not allowed("http://gone-public.acme.test/v1", alpha.tenant)
    assert allowed("https://gone-public.acme.test/v1", alpha.tenant)


@pytest.mark.parametrize("host, error", [
    ("0.0.0.0/0", "broad"), ("::/0", "broad"), ("10.0.0.0/4", "broad"),
    ("https://models.acme.test/v1", "host"), ("models acme", "host"), ("", "blank"),
])
def test_it_refuses_approvals_that_are_not_a_host_or_are_too_broad(db, host, error):
    """M2, A4: an approval is one host name, address or network, never everything."""
    with pytest.raises(ValidationError) as refused:
        approve(host)
    assert "host" in refused.value.message_dict
    assert error in " ".join(refused.value.message_dict["host"]).lower()


def test_it_normalises_approved_networks(db):
    """M2: `10.0.5.7/24` is stored as the network it names."""
    assert approve("10.0.5.7/24").host == "10.0.5.0/24"
    assert approve("FD12::1").host == "fd12::1"


def test_operators_approve_private_hosts_in_the_admin(worlds, db):
    """M2: the Django admin lists approvals and records who approved each one."""
    client = operator(db)
    response = client.post("/admin/tenants/approvedprivatehost/add/", {
        "host": "10.0.5.0/24", "tenant": worlds["alpha"].tenant.pk, "note": "vLLM in the lab", "allow_http": "on",
        "ports": "8000", "purposes": '["model"]',
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    connection.set_schema_to_public()
    approval = ApprovedPrivateHost.objects.get()
    assert (approval.tenant_id, approval.approved_by, approval.allow_http) == (worlds["alpha"].tenant.pk, "ops", True)
    assert (approval.ports, approval.purposes) == ("8000", ["model"])
    response = client.post("/admin/tenants/approvedprivatehost/add/", {"host": "0.0.0.0/0", "note": "", "purposes": '["model"]'})
    assert response.status_code == 200 and ApprovedPrivateHost.objects.count() == 1
    assert client.get("/admin/tenants/approvedprivatehost/").status_code == 200


def test_operators_approve_private_hosts_from_the_command_line(worlds, db, capsys):
    """M2: `manage.py private_host_approve` adds (and with --revoke removes) an approval."""
    call_command("private_host_approve", "10.0.5.0/24", "--tenant", "alpha", "--allow-http", "--note", "lab",
                 "--port", "8000", "--port", "8443", "--for", "model", "--for", "webhook")
    connection.set_schema_to_public()
    approval = ApprovedPrivateHost.objects.get()
    assert (approval.tenant.slug, approval.allow_http, approval.note) == ("alpha", True, "lab")
    assert (approval.ports, approval.purposes) == ("8000, 8443", ["model", "webhook"])
    assert approval.approved_by
    with pytest.raises(CommandError):
        call_command("private_host_approve", "10.0.6.0/24", "--tenant", "nobody")
    with pytest.raises(CommandError):
        call_command("private_host_approve", "0.0.0.0/0")
    call_command("private_host_approve", "10.0.5.0/24", "--tenant", "alpha", "--revoke")
    assert not ApprovedPrivateHost.objects.exists()


def patch_settings(world, body):
    return world.api().patch("/api/v1/tenant", json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("field", ["model_base_url", "router_base_url"])
def test_model_endpoints_follow_the_same_rules_in_the_api(alpha, field):
    """M2, T6, A4: a private or plain-http model endpoint is a field error and nothing is
    stored; once an operator approves the host, the same value is accepted."""
    for url in ("https://10.0.5.20/v1", "http://93.184.216.34/v1", "https://169.254.169.254/v1"):
        response = patch_settings(alpha, {field: url, "model_name": "changed"})
        assert response.status_code == 400 and field in response.json()["error"]["fields"], response.content
    connection.set_schema_to_public()
    assert getattr(Tenant.objects.get(pk=alpha.tenant.pk), field) == "" and Tenant.objects.get(pk=alpha.tenant.pk).model_name != "changed"
    approve("10.0.5.0/24", tenant=alpha.tenant)
    assert patch_settings(alpha, {field: "https://10.0.5.20/v1"}).status_code == 200
    assert patch_settings(alpha, {field: ""}).status_code == 200


def test_model_endpoints_follow_the_same_rules_in_the_dashboard(alpha):
    """M2, T6, A4: the settings form shows a clear error on the endpoint field."""
    client = alpha.dashboard("ana")
    page = client.get("/settings/")
    form = page.context["form"]
    data = {name: value for name, value in form.initial.items() if value is not None and not isinstance(value, list)}
    data.update({"language": "es", "model_base_url": "https://10.0.5.20/v1", "policy_chat": ["read"], "policy_voice": ["read"]})
    response = client.post("/settings/", data, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200 and "model_base_url" in response.context["form"].errors
    assert "operator" in " ".join(response.context["form"].errors["model_base_url"])
