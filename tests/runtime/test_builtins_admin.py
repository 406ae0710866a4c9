"""Skills and the public-sources switch, managed by admins in the API and the dashboard (R12,
R13, T1–T4, A4): isolated per tenant, unknown tools refused with a clear error, support staff
and channel keys kept out."""

import json

from django.db import connection

from runtime.builtins.models import AgentOptions, Skill
from tests.isolation import IsolationContract


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


class TestAgentOptionsIsolation(IsolationContract):
    list_url = "/api/v1/agent-options"

    def make_object(self, world):
        return "public_sources"

    def test_it_answers_404_for_another_tenants_object(self, alpha, beta):
        """T1: switching public sources on for B leaves A's switch off."""
        assert send(beta.api(), "/api/v1/agent-options", {"public_sources": True}, "patch").status_code == 200
        connection.set_schema_to_public()
        assert alpha.api().get("/api/v1/agent-options").json()["public_sources"] is False
        assert beta.api().get("/api/v1/agent-options").json()["public_sources"] is True


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
    assert admin.post("/agent-options/", {"public_sources": "on"}).status_code == 302
    with alpha.schema():
        skill = Skill.objects.get()
        assert (skill.name, skill.tools) == ("envios", ["asixto__draw_chart"])
        assert AgentOptions.current().public_sources is True
    connection.set_schema_to_public()
    page = admin.get(f"/skills/{skill.pk}/")
    assert page.status_code == 200 and "asixto__draw_chart" in page.content.decode()
    support = alpha.dashboard(alpha.support_username)
    assert support.get("/skills/").status_code in (302, 403)
    assert support.post("/agent-options/", {}).status_code in (302, 403)
    with alpha.schema():
        assert AgentOptions.current().public_sources is True
