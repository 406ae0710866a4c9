"""What a tenant teaches routing (R6, issue 18): the admin's sample requests in a tool's overlay (API
and contract page), support's corrections on the conversation page, each tenant's own, counting
from the next message on; `routing_eval --examples` and its errors."""

import io
import json
from dataclasses import replace

import pytest
from django.core.management import CommandError, call_command

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.routing.candidates import Example, ToolCard
from runtime.routing.gate import check
from runtime.routing.index_store import build_live, live_cards, ready_index
from tests.conftest import PASSWORD
from tests.runtime.runtime_support import post, register_soporte
from tests.support.mcp_servers import serve_asgi
from tests.tenants.test_browser import CHROMIUM, CHROMIUM_ARGS, live_server_port  # noqa: F401 (a fixture)
from tools.models import RoutingExample, Tool
from tools.routing_examples import routing_examples

SEARCH, CASE, OPEN_CASE = "soporte__buscar_producto", "soporte__consultar_caso", "soporte__abrir_caso_soporte"
# Words the catalog does not use: without an example the check has nothing to go on.
ODD = "oiga, lo del cacharro ese que les encargué el martes"


def routed(world, text, *, messages=None):
    """The check as a turn of `world` runs it: its live catalog and every example it was taught."""
    with world.schema():
        index = ready_index(live_cards(), [Example(tool, text) for tool, text in routing_examples()])
        return check(index, messages or [{"role": "user", "content": text}])


def tool_id(world, name):
    with world.schema():
        return str(Tool.objects.get(prefixed_name=name, removed_in__isnull=True).pk)


@pytest.fixture
def two_desks(alpha, beta):
    """Both tenants run the same support server: the same tool names in two schemas."""
    with serve_asgi(build_app(SupportDesk())) as url:
        for world in (alpha, beta):
            register_soporte(world, url)
            with world.schema():
                build_live()
        yield alpha, beta


def set_examples(world, name, texts):
    return world.api().patch(f"/api/v1/tools/{tool_id(world, name)}/overlay", {"examples": texts},
                             content_type="application/json")


def test_each_tenant_routes_by_its_own_examples_only(two_desks):
    """R6, T2 (issue 18): the same sentence taught to different tools in two tenants with the same tool
    names: each tenant's next routing of it follows its own example, never the other's."""
    alpha, beta = two_desks
    assert set_examples(alpha, SEARCH, [ODD, "¿me consiguen un aparato de esos?"]).status_code == 200
    assert set_examples(beta, CASE, [ODD]).status_code == 200
    assert routed(alpha, ODD).best == SEARCH and routed(alpha, ODD).needs_tool
    assert routed(beta, ODD).best == CASE and routed(beta, ODD).needs_tool
    with beta.schema():
        assert [e.text for e in RoutingExample.objects.all()] == [ODD]


def test_the_overlay_api_keeps_who_taught_what_and_replaces_the_sample_requests(two_desks):
    """A1, R6: examples are part of the tool's overlay; the tool's detail lists them with who and when;
    a new list replaces the admin's sample requests; bad input is refused and nothing stored changes."""
    alpha, _beta = two_desks
    answer = set_examples(alpha, SEARCH, ["quiero un router", "  quiero   un router ", "¿tienen celulares?"])
    assert answer.status_code == 200
    shown = answer.json()["examples"]
    assert [e["text"] for e in shown] == ["quiero un router", "¿tienen celulares?"]
    assert all(e["source"] == "admin" and e["created_by"] and e["created_at"] for e in shown)
    refused = set_examples(alpha, SEARCH, ["x" * 501])
    assert refused.status_code == 400 and "examples" in json.dumps(refused.json())
    assert set_examples(alpha, SEARCH, ["¿tienen celulares?"]).json()["examples"][0]["text"] == "¿tienen celulares?"
    with alpha.schema():
        assert list(RoutingExample.objects.values_list("text", flat=True)) == ["¿tienen celulares?"]
    assert alpha.api(alpha.channel_key).patch(f"/api/v1/tools/{tool_id(alpha, SEARCH)}/overlay", {"examples": ["x"]},
                                              content_type="application/json").status_code == 403


