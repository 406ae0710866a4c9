"""The variables a tenant sets on a stdio server (issue 8, M1, M3, T7): only the names the
operator declared, never over a fixed one; secret values encrypted at rest and write-only; a
secret reaches the child and never an API answer, a page, a log or a call record.

The child is tests/support/env_echo_server.py, whose tool echoes the variable it is told to in
its text, its structured result and its stderr, as a careless server would."""

import json
import logging
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.utils import translation

from tenants.models import ApprovedCommand
from tenants.stdio_commands import approved_command_create
from tests.tools.gateway_support import certified_tool
from tools import mcp
from tools.models import McpServer, ToolCall
from tools.servers import server_target
from tools.stdio_launch import STDIO_ENV

ECHO = str(Path(__file__).resolve().parents[1] / "support" / "env_echo_server.py")
SECRET = "eco-Kq7wP2xV9nR4tZ8m"
CEILING = 60.0


@pytest.fixture(autouse=True)
def _in_english():
    with translation.override("en"):
        yield


def approve_echo(**changes):
    connection.set_schema_to_public()
    fields = {
        "slug": "eco", "executable": sys.executable, "base_args": [ECHO, "ECO_TOKEN"],
        "fixed_env": {"ECO_MODE": "fixed"},
        "tenant_vars": [{"name": "ECO_TOKEN", "secret": True}, {"name": "ECO_REGION", "secret": False}],
    }
    return approved_command_create(**{**fields, **changes})


def post(client, path, data):
    return client.post(path, json.dumps(data), content_type="application/json")


def patch(client, path, data):
    return client.patch(path, json.dumps(data), content_type="application/json")


def test_a_tenant_sets_declared_variables_and_reads_back_secrets_only_as_set(alpha):
    """Issue 8, M1, T7: declared names are accepted; the secret is never answered back, is
    stored encrypted, and survives a change of the plain one; an undeclared name, a fixed one or
    a NUL is refused with a clear message."""
    approve_echo()
    api = alpha.api()
    created = post(api, "/api/v1/servers", {
        "slug": "eco", "transport": "stdio", "command": "eco", "env": {"ECO_TOKEN": SECRET, "ECO_REGION": "co"},
    })
    assert created.status_code == 201, created.content
    body = created.json()
    assert SECRET not in created.content.decode() and "env" not in body
    assert body["env_vars"] == [
        {"name": "ECO_TOKEN", "secret": True, "set": True},
        {"name": "ECO_REGION", "secret": False, "set": True, "value": "co"},
    ]
    with alpha.schema():
        with connection.cursor() as cursor:
            cursor.execute("SELECT env_secrets::text, env_values::text FROM tools_mcpserver WHERE id = %s", [body["id"]])
            stored_secret, stored_plain = cursor.fetchone()
    assert SECRET not in stored_secret and stored_secret and "co" in stored_plain

    changed = patch(api, f"/api/v1/servers/{body['id']}", {"env": {"ECO_REGION": "mx"}})
    assert changed.status_code == 200 and changed.json()["env_vars"][0]["set"] is True
    assert SECRET not in api.get(f"/api/v1/servers/{body['id']}").content.decode()
    with alpha.schema():
        target = server_target(McpServer.objects.get(pk=body["id"]))
    assert target.env["ECO_TOKEN"] == SECRET and target.env["ECO_REGION"] == "mx" and target.env["ECO_MODE"] == "fixed"

    for env, says in [
        ({"ECO_OTHER": "x"}, "ECO_OTHER"),
        ({"ECO_MODE": "mine"}, "ECO_MODE"),  # fixed by the operator
        ({"ECO_REGION": "a\u0000b"}, "NUL"),
        ({"ECO_REGION": "x" * 5000}, "4000"),
    ]:
        refused = patch(api, f"/api/v1/servers/{body['id']}", {"env": env})
        assert refused.status_code == 400 and says in json.dumps(refused.json()["error"]["fields"]["env"]), refused.content
    unset = patch(api, f"/api/v1/servers/{body['id']}", {"env": {"ECO_TOKEN": None}})
    assert unset.json()["env_vars"][0] == {"name": "ECO_TOKEN", "secret": True, "set": False}


