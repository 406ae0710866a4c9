"""Skills and the public-sources switch, managed by admins in the API and the dashboard (R12,
R13, T1–T4, T6, A4): isolated per tenant, unknown tools refused with a clear error, support staff
and channel keys kept out. The switch is a tenant setting (T6), beside the other agent settings."""

import json
import re

from django.db import connection

from runtime.builtins.models import Skill
from tenants.models import Tenant
from tests.isolation import IsolationContract
from tests.tenants.test_dashboard import SETTINGS_FORM


def send(client, url, body, method="post"):
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


def make_skill(world, name="garantias"):
    with world.schema():
        return Skill.objects.create(name=name, description="Garantías", instructions="Pide la factura.",
                                    tools=["asixto__draw_chart"]).pk


class TestSkillIsolation(IsolationContract):
    list_url = "/api/v1/skills"
    detail_url = "/api/v1/skills/{id}"
    detail_methods = ("get", "patch", "delete")

    def make_object(self, world):
        return make_skill(world)


def test_the_switch_is_one_tenant_setting_of_each_tenant(alpha, beta):
    """T1, T6, R13: switching public sources on for B (tenant settings API) leaves A's off; the
    runtime's own options endpoint is gone: there is one switch."""
    response = send(beta.api(), "/api/v1/tenant", {"public_sources": True}, "patch")
    assert response.status_code == 200 and response.json()["public_sources"] is True
    connection.set_schema_to_public()
    assert alpha.api().get("/api/v1/tenant").json()["public_sources"] is False
    assert beta.api().get("/api/v1/tenant").json()["public_sources"] is True
    assert beta.api().get("/api/v1/agent-options").status_code == 404


def test_it_creates_and_changes_a_skill_through_the_api(alpha):
    """R12, A1, A4: an admin key creates a skill; unknown tools and unknown fields get 400 and store nothing."""
    api = alpha.api()
    bad = send(api, "/api/v1/skills", {"name": "x", "description": "d", "instructions": "i", "tools": ["nope__tool"]})
    assert bad.status_code == 400 and "nope__tool" in bad.content.decode()
    assert send(api, "/api/v1/skills", {"name": "x", "description": "d", "instructions": "i", "colour": 1}).status_code == 400
    created = send(api, "/api/v1/skills", {"name": "garantias", "description": "Garantías", "instructions": "Pide la factura.",
                                           "triggers": "garantía", "tools": ["asixto__draw_chart"]})
    assert created.status_code == 201, created.content
    skill_id = created.json()["id"]
    changed = send(api, f"/api/v1/skills/{skill_id}", {"enabled": False}, "patch")
    assert changed.status_code == 200 and changed.json()["enabled"] is False
    with alpha.schema():
        assert list(Skill.objects.values_list("name", "enabled", "tools")) == [("garantias", False, ["asixto__draw_chart"])]


def test_admins_manage_skills_and_the_switch_in_the_dashboard(alpha):
    """R12, R13, T4: the admin creates a skill and turns public sources on; support staff cannot."""
    admin = alpha.dashboard(alpha.admin_username)
    assert admin.get("/skills/").status_code == 200
    response = admin.post("/skills/", {"name": "envios", "description": "Envíos", "triggers": "envío",
                                       "instructions": "Da la guía.", "tools_text": "asixto__draw_chart", "enabled": "on"})
    assert response.status_code == 302
    bad = admin.post("/skills/", {"name": "otra", "description": "d", "instructions": "i", "tools_text": "nope__x"})
    assert bad.status_code == 400 and "nope__x" in bad.content.decode()
    assert admin.post("/settings/", {**SETTINGS_FORM, "public_sources": "on"}).status_code == 302
    assert Tenant.objects.get(pk=alpha.tenant.pk).public_sources is True
    with alpha.schema():
        skill = Skill.objects.get()
        assert (skill.name, skill.tools) == ("envios", ["asixto__draw_chart"])
    connection.set_schema_to_public()
    page = admin.get(f"/skills/{skill.pk}/")
    assert page.status_code == 200 and "asixto__draw_chart" in page.content.decode()
    support = alpha.dashboard(alpha.support_username)
    assert support.get("/skills/").status_code in (302, 403)
    assert support.post("/settings/", SETTINGS_FORM).status_code in (302, 403)
    assert Tenant.objects.get(pk=alpha.tenant.pk).public_sources is True
    settings_page = admin.get("/settings/").content.decode()
    assert re.search(r'<input[^>]*name="public_sources"[^>]*checked', settings_page)


def test_a_skills_trigger_phrases_and_the_skills_of_an_account_are_bounded(alpha):
    """R12, A4 (found by a security review: 13 skills of 45,000 phrases cost every message 1.4 s of
    the shared workers' CPU, and other tenants' turns took 50 s): at most MAX_TRIGGER_PHRASES phrases
    of MAX_TRIGGER_CHARS characters (400 naming `triggers`, in the API and the dashboard) and
    MAX_SKILLS skills (409); nothing is stored."""
    from runtime.builtins.models import MAX_SKILLS, MAX_TRIGGER_CHARS, MAX_TRIGGER_PHRASES

    api = alpha.api()
    body = {"name": "grande", "description": "d", "instructions": "i"}
    for triggers in ("\n".join(f"frase {n}" for n in range(MAX_TRIGGER_PHRASES + 1)), "a" * (MAX_TRIGGER_CHARS + 1)):
        refused = send(api, "/api/v1/skills", {**body, "triggers": triggers})
        assert refused.status_code == 400 and "triggers" in refused.json()["error"]["fields"], refused.content
    page = alpha.dashboard("ana").post("/skills/", {**body, "triggers": "a" * (MAX_TRIGGER_CHARS + 1)})
    assert page.status_code == 400
    assert send(api, "/api/v1/skills", {**body, "triggers": "\n".join(["frase"] * MAX_TRIGGER_PHRASES)}).status_code == 201
    with alpha.schema():
        Skill.objects.bulk_create(Skill(name=f"s{n}", description="d", instructions="i") for n in range(MAX_SKILLS - 1))
    full = send(api, "/api/v1/skills", {**body, "name": "otra"})
    assert full.status_code == 409, full.content
    assert alpha.dashboard("ana").post("/skills/", {**body, "name": "otra"}).status_code == 400
    with alpha.schema():
        assert Skill.objects.count() == MAX_SKILLS and not Skill.objects.filter(name="otra").exists()