def test_a_no_tool_correction_keeps_the_same_message_from_a_tool(two_desks):
    """R6 (issue 18): support marks a turn's routing wrong, "no tool"; the same message is not routed
    any more, and the correction names who made it; a follow-up is not decided by a stand-alone example."""
    alpha, _beta = two_desks
    text = "busco un router que no sea tan caro, pero solo estoy mirando, gracias"
    turn = post(alpha, text)
    client = alpha.dashboard(alpha.support_username)
    answer = client.post(f"/conversations/{turn.conversation_id}/turns/{turn.pk}/routing/", {"tool": ""})
    assert answer.status_code == 302
    with alpha.schema():
        correction = RoutingExample.objects.get(turn_id=turn.pk)
    assert correction.tool_name == "" and correction.created_by == alpha.support_username and correction.text == text
    result = routed(alpha, text)
    assert not result.needs_tool and result.reason == "like a 'no tool' example"
    page = client.get(f"/conversations/{turn.conversation_id}/").content.decode()
    assert "corrected to" in page or "corregido a" in page


def test_a_correction_names_a_tool_of_this_tenant_or_nothing(two_desks):
    """T2, A4: a tool that is not in the catalog is refused with a message; another conversation's
    turn is not found; nothing is stored."""
    alpha, beta = two_desks
    turn = post(alpha, "hola")
    other = post(beta, "hola")
    client = alpha.dashboard(alpha.admin_username)
    client.post(f"/conversations/{turn.conversation_id}/turns/{turn.pk}/routing/", {"tool": "otro__no_existe"})
    assert client.post(f"/conversations/{other.conversation_id}/turns/{other.pk}/routing/", {"tool": ""}).status_code == 404
    with alpha.schema():
        assert not RoutingExample.objects.exists()
    with beta.schema():
        assert not RoutingExample.objects.exists()


