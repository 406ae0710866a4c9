"""A refused private host says how to go on (M2, issue 20): the refusal names the exact
`./manage private_host_approve …` line an operator runs — the host as given, the tenant, the
port, the purpose, plain http when asked for — and the README section; that line, run as
written, makes the same URL pass. Still no resolved address is named."""

import json
import shlex

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import translation

from tenants.outbound import OutboundRefused, check_url
from tests.support.outbound import DnsDouble

README_SECTION = "Approving a private host"


@pytest.fixture(autouse=True)
def strict(settings):
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False


def refusal(url, tenant, purpose):
    with pytest.raises(OutboundRefused) as caught:
        check_url(url, tenant=tenant, purpose=purpose)
    return str(caught.value.message)


def run_as_written(line):
    words = shlex.split(line)
    assert words[:2] == ["./manage", "private_host_approve"], line
    call_command(*words[1:])
    connection.set_schema_to_public()


@pytest.mark.parametrize("url, purpose, expected", [
    ("http://10.0.5.20:8000/v1", "model", "./manage private_host_approve 10.0.5.20 --tenant alpha --port 8000 --for model --allow-http"),
    ("https://10.0.7.3/mcp", "mcp", "./manage private_host_approve 10.0.7.3 --tenant alpha --port 443 --for mcp"),
    ("https://[fd00::5]:8443/hook", "webhook", "./manage private_host_approve fd00::5 --tenant alpha --port 8443 --for webhook"),
])
def test_the_refusal_holds_the_exact_command_and_it_works(alpha, url, purpose, expected):
    """M2: the message, in both languages, holds the command line and the README section; run
    as written, the command approves exactly what was refused."""
    for language in ("en", "es"):
        with translation.override(language):
            message = refusal(url, alpha.tenant, purpose)
        assert expected in message and README_SECTION in message, message
    run_as_written(expected)
    check_url(url, tenant=alpha.tenant, purpose=purpose)


def test_the_settings_form_and_the_api_show_the_command(alpha):
    """M2, T6, A4: the agent settings (dashboard) and PATCH /api/v1/tenant show the same line."""
    client = alpha.dashboard("ana")
    form = client.get("/settings/").context["form"]
    data = {name: value for name, value in form.initial.items() if value is not None and not isinstance(value, list)}
    data.update({"language": "es", "model_base_url": "https://10.0.5.20/v1", "policy_chat": ["read"], "policy_voice": ["read"]})
    page = client.post("/settings/", data, HTTP_ACCEPT_LANGUAGE="es").content.decode()
    line = "./manage private_host_approve 10.0.5.20 --tenant alpha --port 443 --for model"
    assert line in page and README_SECTION in page
    response = alpha.api().patch("/api/v1/tenant", json.dumps({"model_base_url": "https://10.0.5.20/v1"}),
                                 content_type="application/json")
    assert response.status_code == 400 and line in json.dumps(response.json())


def test_a_host_name_is_given_as_written_and_no_address_is_named(alpha, monkeypatch):
    """M2: a name that resolves privately: the command approves the name; the message names no
    address (a tenant must not learn the platform's internal network from it)."""
    DnsDouble(monkeypatch, {"models.acme.internal": ["10.0.5.20"]})
    message = refusal("https://models.acme.internal/v1", alpha.tenant, "model")
    assert "./manage private_host_approve models.acme.internal --tenant alpha --port 443 --for model" in message
    assert "10.0.5.20" not in message
