"""Certification of tool names (C1) and of the prefixed name the model sees (M6)."""

import json

import pytest
from django.utils import translation

from tools.rules import (
    BLOCKING,
    WARNING,
    certify_definition,
    is_blocking,
    prefixed_name,
)
from tools.rules.names import check_name

from .seed_definitions import SCENARIOS, abrir_caso_soporte


def name_findings(name, slug="crm"):
    return [f for f in certify_definition(abrir_caso_soporte(name=name), server_slug=slug, scenarios=SCENARIOS) if f.rule in ("C1", "M6")]


def test_it_certifies_the_contract_example_without_findings():
    """C1, C2, C3, C4, C5, C6, M6: the seed's abrir_caso_soporte, with its _meta, is clean."""
    findings = certify_definition(abrir_caso_soporte(), server_slug="crm", scenarios=SCENARIOS)

    assert [f.to_dict() for f in findings] == []
    assert not is_blocking(findings)


def test_it_blocks_a_tool_without_a_name():
    """C1: a tool must have a name."""
    findings = name_findings(None)

    assert [(f.rule, f.severity) for f in findings] == [("C1", BLOCKING)]


def test_it_blocks_a_name_longer_than_64_characters():
    """C1: names are 1–64 characters."""
    findings = name_findings("consultar_" + "x" * 55)

    assert ("C1", BLOCKING) in [(f.rule, f.severity) for f in findings]
    with translation.override("en"):
        assert "65 characters" in str(findings[0].message)


@pytest.mark.parametrize("name", ["abrir caso", "abrir.caso_soporte", "abrir_caso_señal"])
def test_it_blocks_characters_that_model_apis_reject(name):
    """C1: outside letters, digits, "_" and "-" the model provider refuses the tool."""
    assert is_blocking(name_findings(name))


@pytest.mark.parametrize("name", ["AbrirCasoSoporte", "abrir-caso-soporte", "abrir__caso"])
def test_it_only_warns_on_names_that_are_not_snake_case(name):
    """C1: snake_case is the contract's style; other model-safe styles still work."""
    findings = name_findings(name)

    assert findings and all(f.severity == WARNING for f in findings)
    with translation.override("en"):
        assert any("snake_case" in str(f.message) for f in findings)


@pytest.mark.parametrize("name", ["caso_soporte", "cliente", "producto_buscar", "sla_horas"])
def test_it_warns_when_the_name_does_not_start_with_a_verb(name):
    """C1: verb + entity, the action first."""
    findings = name_findings(name)

    assert [(f.rule, f.severity) for f in findings] == [("C1", WARNING)]
    with translation.override("en"):
        assert "verb" in str(findings[0].message)


@pytest.mark.parametrize(
    "name",
    ["consultar_cliente", "crear_cita", "mover_etapa", "tramitar_garantia", "get_customer", "list_orders", "search_products", "cancel_booking"],
)
def test_it_accepts_verb_and_entity_names_in_spanish_and_english(name):
    """C1: Spanish infinitives (listed or not) and English verbs lead a valid name."""
    assert check_name(name, server_slug="crm") == []


def test_it_warns_on_a_verb_without_an_entity():
    """C1: "consultar" alone does not say what is consulted."""
    findings = name_findings("consultar")

    assert [(f.rule, f.severity) for f in findings] == [("C1", WARNING)]


def test_it_blocks_a_name_that_overflows_64_characters_once_prefixed():
    """M6: the model sees <slug>__<name>, at most 64 characters."""
    name = "abrir_caso_soporte_" + "x" * 25  # 44 characters: fine alone
    findings = name_findings(name, slug="servidor_crm_bogota_")  # 20 + 2 + 44 = 66

    assert [(f.rule, f.severity) for f in findings] == [("M6", BLOCKING)]
    with translation.override("en"):
        assert "66 characters" in str(findings[0].message)
        assert "42 characters or fewer" in str(findings[0].hint)


def test_it_accepts_a_prefixed_name_of_exactly_64_characters():
    """M6: 64 characters in all is still within the limit."""
    slug = "s" * 20
    name = "abrir_caso_" + "x" * 31  # 42 characters

    assert len(prefixed_name(slug, name)) == 64
    assert name_findings(name, slug=slug) == []


def test_it_prefixes_names_with_the_server_slug():
    """M6: two servers may both have a buscar_producto; the prefix tells them apart."""
    assert prefixed_name("crm", "buscar_producto") == "crm__buscar_producto"
    assert prefixed_name("erp", "buscar_producto") != prefixed_name("crm", "buscar_producto")


def test_it_turns_findings_into_plain_translatable_dicts():
    """C1, A3: findings carry lazy text that renders as plain strings in the active language."""
    finding = name_findings("caso_soporte")[0]

    data = finding.to_dict()

    assert set(data) == {"rule", "severity", "message", "hint"}
    assert all(type(v) is str for v in data.values())
    json.dumps(data)
    with translation.override("en"):
        assert finding.to_dict()["message"] == "The name does not start with a verb."


@pytest.mark.parametrize("name", ["convert_time", "translate_text", "format_date", "generate_report", "navigate_page"])
def test_verbs_that_neither_read_nor_write_still_lead_a_name(name):
    """C1, issue 8: mcp-server-time's `convert_time` starts with a verb."""
    assert check_name(name, server_slug="time") == []


def test_asixtos_own_suggested_verbs_start_with_a_verb_in_english_too():
    """C6, issue 8: a suggestion Asixto makes for an English-speaking tenant never draws
    "does not start with a verb" on itself."""
    from tools.rules.meta import check_meta
    from tools.rules.suggestions import VERB_TABLE, suggest_verb
    from tools.rules.verbs import is_verb, phrase_words

    assert [english for _spanish, english in VERB_TABLE.values() if not is_verb(phrase_words(english)[0])] == []
    for name in ("convert_time", "trigger-long-running-operation", "gzip-file-as-resource", "get-tiny-image"):
        verb = suggest_verb(name=name, language="en")
        meta = {"com.asixto/verb": verb, "com.asixto/capabilities": ["general"]}
        assert not [f for f in check_meta(meta, scenarios=None) if "verb" in str(f.message)], (name, verb)
