"""Tenants' schemas are hostile (C3, C4, C8, G2, G5): a `$ref` is never fetched, a `pattern`
never backtracks, and no schema problem ever makes a call raise or hang.

The loopback servers here would notice a fetch: one answers and counts requests, the other
accepts connections and never answers (a `$ref` to it used to pin the calling thread)."""

import json
import os
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.utils import translation

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.contract_samples import good
from tests.tools.gateway_support import certified_tool, context, ok_result, search_tool
from tools.gateway import call_tool
from tools.models import ToolCall
from tools.rules import BLOCKING, certify_definition, check_probe_result
from tools.rules.validation import all_errors, build_validator

ROOT = Path(__file__).resolve().parents[2]
CATASTROPHIC = r"^(a+)+$"  # exponential for a backtracking engine on "aaa…a!"


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


@contextmanager
def answering_server():
    """A loopback HTTP server that serves a schema to anyone who asks, and counts the asks."""
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def silent_server(ceiling=30.0):
    """A loopback port that accepts connections and never answers. After `ceiling` seconds it
    hangs up, so a regression fails the test instead of hanging the suite."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    closer = threading.Timer(ceiling, lambda: [conn.close() for conn in accepted])
    closer.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        stop.set()
        closer.cancel()
        thread.join(5)
        for conn in accepted:
            conn.close()
        listener.close()


def call(world, arguments=None):
    with world.schema():
        return call_tool(name="crm__buscar_producto", arguments=arguments or {"consulta": "router"}, context=context())


def blocking_rules(findings):
    return {f.rule for f in findings if f.severity == BLOCKING}


# --- $ref: never fetched ------------------------------------------------------------------------


def test_it_never_fetches_a_remote_ref_in_the_input_schema(alpha):
    """C3, G2, M2: a `$ref` to a server is refused before any call: nothing is fetched, the tool's
    server is not called, the outcome says why and the record lists the violation."""
    peer = FaultyPeer([ok_result(data={"total": 1})])
    with answering_server() as (schema_host, hits), serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, search_tool(input_property={"$ref": f"{schema_host}/consulta.json"}))
        outcome = call(alpha)
    assert hits == [] and peer.calls == []
    assert outcome.outcome == "refused" and "$ref" in outcome.error
    assert "crm__buscar_producto" in outcome.model_text
    with alpha.schema():
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert record.outcome == "refused" and [v["kind"] for v in record.violations] == ["input_schema"]


def test_it_never_fetches_a_remote_ref_in_the_output_schema(alpha):
    """C4, G5: a remote `$ref` in the outputSchema is never fetched; the answer is not given to
    the model (the gateway cannot check it) and the call is an invalid output."""
    peer = FaultyPeer([ok_result(data={"total": 1})])
    with answering_server() as (schema_host, hits), serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, search_tool(output_schema={"$ref": f"{schema_host}/salida.json"}))
        outcome = call(alpha)
    assert hits == [] and len(peer.calls) == 1
    assert outcome.outcome == "invalid_output" and outcome.violations[0]["kind"] == "output_schema"
    assert "Encontré" not in outcome.model_text and outcome.structured is None


def test_a_ref_to_a_server_that_never_answers_does_not_pin_the_call(alpha):
    """G3, M2: the `$ref` points at a port that accepts and never answers; the call still ends
    with an outcome, and no connection was ever opened to that port."""
    peer = FaultyPeer([ok_result(data={"total": 1})])
    with silent_server() as (schema_host, accepted), serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, search_tool(input_property={"$ref": f"{schema_host}/consulta.json"}))
        outcome = call(alpha)
        connections = len(accepted)
    assert connections == 0 and outcome.outcome == "refused" and peer.calls == []


def test_certification_blocks_remote_refs_without_fetching_them(alpha):
    """C3, C4, C8: certification and the live probe never fetch; a remote `$ref` blocks the tool
    under C3 (input) and C4 (output), with a message that names the reference."""
    with answering_server() as (schema_host, hits):
        remote = f"{schema_host}/s.json"
        as_input = certify_definition(search_tool(input_property={"$ref": remote}), server_slug="crm", scenarios=None)
        as_output = certify_definition(search_tool(output_schema={"$ref": remote}), server_slug="crm", scenarios=None)
        nested_id = {"$id": f"{schema_host}/base.json", "type": "object", "properties": {"x": {"$ref": "otro.json"}}}
        relative = certify_definition(search_tool(output_schema=nested_id), server_slug="crm", scenarios=None)
        probe = check_probe_result(ok_result(data={"total": 1}), output_schema={"$ref": remote})
    assert hits == []
    assert "C3" in blocking_rules(as_input) and "C4" in blocking_rules(as_output) and "C4" in blocking_rules(relative)
    message = next(str(f.message) for f in as_input if f.rule == "C3" and f.severity == BLOCKING)
    assert remote in message and "never fetched" in message
    assert all("$ref" not in str(f.message) for f in probe)  # C4 reports it; the probe does not fetch


def test_self_referencing_and_missing_refs_are_findings_and_calls_end_cleanly(alpha):
    """C3, C4, A4: a `$ref` that only leads back to itself and one that points nowhere are
    blocking findings; invoking such a tool answers 200 with an outcome, never a 500."""
    looping = {"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    missing = {"$ref": "#/$defs/nada"}
    findings = certify_definition(search_tool(input_property=missing, output_schema=looping), server_slug="crm", scenarios=None)
    messages = " ".join(str(f.message) for f in findings if f.severity == BLOCKING)
    assert {"C3", "C4"} <= blocking_rules(findings) and "#/$defs/nada" in messages and "itself" in messages

    peer = FaultyPeer([ok_result(data={"total": 1})])
    with serve_asgi(peer.app()) as url:
        looping_tool = certified_tool(alpha, url, search_tool(output_schema={"$ref": "#"}), slug="loop")
        missing_tool = certified_tool(alpha, url, search_tool(input_property=missing), slug="miss")
        answers = [
            alpha.api().post(f"/api/v1/tools/{tool.pk}/invoke", json.dumps({"arguments": {"consulta": "router"}}),
                             content_type="application/json")
            for tool in (looping_tool, missing_tool)
        ]
    assert [a.status_code for a in answers] == [200, 200]
    assert [a.json()["outcome"] for a in answers] == ["invalid_output", "refused"]
    assert len(peer.calls) == 1  # only the tool whose arguments could be checked was called


def test_local_and_recursive_refs_keep_working(alpha):
    """C3, G2, G5: `$ref`s inside the schema (a tree that refers to itself one level down) are
    resolved locally; a good call goes through and a bad nested value is caught."""
    tree = {"$defs": {"nodo": {"type": "object", "additionalProperties": False,
                               "properties": {"nombre": {"type": "string"}, "hijos": {"type": "array", "items": {"$ref": "#/$defs/nodo"}}}}},
            "type": "object", "required": ["total"], "properties": {"total": {"type": "integer"}, "arbol": {"$ref": "#/$defs/nodo"}}}
    definition = search_tool(input_property={"$ref": "#/$defs/texto"}, output_schema=tree)
    definition["inputSchema"]["$defs"] = {"texto": {"type": "string", "maxLength": 100}}
    assert not {"C3", "C4"} & blocking_rules(certify_definition(definition, server_slug="crm", scenarios=None))
    good_tree = {"total": 1, "arbol": {"nombre": "a", "hijos": [{"nombre": "b", "hijos": [{"nombre": "c"}]}]}}
    bad_tree = {"total": 1, "arbol": {"nombre": "a", "hijos": [{"nombre": "b", "hijos": [{"nombre": 3}]}]}}
    peer = FaultyPeer([ok_result(data=good_tree), ok_result(data=bad_tree)])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, definition)
        first, second = call(alpha), call(alpha)
        wrong_argument = call(alpha, {"consulta": 7})
    assert first.ok and first.structured == good_tree
    assert second.outcome == "invalid_output" and "arbol/hijos/0/hijos/0/nombre" in second.error
    assert wrong_argument.outcome == "invalid_arguments" and len(peer.calls) == 2


# --- pattern: linear time ---------------------------------------------------------------------

_PATTERN_SCRIPT = r"""
import django, json, sys
django.setup()
from django.utils import translation
translation.activate("en")
from tools.gateway.results import all_errors, compiled, first_error
from tools.rules import check_probe_result