def test_the_dashboard_shows_secrets_as_set_and_refuses_undeclared_names(alpha):
    """Issue 8, A1, T7: the server form lists the declared variables, the secret as set or not
    set and never its value; an undeclared name is an error on the field."""
    approve_echo()
    api = alpha.api()
    server = post(api, "/api/v1/servers", {
        "slug": "eco", "transport": "stdio", "command": "eco", "env": {"ECO_TOKEN": SECRET, "ECO_REGION": "co"},
    }).json()
    page = alpha.dashboard("ana")
    shown = page.get(f"/servers/{server['id']}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert SECRET not in shown and "ECO_REGION=co" in shown and "ECO_TOKEN" in shown
    form = {"transport": "stdio", "command": "eco", "timeout_seconds": "15", "enabled": "on", "contract_mode": ""}
    refused = page.post(f"/servers/{server['id']}/", {**form, "env_text": "ECO_OTHER=1"}, HTTP_ACCEPT_LANGUAGE="en")
    assert refused.status_code == 200 and "ECO_OTHER is not a variable of this command" in refused.content.decode()
    saved = page.post(f"/servers/{server['id']}/", {**form, "env_text": "ECO_REGION=pe"})
    assert saved.status_code == 302
    with alpha.schema():
        stored = McpServer.objects.get(pk=server["id"])
    assert stored.env_values == {"ECO_REGION": "pe"} and stored.secret_env == {"ECO_TOKEN": SECRET}


def test_a_secret_variable_reaches_the_child_and_nowhere_else(alpha, caplog):
    """Issue 8, T7, G9: the child echoes the secret (a direct call shows it got it); through the
    gateway the secret is in no invoke answer, record, record over the API, call page or log."""
    caplog.set_level(logging.DEBUG)
    approve_echo()
    tool = certified_tool(alpha, None, transport="stdio", command="eco", slug="eco", timeout=CEILING)
    with alpha.schema():
        McpServer.objects.filter(pk=tool.server_id).update(env_secrets=json.dumps({"ECO_TOKEN": SECRET}))
        target = server_target(McpServer.objects.get(pk=tool.server_id))
    direct = mcp.call_tool(target, "buscar_producto", {"consulta": "x"}, meta={})
    assert SECRET in json.dumps(direct)  # the child got it

    invoked = post(alpha.api(), f"/api/v1/tools/{tool.pk}/invoke", {"arguments": {"consulta": "x"}})
    assert invoked.status_code == 200, invoked.content
    body = invoked.json()
    assert body["outcome"] == "ok" and "[redacted]" in body["model_text"]
    record = alpha.api().get(f"/api/v1/tool-calls/{body['record_id']}")
    page = alpha.dashboard("sam").get(f"/calls/{body['record_id']}/")
    with alpha.schema():
        row = ToolCall.objects.filter(pk=body["record_id"]).values().get()
    seen = {
        "invoke": invoked.content.decode(), "record over the API": record.content.decode(),
        "call page": page.content.decode(), "row": json.dumps(row, default=str),
        "logs": caplog.text + "\n".join(entry.getMessage() for entry in caplog.records),
    }
    for where, text in seen.items():
        assert SECRET not in text, f"the secret in the {where}"


def test_the_launch_passes_only_safe_declared_names_and_never_over_a_fixed_or_platform_one(alpha):
    """M3, issue 19 H1 (and its surviving mutants): at launch a stored value reaches the child only
    if the approval declares its name now and the name is one tenants may set; it never replaces
    a fixed value or the platform's own. An approval stored before a name became unsafe (written
    here past the checks) still cannot pass it on."""
    command = approve_echo()
    ApprovedCommand.objects.filter(pk=command.pk).update(tenant_vars=[
        *command.tenant_vars, {"name": "SHELLOPTS", "secret": False}, {"name": "ECO_MODE", "secret": False},
        {"name": "PATH", "secret": False}, {"name": "PS4", "secret": True}])
    tool = certified_tool(alpha, None, transport="stdio", command="eco", slug="eco", timeout=CEILING)
    with alpha.schema():
        McpServer.objects.filter(pk=tool.server_id).update(
            env_values={"ECO_REGION": "co", "SHELLOPTS": "xtrace", "ECO_MODE": "mine", "PATH": "/tmp/evil", "OTHER": "x"},
            env_secrets=json.dumps({"ECO_TOKEN": SECRET, "PS4": "$(id)"}))
        env = server_target(McpServer.objects.get(pk=tool.server_id)).env
    assert env["ECO_REGION"] == "co" and env["ECO_TOKEN"] == SECRET
    assert env["ECO_MODE"] == "fixed" and env["PATH"] == STDIO_ENV["PATH"]
    assert not {"SHELLOPTS", "PS4", "OTHER"} & set(env)

    connection.set_schema_to_public()
    ApprovedCommand.objects.filter(pk=command.pk).update(tenant_vars=[{"name": "ECO_TOKEN", "secret": True}])
    with alpha.schema():
        env = server_target(McpServer.objects.get(pk=tool.server_id)).env
    assert "ECO_REGION" not in env and env["ECO_TOKEN"] == SECRET  # no longer declared: no longer passed

    connection.set_schema_to_public()
    ApprovedCommand.objects.filter(pk=command.pk).update(tenant_vars=[])
    with alpha.schema():
        env = server_target(McpServer.objects.get(pk=tool.server_id)).env
        refused = patch(alpha.api(), f"/api/v1/servers/{tool.server_id}", {"env": {"ANY_NAME": "x"}})
    assert "ECO_TOKEN" not in env and "ECO_REGION" not in env
    assert refused.status_code == 400 and "ANY_NAME" in json.dumps(refused.json()["error"]["fields"]["env"])
