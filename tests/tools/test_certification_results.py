"""Live probe certification (C8), business errors (G6) and the idempotency probe (C9)."""

import pytest
from django.utils import translation

from tools.rules import BLOCKING, WARNING, check_idempotency, check_probe_result

from .seed_definitions import abrir_caso_soporte, ok_result

OUTPUT_SCHEMA = abrir_caso_soporte()["outputSchema"]
SEARCH_SCHEMA = {
    "type": "object",
    "required": ["items", "total"],
    "properties": {"items": {"type": "array"}, "total": {"type": "integer"}},
}


def probe(result, schema=OUTPUT_SCHEMA, **kwargs):
    return check_probe_result(result, output_schema=schema, **kwargs)


def rules(findings):
    return [(f.rule, f.severity) for f in findings]


def text(findings):
    with translation.override("en"):
        return " | ".join(str(f.message) for f in findings)


def business_error(error):
    return {"isError": True, "content": [{"type": "text", "text": "No encontré el caso."}], "structuredContent": {"error": error}}


def test_it_accepts_a_complete_result_that_matches_the_output_schema():
    """C8: content, structuredContent conforming to outputSchema, within budget, nothing leaked."""
    assert probe(ok_result()) == []
    assert probe({**ok_result(), "resultType": None}) == []


def test_it_accepts_an_empty_search_as_a_success():
    """C8, G6: a search without results is an empty list and a total of 0, not an error."""
    result = {"content": [{"type": "text", "text": "Sin resultados."}], "structuredContent": {"items": [], "total": 0}}

    assert probe(result, SEARCH_SCHEMA) == []


@pytest.mark.parametrize("result_type", ["input_required", "partial"])
def test_it_blocks_a_result_type_other_than_complete(result_type):
    """C8, G4: only resultType "complete" is consumed."""
    findings = probe({**ok_result(), "resultType": result_type})

    assert rules(findings) == [("C8", BLOCKING)]
    assert result_type in text(findings)


@pytest.mark.parametrize("content", [None, [], "Caso abierto"])
def test_it_blocks_a_result_without_content(content):
    """C8: content carries the short text for the model."""
    result = ok_result()
    result["content"] = content

    assert rules(probe(result)) == [("C8", BLOCKING)]


def test_it_warns_on_media_content():
    """C8, G8: images, audio and resources are dropped in v1."""
    result = ok_result()
    result["content"].append({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})

    assert rules(probe(result)) == [("C8", WARNING)]


def test_it_blocks_a_result_without_structured_content():
    """C8: structuredContent holds the data."""
    result = ok_result()
    del result["structuredContent"]

    assert rules(probe(result)) == [("C8", BLOCKING)]


def test_it_blocks_structured_content_that_does_not_match_the_output_schema():
    """C8, G5: structuredContent validates against outputSchema; the message says where."""
    result = ok_result()
    result["structuredContent"]["estado"] = "perdido"

    findings = probe(result)

    assert rules(findings) == [("C8", BLOCKING)]
    assert "estado" in text(findings)


def test_it_warns_on_a_result_over_the_budget():
    """C8, G7: the runtime cuts results to the budget (3,000 characters by default)."""
    result = ok_result()
    result["content"][0]["text"] = "x" * 3001

    assert rules(probe(result)) == [("C8", WARNING)]
    assert "3001 characters" in text(probe(result))
    assert probe(ok_result(), budget=20) and not probe(ok_result(), budget=3000)


@pytest.mark.parametrize("error_type", ["NOT_FOUND", "INVALID_INPUT", "CONFLICT", "NOT_ALLOWED", "UNAVAILABLE", "RATE_LIMITED"])
def test_it_accepts_a_business_error_in_the_g6_shape(error_type):
    """C8, G6: isError true with {"error": {"error_type", "user_message"}}; not checked against outputSchema."""
    result = business_error({"error_type": error_type, "user_message": "No encontré una cita con esos datos."})

    assert probe(result) == []


@pytest.mark.parametrize(
    "error, problem",
    [
        ({"error_type": "NOT_EXISTS", "user_message": "No existe."}, "error_type"),
        ({"error_type": "NOT_FOUND"}, "user_message"),
        ({"error_type": "NOT_FOUND", "user_message": "  "}, "user_message"),
        ("boom", "error"),
    ],
)
def test_it_blocks_a_business_error_outside_the_g6_shape(error, problem):
    """C8, G6: one of six error types and a user message."""
    findings = probe(business_error(error))

    assert rules(findings) == [("C8", BLOCKING)]
    assert problem in text(findings)


@pytest.mark.parametrize(
    "leak, kind",
    [
        ("Token: Bearer abcDEF1234567890xyz", "tokens or secrets"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", "tokens or secrets"),
        ('Traceback (most recent call last):\n  File "/srv/app.py", line 3, in abrir\nKeyError: "x"', "stack traces"),
    ],
)
def test_it_blocks_results_that_leak_tokens_or_traces(leak, kind):
    """C8, G7: tokens and traces never reach the model or the conversation's trace."""
    result = ok_result()
    result["content"][0]["text"] += " " + leak

    findings = probe(result)

    assert rules(findings) == [("C8", BLOCKING)]
    assert kind in text(findings)
    assert "abcDEF1234567890xyz" not in text(findings)  # findings never copy the secret


def test_it_warns_on_internal_identifiers_and_says_where():
    """C8, G7: internal ids are removed by the gateway; the admin sees which field held one."""
    schema = {**OUTPUT_SCHEMA, "properties": {**OUTPUT_SCHEMA["properties"], "cliente_id": {"type": "integer"}}}
    result = ok_result()
    result["structuredContent"]["cliente_id"] = 48213

    findings = probe(result, schema)

    assert rules(findings) == [("C8", WARNING)]
    assert "structuredContent/cliente_id" in text(findings)


def test_it_accepts_two_identical_results_for_one_idempotency_key():
    """C9: the same call twice with the same key returns the same result; protocol _meta may differ."""
    first, second = ok_result(), ok_result()
    second["_meta"] = {"com.asixto/requestId": "req_2"}

    assert check_idempotency(first, second) == []


def test_it_blocks_a_second_call_that_acts_again():
    """C9: a different result means a retried call would repeat the side effect (G3)."""
    second = ok_result()
    second["structuredContent"]["radicado"] = "RAD-2024-0013"

    findings = check_idempotency(ok_result(), second)

    assert rules(findings) == [("C9", BLOCKING)]
    assert "structuredContent/radicado" in text(findings)
    assert "RAD-2024-0013" not in text(findings)  # paths, never values


def test_it_blocks_a_second_call_that_reports_a_conflict():
    """C9: rejecting the retry as a duplicate is not returning the same result."""
    second = business_error({"error_type": "CONFLICT", "user_message": "El caso ya existe."})

    assert rules(check_idempotency(ok_result(), second)) == [("C9", BLOCKING)]


def test_it_calls_the_probe_inconclusive_when_the_tool_was_unavailable():
    """C9: an UNAVAILABLE or RATE_LIMITED answer says nothing about idempotency."""
    second = business_error({"error_type": "RATE_LIMITED", "user_message": "Intenta más tarde."})

    assert rules(check_idempotency(ok_result(), second)) == [("C9", WARNING)]
