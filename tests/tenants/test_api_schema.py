"""The OpenAPI schema (A1): generated without a single warning or error, and it declares the
API key as a Bearer scheme, so the docs have an Authorize button and "Try it out" sends the key."""

import io
import re

import pytest
from django.core.management import call_command
from django.utils import translation


@pytest.mark.parametrize("language", ["es", "en"])
def test_it_generates_the_schema_without_warnings_or_errors(db, language):
    """A1: any drf-spectacular warning (an unresolved serializer, an enum collision, an unknown
    authenticator) fails this test, in either language (choice labels are part of what
    drf-spectacular compares); --validate also checks the result against the OpenAPI spec."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with translation.override(language):
            call_command("spectacular", "--urlconf", "asixto.urls_api_schema", "--validate", "--fail-on-warn", stdout=out, stderr=err)
    except BaseException as exc:  # the command fails with SchemaGenerationError (or exits)
        pytest.fail(f"schema generation failed: {exc!r}\n{err.getvalue()[-5000:]}")
    assert "Warning" not in err.getvalue() and "Error" not in err.getvalue(), err.getvalue()[-5000:]
    assert out.getvalue().startswith("openapi: 3")


def test_it_declares_the_api_key_as_a_bearer_scheme_on_every_protected_operation(alpha):
    """A1, T2: one security scheme, HTTP Bearer; every operation needs it except the public ones."""
    schema = alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    schemes = schema["components"]["securitySchemes"]
    assert schemes == {"ApiKey": {**schemes["ApiKey"], "type": "http", "scheme": "bearer"}}
    public = {("/api/v1/health", "get")}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if (path, method) in public:
                assert operation["security"] == [{}], (path, method)
            else:
                assert operation.get("security") == [{"ApiKey": []}], (path, method)


def test_it_documents_no_developer_notes_as_api_descriptions(alpha):
    """A1: a note meant for developers (the strict serializers' docstring) is not repeated as the
    description of every request body."""
    text = alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "Unknown keys in a payload are an error" not in text


def test_it_shows_no_internal_requirement_ids(alpha):
    """A1, issue 20: the API docs are for integrators; the SPEC's ids ("(T6, T7)", "(M3, issue 8)")
    that the code's docstrings carry for developers are left out of every description."""
    schema = alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    texts = []

    def walk(node):
        if isinstance(node, dict):
            texts.extend(value for key, value in node.items() if key in ("description", "summary") and isinstance(value, str))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert len(texts) > 50
    ids = re.compile(r"\b(?:[A-Z]{1,2}\d{1,2}|issue \d+)\b")
    assert [text for text in texts if ids.search(text)] == []
    assert any("Secrets are write-only: responses say whether one is set" in text for text in texts)
