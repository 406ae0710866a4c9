"""Everything a server wrote reaches the model through one sanitiser (G6, G7, G8, R4, T7), the
tenant's own budget applies, and rule evaluation over hostile text stays linear (C2, C8)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.utils import translation

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context, ok_result, search_tool
from tools.gateway import call_tool
from tools.gateway.sanitize import truncation_mark
from tools.models import McpServer, ToolCall
from tools.rules import BLOCKING, WARNING, check_probe_result
from tools.rules.descriptions import check_description
from tools.rules.leaks import TOKEN, clean_data, clean_text, configured_secrets

ROOT = Path(__file__).resolve().parents[2]
BEARER = "abcDEF1234567890xyz"
TRACE = 'Traceback (most recent call last):\n  File "/srv/app.py", line 9, in buscar\nKeyError: x\n'
WHEN_NOT = " No la uses para consultar el estado de un caso existente."


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


def business_error(message, error_type="NOT_FOUND"):
    return {"isError": True, "content": [{"type": "text", "text": message}],
            "structuredContent": {"error": {"error_type": error_type, "user_message": message}}}


def call(world, **context_changes):
    with world.schema():
        return call_tool(name="crm__buscar_producto", arguments={"consulta": "router"}, context=context(**context_changes))


def recorded(world, outcome):
    with world.schema():
        return ToolCall.objects.get(pk=outcome.record_id)


@pytest.fixture
def result_budget(alpha):
    """Set alpha's own per-result budget (T6) for one test; the session's tenant object outlives
    the rollback, so it is put back by hand."""
    before = alpha.tenant.result_budget

    def set_budget(value):
        connection.set_schema_to_public()
        alpha.tenant.result_budget = value
        alpha.tenant.save(update_fields=["result_budget"])

    yield set_budget
    alpha.tenant.result_budget = before


# --- Business errors (G6) go through the same sanitiser -------------------------------------------


def test_a_business_errors_message_loses_tokens_and_traces(alpha):
    """G6, G7: the user message of a business error is cleaned like any result before the model
    reads it; both leaks are recorded, without the token."""
    peer = FaultyPeer([business_error(f"No encontrado. Authorization: Bearer {BEARER}\n{TRACE}Intenta de nuevo.")])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    assert outcome.outcome == "business_error" and outcome.model_text.startswith("NOT_FOUND: No encontrado.")
    assert BEARER not in outcome.model_text and "Traceback" not in outcome.model_text and "app.py" not in outcome.model_text
    assert "Intenta de nuevo." in outcome.model_text
    assert {"leak:token", "leak:trace"} <= {v["kind"] for v in outcome.violations}
    assert BEARER not in json.dumps(recorded(alpha, outcome).violations)


def test_a_business_errors_message_loses_urls_on_voice(alpha):
    """G6, G8: on the voice channel the URL in a business error's message is not read aloud."""
    peer = FaultyPeer([business_error("Sin existencias; ve a https://tienda.example.com/router?id=1 para más.")])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        voice = call(alpha, channel="voice")
        chat = call(alpha, channel="chat")
    assert "https://" not in voice.model_text and "tienda.example.com" not in voice.model_text
    assert voice.model_text.startswith("NOT_FOUND: Sin existencias; ve a") and "https://tienda.example.com" in chat.model_text


def test_an_argument_error_quoting_the_schema_goes_through_the_sanitiser(alpha):
    """G2, G7, G8: the correctable error quotes the server's schema (its enum here); on voice its
    URL is not read aloud and a token in it never reaches the model. The server is not called."""
    enum = ["https://tienda.example.com/catalogo", f"Bearer {BEARER}"]
    peer = FaultyPeer([ok_result(data={"total": 1})])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, search_tool(input_property={"type": "string", "enum": enum}))
        with alpha.schema():
            outcome = call_tool(name="crm__buscar_producto", arguments={"consulta": "router"}, context=context(channel="voice"))
    assert outcome.outcome == "invalid_arguments" and peer.calls == [] and "consulta" in outcome.model_text
    assert "https://" not in outcome.model_text and BEARER not in outcome.model_text


# --- The tenant's own budget (T6, R4) ----------------------------------------------------------------