pattern = sys.argv[1]
long_bad, long_good = "a" * 100_000 + "!", "a" * 100_000
schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}},
          "patternProperties": {pattern: {"type": "integer"}}, "additionalProperties": False}
validator = compiled(schema, ("linear", 1))
print(json.dumps({
    "bad_value": all_errors(validator, {"q": long_bad}),
    "good_value": all_errors(validator, {"q": long_good}),
    "bad_key": first_error(validator, {long_bad: 1}),
    "good_key": first_error(validator, {long_good: 1}),
    # A subschema naming its own dialect must not get the stock (backtracking) keywords back.
    "nested_dialect": first_error(compiled({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"q": {"$schema": "http://json-schema.org/draft-07/schema#", "pattern": pattern}, "r": {"$ref": "#"}},
    }, ("linear", 2)), {"r": {"r": {"q": long_bad}}}),
    "probe": [str(f.message) for f in check_probe_result(
        {"content": [{"type": "text", "text": "x"}], "structuredContent": {"q": long_bad}}, output_schema=schema)],
}), flush=True)
"""


def test_a_catastrophic_pattern_runs_in_linear_time():
    """C8, G2, G5: `^(a+)+$` against 100,000 characters and a "!" (centuries for a backtracking
    engine, holding the GIL) is decided at once, for `pattern`, `patternProperties` and the
    `additionalProperties` that depends on them, at call time and in the live probe, also where a
    subschema names its own `$schema` and through a recursive `$ref`. It runs in
    a child process because a backtracking regex cannot be interrupted from a thread."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PATTERN_SCRIPT, CATASTROPHIC], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert answers["bad_value"] and "q" in answers["bad_value"] and answers["good_value"] is None
    assert answers["bad_key"] and answers["good_key"] is None
    assert answers["nested_dialect"].startswith("r/r/q: ")
    assert any("structuredContent does not match" in message for message in answers["probe"])


