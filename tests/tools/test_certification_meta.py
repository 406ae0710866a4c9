"""Certification of the definition's _meta (C6): capabilities and verb."""

import pytest
from django.utils import translation

from tools.rules import BLOCKING, WARNING, certify_definition
from tools.rules.meta import check_meta

from .seed_definitions import SCENARIOS, abrir_caso_soporte

CAPABILITIES = "com.asixto/capabilities"
VERB = "com.asixto/verb"


def meta(**changes):
    data = abrir_caso_soporte()["_meta"]
    data.update({(CAPABILITIES if k == "capabilities" else VERB): v for k, v in changes.items()})
    return data


def rules(findings):
    return [(f.rule, f.severity) for f in findings]


def text(findings):
    with translation.override("en"):
        return " | ".join(f"{f.message} {f.hint}" for f in findings)


def test_it_accepts_the_contract_example_meta():
    """C6: capabilities from the tenant's scenarios and a verb phrase, as in the contract."""
    assert check_meta(meta(), scenarios=SCENARIOS) == []


def test_it_blocks_a_definition_without_meta():
    """C6: every tool declares its scenario and verb in its own definition."""
    findings = certify_definition(abrir_caso_soporte(meta=None), server_slug="crm", scenarios=SCENARIOS)

    assert rules(findings) == [("C6", BLOCKING), ("C6", BLOCKING)]
    assert CAPABILITIES in text(findings) and VERB in text(findings)


@pytest.mark.parametrize("capabilities", [None, [], "soporte", ["soporte", ""], ["soporte", 3]])
def test_it_blocks_capabilities_that_are_not_a_non_empty_list_of_names(capabilities):
    """C6: com.asixto/capabilities is a non-empty list of scenario names."""
    assert rules(check_meta(meta(capabilities=capabilities), scenarios=SCENARIOS)) == [("C6", BLOCKING)]


def test_it_blocks_capabilities_outside_the_tenant_scenarios():
    """C6: a tool that belongs to none of the agent's scenarios has nowhere to go."""
    findings = check_meta(meta(capabilities=["cobranza"]), scenarios=SCENARIOS)

    assert rules(findings) == [("C6", BLOCKING)]
    assert "cobranza" in text(findings) and "pqr, soporte" in text(findings)


def test_it_warns_on_some_capabilities_outside_the_tenant_scenarios():
    """C6: unknown capabilities beside known ones leave the tool usable."""
    findings = check_meta(meta(capabilities=["soporte", "cobranza"]), scenarios=SCENARIOS)

    assert rules(findings) == [("C6", WARNING)]
    assert "cobranza" in text(findings)


def test_it_skips_the_scenario_check_when_the_tenant_has_none():
    """C6: without a scenario list there is nothing to check capabilities against."""
    assert check_meta(meta(capabilities=["cobranza"]), scenarios=None) == []


@pytest.mark.parametrize("verb", [None, "", 42])
def test_it_blocks_a_missing_verb(verb):
    """C6: com.asixto/verb is how the platform words the tool (R6, R9)."""
    assert rules(check_meta(meta(verb=verb), scenarios=SCENARIOS)) == [("C6", BLOCKING)]


@pytest.mark.parametrize("verb", ["abrir un caso de soporte", "Agendar una visita técnica", "open a support case", "tramitar una garantía"])
def test_it_accepts_a_short_phrase_that_starts_with_a_verb(verb):
    """C6: Spanish or English, listed verb or any Spanish infinitive."""
    assert check_meta(meta(verb=verb), scenarios=SCENARIOS) == []


def test_it_warns_on_a_verb_phrase_that_does_not_start_with_a_verb():
    """C6: the phrase starts with a verb: "abrir un caso de soporte"."""
    findings = check_meta(meta(verb="caso de soporte"), scenarios=SCENARIOS)

    assert rules(findings) == [("C6", WARNING)]


def test_it_warns_on_a_verb_phrase_that_is_not_short():
    """C6: a short phrase; it is shown to the customer while the tool runs (R9)."""
    long_verb = "abrir un caso de soporte para el cliente que llamó hoy por una falla en su servicio de internet"

    assert rules(check_meta(meta(verb=long_verb), scenarios=SCENARIOS)) == [("C6", WARNING)]
