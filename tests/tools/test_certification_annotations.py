"""Certification of annotations (C5) and the level they give a tool (M7)."""

import pytest
from django.utils import translation

from tools.rules import BLOCKING, WARNING, certify_definition, tool_level
from tools.rules.annotations import check_annotations

from .seed_definitions import SCENARIOS, abrir_caso_soporte

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}
WRITES = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}


def c5(name, annotations, verb=None):
    meta = abrir_caso_soporte()["_meta"]
    if verb:
        meta["com.asixto/verb"] = verb
    tool = abrir_caso_soporte(name=name, annotations=annotations, meta=meta)
    return [(f.rule, f.severity) for f in certify_definition(tool, server_slug="crm", scenarios=SCENARIOS) if f.rule == "C5"]


@pytest.mark.parametrize(
    "annotations, level",
    [
        ({"readOnlyHint": True, "destructiveHint": False}, "read"),
        ({"readOnlyHint": True}, "read"),
        ({"readOnlyHint": False, "destructiveHint": False}, "write"),
        ({"readOnlyHint": False, "destructiveHint": True}, "destructive"),
        ({"destructiveHint": False}, "write"),
        # Missing or non-boolean hints take the MCP defaults: the cautious reading.
        (None, "destructive"),
        ({}, "destructive"),
        ({"readOnlyHint": False}, "destructive"),
        ({"readOnlyHint": "true", "destructiveHint": "false"}, "destructive"),
        # Contradictory: fails closed.
        ({"readOnlyHint": True, "destructiveHint": True}, "destructive"),
    ],
)
def test_it_classifies_the_level_from_the_annotations(annotations, level):
    """M7: read (readOnlyHint), write, destructive (destructiveHint); undeclared fails closed."""
    assert tool_level(annotations) == level


def test_it_accepts_the_contract_example_annotations():
    """C5: the seed declares all three hints, honestly."""
    tool = abrir_caso_soporte()

    assert check_annotations(tool["annotations"], name=tool["name"], verb_phrase="abrir un caso de soporte") == []
    assert tool_level(tool["annotations"]) == "write"


def test_it_warns_on_undeclared_hints_and_names_them():
    """C5: readOnlyHint, destructiveHint and idempotentHint all declared."""
    findings = check_annotations({"readOnlyHint": False, "destructiveHint": "no"}, name="abrir_caso_soporte")

    assert [(f.rule, f.severity) for f in findings] == [("C5", WARNING)]
    with translation.override("en"):
        assert "destructiveHint, idempotentHint" in str(findings[0].message)


@pytest.mark.parametrize(
    "name",
    ["crear_cita", "abrir_caso_soporte", "enviar_factura", "agendar_visita", "update_customer", "cancel_order", "buscar_y_reservar_cita"],
)
def test_it_blocks_a_writing_tool_that_declares_itself_read_only(name):
    """C5: a write verb in the name is evidence against readOnlyHint: true."""
    assert ("C5", BLOCKING) in c5(name, READ_ONLY)


def test_it_takes_the_verb_phrase_as_evidence_too():
    """C5: a write verb leading com.asixto/verb is evidence, whatever the name."""
    assert ("C5", BLOCKING) in c5("gestionar_caso", READ_ONLY, verb="registrar un caso de soporte")
    assert ("C5", BLOCKING) in c5("manage_case", READ_ONLY, verb="Create a support case")
    assert c5("gestionar_caso", READ_ONLY, verb="consultar un caso de soporte") == []


@pytest.mark.parametrize("name", ["consultar_cliente", "buscar_producto", "listar_pedidos", "get_order_update", "search_book", "ver_horario"])
def test_it_accepts_read_only_on_reading_tools(name):
    """C5: read verbs, and entity nouns that happen to be verbs ("update", "book"), are no evidence."""
    assert c5(name, READ_ONLY, verb="consultar un dato") == []


def test_it_blocks_a_tool_that_is_both_read_only_and_destructive():
    """C5, M7: contradictory hints cannot classify a tool."""
    findings = check_annotations({"readOnlyHint": True, "destructiveHint": True, "idempotentHint": True}, name="consultar_cliente")

    assert [(f.rule, f.severity) for f in findings] == [("C5", BLOCKING)]


@pytest.mark.parametrize("name", ["eliminar_cliente", "cancelar_cita", "delete_order", "borrar_direccion"])
def test_it_warns_when_a_destroying_tool_says_it_is_not_destructive(name):
    """C5, M7: a destroying verb with destructiveHint: false would be classified one level too low."""
    assert c5(name, WRITES) == [("C5", WARNING)]
    assert c5(name, {**WRITES, "destructiveHint": True}) == []


@pytest.mark.parametrize("name", ["git_reset", "git_delete_branch", "slack_post_message", "crm_crear_cita", "github-create-issue"])
def test_a_namespace_before_the_verb_does_not_hide_a_write_that_claims_to_only_read(name):
    """C5, issue 8: published servers lead their names with their own name (mcp-server-git's
    `git_reset`); the verb after it is the action, so claiming readOnlyHint: true still blocks."""
    assert ("C5", BLOCKING) in c5(name, READ_ONLY, verb="consultar un dato")


@pytest.mark.parametrize("name", ["git_status", "git_log", "git_diff_unstaged", "git_show", "directory_tree", "list_allowed_directories"])
def test_the_read_tools_of_published_servers_may_say_they_only_read(name):
    """C5, issue 8: mcp-server-git's and server-filesystem's read tools draw no C5 finding."""
    assert c5(name, READ_ONLY, verb="consultar un dato") == []


def test_a_commit_that_claims_to_only_read_blocks():
    """C5, issue 8: mcp-server-git's `git_commit` records changes; it may not say it only reads."""
    assert ("C5", BLOCKING) in c5("git_commit", READ_ONLY, verb="consultar un dato")
    assert c5("git_commit", WRITES) == []
