"""Operators approve stdio commands without the Django admin (M3, issue 8): a management command
for scripts and an operator API, both through one service with one set of rules."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import translation

from tenants.models import ApiKey, ApprovedCommand
from tenants.services import api_key_create

NODE = "/usr/bin/node"


@pytest.fixture(autouse=True)
def _in_english():
    with translation.override("en"):
        yield


@pytest.fixture
def operator(db):
    connection.set_schema_to_public()
    _key, plaintext = api_key_create(tenant=None, name="ops", scope=ApiKey.Scope.OPERATOR)
    from django.test import Client

    return Client(headers={"Authorization": f"Bearer {plaintext}", "Accept-Language": "en"})


def send(client, method, path, data=None):
    return getattr(client, method)(path, json.dumps(data or {}), content_type="application/json")


MEMORY = {
    "slug": "server-memory", "executable": NODE, "base_args": ["/opt/mcp/memory.js"],
    "fixed_env": {"MEMORY_FILE_PATH": "{workdir}/memory.json"},
    "tenant_vars": [{"name": "API_TOKEN", "secret": True}, {"name": "REGION", "secret": False}],
}


def test_operators_approve_list_change_and_disable_commands_through_the_api(operator, alpha):
    """M3, issue 8: create, list, read, change and disable; a tenant's admin key gets 403 and no
    key 401."""
    created = send(operator, "post", "/api/v1/operator/stdio-commands", MEMORY)
    assert created.status_code == 201, created.content
    assert created.json() == {**MEMORY, "description": "", "allow_extra_args": False, "enabled": True}
    assert send(operator, "post", "/api/v1/operator/stdio-commands", MEMORY).status_code == 409
    listed = operator.get("/api/v1/operator/stdio-commands").json()["results"]
    assert [row["slug"] for row in listed] == ["server-memory"]
    changed = send(operator, "patch", "/api/v1/operator/stdio-commands/server-memory", {"allow_extra_args": True})
    assert changed.status_code == 200 and changed.json()["allow_extra_args"] is True
    assert send(operator, "patch", "/api/v1/operator/stdio-commands/server-memory", {"slug": "x"}).status_code == 400
    disabled = operator.delete("/api/v1/operator/stdio-commands/server-memory")
    assert disabled.status_code == 200 and disabled.json()["enabled"] is False
    assert ApprovedCommand.objects.get(slug="server-memory").enabled is False

    assert send(alpha.api(), "post", "/api/v1/operator/stdio-commands", {**MEMORY, "slug": "other"}).status_code == 403
    assert alpha.api().get("/api/v1/operator/stdio-commands").status_code == 403
    assert alpha.api(key="").get("/api/v1/operator/stdio-commands").status_code == 401
    assert not ApprovedCommand.objects.filter(slug="other").exists()


@pytest.mark.parametrize(("change", "field", "says"), [
    ({"executable": "node"}, "executable", "absolute path"),
    ({"tenant_vars": [{"name": "MEMORY_FILE_PATH", "secret": False}]}, "tenant_vars", "fixed value"),
    ({"tenant_vars": [{"name": "LD_PRELOAD"}]}, "tenant_vars", "decides which code runs"),
    ({"tenant_vars": [{"name": "NODE_OPTIONS", "secret": False}]}, "tenant_vars", "decides which code runs"),
    ({"tenant_vars": [{"name": "A"}, {"name": "A"}]}, "tenant_vars", "listed twice"),
    ({"tenant_vars": [{"name": "region"}]}, "tenant_vars", "in capitals"),
    ({"tenant_vars": [{"name": ["API_TOKEN"]}]}, "tenant_vars", "Each variable is"),  # issue 19: was a 500
    ({"tenant_vars": [{"name": {"a": 1}}]}, "tenant_vars", "Each variable is"),
    ({"tenant_vars": ["API_TOKEN"]}, "tenant_vars", "Each variable is"),
    ({"tenant_vars": [{"name": "BAD NAME"}]}, "tenant_vars", "Each variable is"),
    ({"fixed_env": {"A=B": "x"}}, "fixed_env", "Not a valid variable name"),
    ({"fixed_env": {"A": "x\u0000y"}}, "fixed_env", "NUL"),
    ({"fixed_env": {"A": 3}}, "fixed_env", "must be text"),
    ({"base_args": ["x" * 5000]}, "base_args", "at most 4000"),
])
def test_it_refuses_an_approval_that_breaks_a_rule(operator, change, field, says):
    """M3, issue 8, A4: each rule answers 400 with the field and a message that says what."""
    refused = send(operator, "post", "/api/v1/operator/stdio-commands", {**MEMORY, **change})
    assert refused.status_code == 400, refused.content
    assert says in json.dumps(refused.json()["error"]["fields"][field]), refused.content
    assert not ApprovedCommand.objects.exists()


# Each was accepted before issue 19 and changes what a common runtime runs or where it connects;
# SHELLOPTS=xtrace with PS4='$(…)' ran a tenant's command through a bash wrapper (H1).
RUNTIME_NAMES = ["SHELLOPTS", "PS4", "BASH_FUNC_x%%", "GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
                 "GIT_CONFIG_VALUE_0", "PYTHONWARNINGS", "PYTHONUSERBASE", "JAVA_TOOL_OPTIONS", "NPM_CONFIG_PREFIX",
                 "OPENSSL_CONF", "HTTPS_PROXY", "NODE_EXTRA_CA_CERTS", "LC_ALL", "TMPDIR", "PERL5DB", "CARGO_HOME"]


@pytest.mark.parametrize("name", RUNTIME_NAMES)
def test_it_refuses_to_let_tenants_set_a_name_runtimes_read(operator, name):
    """M3, issue 19 H1: a tenant variable is an allow-list; an operator cannot declare a name that
    a shell, Python, Node, Java, Git, OpenSSL or a proxy-aware client reads to decide what runs."""
    refused = send(operator, "post", "/api/v1/operator/stdio-commands", {**MEMORY, "tenant_vars": [{"name": name}]})
    assert refused.status_code == 400, refused.content
    assert "tenant_vars" in refused.json()["error"]["fields"]
    assert not ApprovedCommand.objects.exists()


def test_the_management_commands_approve_replace_list_and_disable(db):
    """M3, issue 8: `stdio_command_approve` is idempotent (it replaces an approval with exactly
    what is given), `stdio_command_list` shows it, `stdio_command_disable` turns it off."""
    out = io.StringIO()
    argv = ["server-memory", "--executable", NODE, "--arg", "/opt/mcp/memory.js", "--env", "MEMORY_FILE_PATH={workdir}/m.json",
            "--tenant-var", "API_TOKEN:secret", "--tenant-var", "REGION", "--description", "Knowledge graph"]
    call_command("stdio_command_approve", *argv, stdout=out)
    command = ApprovedCommand.objects.get(slug="server-memory")
    assert command.base_args == ["/opt/mcp/memory.js"] and command.fixed_env == {"MEMORY_FILE_PATH": "{workdir}/m.json"}
    assert command.declared_vars == {"API_TOKEN": True, "REGION": False} and not command.allow_extra_args
    call_command("stdio_command_approve", "server-memory", "--executable", NODE, "--allow-extra-args", stdout=out)
    command.refresh_from_db()
    assert command.allow_extra_args and command.base_args == [] and command.tenant_vars == [] and command.enabled
    listed = io.StringIO()
    call_command("stdio_command_list", "--json", stdout=listed)
    assert json.loads(listed.getvalue())["slug"] == "server-memory"
    call_command("stdio_command_disable", "server-memory", stdout=out)
    assert ApprovedCommand.objects.get(slug="server-memory").enabled is False
    with pytest.raises(CommandError, match="fixed value"):
        call_command("stdio_command_approve", "bad", "--executable", NODE, "--env", "A=1", "--tenant-var", "A", stdout=out)
    with pytest.raises(CommandError, match="NAME:secret"):
        call_command("stdio_command_approve", "bad", "--executable", NODE, "--tenant-var", "A:maybe", stdout=out)
    with pytest.raises(CommandError, match="No approved command"):
        call_command("stdio_command_disable", "nothing", stdout=out)
    assert not ApprovedCommand.objects.filter(slug="bad").exists()


def test_the_django_admin_applies_the_same_rules(db):
    """M3, issue 8: an approval the service would refuse is refused in the admin too."""
    from django.test import Client

    from accounts.models import User

    connection.set_schema_to_public()
    User.objects.create_superuser("ops", password="ops-password-123")
    admin = Client(HTTP_HOST="localhost")
    assert admin.post("/admin/login/?next=/admin/", {"username": "ops", "password": "ops-password-123"}).status_code == 302
    form = {"slug": "crm", "executable": NODE, "base_args": "[]", "fixed_env": '{"REGION": "co"}', "enabled": "on"}
    refused = admin.post("/admin/tenants/approvedcommand/add/", {**form, "tenant_vars": '[{"name": "REGION"}]'})
    assert refused.status_code == 200 and "REGION" in refused.content.decode()
    assert not ApprovedCommand.objects.filter(slug="crm").exists()
    saved = admin.post("/admin/tenants/approvedcommand/add/", {**form, "tenant_vars": '[{"name": "TOKEN", "secret": true}]'})
    assert saved.status_code == 302
    assert ApprovedCommand.objects.get(slug="crm").declared_vars == {"TOKEN": True}
