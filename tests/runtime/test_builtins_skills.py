"""Skills in real turns (R12): a skill's tools are absent until `asixto__invoke_skill` loads it;
then its instructions join the system message and its tools arrive from the next model call."""

import pytest

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.models import Skill, Turn, TurnStep
from tests.runtime.runtime_support import agent, post, recording_app, register_soporte, run, tenant_settings, tool_calls_seen
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say

INVOKE, OPEN_CASE = "asixto__invoke_skill", "soporte__abrir_caso_soporte"
CASE = {"documento": "1020304050", "tipo": "falla", "descripcion": "El router no enciende"}


@pytest.fixture
def soporte(alpha):
    log = []
    with serve_asgi(recording_app(build_app(SupportDesk()), log)) as url:
        register_soporte(alpha, url)
        with alpha.schema():
            Skill.objects.create(name="garantias", description="Reclamos de garantía", triggers="garantía\nno enciende",
                                 instructions="GARANTIA: pide el número de factura antes de abrir el caso.",
                                 tools=[OPEN_CASE])
        yield log


def served(script):
    model = ScriptedModel(script)
    return model, serve_asgi(model.app())


def test_it_offers_a_skills_tools_only_after_the_skill_is_loaded(alpha, soporte):
    """R12: the first request offers invoke_skill and not the skill's tool; after the load, the
    skill's instructions are in the system message and its tool is offered and runs."""
    model, server = served([call(INVOKE, {"skill": "garantias"}), call(OPEN_CASE, CASE), say("ok"),
                            say("Abrí tu caso de garantía.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Mi router no enciende y está en garantía"))
    assert turn.status == Turn.Status.DONE
    first, second = model.requests[0], model.requests[1]
    assert INVOKE in model.tool_names(0) and OPEN_CASE not in model.tool_names(0)
    assert "GARANTIA" not in first["messages"][0]["content"]
    assert OPEN_CASE in model.tool_names(1) and "GARANTIA" in second["messages"][0]["content"]
    assert [name for name, _args, _key in tool_calls_seen(soporte)] == ["abrir_caso_soporte"]


def test_it_refuses_a_skills_tool_called_before_the_skill_loads(alpha, soporte):
    """R12: the model names the skill's tool without loading the skill: it does not run."""
    model, server = served([call(OPEN_CASE, CASE), say("ok"), say("¿Me das la factura?")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Mi router no enciende, garantía"))
    assert tool_calls_seen(soporte) == []
    with alpha.schema():
        assert TurnStep.objects.get(turn=turn, kind="tool").outcome == "unavailable"


def test_it_offers_no_skill_to_a_message_without_its_triggers(alpha, soporte):
    """R12: no trigger phrase, no invoke_skill; the skill's tool stays held back."""
    model, server = served([say("Hola.")])
    with server as url, agent(alpha, f"{url}/v1"):
        run(alpha, post(alpha, "Hola, ¿qué tal?"))
    assert INVOKE not in model.tool_names(0) and OPEN_CASE not in model.tool_names(0)


def test_a_builtin_a_skill_names_waits_for_the_skill_and_a_rerun_reloads_it(alpha, soporte):
    """R12, R10: a chart named by a skill is not offered on "gráfico" alone until the skill loads;
    a turn run again after the load (its steps replayed) offers the skill's tools again."""
    with alpha.schema():
        Skill.objects.create(name="reportes", description="Reportes", triggers="reporte",
                             instructions="REPORTES: dibuja gráficos.", tools=["asixto__draw_chart"])
    model, server = served([call(INVOKE, {"skill": "reportes"}), say("¿Qué datos?"), say("¿Qué datos quieres graficar?")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Quiero un reporte en gráfico"))
        assert "asixto__draw_chart" not in model.tool_names(0) and "asixto__draw_chart" in model.tool_names(1)
        with alpha.schema():
            Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.RUNNING, lease_expires_at=None)
            TurnStep.objects.filter(turn=turn, kind="model", index__gte=2).delete()
            TurnStep.objects.filter(turn=turn, kind="reply").delete()
        before = len(model.requests)
        run(alpha, turn)
    again = model.requests[before]
    assert "asixto__draw_chart" in [tool["function"]["name"] for tool in again["tools"]]
    assert "REPORTES" in again["messages"][0]["content"]


def test_a_skill_added_or_disabled_reaches_the_next_turn_of_a_running_process(committed_world, django_db_blocker):
    """R12, P4: the enabled skills are read once per catalog generation and process, not per turn;
    adding a skill or disabling it renews the generation, so the very next turn offers it, or not."""
    from runtime.builtins.skills import skill_save

    world = committed_world
    model, server = served([say("Hola."), say("Hola."), say("Hola.")])
    with django_db_blocker.unblock(), server as url, agent(world, f"{url}/v1"):
        run(world, post(world, "Mi router está en garantía"))  # no skill yet: read, and kept
        with world.schema():
            skill = skill_save(data={"name": "garantias", "description": "Reclamos de garantía", "triggers": "garantía",
                                     "instructions": "Pide la factura.", "tools": []})
        run(world, post(world, "Mi router está en garantía"))
        with world.schema():
            skill_save(skill=skill, data={"enabled": False})
        run(world, post(world, "Mi router está en garantía"))
    assert [INVOKE in model.tool_names(n) for n in range(3)] == [False, True, False]


def test_a_skill_never_brings_a_builtin_the_tenants_policies_keep_out(alpha, soporte):
    """Issue 19 (low, and M1): with public sources off, a skill listing asixto__read_page does not
    make it available; with chat limited to read tools, a skill listing edit_document does not
    either. Called anyway, neither runs."""
    from runtime.models import Document

    with alpha.schema():
        Skill.objects.create(name="web", description="Web", triggers="consulta la web",
                             instructions="WEB: lee páginas.", tools=["asixto__read_page", "asixto__edit_document"])
    script = [call(INVOKE, {"skill": "web"}), call("asixto__read_page", {"url": "https://example.com/"}),
              call("asixto__edit_document", {"document": "notas", "mode": "append", "text": "x"}), say("ok"), say("Listo.")]
    model, server = served(script)
    with tenant_settings(alpha, public_sources=False, exposure_policy={"chat": ["read"], "voice": ["read"]}):
        with server as url, agent(alpha, f"{url}/v1"):
            turn = run(alpha, post(alpha, "Por favor consulta la web y anótalo"))
    assert "WEB" in model.requests[1]["messages"][0]["content"]  # the skill loaded
    assert not {"asixto__read_page", "asixto__edit_document"} & set(model.tool_names(1))
    with alpha.schema():
        outcomes = list(TurnStep.objects.filter(turn=turn, kind="tool").order_by("index").values_list("outcome", flat=True))
        assert not Document.objects.exists()
    assert outcomes[1:] == ["unavailable", "unavailable"]
