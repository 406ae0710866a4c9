"""Budgets (R4): the per-result cut the gateway makes is logged, never made twice; the per-turn
budget cuts the result that crosses it and replaces later ones with a placeholder; every cut is
a TruncationLog row; each tenant's own budgets apply."""


from runtime.budgets import apply_budgets, exhausted_placeholder, truncation_mark
from runtime.models import TruncationLog, Turn
from tests.runtime.runtime_support import agent, post, run
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, calls, say
from tests.tools.gateway_support import certified_tool, ok_result

TOOL = "crm__buscar_producto"


def budget(text, *, used=0, turn_budget=1000, truncated=False, result_chars=0):
    return apply_budgets(text=text, tool_name=TOOL, gateway_truncated=truncated, result_chars=result_chars or len(text),
                         used=used, turn_budget=turn_budget, language="en")


def test_a_result_within_both_budgets_is_untouched():
    """R4: nothing cut, nothing logged; the turn's count grows by the result's size."""
    result = budget("x" * 300, used=100)
    assert (result.text, result.used, result.cuts) == ("x" * 300, 400, ())


def test_a_cut_made_by_the_gateway_is_logged_not_repeated():
    """R4, G7: the gateway already cut and marked the result; it is logged with the size the
    server sent, and the text is passed on as it is — one mark, not two."""
    text = "y" * 200 + "\n" + truncation_mark("en")
    result = budget(text, truncated=True, result_chars=5000)
    assert result.text == text and [(c.kind, c.original_chars, c.kept_chars) for c in result.cuts] == [
        ("result", 5000, len(text))]


def test_the_result_that_crosses_the_turn_budget_is_cut_to_what_is_left():
    """R4: cut to the characters left in the turn, with exactly one mark that says the content is
    incomplete and the model must invent nothing."""
    already_marked = "z " * 400 + "\n" + truncation_mark("en")
    result = budget(already_marked, used=600, truncated=True, result_chars=3000)
    assert len(result.text) <= 400 and result.text.endswith(truncation_mark("en"))
    assert result.text.count("truncated") == 1
    assert [(c.kind, c.original_chars) for c in result.cuts] == [("result", 3000), ("turn", len(already_marked))]
    assert result.cuts[1].kept_chars == len(result.text) and result.used == 600 + len(result.text)
    mark = truncation_mark("en")
    assert "incomplete" in mark and "invent nothing" in mark


def test_the_budget_edges_hold_to_the_character():
    """R4, issue 19 (two surviving mutants): a result of exactly the characters left is not cut;
    a result with no space to cut at is cut to exactly what is left, never one character more."""
    exact = budget("x" * 400, used=600)
    assert (exact.text, exact.used, exact.cuts) == ("x" * 400, 1000, ())
    solid = budget("x" * 2000, used=600)
    assert len(solid.text) == 400 and solid.used == 1000 and solid.text.endswith(truncation_mark("en"))


def test_once_the_turn_budget_is_spent_results_become_a_placeholder():
    """R4: nothing useful fits any more: a short placeholder that names the tool and says the
    information is incomplete and nothing may be invented; nothing of the result is kept."""
    result = budget("w" * 500, used=990)
    assert result.text == exhausted_placeholder("en", TOOL)
    assert TOOL in result.text and "incomplete" in result.text and "invent nothing" in result.text
    assert [(c.kind, c.original_chars, c.kept_chars) for c in result.cuts] == [("turn", 500, 0)]
    assert result.used == 1000


def test_the_mark_is_the_gateways_and_speaks_the_conversations_language():
    """R4, A3: the turn's mark is the gateway's sentence (one translation), rendered in the
    conversation's language."""
    from tools.gateway.sanitize import truncation_mark as gateway_mark

    assert truncation_mark("es") == gateway_mark("es") != truncation_mark("en") == gateway_mark("en")


def test_a_turn_logs_every_cut_with_the_tenants_budgets(alpha, beta):
    """R4, T6: alpha (per-result 1,000, per-turn 1,500): three 2,500-character results → the
    first cut by the gateway, the second also cut to what the turn has left, the third replaced
    by the placeholder; a TruncationLog row per cut with tool, sizes, kind, turn, conversation.
    beta (default budgets 3,000 / 12,000): the same results pass whole, nothing logged."""
    big = "Resultado " + "dato " * 498  # 2,500 characters
    peer = FaultyPeer([ok_result(text=big)])
    script = [calls((TOOL, {"consulta": "a"}), (TOOL, {"consulta": "b"}), (TOOL, {"consulta": "c"})), say("ok"),
              say("Respuesta.")]
    alpha_model, beta_model = ScriptedModel(script), ScriptedModel(script)
    with serve_asgi(peer.app()) as tool_url, serve_asgi(alpha_model.app()) as a_url, serve_asgi(beta_model.app()) as b_url:
        certified_tool(alpha, tool_url)
        certified_tool(beta, tool_url)
        with agent(alpha, f"{a_url}/v1", result_budget=1000, turn_budget=1500):
            turn = run(alpha, post(alpha, "Busca a, b y c"))
        with agent(beta, f"{b_url}/v1"):
            other = run(beta, post(beta, "Busca a, b y c"))

    read = [m["content"] for m in alpha_model.requests[1]["messages"] if m["role"] == "tool"]
    assert len(read[0]) <= 1000 and read[0].endswith(truncation_mark("es"))
    assert len(read[1]) <= 500 and read[1].count(truncation_mark("es")) == 1
    assert read[2] == exhausted_placeholder("es", TOOL)
    with alpha.schema():
        logs = list(TruncationLog.objects.filter(turn=turn).order_by("id"))
        assert Turn.objects.get(pk=turn.pk).turn_chars == 1500
    assert [(log.kind, log.original_chars) for log in logs] == [
        ("result", 2500), ("result", 2500), ("turn", len(read[0])), ("result", 2500), ("turn", len(read[0]))]
    assert [log.kept_chars for log in logs] == [len(read[0]), len(read[0]), len(read[1]), len(read[0]), 0]
    assert {(log.tool_name, log.conversation_id) for log in logs} == {(TOOL, turn.conversation_id)}
    assert all(log.created_at is not None for log in logs)

    assert [m["content"] for m in beta_model.requests[1]["messages"] if m["role"] == "tool"] == [big] * 3
    with beta.schema():
        assert not TruncationLog.objects.filter(turn=other).exists()