def test_the_tenants_own_result_budget_cuts_results_and_business_errors(alpha, result_budget):
    """T6, R4, G7: with a budget of 500 (not the default 3,000), a 2,000-character result and a
    2,000-character business error both reach the model cut to 500, ending with the mark."""
    result_budget(500)
    long_text = "Producto disponible en tienda. " * 65
    peer = FaultyPeer([ok_result(long_text, {"productos": [], "total": 0}), business_error(long_text, "UNAVAILABLE")])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        result, error = call(alpha), call(alpha)
    for outcome in (result, error):
        assert outcome.truncated and len(outcome.model_text) <= 500
        assert outcome.model_text.endswith(truncation_mark("es"))
    assert result.ok and error.outcome == "business_error" and recorded(alpha, error).truncated


# --- The server's own secrets (T7) ---------------------------------------------------------------


def with_headers(world, tool, headers):
    with world.schema():
        McpServer.objects.filter(pk=tool.server_id).update(auth_headers=json.dumps(headers))


def test_a_result_that_echoes_the_servers_auth_header_never_shows_it(alpha):
    """T7, G7: the server was configured with `X-Api-Key` and an `Authorization: Bearer` token; it
    echoes both, as a header line, bare, inside structuredContent (as a value and as a key). The
    model's text and structured data hold neither, each is a violation, and no record holds them."""
    api_key, token = "k3y-Secreto-9f8e7d6c", "tok_Zx81Pq0Lm2Nb7Vc"
    text = f"Llamada recibida con X-Api-Key: {api_key}. Clave {api_key}, token {token}."
    data = {"productos": [{"nombre": f"Router {api_key}"}], "total": 1, "eco": {api_key: token}}
    peer = FaultyPeer([ok_result(text, data)])
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url)
        with_headers(alpha, tool, {"X-Api-Key": api_key, "Authorization": f"Bearer {token}"})
        outcome = call(alpha)
    assert peer.http_headers[0]["x-api-key"] == api_key  # the header was really configured and sent
    shown = outcome.model_text + json.dumps(outcome.structured)
    assert api_key not in shown and token not in shown
    assert outcome.ok and outcome.structured["productos"] == [{"nombre": "Router [redacted]"}]
    assert "configured secret" in " ".join(v["detail"] for v in outcome.violations)
    record = recorded(alpha, outcome)
    assert api_key not in json.dumps(record.violations) + record.error and token not in json.dumps(record.violations)


def test_a_secret_echoed_in_data_that_breaks_the_schema_stays_out_of_the_record(alpha):
    """T7, G5, G9: the value that broke the outputSchema is quoted in the violation; when it is the
    server's own key, the record holds a mark instead."""
    api_key = "k3y-Secreto-9f8e7d6c"
    peer = FaultyPeer([ok_result("ok", {"productos": api_key, "total": 1})])
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url)
        with_headers(alpha, tool, {"X-Api-Key": api_key})
        outcome = call(alpha)
    record = recorded(alpha, outcome)
    assert outcome.outcome == "invalid_output" and "is not of type 'array'" in record.error
    assert api_key not in record.error + json.dumps(record.violations) + outcome.error


@pytest.mark.parametrize(
    "line, secret",
    [
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("Proxy-Authorization: Token 9f8e7d6c5b4a", "9f8e7d6c5b4a"),
        ("X-Auth-Token: 9f8e7d6c5b4a", "9f8e7d6c5b4a"),
        ("X-API-KEY: 9f8e7d6c5b4a", "9f8e7d6c5b4a"),
        ('{"headers": {"Authorization": "Digest 9f8e7d6c5b4a"}}', "9f8e7d6c5b4a"),
        ("Set-Cookie: sessionid=9f8e7d6c5b4a; Path=/", "9f8e7d6c5b4a"),
    ],
)
def test_credential_header_lines_are_removed_even_when_not_configured(line, secret):
    """G7, C8: an echoed header that carries a credential is a token leak whatever the server's
    configuration; the header's name stays so the text still reads."""
    cleaned = clean_text(f"Respuesta del servidor:\n{line}\nFin.")
    assert secret not in cleaned.value and cleaned.value.endswith("\nFin.")
    assert [leak.kind for leak in cleaned.leaks] == [TOKEN]


def test_ordinary_headers_and_words_are_left_alone():
    """G7: "X-Request-Id" or a sentence about authorization is not a secret."""
    for text in ("X-Request-Id: 9f8e7d6c5b4a", "La autorización: pendiente de aprobación", "Authorization: pending"):
        assert clean_text(text).value == text