def test_patterns_follow_the_json_schema_rules_not_pythons(alpha):
    """G2: patterns are ECMA-262-like searches: `\\d` is an ASCII digit (Python's `re` also takes
    Arabic-Indic digits), the pattern is not anchored unless it says so, and `$` is the end of the
    text (Python's `re` also matches before a final newline)."""
    peer = FaultyPeer([ok_result(data={"total": 1})])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, search_tool(input_property={"type": "string", "pattern": r"^\d+$"}))
        arabic = call(alpha, {"consulta": "١٢٣"})
        newline = call(alpha, {"consulta": "123\n"})
        plain = call(alpha, {"consulta": "123"})
    assert arabic.outcome == "invalid_arguments" and newline.outcome == "invalid_arguments"
    assert plain.ok and len(peer.calls) == 1
    searched = check_probe_result(ok_result(data={"total": 1, "codigo": "xx-12-yy"}), output_schema={
        "type": "object", "properties": {"total": {"type": "integer"}, "codigo": {"type": "string", "pattern": r"\d\d"}}})
    assert searched == []


def test_a_pattern_re2_cannot_run_blocks_the_tool_and_is_never_evaluated(alpha):
    """C3, C4, G2: a backreference or a lookaround cannot be run in linear time: a blocking C3/C4
    finding naming the pattern; at call time the tool is refused and its server not called (no
    fallback to Python's `re`)."""
    backreference = {"type": "string", "pattern": r"^(a)\1$"}
    lookahead = {"type": "object", "patternProperties": {"^(?=x)": {"type": "string"}}}
    findings = certify_definition(search_tool(input_property=backreference, output_schema=lookahead),
                                  server_slug="crm", scenarios=None)
    assert {"C3", "C4"} <= blocking_rules(findings)
    messages = " ".join(str(f.message) for f in findings if f.severity == BLOCKING)
    assert r"^(a)\1$" in messages and "^(?=x)" in messages
    peer = FaultyPeer([ok_result(data={"total": 1})])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, search_tool(input_property=backreference))
        outcome = call(alpha, {"consulta": "aa"})
    assert outcome.outcome == "refused" and peer.calls == [] and r"^(a)\1$" in outcome.error


def test_pattern_properties_under_unevaluated_properties_are_refused():
    """C3: jsonschema evaluates `patternProperties` for `unevaluatedProperties` with Python's `re`
    outside any keyword we can replace, so that combination is a blocking finding."""
    schema = {"type": "object", "additionalProperties": False, "properties": {"x": {
        "type": "object", "patternProperties": {"^a": {"type": "string"}}, "unevaluatedProperties": False}}}
    findings = certify_definition(good(inputSchema=schema), server_slug="crm", scenarios=None)
    assert "C3" in blocking_rules(findings)
    assert any("unevaluatedProperties" in str(f.message) for f in findings)


def test_depth_is_an_error_never_an_exception():
    """A4, C3, G2: a value nested 5,000 deep against a recursive schema is reported as too deep to
    check (a RecursionError would have been a 500); a schema nested 5,000 deep is a C3 finding."""
    tree = {"type": "object", "properties": {"h": {"$ref": "#"}}}
    deep_value = current = {}
    for _ in range(5000):
        current["h"] = current = {}
    assert all_errors(build_validator(tree), deep_value) == "the value is nested too deeply to check"
    deep_schema = current = {"type": "object", "additionalProperties": False}
    for _ in range(5000):
        current["properties"] = {"x": {"type": "object"}}
        current = current["properties"]["x"]
    findings = certify_definition(good(inputSchema=deep_schema), server_slug="crm", scenarios=None)
    assert "C3" in blocking_rules(findings)


def test_unique_items_on_a_long_array_is_not_quadratic():
    """G2, G5: `uniqueItems` over 20,000 objects (jsonschema compares every pair: minutes) is
    decided at once, with the same idea of equality (1 equals 1.0, true does not equal 1)."""
    validator = build_validator({"type": "array", "uniqueItems": True})
    distinct, repeated = [{"n": i} for i in range(20_000)], [{"n": i} for i in range(20_000)] + [{"n": 7.0}]
    answers, finished = {}, threading.Event()

    def check():
        answers["distinct"], answers["repeated"] = all_errors(validator, distinct), all_errors(validator, repeated)
        answers["bool"] = all_errors(validator, [True, 1, [1, {"a": False}], [1.0, {"a": 0}]])
        answers["equal"] = all_errors(validator, [{"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}])
        finished.set()

    threading.Thread(target=check, daemon=True).start()
    assert finished.wait(60), "uniqueItems still running after 60 s"
    assert answers["distinct"] is None and "non-unique" in answers["repeated"]
    assert answers["bool"] is None and "non-unique" in answers["equal"]