def test_routing_eval_with_examples_and_a_bad_line(tmp_path):
    """R6 (issue 18): `--examples FILE` changes the figures it reports; a bad line stops the command
    with the line named, before anything is evaluated."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps([
        {"name": "ver_reserva", "description": "Muestra una reserva de mesa.", "annotations": {"readOnlyHint": True}},
        {"name": "ver_menu", "description": "Muestra la carta del restaurante.", "annotations": {"readOnlyHint": True}},
    ]))
    dataset = tmp_path / "items.jsonl"
    dataset.write_text(json.dumps({"id": "1", "messages": [{"role": "user", "content": ODD}], "expected": "ver_reserva"}) + "\n")
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(json.dumps({"tool": "ver_reserva", "text": ODD}) + "\n")
    bad.write_text(json.dumps({"tool": "ver_reserva", "text": "ok"}) + "\n" + '{"tool": "ver_reserva"}\n')
    out = io.StringIO()
    call_command("routing_eval", str(dataset), "--catalog", str(catalog), "--examples", str(good), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["examples"] == 1 and report["top1"] == 1.0 and report["gate_accuracy"] == 1.0
    assert "harmful_routes" in report and "harmful_share" in report
    out = io.StringIO()
    with pytest.raises(CommandError, match="examples line 2"):
        call_command("routing_eval", str(dataset), "--catalog", str(catalog), "--examples", str(bad), stdout=out)
    assert out.getvalue() == ""
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps({"tool": "borrar_todo", "text": "hola"}) + "\n")
    with pytest.raises(CommandError, match="examples line 1: tool 'borrar_todo' is not in the catalog"):
        call_command("routing_eval", str(dataset), "--catalog", str(catalog), "--examples", str(unknown))


@pytest.mark.browser
def test_support_corrects_a_turns_routing_on_the_conversation_page(committed_world, live_server_port, django_db_blocker):  # noqa: F811
    """R6, A2 (issue 18), in real Chromium: support staff open a conversation, say its message needed
    another tool, and the next routing of the same message goes to that tool."""
    from playwright.sync_api import sync_playwright

    from runtime.models import Conversation, Message, Turn

    text = "ya van tres semanas y nadie me llama"
    base = f"http://{committed_world.domain}:{live_server_port}"
    with django_db_blocker.unblock(), serve_asgi(build_app(SupportDesk())) as url:
        register_soporte(committed_world, url)
        with committed_world.schema():
            build_live()
            conversation = Conversation.objects.create(language="es")
            message = Message.objects.create(conversation=conversation, role=Message.Role.CUSTOMER, text=text)
            Turn.objects.create(conversation=conversation, message=message, status=Turn.Status.DONE)
        before = routed(committed_world, text)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"{base}/conversations/{conversation.pk}/")
            page.fill("input[name=username]", committed_world.support_username)
            page.fill("input[name=password]", PASSWORD)
            page.click("main button[type=submit]")
            page.wait_for_url(f"{base}/conversations/{conversation.pk}/")
            page.select_option("form.routing select[name=tool]", CASE)
            page.click("form.routing button[type=submit]")
            page.wait_for_selector("p.message[role=status]", timeout=30_000)
            shown = page.locator("form.routing").inner_text()
            browser.close()
        after = routed(committed_world, text)
    assert CASE in shown and committed_world.support_username in shown
    assert after.needs_tool and after.best == CASE and after.reason == "like an example of its tool"
    assert not (before.needs_tool and before.best == CASE)  # what the correction changed


def test_examples_move_the_ranking_and_never_the_gate():
    """R6, issue 18: the gate was fitted without examples, so it reads the signals without them
    (`Signals.untaught`): a message that is not one of the examples gets the same probability of
    needing a tool with or without them, while the tool the examples teach rises in the ranking."""
    from runtime.routing import gate
    from runtime.routing.candidates import catalog_index
    from tests.runtime.test_routing_check import CARDS

    taught = [Example(SEARCH, "¿me consiguen un aparato de esos para la sala?"),
              Example(SEARCH, "busco un cacharro para ver tele")]
    message = "oiga, y un aparato de esos para la tele, ¿tienen?"
    (plain,) = gate.read(catalog_index(CARDS), [message], cascade=False)
    (with_examples,) = gate.read(catalog_index(CARDS, taught), [message], cascade=False)
    assert gate.gate_features(with_examples) == gate.gate_features(plain)
    assert gate.tool_probability(with_examples) == gate.tool_probability(plain)
    search = [card.name for card in CARDS].index(SEARCH)

    def lead(scores):  # over the best of the other tools (scores are relative: the classifier's term is a log)
        return scores[search] - max(score for n, score in enumerate(scores) if n != search)

    assert lead(with_examples.scores) > lead(plain.scores)


def test_a_changed_example_reaches_the_next_routing_although_the_process_keeps_them(committed_world, django_db_blocker):
    """R6, P4 (issues 18, 22): a process keeps the examples with its catalog instead of reading them
    on every turn; an example saved or deleted (through the services or the ORM) is what the next
    turn's routing reads, never the kept copy."""
    with django_db_blocker.unblock(), committed_world.schema():
        before = routing_examples()
        assert routing_examples() is before  # kept: the second turn reads no table
        saved = RoutingExample.objects.create(tool_name=SEARCH, text=ODD, source=RoutingExample.Source.ADMIN, created_by="t")
        assert (SEARCH, ODD) in routing_examples()
        saved.delete()
        assert (SEARCH, ODD) not in routing_examples()
        RoutingExample.objects.create(tool_name="", text="gracias", source=RoutingExample.Source.ADMIN, created_by="t")
        assert (None, "gracias") in routing_examples()
        RoutingExample.objects.filter(text="gracias").delete()
        assert (None, "gracias") not in routing_examples()


# A loyalty desk whose customers say "estrellas" for points and "lo que encargué" for an order: words of the tenant's
# own, which its tools' definitions never use and only its sample requests teach.
LOYALTY = [ToolCard.from_definition(d) for d in (
    {"name": "ver_puntos", "title": "Puntos", "description": "Consulta los puntos acumulados en la tarjeta de cliente y su "
     "vencimiento.", "annotations": {"readOnlyHint": True}},
    {"name": "canjear_puntos", "title": "Canje", "description": "Canjea puntos de la tarjeta de cliente por un producto del "
     "catálogo de premios.", "annotations": {"readOnlyHint": False}},
    {"name": "ver_pedido", "title": "Pedido", "description": "Muestra el estado de un pedido hecho en la app.",
     "annotations": {"readOnlyHint": True}},
    {"name": "cancelar_pedido", "title": "Cancelar pedido", "description": "Cancela un pedido hecho en la app que aún no "
     "se prepara.", "annotations": {"readOnlyHint": False, "destructiveHint": True}},
)]
LOYALTY_EXAMPLES = [Example(tool, text) for tool, texts in (
    ("ver_puntos", ("cuántas estrellas llevo", "quiero saber mis estrellas", "me dices cuántas estrellitas tengo")),
    ("canjear_puntos", ("quiero cambiar mis estrellas por un café", "úsame las estrellas para el frappé",
                        "paga el pan con estrellas")),
    ("ver_pedido", ("dónde viene mi café", "ya salió lo que pedí", "cuánto falta para mi orden")),
    ("cancelar_pedido", ("ya no quiero lo que pedí", "anula la orden", "quita mi pedido")),
) for text in texts]