def test_configured_secrets_in_structured_data_are_marked_and_not_reported_verbatim():
    """T7: a configured secret in a value or a key is replaced; the leak's place never repeats it."""
    cleaned = clean_data({"eco": {"k3y-Secreto-9f8e7d6c": "x"}, "nota": "clave k3y-Secreto-9f8e7d6c"},
                         where="structuredContent", secrets=("k3y-Secreto-9f8e7d6c",))
    assert cleaned.value == {"eco": {"[redacted]": "x"}, "nota": "clave [redacted]"}
    assert all("k3y" not in leak.where for leak in cleaned.leaks) and len(cleaned.leaks) == 2


def test_the_live_probe_reports_an_echoed_secret_without_quoting_it():
    """T7, C8: a probe answer that echoes the server's configured key (bare, and as the value that
    breaks the outputSchema) is a blocking token finding; no finding quotes the key."""
    api_key = "k3y-Secreto-9f8e7d6c"
    secrets = configured_secrets({"X-Api-Key": api_key, "Authorization": "Bearer tok_Zx81Pq0Lm2Nb7Vc", "X-Short": "abc"})
    assert api_key in secrets and "tok_Zx81Pq0Lm2Nb7Vc" in secrets and "abc" not in secrets
    result = ok_result(f"Clave recibida {api_key}", {"productos": api_key, "total": 1})
    findings = check_probe_result(result, output_schema={"type": "object", "properties": {"productos": {"type": "array"}}},
                                  secrets=secrets)
    messages = " ".join(str(f.message) for f in findings)
    assert api_key not in messages and "configured secret" in messages
    assert {(f.rule, f.severity) for f in findings} == {("C8", BLOCKING)}


# --- Descriptions (C2): length, and bounded work on hostile text ----------------------------------


def test_a_long_description_warns_and_a_huge_one_blocks():
    """C2: past 1,000 characters a description warns (the model reads it on every turn); past
    10,000 it blocks (a 10 MB description was certified without a finding)."""
    base = "Abre un caso de soporte para un cliente identificado." + WHEN_NOT
    long, huge, ten_megabytes = base + " Detalle" * 150, base + " Detalle" * 1500, base + " Detalle" * 1_300_000

    def length_findings(text):
        return [(f.rule, f.severity) for f in check_description(text) if "characters" in str(f.message)]

    assert length_findings(base) == [] and length_findings(long) == [("C2", WARNING)]
    assert length_findings(huge) == length_findings(ten_megabytes) == [("C2", BLOCKING)]


_HOSTILE_SCRIPT = r"""
import django, json, sys
django.setup()
from tools.rules.descriptions import check_description, sentences, volatile_data
from tools.rules.leaks import clean_data, clean_text
from tools.rules.results import check_probe_result

n = 1_000_000
texts = {
    "jwt-like run": "eyJ-" * (n // 4),
    "url-scheme-like run": "a." * (n // 2) + " ://x:y@",
    "digits and dots": "1." * (n // 2),
    "stock then spaces": "stock" + " " * n + "x",
    "abbreviations": "Dr. A " * (n // 6),
    "no then spaces": "no" + " " * n + "x",
    "header-like run": "x-" * (n // 2) + "!",
    "authorization then spaces": "Authorization:" + " " * n,
}
for name, text in texts.items():
    clean_text(text)
    clean_data({"a": text, "b": [text[: n // 2]]})
    check_probe_result({"content": [{"type": "text", "text": text}], "structuredContent": {"t": text}}, output_schema=None)
    volatile_data(text)
    sentences(text)
    check_description(text)
    print(name, flush=True)
print("done", flush=True)
"""


def test_rules_over_hostile_text_take_linear_time():
    """C2, C8, G7: a megabyte of text shaped to make a backtracking regex go quadratic (a run of
    "eyJ-", "a.", "1.", "Dr. A ", "x-", keywords followed by a megabyte of spaces) goes through
    every leak, result and description rule. It runs in a child process with a generous ceiling:
    a regex holding the GIL cannot be interrupted from a thread."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, "-c", _HOSTILE_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired as exc:
        finished = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        pytest.fail(f"still running after 180 s; finished: {finished.splitlines()}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "done"