def test_the_examples_teach_the_ranking_as_a_whole():
    """R6, issue 18 item 4: a tenant's sample requests are fitted together into a classifier of its own catalog
    (`taught.py`), so a message in the tenant's words that is close to no single example still goes to the tool its
    examples describe. Before, each example counted only through the closest one, and the three messages here went
    to the points' redemption, the points and the redemption. The gate reads none of it."""
    from runtime.routing import gate
    from runtime.routing.candidates import catalog_index

    expected = {"oye y de estrellitas cómo ando": "ver_puntos", "lo que encargué sigue en camino?": "ver_pedido",
                "mi frappé ya va?": "ver_pedido"}
    taught, plain = catalog_index(LOYALTY, LOYALTY_EXAMPLES), catalog_index(LOYALTY)
    assert taught.taught_use is not None and taught.taught_full is not None and plain.taught_full is None
    for cascade in (True, False):
        readings = gate.read(taught, list(expected), cascade=cascade)
        assert {text: taught.cards[int(r.scores.argmax())].name for text, r in zip(expected, readings)} == expected
        for with_examples, without in zip(readings, gate.read(plain, list(expected), cascade=cascade)):
            assert gate.tool_probability(with_examples) == gate.tool_probability(without)


def test_the_examples_classifier_is_bounded_and_the_same_in_every_process():
    """R6, P4 (issue 18): the classifier's fit grows with the tools, so a catalog of more than `taught.MAX_TOOLS`
    has none (its examples still rank through the closest one), nor has one without examples of its tools; a
    classifier is the same for the same examples (no randomness), so every worker process ranks alike."""
    from runtime.routing import taught
    from runtime.routing.candidates import catalog_index

    index = catalog_index(LOYALTY, LOYALTY_EXAMPLES)

    def fitted(tools=None, examples=slice(None)):
        rows = list(range(len(index))) if tools is None else [n % len(index) for n in range(tools)]
        return taught.classifiers(replace(index, about=index.about[rows], about_e5=index.about_e5[rows],
                                          examples_use=index.examples_use[examples],
                                          examples_e5=index.examples_e5[examples],
                                          examples_owner=index.examples_owner[examples]))

    cheap, full = fitted()
    assert (full.weights == index.taught_full.weights).all() and (full.bias == index.taught_full.bias).all()
    assert (cheap.weights == index.taught_use.weights).all()
    assert fitted(tools=taught.MAX_TOOLS)[1] is not None
    assert fitted(tools=taught.MAX_TOOLS + 1) == (None, None)
    assert fitted(examples=slice(0, 0)) == (None, None)


def test_a_tool_with_examples_does_not_draw_the_messages_of_the_tools_without():
    """R6, issue 18 item 4: an admin who writes examples for one tool only teaches that tool's requests; every tool
    weighs the same in the classifier's fit, so the messages of the other tools rank as they did with no example
    (weighing each example above the tools' own texts without that balance sent them to the taught tool)."""
    from runtime.routing import gate
    from runtime.routing.candidates import catalog_index

    messages = ["lo que encargué sigue en camino?", "mejor olvídate de mi orden de hoy", "cuántos puntos tengo",
                "quiero ver el estado de mi pedido de la app"]
    only_one = [example for example in LOYALTY_EXAMPLES if example.tool == "canjear_puntos"]
    taught, plain = catalog_index(LOYALTY, only_one), catalog_index(LOYALTY)
    assert taught.taught_full is not None
    for cascade in (True, False):
        best = [[index.cards[int(r.scores.argmax())].name for r in gate.read(index, messages, cascade=cascade)]
                for index in (taught, plain)]
        assert best[0] == best[1] and "canjear_puntos" not in best[0]
